"""Tier 3 fixtures (registered by ``pytest_skilleval.plugin``); override any in ``conftest.py``.

- ``skilleval_sandbox`` (session): the chosen sandbox backend (``--skilleval-sandbox``).
- ``skilleval_trial_judge`` (session): the judge for free-text assertions and dimensions — the
  provider layer's ``skilleval_chat``, except in scripted mode, where there is no model answer
  worth judging (and no key should be spent): None.
- ``skilleval_trial_runner`` (session): a :class:`TrialRunner` over the gateway, sandbox and judge.
- ``skill_trial`` (function): run eval cases from a hand-written test::

      def test_csv_summary_helps(skill_trial):
          result = skill_trial.run("example_skills/csv-summary", "csv-summary-001", agent="codex")
          assert result.with_skill_passed and result.lift > 0
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_skilleval import state
from pytest_skilleval.tier3.options import ARMS
from pytest_skilleval.tier3.plugin import in_ci, tier3_context

# Registered in every run: the trial machinery is imported by the fixtures that use it, so a run
# without Tier 3 never loads it.
if TYPE_CHECKING:
    from pytest_skilleval.gateway import Gateway
    from pytest_skilleval.providers.base import ChatProvider
    from pytest_skilleval.skill import Skill
    from pytest_skilleval.tier3.case_formats.model import EvalCase
    from pytest_skilleval.tier3.cases import CaseSet
    from pytest_skilleval.tier3.record import TrialRecord
    from pytest_skilleval.tier3.sandboxes import Sandbox
    from pytest_skilleval.tier3.trial import TrialRunner


@pytest.fixture(scope="session")
def skilleval_sandbox(pytestconfig: pytest.Config) -> Iterator[Sandbox]:
    sandbox = tier3_context(pytestconfig).sandbox
    yield sandbox
    sandbox.close()


@pytest.fixture(scope="session")
def skilleval_trial_judge(request: pytest.FixtureRequest) -> ChatProvider | None:
    if tier3_context(request.config).settings.scripted:
        return None
    try:
        return request.getfixturevalue("skilleval_chat")  # type: ignore[no-any-return]
    except pytest.FixtureLookupError:
        return None


@pytest.fixture(scope="session")
def skilleval_trial_runner(pytestconfig: pytest.Config, skilleval_gateway: Gateway, skilleval_sandbox: Sandbox,
                           skilleval_trial_judge: ChatProvider | None) -> TrialRunner:
    from pytest_skilleval.selection.plugin import parser_registry
    from pytest_skilleval.tier3.staging import hidden_dirs
    from pytest_skilleval.tier3.trial import TrialRunner

    ctx = tier3_context(pytestconfig)
    return TrialRunner(skilleval_gateway, skilleval_sandbox, ctx.settings, skilleval_trial_judge,
                       parser_registry(pytestconfig), hidden=tuple(hidden_dirs(ctx.agents.all())))


@dataclass
class TrialComparison:
    """Every trial of one case by one agent, both arms. Scores are the grade's overall score, or
    1/0 for a pass/fail when nothing was scored (scripted runs without a judge)."""

    case_id: str
    agent: str
    records: list[TrialRecord] = field(default_factory=list)

    def arm(self, arm: str) -> list[TrialRecord]:
        return [r for r in self.records if r.arm == arm]

    @property
    def with_skill(self) -> list[TrialRecord]:
        return self.arm("with_skill")

    @property
    def without_skill(self) -> list[TrialRecord]:
        return self.arm("without_skill")

    @property
    def with_skill_passed(self) -> bool:
        return bool(self.with_skill) and all(r.status == "PASSED" for r in self.with_skill)

    def mean_score(self, arm: str) -> float | None:
        scores = [s for s in (_score(r) for r in self.arm(arm)) if s is not None]
        return math.fsum(scores) / len(scores) if scores else None

    @property
    def lift(self) -> float:
        """with − without; NaN when an arm has no scored trial (so ``lift > 0`` is then False)."""
        a, b = self.mean_score("with_skill"), self.mean_score("without_skill")
        return a - b if a is not None and b is not None else math.nan

    def summary(self) -> str:
        parts = [f"{arm}: " + ", ".join(r.status for r in self.arm(arm)) for arm in ARMS if self.arm(arm)]
        return f"{self.case_id} [{self.agent}] " + "; ".join(parts) + f"; lift {self.lift:+.2f}"


def _score(record: TrialRecord) -> float | None:
    if record.score is not None:
        return record.score
    return {True: 1.0, False: 0.0}.get(record.passed)  # type: ignore[arg-type]


class SkillTrial:
    """What the ``skill_trial`` fixture returns."""

    def __init__(self, runner: TrialRunner, config: pytest.Config, tmp: pytest.TempPathFactory, nodeid: str) -> None:
        self.runner, self.config, self.tmp, self.nodeid = runner, config, tmp, nodeid

    def skill(self, path: str | Path) -> Skill:
        root = Path(path)
        if not root.is_absolute():
            root = next((b / root for b in (self.config.invocation_params.dir, self.config.rootpath) if (b / root).is_dir()), root)
        return state.run_state(self.config).skill(root.resolve())

    def cases(self, skill: str | Path) -> CaseSet:
        from pytest_skilleval.tier3.cases import load_cases

        return load_cases(self.skill(skill))

    def run(self, skill: str | Path, case: str | EvalCase, *, agent: str | None = None, attempts: int = 1,
            arms: Sequence[str] = ARMS) -> TrialComparison:
        """Run ``case`` (an id or an :class:`EvalCase`) of ``skill`` in each arm, ``attempts`` times.
        A trial that cannot run here skips the test (fails it under CI=true)."""
        from pytest_skilleval.tier3.cases import load_cases
        from pytest_skilleval.tier3.trial import TrialRequest, TrialSkipped, TrialUnavailable

        loaded = self.skill(skill)
        cases = load_cases(loaded)
        chosen = cases.get(case) if isinstance(case, str) else case
        if chosen is None:
            raise LookupError(f"{loaded.root} has no eval case {case!r} (cases: {', '.join(c.id for c in cases) or 'none'})")
        ctx = tier3_context(self.config)
        adapter = ctx.agents.get(agent) if agent else ctx.chosen[0]
        out = TrialComparison(chosen.id, adapter.name)
        run = state.run_state(self.config)
        for arm in arms:
            for attempt in range(1, attempts + 1):
                name = f"{self.nodeid}::{chosen.id}[{adapter.name}-{arm}-a{attempt}]"
                req = TrialRequest(skill=loaded, skill_key=run.skill_key(loaded.root), case=chosen, agent=adapter, arm=arm, name=name,
                                   attempt=attempt, dataset_digest=cases.digest(), nodeid=name, case_digest=cases.case_digest(chosen))
                try:
                    out.records.append(self.runner.run(req, self.tmp.mktemp("skill-trial")))
                except TrialUnavailable as exc:
                    if in_ci():
                        pytest.fail(f"{exc} (CI=true: missing agent tooling is a failure)", pytrace=False)
                    pytest.skip(str(exc))
                except TrialSkipped as exc:
                    pytest.skip(str(exc))
        return out


@pytest.fixture
def skill_trial(skilleval_trial_runner: TrialRunner, pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory,
                request: pytest.FixtureRequest) -> SkillTrial:
    return SkillTrial(skilleval_trial_runner, pytestconfig, tmp_path_factory, request.node.nodeid)
