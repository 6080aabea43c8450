"""The HTML report: self-contained, escaped, tolerant of older and newer results.json, and its
numbers are the document's. (The same page in a real browser: tests/e2e/test_html_browser.py.)"""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval import cli
from pytest_skilleval.reports import charts, html

HOSTILE = '</script><script>alert(1)</script><img src=x onerror="alert(2)">'


class Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def parse(page: str) -> list[tuple[str, dict[str, str | None]]]:
    parser = Elements()
    parser.feed(page)
    return parser.tags


def trial(case: str, arm: str, status: str, **extra: Any) -> dict[str, Any]:
    row = {"case": case, "arm": arm, "attempt": 1, "execution": 1, "status": status, "score": 1.0 if status == "PASSED" else 0.0,
           "tokens": 1000, "cli_seconds": 2.0, "skill_listed": arm == "with_skill", "invoked": [], "reason": f"{status.lower()} reason",
           "assertions": [{"kind": "contains", "description": "says hello", "passed": status == "PASSED", "detail": None, "source": "evals.json:3"}],
           "answer": "the answer", "steps": [{"kind": "message", "role": "user", "text": "do it"},
                                             {"kind": "tool", "name": "Bash", "text": '{"command": "ls"}', "result": "a.txt"}],
           "notes": []}
    row.update(extra)
    return row


def doc(name: str = "demo", *, message: str = "bad thing", answer: str = "the answer", extra_tier3: dict[str, Any] | None = None) -> dict[str, Any]:
    lift = [{"measure": m, "with_skill": 0.9, "without_skill": 0.5, "delta": 0.4, "ci_low": -0.1 if m == "security" else 0.2,
             "ci_high": 0.6, "n": 3, "band": "PASS"} for m in ("overall", "security", "correctness")]
    arms = {arm: {"arm": arm, "trials": 2, "passed": 2 if arm == "with_skill" else 0, "failed": 0 if arm == "with_skill" else 2, "errors": 0,
                  "measures": {"overall": 0.9}, "pass_rate": 1.0 if arm == "with_skill" else 0.0,
                  "pass_at_k": [{"k": 1, "pass_at_k": 1.0, "pass_hat_k": 1.0, "cases": 2}], "tokens_in": 1500, "tokens_out": 500,
                  "cost_usd": 0.01} for arm in ("with_skill", "without_skill")}
    tier3 = {"modes": ["scripted"], "scripted": True, "blocking": False, "cases": 2, "trials": 4, "errors": 0, "verdict": "PASS",
             "agents": [{"agent": "claude-code", "versions": ["2.1"], "models": ["m"], "verdict": "PASS", "arms": arms, "lift": lift,
                         "attempts": [trial("c1", "with_skill", "PASSED"), trial("c1", "without_skill", "FAILED", answer=answer),
                                      trial("c2", "with_skill", "PASSED"), trial("c2", "without_skill", "FAILED")]}]}
    tier3.update(extra_tier3 or {})
    finding = {"rule": "schema.name", "severity": "HIGH", "message": message, "file": "SKILL.md", "line": 2, "suggestion": "rename it",
               "evidence": None}
    return {"schema_version": "1.0", "tool": {"name": "pytest-skilleval", "version": "0"}, "generated_at": "2026-01-01T00:00:00+00:00",
            "complete": True, "exit_status": 1, "settings": {"profile": "spec"}, "overall_status": "failed", "skill_count": 1,
            "severity_counts": {"high": 1}, "verdict_counts": {"FAIL": 1},
            "skills": [{"key": name, "name": name, "path": f"/x/{name}", "verdict": "FAIL", "tiers": {"1": {"status": "FAILED"}},
                        "severity_counts": {"high": 1}, "quality_score": 80.0,
                        "checks": [{"blocking": True, "result": {"check": "schema", "tier": 1, "status": "FAILED", "reason": "1 finding",
                                                                  "findings": [finding], "duration_s": 0.1}},
                                   {"blocking": True, "result": {"check": "files", "tier": 1, "status": "PASSED", "findings": []}}],
                        "tier3": tier3}]}


def test_skill_and_agent_text_is_escaped_everywhere() -> None:
    page = html.render(doc(name=HOSTILE, message=HOSTILE, answer=HOSTILE))
    tags = parse(page)
    assert [t for t, _ in tags].count("script") == 1  # only the page's own sorting script
    assert not [t for t, a in tags if t == "img"] and not any(k.startswith("on") for _, a in tags for k in a)
    assert HOSTILE not in page and "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "&lt;img src=x onerror=" in page


