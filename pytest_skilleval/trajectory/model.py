"""The common trajectory model every harness parser produces.

A trajectory is what one agent run did: the task, the messages, the tool calls with their results,
the skill catalog it was offered, the skills it invoked, the final answer and the run's metering.
Parsers stream their input, so the message and tool-call lists are a bounded window (head and
tail, with the number left out); skill invocations and the catalog are always kept whole, because
they are what selection accuracy is computed from.
"""

from __future__ import annotations

import enum
import re
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field


def skill_key(name: str) -> str:
    """The canonical form two spellings of one skill share: casefold, ``_`` → ``-``.

    ``.`` and ``:`` are kept, so ``data.clean`` ≠ ``data-clean`` and a plugin-namespaced
    ``superpowers:brainstorming`` stays distinct from a bare ``brainstorming``.
    """
    return re.sub(r"\s+", "-", name.strip().casefold().replace("_", "-"))


class TrajectoryParseError(Exception):
    """Bad or truncated input: names the file and the 1-based line, never a traceback from deep inside."""

    def __init__(self, path: str | Path | None, line: int | None, message: str) -> None:
        self.path = str(path) if path is not None else None
        self.line = line
        self.message = message
        where = self.path or "<trajectory>"
        super().__init__(f"{where}:{line}: {message}" if line else f"{where}: {message}")


class Message(BaseModel):
    role: str  # user | assistant | system | developer | error
    text: str
    position: int = Field(description="step index in the run, shared with tool calls, so both can be interleaved")
    line: int | None = Field(default=None, description="1-based line of the source file")
    truncated: bool = False
    agent: str | None = Field(default=None, description="sub-agent / side chain that produced it, if not the main agent")


class ToolCall(BaseModel):
    id: str | None = None
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: str | None = Field(default=None, description="the result text as the harness recorded it (capped)")
    is_error: bool = False
    error: str | None = None
    exit_code: int | None = None
    completed: bool = Field(default=False, description="a result was recorded; False means the run ended before it")
    position: int = 0
    line: int | None = None
    agent: str | None = None


class InvocationMethod(str, enum.Enum):
    TOOL = "tool"  # a dedicated skill tool (Skill, skill, skills, load_skill, activate_skill, invoke_skill)
    FILE_READ = "file_read"  # a read tool on …/SKILL.md that returned a body
    SHELL_READ = "shell_read"  # cat / sed -n / head … of …/SKILL.md that returned a body
    MENTION = "mention"  # the *user* named the skill: a /slash command or a $skill mention


class InvocationStatus(str, enum.Enum):
    LOADED = "loaded"
    REFUSED = "refused"  # the harness refused the load; ``message`` holds what it said
    ATTEMPTED = "attempted"  # requested, but the trajectory ends before any outcome


class SkillInvocation(BaseModel):
    """One attempt to load a skill. Several attempts of one skill fold into one :class:`SkillSelection`."""

    name: str
    how: InvocationMethod
    status: InvocationStatus = InvocationStatus.ATTEMPTED
    message: str | None = Field(default=None, description="the harness's refusal or error text")
    body: str | None = Field(default=None, description="the SKILL.md text the agent received, when recorded (capped)")
    path: str | None = None
    tool: str | None = Field(default=None, description="the tool used, e.g. 'Skill' or 'exec_command'")
    detail: str | None = Field(default=None, description="how exactly, e.g. the shell command or 'slash-command'")
    call_id: str | None = None
    position: int = 0
    line: int | None = None
    agent: str | None = None

    @property
    def key(self) -> str:
        return skill_key(self.name)

    @property
    def refused(self) -> bool:
        return self.status is InvocationStatus.REFUSED

    @property
    def by_user(self) -> bool:
        """A user-triggered load is not the agent's selection decision."""
        return self.how is InvocationMethod.MENTION


class SkillSelection(BaseModel):
    """All attempts at one skill, folded: loaded if any attempt loaded, refused only if every one was."""

    name: str
    key: str
    status: InvocationStatus
    message: str | None = None
    body: str | None = None
    how: InvocationMethod
    attempts: int = 1
    position: int = 0
    by_user: bool = False

    @property
    def refused(self) -> bool:
        return self.status is InvocationStatus.REFUSED


