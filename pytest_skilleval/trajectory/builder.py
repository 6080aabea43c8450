"""Incremental trajectory assembly: the one place that decides what counts as a skill load.

Parsers translate their harness's events into calls on :class:`TrajectoryBuilder` (a message, a
tool call, a tool result, an injected skill body, a catalog, usage). The builder pairs results
with calls, turns skill-tool calls and SKILL.md reads into :class:`SkillInvocation` records, and
keeps memory bounded: messages and tool calls are kept in a head-and-tail window, every text is
capped, and unanswered calls are forgotten oldest-first beyond a limit.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from pytest_skilleval.trajectory import catalog as catalog_mod
from pytest_skilleval.trajectory import text as T
from pytest_skilleval.trajectory.model import (
    CatalogSkill,
    InvocationMethod,
    InvocationStatus,
    Message,
    SkillCatalog,
    SkillInvocation,
    ToolCall,
    Trajectory,
    Usage,
    skill_key,
)
from pytest_skilleval.trajectory.shell import skill_read_path
from pytest_skilleval.trajectory.tools import (
    CATALOG_RANK,
    COMMAND_KEYS,
    PATH_KEYS,
    SKILL_TOOLS,
    ParseLimits,
    Window,
    tool_kind,
)


@dataclass
class _Pending:
    call: ToolCall
    invocation: SkillInvocation | None = None
    read_path: str | None = None
    read_how: InvocationMethod | None = None
    discovery: bool = False


def _first_str(args: dict[str, Any], keys: tuple[str, ...]) -> str | None:
    for key in keys:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return None


def _cap_value(value: Any, limit: int, depth: int = 0) -> Any:
    if isinstance(value, str):
        return T.cap(value, limit)[0]
    if depth > 4:
        return "…"
    if isinstance(value, dict):
        return {str(k): _cap_value(v, limit, depth + 1) for k, v in list(value.items())[:50]}
    if isinstance(value, list):
        return [_cap_value(v, limit, depth + 1) for v in value[:50]]
    return value


@dataclass
class TrajectoryBuilder:
    harness: str
    source: str | None = None
    limits: ParseLimits = field(default_factory=ParseLimits)
    #: False for streams that never carry file contents (Gemini's display strings): a successful read counts.
    bodies_recorded: bool = True
    line: int = 0
    position: int = 0
    fmt: str | None = None
    session_id: str | None = None
    model: str | None = None
    task: str | None = None
    final_answer: str | None = None
    usage: Usage = field(default_factory=Usage)
    cost_usd: float | None = None
    duration_ms: float | None = None
    turns: int | None = None
    run_error: str | None = None
    api_error_status: int | None = None
    max_turns_reached: bool = False
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._messages = Window(self.limits.head_items, self.limits.tail_items)
        self._calls = Window(self.limits.head_items, self.limits.tail_items)
        self._pending: OrderedDict[str, _Pending] = OrderedDict()
        self._last: _Pending | None = None  # the most recent call, for results that carry no id
        self.invocations: list[SkillInvocation] = []
        self._dropped_invocations = 0
        self._catalog: SkillCatalog = SkillCatalog()
        self._catalog_rank = 99
        self._last_assistant: str | None = None
        self._assistant_turns = 0

    # -- messages -----------------------------------------------------------------------------
    def message(self, role: str, text: str, *, agent: str | None = None, is_task: bool | None = None) -> None:
        if not text or not text.strip():
            return
        capped, cut = T.cap(text, self.limits.text_chars)
        self._messages.add(Message(role=role, text=capped or "", position=self._step(), line=self.line, truncated=cut, agent=agent))
        if role == "user" and self.task is None and is_task is not False and agent is None:
            self.task = T.cap(text.strip(), self.limits.body_chars)[0]
        elif role == "assistant" and agent is None:
            self._last_assistant = text
        if role in ("system", "developer"):
            self.scan_catalog(text, "system prompt")

    def assistant_turn(self) -> None:
        self._assistant_turns += 1

    def _step(self) -> int:
        self.position += 1
        return self.position

    # -- tool calls ---------------------------------------------------------------------------
    def tool_call(self, call_id: str | None, name: str, arguments: Any, *, agent: str | None = None) -> ToolCall:
        args = T.decode_json_string(arguments)
        if not isinstance(args, dict):
            args = {"input": args}
        call = ToolCall(id=call_id or None, name=name or "?", arguments=_cap_value(args, self.limits.text_chars),
                        position=self._step(), line=self.line, agent=agent)
        self._calls.add(call)
        pending = _Pending(call=call)
        kind = tool_kind(call.name)
        if kind == "skill":
            keys = SKILL_TOOLS.get(call.name.casefold(), ("skill_name", "name"))
            skill = _first_str(args, keys)
            if skill:  # an empty name would invent a skill called "": no event (reference §2.1)
                extra = _first_str(args, ("args",))
                pending.invocation = self._invocation(skill, InvocationMethod.TOOL, tool=call.name, call_id=call_id, agent=agent,
                                                      detail=f"args={extra}" if extra else None)
        elif kind == "read":
            path = _first_str(args, PATH_KEYS)
            if path and path.lower().endswith("skill.md"):
                pending.read_path, pending.read_how = path, InvocationMethod.FILE_READ
        elif kind == "shell":
            command = next((args[k] for k in COMMAND_KEYS if isinstance(args.get(k), (str, list))), None)
            path = skill_read_path(command) if command is not None else None
            if path:
                pending.read_path, pending.read_how = path, InvocationMethod.SHELL_READ
        elif kind == "discovery":
            pending.discovery = True
        key = call_id or f"#{call.position}"
        self._pending[key] = pending
        if len(self._pending) > self.limits.pending_calls:
            self._pending.popitem(last=False)  # a call never answered in 10k calls will not be
        self._last = pending
        return call

    def tool_result(self, call_id: str | None, output: Any, *, is_error: bool = False, error: str | None = None,
                    status: str | None = None, exit_code: int | None = None, body: str | None | bool = True) -> ToolCall | None:
        """Record a result. ``body``: True = the output is the body; a string = this is the body; None = no body here."""
        pending = self._pending.pop(call_id, None) if call_id else None
        if pending is None and self._last is not None and not self._last.call.completed and (
                not call_id or self._last.call.id is None):
            # An unkeyed result pairs only with the call immediately before it, so an unrelated tool's
            # output is never taken for a skill body.
            pending = self._last
            self._pending.pop(pending.call.id or f"#{pending.call.position}", None)
        if pending is None:
            return None
        text = output if isinstance(output, str) else T.flatten(output)
        failed = (is_error or bool(error) or (status or "").casefold() in T.FAIL_STATUSES
                  or (exit_code is not None and exit_code not in T.OK_EXIT_CODES))
        call = pending.call
        call.result, _ = T.cap(text, self.limits.text_chars)
        call.completed, call.is_error, call.error, call.exit_code = True, failed, error, exit_code
        skill_body = text if body is True else (body or None)
        inv = pending.invocation
        if inv is not None:
            if failed or T.is_refusal_text(text):
                inv.status, inv.message = InvocationStatus.REFUSED, (error or text or "").strip() or None
            else:
                inv.status = InvocationStatus.LOADED
                if skill_body and skill_body.strip() and not T.is_acknowledgement(skill_body) and not T.is_reinvocation_note(skill_body):
                    inv.body = T.cap(skill_body, self.limits.body_chars)[0]
        elif pending.read_path and not failed and (text.strip() or not self.bodies_recorded):
            name = T.frontmatter_name(text) or T.skill_name_from_path(pending.read_path)
            if name:  # a bare `SKILL.md` with no frontmatter names no skill: no event
                new = self._invocation(name, pending.read_how or InvocationMethod.FILE_READ, tool=call.name, call_id=call.id,
                                       agent=call.agent, path=pending.read_path, position=call.position)
                if new is not None:
                    new.status = InvocationStatus.LOADED
                    new.body = T.cap(T.strip_line_numbers(text), self.limits.body_chars)[0] if text.strip() else None
        elif pending.discovery and not failed:
            self.scan_catalog(text, "discovery tool")
            found = catalog_mod.parse_structured(output.get("skills") if isinstance(output, dict) else None)
            if found is not None:
                self.offer_catalog(found, "discovery tool")
        return call

    # -- skill loads outside tool results ------------------------------------------------------
    def _invocation(self, name: str, how: InvocationMethod, *, position: int | None = None, **kw: Any) -> SkillInvocation | None:
        if len(self.invocations) >= self.limits.invocations:
            self._dropped_invocations += 1
            return None
        inv = SkillInvocation(name=name, how=how, position=position or self.position, line=self.line, **kw)
        self.invocations.append(inv)
        return inv

    def mention(self, name: str, *, detail: str, body: str | None = None, path: str | None = None) -> SkillInvocation | None:
        """The user named a skill (``/x``, ``$x``, an injected ``<skill>`` block): recorded, not the agent's choice."""
        key = skill_key(name)
        last = next((i for i in reversed(self.invocations) if i.how is InvocationMethod.MENTION and i.key == key), None)
        if last is not None and (body is None or last.body is None):
            if body:  # `$x` in the prompt and the `<skill>` injection for it are one load
                last.body, last.status = T.cap(body, self.limits.body_chars)[0], InvocationStatus.LOADED
                last.path = last.path or path
            return last
        inv = self._invocation(name, InvocationMethod.MENTION, detail=detail, path=path)
        if inv is not None and body:
            inv.body, inv.status = T.cap(body, self.limits.body_chars)[0], InvocationStatus.LOADED
        return inv

    def attach_body(self, text: str, *, skill_dir: str | None = None, call_id: str | None = None,
                    slash_command: str | None = None) -> SkillInvocation | None:
        """A body delivered as its own message (Claude Code's "Base directory for this skill: …").

        ``slash_command``: the user's ``/x`` just before, so a body for ``x`` is that command's load.
        """
        dir_name = skill_dir.rstrip("/\\").replace("\\", "/").rsplit("/", 1)[-1] if skill_dir else None
        dir_key = skill_key(dir_name) if dir_name else None
        if slash_command and not call_id and (dir_key is None or skill_key(slash_command) == dir_key):
            inv = self.mention(slash_command, detail=f"slash-command /{slash_command}", body=text,
                               path=f"{skill_dir.rstrip('/')}/SKILL.md" if skill_dir else None)
            return inv
        open_ = [i for i in self.invocations if i.body is None and i.status is not InvocationStatus.REFUSED]
        match = next((i for i in open_ if call_id and i.call_id == call_id), None)
        # Parallel Skill calls can deliver bodies out of order: match by the directory's last segment.
        match = match or next((i for i in reversed(open_) if dir_key and (i.key == dir_key or i.key.rsplit(":", 1)[-1] == dir_key)), None)
        if match is None and len(open_) == 1 and not dir_key:
            match = open_[0]
        if match is None:
            if not dir_key:
                return None
            match = self.mention(dir_name or "", detail="injected body")
            if match is None:
                return None
        match.status = InvocationStatus.LOADED
        match.path = match.path or (f"{skill_dir.rstrip('/')}/SKILL.md" if skill_dir else None)
        if not T.is_reinvocation_note(text):
            match.body = T.cap(text, self.limits.body_chars)[0]
        return match

    # -- catalog ------------------------------------------------------------------------------
    def scan_catalog(self, text: str, source: str) -> None:
        found = catalog_mod.parse_catalog_text(text)
        if found is not None:
            self.offer_catalog(found[0], source)

    def offer_catalog(self, skills: list[CatalogSkill], source: str) -> None:
        rank = CATALOG_RANK.get(source, 5)
        if rank < self._catalog_rank:
            self._catalog, self._catalog_rank = SkillCatalog(recorded=True, skills=list(skills), source=source), rank
        elif rank == self._catalog_rank:  # several blocks of one kind: union, first description wins
            have = {skill_key(s.name) for s in self._catalog.skills}
            self._catalog.skills.extend(s for s in skills if skill_key(s.name) not in have)

    @property
    def catalog(self) -> SkillCatalog:
        return self._catalog

    # -- metering -----------------------------------------------------------------------------
    def add_usage(self, input_tokens: Any = 0, output_tokens: Any = 0, cached: Any = 0) -> None:
        self.usage.input_tokens += _int(input_tokens)
        self.usage.output_tokens += _int(output_tokens)
        self.usage.cached_input_tokens += _int(cached)

    def build(self, lines: int) -> Trajectory:
        notes = list(self.notes)
        if self._dropped_invocations:
            notes.append(f"{self._dropped_invocations} skill invocation(s) beyond the limit of {self.limits.invocations} were not kept")
        final = self.final_answer if self.final_answer is not None else self._last_assistant
        return Trajectory(
            harness=self.harness, format=self.fmt, source=self.source, session_id=self.session_id, model=self.model,
            task=self.task, messages=self._messages.items(), tool_calls=self._calls.items(),
            omitted_messages=self._messages.omitted, omitted_tool_calls=self._calls.omitted, catalog=self._catalog,
            gap_after=min((g for g in (self._messages.gap_after(), self._calls.gap_after()) if g is not None), default=None),
            invocations=self.invocations, final_answer=T.cap(final, self.limits.body_chars)[0] if final else None,
            usage=self.usage, cost_usd=self.cost_usd, duration_ms=self.duration_ms,
            turns=self.turns if self.turns is not None else (self._assistant_turns or None), lines=lines, notes=notes,
            run_error=self.run_error, api_error_status=self.api_error_status, max_turns_reached=self.max_turns_reached)


def _int(value: Any) -> int:
    try:
        return int(value or 0)
    except (TypeError, ValueError):
        return 0
