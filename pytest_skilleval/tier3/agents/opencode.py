"""OpenCode (``opencode-ai``): ``opencode run --format json``.

Speaks OpenAI Chat Completions through the bundled ``@ai-sdk/openai-compatible`` provider, given
by ``OPENCODE_CONFIG_CONTENT`` (the project tree stays clean). Lists skills at the end of the
system message as ``<available_skills><skill><name>…``; loads one with its ``skill`` tool. Reads
``.opencode/skills``, ``.opencode/skill``, ``.claude/skills``, ``.agents/skills`` and their
``~/.config/opencode`` / home equivalents.

Offline it needs the system ``rg`` (else it downloads ripgrep from GitHub), and its plugin lookup
goes to ``NPM_CONFIG_REGISTRY``, which points at the gateway (answered with ``{}``).
"""

from __future__ import annotations

import json
from pathlib import Path

from pytest_skilleval.tier3.agents.base import Agent, AgentContext

PROVIDER = "skilleval"
XDG = {"XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share", "XDG_CACHE_HOME": ".cache", "XDG_STATE_HOME": ".local/state"}


class OpenCode(Agent):
    name = "opencode"
    label = "OpenCode"
    executable = "opencode"
    package = "opencode-ai"
    parser = "opencode"
    skill_root = ".opencode/skills"
    discovery_dirs = (".opencode/skills", ".opencode/skill", ".claude/skills", ".agents/skills", "~/.config/opencode/skills",
                      "~/.config/opencode/skill", "~/.claude/skills", "~/.agents/skills")
    needs = ("rg",)
    default_model = "gpt-5.5"  # in proxy mode it goes to the OpenAI upstream; in scripted mode any name works

    def configure(self, ctx: AgentContext) -> dict[str, str]:
        model = self.model_for(ctx)
        # cost per million tokens, so its own cost report is comparable with the gateway's metering
        spec = {"name": model, "tool_call": True, "cost": {"input": 3, "output": 15}, "limit": {"context": 200000, "output": 8000}}
        config = {"$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled", "model": f"{PROVIDER}/{model}",
                  "provider": {PROVIDER: {"npm": "@ai-sdk/openai-compatible", "name": PROVIDER,
                                          "options": {"baseURL": ctx.openai_url, "apiKey": "{env:SKILLEVAL_GATEWAY_TOKEN}"},
                                          "models": {model: spec}}}}
        env = {key: str(ctx.home / rel) for key, rel in XDG.items()}
        env.update({"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
                    "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
                    "NPM_CONFIG_REGISTRY": ctx.gateway_url + "/npm/", "OPENCODE_CONFIG_CONTENT": json.dumps(config)})
        return env

    def command(self, executable: Path, prompt: str, ctx: AgentContext) -> list[str]:
        return [str(executable), "run", "--format", "json", "-m", f"{PROVIDER}/{self.model_for(ctx)}", "--", prompt]
