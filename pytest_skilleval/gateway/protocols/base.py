"""The neutral form every wire protocol is parsed into and rendered from.

Modes (scripted, proxy, record, replay) never look at a vendor's JSON shape: they see a
:class:`NeutralRequest` and produce a :class:`Reply` or raw upstream bytes. Each protocol module
owns the translation in both directions, so adding a wire format is adding one file.
"""

from __future__ import annotations

import abc
import json
import secrets
from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0  # everything the model read, cached part included
    output_tokens: int = 0
    cached_tokens: int = 0  # the part of input_tokens served from a prompt cache (cheaper)

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens, self.output_tokens + other.output_tokens,
                     self.cached_tokens + other.cached_tokens)


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any]
    id: str


@dataclass(frozen=True)
class NeutralRequest:
    protocol: str
    model: str
    stream: bool  # the client expects server-sent events
    tools: tuple[str, ...] = ()  # names of the tools the request declares
    tool_results: tuple[str, ...] = ()  # text of every tool result in the conversation, in order
    json_mode: bool = False  # the client asked for a JSON-only reply (schema side calls)
    kind: str = "generate"  # generate | count_tokens
    shape: str = ""  # protocol-specific rendering hint (Gemini's non-SSE stream is a JSON array)


@dataclass(frozen=True)
class Reply:
    text: str
    model: str
    usage: Usage
    tool_calls: tuple[ToolCall, ...] = field(default_factory=tuple)


def new_id(prefix: str) -> str:
    return f"{prefix}{secrets.token_hex(12)}"


def text_of(value: Any) -> str:
    """Readable text of a tool-result payload, whatever nesting the protocol uses.

    Tool results come as strings, lists of content blocks, or objects such as Gemini's
    ``{"output": ...}``; replay matching and log assertions need one comparable string.
    """
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return "\n".join(text_of(v) for v in value)
    if isinstance(value, dict):
        for key in ("text", "content", "output", "result"):
            if key in value:
                return text_of(value[key])
        return json.dumps(value, sort_keys=True, ensure_ascii=False)
    return str(value)


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


class WireProtocol(abc.ABC):
    name: ClassVar[str]
    family: ClassVar[str]  # which upstream (and which real key) serves it: anthropic | openai | gemini
    tool_id_prefix: ClassVar[str] = "call_"

    @abc.abstractmethod
    def matches(self, path: str) -> bool:
        """Whether this protocol serves ``path`` (the URL path without the query)."""

    @abc.abstractmethod
    def parse(self, path: str, query: dict[str, str], body: dict[str, Any]) -> NeutralRequest:
        """The neutral form of one request; raises ValueError on a body it cannot read."""

    @abc.abstractmethod
    def render_json(self, reply: Reply, request: NeutralRequest) -> Any:
        """The non-streaming response body."""

    @abc.abstractmethod
    def render_events(self, reply: Reply, request: NeutralRequest) -> list[bytes]:
        """The streaming response, one encoded SSE event per element."""

    @abc.abstractmethod
    def render_count(self, tokens: int) -> Any:
        """The reply to a token-counting call."""

    @abc.abstractmethod
    def error_body(self, status: int, message: str) -> Any:
        """An error body in this vendor's shape, so its SDK raises its own typed error."""

    @abc.abstractmethod
    def stream_error(self, message: str) -> bytes:
        """An SSE event that makes this vendor's client raise: sent when a stream breaks mid-way."""

    @abc.abstractmethod
    def usage_from_json(self, body: Any) -> Usage:
        """Token usage of a complete (non-streaming) response body."""

    @abc.abstractmethod
    def fold_usage(self, usage: Usage, event: str, data: Any) -> Usage:
        """Usage after one parsed SSE event (``data`` is decoded JSON, or the raw string)."""

    @abc.abstractmethod
    def stream_finished(self, event: str, data: Any) -> bool:
        """Whether this event is the protocol's normal end of stream (to tell a drop from an end)."""


def int_of(mapping: Any, *keys: str) -> int:
    """The first integer found under ``keys`` in a (possibly missing) mapping; 0 when absent."""
    if not isinstance(mapping, dict):
        return 0
    for key in keys:
        value = mapping.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return value
    return 0
