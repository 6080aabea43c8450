"""A tiny scripted upstream for the provider tests: OpenAI chat + embeddings and Anthropic messages.

The real ``openai`` / ``anthropic`` SDKs talk HTTP to it on 127.0.0.1, so retries, timeouts and
parsing are exercised through the SDKs' own transport, not mocks. Each request takes the next
scripted :class:`Act` (or a plain success when the script is empty) and is counted per path, which
is how the tests prove "bounded retries" and "zero upstream calls on a cached rerun".
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass(frozen=True)
class Act:
    """One scripted answer. kind: ok | status | timeout | malformed | drop."""

    kind: str = "ok"
    text: str | None = None  # reply text (ok); for a forced Anthropic tool call, the JSON of its input
    status: int = 200
    headers: tuple[tuple[str, str], ...] = ()
    delay: float = 0.0  # timeout: how long to sleep before answering
    code: str | None = None  # status: the error code in the body, e.g. "insufficient_quota"


@dataclass
class Seen:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that timed out has hung up before we answer: expected in the fault tests, not news.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


class Upstream:
    def __init__(self) -> None:
        self.script: deque[Act] = deque()
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.default_text = "hello from upstream"
        handler = type("Handler", (_Handler,), {"upstream": self})
        self.server = _Server(("127.0.0.1", 0), handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_port}"

    def start(self) -> Upstream:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def push(self, *acts: Act) -> None:
        with self.lock:
            self.script.extend(acts)

    def count(self, path: str | None = None) -> int:
        with self.lock:
            return sum(1 for s in self.seen if path is None or s.path == path)

    def reset(self) -> None:
        with self.lock:
            self.script.clear()
            self.seen.clear()

    def _next(self, seen: Seen) -> Act:
        with self.lock:
            self.seen.append(seen)
            return self.script.popleft() if self.script else Act()


def loopback_only(monkeypatch: Any) -> None:
    """Refuse name resolution for anything but loopback, so no provider test can reach the internet."""
    real = socket.getaddrinfo

    def guarded(host: Any, *args: Any, **kw: Any) -> Any:
        if str(host) not in ("127.0.0.1", "localhost", "::1"):
            raise OSError(f"provider tests stay on loopback; refused to resolve {host!r}")
        return real(host, *args, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", guarded)


def fake_vector(text: str, dim: int = 8) -> list[float]:
    """A deterministic, deliberately unnormalised vector, so the tests see the client normalise it."""
    digest = hashlib.sha256(text.encode()).digest()
    return [(b - 128) / 16.0 + 0.01 for b in digest[:dim]]


class _Handler(BaseHTTPRequestHandler):
    upstream: Upstream
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = json.loads(raw or b"{}")
        act = self.upstream._next(Seen(self.path, body, {k.lower(): v for k, v in self.headers.items()}))
        if act.kind == "timeout":
            time.sleep(act.delay)
            act = Act()
        if act.kind == "status":
            error = {"message": f"scripted {act.status}", "type": "scripted", "code": act.code}
            return self._send(act.status, {"error": error}, act.headers)
        if act.kind == "malformed":
            return self._send_raw(200, b'{"id": "x", "choices": [ {"broken', "application/json")
        if act.kind == "drop":
            # Promise a long body, send a little of it, then hang up: a connection dropped mid-body.
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "4096")
            self.end_headers()
            self.wfile.write(b'{"id": "chatcmpl-1", "choices": [')
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)
            return None
        text = act.text if act.text is not None else self.upstream.default_text
        if self.path.endswith("/chat/completions"):
            return self._send(200, _openai_chat(body, text), act.headers)
        if self.path.endswith("/embeddings"):
            return self._send(200, _openai_embeddings(body), act.headers)
        if self.path.endswith("/messages"):
            return self._send(200, _anthropic_message(body, text), act.headers)
        return self._send(404, {"error": {"message": f"no route {self.path}"}})

    def _send(self, status: int, payload: dict[str, Any], headers: tuple[tuple[str, str], ...] = ()) -> None:
        self._send_raw(status, json.dumps(payload).encode(), "application/json", headers)

    def _send_raw(self, status: int, data: bytes, ctype: str, headers: tuple[tuple[str, str], ...] = ()) -> None:
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for key, value in headers:
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)


def _openai_chat(body: dict[str, Any], text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-test", "object": "chat.completion", "created": 1, "model": body.get("model", "m"),
        "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def _openai_embeddings(body: dict[str, Any]) -> dict[str, Any]:
    inputs = body["input"] if isinstance(body["input"], list) else [body["input"]]
    # Reversed on purpose: the client must order the rows by "index", not by arrival.
    data = [{"object": "embedding", "index": i, "embedding": fake_vector(t)} for i, t in enumerate(inputs)][::-1]
    return {"object": "list", "model": body.get("model", "e"), "data": data, "usage": {"prompt_tokens": len(inputs), "total_tokens": len(inputs)}}


def _anthropic_message(body: dict[str, Any], text: str) -> dict[str, Any]:
    choice = body.get("tool_choice") or {}
    if choice.get("type") == "tool":
        try:
            tool_input: Any = json.loads(text)
        except ValueError:
            tool_input = {"unparsed": text}
        content: list[dict[str, Any]] = [{"type": "tool_use", "id": "toolu_1", "name": choice["name"], "input": tool_input}]
    else:
        content = [{"type": "text", "text": text}]
    return {
        "id": "msg_test", "type": "message", "role": "assistant", "model": body.get("model", "m"), "content": content,
        "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 13, "output_tokens": 5},
    }