def test_page_is_self_contained() -> None:
    page = html.render(doc())
    for tag, attrs in parse(page):
        for attr in ("src", "href", "action", "data"):
            value = attrs.get(attr)
            assert value is None or value.startswith("#"), (tag, attr, value)  # nothing leaves the file
    assert "default-src 'none'" in page  # and the CSP forbids it anyway
    assert "<link" not in page and "@import" not in page and "url(http" not in page


def test_first_screen_numbers_come_from_the_document() -> None:
    page = html.build(doc())
    kpis = {k.key: k for k in page.kpis}
    assert kpis["skills"].value == "1" and kpis["verdicts"].value == "0 / 1 / 0"
    assert kpis["checks"].value == "1/2" and kpis["lift"].value == "+40 pts" and "95% CI +20 to +60" in kpis["lift"].detail
    assert kpis["trials"].value == "2/4" and kpis["cost"].value == "$0.0200"
    # failing items: the blocking check first (with file:line, rule and fix), then the failed trials with evidence
    assert [i.kind for i in page.failing] == ["check", "trial", "trial"]
    assert page.failing[0].findings[0]["suggestion"] == "rename it"
    rendered = html.render(doc())
    assert "<code>SKILL.md:2</code>" in rendered and "rename it" in rendered and "says hello" in rendered


def test_forest_marks_an_interval_crossing_zero() -> None:
    svg = str(charts.forest([charts.ForestRow("a", 0.2, -0.1, 0.5, 4), charts.ForestRow("b", 0.3, 0.1, 0.5, 4)]))
    assert svg.count('stroke-dasharray="4 3"') == 1 and "crosses 0" in svg
    assert "+20 [-10, +50] n=4" in svg and "+30 [+10, +50] n=4" in svg


def test_pass_at_k_curve_from_attempts() -> None:
    d = doc()
    attempts = d["skills"][0]["tier3"]["agents"][0]["attempts"]
    attempts.append(trial("c1", "with_skill", "FAILED", attempt=2))
    attempts.append(trial("c2", "with_skill", "PASSED", attempt=2))
    (curve,) = html.pass_curves(d)
    assert curve.with_skill == [0.75, 1.0] and curve.without_skill == [0.0]


def test_tolerant_of_missing_and_new_fields() -> None:
    minimal = {"skills": [{"key": "bare"}]}
    assert "bare" in html.render(minimal)
    newer = doc(extra_tier3={"noise_floor": 0.07, "not_scored": {"with_skill": 1}, "power_note": "n=3 detects only +45 points"})
    page = html.render(newer)
    assert "noise floor" in page and "0.07" in page and "n=3 detects only +45 points" in page


def test_cli_html_writes_index_beside_results(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "results.json").write_text(json.dumps(doc()), encoding="utf-8")
    assert cli.main(["html", str(tmp_path / "results.json")]) == 0
    assert (tmp_path / "index.html").read_text(encoding="utf-8").startswith("<!doctype html>")
    assert str(tmp_path / "index.html") in capsys.readouterr().out
    assert cli.main(["html", str(tmp_path / "missing.json")]) == 2


@pytest.mark.parametrize("where", ["output", "beside"])
def test_cli_html_that_cannot_write_its_page_says_so_and_fails(tmp_path: Path, capsys: pytest.CaptureFixture[str], where: str) -> None:
    """`skilleval html skilleval-report -o /proc/nope/x.html` was a FileNotFoundError traceback."""
    (tmp_path / "rep").mkdir()
    (tmp_path / "rep/results.json").write_text(json.dumps(doc()), encoding="utf-8")
    (tmp_path / "afile").write_text("a file, not a folder")
    target = tmp_path / "afile" / "x.html"  # as /proc/nope/x.html: a folder that cannot be made
    if where == "output":
        args = ["html", str(tmp_path / "rep"), "-o", str(target)]
    else:  # the page beside results.json, where a folder of that name is in the way
        (tmp_path / "rep/index.html").mkdir()
        target = tmp_path / "rep/index.html"
        args = ["html", str(tmp_path / "rep")]
    assert cli.main(args) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(f"skilleval html: cannot write {target}: ") and "Traceback" not in err
    assert len(err.splitlines()) == 1


