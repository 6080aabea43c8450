"""A stand-in for a vendor API on loopback: the one fault-injecting fake server of the tests and benchmarks.

The gateway's proxy and record modes and the provider layer's SDK clients are only believable when
tested against a server that really times out, rate-limits, breaks JSON or drops a stream, so this
one speaks the four model protocols (:mod:`gateway.protocols`, replies from a :class:`Script`, as
scripted mode gives them) plus OpenAI embeddings, and misbehaves on demand:

* for every request: ``fault`` = None | "400" | "429" | "500" | "malformed" | "timeout" (answer
  after ``delay_s``) | "drop" (close mid-body / mid-stream) | "stall" (stop mid-stream for ``delay_s``);
* for the next requests, one each: :meth:`FakeUpstream.push` of :class:`Act` — any status (with an
  error ``code`` and headers), a reply text, or one of the faults above with its own delay.

Every request is kept (:class:`Seen`, in :attr:`FakeUpstream.requests`) and counted per path, which is
how tests prove "bounded retries", "no duplicate model call" and "zero upstream calls on a cached rerun".
"""

from __future__ import annotations

import functools
import hashlib
import json
import sys
import threading
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from pytest_skilleval.gateway.protocols import for_path
from pytest_skilleval.gateway.protocols.base import Reply, ToolCall, WireProtocol, dumps, new_id
from pytest_skilleval.gateway.protocols.openai_chat import openai_error
from pytest_skilleval.gateway.script import Script

FAULTS = (None, "400", "429", "500", "malformed", "timeout", "drop", "stall")
MALFORMED = b'{"id": "broken", "choices": [ {"content": ['


@dataclass(frozen=True)
class Act:
    """How to answer one request. kind: ok | status | timeout | malformed | drop | stall."""

    kind: str = "ok"
    text: str | None = None  # ok: the reply text instead of the script's (for a forced tool call, its input as JSON)
    status: int = 200  # status: the HTTP status
    headers: tuple[tuple[str, str], ...] = ()  # status: extra response headers (retry-after …)
    delay: float = 0.0  # timeout: seconds before answering; stall: seconds the stream stops
    code: str | None = None  # status: the vendor's error code in the body, e.g. "insufficient_quota"


def fault_act(fault: str | None, delay_s: float) -> Act:
    """The :class:`Act` a standing ``fault`` stands for."""
    if fault in ("400", "429", "500"):
        return Act("status", status=int(fault), headers=(("retry-after", "0"),))
    if fault in ("timeout", "stall"):
        return Act(fault, delay=delay_s)
    return Act(fault or "ok")


@dataclass
class Seen:
    """One request as the server received it."""

    method: str
    path: str
    headers: dict[str, str]  # names in lower case
    raw: bytes
    client_port: int

    @functools.cached_property
    def body(self) -> Any:
        return json.loads(self.raw or b"{}")


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    upstream: FakeUpstream

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out has hung up before we answer: expected in the fault tests, not news.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class FakeUpstream:
    def __init__(self, script: Script | None = None, fault: str | None = None, delay_s: float = 2.0) -> None:
        self.script = script or Script.from_data({"steps": [{"text": "upstream says hi"}]})
        self.delay_s = delay_s
        self.fault: str | None = None
        self.set_fault(fault)
        self.close_after_each = False  # close every connection after one answer, without saying so
        self.requests: list[Seen] = []
        self._acts: deque[Act] = deque()
        self._lock = threading.Lock()
        self._server: _Server | None = None

    def set_fault(self, fault: str | None) -> None:
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}")
        self.fault = fault

    def push(self, *acts: Act) -> None:
        """Answer the next requests with these, one each, before the standing ``fault`` applies again."""
        with self._lock:
            self._acts.extend(acts)

    def count(self, path: str | None = None) -> int:
        with self._lock:
            return sum(1 for s in self.requests if path is None or s.path == path)

    def reset(self) -> None:
        """Forget the requests seen and the acts not yet used."""
        with self._lock:
            self._acts.clear()
            self.requests.clear()

    def _take(self, seen: Seen) -> Act:
        with self._lock:
            self.requests.append(seen)
            return self._acts.popleft() if self._acts else fault_act(self.fault, self.delay_s)

    def __enter__(self) -> FakeUpstream:
        server = _Server(("127.0.0.1", 0), _Handler)
        server.upstream = self
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