class CatalogSkill(BaseModel):
    name: str
    description: str | None = None
    path: str | None = None


class SkillCatalog(BaseModel):
    """The skills the agent was offered. ``recorded=False`` (nothing anywhere) is not the same as an empty list."""

    recorded: bool = False
    skills: list[CatalogSkill] = Field(default_factory=list)
    source: str | None = Field(default=None, description="where it was found, e.g. 'system prompt', 'request log', 'init event'")

    @property
    def empty(self) -> bool:
        return self.recorded and not self.skills

    def names(self) -> list[str]:
        return [s.name for s in self.skills]

    def find(self, name: str) -> CatalogSkill | None:
        key = skill_key(name)
        return next((s for s in self.skills if skill_key(s.name) == key), None)


class Usage(BaseModel):
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


class Trajectory(BaseModel):
    harness: str
    format: str | None = Field(default=None, description="the harness's output flavour, e.g. 'stream-json' or 'transcript'")
    source: str | None = None
    session_id: str | None = None
    model: str | None = None
    task: str | None = None
    messages: list[Message] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    omitted_messages: int = Field(default=0, description="messages parsed but left out of the middle of the window")
    omitted_tool_calls: int = 0
    gap_after: int | None = Field(default=None, description="step after which the omitted middle of the window lies")
    catalog: SkillCatalog = Field(default_factory=SkillCatalog)
    invocations: list[SkillInvocation] = Field(default_factory=list)
    final_answer: str | None = None
    usage: Usage = Field(default_factory=Usage)
    cost_usd: float | None = None
    duration_ms: float | None = None
    turns: int | None = None
    #: The harness said the run itself ended in error (Claude Code's ``is_error``, Codex's ``turn.failed``,
    #: a Gemini/OpenCode error result), and why; a failed *tool call* is not this. Tier 3 makes it an ERROR.
    run_error: str | None = None
    api_error_status: int | None = Field(default=None, description="HTTP status of the model API error that ended the run")
    max_turns_reached: bool = Field(default=False, description="the run stopped at the harness's turn limit (the agent's FAIL)")
    lines: int = 0
    notes: list[str] = Field(default_factory=list)

    @property
    def total_messages(self) -> int:
        return len(self.messages) + self.omitted_messages

    @property
    def total_tool_calls(self) -> int:
        return len(self.tool_calls) + self.omitted_tool_calls

    def selections(self, *, include_user: bool = False) -> list[SkillSelection]:
        """Invoked skills in first-attempt order, one per skill.

        User-triggered loads (``/x``, ``$x``) are left out unless asked for: they are the user's
        choice, not the agent's, so they are not a selection decision to judge or to count as triggering.
        """
        folded: dict[str, SkillSelection] = {}
        for inv in self.invocations:
            if inv.by_user and not include_user:
                continue
            cur = folded.get(inv.key)
            if cur is None:
                folded[inv.key] = SkillSelection(name=inv.name, key=inv.key, status=inv.status, message=inv.message,
                                                 body=inv.body, how=inv.how, position=inv.position, by_user=inv.by_user)
                continue
            cur.attempts += 1
            if cur.status is not InvocationStatus.LOADED and inv.status is not InvocationStatus.REFUSED:
                cur.status = inv.status
                cur.name = inv.name  # `changelog_writer` refused, then `changelog-writer` loaded: show what loaded
            if inv.refused and cur.status is InvocationStatus.REFUSED:
                cur.message = inv.message or cur.message  # the latest refusal explains the final state
            # A paged re-read extends the body; a different body never replaces the one kept.
            if inv.body and (not cur.body or (len(inv.body) > len(cur.body) and cur.body in inv.body)):
                cur.body = inv.body
        for sel in folded.values():
            if sel.status is InvocationStatus.LOADED:
                sel.message = None
        return list(folded.values())

    def invoked(self, name: str, *, include_user: bool = False) -> SkillSelection | None:
        key = skill_key(name)
        return next((s for s in self.selections(include_user=include_user) if s.key == key), None)
