"""OpenCode: ``opencode run --format json`` — one ``{type, timestamp, sessionID, part}`` per line.

Types: ``step_start``, ``text``, ``reasoning``, ``tool_use`` (emitted once the tool part is
``completed`` or ``error``, so call and result come together), ``step_finish`` (tokens, cost),
``error``, ``done``. The skill tool is ``skill{name}``; success output is
``<skill_content name="N">…body…</skill_content>``, an unknown skill is ``state.status: "error"`` with
"Skill "N" not found. Available skills: …". The ``<available_skills>`` catalog is in the system
prompt only: pass the gateway request log to recover it (reference §6.4; agent-clis.md §5).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pytest_skilleval.trajectory import text as T
from pytest_skilleval.trajectory.builder import TrajectoryBuilder
from pytest_skilleval.trajectory.registry import TrajectoryParser, sniff_objects

_TYPES = frozenset({"step_start", "step_finish", "text", "reasoning", "tool_use", "error", "done"})


class OpenCodeParser(TrajectoryParser):
    name = "opencode"
    aliases = ("opencode-ai", "sst-opencode")
    description = "OpenCode run --format json events"

    def sniff(self, first_lines: Sequence[str]) -> bool:
        return any(obj.get("type") in _TYPES and "sessionID" in obj for obj in sniff_objects(first_lines))

    def parse(self, records: Iterable[dict[str, Any]], builder: TrajectoryBuilder) -> None:
        builder.fmt = "run-json"
        first_ts = last_ts = None
        cost = 0.0
        for rec in records:
            ts = rec.get("timestamp")
            if isinstance(ts, (int, float)):
                first_ts, last_ts = first_ts if first_ts is not None else ts, ts
            builder.session_id = builder.session_id or rec.get("sessionID")
            part = T.as_dict(rec.get("part"))
            kind = rec.get("type")
            if kind == "step_start":
                builder.turns = (builder.turns or 0) + 1
            elif kind == "text":
                builder.message("assistant", str(part.get("text") or ""))
            elif kind == "tool_use":
                self._tool(part, builder)
            elif kind == "step_finish":
                tokens = T.as_dict(part.get("tokens"))
                cache = T.as_dict(tokens.get("cache"))
                builder.add_usage(tokens.get("input"), tokens.get("output"), cache.get("read"))
                if isinstance(part.get("cost"), (int, float)):
                    cost += float(part["cost"])
            elif kind == "error":
                err = rec.get("error")
                data = T.as_dict(T.as_dict(err).get("data"))
                builder.message("error", str(data.get("message") or T.flatten(err)))
        builder.cost_usd = round(cost, 9) if builder.turns else None
        if first_ts is not None and last_ts is not None:
            builder.duration_ms = float(last_ts - first_ts)  # no result event: derive it from the stamps (ms)

    def _tool(self, part: dict[str, Any], builder: TrajectoryBuilder) -> None:
        state = T.as_dict(part.get("state"))
        call_id = part.get("callID") or part.get("id")
        name = str(part.get("tool") or "")
        builder.tool_call(call_id, name, state.get("input") or {})
        status = state.get("status")
        if status not in ("completed", "error"):
            return  # pending/running: no outcome recorded
        output = T.flatten(state.get("output"))
        error = state.get("error") if isinstance(state.get("error"), str) else None
        builder.tool_result(call_id, output if output else (error or ""), status=status, error=error,
                            body=T.unwrap_skill_body(output) if output else None)
