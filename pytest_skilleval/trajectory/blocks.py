"""The message shapes many harnesses share, fed into a builder.

* Anthropic content blocks: ``{type: text | tool_use | tool_result}``;
* Bedrock / Strands: ``{text}``, ``{toolUse: {toolUseId, name, input}}``, ``{toolResult: {toolUseId, status, content}}``;
* Google (Gemini, ADK): ``{role: user | model, parts: [{text} | {functionCall | function_call} | {functionResponse | function_response}]}``;
* OpenAI Chat: ``{role: assistant, tool_calls: [{id, function: {name, arguments}}]}`` and ``{role: tool, tool_call_id, content}``;
* OpenAI Responses items: ``{type: message | function_call | function_call_output}``.

Parsers of specific harnesses use these for their message payloads and add what is their own.
"""

from __future__ import annotations

from typing import Any

from pytest_skilleval.trajectory import text as T
from pytest_skilleval.trajectory.builder import TrajectoryBuilder

_TEXT_TYPES = frozenset({"text", "input_text", "output_text"})
_ITEM_TYPES = frozenset({"function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output"})


def result_error(payload: Any) -> str | None:
    """A harness ``error`` string at the top level or under ``response``/``result`` (reference §1.3)."""
    for node in (payload, *(payload.get(k) for k in ("response", "result") if isinstance(payload, dict))):
        if isinstance(node, dict):
            err = node.get("error")
            if isinstance(err, dict):
                err = err.get("message") or T.flatten(err)
            if isinstance(err, str) and err.strip():
                return err.strip()
    return None


def feed_response(builder: TrajectoryBuilder, call_id: str | None, name: str | None, response: Any) -> None:
    """A Google ``functionResponse``: ADK's ``{instructions}``, an ``{error}``, or Gemini's ``{output}``."""
    error = result_error(response)
    text = T.flatten(response)
    # `{"status": "loaded", "path": …}` (OpenAI Agents' load_skill) acknowledges; only a text field carries a body.
    has_text = not isinstance(response, dict) or any(k in response for k in T.TEXT_KEYS)
    body: str | None | bool = T.unwrap_skill_body(text) if text and has_text else None
    status = response.get("status") if isinstance(response, dict) and isinstance(response.get("status"), str) else None
    builder.tool_result(call_id, response if isinstance(response, dict) else text, error=error, status=status, body=body)


def feed_block(builder: TrajectoryBuilder, role: str, block: Any, *, agent: str | None = None) -> None:
    if isinstance(block, str):
        builder.message(role, block, agent=agent)
        return
    if not isinstance(block, dict):
        return
    kind = block.get("type")
    if kind in _TEXT_TYPES or (kind is None and isinstance(block.get("text"), str) and len(block) <= 2):
        builder.message(role, block.get("text") or "", agent=agent)
    elif kind == "tool_use":
        builder.tool_call(block.get("id"), str(block.get("name") or ""), block.get("input") or {}, agent=agent)
    elif kind == "tool_result":
        builder.tool_result(block.get("tool_use_id"), T.flatten(block.get("content")), is_error=bool(block.get("is_error")),
                            error=result_error(block))
    elif "toolUse" in block and isinstance(block["toolUse"], dict):
        use = block["toolUse"]
        builder.tool_call(use.get("toolUseId"), str(use.get("name") or ""), use.get("input") or {}, agent=agent)
    elif "toolResult" in block and isinstance(block["toolResult"], dict):
        res = block["toolResult"]
        builder.tool_result(res.get("toolUseId"), T.flatten(res.get("content")), status=res.get("status"), error=result_error(res))
    elif T.as_dict(block.get("functionCall") or block.get("function_call")):  # Google: camelCase or snake_case
        fc = T.as_dict(block.get("functionCall") or block.get("function_call"))
        builder.tool_call(fc.get("id"), str(fc.get("name") or ""), fc.get("args") or {}, agent=agent)
    elif T.as_dict(block.get("functionResponse") or block.get("function_response")):
        fr = T.as_dict(block.get("functionResponse") or block.get("function_response"))
        feed_response(builder, fr.get("id"), fr.get("name"), fr.get("response"))
    elif kind in _ITEM_TYPES:
        feed_item(builder, block, agent=agent)


def feed_item(builder: TrajectoryBuilder, item: dict[str, Any], *, agent: str | None = None) -> bool:
    """An OpenAI Responses item. Returns False when it is not one."""
    kind = item.get("type")
    if kind in ("function_call", "custom_tool_call"):
        builder.tool_call(item.get("call_id") or item.get("id"), str(item.get("name") or ""),
                          item.get("arguments", item.get("input", {})), agent=agent)
    elif kind in ("function_call_output", "custom_tool_call_output"):
        out = item.get("output")
        builder.tool_result(item.get("call_id"), T.flatten(out), error=result_error(out) if isinstance(out, dict) else None)
    elif kind == "message":
        feed_message(builder, item, agent=agent)
    else:
        return False
    return True


def feed_message(builder: TrajectoryBuilder, msg: dict[str, Any], *, agent: str | None = None) -> bool:
    """One message in any of the shapes above. Returns False when ``msg`` is none of them."""
    if msg.get("type") in _ITEM_TYPES:
        return feed_item(builder, msg, agent=agent)
    for key in ("system_prompt", "systemInstruction", "system_instruction"):
        if key in msg and msg[key]:
            system = msg[key]
            parts = system.get("parts", system) if isinstance(system, dict) else system
            for block in parts if isinstance(parts, list) else [parts]:
                builder.message("system", block if isinstance(block, str) else T.flatten(block), agent=agent)
    role = msg.get("role")
    if not isinstance(role, str):
        return any(k in msg for k in ("system_prompt", "systemInstruction", "system_instruction"))
    role = "assistant" if role == "model" else role
    if role == "tool":  # OpenAI Chat tool result
        builder.tool_result(msg.get("tool_call_id"), T.flatten(msg.get("content")), error=result_error(msg))
        return True
    content = msg.get("content", msg.get("parts"))
    if role == "assistant":
        builder.assistant_turn()
    for block in content if isinstance(content, list) else [content] if content else []:
        feed_block(builder, role, block, agent=agent)
    for tc in msg.get("tool_calls") or []:
        if isinstance(tc, dict):
            fn = T.as_dict(tc.get("function")) or tc
            builder.tool_call(tc.get("id"), str(fn.get("name") or ""), fn.get("arguments", {}), agent=agent)
    return True
