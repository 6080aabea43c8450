"""Gemini CLI: ``gemini -p --output-format stream-json`` events, and Gemini ``contents`` histories.

Stream events (reference §6.3; agent-clis.md §6): ``init{session_id, model}``, ``message{role,
content, delta?}``, ``tool_use{tool_name, tool_id, parameters}``, ``tool_result{tool_id, status,
output?, error?{type, message}}``, ``error``, ``result{status, stats}``. ``tool_result.output`` is the
*display* string: for ``activate_skill`` it is "Skill **N** activated…", for ``read_file`` it is
empty. The stream never carries bodies, so a successful ``activate_skill`` is loaded without a body and
a successful read of SKILL.md counts on its status (``bodies_recorded = False``).

A history of ``{role: user | model, parts: [...]}`` (a saved chat, or the request's ``contents``) has
``functionResponse.response.output = "<activated_skill><instructions>body…"``, and
``systemInstruction`` holds the ``<available_skills>`` catalog.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pytest_skilleval.trajectory import blocks
from pytest_skilleval.trajectory import text as T
from pytest_skilleval.trajectory.builder import TrajectoryBuilder
from pytest_skilleval.trajectory.model import Usage
from pytest_skilleval.trajectory.registry import TrajectoryParser, sniff_objects

_STREAM = frozenset({"init", "message", "tool_use", "tool_result", "error", "result"})


class GeminiCliParser(TrajectoryParser):
    name = "gemini-cli"
    aliases = ("gemini", "google-gemini-cli")
    description = "Gemini CLI stream-json events and Gemini contents histories"
    bodies_recorded = False

    def sniff(self, first_lines: Sequence[str]) -> bool:
        for obj in sniff_objects(first_lines):
            kind = obj.get("type")
            if kind in _STREAM and ("tool_name" in obj or "tool_id" in obj or (kind == "init" and "session_id" in obj)):
                return True
            if kind == "message" and obj.get("role") in ("user", "assistant") and "timestamp" in obj and "content" in obj:
                return True
            if "systemInstruction" in obj or (obj.get("role") == "model" and "parts" in obj and "author" not in obj):
                return True
        return False

    def parse(self, records: Iterable[dict[str, Any]], builder: TrajectoryBuilder) -> None:
        pending_text: list[str] = []  # assistant deltas arrive in chunks: one message per run of them

        def flush() -> None:
            if pending_text:
                builder.message("assistant", "".join(pending_text))
                builder.assistant_turn()
                pending_text.clear()

        for rec in records:
            kind = rec.get("type")
            if kind in _STREAM and not ("parts" in rec and "role" in rec):
                builder.fmt = builder.fmt or "stream-json"
                if kind == "message" and rec.get("role") == "assistant":
                    pending_text.append(str(rec.get("content") or ""))
                    if not rec.get("delta"):
                        flush()
                    continue
                flush()
                self._event(kind, rec, builder)
            else:
                flush()
                builder.fmt = builder.fmt or "contents"
                blocks.feed_message(builder, rec)
        flush()

    def _event(self, kind: Any, rec: dict[str, Any], builder: TrajectoryBuilder) -> None:
        if kind == "init":
            builder.session_id, builder.model = rec.get("session_id"), rec.get("model")
        elif kind == "message":
            builder.message(str(rec.get("role") or "user"), str(rec.get("content") or ""))
        elif kind == "tool_use":
            builder.tool_call(rec.get("tool_id"), str(rec.get("tool_name") or ""), rec.get("parameters") or {})
        elif kind == "tool_result":
            err = T.as_dict(rec.get("error"))
            output = T.flatten(rec.get("output"))
            builder.tool_result(rec.get("tool_id"), output or str(err.get("message") or ""), status=rec.get("status"),
                                error=err.get("message") if isinstance(err.get("message"), str) else None, body=None)
        elif kind == "error":
            builder.message("error", str(rec.get("message") or ""))
        elif kind == "result":
            stats = T.as_dict(rec.get("stats"))
            builder.usage = Usage(input_tokens=int(stats.get("input_tokens") or 0), output_tokens=int(stats.get("output_tokens") or 0),
                                  cached_input_tokens=int(stats.get("cached") or 0))
            if isinstance(stats.get("duration_ms"), (int, float)):
                builder.duration_ms = float(stats["duration_ms"])
            if rec.get("status") not in (None, "success"):
                builder.notes.append(f"the run ended with status {rec.get('status')}: {T.flatten(rec.get('error'))}")
                builder.run_error = f"status {rec.get('status')}: {T.flatten(rec.get('error'))}"[:300]
                builder.max_turns_reached = "max" in builder.run_error.lower() and "turn" in builder.run_error.lower()

