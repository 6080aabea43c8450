"""Trigger items: one per query × agent × run, under ``<skill>::triggers``.

Node ids read ``<skill>::triggers::<query-id>[<agent>-r<k>]``; markers ``skilleval``, ``tier3``,
``triggers`` and ``agent_<name>``. Outcomes: a decision that matches the label passes; one that
does not is ADVISORY (passed, ``skilleval.status=FAILED``) — a single query is not the gate, the
per-skill recall and precision are, and only with ``--block-on-triggers`` (the controller decides);
ERROR (the infrastructure broke, after the retries) fails; an agent that cannot run here skips (fails
under CI=true).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval import state
from pytest_skilleval.collect import _OutsideSkillHooks
from pytest_skilleval.results import encodable, encodable_model
from pytest_skilleval.tier3.agents.base import Agent
from pytest_skilleval.tier3.plugin import in_ci, marker_name, tier3_context
from pytest_skilleval.triggers.plugin import TRIGGERS, rivals_for, script_rules, trigger_context, trigger_set
from pytest_skilleval.triggers.probe import Prober
from pytest_skilleval.triggers.record import TRIGGER_PROPERTY, TriggerRecord
from pytest_skilleval.triggers.sets import TriggerQuery
from pytest_skilleval.triggers.trial import TrialSkipped, TrialUnavailable, TriggerRequest, TriggerRunner


def item_name(query_id: str, agent: str, run: int) -> str:
    return f"{query_id}[{agent}-r{run}]"


class TriggerCollector(_OutsideSkillHooks, pytest.Collector):
    def __init__(self, **kw: Any) -> None:
        super().__init__(**kw)
        for mark in ("skilleval", "tier3", "triggers"):
            self.add_marker(mark)

    @property
    def skill_root(self) -> Path:
        return self.path

    def collect(self) -> Iterable[pytest.Item]:
        ctx = trigger_context(self.config)
        agents = tier3_context(self.config).chosen
        skill = state.run_state(self.config).skill(self.path)
        queries = trigger_set(self.config, skill)  # never raises; problems are the `evals` check's findings
        digest = queries.digest()
        for query in queries:
            for agent in agents:
                for run in range(1, ctx.settings.runs + 1):
                    yield TriggerItem.from_parent(self, name=item_name(query.id, agent.name, run), callobj=_trigger_test,
                                                  query=query, agent=agent, run=run, digest=digest)


@pytest.hookimpl
def pytest_skilleval_skill_collectors(parent: pytest.Collector) -> list[pytest.Collector]:
    """Trigger trials start real agents: collected only when opted in (--skilleval-triggers / --skilleval-trigger-mode=model)."""
    ctx = parent.config.stash.get(TRIGGERS, None)
    if ctx is None or not ctx.settings.enabled:
        return []
    return [TriggerCollector.from_parent(parent, name="triggers")]


class TriggerFailed(Exception):
    def __init__(self, record: TriggerRecord) -> None:
        super().__init__(record.reason or record.status)
        self.record = record


class TriggerItem(_OutsideSkillHooks, pytest.Function):
    def __init__(self, *, query: TriggerQuery, agent: Agent, run: int, digest: str, **kw: Any) -> None:
        super().__init__(**kw)
        self.query, self.agent, self.run, self.digest = query, agent, run, digest
        for mark in ("skilleval", "tier3", "triggers", marker_name(agent.name)):
            self.add_marker(mark)

    @property
    def skill_root(self) -> Path:
        return self.path

    def reportinfo(self) -> tuple[Path, int | None, str]:
        line = self.query.line
        # escaped: a folder name that is not UTF-8 in the location would end an xdist run (collect._EncodableNodeId)
        where = self.path / (self.query.file or "evals/triggers.json")
        return Path(encodable(str(where))), (line - 1) if line else None, f"triggers::{self.name}"

    def request(self) -> TriggerRequest:
        run = state.run_state(self.config)
        skill = run.skill(self.path)
        rivals = rivals_for(self.config, skill)
        return TriggerRequest(skill=skill, skill_key=run.skill_key(self.path), query=self.query, agent=self.agent, rivals=rivals,
                              rules=script_rules(self.config, skill, rivals), run=self.run, name=self.nodeid, nodeid=self.nodeid,
                              set_digest=self.digest)

    def run_trigger(self, runner: TriggerRunner | Prober, root: Path) -> TriggerRecord:
        self.user_properties[:] = [(k, v) for k, v in self.user_properties if not k.startswith("skilleval.")]
        req = self.request()
        try:
            record = runner.run(req, root)
        except (TrialSkipped, TrialUnavailable) as exc:
            if isinstance(exc, TrialUnavailable) and in_ci():
                pytest.fail(f"{exc} (CI=true: missing agent tooling is a failure, not a skip)", pytrace=False)
            pytest.skip(str(exc))
        record = encodable_model(record)  # its paths may hold a surrogate: dumped and sent as they are, they could not be
        self._publish(record)
        if record.status == "ERROR":
            raise TriggerFailed(record)
        return record

    def _publish(self, record: TriggerRecord) -> None:
        correct = record.correct
        self.user_properties += [(TRIGGER_PROPERTY, record.model_dump_json()),
                                 ("skilleval.status", "ERROR" if record.status == "ERROR" else "PASSED" if correct else "FAILED"),
                                 ("skilleval.triggered", str(record.triggered).lower()),
                                 ("skilleval.should_trigger", str(record.should_trigger).lower()),
                                 ("skilleval.requests", str(record.requests)),
                                 ("skilleval.tokens", str(record.tokens_in + record.tokens_out))]
        if record.rival_loaded:
            self.user_properties.append(("skilleval.rival_loaded", record.rival_loaded))

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException]) -> str:  # type: ignore[override]
        if isinstance(excinfo.value, TriggerFailed):
            return format_trigger(excinfo.value.record)
        return encodable(str(super().repr_failure(excinfo)))


def format_trigger(record: TriggerRecord) -> str:
    lines = [f"{record.query_id} [{record.agent}, run {record.run}]: {record.status} — {record.reason or ''}".rstrip(" —"),
             f"  query: {record.query!r} (should trigger: {record.should_trigger})",
             f"  loaded: {', '.join(record.loaded) or 'nothing'}; ended by {record.ended_by}; {record.requests} request(s), "
             f"{record.tokens_in}/{record.tokens_out} tokens; {record.retries} infrastructure retr{'y' if record.retries == 1 else 'ies'}"]
    lines += [f"  not counted: {i}" for i in record.ignored]
    lines += [f"  note: {n}" for n in record.notes[:5]]
    if record.artifacts.get("events"):
        lines.append(f"  events: {record.artifacts['events']}")
    return "\n".join(lines)


def _trigger_test(request: pytest.FixtureRequest, skilleval_trigger_runner: TriggerRunner, tmp_path: Path) -> None:
    item = request.node
    assert isinstance(item, TriggerItem)
    if trigger_context(item.config).settings.mode == "model":
        item.run_trigger(request.getfixturevalue("skilleval_trigger_prober"), tmp_path)
    else:
        item.run_trigger(skilleval_trigger_runner, tmp_path)
