"""The outcome table of the README, row by row, with its boundaries: gate.py is the one place a result
becomes a pytest outcome, so every report agrees only if this table holds."""

from __future__ import annotations

import pytest

from pytest_skilleval.gate import Policy, decide, final_status
from pytest_skilleval.results import CheckResult, Finding, Severity, Status


def finding(severity: Severity, rule: str = "demo.rule") -> Finding:
    return Finding(rule=rule, severity=severity, message="m", file="SKILL.md", line=1)


def result(status: Status = Status.PASSED, *, findings: tuple[Finding, ...] = (), score: float | None = None,
           min_score: float | None = None, reason: str | None = None) -> CheckResult:
    return CheckResult(check="demo", status=status, findings=list(findings), score=score, min_score=min_score, reason=reason)


DEFAULT = Policy()


def test_clean_result_passes_with_no_findings() -> None:
    verdict = decide(result(), blocking=True, policy=DEFAULT)
    assert (verdict.status, verdict.outcome, verdict.reason) == (Status.PASSED, "passed", "no findings")
    assert not verdict.advisory_failure


@pytest.mark.parametrize("severity", [Severity.HIGH, Severity.CRITICAL])
def test_finding_at_or_above_fail_on_fails(severity: Severity) -> None:
    verdict = decide(result(findings=(finding(severity),)), blocking=True, policy=DEFAULT)
    assert (verdict.status, verdict.outcome) == (Status.FAILED, "failed")
    assert f"1 finding(s) at or above HIGH (worst {severity.value})" == verdict.reason


@pytest.mark.parametrize("severity", [Severity.MEDIUM, Severity.LOW, Severity.INFO])
def test_finding_below_fail_on_passes_and_is_counted(severity: Severity) -> None:
    verdict = decide(result(findings=(finding(severity), finding(Severity.INFO, "other"))), blocking=True, policy=DEFAULT)
    assert (verdict.status, verdict.outcome, verdict.reason) == (Status.PASSED, "passed", "2 finding(s) below HIGH")


def test_fail_on_threshold_is_inclusive_at_each_level() -> None:
    for level in Severity:
        policy = Policy(fail_on=level)
        at = final_status(result(findings=(finding(level),)), policy)
        assert at[0] is Status.FAILED, level
        below = [s for s in Severity if s.rank == level.rank - 1]
        if below:
            assert final_status(result(findings=(finding(below[0]),)), policy)[0] is Status.PASSED, level


def test_worst_severity_is_named_among_several() -> None:
    status, reason = final_status(result(findings=(finding(Severity.HIGH), finding(Severity.CRITICAL), finding(Severity.HIGH))), DEFAULT)
    assert status is Status.FAILED
    assert reason == "3 finding(s) at or above HIGH (worst CRITICAL)"


def test_score_exactly_at_the_pass_mark_passes() -> None:
    assert final_status(result(score=70.0, min_score=70.0), DEFAULT)[0] is Status.PASSED


def test_score_just_under_the_pass_mark_fails_with_both_numbers() -> None:
    status, reason = final_status(result(score=69.99, min_score=70.0), DEFAULT)
    assert status is Status.FAILED
    assert reason == "score 69.99 is below the pass mark 70"


def test_score_without_pass_mark_or_pass_mark_without_score_does_not_fail() -> None:
    assert final_status(result(score=0.0), DEFAULT)[0] is Status.PASSED
    assert final_status(result(min_score=70.0), DEFAULT)[0] is Status.PASSED


def test_low_score_and_gating_finding_give_both_reasons() -> None:
    status, reason = final_status(result(score=10.0, min_score=70.0, findings=(finding(Severity.HIGH),)), DEFAULT)
    assert status is Status.FAILED
    assert reason == "score 10 is below the pass mark 70; 1 finding(s) at or above HIGH (worst HIGH)"


