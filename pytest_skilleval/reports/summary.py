"""Short summaries: the terminal table at session end and the GitHub Actions step summary."""

from __future__ import annotations

from pytest_skilleval.reports import tier3 as tier3_md
from pytest_skilleval.reports.model import RunReport, SkillReport
from pytest_skilleval.selection import report as selection_report
from pytest_skilleval.triggers import report as triggers_md

MAX_ROWS = 25
#: After the counts of a run that did not finish (interrupted, or a worker died): they are of what ran.
PARTIAL = " — run interrupted, partial report"


def _row(sk: SkillReport) -> tuple[str, ...]:
    t1 = sk.tiers["1"]
    failed = ",".join(t1.failed_checks) or "-"
    c = sk.severity_counts
    quality = f"{sk.quality_score:g}" if sk.quality_score is not None else "-"
    return (sk.key, sk.verdict, t1.status, failed, f"{c['critical']}/{c['high']}/{c['medium']}/{c['low']}", quality)


HEADER = ("skill", "verdict", "tier 1", "failed checks", "crit/high/med/low", "quality")


def _shown(run: RunReport) -> list[SkillReport]:
    """Failing and incomplete skills first; all of them when the run is small."""
    bad = [s for s in run.skills if s.verdict != "PASS"]
    return run.skills if len(run.skills) <= MAX_ROWS else bad[:MAX_ROWS]


def terminal_lines(run: RunReport) -> list[str]:
    if not run.skills and run.selection is not None:  # a trajectories-only run has no skill table
        return selection_report.terminal_lines(run.selection)
    rows = [HEADER, *(_row(s) for s in _shown(run))]
    widths = [min(max(len(r[i]) for r in rows), 60) for i in range(len(HEADER))]
    lines = ["  ".join(cell[:60].ljust(w) for cell, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    hidden = len(run.skills) - (len(rows) - 1)
    if hidden:
        lines.append(f"… {hidden} more skill(s) passed; see results.json")
    v = run.verdict_counts
    c = run.severity_counts
    lines.append(f"{run.skill_count} skill(s): {v.get('PASS', 0)} pass, {v.get('FAIL', 0)} fail, "
                 f"{v.get('INCOMPLETE', 0)} incomplete; findings {c['critical']} critical, {c['high']} high, "
                 f"{c['medium']} medium, {c['low']} low, {c['info']} info" + ("" if run.complete else PARTIAL))
    if run.selection is not None:
        lines += selection_report.terminal_lines(run.selection)
    for sk in run.skills:
        if sk.tier3 is not None:
            lines += tier3_md.terminal_lines(sk.key, sk.tier3)
        if sk.triggers is not None:
            lines += triggers_md.terminal_lines(sk.triggers)
    return lines


def github_markdown(run: RunReport) -> str:
    v = run.verdict_counts
    out = ["## pytest-skilleval", "",
           f"**{run.skill_count} skill(s)**: {v.get('PASS', 0)} pass, {v.get('FAIL', 0)} fail, "
           f"{v.get('INCOMPLETE', 0)} incomplete" + ("" if run.complete else f" — **{PARTIAL[3:]}**"), ""]
    shown = _shown(run)
    if shown:
        out += ["| " + " | ".join(HEADER) + " |", "|" + "---|" * len(HEADER)]
        out += ["| " + " | ".join(cell.replace("|", "\\|") for cell in _row(s)) + " |" for s in shown]
    if run.selection is not None:
        out += ["", selection_report.markdown(run.selection)]
    return "\n".join(out) + "\n"
