"""Tier 3 items: one per eval case × agent × arm × attempt, under ``<skill>::tier3``.

Node ids read ``<skill>::tier3::<case-id>[<agent>-<arm>-a<n>]``. Items are ``pytest.Function``
objects with a call object, so the gateway, the sandbox and the judge are ordinary fixtures a
``conftest.py`` can override. Markers: ``skilleval``, ``tier3`` and ``agent_<name>``.

An item's outcome is its trial's: PASSED passes; FAILED (the agent did not meet the case) fails,
so ``--reruns`` retries it and JUnit shows every attempt; ERROR (no evidence: an outage, a crashed
sandbox, the harness broke) fails; NOT_SCORED (what would decide it was not checked) is skipped with its reason;
a trial that cannot run here is skipped — or failed under CI=true. The rules: ``outcome.py``. Whether Tier 3 decides the
run's exit status is the controller's business (advisory unless ``--block-on-agent-eval``).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval import state
from pytest_skilleval.collect import _OutsideSkillHooks
from pytest_skilleval.results import encodable, encodable_model
from pytest_skilleval.tier3 import outcome
from pytest_skilleval.tier3.agents.base import Agent
from pytest_skilleval.tier3.case_formats.model import EvalCase
from pytest_skilleval.tier3.cases import load_cases
from pytest_skilleval.tier3.plugin import TIER3, in_ci, marker_name, tier3_context
from pytest_skilleval.tier3.record import TRIAL_PROPERTY, TrialRecord
from pytest_skilleval.tier3.trial import TrialRequest, TrialRunner, TrialSkipped, TrialUnavailable

MAX_ANSWER_SHOWN = 400


def item_name(case_id: str, agent: str, arm: str, attempt: int) -> str:
    return f"{case_id}[{agent}-{arm}-a{attempt}]"


class Tier3Collector(_OutsideSkillHooks, pytest.Collector):
    """``<skill>::tier3``: the skill's eval cases (loaded through the safe reader) become trial items."""

    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        self.add_marker("skilleval")
        self.add_marker("tier3")

    @property
    def skill_root(self) -> Path:
        return self.path

    def collect(self) -> Iterable[pytest.Item]:
        ctx = tier3_context(self.config)
        skill = state.run_state(self.config).skill(self.path)
        cases = load_cases(skill)  # never raises; bad cases are dropped here and reported by the `evals` check
        digest = cases.digest()
        for case in cases:
            for agent in ctx.chosen:
                for arm in ctx.settings.arms:
                    for attempt in range(1, ctx.settings.attempts + 1):
                        yield TrialItem.from_parent(self, name=item_name(case.id, agent.name, arm, attempt), callobj=_trial_test,
                                                    case=case, agent=agent, arm=arm, attempt=attempt,
                                                    digest=digest, case_digest=cases.case_digest(case))


@pytest.hookimpl
def pytest_skilleval_skill_collectors(parent: pytest.Collector) -> list[pytest.Collector]:
    """Tier 3 starts real agents: its collector exists only when opted in (--skilleval-agents / --skilleval-tier3)."""
    tier3 = parent.config.stash.get(TIER3, None)
    if tier3 is None or not tier3.settings.enabled:
        return []
    return [Tier3Collector.from_parent(parent, name="tier3")]


class TrialFailed(Exception):
    """Raised by a trial item whose trial FAILED or ERRORed; rendered from the record, not as a traceback."""

    def __init__(self, record: TrialRecord) -> None:
        super().__init__(record.reason or record.status)
        self.record = record


