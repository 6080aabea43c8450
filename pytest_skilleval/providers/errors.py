"""The one error every provider call ends in, apart from the pydantic models of ``base.py`` (which
re-exports it): the provider options raise it while reading settings, in every pytest run."""

from __future__ import annotations

from typing import Literal

ErrorKind = Literal["config", "auth", "timeout", "rate_limit", "server", "connection", "malformed", "budget", "other"]


class ProviderError(Exception):
    def __init__(self, provider: str, kind: ErrorKind, detail: str) -> None:
        super().__init__(f"{provider}: {kind}: {detail}")
        self.provider, self.kind, self.detail = provider, kind, detail
