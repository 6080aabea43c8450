"""How each real agent CLI is run offline against the gateway (see ../shared/reference/agent-clis.md).

Per CLI: where it discovers skills, how it lists them to the model, which tool loads one, the
private config it needs, the command line, and where its final answer is in its JSON events.
Every setting that stops a CLI from reaching the internet (telemetry, update checks, plugin and
model-list fetches) is here; the gateway also poses as HTTP(S) proxy and records any attempt.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_skilleval.gateway import Trial

REPO = Path(__file__).resolve().parents[2]
AGENTS_BIN = Path(os.environ.get("SKILLEVAL_AGENTS_DIR", REPO / ".cache" / "agents")) / "node_modules" / ".bin"
SKILL = "greet"
DESCRIPTION = "Use this skill whenever the user asks for a greeting in the house style."
MARKER = "HOUSE-STYLE-MARKER-7f3a"
SKILL_MD = f"---\nname: {SKILL}\ndescription: {DESCRIPTION}\n---\n# Greet\n\n{MARKER}: open every greeting with 'Ahoy'.\n"
FINAL_SKILL, FINAL_PLAIN = "FINAL: HOUSE-STYLE-HELLO", "FINAL: PLAIN-ANSWER"


@dataclass(frozen=True)
class Cli:
    name: str  # folder name under fixtures/trajectories/
    executable: str
    skill_root: str  # where, inside the workspace, the CLI discovers skills
    listing: str  # how our skill's entry starts in the CLI's skill listing
    load_tool: str
    load_args: dict[str, Any]
    needs: tuple[str, ...] = ()  # system programs the CLI needs offline

    @property
    def binary(self) -> Path:
        return AGENTS_BIN / self.executable

    def script(self, skill: bool) -> dict[str, Any]:
        if not skill:
            return {"steps": [{"text": FINAL_PLAIN}]}
        return {"side_text": "Greeting", "steps": [{"text": "Loading the skill.", "tool": self.load_tool, "args": self.load_args},
                                                  {"text": FINAL_SKILL}]}

    def prepare(self, home: Path, trial: Trial) -> dict[str, str]:
        """Write the CLI's private config under ``home``; return its extra environment."""
        return {}

    def command(self, prompt: str, trial: Trial) -> list[str]:
        raise NotImplementedError

    def final_text(self, events: list[dict[str, Any]]) -> str:
        raise NotImplementedError


