"""OpenHands (software-agent-sdk): serialized events, and the older v0 ``action``/``observation`` stream.

SDK events are discriminated by ``kind``: ``SystemPromptEvent{system_prompt}``,
``MessageEvent{source, llm_message{role, content}}``, ``ActionEvent{tool_name, tool_call_id, action{kind, …}}``,
``ObservationEvent{tool_call_id, observation{kind, content, is_error}}``, ``AgentErrorEvent{error}``.
A skill load is ``InvokeSkillAction{name}`` (tool ``invoke_skill``) answered by an
``InvokeSkillObservation``; the flat form ``{"kind": "InvokeSkillAction", "name": …}`` is accepted too
(reference §2.3e). Shell and file-view actions go through the generic SKILL.md read rule.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pytest_skilleval.trajectory import blocks
from pytest_skilleval.trajectory import text as T
from pytest_skilleval.trajectory.builder import TrajectoryBuilder
from pytest_skilleval.trajectory.registry import TrajectoryParser, sniff_objects

_EVENT_KINDS = frozenset({"SystemPromptEvent", "MessageEvent", "ActionEvent", "ObservationEvent", "AgentErrorEvent",
                          "UserRejectObservation", "PauseEvent", "ConversationStateUpdateEvent"})
_V0_ACTIONS = {"run": "execute_bash", "read": "view", "edit": "file_editor", "write": "file_editor"}


def _action_call(action: dict[str, Any], tool_name: str | None) -> tuple[str, dict[str, Any]]:
    """(tool name, arguments) of an SDK action, named the way the builder's tool tables know."""
    kind = str(action.get("kind") or "")
    args = {k: v for k, v in action.items() if k != "kind"}
    if kind == "InvokeSkillAction":
        return "invoke_skill", {"name": action.get("name") or action.get("skill_name")}
    if "Bash" in kind or kind in ("TerminalAction", "CmdRunAction"):
        return "execute_bash", {"command": action.get("command")}
    if kind in ("FileEditorAction", "StrReplaceEditorAction"):
        # Only `view` reads; create / str_replace / insert write the file.
        return ("view" if action.get("command") == "view" else "file_editor"), args
    return tool_name or kind or "action", args


def _observation(builder: TrajectoryBuilder, call_id: str | None, obs: dict[str, Any]) -> None:
    content = obs.get("content", obs.get("output"))
    meta = T.as_dict(obs.get("metadata"))
    code = obs.get("exit_code", meta.get("exit_code"))
    builder.tool_result(call_id, T.flatten(content), is_error=bool(obs.get("is_error")), error=blocks.result_error(obs),
                        exit_code=code if isinstance(code, int) and code >= 0 else None)


class OpenHandsParser(TrajectoryParser):
    name = "openhands"
    aliases = ("openhands-sdk", "all-hands")
    description = "OpenHands SDK events (InvokeSkillAction) and v0 action/observation streams"

    def sniff(self, first_lines: Sequence[str]) -> bool:
        for obj in sniff_objects(first_lines):
            kind = str(obj.get("kind", ""))
            if kind in _EVENT_KINDS or kind.startswith("InvokeSkill"):
                return True
            if isinstance(obj.get("action"), str) and "source" in obj and isinstance(obj.get("args"), dict):
                return True
        return False

    def parse(self, records: Iterable[dict[str, Any]], builder: TrajectoryBuilder) -> None:
        builder.fmt = "events"
        for rec in records:
            kind = rec.get("kind")
            call_id = rec.get("tool_call_id") or rec.get("id")
            if kind == "SystemPromptEvent":
                builder.message("system", T.flatten(rec.get("system_prompt")))
            elif kind == "MessageEvent":
                msg = T.as_dict(rec.get("llm_message"))
                role = "user" if rec.get("source") == "user" else str(msg.get("role") or "assistant")
                builder.message(role, T.flatten(msg.get("content")))
                if role == "assistant":
                    builder.assistant_turn()
            elif kind == "ActionEvent" and isinstance(rec.get("action"), dict):
                self._action(rec["action"], rec.get("tool_call_id"), rec.get("tool_name"), builder)
            elif kind == "ObservationEvent" and isinstance(rec.get("observation"), dict):
                _observation(builder, rec.get("tool_call_id"), rec["observation"])
            elif kind == "AgentErrorEvent":
                builder.tool_result(rec.get("tool_call_id"), str(rec.get("error") or ""), is_error=True, error=str(rec.get("error") or ""))
            elif kind == "InvokeSkillAction":
                self._action(rec, call_id, None, builder)
            elif kind == "InvokeSkillObservation":
                _observation(builder, rec.get("tool_call_id"), rec)  # its own `id` is not the action's
            elif "role" in rec and not kind:  # plain chat messages interleaved with flat actions
                blocks.feed_message(builder, rec)
            elif isinstance(rec.get("action"), str):
                self._v0_action(rec, builder)
            elif isinstance(rec.get("observation"), str):
                extras = T.as_dict(rec.get("extras"))
                code = extras.get("exit_code")
                builder.tool_result(str(rec["cause"]) if rec.get("cause") is not None else None, str(rec.get("content") or ""),
                                    is_error=rec["observation"] == "error", exit_code=code if isinstance(code, int) else None)

    def _action(self, action: dict[str, Any], call_id: Any, tool_name: Any, builder: TrajectoryBuilder) -> None:
        if action.get("kind") == "FinishAction":
            builder.final_answer = str(action.get("message") or "")
            return
        name, args = _action_call(action, tool_name if isinstance(tool_name, str) else None)
        builder.tool_call(str(call_id) if call_id is not None else None, name, args)
        builder.assistant_turn()

    def _v0_action(self, rec: dict[str, Any], builder: TrajectoryBuilder) -> None:
        action, args = rec["action"], rec.get("args") or {}
        if action == "message":
            builder.message("user" if rec.get("source") == "user" else "assistant", str(args.get("content") or rec.get("message") or ""))
        elif action == "finish":
            builder.final_answer = str(args.get("final_thought") or args.get("outputs") or rec.get("message") or "")
        elif action == "system":
            builder.message("system", str(args.get("content") or ""))
        else:
            builder.tool_call(str(rec.get("id")) if rec.get("id") is not None else None, _V0_ACTIONS.get(action, action), args)
