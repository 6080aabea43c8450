"""OpenAI Responses API (``POST /v1/responses``), as the openai SDK and Codex speak it.

Codex 0.171 speaks only this API (``wire_api="chat"`` is rejected). The stream below is the full
item lifecycle (added → part → delta → done → completed) because the SDK's stream accumulator
checks it strictly: a delta for an item that was never added is an error there.
"""

from __future__ import annotations

import time
from typing import Any

from pytest_skilleval.gateway.protocols import sse
from pytest_skilleval.gateway.protocols.base import NeutralRequest, Reply, Usage, WireProtocol, dumps, int_of, new_id, text_of
from pytest_skilleval.gateway.protocols.openai_chat import openai_error


class OpenAIResponses(WireProtocol):
    name = "openai-responses"
    family = "openai"

    def matches(self, path: str) -> bool:
        return path.endswith("/responses")

    def parse(self, path: str, query: dict[str, str], body: dict[str, Any]) -> NeutralRequest:
        items = body.get("input")
        if not isinstance(items, (list, str)):
            raise ValueError("'input' must be a string or a list")
        results: tuple[str, ...] = ()
        if isinstance(items, list):
            # function_call_output, custom_tool_call_output, local_shell_call_output, ...
            results = tuple(text_of(i.get("output")) for i in items if isinstance(i, dict) and str(i.get("type", "")).endswith("_call_output"))
        tools = tuple(str(t.get("name") or t.get("type") or "") for t in body.get("tools") or [] if isinstance(t, dict))
        fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
        json_mode = isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema")
        return NeutralRequest(protocol=self.name, model=str(body.get("model", "")), stream=bool(body.get("stream")),
                              tools=tools, tool_results=results, json_mode=json_mode)

    @staticmethod
    def _usage(usage: Usage) -> dict[str, Any]:
        return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
                "total_tokens": usage.input_tokens + usage.output_tokens,
                "input_tokens_details": {"cached_tokens": usage.cached_tokens},
                "output_tokens_details": {"reasoning_tokens": 0}}

    @staticmethod
    def _items(reply: Reply) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        if reply.text:
            items.append({"id": new_id("msg_"), "type": "message", "status": "completed", "role": "assistant",
                          "content": [{"type": "output_text", "text": reply.text, "annotations": []}]})
        items += [{"id": new_id("fc_"), "type": "function_call", "status": "completed", "call_id": c.id, "name": c.name,
                   "arguments": dumps(c.arguments).decode("utf-8")} for c in reply.tool_calls]
        return items

    def _response(self, reply: Reply, rid: str, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
        return {"id": rid, "object": "response", "created_at": int(time.time()), "status": status, "model": reply.model,
                "output": output, "parallel_tool_calls": True, "tool_choice": "auto", "tools": [], "error": None,
                "incomplete_details": None, "usage": self._usage(reply.usage) if status == "completed" else None}

    def render_json(self, reply: Reply, request: NeutralRequest) -> Any:
        return self._response(reply, new_id("resp_"), "completed", self._items(reply))

    def render_events(self, reply: Reply, request: NeutralRequest) -> list[bytes]:
        rid, items, seq = new_id("resp_"), self._items(reply), iter(range(1_000_000))
        events: list[bytes] = []

        def emit(kind: str, **fields: Any) -> None:
            events.append(sse.encode({"type": kind, "sequence_number": next(seq), **fields}, kind))

        emit("response.created", response=self._response(reply, rid, "in_progress", []))
        for index, item in enumerate(items):
            ident = {"item_id": item["id"], "output_index": index}
            if item["type"] == "message":
                text = item["content"][0]["text"]
                emit("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "content": []})
                emit("response.content_part.added", **ident, content_index=0, part={"type": "output_text", "text": "", "annotations": []})
                emit("response.output_text.delta", **ident, content_index=0, delta=text, logprobs=[])
                emit("response.output_text.done", **ident, content_index=0, text=text, logprobs=[])
                emit("response.content_part.done", **ident, content_index=0, part=item["content"][0])
            else:
                emit("response.output_item.added", output_index=index, item={**item, "status": "in_progress", "arguments": ""})
                emit("response.function_call_arguments.delta", **ident, delta=item["arguments"])
                emit("response.function_call_arguments.done", **ident, name=item["name"], arguments=item["arguments"])
            emit("response.output_item.done", output_index=index, item=item)
        emit("response.completed", response=self._response(reply, rid, "completed", items))
        return events

    def render_count(self, tokens: int) -> Any:
        return {"object": "response.input_tokens", "input_tokens": tokens}

    def error_body(self, status: int, message: str) -> Any:
        return openai_error(status, message)

    def stream_error(self, message: str) -> bytes:
        # The documented "error" event, plus an "error" object: that is what makes the SDK raise APIError.
        body = openai_error(502, message)
        return sse.encode({"type": "error", "code": "upstream_error", "message": message, "param": None, **body}, "error")

    def usage_from_json(self, body: Any) -> Usage:
        usage = body.get("usage") if isinstance(body, dict) else None
        if not isinstance(usage, dict):
            return Usage()
        return Usage(int_of(usage, "input_tokens"), int_of(usage, "output_tokens"),
                     int_of(usage.get("input_tokens_details"), "cached_tokens"))

    def fold_usage(self, usage: Usage, event: str, data: Any) -> Usage:
        if isinstance(data, dict) and self.stream_finished(event, data):
            found = self.usage_from_json(data.get("response"))
            return found if found != Usage() else usage
        return usage

    def stream_finished(self, event: str, data: Any) -> bool:
        return isinstance(data, dict) and data.get("type") in ("response.completed", "response.incomplete", "response.failed")
