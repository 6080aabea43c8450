"""Grading of one agent trial: typed assertions, deterministic metrics, then the judge.

    from pytest_skilleval.tier3.grading import grade, TrialEvidence
    result = grade(evidence, case, judge)        # Grade: status, assertions, dimensions, score

docs/grading.md has the rules.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_skilleval import lazyexports

if TYPE_CHECKING:
    from pytest_skilleval.tier3.grading.grade import PASS_THRESHOLD, grade, infrastructure_error
    from pytest_skilleval.tier3.grading.model import DIMENSIONS, AssertionOutcome, CommandOutcome, Grade, RunInSandbox, TrialEvidence

#: Each public name and the module that defines it, imported on first use: the reports read the
#: record types of ``grading.model`` in every run, the grader (judge, metrics, case formats) only
#: runs with Tier 3.
_EXPORTS = {"PASS_THRESHOLD": "grade", "grade": "grade", "infrastructure_error": "grade",
            **dict.fromkeys(("DIMENSIONS", "AssertionOutcome", "CommandOutcome", "Grade", "RunInSandbox", "TrialEvidence"), "model")}

__all__ = ["DIMENSIONS", "PASS_THRESHOLD", "AssertionOutcome", "CommandOutcome", "Grade", "RunInSandbox", "TrialEvidence", "grade",
           "infrastructure_error"]


__getattr__ = lazyexports.exports(__name__, _EXPORTS)
