"""Deterministic selection metrics: expected / forbidden / acceptable skills, and triggering rates."""

from __future__ import annotations

import pytest
from selection_support import FIXTURES

from pytest_skilleval.selection.metrics import (
    CaseOutcome,
    SelectionExpectation,
    case_outcome,
    check_expectations,
    selection_rates,
)
from pytest_skilleval.trajectory import InvocationMethod, InvocationStatus, SkillInvocation, Trajectory, load_trajectory


def traj(*loads: tuple[str, InvocationStatus] | tuple[str, InvocationStatus, InvocationMethod]) -> Trajectory:
    invs = [SkillInvocation(name=x[0], status=x[1], how=x[2] if len(x) > 2 else InvocationMethod.TOOL, message="said no") for x in loads]
    return Trajectory(harness="t", invocations=invs)


def outcomes(t: Trajectory, exp: SelectionExpectation) -> dict[str, tuple[bool, str]]:
    return {o.check: (o.passed, o.message) for o in check_expectations(t, exp)}


def test_expected_skill_loaded_refused_attempted_or_absent() -> None:
    exp = SelectionExpectation(expect_skills=["a", "b", "c", "D_x"])
    got = outcomes(traj(("a", InvocationStatus.LOADED), ("b", InvocationStatus.REFUSED), ("c", InvocationStatus.ATTEMPTED)), exp)
    assert got == {
        "expected:a": (True, "a was loaded (tool)"),
        "expected:b": (False, "b was requested but the harness refused it: said no"),
        "expected:c": (False, "c was requested, but the trajectory ends before any outcome"),
        "expected:D_x": (False, "D_x was not invoked"),
    }


def test_forbidden_skill_even_a_refused_request_violates() -> None:
    got = outcomes(traj(("x", InvocationStatus.REFUSED)), SelectionExpectation(forbid_skills=["x", "y"]))
    assert got == {"forbidden:x": (False, "x was invoked (the harness refused it)"), "forbidden:y": (True, "y was not invoked")}


def test_acceptable_skills_bound_what_may_load() -> None:
    exp = SelectionExpectation(expect_skills=["a"], acceptable_skills=["b"])
    assert outcomes(traj(("a", InvocationStatus.LOADED), ("b", InvocationStatus.LOADED)), exp)["only-acceptable"][0]
    bad = outcomes(traj(("a", InvocationStatus.LOADED), ("z", InvocationStatus.LOADED), ("q", InvocationStatus.REFUSED)), exp)
    assert bad["only-acceptable"] == (False, "loaded skills outside the expected and acceptable ones: z")


def test_negative_case_abstention_ignores_user_mentions() -> None:
    exp = SelectionExpectation(should_trigger=False)
    assert outcomes(traj(("u", InvocationStatus.LOADED, InvocationMethod.MENTION)), exp)["abstain"][0]
    assert outcomes(traj(("z", InvocationStatus.LOADED)), exp)["abstain"] == (False, "a negative case, but the agent loaded: z")


def test_on_real_fixtures() -> None:
    t = load_trajectory(FIXTURES / "claude-code" / "transcript_refused_retry.jsonl")
    got = outcomes(t, SelectionExpectation(expect_skills=["pdf-processing"], forbid_skills=["docx"]))
    assert got["expected:pdf-processing"][0] and not got["forbidden:docx"][0]


def test_rates_over_a_case_set() -> None:
    cases = [
        case_outcome(traj(("a", InvocationStatus.LOADED)), SelectionExpectation(expect_skills=["a"])),  # right
        case_outcome(traj(), SelectionExpectation(expect_skills=["a"])),  # under-triggered, abstained wrongly
        case_outcome(traj(("b", InvocationStatus.LOADED)), SelectionExpectation(expect_skills=["a"])),  # wrong skill
        case_outcome(traj(("c", InvocationStatus.LOADED)), SelectionExpectation(expect_skills=["a"], acceptable_skills=["c"])),  # acceptable
        case_outcome(traj(), SelectionExpectation(should_trigger=False)),  # correct abstention
        case_outcome(traj(("a", InvocationStatus.LOADED)), SelectionExpectation(should_trigger=False, forbid_skills=["a"])),  # over
        case_outcome(traj(("a", InvocationStatus.REFUSED)), SelectionExpectation(should_trigger=False)),  # refused: not a load
        case_outcome(traj(("a", InvocationStatus.LOADED)), SelectionExpectation()),  # says nothing: not in the rates
    ]
    r = selection_rates(cases)
    assert (r.cases, r.positives, r.negatives) == (8, 4, 3)
    assert (r.under_triggered, r.wrong_skill, r.over_triggered) == (2, 1, 1)
    assert (r.abstained, r.correct_abstentions, r.forbidden_violations) == (3, 2, 1)
    assert r.under_triggering_rate == 0.5 and r.over_triggering_rate == pytest.approx(1 / 3)
    assert r.abstention_correctness == pytest.approx(2 / 3)


def test_rates_with_nothing_to_rate_are_none() -> None:
    r = selection_rates([CaseOutcome(positive=None)])
    assert (r.under_triggering_rate, r.over_triggering_rate, r.abstention_correctness) == (None, None, None)
    assert SelectionExpectation().is_empty() and SelectionExpectation(expect_skills=["a"]).positive is True
