"""Tier 3 in pytest: settings, the agent and sandbox registries, markers and the report header.

Registered by ``pytest_skilleval.plugin`` at configure time, after the built-in agents and
sandboxes (``tier3/agents``, ``tier3/sandboxes``), so every ``pytest_skilleval_agents`` /
``pytest_skilleval_sandboxes`` implementation — built-in, installed plugin or ``conftest.py`` —
has answered by the time this module builds the registries.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pytest

from pytest_skilleval.published import TRIAL_PROPERTY
from pytest_skilleval.tier3.agents import Agent, AgentRegistry
from pytest_skilleval.tier3.options import AA_ARM, Tier3Settings
from pytest_skilleval.tier3.sandboxes import SandboxRegistry

if TYPE_CHECKING:
    from pytest_skilleval.tier3.sandboxes import Sandbox


@dataclass
class Tier3Context:
    settings: Tier3Settings
    agents: AgentRegistry
    chosen: list[Agent]  # the agents this run's trials use, in --skilleval-agents order
    config: pytest.Config
    #: Made on first use (:attr:`sandboxes`), or at start-up in a run with Tier 3 or a chosen sandbox: the
    #: backends (containers, images, Harbor) are no business of a run that starts no agent.
    built_sandboxes: SandboxRegistry | None = None

    @property
    def sandboxes(self) -> SandboxRegistry:
        if self.built_sandboxes is None:
            self.built_sandboxes = _sandbox_registry(self.config, self.settings)
        return self.built_sandboxes

    @property
    def sandbox(self) -> Sandbox:
        return self.sandboxes.get(self.settings.sandbox)


TIER3 = pytest.StashKey[Tier3Context]()


def marker_name(agent: str) -> str:
    """``agent_claude_code``: a Python identifier, so ``pytest.mark.agent_claude_code`` works too."""
    return "agent_" + "".join(c if c.isalnum() else "_" for c in agent)


def in_ci() -> bool:
    """A CI run must not go green by skipping: missing agent tooling fails there (CI=true)."""
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def _sandbox_registry(config: pytest.Config, settings: Tier3Settings) -> SandboxRegistry:
    """Every backend plugins offer; the chosen one (--skilleval-sandbox) must be among them."""
    sandboxes = SandboxRegistry()
    try:
        for offered in config.hook.pytest_skilleval_sandboxes(config=config):
            for sandbox in offered or ():
                sandboxes.add(sandbox)
        sandboxes.get(settings.sandbox)
    except (KeyError, ValueError) as exc:
        raise pytest.UsageError(f"skilleval Tier 3: {exc.args[0]}") from None
    return sandboxes


def pytest_configure(config: pytest.Config) -> None:
    settings = Tier3Settings.from_config(config)
    agents = AgentRegistry()
    try:
        for contributed in config.hook.pytest_skilleval_agents(config=config):
            for agent in contributed or ():
                agents.add(agent)
        chosen = agents.select(",".join(settings.agents))
    except (KeyError, ValueError) as exc:
        raise pytest.UsageError(f"skilleval Tier 3: {exc.args[0]}") from None
    for agent in agents.all():
        config.addinivalue_line("markers", f"{marker_name(agent.name)}: Tier 3 trials run with {agent.label}")
    config.stash[TIER3] = ctx = Tier3Context(settings, agents, chosen, config)
    if settings.enabled or settings.sandbox != "local":
        ctx.sandboxes  # noqa: B018 - made now: an unknown --skilleval-sandbox is a usage error before collection
    if settings.enabled and not hasattr(config, "workerinput"):
        config.pluginmanager.register(RerunNames(), "skilleval-tier3-rerun-names")
        config.pluginmanager.register(PlanPrinter(config, settings, chosen), "skilleval-tier3-plan")
        if settings.dry_run and hasattr(config.option, "dist"):
            config.option.dist = "no"  # a dry run only collects: no worker needs to start (xdist configures after this)


def tier3_context(config: pytest.Config) -> Tier3Context:
    return config.stash[TIER3]


# The A/A repeat (--skilleval-aa) is a second baseline: its failures are just as expected.
BASELINE_ARMS = frozenset({"without_skill", AA_ARM})


def pytest_report_teststatus(report: pytest.TestReport, config: pytest.Config) -> tuple[str, str, str] | None:
    """A baseline (without-skill) trial that fails its case is the expected outcome, not a red failure:
    it shows with Tier 1's advisory word, unless ``--block-on-agent-eval``. Presentation only: the
    controller settles the exit status (tier3/report.py)."""
    if report.when != "call" or not report.failed:
        return None
    ctx = config.stash.get(TIER3, None)
    if ctx is None or ctx.settings.block:
        return None
    records = [json.loads(value) for name, value in report.user_properties if name == TRIAL_PROPERTY]
    if records and all(r.get("arm") in BASELINE_ARMS and r.get("status") == "FAILED" for r in records):
        return "advisory", "A", "ADVISORY"
    return None


def pytest_report_header(config: pytest.Config) -> list[str]:
    ctx = config.stash.get(TIER3, None)
    if ctx is None:
        return []
    s = ctx.settings
    if not s.enabled:
        return ["skilleval tier3: off (opt in with --skilleval-agents=claude-code,codex,... or --skilleval-tier3)"]
    mode = f"{s.gateway_mode} (harness check, not a model measurement)" if s.scripted else s.gateway_mode
    extra = f" reruns={s.reruns}" if s.reruns else ""
    return [f"skilleval tier3: agents={','.join(a.name for a in ctx.chosen)} arms={','.join(s.arms)} attempts={s.attempts}{extra} "
            f"gateway={mode} blocking={'yes' if s.block else 'no (advisory)'}",
            f"skilleval tier3 sandbox: {ctx.sandbox.describe()}"]


def pytest_unconfigure(config: pytest.Config) -> None:
    ctx = config.stash.get(TIER3, None)
    if ctx is not None and ctx.built_sandboxes is not None:  # a run that made none has none to close
        for name in ctx.built_sandboxes.names():
            ctx.built_sandboxes.get(name).close()


class PlanPrinter:
    """Before any trial starts: the trials per agent × arm × attempt and their estimated tokens and cost
    (tier3/plan.py). ``--skilleval-dry-run`` deselects every item after printing it. Controller only:
    in a plain run the plan comes from the collected items, under xdist from the first worker's ids."""

    def __init__(self, config: pytest.Config, settings: Tier3Settings, chosen: list[Agent]) -> None:
        self.config, self.settings = config, settings
        self.models = {a.name: settings.models.get(a.name) or a.default_model for a in chosen}
        self.printed = False
        self._plan: list[str] | None = None

    def lines(self, nodeids: Iterable[str]) -> list[str]:
        """The plan of the trial items among ``nodeids``. The planner is imported here: only a Tier 3
        run registers this printer, and a run without Tier 3 does not load it."""
        from pytest_skilleval.tier3.plan import PlannedTrial, plan_lines
        from pytest_skilleval.tier3.store import TrialStore

        trials = [t for t in (PlannedTrial.from_nodeid(n) for n in nodeids) if t is not None]
        store = TrialStore(self.settings.store_dir) if self.settings.store_dir is not None else None
        return plan_lines(trials, mode=self.settings.gateway_mode, models=self.models, store=store,
                          reuse_baseline=self.settings.reuse_baseline, dry_run=self.settings.dry_run)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_modifyitems(self, config: pytest.Config, items: list[pytest.Item]) -> None:
        self._plan = self.lines(i.nodeid for i in items)
        if self.settings.dry_run and items:
            config.hook.pytest_deselected(items=list(items))
            items[:] = []

    def pytest_report_collectionfinish(self, config: pytest.Config) -> list[str]:
        if self._plan is None:
            return []
        self.printed = True
        return self._plan

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: object, ids: list[str]) -> None:
        if self.printed:
            return
        self.printed = True
        reporter = self.config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            for line in self.lines(ids):
                reporter.write_line(line)

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        if self.settings.dry_run and exitstatus == pytest.ExitCode.NO_TESTS_COLLECTED:
            session.exitstatus = pytest.ExitCode.OK  # nothing ran on purpose


class RerunNames:
    """Under ``--reruns``, each intermediate execution of a trial gets its own id (``…-a1-run1]``), so
    JUnit and the terminal list every attempt under a unique name; the final one keeps the item's id.
    Both its reports are renamed: the call report says "rerun", and JUnit writes the test case when the
    teardown report of that execution arrives. Controller only (an xdist worker checks report ids
    against its items), and tryfirst: before JUnit sees them."""

    def __init__(self) -> None:
        self._renamed: dict[tuple[str, int], str] = {}  # (item id, rerun index) -> the execution's id

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        index = int(getattr(report, "rerun", 0) or 0)
        key = (report.nodeid, index)
        rerun = str(report.outcome) == "rerun"  # pytest-rerunfailures' outcome, outside pytest's own Literal
        if report.when == "call" and rerun and any(k == TRIAL_PROPERTY for k, _ in report.user_properties):
            base = report.nodeid
            self._renamed[key] = f"{base[:-1]}-run{index + 1}]" if base.endswith("]") else f"{base}[run{index + 1}]"
        if key in self._renamed:
            report.nodeid = self._renamed[key] if report.when != "teardown" else self._renamed.pop(key)