class TrialItem(_OutsideSkillHooks, pytest.Function):
    def __init__(self, *, case: EvalCase, agent: Agent, arm: str, attempt: int, digest: str | None = None, case_digest: str | None = None,
                 **kw: Any) -> None:
        super().__init__(**kw)
        self.case, self.agent, self.arm, self.attempt, self.digest = case, agent, arm, attempt, digest
        self.case_digest = case_digest
        for mark in ("skilleval", "tier3", marker_name(agent.name)):
            self.add_marker(mark)

    @property
    def skill_root(self) -> Path:
        return self.path

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = self.case.source.line
        # escaped: a folder name that is not UTF-8 in the location would end an xdist run (collect._EncodableNodeId)
        return Path(encodable(str(self.path / self.case.source.file))), (line - 1) if line else None, f"tier3::{self.name}"

    def trial_request(self) -> TrialRequest:
        run = state.run_state(self.config)
        return TrialRequest(skill=run.skill(self.path), skill_key=run.skill_key(self.path), case=self.case, agent=self.agent,
                            arm=self.arm, name=self.nodeid, attempt=self.attempt, execution=int(getattr(self, "execution_count", 1)),
                            dataset_digest=self.digest, nodeid=self.nodeid, case_digest=self.case_digest)

    def run_trial(self, runner: TrialRunner, root: Path) -> TrialRecord:
        # pytest-rerunfailures runs the same item again and keeps user_properties: publish only this execution.
        self.user_properties[:] = [(k, v) for k, v in self.user_properties if not k.startswith("skilleval.")]
        req = self.trial_request()
        try:
            record = runner.run(req, root)
        except (TrialSkipped, TrialUnavailable) as exc:
            self._publish(encodable_model(self._not_run(req, str(exc))))
            if isinstance(exc, TrialUnavailable) and in_ci():
                pytest.fail(f"{exc} (CI=true: missing agent tooling is a failure, not a skip)", pytrace=False)
            pytest.skip(str(exc))
        record = encodable_model(record)  # its paths may hold a surrogate: dumped and sent as they are, they could not be
        self._publish(record)
        if record.status in ("FAILED", "ERROR"):
            raise TrialFailed(record)
        if record.status == "NOT_SCORED":  # it ran, but nothing decided it: no pass to report (outcome.py)
            pytest.skip(f"NOT SCORED: {record.reason}")
        return record

    def _not_run(self, req: TrialRequest, reason: str) -> TrialRecord:
        return TrialRecord(nodeid=self.nodeid, skill=req.skill_key, skill_name=req.skill.name, skill_path=str(req.skill.root),
                           case_id=self.case.id, label=self.case.label.value, agent=self.agent.name, arm=self.arm,  # type: ignore[arg-type]
                           attempt=self.attempt, execution=req.execution, dataset_digest=self.digest, status="SKIPPED", reason=reason,
                           mode=tier3_context(self.config).settings.gateway_mode)

    def _publish(self, record: TrialRecord) -> None:
        """The record rides to the controller (and into JUnit) on user_properties, like check results."""
        self.user_properties.append((TRIAL_PROPERTY, record.model_dump_json()))
        self.user_properties.append(("skilleval.status", record.status))
        if record.score is not None:
            self.user_properties.append(("skilleval.score", f"{record.score:g}"))
        if record.status != "SKIPPED":
            self.user_properties += [("skilleval.tokens", str(record.tokens_in + record.tokens_out)),
                                     ("skilleval.cli_seconds", f"{record.cli_seconds or 0:g}")]
            if record.cost_usd is not None:  # nothing spent (scripted, replayed): no dollar figure at all
                self.user_properties.append(("skilleval.cost_usd", f"{record.cost_usd:g}"))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, TrialFailed):
            return format_trial(excinfo.value.record)
        return encodable(str(super().repr_failure(excinfo)))


def format_trial(record: TrialRecord) -> str:
    head = f"{record.case_id} [{record.agent}, {record.arm}, attempt {record.attempt}"
    head += f", run {record.execution}]" if record.execution > 1 else "]"
    cause = f" ({record.error_cause})" if record.error_cause else ""
    lines = [f"{head}: {outcome.label(record.status)}{cause} — {record.reason or 'see the assertions below'}"]
    for checked in record.grade.assertions if record.grade else []:
        mark = {True: "✓", False: "✗", None: "?"}[checked.passed]
        where = f"  ({checked.source})" if checked.source else ""
        detail = f" — {checked.detail}" if checked.detail else ""
        lines.append(f"  {mark} {checked.kind}: {checked.description}{detail}{where}")
    answer = (record.final_answer or "").strip().replace("\n", " ")
    lines.append(f"  answer: {answer[:MAX_ANSWER_SHOWN]!r}" + (" …" if len(answer) > MAX_ANSWER_SHOWN else ""))
    listed = {True: "listed", False: "not listed", None: "listing unknown"}[record.skill_listed]
    lines.append(f"  skill {'installed' if record.skill_installed else 'absent'}, {listed}; invoked: {', '.join(record.invoked_skills) or 'none'}; "
                 f"{record.requests} request(s), {record.tokens_in}/{record.tokens_out} tokens, agent {record.cli_seconds or 0:.1f} s")
    lines += [f"  note: {n}" for n in record.notes]
    if record.artifacts.get("events"):
        lines.append(f"  events: {record.artifacts['events']}")
    if record.status == "FAILED":
        lines.append("  (a trial that fails its case does not fail the run by itself: Tier 3 is advisory, or with "
                     "--block-on-agent-eval its verdict decides)")
    return "\n".join(lines)


def _trial_test(request: pytest.FixtureRequest, skilleval_trial_runner: TrialRunner, tmp_path: Path) -> None:
    item = request.node
    assert isinstance(item, TrialItem)
    item.run_trial(skilleval_trial_runner, tmp_path)
