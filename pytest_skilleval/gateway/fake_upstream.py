"""A stand-in for a vendor API on loopback, for tests and benchmarks of proxy and record mode.

It speaks all four protocols with scripted replies (same :class:`Script` rules as scripted mode)
and can misbehave on demand, because the proxy's fault handling is only believable when tested
against a server that really times out, rate-limits, breaks JSON or drops a stream:

``fault`` = None | "400" | "429" | "500" | "malformed" | "timeout" (answer after ``delay_s``)
| "drop" (close mid-body / mid-stream) | "stall" (stop mid-stream for ``delay_s``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from pytest_skilleval.gateway.protocols import for_path
from pytest_skilleval.gateway.protocols.base import dumps
from pytest_skilleval.gateway.script import Script

FAULTS = (None, "400", "429", "500", "malformed", "timeout", "drop", "stall")


class FakeUpstream:
    def __init__(self, script: Script | None = None, fault: str | None = None, delay_s: float = 2.0) -> None:
        self.script = script or Script.from_data({"steps": [{"text": "upstream says hi"}]})
        self.fault, self.delay_s = fault, delay_s
        self.close_after_each = False  # close every connection after one answer, without saying so
        self.requests: list[dict[str, Any]] = []  # method, path, headers (lower-case), body, client_port
        self._server: ThreadingHTTPServer | None = None

    def set_fault(self, fault: str | None) -> None:
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}")
        self.fault = fault

    def __enter__(self) -> FakeUpstream:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        server.daemon_threads = True
        server.upstream = self  # type: ignore[attr-defined]
        self._server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    @property
    def url(self) -> str:
        assert self._server is not None, "not started"
        return f"http://127.0.0.1:{self._server.server_port}"


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out as separate writes; with Nagle on, a keep-alive client's delayed ACK
    # stalls the second one by ~40 ms. Measured in benchmarks/gateway_overhead.py.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        return

    def _send(self, status: int, body: bytes, headers: Mapping[str, str] | None = None, length: int | None = None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body) if length is None else length))
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802
        up: FakeUpstream = self.server.upstream  # type: ignore[attr-defined]
        parts = urlsplit(self.path)
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        up.requests.append({"method": "POST", "path": self.path, "headers": {k.lower(): v for k, v in self.headers.items()},
                            "body": body, "client_port": self.client_address[1]})
        if up.close_after_each:  # answer, then hang up: the next reuse of this connection finds it dead
            self.close_connection = True
        protocol = for_path(parts.path)
        if protocol is None:
            self._send(404, b'{"error": "no such endpoint"}')
            return
        request = protocol.parse(parts.path, dict(parse_qsl(parts.query)), json.loads(body))
        reply, _ = up.script.reply_for(request, body.decode("utf-8", errors="replace"), protocol.tool_id_prefix)
        fault = up.fault
        if fault == "timeout":
            time.sleep(up.delay_s)
        if fault in ("400", "429", "500"):
            status = int(fault)
            self._send(status, dumps(protocol.error_body(status, f"fake upstream {status}")), {"retry-after": "0"})
        elif fault == "malformed":
            self._send(200, b'{"id": "broken", "content": [')
        elif not request.stream:
            payload = dumps(protocol.render_json(reply, request))
            if fault == "drop":  # promise more than we send, then hang up
                self._send(200, payload[: len(payload) // 2], length=len(payload))
                self.close_connection = True
            else:
                self._send(200, payload)
        else:
            self._stream(protocol.render_events(reply, request), fault, up.delay_s)

    def _stream(self, events: list[bytes], fault: str | None, delay_s: float) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")  # as the vendors do; a drop is then detectable
        self.end_headers()
        cut = max(1, len(events) // 2) if fault in ("drop", "stall") else len(events)
        for event in events[:cut]:
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            self.wfile.flush()
        if fault == "stall":
            time.sleep(delay_s)
        if fault in ("drop", "stall"):
            self.close_connection = True  # no terminating chunk: the stream is cut
            return
        self.wfile.write(b"0\r\n\r\n")
