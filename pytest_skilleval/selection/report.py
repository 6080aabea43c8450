"""Session-level selection results: what items publish, and what the controller makes of them.

Each selection item puts one :class:`SelectionRecord` (JSON) on ``report.user_properties`` under
:data:`SELECTION_PROPERTY`; xdist carries it to the controller, where ``reports/session.py`` gathers
them into a :class:`SelectionSummary` for ``results.json`` and the terminal. The mean accuracy is
Strands': each trajectory's score is the mean of its judged rows, and the accuracy is the mean over
trajectories — so a trajectory that invoked five skills does not weigh five times one that invoked
one (the row mean is kept beside it, and every row is still listed). N/A rows are dropped, judge
errors are counted apart (never as 0), and a missing trajectory counts as 0.0.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from pydantic import BaseModel, Field

from pytest_skilleval.published import SELECTION_PROPERTY as SELECTION_PROPERTY  # re-exported (published.py: apart from this module)
from pytest_skilleval.selection.judge import SelectionRow
from pytest_skilleval.selection.metrics import CaseOutcome, ExpectationOutcome, SelectionRates, selection_rates


class SelectionRecord(BaseModel):
    nodeid: str
    trajectory: str
    harness: str | None = None
    kind: Literal["row", "expectations", "parse-error"] = "row"
    row: SelectionRow | None = None
    expectations: list[ExpectationOutcome] = Field(default_factory=list)
    case: CaseOutcome | None = None
    error: str | None = None


class SelectionSummary(BaseModel):
    mean_accuracy: float | None = Field(description="mean over trajectories of each trajectory's mean judged-row score; "
                                                    "N/A rows and judge errors excluded")
    row_mean_accuracy: float | None = Field(default=None, description="mean over judged rows (every row weighs the same)")
    judged_trajectories: int = 0
    judged: int = 0
    yes: int = 0
    no: int = 0
    missing: int = 0
    not_applicable: int = 0
    errors: int = 0
    parse_errors: int = 0
    trajectories: int = 0
    rows: list[SelectionRecord] = Field(default_factory=list)
    expectations: list[SelectionRecord] = Field(default_factory=list)
    rates: SelectionRates | None = None


def summarize(records: Iterable[SelectionRecord | dict[str, Any]]) -> SelectionSummary:
    recs = sorted((r if isinstance(r, SelectionRecord) else SelectionRecord.model_validate(r) for r in records),
                  key=lambda r: r.nodeid)
    rows = [r for r in recs if r.kind == "row" and r.row is not None]
    labels = [r.row.label for r in rows if r.row is not None]
    counted = [r for r in rows if r.row is not None and r.row.label in ("Yes", "No", "missing")]
    by_trajectory: dict[str, list[float]] = {}
    for r in counted:
        assert r.row is not None
        by_trajectory.setdefault(r.trajectory, []).append(r.row.score or 0.0)
    per_trajectory = [sum(scores) / len(scores) for scores in by_trajectory.values()]
    row_scores = [score for scores in by_trajectory.values() for score in scores]
    expectations = [r for r in recs if r.kind == "expectations"]
    cases = [r.case for r in expectations if r.case is not None]
    return SelectionSummary(
        mean_accuracy=sum(per_trajectory) / len(per_trajectory) if per_trajectory else None,
        row_mean_accuracy=sum(row_scores) / len(row_scores) if row_scores else None, judged_trajectories=len(by_trajectory),
        judged=len(counted), yes=labels.count("Yes"),
        no=labels.count("No"), missing=labels.count("missing"), not_applicable=labels.count("not_applicable"),
        errors=labels.count("error"), parse_errors=sum(1 for r in recs if r.kind == "parse-error"),
        trajectories=len({r.trajectory for r in recs}), rows=rows, expectations=expectations,
        rates=selection_rates(cases) if cases else None)


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def terminal_lines(s: SelectionSummary) -> list[str]:
    lines = [f"skill selection: mean accuracy {_pct(s.mean_accuracy)} over {s.judged_trajectories} trajectory(ies) "
             f"(each the mean of its rows; {_pct(s.row_mean_accuracy)} over {s.judged} judged row(s): "
             f"{s.yes} yes, {s.no} no, {s.missing} missing trajectory); {s.not_applicable} N/A excluded; "
             f"{s.errors} judge error(s); {s.parse_errors} unparseable; {s.trajectories} trajectory file(s)"]
    r = s.rates
    if r is not None and (r.positives or r.negatives):
        lines.append(f"triggering over {r.positives + r.negatives} labelled case(s): under-triggering {_pct(r.under_triggering_rate)} "
                     f"({r.under_triggered}/{r.positives}), over-triggering {_pct(r.over_triggering_rate)} "
                     f"({r.over_triggered}/{r.negatives}), abstention correctness {_pct(r.abstention_correctness)} "
                     f"({r.correct_abstentions}/{r.abstained}), forbidden loads {r.forbidden_violations}")
    return lines


def markdown(s: SelectionSummary) -> str:
    out = ["### Skill selection", "", *(f"- {line}" for line in terminal_lines(s)), ""]
    shown = [r for r in s.rows if r.row is not None and r.row.label != "not_applicable"][:50]
    if shown:
        out += ["| trajectory | skill | verdict | reason |", "|---|---|---|---|"]
        for rec in shown:
            assert rec.row is not None
            reason = rec.row.reason.replace("|", "\\|").replace("\n", " ")[:160]
            out.append(f"| {rec.trajectory} | {rec.row.skill or '-'} | {rec.row.label} | {reason} |")
    return "\n".join(out) + "\n"
