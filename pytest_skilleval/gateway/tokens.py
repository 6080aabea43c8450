"""Per-trial scoped tokens: the only credential an agent process ever sees.

The real provider key lives in the host process (in the proxy's upstream config). An agent gets
a random token that is valid for one trial: every request is checked against it, and it is
revoked when the trial ends, so a token leaked into a transcript or a workspace is useless.
Only hashes of secrets are kept, and only the public ``id`` is logged.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from dataclasses import dataclass, field
from typing import Generic, TypeVar

T = TypeVar("T")
TOKEN_PREFIX = "sk-skilleval-"


@dataclass(frozen=True)
class ScopedToken:
    id: str  # public: goes into logs
    secret: str = field(repr=False)  # handed to the agent only


def _digest(secret: str) -> bytes:
    return hashlib.sha256(secret.encode("utf-8")).digest()


class TokenRegistry(Generic[T]):
    """Issues tokens bound to an owner (a trial) and resolves a presented secret back to it."""

    def __init__(self) -> None:
        self._live: dict[bytes, tuple[str, T]] = {}
        self._revoked: set[bytes] = set()
        self._lock = threading.Lock()

    def issue(self, owner: T) -> ScopedToken:
        token = ScopedToken(id="tok_" + secrets.token_hex(6), secret=TOKEN_PREFIX + secrets.token_urlsafe(32))
        with self._lock:
            self._live[_digest(token.secret)] = (token.id, owner)
        return token

    def resolve(self, secret: str | None) -> tuple[str, T] | None:
        """The (token id, owner) of a live token, or None for unknown, revoked or missing ones."""
        if not secret:
            return None
        # Looked up by SHA-256: lookup time depends on the hash, so it leaks nothing about how
        # much of a guessed secret was right.
        with self._lock:
            return self._live.get(_digest(secret))

    def is_revoked(self, secret: str | None) -> bool:
        return bool(secret) and _digest(secret or "") in self._revoked

    def revoke(self, token: ScopedToken) -> None:
        with self._lock:
            digest = _digest(token.secret)
            self._live.pop(digest, None)
            self._revoked.add(digest)


def presented_secret(headers: dict[str, str], query: dict[str, str]) -> str | None:
    """The credential a client sent, wherever its SDK puts it (header names are lower-case here)."""
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    for name in ("x-api-key", "x-goog-api-key", "api-key"):
        if headers.get(name):
            return headers[name].strip()
    return query.get("key") or None
