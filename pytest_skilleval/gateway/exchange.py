"""One request/response through the gateway: what came in, how it was answered, what it cost.

Modes write the response through this object only, so the server can log every exchange the
same way (status, usage, error, latency) whichever mode answered it.
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

from pytest_skilleval.gateway.protocols.base import NeutralRequest, Usage, WireProtocol, dumps


class TrialSink(Protocol):
    """What a mode may tell the trial an exchange belongs to. :class:`~.trial.Trial` is one; naming
    only this keeps ``exchange`` below ``trial`` in the import graph (a trial records exchanges)."""

    def diverged(self, message: str) -> None: ...


class Exchange:
    def __init__(self, handler: BaseHTTPRequestHandler, method: str, path: str, query: dict[str, str],
                 headers: dict[str, str], body: bytes, payload: Any, protocol: WireProtocol,
                 request: NeutralRequest, trial: TrialSink) -> None:
        self.handler, self.method, self.path, self.query = handler, method, path, query
        self.headers, self.body, self.payload = headers, body, payload
        self.protocol, self.request, self.trial = protocol, request, trial
        self.started = time.perf_counter()
        self.status = 0
        self.usage = Usage()
        self.error: str | None = None  # a short machine-readable reason when the exchange failed
        self.detail = ""  # the human-readable message that went with the error
        self.note = ""  # which script step / cassette turn answered
        self.streamed = False
        self._text: str | None = None

    @property
    def request_text(self) -> str:
        """The request body as text (for script variants and log assertions), computed once."""
        if self._text is None:
            self._text = json.dumps(self.payload, ensure_ascii=False)
        return self._text

    def fail(self, error: str, detail: str) -> None:
        if self.error is None:  # the first failure is the cause; later ones are consequences
            self.error, self.detail = error, detail

    # -- writing the response ------------------------------------------------------------------
    def _head(self, status: int, content_type: str, headers: dict[str, str] | None, length: int | None) -> None:
        self.status = status
        h = self.handler
        h.send_response(status)
        h.send_header("Content-Type", content_type)
        for name, value in (headers or {}).items():
            h.send_header(name, value)
        if length is None:
            # No length: the end of the body is the end of the connection, so a stream's end is unambiguous.
            h.send_header("Connection", "close")
            h.close_connection = True
        else:
            h.send_header("Content-Length", str(length))
        h.end_headers()

    def send_body(self, status: int, body: bytes, content_type: str = "application/json",
                  headers: dict[str, str] | None = None) -> None:
        self._head(status, content_type, headers, len(body))
        self.write(body)

    def send_json(self, status: int, obj: Any) -> None:
        self.send_body(status, dumps(obj))

    def send_error(self, status: int, error: str, message: str) -> None:
        """An error in the protocol's own shape (so the client SDK raises its typed error), logged."""
        self.fail(error, message)
        self.send_json(status, self.protocol.error_body(status, message))

    def start_stream(self, status: int = 200, content_type: str = "text/event-stream",
                     headers: dict[str, str] | None = None) -> None:
        self.streamed = True
        self._head(status, content_type, {"Cache-Control": "no-cache", **(headers or {})}, None)

    def write(self, chunk: bytes) -> bool:
        """Send bytes now; False when the client has gone away (the caller stops producing)."""
        try:
            self.handler.wfile.write(chunk)
            self.handler.wfile.flush()
            return True
        except (BrokenPipeError, ConnectionResetError) as exc:
            self.fail("client_disconnected", str(exc))
            self.handler.close_connection = True
            return False

    def send_events(self, events: list[bytes]) -> None:
        self.start_stream()
        for event in events:
            if not self.write(event):
                return

    @property
    def latency_ms(self) -> float:
        return round((time.perf_counter() - self.started) * 1000, 3)
