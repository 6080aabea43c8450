"""``evals``: the skill's eval case files load, in any accepted shape, and every case is well-formed.

This is the static half of Tier 3: a malformed eval file must fail here, as one item
(``<skill>::tier1::evals``) that names the file, line, case and field, and never as a collection
error that would stop a whole catalog run. Cases with a HIGH problem are dropped from Tier 3, so
the same finding that fails this item explains why a case has no trials.

A skill without any eval file PASSES with ``cases: 0`` and an INFO finding: nothing in it is
wrong, but Tier 3 cannot evaluate it, and the metric ``tier3`` says so in every report. (SKIPPED
would hide that in the "skipped" count of a Tier 1 run, where it reads as "not applicable".)

Metrics: case counts (positive / negative / unlabelled / invalid), the shape of each file, the
agents that have scripted turns, and the dataset digest that Tier 3 cards cite.
"""

from __future__ import annotations

import pytest

from pytest_skilleval.checks import Check, CheckContext
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import Skill


class EvalsCheck(Check):
    name = "evals"
    description = "eval case files (evals/evals.json …) load in an accepted shape and every case is well-formed"

    def run(self, skill: Skill, ctx: CheckContext) -> CheckResult:
        # the case and trigger loaders (their pydantic models) are imported by the first skill that is checked
        from pytest_skilleval.tier3.cases import load_cases
        from pytest_skilleval.triggers.sets import load_trigger_set

        case_set = load_cases(skill)
        triggers = load_trigger_set(skill)  # evals/triggers.*: malformed queries fail here too, by file and line
        findings = case_set.findings() + triggers.findings()
        if not case_set.files and not findings:
            findings.append(Finding(rule="evals.none", severity=Severity.INFO, file="evals/evals.json",
                                    message="no eval cases: Tier 3 cannot evaluate this skill",
                                    suggestion="add evals/evals.json with a few positive cases and one negative control"))
        metrics = case_set.metrics()
        if triggers.files:
            metrics["triggers"] = {**triggers.counts(), "files": list(triggers.files), "digest": triggers.digest()}
        return self.result(findings, metrics=metrics)


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    return [EvalsCheck()]
