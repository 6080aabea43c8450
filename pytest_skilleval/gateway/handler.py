"""The HTTP side of the gateway: the request handler, reading request bodies, plain JSON replies.

Kept apart from :mod:`server` so that file is about routing and trials, not about bytes.
"""

from __future__ import annotations

import gzip
import importlib
import zlib
from http.server import BaseHTTPRequestHandler
from typing import Any, Protocol

MAX_REQUEST = 32 * 1024 * 1024


class BadRequest(Exception):
    pass


class Serves(Protocol):
    """What the handler needs of the gateway that owns its server (``server.Gateway``): a router.
    Named here so the handler does not import the server that imports it."""

    def serve(self, handler: BaseHTTPRequestHandler, method: str) -> None: ...


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: SDK clients reuse connections, and so should we
    timeout = 300  # an idle keep-alive connection eventually frees its thread
    # Headers and body go out as separate writes; with Nagle on, a keep-alive client's delayed ACK
    # stalls the second one by ~40 ms. Measured in benchmarks/gateway_overhead.py.
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the request log replaces stderr noise
        return

    def _gateway(self) -> Serves:
        return self.server.gateway  # type: ignore[attr-defined,no-any-return]

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        self._gateway().serve(self, "POST")

    def do_GET(self) -> None:  # noqa: N802
        self._gateway().serve(self, "GET")

    def do_CONNECT(self) -> None:  # noqa: N802
        self._gateway().serve(self, "CONNECT")


def send_json_bytes(handler: BaseHTTPRequestHandler, status: int, body: bytes) -> None:
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    try:
        handler.wfile.write(body)
    except (BrokenPipeError, ConnectionResetError):
        handler.close_connection = True


def read_body(handler: BaseHTTPRequestHandler, headers: dict[str, str]) -> bytes:
    """The decoded request body; BadRequest for anything malformed (framing, size, encoding)."""
    try:
        raw = _read_framed(handler, headers)
        return _decode(raw, headers.get("content-encoding", "identity").lower())
    except (ValueError, EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise BadRequest(f"unreadable request body: {exc}") from None


def _read_framed(handler: BaseHTTPRequestHandler, headers: dict[str, str]) -> bytes:
    if headers.get("transfer-encoding", "").lower() != "chunked":
        length = int(headers.get("content-length") or 0)
        if length > MAX_REQUEST:
            raise BadRequest("request body too large")
        return handler.rfile.read(length) if length else b""
    body = bytearray()
    while True:
        size = int(handler.rfile.readline().split(b";")[0].strip() or b"0", 16)
        if size == 0:
            handler.rfile.readline()  # the blank line after the last chunk (no trailers expected)
            return bytes(body)
        body += handler.rfile.read(size)
        handler.rfile.readline()
        if len(body) > MAX_REQUEST:
            raise BadRequest("request body too large")


def _decode(raw: bytes, encoding: str) -> bytes:
    if encoding == "gzip":
        return gzip.decompress(raw)
    if encoding == "deflate":
        return zlib.decompress(raw)
    if encoding == "zstd":
        try:
            zstandard = importlib.import_module("zstandard")  # optional: only Codex may compress, and it did not here
        except ImportError:
            raise BadRequest("zstd request bodies need the 'zstandard' package") from None
        return bytes(zstandard.ZstdDecompressor().decompressobj().decompress(raw))
    return raw
