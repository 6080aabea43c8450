"""Trigger mode in pytest: settings, the marker, per-process caches (trigger sets, rivals), the runner fixture.

Registered by ``pytest_skilleval.plugin`` at configure time. Items are collected under each skill
(``<skill>::triggers``) only with ``--skilleval-triggers`` (or ``--skilleval-trigger-mode=model``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from pytest_skilleval import state
from pytest_skilleval.tier3.plugin import tier3_context
from pytest_skilleval.triggers.options import TriggerSettings

# Registered in every run: what trigger items and fixtures use is imported where they use it, so a
# run without trigger items loads none of it (numpy included).
if TYPE_CHECKING:
    import numpy as np

    from pytest_skilleval.gateway import Gateway
    from pytest_skilleval.skill import Skill
    from pytest_skilleval.tier3.sandboxes import Sandbox
    from pytest_skilleval.triggers.probe import Prober
    from pytest_skilleval.triggers.rivals import RivalSet
    from pytest_skilleval.triggers.sets import ScriptRule, TriggerSet
    from pytest_skilleval.triggers.trial import TriggerRunner


@dataclass
class TriggerContext:
    settings: TriggerSettings
    sets: dict[Path, TriggerSet] = field(default_factory=dict)
    rivals: dict[Path, RivalSet] = field(default_factory=dict)
    catalog: list[Skill] | None = None


TRIGGERS = pytest.StashKey[TriggerContext]()


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "triggers: trigger trials - does the agent load the skill when it should, and only then")
    config.stash[TRIGGERS] = TriggerContext(TriggerSettings.from_config(config))


def pytest_report_header(config: pytest.Config) -> list[str]:
    ctx = config.stash.get(TRIGGERS, None)
    if ctx is None or not ctx.settings.enabled:
        return []
    s, agents = ctx.settings, ",".join(a.name for a in tier3_context(config).chosen)
    kind = "model-only probe" if s.mode == "model" else f"agents, gateway={tier3_context(config).settings.gateway_mode}"
    blocking = f"recall>={s.block_recall:g},precision>={s.block_precision:g}" if s.blocking else "no (advisory)"
    rivals = f"{s.rivals_dir or 'collected skills'} (max {s.rivals_max})"
    return [f"skilleval triggers: {kind} agents={agents} runs={s.runs} max-turns={s.max_turns} rivals={rivals} blocking={blocking}"]


def trigger_context(config: pytest.Config) -> TriggerContext:
    return config.stash[TRIGGERS]


def trigger_set(config: pytest.Config, skill: Skill) -> TriggerSet:
    from pytest_skilleval.triggers.sets import load_trigger_set

    ctx = trigger_context(config)
    if skill.root not in ctx.sets:
        ctx.sets[skill.root] = load_trigger_set(skill, from_cases=ctx.settings.from_cases)
    return ctx.sets[skill.root]


def rival_pool(config: pytest.Config) -> list[Skill]:
    """The catalog folder's skills, or the other collected skills."""
    from pytest_skilleval.triggers.rivals import catalog_skills

    ctx, run = trigger_context(config), state.run_state(config)
    if ctx.settings.rivals_dir is None:
        return [run.skill(root) for root in run.skill_roots()]
    if ctx.catalog is None:
        from pytest_skilleval.skill import Skill

        ctx.catalog = [Skill(root=root, key=str(root), limits=run.limits) for root in catalog_skills(ctx.settings.rivals_dir)]
    return ctx.catalog


def rivals_for(config: pytest.Config, skill: Skill) -> RivalSet:
    from pytest_skilleval.triggers.rivals import choose_rivals

    ctx = trigger_context(config)
    if skill.root not in ctx.rivals:
        pool = rival_pool(config)
        ctx.rivals[skill.root] = choose_rivals(skill, pool, ctx.settings.rivals_max, _embed, "tier2-short") \
            if len(pool) > ctx.settings.rivals_max + 1 else choose_rivals(skill, pool, ctx.settings.rivals_max)
    return ctx.rivals[skill.root]


def _embed(texts: Sequence[str]) -> np.ndarray:
    from pytest_skilleval.tier2.embedders import select

    return select("default").short.embed(texts)


def script_rules(config: pytest.Config, skill: Skill, rivals: RivalSet) -> dict[str, ScriptRule]:
    """Each installed skill's scripted-model rule (its own trigger set's ``script``), for scripted mode."""
    out = {}
    for s in (skill, *rivals.skills):
        rule = trigger_set(config, s).script
        if rule is not None:
            out[s.name] = rule
    return out


@pytest.fixture(scope="session")
def skilleval_trigger_runner(pytestconfig: pytest.Config, skilleval_gateway: Gateway, skilleval_sandbox: Sandbox) -> TriggerRunner:
    from pytest_skilleval.selection.plugin import parser_registry
    from pytest_skilleval.tier3.staging import hidden_dirs
    from pytest_skilleval.triggers.trial import TriggerRunner

    t3 = tier3_context(pytestconfig)
    return TriggerRunner(skilleval_gateway, skilleval_sandbox, t3.settings, trigger_context(pytestconfig).settings,
                         parser_registry(pytestconfig), hidden=tuple(hidden_dirs(t3.agents.all())))


@pytest.fixture(scope="session")
def skilleval_trigger_prober(request: pytest.FixtureRequest, skilleval_trigger_runner: TriggerRunner) -> Prober:
    """The model-only probe: the provider layer's ``skilleval_chat``; without one the probe cannot run."""
    from pytest_skilleval.tier3.plugin import in_ci
    from pytest_skilleval.triggers.probe import Prober

    chat = request.getfixturevalue("skilleval_chat")
    if chat is None:
        message = "--skilleval-trigger-mode=model needs a chat provider (docs/providers.md: SKILLEVAL_PROVIDER, SKILLEVAL_MODEL, a key)"
        if in_ci():
            pytest.fail(message, pytrace=False)
        pytest.skip(message)
    return Prober(skilleval_trigger_runner, chat)
