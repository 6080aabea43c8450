"""Replay mode: serve a recorded cassette; any divergence is an error response and a recorded message."""

from __future__ import annotations

import threading
from collections.abc import Mapping

from pytest_skilleval.gateway.cassette import Cassette, Signature
from pytest_skilleval.gateway.exchange import Exchange
from pytest_skilleval.gateway.modes.base import Mode
from pytest_skilleval.gateway.protocols.base import Usage


class ReplayMode(Mode):
    name = "replay"

    def __init__(self, cassette: Cassette, trial: str, placeholders: Mapping[str, str]) -> None:
        self.cassette, self.trial, self.placeholders = cassette, trial, dict(placeholders)
        self.requests = 0
        self._lock = threading.Lock()

    def handle(self, ex: Exchange) -> None:
        with self._lock:
            self.requests += 1
            turn = self.requests
        found, problem = self.cassette.take(Signature.of(ex.method, ex.path, ex.request, self.placeholders))
        if found is None:
            message = f"replay divergence in trial {self.trial!r} at turn {turn} ({ex.method} {ex.path}): {problem}"
            ex.trial.diverged(message)
            # 400, not 5xx: clients retry 5xx, and a retry cannot fix a divergence.
            ex.send_error(400, "replay_divergence", message)
            return
        ex.note = f"cassette turn {found.turn}"
        ex.usage = Usage(**{k: int(v) for k, v in found.usage.items() if k in ("input_tokens", "output_tokens", "cached_tokens")})
        if "text/event-stream" in found.content_type:
            ex.start_stream(found.status, found.content_type)
            ex.write(found.body)
        else:
            ex.send_body(found.status, found.body, found.content_type)

    def close(self) -> list[str]:
        unused = self.cassette.unused_turns()
        if not unused:
            return []
        return [f"replay divergence in trial {self.trial!r}: the agent stopped after {self.requests} requests; "
                f"recorded turns {unused} were never requested"]
