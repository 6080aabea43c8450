"""Codex CLI: ``codex exec --json`` events and session rollouts (``~/.codex/sessions/…/rollout-*.jsonl``).

Codex has no skill tool: a load is a shell read of ``…/SKILL.md`` (``cat``, ``sed -n``, ``head``,
pipes — never a write or ``sed -i``; see ``shell.py``), counted only when the read returned text.
A user's ``$skill`` mention makes Codex inject ``<skill><name/><path/>body</skill>`` into the
conversation: that is a user-triggered load. The catalog is the ``<skills_instructions>`` developer
message; ``exec --json`` does not show it (pass the request log), rollouts do.

exec --json: ``thread.started``, ``turn.started``, ``turn.completed{usage}``, ``turn.failed``,
``item.started|updated|completed{item}`` with ``command_execution{command, aggregated_output,
exit_code, status}``, ``agent_message``, ``file_change``, ``mcp_tool_call``, ``error``.
Rollout: ``{timestamp, type, payload}`` with ``session_meta``, ``turn_context``, ``response_item``
(``message``, ``function_call``, ``function_call_output``, ``local_shell_call``), ``event_msg``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pytest_skilleval.trajectory import blocks
from pytest_skilleval.trajectory import text as T
from pytest_skilleval.trajectory.builder import TrajectoryBuilder
from pytest_skilleval.trajectory.model import Usage
from pytest_skilleval.trajectory.registry import TrajectoryParser, sniff_objects

_EXEC_TYPES = re.compile(r"^(thread|turn|item)\.")
_ROLLOUT_TYPES = frozenset({"session_meta", "turn_context", "response_item", "event_msg", "compacted"})
# "Chunk ID: …\nWall time: …\nProcess exited with code N\n…\nOutput:\n<text>"
_PREAMBLE = re.compile(r"\A(?:[A-Z][\w ]*: [^\n]*\n)*?Process exited with code (-?\d+)\n(?:[A-Z][\w ]*: [^\n]*\n)*?Output:\n", re.S)
_INJECTED = re.compile(r"<skill>\s*<name>(.*?)</name>\s*(?:<path>(.*?)</path>)?\s*(.*?)</skill>", re.S)
_MENTION = re.compile(r"(?<![\w$])\$([A-Za-z0-9][\w.:-]*)")
_CONTEXT = re.compile(r"^\s*<(environment_context|user_instructions|permissions|skills_instructions|INSTRUCTIONS)\b|^\s*# AGENTS\.md", re.I)


def _output(raw: Any) -> tuple[str, int | None, str | None]:
    """A function_call_output: (text, exit code, error). Two generations of format are in the wild."""
    if isinstance(raw, str):
        decoded = T.decode_json_string(raw) if raw.lstrip().startswith("{") else None
        if isinstance(decoded, dict) and "output" in decoded:  # older: {"output", "metadata": {"exit_code"}}
            meta = T.as_dict(decoded.get("metadata"))
            code = meta.get("exit_code")
            return T.flatten(decoded["output"]), code if isinstance(code, int) else None, None
        m = _PREAMBLE.match(raw)
        if m:
            return raw[m.end():], int(m.group(1)), None
        return raw, None, None
    if isinstance(raw, dict):
        return T.flatten(raw), None, blocks.result_error(raw)
    return T.flatten(raw), None, None


class CodexParser(TrajectoryParser):
    name = "codex"
    aliases = ("codex-cli", "openai-codex")
    description = "Codex CLI exec --json events and session rollout files"

    def sniff(self, first_lines: Sequence[str]) -> bool:
        for obj in sniff_objects(first_lines):
            kind = str(obj.get("type", ""))
            if _EXEC_TYPES.match(kind) or (kind in _ROLLOUT_TYPES and "payload" in obj):
                return True
        return False

    def parse(self, records: Iterable[dict[str, Any]], builder: TrajectoryBuilder) -> None:
        first_ts = last_ts = None
        started: set[str] = set()  # items whose call is already recorded by item.started
        for rec in records:
            kind = str(rec.get("type", ""))
            stamp = _timestamp(rec.get("timestamp"))
            if stamp is not None:
                first_ts, last_ts = first_ts or stamp, stamp
            if "payload" in rec and kind in _ROLLOUT_TYPES:
                builder.fmt = builder.fmt or "rollout"
                self._rollout(kind, rec.get("payload") or {}, builder)
            else:
                builder.fmt = builder.fmt or "exec-json"
                self._exec(kind, rec, builder, started)
        if first_ts is not None and last_ts is not None and builder.duration_ms is None:
            builder.duration_ms = round((last_ts - first_ts) * 1000, 3)

    # -- exec --json --------------------------------------------------------------------------------
    def _exec(self, kind: str, rec: dict[str, Any], builder: TrajectoryBuilder, started: set[str]) -> None:
        if kind == "thread.started":
            builder.session_id = rec.get("thread_id")
        elif kind == "turn.started":
            builder.turns = (builder.turns or 0) + 1
        elif kind == "turn.completed" and isinstance(rec.get("usage"), dict):
            u = rec["usage"]
            builder.add_usage(u.get("input_tokens"), u.get("output_tokens"), u.get("cached_input_tokens"))
        elif kind in ("turn.failed", "error"):
            err = rec.get("error", rec)
            text = T.flatten(err.get("message") if isinstance(err, dict) else err)
            builder.message("error", text)
            if kind == "turn.failed":  # "error" events include retry notices; a failed turn ends the run
                builder.run_error = (text or "turn.failed")[:300]
        elif kind == "item.completed" and isinstance(rec.get("item"), dict):
            self._item(rec["item"], builder, started)
        elif kind == "item.started" and isinstance(rec.get("item"), dict) and rec["item"].get("type") == "command_execution":
            # A command the run never finished still shows in the trajectory, without a result.
            item = rec["item"]
            builder.tool_call(item.get("id"), "shell", {"command": item.get("command") or ""})
            started.add(str(item.get("id")))

    def _item(self, item: dict[str, Any], builder: TrajectoryBuilder, started: set[str]) -> None:
        kind = item.get("type") or item.get("item_type")  # very early builds used item_type
        iid = item.get("id")
        if kind == "agent_message":
            builder.message("assistant", item.get("text") or "")
            builder.assistant_turn()
        elif kind == "command_execution":
            if str(iid) not in started:
                builder.tool_call(iid, "shell", {"command": item.get("command") or ""})
            code = item.get("exit_code")
            builder.tool_result(iid, item.get("aggregated_output") or "", status=item.get("status"),
                                exit_code=code if isinstance(code, int) else None)
        elif kind == "file_change":
            builder.tool_call(iid, "apply_patch", {"changes": item.get("changes") or []})  # a write: never a load
            builder.tool_result(iid, "", status=item.get("status"))
        elif kind == "mcp_tool_call":
            name = f"{item.get('server')}.{item.get('tool')}" if item.get("server") else str(item.get("tool") or "mcp")
            builder.tool_call(iid, name, item.get("arguments") or {})
            builder.tool_result(iid, T.flatten(item.get("result")), error=blocks.result_error(item), status=item.get("status"))
        elif kind == "error":
            builder.message("error", str(item.get("message") or ""))

    # -- rollout ------------------------------------------------------------------------------------
    def _rollout(self, kind: str, p: dict[str, Any], builder: TrajectoryBuilder) -> None:
        ptype = p.get("type")
        if kind == "session_meta":
            builder.session_id = p.get("id") or builder.session_id
            if isinstance(p.get("instructions"), str):
                builder.message("system", p["instructions"])
        elif kind == "turn_context":
            builder.turns = (builder.turns or 0) + 1
            builder.model = p.get("model") or builder.model
        elif kind == "event_msg":
            if ptype == "user_message" and isinstance(p.get("message"), str):
                builder.task = builder.task or p["message"].strip() or None
            elif ptype == "token_count" and isinstance(p.get("info"), dict):
                total = p["info"].get("total_token_usage") or {}
                builder.usage = Usage(input_tokens=int(total.get("input_tokens") or 0), output_tokens=int(total.get("output_tokens") or 0),
                                      cached_input_tokens=int(total.get("cached_input_tokens") or 0))
            elif ptype == "task_complete" and isinstance(p.get("last_agent_message"), str):
                builder.final_answer = p["last_agent_message"]
        elif kind == "response_item":
            if ptype == "message":
                self._message(p, builder)
            elif ptype == "function_call":
                builder.tool_call(p.get("call_id"), str(p.get("name") or ""), T.decode_json_string(p.get("arguments")))
            elif ptype == "local_shell_call":
                action = T.as_dict(p.get("action"))
                builder.tool_call(p.get("call_id") or p.get("id"), "local_shell", {"command": action.get("command") or ""})
            elif ptype in ("function_call_output", "local_shell_call_output"):
                text, code, error = _output(p.get("output"))
                builder.tool_result(p.get("call_id"), text, exit_code=code, error=error)
            elif ptype in ("custom_tool_call", "custom_tool_call_output"):
                blocks.feed_item(builder, p)

    def _message(self, p: dict[str, Any], builder: TrajectoryBuilder) -> None:
        role = str(p.get("role") or "user")
        content = p.get("content")
        # One item per context block (environment, instructions, the prompt): classify each on its own.
        chunks = [T.flatten(c) for c in content] if isinstance(content, list) else [T.flatten(content)]
        for chunk in chunks:
            for m in _INJECTED.finditer(chunk):
                builder.mention(m.group(1).strip(), detail="$mention", body=m.group(3).strip() or None,
                                path=(m.group(2) or "").strip() or None)
            if role == "user" and not _INJECTED.search(chunk) and not _CONTEXT.match(chunk):
                offered = {s.name.casefold() for s in builder.catalog.skills}
                for name in _MENTION.findall(chunk):  # `$greet` is a mention only of an offered skill, not of `$HOME`
                    if name.casefold() in offered:
                        builder.mention(name, detail="$mention")
            if role == "assistant":
                builder.assistant_turn()
            builder.message(role, chunk, is_task=not (_CONTEXT.match(chunk) or _INJECTED.search(chunk)))


def _timestamp(value: Any) -> float | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
