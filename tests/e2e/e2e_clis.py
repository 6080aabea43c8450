"""The four real agent CLIs as the e2e tests drive them: the package's agent adapters, plus test data.

How each CLI is configured, invoked, kept offline and parsed lives in ``pytest_skilleval/tier3/agents``
(one implementation, shared with Tier 3). What stays here is what the tests script: the tool each CLI
loads a skill with, and the answers the scripted model gives.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilleval.gateway import Trial
from pytest_skilleval.tier3.agents import Agent, AgentContext, ClaudeCode, Codex, GeminiCli, OpenCode
from pytest_skilleval.tier3.options import DEFAULT_AGENTS_DIR
from pytest_skilleval.trajectory import default_registry

REPO = Path(__file__).resolve().parents[2]
AGENTS_DIR = Path(os.environ.get("SKILLEVAL_AGENTS_DIR", REPO / DEFAULT_AGENTS_DIR))
SKILL = "greet"
DESCRIPTION = "Use this skill whenever the user asks for a greeting in the house style."
MARKER = "HOUSE-STYLE-MARKER-7f3a"
SKILL_MD = f"---\nname: {SKILL}\ndescription: {DESCRIPTION}\n---\n# Greet\n\n{MARKER}: open every greeting with 'Ahoy'.\n"
FINAL_SKILL, FINAL_PLAIN = "FINAL: HOUSE-STYLE-HELLO", "FINAL: PLAIN-ANSWER"


@dataclass(frozen=True)
class Cli:
    agent: Agent
    load_tool: str  # the tool this CLI's model calls to load a skill (Codex has none: it cats SKILL.md)
    load_args: dict[str, Any]

    @property
    def name(self) -> str:
        return self.agent.name

    @property
    def skill_root(self) -> str:
        return self.agent.skill_root

    @property
    def listing(self) -> str:
        return self.agent.listing(SKILL)

    @property
    def needs(self) -> tuple[str, ...]:
        return self.agent.needs

    @property
    def binary(self) -> Path | None:
        return self.agent.locate([AGENTS_DIR])

    def script(self, skill: bool) -> dict[str, Any]:
        if not skill:
            return {"steps": [{"text": FINAL_PLAIN}]}
        return {"side_text": "Greeting", "steps": [{"text": "Loading the skill.", "tool": self.load_tool, "args": self.load_args},
                                                  {"text": FINAL_SKILL}]}

    def context(self, home: Path, workspace: Path, tmp: Path, trial: Trial) -> AgentContext:
        return AgentContext(home=home, workspace=workspace, tmp=tmp, gateway_url=trial.url)

    def final_text(self, events: list[dict[str, Any]]) -> str:
        return default_registry().parse_records(events, format=self.agent.parser).final_answer or ""


CLIS = {cli.name: cli for cli in (
    Cli(ClaudeCode(), "Skill", {"skill": SKILL}),
    Cli(Codex(), "exec_command", {"cmd": f"cat .codex/skills/{SKILL}/SKILL.md"}),
    Cli(OpenCode(), "skill", {"name": SKILL}),
    Cli(GeminiCli(), "activate_skill", {"name": SKILL}),
)}
