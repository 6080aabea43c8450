"""One skill that breaks a scanner run costs only itself its result, however large the batch (batch.py).

The scanner is a fake only to inject the fault a real one cannot produce on demand: it crashes
whenever a culprit skill is in its run. Everything else is the real BatchedCheck bisection.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest
from conftest import make_settings

from pytest_skilleval import tools
from pytest_skilleval.batch import MAX_BATCH_SKILLS, BatchedCheck
from pytest_skilleval.checks import CheckContext
from pytest_skilleval.results import CheckResult, Status
from pytest_skilleval.skill import Skill

SCANNER = tools.ToolSpec("crashy", "crashy-scanner", "not installable: a fault injector")


class CrashesOnCulprits(BatchedCheck):
    name = "crashy"
    tier = 1
    tools = (SCANNER,)

    def __init__(self, culprits: set[str]) -> None:
        self.culprits, self.runs = culprits, 0

    def scan(self, skills: Sequence[Skill], ctx: CheckContext) -> dict[Path, CheckResult]:
        self.runs += 1
        if any(s.root.name in self.culprits for s in skills):
            raise tools.ToolError(SCANNER, "crashed", "killed by signal 9")
        return {s.root: CheckResult(check=self.name, tier=self.tier) for s in skills}


@pytest.mark.parametrize("size", [MAX_BATCH_SKILLS, 1_000, 5_000])
def test_only_the_culprits_lose_their_result_in_a_batch_of_any_size(tmp_path: Path, size: int) -> None:
    skills = [Skill(root=tmp_path / f"s{n:05d}", key=f"s{n:05d}") for n in range(size)]
    culprits = {skills[size // 3].root.name, skills[size - 2].root.name}
    check = CrashesOnCulprits(culprits)
    results = check._scan_now(skills, CheckContext(settings=make_settings()))
    failed = sorted(root.name for root, r in results.items() if r.status is not Status.PASSED)
    assert failed == sorted(culprits), (len(failed), check.runs)
    assert all(results[s.root].status is Status.INCOMPLETE for s in skills if s.root.name in culprits)
