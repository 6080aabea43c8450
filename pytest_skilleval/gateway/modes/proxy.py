"""Proxy mode: forward the raw request to the real provider with the real key, relay the answer.

The agent authenticated with its scoped token; here that token is dropped and the host's key is
added, so the key never enters the agent's process. Bytes are relayed as they arrive (streams
stay streams) while usage is read on the side for metering. Failures the client must see as
errors — not as hangs or silent truncation:

- no answer within the timeout → 504 in the vendor's error shape;
- a 2xx body that is not JSON → 502 naming the problem;
- a stream that stops before its protocol's final event → an SSE error event appended, which
  makes the vendor SDK raise;
- 4xx/5xx from upstream (429, 500, ...) → passed through with Retry-After, so SDK retry logic works.
"""

from __future__ import annotations

import http.client
import json
from collections.abc import Mapping
from urllib.parse import urlencode, urlsplit

from pytest_skilleval.gateway.config import DEFAULT_KEY_ENV, Upstream
from pytest_skilleval.gateway.exchange import Exchange
from pytest_skilleval.gateway.modes.base import Mode
from pytest_skilleval.gateway.modes.pool import ConnectionPool
from pytest_skilleval.gateway.protocols.base import Usage
from pytest_skilleval.gateway.protocols.sse import SSEParser
from pytest_skilleval.gateway.scrub import Scrubber

FORWARD_REQUEST = ("content-type", "accept", "anthropic-version", "anthropic-beta", "openai-beta", "user-agent", "x-goog-api-client")
FORWARD_RESPONSE_PREFIXES = ("retry-after", "x-request-id", "request-id", "anthropic-ratelimit-", "x-ratelimit-", "openai-processing-ms")
MAX_BODY = 64 * 1024 * 1024


class ProxyMode(Mode):
    name = "proxy"
    billed = True

    def __init__(self, upstreams: Mapping[str, Upstream], timeout_s: float, scrubber: Scrubber, pool: ConnectionPool | None = None) -> None:
        self.upstreams, self.timeout_s, self.scrubber = upstreams, timeout_s, scrubber
        self.pool = pool or ConnectionPool()

    def tap(self, ex: Exchange, status: int, content_type: str, body: bytes) -> None:
        """What the client received, for subclasses that keep it (record mode)."""

    def handle(self, ex: Exchange) -> None:
        family = ex.protocol.family
        upstream = self.upstreams.get(family)
        if upstream is None or not upstream.api_key:
            names = " or ".join(DEFAULT_KEY_ENV.get(family, ("a key variable",)))
            ex.send_error(502, "no_upstream_key", f"no {family} upstream key in the host environment (set {names})")
            return
        url = urlsplit(upstream.url_for(ex.path))
        query = {k: v for k, v in ex.query.items() if k != "key"}  # a Gemini ?key= is the scoped token
        target = url.path + ("?" + urlencode(query) if query else "")
        headers = {k: v for k, v in ex.headers.items() if k in FORWARD_REQUEST}
        headers.update({"accept-encoding": "identity", **upstream.auth_headers()})  # identity: we must read usage
        try:
            conn, resp = self.pool.request(url.scheme, url.netloc, self.timeout_s, ex.method, target, ex.body or None, headers)
        except TimeoutError:
            ex.send_error(504, "upstream_timeout", f"upstream {url.netloc} did not answer within {self.timeout_s:g}s")
            return
        except (OSError, http.client.HTTPException) as exc:
            ex.send_error(502, "upstream_unreachable", f"upstream {url.netloc} failed before answering: {exc!r}")
            return
        clean = False
        try:
            content_type = resp.getheader("content-type") or "application/json"
            passthrough = {k: v for k, v in resp.getheaders() if k.lower().startswith(FORWARD_RESPONSE_PREFIXES)}
            if resp.status == 200 and "text/event-stream" in content_type:
                clean = self._relay_stream(ex, resp, content_type, passthrough)
            else:
                clean = self._relay_body(ex, resp, content_type, passthrough)
        finally:
            self.pool.release(url.scheme, url.netloc, self.timeout_s, conn, resp, clean)

    def _relay_body(self, ex: Exchange, resp: http.client.HTTPResponse, content_type: str, headers: dict[str, str]) -> bool:
        """Relay a complete body; True when the upstream connection is clean enough to reuse."""
        if int(resp.getheader("content-length") or 0) > MAX_BODY:
            ex.send_error(502, "upstream_too_large", f"upstream response is larger than {MAX_BODY} bytes")
            return False
        try:
            raw = resp.read()  # read() without a size raises IncompleteRead on a short body; read(n) would not
        except TimeoutError:
            ex.send_error(504, "upstream_timeout", f"upstream stopped sending its response for {self.timeout_s:g}s")
            return False
        except (OSError, http.client.HTTPException) as exc:
            ex.send_error(502, "upstream_dropped", f"upstream closed the connection mid-response: {exc!r}")
            return False
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if 200 <= resp.status < 300:
            if data is None:
                preview = raw[:120].decode("utf-8", errors="replace")
                ex.send_error(502, "upstream_malformed_json", f"upstream answered {resp.status} with a body that is not JSON "
                                                              f"({len(raw)} bytes, starting {preview!r})")
                return True
            ex.usage = ex.protocol.usage_from_json(data)
        else:
            ex.fail(f"upstream_{resp.status}", raw[:300].decode("utf-8", errors="replace"))
        body = self.scrubber.text(raw.decode("utf-8", errors="replace")).encode("utf-8")  # vendors echo key fragments in 401s
        ex.send_body(resp.status, body, content_type, headers)
        self.tap(ex, resp.status, content_type, body)
        return True

    def _relay_stream(self, ex: Exchange, resp: http.client.HTTPResponse, content_type: str, headers: dict[str, str]) -> bool:
        ex.start_stream(200, content_type, headers)
        parser, usage, finished, seen = SSEParser(), Usage(), False, bytearray()
        problem = ""
        try:
            while chunk := resp.read1(65536):
                seen += chunk
                for event, data in parser.feed(chunk):
                    usage = ex.protocol.fold_usage(usage, event, data)
                    finished = finished or ex.protocol.stream_finished(event, data)
                if not ex.write(chunk):
                    break  # the client left; nothing more to deliver
        except TimeoutError:
            problem = f"upstream stream stalled for {self.timeout_s:g}s"
        except (OSError, http.client.HTTPException) as exc:
            problem = f"upstream dropped the stream: {exc!r}"
        if not problem and not finished and ex.error is None:
            problem = "upstream stream ended before its final event"
        ex.usage = usage
        if problem:
            ex.fail("upstream_stream_broken", problem)
            tail = ex.protocol.stream_error(f"gateway: {problem}")
            # A partial line would swallow the error event: close it off first.
            tail = (b"\n\n" if seen and not seen.endswith(b"\n\n") else b"") + tail
            ex.write(tail)
            seen += tail
        self.tap(ex, 200, content_type, bytes(seen))
        return not problem and ex.error is None
