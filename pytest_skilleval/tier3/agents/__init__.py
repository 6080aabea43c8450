"""Agent adapters and their registry.

The four built-in CLIs are contributed through the ``pytest_skilleval_agents`` hook like any third
party's, by this module (registered as a plugin by ``tier3/plugin.py``)::

    @pytest.hookimpl
    def pytest_skilleval_agents(config):
        return [MyAgent()]
"""

from __future__ import annotations

from collections.abc import Iterable

import pytest

from pytest_skilleval.tier3.agents.base import Agent, AgentContext
from pytest_skilleval.tier3.agents.claude_code import ClaudeCode
from pytest_skilleval.tier3.agents.codex import Codex
from pytest_skilleval.tier3.agents.gemini import GeminiCli
from pytest_skilleval.tier3.agents.opencode import OpenCode

__all__ = ["BUILTIN_AGENTS", "Agent", "AgentContext", "AgentRegistry", "ClaudeCode", "Codex", "GeminiCli", "OpenCode"]

BUILTIN_AGENTS: tuple[type[Agent], ...] = (ClaudeCode, Codex, OpenCode, GeminiCli)
#: Other spellings users type (the eval-case script keys accept the same ones).
ALIASES = {"claude": "claude-code", "gemini-cli": "gemini"}


class AgentRegistry:
    def __init__(self, agents: Iterable[Agent] = ()) -> None:
        self._agents: dict[str, Agent] = {}
        for agent in agents:
            self.add(agent)

    def add(self, agent: Agent) -> None:
        have = self._agents.get(agent.name)
        if have is not None and type(have) is not type(agent):
            raise ValueError(f"two agents are named {agent.name!r}: {type(have).__qualname__} and {type(agent).__qualname__}")
        self._agents[agent.name] = agent

    def names(self) -> list[str]:
        return list(self._agents)

    def all(self) -> list[Agent]:
        return list(self._agents.values())

    def get(self, name: str) -> Agent:
        key = ALIASES.get(name.strip().lower(), name.strip().lower())
        if key not in self._agents:
            raise KeyError(f"unknown agent {name!r} (known: {', '.join(self._agents)})")
        return self._agents[key]

    def select(self, spec: str) -> list[Agent]:
        """Agents named in a comma list (``all`` = every registered one), in the order given, once each."""
        names = [n.strip() for n in spec.split(",") if n.strip()]
        if names == ["all"]:
            return list(self._agents.values())
        chosen: list[Agent] = []
        for name in names:
            agent = self.get(name)
            if agent not in chosen:
                chosen.append(agent)
        return chosen


@pytest.hookimpl
def pytest_skilleval_agents(config: pytest.Config) -> list[Agent]:
    return [cls() for cls in BUILTIN_AGENTS]