@pytest.mark.parametrize("blocking", [True, False])
def test_error_fails_blocking_or_not(blocking: bool) -> None:
    verdict = decide(result(Status.ERROR, reason="provider failed after 3 attempts"), blocking=blocking, policy=DEFAULT)
    assert (verdict.status, verdict.outcome, verdict.reason) == (Status.ERROR, "failed", "provider failed after 3 attempts")
    assert not verdict.advisory_failure


def test_error_is_not_excused_by_allow_incomplete() -> None:
    verdict = decide(result(Status.ERROR, reason="boom"), blocking=True, policy=Policy(allow_incomplete=True))
    assert verdict.outcome == "failed"


def test_incomplete_fails_a_blocking_check() -> None:
    verdict = decide(result(Status.INCOMPLETE, reason="bandit: missing"), blocking=True, policy=DEFAULT)
    assert (verdict.status, verdict.outcome, verdict.reason) == (Status.INCOMPLETE, "failed", "bandit: missing")


def test_allow_incomplete_turns_incomplete_into_a_named_skip() -> None:
    verdict = decide(result(Status.INCOMPLETE, reason="bandit: missing"), blocking=True, policy=Policy(allow_incomplete=True))
    assert (verdict.status, verdict.outcome) == (Status.INCOMPLETE, "skipped")
    assert verdict.reason == "INCOMPLETE (allowed by --skilleval-allow-incomplete): bandit: missing"


def test_status_without_reason_falls_back_to_its_name() -> None:
    assert final_status(result(Status.INCOMPLETE), DEFAULT) == (Status.INCOMPLETE, "incomplete")


def test_skipped_is_skipped_whatever_its_findings() -> None:
    verdict = decide(result(Status.SKIPPED, reason="no scripts", findings=(finding(Severity.CRITICAL),)), blocking=True, policy=DEFAULT)
    assert (verdict.status, verdict.outcome, verdict.reason) == (Status.SKIPPED, "skipped", "no scripts")


def test_error_keeps_its_status_even_with_findings() -> None:
    # A check that broke half-way must not be turned into FAILED (or PASSED) by the findings it had so far.
    verdict = decide(result(Status.ERROR, reason="crashed", findings=(finding(Severity.INFO),)), blocking=True, policy=DEFAULT)
    assert verdict.status is Status.ERROR


def test_advisory_failure_passes_the_item_but_keeps_the_failed_status() -> None:
    verdict = decide(result(findings=(finding(Severity.HIGH),)), blocking=False, policy=DEFAULT)
    assert (verdict.status, verdict.outcome, verdict.blocking) == (Status.FAILED, "passed", False)
    assert verdict.advisory_failure


def test_advisory_pass_is_not_an_advisory_failure() -> None:
    verdict = decide(result(), blocking=False, policy=DEFAULT)
    assert (verdict.outcome, verdict.advisory_failure) == ("passed", False)


def test_blocking_failure_is_not_advisory() -> None:
    verdict = decide(result(findings=(finding(Severity.HIGH),)), blocking=True, policy=DEFAULT)
    assert verdict.outcome == "failed"
    assert not verdict.advisory_failure


def test_score_above_the_pass_mark_passes() -> None:
    assert final_status(result(score=90.0, min_score=70.0), DEFAULT) == (Status.PASSED, "no findings")


def test_an_advisory_incomplete_is_not_passed_off_as_advisory_failure() -> None:
    # INCOMPLETE is missing evidence, not a finding: never an advisory *failure*. An advisory check's
    # INCOMPLETE still never fails the run (issue 11): reported INCOMPLETE, the item passes.
    verdict = decide(result(Status.INCOMPLETE, reason="ruff: crashed"), blocking=False, policy=DEFAULT)
    assert verdict.status is Status.INCOMPLETE and not verdict.advisory_failure and verdict.outcome == "passed"


def test_policy_and_verdict_are_frozen() -> None:
    import dataclasses

    verdict = decide(result(), blocking=True, policy=DEFAULT)
    with pytest.raises(dataclasses.FrozenInstanceError):
        verdict.outcome = "failed"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT.fail_on = Severity.INFO  # type: ignore[misc]
