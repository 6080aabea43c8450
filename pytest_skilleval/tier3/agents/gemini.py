"""Gemini CLI (``@google/gemini-cli``): ``gemini -p … --output-format stream-json``.

Speaks the Gemini API (``:streamGenerateContent?alt=sse``) to ``GOOGLE_GEMINI_BASE_URL``. Lists
skills in ``systemInstruction`` as ``<available_skills><skill><name>…``; loads one with
``activate_skill`` — a tool it offers headless only in yolo mode. Reads ``.gemini/skills`` and
``.agents/skills`` (project and home) besides its two bundled skills.
"""

from __future__ import annotations

import json
from pathlib import Path

from pytest_skilleval.tier3.agents.base import Agent, AgentContext


class GeminiCli(Agent):
    name = "gemini"
    label = "Gemini CLI"
    executable = "gemini"
    package = "@google/gemini-cli"
    parser = "gemini-cli"
    skill_root = ".gemini/skills"
    discovery_dirs = (".gemini/skills", ".agents/skills", "~/.gemini/skills", "~/.agents/skills")
    default_model = "gemini-2.5-flash"

    def configure(self, ctx: AgentContext) -> dict[str, str]:
        folder = ctx.home / ".gemini"
        folder.mkdir(parents=True, exist_ok=True)
        settings = {"general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
                    "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
                    "model": {"maxSessionTurns": ctx.max_turns},
                    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}}}
        (folder / "settings.json").write_text(json.dumps(settings), encoding="utf-8")
        return {"GEMINI_CLI_NO_RELAUNCH": "true", "GEMINI_CLI_TRUST_WORKSPACE": "true"}

    def command(self, executable: Path, prompt: str, ctx: AgentContext) -> list[str]:
        # --prompt=<text>: one token, so a prompt that starts with '-' is not read as an option.
        return [str(executable), f"--prompt={prompt}", "--approval-mode", "yolo", "--output-format", "stream-json",
                "-m", self.model_for(ctx)]
