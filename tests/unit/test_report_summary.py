"""The short summaries (reports/summary.py): the terminal table at session end and the $GITHUB_STEP_SUMMARY
Markdown. Every number they show must be what it says, and a row that is not a pass must say what failed."""

from __future__ import annotations

from pytest_skilleval.reports import summary
from pytest_skilleval.reports.model import CheckRecord, RunReport, SkillReport, build_run, build_skill
from pytest_skilleval.results import CheckResult, Finding, Severity


def _record(check: str, tier: int = 1, status: str = "PASSED") -> CheckRecord:
    findings = [Finding(rule="x.y", severity=Severity.HIGH, file="SKILL.md", line=1, message="bad")] if status == "FAILED" else []
    return CheckRecord(blocking=True, result=CheckResult(check=check, tier=tier, status=status, findings=findings))


def _skill(key: str, *records: CheckRecord) -> SkillReport:
    return build_skill(key, key, f"/src/{key}", list(records) or [_record("schema")])


def _run(skills: list[SkillReport]) -> RunReport:
    return build_run(skills, tool={"name": "pytest-skilleval", "version": "0.0.0"}, generated_at="2026-01-01T00:00:00+00:00",
                     complete=True, exit_status=1, settings={})


def _big_run() -> RunReport:
    """40 skills: 30 fail Tier 1, 2 are incomplete, 8 pass; more than the table shows."""
    failing = [_skill(f"f{i:02d}", _record("schema", status="FAILED")) for i in range(30)]
    incomplete = [_skill(f"i{i}", _record("security", status="INCOMPLETE")) for i in range(2)]
    passing = [_skill(f"p{i}") for i in range(8)]
    return _run(failing + incomplete + passing)


def test_the_skills_left_out_of_a_large_table_are_counted_by_verdict() -> None:
    run = _big_run()
    lines = summary.terminal_lines(run)
    table = [ln for ln in lines if ln.startswith(("f", "i", "p"))]
    assert len(table) == summary.MAX_ROWS and all(ln.split()[1] != "PASS" for ln in table)
    hidden = [ln for ln in lines if ln.startswith("…")]
    # 25 shown, all failing: 5 failing, 2 incomplete and 8 passing skills are not, and the line says so
    assert hidden == ["… 15 more skill(s) not shown: 8 pass, 5 fail, 2 incomplete; see results.json"]
    text = summary.github_markdown(run)
    assert "15 more skill(s) not shown: 8 pass, 5 fail, 2 incomplete" in text


def test_a_small_run_shows_every_skill_and_no_remainder() -> None:
    lines = summary.terminal_lines(_run([_skill("a"), _skill("b", _record("schema", status="FAILED"))]))
    assert not [ln for ln in lines if ln.startswith("…")]
    assert [ln.split()[:2] for ln in lines if ln.startswith(("a ", "b "))] == [["a", "PASS"], ["b", "FAIL"]]


def test_a_row_failing_tier_2_names_the_tier_2_check() -> None:
    """Two identical skills fail tier2::similarity while Tier 1 passes: the row must say what failed."""
    run = _run([_skill(k, _record("schema"), _record("similarity", tier=2, status="FAILED")) for k in ("a-semver", "b-semver")])
    rows = {ln.split()[0]: ln for ln in summary.terminal_lines(run) if ln.startswith(("a-", "b-"))}
    assert "tier2::similarity" in rows["a-semver"] and rows["a-semver"].split()[1] == "FAIL"
    md = summary.github_markdown(run)
    assert any(ln.startswith("| a-semver |") and "tier2::similarity" in ln for ln in md.splitlines())


def test_a_row_names_the_failed_checks_of_each_tier_and_an_incomplete_tier() -> None:
    sk = _skill("s", _record("schema", status="FAILED"), _record("security", status="INCOMPLETE"), _record("dedup", tier=2, status="ERROR"))
    row = dict(zip(summary.HEADER, summary._row(sk), strict=True))
    assert row["verdict"] == "INCOMPLETE"
    assert row["failed"] == "tier1::schema,tier1 INCOMPLETE,tier2::dedup"


def test_a_passing_row_names_nothing_failed() -> None:
    sk = _skill("s", _record("schema"), _record("similarity", tier=2))
    assert dict(zip(summary.HEADER, summary._row(sk), strict=True))["failed"] == "-"


def test_a_long_list_of_failed_checks_is_cut_visibly() -> None:
    sk = _skill("s", *(_record(f"check-number-{i}", status="FAILED") for i in range(8)))
    row = next(ln for ln in summary.terminal_lines(_run([sk])) if ln.startswith("s "))
    assert "…" in row
