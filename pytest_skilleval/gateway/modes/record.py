"""Record mode: proxy, and keep what the client saw as one cassette per trial (credentials scrubbed)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from pathlib import Path

from pytest_skilleval.gateway.cassette import Cassette, Interaction, Signature
from pytest_skilleval.gateway.config import Upstream
from pytest_skilleval.gateway.exchange import Exchange
from pytest_skilleval.gateway.modes.pool import ConnectionPool
from pytest_skilleval.gateway.modes.proxy import ProxyMode
from pytest_skilleval.gateway.scrub import Scrubber


class RecordMode(ProxyMode):
    name = "record"

    def __init__(self, upstreams: Mapping[str, Upstream], timeout_s: float, scrubber: Scrubber, pool: ConnectionPool, path: Path,
                 trial: str, placeholders: Mapping[str, str]) -> None:
        super().__init__(upstreams, timeout_s, scrubber, pool)
        self.path, self.placeholders = path, dict(placeholders)
        self.cassette = Cassette(trial, placeholders=tuple(self.placeholders))
        self._lock = threading.Lock()

    def tap(self, ex: Exchange, status: int, content_type: str, body: bytes) -> None:
        signature = Signature.of(ex.method, ex.path, ex.request, self.placeholders)
        usage = {"input_tokens": ex.usage.input_tokens, "output_tokens": ex.usage.output_tokens, "cached_tokens": ex.usage.cached_tokens}
        scrubbed = self.scrubber.text(body.decode("utf-8", errors="replace")).encode("utf-8")
        with self._lock:
            turn = len(self.cassette.interactions) + 1
            self.cassette.interactions.append(Interaction(turn, signature, status, content_type, scrubbed, ex.request.model, usage))

    def close(self) -> list[str]:
        self.cassette.save(self.path)
        return []