def test_trigger_results_give_the_kpi_and_a_confusion_matrix() -> None:
    d = doc()
    rate = {"value": 0.75, "successes": 3, "n": 4, "low": 0.3, "high": 0.95}
    d["skills"][0]["triggers"] = {"skill": "demo", "skill_name": "demo", "harness_check": True,
                                  "agents": [{"agent": "claude-code", "queries": 6, "runs_per_query": 3,
                                              "confusion": {"tp": 3, "fn": 1, "fp": 1, "tn": 1}, "recall": rate, "precision": rate,
                                              "accuracy": {"value": 0.67, "successes": 4, "n": 6, "low": 0.3, "high": 0.9},
                                              "missed_queries": ["q-2"], "false_trigger_queries": ["neg-1"]}]}
    page = html.build(d)
    assert {k.key: k.value for k in page.kpis}["trigger"] == "75% / 75%"
    (name, svg), = page.confusion
    assert name == "demo · Claude Code" and ">3<" in str(svg) and "false trigger" in str(svg)
    text = html.render(d)
    assert "75% (3/4; 95% CI 30%–95%)" in text and "neg-1" in text and "q-2" in text


def test_unmetered_trials_show_no_cost_rather_than_zero() -> None:
    d = doc()
    for arm in d["skills"][0]["tier3"]["agents"][0]["arms"].values():
        arm["cost_usd"] = None  # scripted or replayed: nothing was spent
    assert {k.key: k.value for k in html.kpis(d)}["cost"] == "none"


def test_a_spooled_catalog_is_read_a_few_times_per_page_not_once_per_aggregate() -> None:
    """The session hands its spooled skills over as a Replay: every pass re-reads and re-parses each
    skill from disk, so the page reads them in one pass for all its numbers, charts and the skills
    table's rows, then once per list it shows in full (needs attention, advisory, the skills' details):
    four passes, whatever the catalog. The page is the same as from a plain list."""
    plain = doc()
    plain["skills"] = [dict(plain["skills"][0], key=f"s{i}", name=f"s{i}") for i in range(4)]
    plain["skill_count"] = 4
    passes = 0

    def spooled() -> Any:
        nonlocal passes
        passes += 1
        return (json.loads(json.dumps(s)) for s in plain["skills"])

    page = html.render({**plain, "skills": html.Replay(spooled, 4)})
    assert page == html.render(plain)
    assert passes == 4, passes


def test_a_spooled_skill_is_parsed_for_a_list_only_when_it_has_an_item_there() -> None:
    """Each pass over a spooled catalog parses every skill it reads. The lists of failing and of advisory
    items parse only the skills the first pass found an item of theirs in (over the corpus: 343 and 0 of
    754), not every skill again; the page is the same as from a plain list."""
    base = doc()
    failing = base["skills"][0]  # a failing check, and failed baseline trials (listed as failing items too)
    passing = {"blocking": True, "result": {"check": "files", "tier": 1, "status": "PASSED", "findings": []}}
    advisory = {"blocking": False, "result": {"check": "lint", "tier": 1, "status": "FAILED", "reason": "style", "findings": []}}
    skills = [dict(failing, key="s0", name="s0"),
              {"key": "s1", "name": "s1", "path": "/x/s1", "verdict": "PASS", "checks": [passing, advisory]},
              *[{"key": f"s{i}", "name": f"s{i}", "path": f"/x/s{i}", "verdict": "PASS", "checks": [passing]} for i in (2, 3, 4)],
              dict(failing, key="s5", name="s5", checks=[passing])]  # its trials only
    plain = {**base, "skills": skills, "skill_count": len(skills)}
    texts = [json.dumps(s) for s in skills]
    parsed: list[str] = []

    def parse(text: str) -> Any:
        parsed.append(json.loads(text)["key"])
        return json.loads(text)

    page = html.render({**plain, "skills": html.Replay(lambda: iter(texts), len(texts), parse=parse)})
    assert page == html.render(plain)
    assert sorted(parsed) == sorted([f"s{i}" for i in range(6)] * 2 + ["s0", "s5"] + ["s1"]), parsed


