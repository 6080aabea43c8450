"""Extension points of pytest-skilleval.

A third party adds a check by shipping a pytest plugin (a ``pytest11`` entry point or a
``conftest.py``) that implements :func:`pytest_skilleval_checks`. Nothing else changes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_skilleval.checks import Check
    from pytest_skilleval.tier3.agents.base import Agent
    from pytest_skilleval.tier3.sandboxes.base import Sandbox
    from pytest_skilleval.trajectory.registry import TrajectoryParser


@pytest.hookspec
def pytest_skilleval_checks(config: pytest.Config) -> Iterable[Check]:
    """Return the checks this plugin contributes.

    Every implementation is called; the registry merges the answers. Check names must be unique
    across all plugins: a clash is a usage error naming both providers.
    """


@pytest.hookspec
def pytest_skilleval_skill_collectors(parent: pytest.Collector) -> Iterable[pytest.Collector]:
    """Return more collectors under one skill folder ``parent``, after its Tier 1 and Tier 2 ones.

    Tier 3 answers with its trial collector when it is enabled, so the core collector does not
    import Tier 3. A collector built here must take its hooks from ``parent`` (never from a path
    inside the skill): see ``collect.py``.
    """


@pytest.hookspec
def pytest_skilleval_trajectory_parsers(config: pytest.Config) -> Iterable[TrajectoryParser]:
    """Return trajectory parsers for more agent harnesses (see ``trajectory/registry.py``).

    Each declares a ``name`` and ``sniff(first_lines)``; they join the built-in parsers, sniffed in
    ``priority`` order (the generic fallback is last). A name clash is a usage error.
    """


@pytest.hookspec
def pytest_skilleval_agents(config: pytest.Config) -> Iterable[Agent]:
    """Return agent adapters (see ``tier3/agents/base.py``) for Tier 3 trials.

    Each names itself (``--skilleval-agents=<name>``, marker ``agent_<name>``) and knows its CLI's
    install check, private config, skill discovery folders, command line and trajectory parser.
    Two different adapters with one name is a usage error.
    """


@pytest.hookspec
def pytest_skilleval_sandboxes(config: pytest.Config) -> Iterable[Sandbox]:
    """Return sandbox backends (see ``tier3/sandboxes/base.py``), chosen with ``--skilleval-sandbox``."""
