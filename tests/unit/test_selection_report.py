"""The session summary of selection rows: the mean over judged rows only, and how it reads."""

from __future__ import annotations

from pytest_skilleval.selection.judge import SelectionRow
from pytest_skilleval.selection.metrics import CaseOutcome
from pytest_skilleval.selection.report import SelectionRecord, markdown, summarize, terminal_lines


def rec(nodeid: str, label: str, score: float | None, passed: bool, trajectory: str = "t.jsonl") -> SelectionRecord:
    return SelectionRecord(nodeid=nodeid, trajectory=trajectory, harness="codex",
                           row=SelectionRow(skill=nodeid.rsplit(":", 1)[-1], label=label, score=score, passed=passed, reason=f"r|{label}"))


def test_mean_excludes_na_and_errors_but_counts_a_missing_trajectory() -> None:
    records = [rec("a::selection::x[1]", "Yes", 1.0, True), rec("a::selection::y[2]", "No", 0.0, False),
               rec("b::selection::none", "not_applicable", None, True, "b.jsonl"), rec("c::selection::z[1]", "error", None, False, "c.jsonl"),
               rec("d::selection::m[1]", "missing", 0.0, False, "d.jsonl"),
               SelectionRecord(nodeid="e::parse", trajectory="e.jsonl", kind="parse-error", error="e.jsonl:3: truncated").model_dump()]
    s = summarize(records)
    assert (s.judged, s.yes, s.no, s.missing, s.not_applicable, s.errors, s.parse_errors, s.trajectories) == (3, 1, 1, 1, 1, 1, 1, 5)
    assert s.rates is None
    assert [r.nodeid for r in s.rows][0] == "a::selection::x[1]"
    assert s.mean_accuracy == 0.25 and s.row_mean_accuracy == 1 / 3  # t.jsonl: (1 + 0) / 2; d.jsonl: 0
    assert terminal_lines(s) == ["skill selection: mean accuracy 25.0% over 2 trajectory(ies) (each the mean of its rows; 33.3% over "
                                 "3 judged row(s): 1 yes, 1 no, 1 missing trajectory); 1 N/A excluded; 1 judge error(s); "
                                 "1 unparseable; 5 trajectory file(s)"]
    md = markdown(s)
    assert "| t.jsonl | y[2] | No | r\\|No |" in md and "not_applicable" not in md


def test_rates_appear_when_cases_say_what_should_happen() -> None:
    exp = [SelectionRecord(nodeid=f"{n}::expectations", trajectory=f"{n}.jsonl", kind="expectations", case=case)
           for n, case in enumerate([CaseOutcome(positive=True, loaded=["a"], triggered_right=True), CaseOutcome(positive=False)])]
    s = summarize(exp)
    assert s.mean_accuracy is None and s.rates is not None and s.rates.over_triggering_rate == 0.0
    assert terminal_lines(s)[1] == ("triggering over 2 labelled case(s): under-triggering 0.0% (0/1), over-triggering 0.0% (0/1), "
                                    "abstention correctness 100.0% (1/1), forbidden loads 0")


def test_accuracy_is_per_trajectory_then_over_trajectories() -> None:
    # Regression (issue 10, item 7): Strands scores each trajectory (the mean of its invoked-skill rows)
    # and then averages over trajectories; a99a1ca averaged all rows, so one trajectory that invoked
    # three skills outweighed another three to one (0.75 instead of 0.5).
    records = [rec(f"a::selection::s{i}[1]", "Yes", 1.0, True, "busy.jsonl") for i in range(3)]
    records.append(rec("b::selection::s[1]", "No", 0.0, False, "quiet.jsonl"))
    s = summarize(records)
    assert s.mean_accuracy == 0.5 and s.row_mean_accuracy == 0.75 and s.judged_trajectories == 2 and s.judged == 4
    assert len(s.rows) == 4  # every row is still shown
