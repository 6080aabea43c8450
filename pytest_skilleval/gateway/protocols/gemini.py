"""Gemini ``generateContent`` / ``streamGenerateContent`` / ``countTokens``, as Gemini CLI speaks it.

The model name is in the path, not the body. ``streamGenerateContent?alt=sse`` is SSE (what the
CLI uses); without ``alt=sse`` the API streams one JSON array, which we render as such.
"""

from __future__ import annotations

import re
from typing import Any

from pytest_skilleval.gateway.protocols import sse
from pytest_skilleval.gateway.protocols.base import NeutralRequest, Reply, Usage, WireProtocol, int_of, new_id, text_of

_PATH = re.compile(r"/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent|countTokens)$")
_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
           429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 502: "UNAVAILABLE", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}


class Gemini(WireProtocol):
    name = "gemini"
    family = "gemini"
    tool_id_prefix = "fc_"

    def matches(self, path: str) -> bool:
        return _PATH.search(path) is not None

    def parse(self, path: str, query: dict[str, str], body: dict[str, Any]) -> NeutralRequest:
        found = _PATH.search(path)
        if found is None:
            raise ValueError(f"not a Gemini model path: {path}")
        method = found.group("method")
        contents = body.get("contents") or []
        if not isinstance(contents, list):
            raise ValueError("'contents' must be a list")
        results: list[str] = []
        for content in contents:
            for part in (content.get("parts") or []) if isinstance(content, dict) else []:
                response = part.get("functionResponse") if isinstance(part, dict) else None
                if isinstance(response, dict):
                    results.append(text_of(response.get("response")))
        tools = tuple(str(d.get("name", "")) for t in body.get("tools") or [] if isinstance(t, dict)
                      for d in (t.get("functionDeclarations") or t.get("function_declarations") or []) if isinstance(d, dict))
        config = body.get("generationConfig") or {}
        json_mode = isinstance(config, dict) and config.get("responseMimeType") == "application/json"
        streaming = method == "streamGenerateContent"
        return NeutralRequest(protocol=self.name, model=found.group("model"), stream=streaming and query.get("alt") == "sse",
                              tools=tools, tool_results=tuple(results), json_mode=json_mode,
                              kind="count_tokens" if method == "countTokens" else "generate",
                              shape="array" if streaming and query.get("alt") != "sse" else "")

    @staticmethod
    def _chunk(reply: Reply) -> dict[str, Any]:
        parts: list[dict[str, Any]] = [{"text": reply.text}] if reply.text else []
        parts += [{"functionCall": {"name": c.name, "args": c.arguments}} for c in reply.tool_calls]
        usage = reply.usage
        return {"candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
                "usageMetadata": {"promptTokenCount": usage.input_tokens, "candidatesTokenCount": usage.output_tokens,
                                  "totalTokenCount": usage.input_tokens + usage.output_tokens,
                                  "cachedContentTokenCount": usage.cached_tokens},
                "modelVersion": reply.model, "responseId": new_id("")}

    def render_json(self, reply: Reply, request: NeutralRequest) -> Any:
        chunk = self._chunk(reply)
        return [chunk] if request.shape == "array" else chunk

    def render_events(self, reply: Reply, request: NeutralRequest) -> list[bytes]:
        return [sse.encode(self._chunk(reply))]

    def render_count(self, tokens: int) -> Any:
        return {"totalTokens": tokens}

    def error_body(self, status: int, message: str) -> Any:
        return {"error": {"code": status, "message": message, "status": _STATUS.get(status, "UNKNOWN")}}

    def stream_error(self, message: str) -> bytes:
        return sse.encode(self.error_body(502, message))

    def usage_from_json(self, body: Any) -> Usage:
        if isinstance(body, list):  # the non-SSE stream: the last chunk carries the totals
            return self.usage_from_json(body[-1]) if body else Usage()
        meta = body.get("usageMetadata") if isinstance(body, dict) else None
        if not isinstance(meta, dict):
            return Usage()
        return Usage(int_of(meta, "promptTokenCount"), int_of(meta, "candidatesTokenCount") + int_of(meta, "thoughtsTokenCount"),
                     int_of(meta, "cachedContentTokenCount"))

    def fold_usage(self, usage: Usage, event: str, data: Any) -> Usage:
        if isinstance(data, dict) and isinstance(data.get("usageMetadata"), dict):
            return self.usage_from_json(data)  # cumulative: the latest chunk has the running totals
        return usage

    def stream_finished(self, event: str, data: Any) -> bool:
        candidates = data.get("candidates") if isinstance(data, dict) else None
        return isinstance(candidates, list) and any(isinstance(c, dict) and c.get("finishReason") for c in candidates)
