"""The one place that turns a check result plus the policy into a pytest outcome.

Rules, in order:

1. ERROR (the check broke, a provider failed after retries) fails the item.
2. INCOMPLETE (required evidence missing) fails the item; ``--skilleval-allow-incomplete`` turns
   it into a skip for people who knowingly run without a tool. Missing evidence is never a pass.
3. SKIPPED (the check does not apply) skips the item.
4. A completed result FAILS when its score is under the pass mark, or when a finding is at or
   above ``--skilleval-fail-on`` (default HIGH). Otherwise it PASSES.
5. An advisory (non-blocking) check that FAILED or is INCOMPLETE is reported so everywhere, but
   its item passes with the word ADVISORY, so the run is not failed by it and nothing is hidden.
"""

from __future__ import annotations

from dataclasses import dataclass

from pytest_skilleval.results import CheckResult, Severity, Status


@dataclass(frozen=True)
class Policy:
    fail_on: Severity = Severity.HIGH
    allow_incomplete: bool = False


@dataclass(frozen=True)
class Verdict:
    status: Status  # final status recorded in every report
    outcome: str  # "passed" | "failed" | "skipped"
    blocking: bool
    reason: str

    @property
    def advisory_failure(self) -> bool:
        """An advisory check's findings failed it (its INCOMPLETE passes too, but is missing evidence)."""
        return self.status is Status.FAILED and not self.blocking


def final_status(result: CheckResult, policy: Policy) -> tuple[Status, str]:
    if result.status in (Status.ERROR, Status.INCOMPLETE, Status.SKIPPED):
        return result.status, result.reason or result.status.value.lower()
    reasons = []
    if result.score is not None and result.min_score is not None and result.score < result.min_score:
        reasons.append(f"score {result.score:g} is below the pass mark {result.min_score:g}")
    gating = [f for f in result.findings if f.severity.at_least(policy.fail_on)]
    if gating:
        worst = max(f.severity.rank for f in gating)
        sev = next(s for s in Severity if s.rank == worst)
        reasons.append(f"{len(gating)} finding(s) at or above {policy.fail_on.value} (worst {sev.value})")
    if reasons:
        return Status.FAILED, "; ".join(reasons)
    n = len(result.findings)
    return Status.PASSED, f"{n} finding(s) below {policy.fail_on.value}" if n else "no findings"


def decide(result: CheckResult, *, blocking: bool, policy: Policy) -> Verdict:
    status, reason = final_status(result, policy)
    if status is Status.PASSED:
        outcome = "passed"
    elif status is Status.SKIPPED:
        outcome = "skipped"
    elif status in (Status.FAILED, Status.INCOMPLETE) and not blocking:
        outcome = "passed"
    elif status is Status.INCOMPLETE and policy.allow_incomplete:
        outcome = "skipped"
        reason = f"INCOMPLETE (allowed by --skilleval-allow-incomplete): {reason}"
    else:
        outcome = "failed"
    return Verdict(status=status, outcome=outcome, blocking=blocking, reason=reason)
