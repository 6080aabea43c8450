"""Claude Code / Claude Agent SDK: ``claude -p --output-format stream-json --verbose`` events and the
on-disk transcript ``~/.claude/projects/<slug>/<session>.jsonl`` (the same message shapes in an envelope).

Skill signals (reference §2.3b, §6.1; agent-clis.md §3):

* ``Skill`` tool_use with ``input.skill`` — older builds used ``input.command``; the tool_result is
  only "Launching skill: x", and ``tool_use_result``/``toolUseResult`` carries ``{success, commandName}``;
* the body arrives as a *separate* user message "Base directory for this skill: <dir>\\n\\n<body>"
  (``isMeta`` + ``sourceToolUseID`` on disk, ``isSynthetic`` live, or neither);
* a typed ``/x``: a user line with ``<command-name>/x</command-name>`` and then the body;
* the catalog: the ``init`` event's ``skills`` names, and in the request only, a ``<system-reminder>``
  listing (pass the gateway request log to recover it).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from pytest_skilleval.trajectory import text as T
from pytest_skilleval.trajectory.builder import TrajectoryBuilder
from pytest_skilleval.trajectory.catalog import parse_structured
from pytest_skilleval.trajectory.model import Usage
from pytest_skilleval.trajectory.registry import TrajectoryParser, sniff_objects

_TYPES = frozenset({"system", "assistant", "user", "result", "summary", "file-history-snapshot", "queue-operation", "attachment"})
_BASE_DIR = re.compile(r"^\s*Base directory for this skill:\s*(\S[^\n]*)\n?", re.I)
_COMMAND_NAME = re.compile(r"<command-name>\s*/?([^<\s]+)\s*</command-name>")
_REMINDER = re.compile(r"<system-reminder>.*?</system-reminder>", re.S)
_TOOL_ERROR = re.compile(r"</?tool_use_error>")


class ClaudeCodeParser(TrajectoryParser):
    name = "claude-code"
    aliases = ("claude", "claude-agent-sdk", "claude_code")
    description = "Claude Code stream-json events and transcript JSONL"

    def sniff(self, first_lines: Sequence[str]) -> bool:
        for obj in sniff_objects(first_lines):
            if obj.get("type") not in _TYPES:
                continue
            if isinstance(obj.get("message"), dict) or "parentUuid" in obj or "sessionId" in obj:
                return True
            if obj.get("type") == "system" and ("claude_code_version" in obj or "slash_commands" in obj or "apiKeySource" in obj):
                return True
        return False

    def parse(self, records: Iterable[dict[str, Any]], builder: TrajectoryBuilder) -> None:
        seen_ids: set[str] = set()  # one API message is split over several lines: count its usage once
        slash: str | None = None
        for rec in records:
            kind = rec.get("type")
            agent = "sidechain" if rec.get("isSidechain") else (rec.get("parent_tool_use_id") or None)
            builder.session_id = builder.session_id or rec.get("session_id") or rec.get("sessionId")
            if "parentUuid" in rec or "sessionId" in rec:  # the on-disk envelope; live events carry session_id
                builder.fmt = "transcript"
            elif builder.fmt is None and kind in ("system", "assistant", "user", "result"):
                builder.fmt = "stream-json"
            if kind == "system" and rec.get("subtype") == "init":
                builder.model = rec.get("model") or builder.model
                names = parse_structured(rec.get("skills"))
                if names:
                    builder.offer_catalog(names, "init event")
            elif kind == "attachment":
                self._attachment(rec.get("attachment"), builder)
            elif kind == "assistant" and isinstance(rec.get("message"), dict):
                self._assistant(rec["message"], builder, agent, seen_ids)
            elif kind == "user" and isinstance(rec.get("message"), dict):
                slash = self._user(rec, builder, agent, slash)
            elif kind == "result":
                self._result(rec, builder)

    def _assistant(self, msg: dict[str, Any], builder: TrajectoryBuilder, agent: str | None, seen: set[str]) -> None:
        mid = msg.get("id")
        if not mid or mid not in seen:
            if mid:
                seen.add(mid)
            if agent is None:  # a sub-agent's turns are not the main agent's
                builder.assistant_turn()
            usage = msg.get("usage") or {}
            builder.add_usage(usage.get("input_tokens"), usage.get("output_tokens"), usage.get("cache_read_input_tokens"))
            builder.model = builder.model or msg.get("model")
        content = msg.get("content")
        for block in content if isinstance(content, list) else [content]:
            if isinstance(block, str):
                builder.message("assistant", block, agent=agent)
            elif isinstance(block, dict) and block.get("type") == "text":
                builder.message("assistant", block.get("text") or "", agent=agent)
            elif isinstance(block, dict) and block.get("type") == "tool_use":
                builder.tool_call(block.get("id"), str(block.get("name") or ""), block.get("input") or {}, agent=agent)

    def _user(self, rec: dict[str, Any], builder: TrajectoryBuilder, agent: str | None, slash: str | None) -> str | None:
        content = rec["message"].get("content")
        meta = bool(rec.get("isMeta") or rec.get("isSynthetic") or rec.get("isCompactSummary"))
        extra = rec.get("tool_use_result", rec.get("toolUseResult"))
        for block in content if isinstance(content, list) else [content]:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                self._tool_result(block, extra, builder)
                continue
            text = block if isinstance(block, str) else (block.get("text") if isinstance(block, dict) else None)
            if not isinstance(text, str) or not text.strip():
                continue
            base = _BASE_DIR.match(text)
            if base:
                body = text[base.end():].lstrip("\n")
                builder.attach_body(body, skill_dir=base.group(1).strip(), call_id=rec.get("sourceToolUseID"), slash_command=slash)
                slash = None
                continue
            command = _COMMAND_NAME.search(text)
            if command:
                slash = command.group(1)  # a built-in command (/clear) too: it counts only if a skill body follows
                builder.message("user", text, agent=agent, is_task=False)
                continue
            for reminder in _REMINDER.findall(text):
                builder.scan_catalog(reminder, "harness reminder")
            rest = _REMINDER.sub("", text).strip()
            if rest:
                builder.message("user", rest, agent=agent, is_task=not meta)
        return slash

    def _tool_result(self, block: dict[str, Any], extra: Any, builder: TrajectoryBuilder) -> None:
        text = _TOOL_ERROR.sub("", T.flatten(block.get("content"))).strip()
        failed = bool(block.get("is_error"))
        if isinstance(extra, dict) and extra.get("success") is False:
            failed = True
        call = builder.tool_result(block.get("tool_use_id"), text, is_error=failed, error=text if failed else None)
        if call is not None and isinstance(extra, dict) and isinstance(extra.get("commandName"), str):
            # What actually ran can differ from what was asked (a command shadowing the skill): keep both.
            for inv in builder.invocations:
                if inv.call_id == call.id and inv.key != extra["commandName"].strip().lstrip("/").casefold():
                    inv.detail = f"commandName={extra['commandName']}"

    def _attachment(self, att: Any, builder: TrajectoryBuilder) -> None:
        if isinstance(att, dict) and "skill" in str(att.get("type", "")).lower():
            names = parse_structured(att.get("skills"))
            if names:
                builder.offer_catalog(names, "harness reminder")
            builder.scan_catalog(T.flatten(att.get("content")), "harness reminder")

    def _result(self, rec: dict[str, Any], builder: TrajectoryBuilder) -> None:
        if isinstance(rec.get("result"), str):
            builder.final_answer = rec["result"]
        if isinstance(rec.get("num_turns"), int):
            builder.turns = rec["num_turns"]
        if isinstance(rec.get("total_cost_usd"), (int, float)):
            builder.cost_usd = float(rec["total_cost_usd"])
        if isinstance(rec.get("duration_ms"), (int, float)):
            builder.duration_ms = float(rec["duration_ms"])
        usage = rec.get("usage")
        if isinstance(usage, dict):  # the run's totals: authoritative over the per-message sum
            builder.usage = Usage(input_tokens=int(usage.get("input_tokens") or 0), output_tokens=int(usage.get("output_tokens") or 0),
                                  cached_input_tokens=int(usage.get("cache_read_input_tokens") or 0))
        if rec.get("is_error"):
            builder.notes.append(f"the run ended in error: {rec.get('subtype')}")
            subtype = str(rec.get("subtype") or "")
            builder.max_turns_reached = subtype == "error_max_turns"
            text = rec["result"] if isinstance(rec.get("result"), str) else ""
            builder.run_error = (text.strip() or subtype or "is_error")[:300]
        if isinstance(rec.get("api_error_status"), int):  # the model API call that ended the run failed with this HTTP status
            builder.api_error_status = rec["api_error_status"]