def fake_vector(text: str, dim: int = 8) -> list[float]:
    """A deterministic, deliberately unnormalised embedding, so a client is seen to normalise it."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(b - 128) / 16.0 + 0.01 for b in digest[:dim]]


def _embeddings(body: dict[str, Any]) -> dict[str, Any]:
    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
    # Reversed on purpose: a client must order the rows by "index", not by arrival.
    data = [{"object": "embedding", "index": i, "embedding": fake_vector(t)} for i, t in enumerate(inputs)][::-1]
    return {"object": "list", "model": body.get("model", "e"), "data": data,
            "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}}


def _forced_tool(body: Any) -> str | None:
    """The tool an Anthropic request forces (``tool_choice: {"type": "tool"}``), which a model must call."""
    choice = body.get("tool_choice") if isinstance(body, dict) else None
    return choice.get("name") if isinstance(choice, dict) and choice.get("type") == "tool" else None


class _Handler(BaseHTTPRequestHandler):
    server: _Server
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
        up = self.server.upstream
        parts = urlsplit(self.path)
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        protocol = for_path(parts.path)
        seen = Seen("POST", self.path, {k.lower(): v for k, v in self.headers.items()}, raw, self.client_address[1])
        act = up._take(seen)
        if up.close_after_each:  # answer, then hang up: the next reuse of this connection finds it dead
            self.close_connection = True
        embeddings = parts.path.endswith("/embeddings")
        if protocol is None and not embeddings:
            self._send(404, b'{"error": "no such endpoint"}')
            return
        if act.kind == "timeout":
            time.sleep(act.delay)
        if act.kind == "status":
            self._error(protocol, act)
        elif act.kind == "malformed":
            self._send(200, MALFORMED)
        elif protocol is None:
            self._send_json(dumps(_embeddings(seen.body)), act)
        else:
            request = protocol.parse(parts.path, dict(parse_qsl(parts.query)), seen.body)
            reply, _ = up.script.reply_for(request, raw.decode("utf-8", errors="replace"), protocol.tool_id_prefix)
            reply = self._with_text(reply, act.text, _forced_tool(seen.body), protocol)
            if request.stream:
                self._stream(protocol.render_events(reply, request), act)
            else:
                self._send_json(dumps(protocol.render_json(reply, request)), act)

    @staticmethod
    def _with_text(reply: Reply, text: str | None, forced: str | None, protocol: WireProtocol) -> Reply:
        """The script's reply, with the act's text instead of its own; a forced tool gets the text as its input."""
        if text is not None:
            reply = Reply(text=text, model=reply.model, usage=reply.usage)
        if forced is None or reply.tool_calls:
            return reply
        try:
            arguments = json.loads(reply.text)
        except ValueError:
            arguments = {"unparsed": reply.text}
        return Reply(text="", model=reply.model, usage=reply.usage,
                     tool_calls=(ToolCall(name=forced, arguments=arguments, id=new_id(protocol.tool_id_prefix)),))

    def _error(self, protocol: WireProtocol | None, act: Act) -> None:
        message = f"fake upstream {act.status}"
        body = protocol.error_body(act.status, message) if protocol is not None else openai_error(act.status, message)
        if act.code is not None:
            body["error"]["code"] = act.code
        self._send(act.status, dumps(body), dict(act.headers))

    def _send_json(self, payload: bytes, act: Act) -> None:
        if act.kind == "drop":  # promise more than we send, then hang up
            self._send(200, payload[: len(payload) // 2], length=len(payload))
            self.close_connection = True
        else:
            self._send(200, payload)

    def _stream(self, events: list[bytes], act: Act) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")  # as the vendors do; a drop is then detectable
        self.end_headers()
        cut = max(1, len(events) // 2) if act.kind in ("drop", "stall") else len(events)
        for event in events[:cut]:
            self.wfile.write(f"{len(event):x}\r\n".encode() + event + b"\r\n")
            self.wfile.flush()
        if act.kind == "stall":
            time.sleep(act.delay)
        if act.kind in ("drop", "stall"):
            self.close_connection = True  # no terminating chunk: the stream is cut
            return
        self.wfile.write(b"0\r\n\r\n")
