"""Keep-alive connections to upstreams, shared by all proxy/record trials of a gateway.

Against a real vendor every new connection is a TLS handshake (tens of milliseconds); an agent
turn should not pay it. A connection goes back to the pool only after its response was read to
the end and the server did not ask to close. A pooled connection the server has meanwhile closed
fails before any byte of an answer arrives; :meth:`request` then retries once on a fresh one
(the request never reached the server's application, so this cannot duplicate a model call).
"""

from __future__ import annotations

import http.client
import threading

_STALE = (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError, ConnectionAbortedError)


class ConnectionPool:
    def __init__(self, max_idle_per_host: int = 8) -> None:
        self.max_idle = max_idle_per_host
        self._idle: dict[tuple[str, str, float], list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _new(scheme: str, netloc: str, timeout: float) -> http.client.HTTPConnection:
        cls = http.client.HTTPSConnection if scheme == "https" else http.client.HTTPConnection
        return cls(netloc, timeout=timeout)

    def request(self, scheme: str, netloc: str, timeout: float, method: str, target: str, body: bytes | None,
                headers: dict[str, str]) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
        key = (scheme, netloc, timeout)
        with self._lock:
            conn = self._idle.get(key, []).pop() if self._idle.get(key) else None
        if conn is not None:
            try:
                conn.request(method, target, body=body, headers=headers)
                return conn, conn.getresponse()
            except _STALE:
                conn.close()  # closed by the server while idle: fall through to a fresh connection
            except BaseException:
                conn.close()
                raise
        conn = self._new(scheme, netloc, timeout)
        try:
            conn.request(method, target, body=body, headers=headers)
            return conn, conn.getresponse()
        except BaseException:
            conn.close()
            raise

    def release(self, scheme: str, netloc: str, timeout: float, conn: http.client.HTTPConnection,
                resp: http.client.HTTPResponse, reusable: bool) -> None:
        """Return ``conn`` for reuse if its response is fully consumed and the server keeps it open."""
        if not reusable or not resp.isclosed() or resp.will_close:
            conn.close()
            return
        with self._lock:
            idle = self._idle.setdefault((scheme, netloc, timeout), [])
            if len(idle) < self.max_idle:
                idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            conns = [c for idle in self._idle.values() for c in idle]
            self._idle.clear()
        for conn in conns:
            conn.close()
