"""OpenAI Chat Completions (``POST /v1/chat/completions``), as the openai SDK and OpenCode speak it.

OpenCode streams with ``stream_options.include_usage``; the usage then arrives in a final chunk
with an empty ``choices`` list, which is also where the proxy reads it.
"""

from __future__ import annotations

import time
from typing import Any

from pytest_skilleval.gateway.protocols import sse
from pytest_skilleval.gateway.protocols.base import NeutralRequest, Reply, Usage, WireProtocol, dumps, int_of, new_id, text_of

_ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error", 404: "not_found_error",
                429: "rate_limit_exceeded", 504: "timeout"}


def openai_error(status: int, message: str) -> dict[str, Any]:
    """The error shape both OpenAI APIs use; the SDK maps the HTTP status to its exception class."""
    return {"error": {"message": message, "type": _ERROR_TYPES.get(status, "server_error"), "param": None, "code": status}}


class OpenAIChat(WireProtocol):
    name = "openai-chat"
    family = "openai"

    def matches(self, path: str) -> bool:
        return path.endswith("/chat/completions")

    def parse(self, path: str, query: dict[str, str], body: dict[str, Any]) -> NeutralRequest:
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise ValueError("'messages' must be a list")
        results = tuple(text_of(m.get("content")) for m in messages if isinstance(m, dict) and m.get("role") == "tool")
        tools = tuple(str((t.get("function") or {}).get("name", "")) for t in body.get("tools") or [] if isinstance(t, dict))
        fmt = body.get("response_format")
        json_mode = isinstance(fmt, dict) and fmt.get("type") in ("json_object", "json_schema")
        return NeutralRequest(protocol=self.name, model=str(body.get("model", "")), stream=bool(body.get("stream")),
                              tools=tools, tool_results=results, json_mode=json_mode,
                              shape="usage" if (body.get("stream_options") or {}).get("include_usage") else "")

    @staticmethod
    def _usage(usage: Usage) -> dict[str, Any]:
        return {"prompt_tokens": usage.input_tokens, "completion_tokens": usage.output_tokens,
                "total_tokens": usage.input_tokens + usage.output_tokens,
                "prompt_tokens_details": {"cached_tokens": usage.cached_tokens}}

    @staticmethod
    def _calls(reply: Reply) -> list[dict[str, Any]]:
        return [{"id": c.id, "type": "function", "function": {"name": c.name, "arguments": dumps(c.arguments).decode("utf-8")}}
                for c in reply.tool_calls]

    def render_json(self, reply: Reply, request: NeutralRequest) -> Any:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = self._calls(reply)
        return {"id": new_id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()), "model": reply.model,
                "choices": [{"index": 0, "message": message, "logprobs": None,
                             "finish_reason": "tool_calls" if reply.tool_calls else "stop"}],
                "usage": self._usage(reply.usage)}

    def render_events(self, reply: Reply, request: NeutralRequest) -> list[bytes]:
        base = {"id": new_id("chatcmpl-"), "object": "chat.completion.chunk", "created": int(time.time()), "model": reply.model}

        def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
            return sse.encode({**base, "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}]})

        events = [chunk({"role": "assistant", "content": ""})]
        if reply.text:
            events.append(chunk({"content": reply.text}))
        for index, call in enumerate(self._calls(reply)):
            events.append(chunk({"tool_calls": [{"index": index, **call}]}))
        events.append(chunk({}, "tool_calls" if reply.tool_calls else "stop"))
        if request.shape == "usage":  # only when asked, as the real API does
            events.append(sse.encode({**base, "choices": [], "usage": self._usage(reply.usage)}))
        events.append(sse.encode("[DONE]"))
        return events

    def render_count(self, tokens: int) -> Any:
        return {"input_tokens": tokens}

    def error_body(self, status: int, message: str) -> Any:
        return openai_error(status, message)

    def stream_error(self, message: str) -> bytes:
        # A data-only event whose payload has an "error" object: the openai SDK raises APIError on it.
        return sse.encode(openai_error(502, message))

    def usage_from_json(self, body: Any) -> Usage:
        usage = body.get("usage") if isinstance(body, dict) else None
        if not isinstance(usage, dict):
            return Usage()
        return Usage(int_of(usage, "prompt_tokens"), int_of(usage, "completion_tokens"),
                     int_of(usage.get("prompt_tokens_details"), "cached_tokens"))

    def fold_usage(self, usage: Usage, event: str, data: Any) -> Usage:
        if isinstance(data, dict) and isinstance(data.get("usage"), dict):
            return self.usage_from_json(data)
        return usage

    def stream_finished(self, event: str, data: Any) -> bool:
        return bool(data == "[DONE]")
