"""Claude Code (``@anthropic-ai/claude-code``): ``claude -p --output-format stream-json``.

Speaks Anthropic Messages to ``ANTHROPIC_BASE_URL`` (no ``/v1``: it appends ``/v1/messages``).
Lists skills in a ``<system-reminder>`` of the first user message as ``- name: description``;
loads one with its ``Skill`` tool. It reads ``.claude/skills`` (project) and
``$CLAUDE_CONFIG_DIR/skills`` (user), not ``.agents/skills``.
"""

from __future__ import annotations

from pathlib import Path

from pytest_skilleval.tier3.agents.base import Agent, AgentContext

#: Tools it may use without asking. In ``-p`` mode anything else is denied rather than prompted,
#: so an agent that should write files or run scripts needs them here; the sandbox bounds them.
ALLOWED_TOOLS = "Skill,Read,Glob,Grep,Bash,Write,Edit"


class ClaudeCode(Agent):
    name = "claude-code"
    label = "Claude Code"
    executable = "claude"
    package = "@anthropic-ai/claude-code"
    parser = "claude-code"
    skill_root = ".claude/skills"
    discovery_dirs = (".claude/skills", "~/.claude/skills")
    default_model = "claude-sonnet-4-5"

    def configure(self, ctx: AgentContext) -> dict[str, str]:
        config_dir = ctx.home / ".claude"
        config_dir.mkdir(parents=True, exist_ok=True)
        # Without these it looks up api.anthropic.com on the side (telemetry, update checks).
        return {"CLAUDE_CONFIG_DIR": str(config_dir), "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_TELEMETRY": "1",
                "DISABLE_AUTOUPDATER": "1", "DISABLE_ERROR_REPORTING": "1", "DISABLE_BUG_COMMAND": "1"}

    def command(self, executable: Path, prompt: str, ctx: AgentContext) -> list[str]:
        return [str(executable), "-p", "--output-format", "stream-json", "--verbose", "--model", self.model_for(ctx),
                "--max-turns", str(ctx.max_turns), "--permission-mode", "acceptEdits", "--allowedTools", ALLOWED_TOOLS,
                "--", prompt]  # `--`: a prompt that starts with '-' is not an option

    def listing(self, skill_name: str) -> str:
        return f"- {skill_name}:"
