"""Harness facts the builder keys on (which tools load skills, read files, run shells), and the
limits that keep parsing in bounded memory whatever the size of the transcript."""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import Any

# Dedicated skill tools and the argument keys that name the skill (casefolded tool name).
SKILL_TOOLS: dict[str, tuple[str, ...]] = {
    "skill": ("skill", "command", "name"),  # Claude Code `Skill{skill}` (older builds: `command`); OpenCode `skill{name}`
    "skills": ("skill_name", "name"),  # Strands AgentSkills
    "load_skill": ("skill_name", "name"),  # Google ADK SkillToolset, OpenAI Agents
    "activate_skill": ("name",),  # Gemini CLI
    "invoke_skill": ("name", "skill_name"),  # OpenHands
}
READ_TOOLS = frozenset({"read", "read_file", "file_read", "filesystem_read", "read_text_file", "view", "view_file", "open_file"})
SHELL_TOOLS = frozenset({"bash", "shell", "terminal", "command", "execute_command", "exec_command", "run_command",
                         "run_shell_command", "execute_bash", "local_shell", "shell_command", "container.exec"})
DISCOVERY_TOOLS = frozenset({"list_skills", "search_skills"})
PATH_KEYS = ("file_path", "filePath", "path", "filename", "absolute_path", "target_file")
COMMAND_KEYS = ("command", "cmd")
# Where a catalog came from, best first: what the model was actually sent beats what a log implies.
CATALOG_RANK = {"case": 0, "request log": 1, "system prompt": 2, "harness reminder": 2, "discovery tool": 3, "init event": 4}


@dataclass(frozen=True)
class ParseLimits:
    text_chars: int = 8_000  # per message / tool result kept in the window
    body_chars: int = 64_000  # per skill body
    head_items: int = 200
    tail_items: int = 200
    pending_calls: int = 10_000
    invocations: int = 10_000
    max_line_bytes: int = 32 * 1024 * 1024
    max_document_bytes: int = 64 * 1024 * 1024


class Window:
    """Keeps the first ``head`` and last ``tail`` items, and counts the ones in between."""

    def __init__(self, head: int, tail: int) -> None:
        self.head: list[Any] = []
        self.tail: deque[Any] = deque(maxlen=tail)
        self.head_size, self.omitted = head, 0

    def add(self, item: Any) -> None:
        if len(self.head) < self.head_size:
            self.head.append(item)
            return
        if len(self.tail) == self.tail.maxlen:
            self.omitted += 1  # the oldest tail item falls into the omitted middle
        self.tail.append(item)

    def gap_after(self) -> int | None:
        """Position of the last head item when items were omitted after it."""
        return self.head[-1].position if self.omitted and self.head else None

    def items(self) -> list[Any]:
        return [*self.head, *self.tail]


def tool_kind(name: str) -> str:
    key = name.casefold()
    base = key.rsplit(".", 1)[-1]  # namespaced tools: `mcp.filesystem.read_file`
    if key in SKILL_TOOLS or key.endswith("_load_skill"):
        return "skill"
    if key in DISCOVERY_TOOLS or key.endswith("_list_skills") or key.endswith("_search_skills"):
        return "discovery"
    if key in READ_TOOLS or base in READ_TOOLS:
        return "read"
    if key in SHELL_TOOLS or base in SHELL_TOOLS:
        return "shell"
    return "other"
