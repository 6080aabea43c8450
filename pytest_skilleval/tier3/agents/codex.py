"""Codex CLI (``@openai/codex``): ``codex exec --json``.

Speaks OpenAI Responses over plain HTTP SSE, but only through a custom ``[model_providers.X]``
(the built-in provider ignores ``OPENAI_BASE_URL`` and tries a WebSocket to api.openai.com), and
only with ``wire_api = "responses"`` (``chat`` is a hard error in 0.171). Lists skills in a
``<skills_instructions>`` developer message as ``- name: description (file: …)``; it has no skill
tool, so a model reads SKILL.md through ``exec_command``. Reads ``.codex/skills``,
``.agents/skills``, ``$CODEX_HOME/skills`` (+ its bundled ``.system`` ones) and ``/etc/codex/skills``.

Gotcha: with ``CODEX_HOME`` under ``$TMPDIR`` it refuses to create its sandbox helper, so the
trial's TMPDIR is a sibling of HOME, never an ancestor (see staging).
"""

from __future__ import annotations

from pathlib import Path

from pytest_skilleval.tier3.agents.base import Agent, AgentContext

PROVIDER = "skilleval"


class Codex(Agent):
    name = "codex"
    label = "Codex CLI"
    executable = "codex"
    package = "@openai/codex"
    parser = "codex"
    skill_root = ".codex/skills"
    discovery_dirs = (".codex/skills", ".agents/skills", "~/.codex/skills", "~/.agents/skills", "/etc/codex/skills")
    needs = ("bwrap",)  # its own shell sandbox on Linux (nested inside ours)
    default_model = "gpt-5.5"  # a slug it has metadata for; unknown slugs add an error event

    def configure(self, ctx: AgentContext) -> dict[str, str]:
        codex_home = ctx.home / ".codex"
        codex_home.mkdir(parents=True, exist_ok=True)
        # Plugins off, or it looks up github.com and chatgpt.com; analytics, feedback and updates off.
        (codex_home / "config.toml").write_text(
            f'model = "{self.model_for(ctx)}"\nmodel_provider = "{PROVIDER}"\ncheck_for_update_on_startup = false\n'
            f'[model_providers.{PROVIDER}]\nname = "{PROVIDER}"\nbase_url = "{ctx.openai_url}"\n'
            'env_key = "SKILLEVAL_GATEWAY_TOKEN"\nwire_api = "responses"\n'
            "[analytics]\nenabled = false\n[feedback]\nenabled = false\n[features]\nplugins = false\nremote_plugin = false\n",
            encoding="utf-8")
        return {"CODEX_HOME": str(codex_home)}

    def command(self, executable: Path, prompt: str, ctx: AgentContext) -> list[str]:
        # workspace-write: its shell tool runs in its own bubblewrap sandbox and may write the workspace.
        return [str(executable), "exec", "--json", "--skip-git-repo-check", "-m", self.model_for(ctx), "-s", "workspace-write",
                "--", prompt]

    def listing(self, skill_name: str) -> str:
        return f"- {skill_name}:"
