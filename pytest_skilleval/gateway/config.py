"""What a gateway needs to know: mode, upstreams (with real keys, held in memory only), folders,
timeouts and budget. Plain dataclasses, so the gateway runs without pytest too."""

from __future__ import annotations

import os
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

MODES = ("scripted", "proxy", "record", "replay")
DEFAULT_UPSTREAMS = {"anthropic": "https://api.anthropic.com", "openai": "https://api.openai.com",
                     "gemini": "https://generativelanguage.googleapis.com"}
DEFAULT_KEY_ENV = {"anthropic": ("ANTHROPIC_API_KEY",), "openai": ("OPENAI_API_KEY",), "gemini": ("GEMINI_API_KEY", "GOOGLE_API_KEY")}


@dataclass(frozen=True)
class Upstream:
    family: str  # anthropic | openai | gemini
    base_url: str
    api_key: str = field(default="", repr=False)  # repr=False: never printed in a traceback or assertion

    def auth_headers(self) -> dict[str, str]:
        if not self.api_key:
            return {}
        if self.family == "anthropic":
            return {"x-api-key": self.api_key}
        if self.family == "gemini":
            return {"x-goog-api-key": self.api_key}
        return {"authorization": f"Bearer {self.api_key}"}

    def url_for(self, path: str) -> str:
        """Upstream URL for an incoming path; a base URL that already ends in the path's first
        segment (``…/v1`` + ``/v1/chat/completions``) does not get it twice."""
        base = self.base_url.rstrip("/")
        base_tail = urlsplit(base).path.rsplit("/", 1)[-1]
        first, _, rest = path.lstrip("/").partition("/")
        if base_tail and base_tail == first:
            path = "/" + rest
        return base + path


def upstreams_from_env(urls: Mapping[str, str] | None = None, key_env: Mapping[str, str] | None = None,
                       environ: Mapping[str, str] | None = None) -> dict[str, Upstream]:
    """Upstreams for proxy/record: default vendor URLs unless overridden, keys read from the host env."""
    environ = os.environ if environ is None else environ
    urls = {**DEFAULT_UPSTREAMS, **(urls or {})}
    out: dict[str, Upstream] = {}
    for family, url in urls.items():
        names = (key_env[family],) if key_env and family in key_env else DEFAULT_KEY_ENV.get(family, ())
        key = next((environ[n] for n in names if environ.get(n)), "")
        out[family] = Upstream(family=family, base_url=url, api_key=key)
    return out


@dataclass
class GatewayConfig:
    mode: str = "scripted"
    upstreams: dict[str, Upstream] = field(default_factory=dict)
    timeout_s: float = 300.0  # per upstream read: a silent upstream becomes a 504, never a hang
    log_dir: Path | None = None  # per-trial JSONL logs; None keeps them in memory only
    cassette_dir: Path | None = None
    budget_usd: float | None = None
    prices: Path | None = None
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    log_bodies: bool = True  # request bodies in the log: what Tier 3 asserts skill listings on
    host: str = "127.0.0.1"
    #: Upstream failures in a row that end a trial as an outage (0: never); gateway/outage.py.
    upstream_failures: int = 3
    #: Trials in a row ended by an outage after which no new trial starts against that upstream (0: never).
    breaker_trials: int = 2
    breaker_cooldown_s: float = 60.0  # then one trial is let through as a probe

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"gateway mode {self.mode!r}: expected one of {', '.join(MODES)}")
        if self.host not in ("127.0.0.1", "localhost"):
            raise ValueError("the gateway listens on loopback only")

    def real_keys(self) -> list[str]:
        return [u.api_key for u in self.upstreams.values() if u.api_key]
