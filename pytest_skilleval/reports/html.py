"""``skilleval-report/index.html``: one self-contained page a person reads to decide whether a skill helps.

Built from the ``results.json`` document (a plain dict, read tolerantly: fields a newer or older
schema adds or lacks are shown when present and skipped when not), so the session-end hook and
``skilleval html RESULTS.json`` render the same page. Layout, after what people look at first in
pytest-html, Allure, promptfoo's and inspect's viewers: a strip of headline numbers, then every
failing item expanded with its evidence, then the charts, then each skill with passes collapsed,
environment last. No CDN, no external script or font: inline CSS, inline SVG (``charts.py``) and a
few lines of inline script for sorting and filtering, which the page does not need to be read.
Everything that comes from a skill or an agent is escaped by Jinja's autoescape.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict
from collections.abc import Callable, Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from jinja2 import ChainableUndefined, Environment, PackageLoader, select_autoescape
from markupsafe import Markup, escape, soft_str
from pydantic import ValidationError

from pytest_skilleval import atomic
from pytest_skilleval.reports import charts
from pytest_skilleval.reports import tier3 as tier3_md
from pytest_skilleval.reports.templatecache import CompiledTemplates
from pytest_skilleval.tier3 import stats
from pytest_skilleval.tier3.options import AA_ARM
from pytest_skilleval.tier3.report import AgentTier3

PAGE = "index.html"
TEMPLATE = "report.html.j2"
FAILING = ("FAILED", "ERROR", "INCOMPLETE")
#: The arms a trial runs without the skill: the baseline and its A/A repeat (--skilleval-aa).
BASELINE_ARMS = ("without_skill", AA_ARM)
#: Each arm's name in the "Trials passed" KPI, in its order.
ARM_NAMES = (("with_skill", "with skill"), ("without_skill", "baseline"), (AA_ARM, "A/A baseline"))
LABELS = {"claude-code": "Claude Code", "codex": "Codex CLI", "opencode": "OpenCode", "gemini": "Gemini CLI"}
DIMENSIONS = ("security", "correctness", "discoverability", "effectiveness", "efficiency")
#: Tier 3 report fields the page already shows in its own place; any other scalar field is listed, so
#: fields a newer writer adds (intervals, power, noise floor, not-scored counts…) are never hidden.
SHOWN_TIER3 = {"modes", "scripted", "sandboxes", "isolated", "blocking", "attempts", "reruns", "dataset_digest", "cases", "labels",
               "agents", "verdict", "trials", "errors", "skipped", "skip_reasons"}
SHOWN_AGENT = {"agent", "versions", "models", "arms", "lift", "verdict", "attempts", "power", "noise_floor", "overall_dimensions"}


def _get(data: Any, *path: object, default: Any = None) -> Any:
    for key in path:
        if isinstance(data, Mapping):
            data = data.get(key, default)
        elif isinstance(data, list) and isinstance(key, int) and -len(data) <= key < len(data):
            data = data[key]
        else:
            return default
        if data is None:
            return default
    return data


def pct(value: Any) -> str:
    return "—" if not isinstance(value, int | float) or math.isnan(value) else f"{value * 100:.0f}%"


def points(value: Any) -> str:
    if not isinstance(value, int | float) or math.isnan(value):
        return "—"
    p = value * 100
    return "±0" if abs(p) < 0.05 else f"{p:+.0f}"


def label(agent: str) -> str:
    return LABELS.get(agent, agent)


#: The words a badge has a colour for (the page's ``.s-*`` styles); any other word gets ``s-other``.
BADGE_WORDS = frozenset(("PASS", "PASSED", "FAIL", "FAILED", "ERROR", "INCOMPLETE", "NEUTRAL", "passed", "failed", "incomplete"))


def badge(word: Any) -> Markup:
    """``<span class="badge s-WORD">WORD</span>``, the word escaped: the template's most frequent element
    (a Jinja macro cost more CPU than writing it, once per check of every skill)."""
    w = soft_str(word)  # Jinja's ``|string``
    return Markup(f'<span class="badge {"s-" + w if w in BADGE_WORDS else "s-other"}">{escape(w)}</span>')  # the class: a known word


@dataclass
class Kpi:
    name: str
    value: str
    detail: str = ""
    tone: str = ""  # good | bad | warn | ""
    key: str = ""  # data-kpi attribute: what the browser test reads


@dataclass
class FailingItem:
    skill: str
    kind: str  # check | trial
    title: str
    status: str
    reason: str
    findings: list[dict[str, Any]] = field(default_factory=list)
    trial: dict[str, Any] | None = None
    advisory: bool = False
    baseline: bool = False  # a trial of a baseline arm (BASELINE_ARMS): its failure is what the skill is meant to fix


class Replay:
    """A sequence read again on every pass (``len`` counts one pass), so a page over thousands of skills
    is rendered with one skill in memory at a time. ``results.json``'s ``skills`` may be one: the session
    hands its spooled skills over this way (each skill's JSON, and ``parse`` to read it; every item a
    skill's dict); a loaded document has a plain list."""

    def __init__(self, items: Callable[[], Iterable[Any]], count: int | None = None,
                 parse: Callable[[Any], Any] | None = None) -> None:
        self._items = items
        self._count = count
        self._parse = parse

    def __iter__(self) -> Iterator[Any]:
        return iter(self._items()) if self._parse is None else map(self._parse, self._items())

    def only(self, positions: Container[int]) -> Iterator[Any]:
        """One pass's items at ``positions`` (0-based, in pass order); the others are read but never parsed."""
        parse = self._parse
        for n, item in enumerate(self._items()):
            if n in positions:
                yield item if parse is None else parse(item)

    def __len__(self) -> int:
        if self._count is None:
            self._count = sum(1 for _ in self)
        return self._count

    def __bool__(self) -> bool:
        if self._count is not None:
            return self._count > 0
        return next(iter(self), _NOTHING) is not _NOTHING

    def __getitem__(self, index: int) -> Any:
        return list(self)[index]


_NOTHING = object()


@dataclass
class Page:
    doc: Mapping[str, Any]
    title: str
    kpis: list[Kpi]
    failing: Iterable[FailingItem]
    advisory: Iterable[FailingItem]
    skill_rows: list[dict[str, Any]]  # the skills table (skill_row)
    skills: Iterable[dict[str, Any]]  # each skill's details (skill_view)
    forest: Any
    forest_rows: list[charts.ForestRow]
    pass_k: Any
    cost: Any
    confusion: list[tuple[str, Any]]
    scripted: bool
    environment: list[tuple[str, str]]
    tier3_extra: dict[str, list[tuple[str, str]]]
    interval: str = ""  # how the forest plot's intervals were computed, from the document (interval_caption)


# -- reading ------------------------------------------------------------------------------------------
def load(path: Path) -> dict[str, Any]:
    """A results.json, or a report dir holding one."""
    target = path / "results.json" if path.is_dir() else path
    doc = json.loads(target.read_text(encoding="utf-8"))
    if not isinstance(doc, dict) or not isinstance(doc.get("skills", []), list):
        raise ValueError(f"{target}: not a skilleval results.json (no 'skills' list)")
    return doc


def _skills(doc: Mapping[str, Any]) -> Replay:
    every = doc.get("skills") or []
    if isinstance(every, Replay):  # the session's spooled skills: each a skill's dict
        return every
    return Replay(lambda: (s for s in every if isinstance(s, dict)), sum(1 for s in every if isinstance(s, dict)))


#: What the page's numbers and charts read of a trial; the rest (steps, answers, assertions) only the
#: failing items and the skill details show, and they read it from the document itself.
_TRIAL_TALLY = ("case", "arm", "attempt", "execution", "status", "cli_seconds")


def _tally(sk: Mapping[str, Any]) -> dict[str, Any]:
    """A skill without its bulk (findings, trial evidence): what the headline numbers, charts and
    counts need. The page builds these in one pass over the skills instead of one pass per number."""
    out = dict(sk)
    checks = sk.get("checks")
    if isinstance(checks, list):
        out["checks"] = [{**c, "result": {k: v for k, v in c["result"].items() if k != "findings"}}
                         if isinstance(c, dict) and isinstance(c.get("result"), dict) else c for c in checks]
    tier3 = sk.get("tier3")
    if isinstance(tier3, dict) and isinstance(tier3.get("agents"), list):
        out["tier3"] = {**tier3, "agents": [
            {**a, "attempts": [{k: t[k] for k in _TRIAL_TALLY if k in t} if isinstance(t, dict) else t for t in a["attempts"]]}
            if isinstance(a, dict) and isinstance(a.get("attempts"), list) else a for a in tier3["agents"]]}
    return out


def _agents(skill: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [a for a in _get(skill, "tier3", "agents", default=[]) if isinstance(a, dict)]


def _lift(agent: Mapping[str, Any], measure: str) -> dict[str, Any] | None:
    return next((r for r in agent.get("lift") or [] if isinstance(r, dict) and r.get("measure") == measure), None)


def interval_caption(skills: Iterable[Mapping[str, Any]]) -> str:
    """The lift intervals' confidence and method as the document records them (``tier3.interval``), for the
    forest plot's caption: never a method the data was not computed with."""
    specs = []
    for sk in skills:
        spec = _get(sk, "tier3", "interval")
        if _agents(sk) and isinstance(spec, dict):
            confidence = spec.get("confidence")
            level = f"{confidence:.0%} " if isinstance(confidence, int | float) else ""
            text = f"its {level}interval over paired cases ({spec.get('method') or 'method not recorded'})"
            if text not in specs:
                specs.append(text)
    return "; ".join(specs) or "its interval over paired cases (method not recorded)"


def _lift_band(row: Mapping[str, Any]) -> stats.Band | None:
    """A lift row's band by the card's rule, from its own numbers: a gain or a loss only when its interval excludes 0."""
    numbers = [row.get(k) for k in ("delta", "ci_low", "ci_high")]
    if not all(isinstance(v, int | float) for v in numbers):
        return None
    return stats.Lift(None, None, *numbers, int(row.get("n") or 0), 0, 0.95).band


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int | float | str):
        return str(value)
    if isinstance(value, list) and all(isinstance(v, int | float | str) for v in value):
        return ", ".join(map(str, value)) or None
    if isinstance(value, dict) and all(isinstance(v, int | float | str | bool | None) for v in value.values()):
        return ", ".join(f"{k}: {v}" for k, v in value.items()) or None
    return None


def _extra(data: Mapping[str, Any], shown: set[str]) -> list[tuple[str, str]]:
    out = []
    for key in sorted(set(data) - shown):
        text = _scalar(data[key])
        if text is not None:
            out.append((key.replace("_", " "), text))
    return out


# -- headline numbers --------------------------------------------------------------------------------
def _trial_rows(doc: Mapping[str, Any]) -> Iterable[tuple[dict[str, Any], dict[str, Any], dict[str, Any]]]:
    for sk in _skills(doc):
        for agent in _agents(sk):
            for attempt in agent.get("attempts") or []:
                if isinstance(attempt, dict):
                    yield sk, agent, attempt


def _checks(sk: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [c for c in sk.get("checks") or [] if isinstance(c, dict) and isinstance(c.get("result"), dict)]


def _trigger_agents(sk: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The per-agent trigger results of a skill (``skills[].triggers.agents``, triggers/metrics.py)."""
    t = sk.get("triggers")
    return [a for a in _get(t, "agents", default=[]) if isinstance(a, dict) and isinstance(a.get("confusion"), dict)]


def _trigger(doc: Mapping[str, Any]) -> dict[str, Any] | None:
    """Trigger recall and precision over every skill and agent that measured them (pooled counts)."""
    tp = fp = fn = tn = 0
    found = False
    for sk in _skills(doc):
        for a in _trigger_agents(sk):
            m = a["confusion"]
            if all(isinstance(m.get(k), int) for k in ("tp", "fp", "fn", "tn")):
                found = True
                tp, fp, fn, tn = tp + m["tp"], fp + m["fp"], fn + m["fn"], tn + m["tn"]
    if not found:
        return None
    return {"tp": tp, "fp": fp, "fn": fn, "tn": tn, "recall": tp / (tp + fn) if tp + fn else None,
            "precision": tp / (tp + fp) if tp + fp else None}


def kpis(doc: Mapping[str, Any]) -> list[Kpi]:
    skills = _skills(doc)
    verdicts = doc.get("verdict_counts") or {}
    out = [Kpi("Skills", str(doc.get("skill_count", len(skills))), f"{doc.get('overall_status', '?')} overall",
               {"passed": "good", "failed": "bad", "incomplete": "warn"}.get(str(doc.get("overall_status")), ""), "skills")]
    out.append(Kpi("Pass / fail / incomplete", f"{verdicts.get('PASS', 0)} / {verdicts.get('FAIL', 0)} / {verdicts.get('INCOMPLETE', 0)}",
                   "skill verdicts for the tiers that ran", "bad" if verdicts.get("FAIL") else "warn" if verdicts.get("INCOMPLETE") else "good",
                   "verdicts"))
    n_checks = failed_checks = passed_checks = skipped_checks = 0
    check_seconds: list[float] = []
    for sk in skills:  # one pass, one skill at a time: never a list of every check
        for c in _checks(sk):
            n_checks += 1
            status = c["result"].get("status")
            failed_checks += status in FAILING
            passed_checks += status == "PASSED"  # a skipped check was not decided: it is no pass
            skipped_checks += status == "SKIPPED"
            check_seconds.append(float(c["result"].get("duration_s") or 0))
    others = n_checks - passed_checks - failed_checks - skipped_checks
    detail = "; ".join([f"{failed_checks} failed, errored or incomplete", *([f"{skipped_checks} skipped"] if skipped_checks else []),
                        *([f"{others} not decided"] if others else [])])
    out.append(Kpi("Checks", f"{passed_checks}/{n_checks}", detail, "bad" if failed_checks else "good", "checks"))
    overall = [(sk, a, r) for sk in skills for a in _agents(sk) if (r := _lift(a, "overall")) and isinstance(r.get("delta"), int | float)]
    if overall:
        if len(overall) == 1:
            r = overall[0][2]
            ci = f"n={r.get('n')}"
            if r.get("ci_low") is not None:
                ci = f"95% CI {points(r.get('ci_low'))} to {points(r.get('ci_high'))}, " + ci
            value, detail, delta = f"{points(r['delta'])} pts", ci, r["delta"]
        else:
            deltas = [r["delta"] for _, _, r in overall]
            delta = sum(deltas) / len(deltas)
            above = sum(1 for _, _, r in overall if (r.get("ci_low") or 0) > 0)
            value = f"{points(delta)} pts"
            detail = f"mean of {len(overall)} skill × agent lifts; {above} with a 95% CI above 0"
        scripted = any(_get(sk, "tier3", "scripted") for sk, _, _ in overall)
        bands = {_lift_band(r) for _, _, r in overall}  # a gain or a loss only when its interval excludes 0 (stats.Lift.band)
        tone = "bad" if stats.Band.FAIL in bands else "good" if bands == {stats.Band.PASS} else "warn"
        out.append(Kpi("Tier 3 lift", value, detail + (" · harness check" if scripted else ""), tone, "lift"))
    trials = list(_trial_rows(doc))
    if trials:
        firsts = [t for _, _, t in trials if t.get("execution", 1) == 1]
        passed = sum(1 for t in firsts if t.get("status") == "PASSED")
        decided = sum(1 for t in firsts if t.get("status") in ("PASSED", "FAILED"))
        arms = {arm: [t for t in firsts if t.get("arm") == arm and t.get("status") in ("PASSED", "FAILED")] for arm, _ in ARM_NAMES}
        split = " · ".join(f"{name} {sum(t.get('status') == 'PASSED' for t in arms[arm])}/{len(arms[arm])}"
                           for arm, name in ARM_NAMES if arms[arm])
        out.append(Kpi("Trials passed", f"{passed}/{decided}", split or f"{len(trials)} trial(s)", "", "trials"))
    trigger = _trigger(doc)
    if trigger:
        out.append(Kpi("Trigger recall / precision", f"{pct(trigger.get('recall'))} / {pct(trigger.get('precision'))}",
                       f"loads when it should / only then; {trigger['tp'] + trigger['fn']} should, {trigger['fp'] + trigger['tn']} should not",
                       "", "trigger"))
    selection = doc.get("selection")
    if isinstance(selection, dict) and selection.get("accuracy") is not None:
        out.append(Kpi("Selection accuracy", pct(selection.get("accuracy")), "judged over recorded trajectories", "", "selection"))
    cost = math.fsum(float(_get(arm, "cost_usd", default=0) or 0) for sk in skills for a in _agents(sk)
                     for arm in (a.get("arms") or {}).values() if isinstance(arm, dict))
    tokens = sum(int(_get(arm, "tokens_in", default=0) or 0) + int(_get(arm, "tokens_out", default=0) or 0)
                 for sk in skills for a in _agents(sk) for arm in (a.get("arms") or {}).values() if isinstance(arm, dict))
    spent = [arm.get("cost_usd") for sk in skills for a in _agents(sk) for arm in (a.get("arms") or {}).values() if isinstance(arm, dict)]
    if trials and all(c is None for c in spent):  # scripted or replayed trials spend nothing: say so, not "$0"
        out.append(Kpi("Cost", "none", f"nothing spent (scripted or replayed); {tokens:,} tokens metered", "", "cost"))
    elif trials or cost:
        out.append(Kpi("Cost", f"${cost:.4f}", f"{tokens:,} tokens metered by the gateway", "", "cost"))
    duration = doc.get("duration_s")
    if not isinstance(duration, int | float):
        duration = math.fsum(check_seconds) + math.fsum(float(t.get("cli_seconds") or 0) for _, _, t in trials)
        out.append(Kpi("Duration", f"{duration:.1f} s", "check and agent time, summed", "", "duration"))
    else:
        out.append(Kpi("Duration", f"{duration:.1f} s", "session wall time", "", "duration"))
    return out


# -- failing items ------------------------------------------------------------------------------------
def failing_items(doc: Mapping[str, Any]) -> tuple[Replay, Replay]:
    """(failing items, advisory check failures). Failing: checks that failed, errored or are incomplete,
    then trials that failed or errored — with-skill arm first, baselines last — each with its evidence.
    Advisory check failures (``lint``) are listed apart, collapsed. Both are read again on every pass
    over the skills, not kept."""
    return Replay(lambda: _failing(doc, advisory=False)), Replay(lambda: _failing(doc, advisory=True))


def _failing(doc: Mapping[str, Any], *, advisory: bool, skills: Iterable[Mapping[str, Any]] | None = None) -> Iterator[FailingItem]:
    """The items of :func:`failing_items` over the document's skills, or over ``skills`` when given."""
    trials: list[FailingItem] = []
    for sk in _skills(doc) if skills is None else skills:
        key = str(sk.get("key", "?"))
        for c in _checks(sk):
            r = c["result"]
            if r.get("status") not in FAILING:
                continue
            item = FailingItem(skill=key, kind="check", title=f"{key} · tier {r.get('tier', '?')} · {r.get('check', '?')}",
                               status=str(r.get("status")), reason=str(r.get("reason") or ""),
                               findings=[f for f in r.get("findings") or [] if isinstance(f, dict)],
                               advisory=not c.get("blocking", True) and r.get("status") == "FAILED")
            if item.advisory == advisory:
                yield item  # checks first, in skill order
        if advisory:
            continue
        blocking_t3 = bool(_get(sk, "tier3", "blocking"))
        for agent in _agents(sk):
            for t in agent.get("attempts") or []:
                if not isinstance(t, dict) or t.get("status") not in ("FAILED", "ERROR"):
                    continue
                run = f", run {t.get('execution')}" if (t.get("execution") or 1) > 1 else ""
                where = f"{label(str(agent.get('agent')))} · {t.get('arm', '?')} · a{t.get('attempt', 1)}{run}"
                trials.append(FailingItem(skill=key, kind="trial", title=f"{key} · {t.get('case', '?')} · {where}",
                                          status=str(t.get("status")), reason=str(t.get("reason") or ""), trial=t,
                                          advisory=t.get("status") == "FAILED" and not blocking_t3, baseline=t.get("arm") in BASELINE_ARMS))
    # then the trials (a failed trial is expanded even when advisory: its evidence is the point), baselines last
    yield from sorted(trials, key=lambda i: (i.baseline, i.advisory))


# -- charts -------------------------------------------------------------------------------------------
def forest_rows(doc: Mapping[str, Any]) -> list[charts.ForestRow]:
    rows = []
    for sk in _skills(doc):
        for agent in _agents(sk):
            group = f"{sk.get('key')} · {label(str(agent.get('agent')))}"
            for r in agent.get("lift") or []:
                if isinstance(r, dict) and isinstance(r.get("delta"), int | float):
                    rows.append(charts.ForestRow(label=f"{group} · {r.get('measure')}", delta=float(r["delta"]),
                                                 low=r.get("ci_low"), high=r.get("ci_high"), n=int(r.get("n") or 0), group=group))
    return rows


def pass_curves(doc: Mapping[str, Any]) -> list[charts.PassCurve]:
    curves = []
    for sk in _skills(doc):
        for agent in _agents(sk):
            series: dict[str, list[float | None]] = {}
            for arm in ("with_skill", "without_skill"):
                by_case: dict[str, list[bool | None]] = defaultdict(list)
                for t in agent.get("attempts") or []:
                    if isinstance(t, dict) and t.get("arm") == arm and (t.get("execution") or 1) == 1 and t.get("status") != "SKIPPED":
                        by_case[str(t.get("case"))].append({"PASSED": True, "FAILED": False}.get(str(t.get("status"))))
                n = max((len(v) for v in by_case.values()), default=0)
                series[arm] = [stats.pass_at_k_over_cases(by_case, k).pass_at_k for k in range(1, n + 1)]
            if series["with_skill"] or series["without_skill"]:
                curves.append(charts.PassCurve(f"{sk.get('key')} · {label(str(agent.get('agent')))}", series["with_skill"], series["without_skill"]))
    return curves


def cost_points(doc: Mapping[str, Any]) -> list[charts.CostPoint]:
    out = []
    for sk in _skills(doc):
        for agent in _agents(sk):
            arms = agent.get("arms") or {}

            def per_trial(arm: str, arms: Mapping[str, Any] = arms) -> tuple[float | None, float | None]:
                a = arms.get(arm)
                if not isinstance(a, dict) or not a.get("trials"):
                    return None, None
                return ((a.get("tokens_in") or 0) + (a.get("tokens_out") or 0)) / a["trials"], a.get("pass_rate")

            tw, rw = per_trial("with_skill")
            to, ro = per_trial("without_skill")
            if tw is not None or to is not None:
                out.append(charts.CostPoint(f"{sk.get('key')} · {label(str(agent.get('agent')))}", tw, rw, to, ro))
    return out


def confusion_charts(doc: Mapping[str, Any]) -> list[tuple[str, Any]]:
    out = []
    for sk in _skills(doc):
        for a in _trigger_agents(sk):
            m = a["confusion"]
            if all(isinstance(m.get(k), int) for k in ("tp", "fp", "fn", "tn")):
                name = f"{sk.get('key')} · {label(str(a.get('agent')))}"
                out.append((name, charts.confusion(m["tp"], m["fn"], m["fp"], m["tn"], title=f"Trigger confusion matrix: {name}")))
    return out


def _rate(rate: Any) -> str:
    """A trigger rate with its Wilson interval: ``83% (5/6; 95% CI 44–97%)``."""
    if not isinstance(rate, dict) or rate.get("value") is None:
        return "—"
    ci = f"; 95% CI {pct(rate.get('low'))}–{pct(rate.get('high'))}" if rate.get("low") is not None else ""
    return f"{pct(rate['value'])} ({rate.get('successes', '?')}/{rate.get('n', '?')}{ci})"


def trigger_view(sk: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [{"label": label(str(a.get("agent"))), "recall": _rate(a.get("recall")), "precision": _rate(a.get("precision")),
             "accuracy": _rate(a.get("accuracy")), "queries": a.get("queries"), "runs": a.get("runs_per_query"),
             "missed": a.get("missed_queries") or [], "false": a.get("false_trigger_queries") or [],
             "flipped": a.get("flipped_queries") or [], "rivals": a.get("stealing_rivals") or {},
             "harness": bool(_get(sk, "triggers", "harness_check"))} for a in _trigger_agents(sk)]


def power_lines(agent: Mapping[str, Any]) -> list[str]:
    """The Tier 3 power and A/A noise-floor sentences, worded as on the card (reports/tier3.py)."""
    try:
        model = AgentTier3.model_validate(agent)
    except ValidationError:  # an older or newer shape: the fields are listed generically instead
        return []
    return tier3_md._power_lines(model)


# -- per skill ----------------------------------------------------------------------------------------
def skill_view(sk: Mapping[str, Any]) -> dict[str, Any]:
    checks = _checks(sk)
    agents = []
    for a in _agents(sk):
        arms = {k: v for k, v in (a.get("arms") or {}).items() if isinstance(v, dict)}
        measures = []
        for m in ("overall", *DIMENSIONS):
            r = _lift(a, m) or {}
            w, wo = _get(arms, "with_skill", "measures", m), _get(arms, "without_skill", "measures", m)
            measures.append({"measure": m, "without": pct(r.get("without_skill", wo)), "with": pct(r.get("with_skill", w)),
                             "delta": points(r.get("delta")), "ci": f"{points(r.get('ci_low'))} to {points(r.get('ci_high'))}"
                             if r.get("ci_low") is not None and (r.get("n") or 0) > 1 else "—", "n": r.get("n", "—"),
                             "band": r.get("band") or "", "extra": _extra(r, {"measure", "with_skill", "without_skill", "delta", "ci_low",
                                                                              "ci_high", "n", "band"})})
        agents.append({"agent": a.get("agent"), "label": label(str(a.get("agent"))), "verdict": a.get("verdict") or "NOT SCORED",
                       "versions": ", ".join(a.get("versions") or []), "models": ", ".join(a.get("models") or []),
                       "measures": measures, "arms": arms, "attempts": [t for t in a.get("attempts") or [] if isinstance(t, dict)],
                       "extra": _extra(a, SHOWN_AGENT), "power": power_lines(a),
                       "overall_of": ", ".join(a.get("overall_dimensions") or [])})
    failing = any(c["result"].get("status") in FAILING for c in checks) or sk.get("verdict") != "PASS"
    return {**skill_row(sk, checks), "name": sk.get("name"), "path": sk.get("path"), "recommended": sk.get("recommended_for_publication"),
            "digest": sk.get("digest"), "severity": sk.get("severity_counts") or {}, "checks": checks, "agents": agents,
            "tier3": sk.get("tier3"), "triggers": trigger_view(sk), "open": failing}


def skill_row(sk: Mapping[str, Any], checks: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """What the skills table shows of a skill (a part of :func:`skill_view`): made in the page's first pass
    over the skills, so the table costs no pass of its own (each pass parses every spooled skill again)."""
    checks = _checks(sk) if checks is None else checks
    return {"key": sk.get("key"), "verdict": sk.get("verdict", "?"), "quality": sk.get("quality_score"),
            "tiers": [(t, _get(sk, "tiers", t, "status", default="NOT RUN")) for t in ("1", "2", "3")],
            "findings": sum(len(c["result"].get("findings") or []) for c in checks),
            "lift": next((points(r.get("delta")) for a in _agents(sk) if (r := _lift(a, "overall"))), "—")}


def build(doc: Mapping[str, Any]) -> Page:
    skills = _skills(doc)
    # One pass over the skills for every number, chart and row of the skills table (a spooled skill is read
    # from disk and parsed on each pass); the lists the page shows in full are read once more each, as they render.
    # The lists of failing and of advisory items read only the skills that have one, counted from the tally in
    # the same pass (a list's items are its skills' items, reordered).
    tallies, table = [], []
    listed: dict[bool, set[int]] = {False: set(), True: set()}  # by advisory: the positions of the skills with an item
    counts = {False: 0, True: 0}
    for n, sk in enumerate(skills):
        tallied = _tally(sk)
        tallies.append(tallied)
        table.append(skill_row(sk))
        for advisory_list in (False, True):
            found = sum(1 for _ in _failing(doc, advisory=advisory_list, skills=(tallied,)))
            if found:
                listed[advisory_list].add(n)
                counts[advisory_list] += found
    tally = {**doc, "skills": tallies}
    rows = forest_rows(tally)
    curves = pass_curves(tally)
    costs = cost_points(tally)
    blocking, advisory = (Replay(lambda a=a: _failing(doc, advisory=a, skills=skills.only(listed[a])), counts[a])
                          for a in (False, True))
    settings = doc.get("settings") or {}
    env = [("tool", f"{_get(doc, 'tool', 'name', default='?')} {_get(doc, 'tool', 'version', default='')}"),
           ("generated at", str(doc.get("generated_at", "?"))), ("schema version", str(doc.get("schema_version", "?"))),
           ("complete", "yes" if doc.get("complete", True) else "NO — the run was interrupted"),
           ("exit status", str(doc.get("exit_status", "?")))]
    env += [(f"setting: {k}", str(v)) for k, v in sorted(settings.items())]
    env += [(k.replace("_", " "), v) for k, v in _extra(doc, {"schema_version", "tool", "generated_at", "complete", "exit_status", "settings",
                                                             "overall_status", "skill_count", "severity_counts", "verdict_counts", "skills",
                                                             "selection", "duration_s"})]
    extra = {str(sk.get("key")): _extra(sk["tier3"], SHOWN_TIER3) for sk in tally["skills"] if isinstance(sk.get("tier3"), dict)}
    return Page(doc=doc, title=f"skilleval report: {len(skills)} skill(s), {doc.get('overall_status', '?')}", kpis=kpis(tally),
                failing=blocking, advisory=advisory, skill_rows=table, skills=Replay(lambda: map(skill_view, skills), len(skills)),
                forest=charts.forest(rows) if rows else None, forest_rows=rows,
                pass_k=charts.pass_at_k(curves) if curves else None, cost=charts.cost_vs_pass(costs) if costs else None,
                confusion=confusion_charts(tally), scripted=any(_get(sk, "tier3", "scripted") for sk in tally["skills"]),
                environment=env, tier3_extra=extra, interval=interval_caption(tally["skills"]) if rows else "")


#: What ``getattr`` finds on a plain dict: its methods and special names; any other name it cannot find.
_DICT_NAMES = frozenset(dir(dict))


class _PageEnvironment(Environment):
    """Jinja's environment, ``x.name`` on a plain dict answered without the failed attribute lookup Jinja
    tries first (the page reads its document's dicts ~190,000 times over the corpus, each a raised and
    caught AttributeError). The same answer: a dict's own attribute (``items``) first, else its item,
    else undefined."""

    def getattr(self, obj: Any, attribute: str) -> Any:
        if type(obj) is dict and attribute not in _DICT_NAMES:
            try:
                return obj[attribute]
            except (TypeError, LookupError):
                return self.undefined(obj=obj, name=attribute)
        return super().getattr(obj, attribute)


_ENV: Environment | None = None


def _environment() -> Environment:
    global _ENV
    if _ENV is None:
        # ChainableUndefined: a field an older or newer results.json lacks renders as nothing, never an error
        _ENV = _PageEnvironment(loader=PackageLoader("pytest_skilleval.reports", "templates"), autoescape=select_autoescape(default=True),
                           undefined=ChainableUndefined, trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
        _ENV.filters.update(pct=pct, points=points, label=label)
        _ENV.globals.update(badge=badge)
        _ENV.bytecode_cache = CompiledTemplates(Path(__file__).parent / "templates", _compile_options(_ENV))
    return _ENV


def _compile_options(env: Environment) -> str:
    """What of ``env`` its compiled templates depend on (the filters and globals are looked up when rendering)."""
    return repr((env.block_start_string, env.block_end_string, env.variable_start_string, env.variable_end_string,
                 env.comment_start_string, env.comment_end_string, env.line_statement_prefix, env.line_comment_prefix,
                 env.trim_blocks, env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline, env.optimized,
                 sorted(env.extensions), env.autoescape(TEMPLATE) if callable(env.autoescape) else env.autoescape))


def render(doc: Mapping[str, Any]) -> str:
    return "".join(render_chunks(doc))


def render_chunks(doc: Mapping[str, Any]) -> Iterator[str]:
    """The page piece by piece (Jinja's ``generate``): with a :class:`Replay` of skills, never whole in memory."""
    return _environment().get_template(TEMPLATE).generate(page=build(doc))


def write(doc: Mapping[str, Any], report_dir: Path, trusted: Path | None = None) -> Path:
    return atomic.write_atomic_chunks(report_dir / PAGE, render_chunks(doc), trusted, durable=False)


# -- `skilleval html` ---------------------------------------------------------------------------------
def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("results", type=Path, help="a results.json, or the report dir holding one")
    parser.add_argument("-o", "--output", type=Path, help="where to write the page (default: index.html beside results.json)")


def run(args: argparse.Namespace) -> int:
    try:
        document = load(args.results)
    except (OSError, ValueError) as exc:
        print(f"skilleval html: {exc}", file=sys.stderr)
        return 2
    report_dir = args.results if args.results.is_dir() else args.results.parent
    target = args.output if args.output is not None else report_dir / PAGE
    try:
        if args.output is not None:
            atomic.write_atomic(args.output, render(document))
        else:
            write(document, report_dir)
    except OSError as exc:  # a folder that cannot be made, a link refused, a full disk: the page was not written
        print(f"skilleval html: cannot write {target}: {type(exc).__name__}: {exc.strerror or exc}", file=sys.stderr)
        return 2
    print(target)
    return 0