class ClaudeCode(Cli):
    def prepare(self, home: Path, trial: Trial) -> dict[str, str]:
        (home / ".claude").mkdir(parents=True, exist_ok=True)
        return {"CLAUDE_CONFIG_DIR": str(home / ".claude"), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1"}

    def command(self, prompt: str, trial: Trial) -> list[str]:
        return [str(self.binary), "-p", prompt, "--output-format", "stream-json", "--verbose", "--model", "claude-sonnet-4-5"]

    def final_text(self, events: list[dict[str, Any]]) -> str:
        return next((str(e.get("result", "")) for e in reversed(events) if e.get("type") == "result"), "")


class Codex(Cli):
    def prepare(self, home: Path, trial: Trial) -> dict[str, str]:
        codex_home = home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        # wire_api "responses" (chat is rejected by 0.171); a custom provider, since the built-in
        # one ignores OPENAI_BASE_URL; plugins off, or it looks up github.com and chatgpt.com.
        (codex_home / "config.toml").write_text(
            'model = "gpt-5.5"\nmodel_provider = "skilleval"\ncheck_for_update_on_startup = false\n'
            f'[model_providers.skilleval]\nname = "skilleval"\nbase_url = "{trial.openai_url}"\n'
            'env_key = "SKILLEVAL_GATEWAY_TOKEN"\nwire_api = "responses"\n'
            "[analytics]\nenabled = false\n[feedback]\nenabled = false\n[features]\nplugins = false\nremote_plugin = false\n")
        return {"CODEX_HOME": str(codex_home)}

    def command(self, prompt: str, trial: Trial) -> list[str]:
        # -s read-only runs the shell tool inside Codex's bubblewrap sandbox.
        return [str(self.binary), "exec", "--json", "--skip-git-repo-check", "-m", "gpt-5.5", "-s", "read-only", prompt]

    def final_text(self, events: list[dict[str, Any]]) -> str:
        texts = [e["item"].get("text", "") for e in events if e.get("type") == "item.completed" and e["item"].get("type") == "agent_message"]
        return texts[-1] if texts else ""


class OpenCode(Cli):
    def prepare(self, home: Path, trial: Trial) -> dict[str, str]:
        config = {"$schema": "https://opencode.ai/config.json", "autoupdate": False, "share": "disabled", "model": "skilleval/scripted",
                  "provider": {"skilleval": {"npm": "@ai-sdk/openai-compatible", "name": "skilleval",
                                             "options": {"baseURL": trial.openai_url, "apiKey": "{env:SKILLEVAL_GATEWAY_TOKEN}"},
                                             "models": {"scripted": {"name": "scripted", "tool_call": True, "cost": {"input": 3, "output": 15},
                                                                     "limit": {"context": 200000, "output": 8000}}}}}}
        xdg = {"XDG_CONFIG_HOME": ".config", "XDG_DATA_HOME": ".local/share", "XDG_CACHE_HOME": ".cache", "XDG_STATE_HOME": ".local/state"}
        env = {k: str(home / v) for k, v in xdg.items()}
        env.update({"OPENCODE_DISABLE_AUTOUPDATE": "1", "OPENCODE_DISABLE_MODELS_FETCH": "1", "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
                    "OPENCODE_DISABLE_SHARE": "1", "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
                    "NPM_CONFIG_REGISTRY": trial.url + "/npm/",  # its plugin lookup lands on the gateway, not npmjs.org
                    "OPENCODE_CONFIG_CONTENT": json.dumps(config)})
        return env

    def command(self, prompt: str, trial: Trial) -> list[str]:
        return [str(self.binary), "run", "--format", "json", "-m", "skilleval/scripted", prompt]

    def final_text(self, events: list[dict[str, Any]]) -> str:
        texts = [e["part"].get("text", "") for e in events if e.get("type") == "text"]
        return texts[-1] if texts else ""


class GeminiCli(Cli):
    def prepare(self, home: Path, trial: Trial) -> dict[str, str]:
        (home / ".gemini").mkdir(parents=True, exist_ok=True)
        settings = {"general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
                    "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False},
                    "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": False}}}
        (home / ".gemini" / "settings.json").write_text(json.dumps(settings))
        return {"GEMINI_CLI_NO_RELAUNCH": "true", "GEMINI_CLI_TRUST_WORKSPACE": "true"}

    def command(self, prompt: str, trial: Trial) -> list[str]:
        # yolo: in headless default mode activate_skill is not offered at all.
        return [str(self.binary), "-p", prompt, "--approval-mode", "yolo", "--output-format", "stream-json", "-m", "gemini-2.5-flash"]

    def final_text(self, events: list[dict[str, Any]]) -> str:
        # Assistant text arrives as deltas; the final answer is what follows the last tool result.
        last_tool = max((n for n, e in enumerate(events) if e.get("type") == "tool_result"), default=-1)
        return "".join(e.get("content", "") for e in events[last_tool + 1:] if e.get("type") == "message" and e.get("role") == "assistant")


CLIS = {cli.name: cli for cli in (
    ClaudeCode("claude-code", "claude", ".claude/skills", f"- {SKILL}: {DESCRIPTION}", "Skill", {"skill": SKILL}),
    Codex("codex", "codex", ".codex/skills", f"- {SKILL}: {DESCRIPTION}", "exec_command",
          {"cmd": f"cat .codex/skills/{SKILL}/SKILL.md"}, needs=("bwrap",)),
    OpenCode("opencode", "opencode", ".opencode/skills", f"<name>{SKILL}</name>", "skill", {"name": SKILL}, needs=("rg",)),
    GeminiCli("gemini", "gemini", ".gemini/skills", f"<name>{SKILL}</name>", "activate_skill", {"name": SKILL}),
)}
