"""Short summaries: the terminal table at session end and the GitHub Actions step summary."""

from __future__ import annotations

from pytest_skilleval.reports import tier3 as tier3_md
from pytest_skilleval.reports.model import RunReport, SkillReport
from pytest_skilleval.selection import report as selection_report
from pytest_skilleval.triggers import report as triggers_md

MAX_ROWS = 25
#: After the counts of a run that did not finish (interrupted, or a worker died): they are of what ran.
PARTIAL = " — run interrupted, partial report"
MAX_CELL = 60
VERDICTS = ("PASS", "FAIL", "INCOMPLETE")


def _failed(sk: SkillReport) -> str:
    """What kept the skill from a pass, in every tier: its failed checks as their node ids name them
    (``tier2::similarity``; Tier 3's are agents), and a tier that is INCOMPLETE as such."""
    out = []
    for tier in ("1", "2", "3"):
        ts = sk.tiers[tier]
        out += [f"tier{tier}::{name}" for name in ts.failed_checks]
        if ts.status == "INCOMPLETE" or (ts.status == "ERROR" and not ts.failed_checks):
            out.append(f"tier{tier} {ts.status}")
    return ",".join(out) or "-"


def _row(sk: SkillReport) -> tuple[str, ...]:
    c = sk.severity_counts
    quality = f"{sk.quality_score:g}" if sk.quality_score is not None else "-"
    return (sk.key, sk.verdict, sk.tiers["1"].status, _failed(sk), f"{c['critical']}/{c['high']}/{c['medium']}/{c['low']}", quality)


HEADER = ("skill", "verdict", "tier 1", "failed", "crit/high/med/low", "quality")


def _shown(run: RunReport) -> list[SkillReport]:
    """Failing and incomplete skills first; all of them when the run is small."""
    bad = [s for s in run.skills if s.verdict != "PASS"]
    return run.skills if len(run.skills) <= MAX_ROWS else bad[:MAX_ROWS]


def _counts(verdicts: dict[str, int]) -> str:
    return ", ".join(f"{verdicts.get(v, 0)} {v.lower()}" for v in VERDICTS)


def _hidden(run: RunReport, shown: list[SkillReport], results_json: bool) -> str | None:
    """The skills the table leaves out, counted by verdict (a large run's table shows only the first failing ones);
    ``results_json``: the run wrote a results.json that lists them."""
    if len(shown) == len(run.skills):
        return None
    left = dict(run.verdict_counts)
    for sk in shown:
        left[sk.verdict] -= 1
    return f"{len(run.skills) - len(shown)} more skill(s) not shown: {_counts(left)}" + ("; see results.json" if results_json else "")


def _cell(text: str) -> str:
    return text if len(text) <= MAX_CELL else text[:MAX_CELL - 1] + "…"


def terminal_lines(run: RunReport, *, results_json: bool = True) -> list[str]:
    if not run.skills and run.selection is not None:  # a trajectories-only run has no skill table
        return selection_report.terminal_lines(run.selection)
    shown = _shown(run)
    rows = [HEADER, *(tuple(_cell(cell) for cell in _row(s)) for s in shown)]
    widths = [max(len(r[i]) for r in rows) for i in range(len(HEADER))]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows] if shown else []
    hidden = _hidden(run, shown, results_json)
    if hidden:
        lines.append(f"… {hidden}")
    c = run.severity_counts
    lines.append(f"{run.skill_count} skill(s): {_counts(run.verdict_counts)}; findings {c['critical']} critical, {c['high']} high, "
                 f"{c['medium']} medium, {c['low']} low, {c['info']} info" + ("" if run.complete else PARTIAL))
    if run.selection is not None:
        lines += selection_report.terminal_lines(run.selection)
    for sk in run.skills:
        if sk.tier3 is not None:
            lines += tier3_md.terminal_lines(sk.key, sk.tier3)
        if sk.triggers is not None:
            lines += triggers_md.terminal_lines(sk.triggers)
    return lines


def github_markdown(run: RunReport, *, results_json: bool = True, write_error: str | None = None) -> str:
    """The step summary; ``write_error``: why the run's report files were not written (then there is no results.json)."""
    out = ["## pytest-skilleval", "",
           f"**{run.skill_count} skill(s)**: {_counts(run.verdict_counts)}" + ("" if run.complete else f" — **{PARTIAL[3:]}**"), ""]
    if write_error:
        out += [f"**reports NOT written**: {write_error}", ""]
    shown = _shown(run)
    if shown:
        out += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in _row(s)) + " |" for s in shown]
    hidden = _hidden(run, shown, results_json and not write_error)
    if hidden:
        out += ["", f"… {hidden}"]
    if run.selection is not None:
        out += ["", selection_report.markdown(run.selection)]
    return "\n".join(out) + "\n"
