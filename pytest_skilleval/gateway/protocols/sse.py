"""Server-sent events: encode one event, and parse a byte stream incrementally.

The proxy relays upstream bytes untouched but has to read them too (usage, end of stream), and
chunks arrive split anywhere — mid-line, mid-UTF-8 — so parsing is incremental over bytes.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_skilleval.gateway.protocols.base import dumps


def encode(data: Any, event: str | None = None) -> bytes:
    payload = data if isinstance(data, bytes) else data.encode("utf-8") if isinstance(data, str) else dumps(data)
    head = f"event: {event}\n".encode() if event else b""
    return head + b"data: " + payload + b"\n\n"


class SSEParser:
    """Feed raw bytes, get complete ``(event, data)`` pairs; ``data`` is decoded JSON when it parses."""

    def __init__(self) -> None:
        self._buffer = b""
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[tuple[str, Any]]:
        self._buffer += chunk
        out: list[tuple[str, Any]] = []
        while True:
            cut = self._buffer.find(b"\n")
            if cut < 0:
                return out
            line = self._buffer[:cut].rstrip(b"\r").decode("utf-8", errors="replace")
            self._buffer = self._buffer[cut + 1:]
            if not line:
                if self._data:
                    out.append((self._event, _decode("\n".join(self._data))))
                self._event, self._data = "", []
            elif line.startswith(":"):
                continue  # a comment / keep-alive
            else:
                name, _, value = line.partition(":")
                value = value[1:] if value.startswith(" ") else value
                if name == "event":
                    self._event = value
                elif name == "data":
                    self._data.append(value)


def _decode(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text