def test_the_pages_environment_reads_dicts_as_jinja_does() -> None:
    """``x.name`` on a plain dict skips Jinja's failing attribute lookup, with Jinja's answer: a dict's own
    attribute first (``items``, even when a key has that name), else the item, else undefined; other
    objects and dict subclasses as Jinja reads them."""
    from jinja2 import ChainableUndefined, Environment

    class Sub(dict):  # type: ignore[type-arg]
        name = "attribute"

    class Obj:
        name = "object"

    text = ("{{ d.name }}|{{ d.items is callable }}|{{ d.missing }}|{{ d.missing.deeper }}|{{ d.nested.inner }}|{{ s.name }}|"
            "{{ o.name }}|{{ o.missing }}|{{ d['items'] }}|{{ d.__class__.__name__ }}|{{ e.name }}")
    values = {"d": {"name": "<b>item</b>", "items": "a key", "nested": {"inner": 1}}, "s": Sub(name="item"), "o": Obj(), "e": {}}
    plain = Environment(autoescape=True, undefined=ChainableUndefined).from_string(text).render(**values)
    page = html._environment().from_string(text).render(**values)
    assert page == plain == "&lt;b&gt;item&lt;/b&gt;|True|||1|attribute|object||a key|dict|"


def _with_aa(d: dict[str, Any]) -> dict[str, Any]:
    agent = d["skills"][0]["tier3"]["agents"][0]
    agent["attempts"] += [trial("c1", "without_skill_aa", "FAILED"), trial("c2", "without_skill_aa", "PASSED")]
    return d


def test_the_trials_kpi_shows_every_arm_so_its_parts_add_up() -> None:
    # Regression (make eval --skilleval-aa): "15/27 — with skill 9/9 · baseline 3/9": the A/A trials
    # were counted in the total but shown in no part.
    kpi = {k.key: k for k in html.kpis(_with_aa(doc()))}["trials"]
    assert kpi.value == "3/6" and kpi.detail == "with skill 2/2 · baseline 0/2 · A/A baseline 1/2"


def test_an_aa_failure_is_a_baseline_failure_listed_last_and_marked() -> None:
    # Regression: the without_skill_aa failures came first in "Needs attention", with no "baseline arm" badge
    d = doc()
    agent = d["skills"][0]["tier3"]["agents"][0]
    agent["attempts"] = [trial("c1", "without_skill_aa", "FAILED"), trial("c1", "with_skill", "FAILED"), trial("c1", "without_skill", "FAILED")]
    page = html.build(d)
    trials = [i for i in page.failing if i.kind == "trial"]
    assert [i.trial["arm"] for i in trials if i.trial] == ["with_skill", "without_skill_aa", "without_skill"]
    assert [i.baseline for i in trials] == [False, True, True]
    rendered = html.render(d)
    assert rendered.count('<span class="badge s-other">baseline arm</span>') == 2
    assert rendered.count("Baseline (no skill): a failure here is what the skill is meant to fix.") == 2


def test_the_forest_caption_names_the_documents_interval_method() -> None:
    # Regression: the caption said "paired bootstrap 95% interval" while the data's method was a t interval
    d = doc(extra_tier3={"interval": {"method": "student-t on paired case differences, all-equal guard", "confidence": 0.95}})
    rendered = html.render(d)
    assert "bootstrap" not in rendered
    assert "with its 95% interval over paired cases (student-t on paired case differences, all-equal guard)" in rendered


@pytest.mark.parametrize(("low", "high", "band", "tone"), [(-0.1, 0.6, "NEUTRAL", "warn"), (0.2, 0.6, "PASS", "good"),
                                                          (None, None, None, "warn"), (-0.6, -0.2, "FAIL", "bad")])
def test_the_lift_kpi_is_green_only_for_a_gain_whose_interval_excludes_zero(low: float | None, high: float | None, band: str | None,
                                                                             tone: str) -> None:
    # Regression: "+37 pts … 0 with a 95% CI above 0" was green: the tone read the point estimate alone
    d = doc()
    overall = d["skills"][0]["tier3"]["agents"][0]["lift"][0]
    overall.update(ci_low=low, ci_high=high, band=band, delta=-0.4 if band == "FAIL" else 0.4)
    assert {k.key: k for k in html.kpis(d)}["lift"].tone == tone


def test_a_skipped_check_is_not_counted_as_passed() -> None:
    # Regression: a run pytest reported as 14 passed, 1 skipped read "Checks 15/15"
    d = doc()
    d["skills"][0]["checks"].append({"blocking": True, "result": {"check": "lint", "tier": 1, "status": "SKIPPED", "reason": "no scripts"}})
    kpi = {k.key: k for k in html.kpis(d)}["checks"]
    assert kpi.value == "1/3" and kpi.detail == "1 failed, errored or incomplete; 1 skipped"
