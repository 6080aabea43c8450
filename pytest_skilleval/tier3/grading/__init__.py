"""Grading of one agent trial: typed assertions, deterministic metrics, then the judge.

    from pytest_skilleval.tier3.grading import grade, TrialEvidence
    result = grade(evidence, case, judge)        # Grade: status, assertions, dimensions, score

docs/grading.md has the rules.
"""

from pytest_skilleval.tier3.grading.grade import PASS_THRESHOLD, grade, infrastructure_error
from pytest_skilleval.tier3.grading.model import DIMENSIONS, AssertionOutcome, CommandOutcome, Grade, RunInSandbox, TrialEvidence

__all__ = ["DIMENSIONS", "PASS_THRESHOLD", "AssertionOutcome", "CommandOutcome", "Grade", "RunInSandbox", "TrialEvidence", "grade",
           "infrastructure_error"]
