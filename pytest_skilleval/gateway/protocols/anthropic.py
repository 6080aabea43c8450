"""Anthropic Messages API (``POST /v1/messages``), as the anthropic SDK and Claude Code speak it.

Claude Code always streams; its SSE parser expects the full event sequence below (an ``event:``
line on every event), and it accepts a reply without thinking blocks even when it asked for them.
"""

from __future__ import annotations

from typing import Any

from pytest_skilleval.gateway.protocols import sse
from pytest_skilleval.gateway.protocols.base import NeutralRequest, Reply, Usage, WireProtocol, dumps, int_of, new_id, text_of

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error", 403: "permission_error",
                404: "not_found_error", 413: "request_too_large", 429: "rate_limit_error", 504: "timeout_error",
                529: "overloaded_error"}


class AnthropicMessages(WireProtocol):
    name = "anthropic"
    family = "anthropic"
    tool_id_prefix = "toolu_"

    def matches(self, path: str) -> bool:
        return path.endswith("/messages") or path.endswith("/messages/count_tokens")

    def parse(self, path: str, query: dict[str, str], body: dict[str, Any]) -> NeutralRequest:
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise ValueError("'messages' must be a list")
        results: list[str] = []
        for message in messages:
            content = message.get("content") if isinstance(message, dict) else None
            if isinstance(content, list):
                results += [text_of(b.get("content")) for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]
        tools = tuple(str(t.get("name", "")) for t in body.get("tools") or [] if isinstance(t, dict))
        return NeutralRequest(protocol=self.name, model=str(body.get("model", "")), stream=bool(body.get("stream")),
                              tools=tools, tool_results=tuple(results),
                              kind="count_tokens" if path.endswith("/count_tokens") else "generate")

    @staticmethod
    def _blocks(reply: Reply) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": reply.text}] if reply.text else []
        blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments} for c in reply.tool_calls]
        return blocks

    @staticmethod
    def _usage(usage: Usage) -> dict[str, int]:
        return {"input_tokens": usage.input_tokens - usage.cached_tokens, "output_tokens": usage.output_tokens,
                "cache_read_input_tokens": usage.cached_tokens, "cache_creation_input_tokens": 0}

    def render_json(self, reply: Reply, request: NeutralRequest) -> Any:
        return {"id": new_id("msg_"), "type": "message", "role": "assistant", "model": reply.model,
                "content": self._blocks(reply), "stop_reason": "tool_use" if reply.tool_calls else "end_turn",
                "stop_sequence": None, "usage": self._usage(reply.usage)}

    def render_events(self, reply: Reply, request: NeutralRequest) -> list[bytes]:
        start_usage = {**self._usage(reply.usage), "output_tokens": 1}
        message: dict[str, Any] = {"id": new_id("msg_"), "type": "message", "role": "assistant", "model": reply.model, "content": [],
                   "stop_reason": None, "stop_sequence": None, "usage": start_usage}
        events = [sse.encode({"type": "message_start", "message": message}, "message_start")]
        for index, block in enumerate(self._blocks(reply)):
            if block["type"] == "text":
                opening: dict[str, Any] = {"type": "text", "text": ""}
                delta = {"type": "text_delta", "text": block["text"]}
            else:
                opening = {**block, "input": {}}
                delta = {"type": "input_json_delta", "partial_json": dumps(block["input"]).decode("utf-8")}
            events.append(sse.encode({"type": "content_block_start", "index": index, "content_block": opening}, "content_block_start"))
            events.append(sse.encode({"type": "content_block_delta", "index": index, "delta": delta}, "content_block_delta"))
            events.append(sse.encode({"type": "content_block_stop", "index": index}, "content_block_stop"))
        stop = "tool_use" if reply.tool_calls else "end_turn"
        events.append(sse.encode({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                                  "usage": {"output_tokens": reply.usage.output_tokens}}, "message_delta"))
        events.append(sse.encode({"type": "message_stop"}, "message_stop"))
        return events

    def render_count(self, tokens: int) -> Any:
        return {"input_tokens": tokens}

    def error_body(self, status: int, message: str) -> Any:
        kind = _ERROR_TYPES.get(status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": message}}

    def stream_error(self, message: str) -> bytes:
        return sse.encode({"type": "error", "error": {"type": "api_error", "message": message}}, "error")

    def usage_from_json(self, body: Any) -> Usage:
        usage = body.get("usage") if isinstance(body, dict) else None
        return self._read_usage(usage, Usage())

    @staticmethod
    def _read_usage(usage: Any, before: Usage) -> Usage:
        if not isinstance(usage, dict):
            return before
        cached = int_of(usage, "cache_read_input_tokens")
        fresh = int_of(usage, "input_tokens") + int_of(usage, "cache_creation_input_tokens")
        # message_delta usage may carry only output_tokens: keep what message_start told us.
        has_input = any(k in usage for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))
        return Usage(input_tokens=fresh + cached if has_input else before.input_tokens,
                     output_tokens=int_of(usage, "output_tokens") if "output_tokens" in usage else before.output_tokens,
                     cached_tokens=cached if has_input else before.cached_tokens)

    def fold_usage(self, usage: Usage, event: str, data: Any) -> Usage:
        if not isinstance(data, dict):
            return usage
        if data.get("type") == "message_start":
            return self._read_usage((data.get("message") or {}).get("usage"), usage)
        if data.get("type") == "message_delta":
            return self._read_usage(data.get("usage"), usage)
        return usage

    def stream_finished(self, event: str, data: Any) -> bool:
        return isinstance(data, dict) and data.get("type") == "message_stop"
