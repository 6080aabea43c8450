"""A trial as the gateway sees it: its scoped token, its mode, its request log and its totals."""

from __future__ import annotations

import datetime as dt
import json
import os
import threading
from collections.abc import Mapping
from typing import Any, Protocol

from pytest_skilleval.gateway.config import GatewayConfig
from pytest_skilleval.gateway.exchange import Exchange
from pytest_skilleval.gateway.metering import Budget, PriceTable, RequestLog
from pytest_skilleval.gateway.modes.base import Mode
from pytest_skilleval.gateway.outage import FailureCounter
from pytest_skilleval.gateway.protocols.base import Usage
from pytest_skilleval.gateway.scrub import Scrubber
from pytest_skilleval.gateway.tokens import ScopedToken

#: Host variables an agent process may inherit; everything else (keys, cloud credentials, proxies
#: of the host) is dropped. The gateway's own variables are added on top.
AGENT_ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "SSL_CERT_FILE", "SSL_CERT_DIR")


class ReplayDivergence(AssertionError):
    """A replayed trial asked for something the cassette does not hold."""


class KeyLeak(RuntimeError):
    """A real provider key was about to be handed to an agent process."""


class GatewayServices(Protocol):
    """What a trial uses of the gateway that issued it (``server.Gateway`` is one): its address,
    configuration, prices, budget and scrubber. Named here so ``trial`` does not import ``server``."""

    config: GatewayConfig
    prices: PriceTable
    budget: Budget
    scrubber: Scrubber

    @property
    def url(self) -> str: ...


class Trial:
    def __init__(self, gateway: GatewayServices, name: str, mode: Mode, log: RequestLog, placeholders: Mapping[str, str]) -> None:
        self.gateway, self.name, self.mode, self.log = gateway, name, mode, log
        self.token = ScopedToken(id="", secret="")  # issued by the gateway right after construction
        self.placeholders = dict(placeholders)
        self.entries: list[dict[str, Any]] = []
        self.divergences: list[str] = []
        self.closed = False
        # Upstream failures in a row; at the configured limit the trial is ended (outage.py).
        self.failures = FailureCounter(gateway.config.upstream_failures)
        self.ended = threading.Event()  # set when the gateway ended the trial: the runner stops the agent
        self._lock = threading.Lock()
        self._inflight = 0
        self._idle = threading.Condition(self._lock)

    # -- what the agent gets -------------------------------------------------------------------
    @property
    def url(self) -> str:
        return self.gateway.url

    @property
    def openai_url(self) -> str:
        return self.gateway.url + "/v1"  # OpenAI clients expect the /v1 in the base URL

    def gateway_env(self) -> dict[str, str]:
        """Base URLs and credentials for every CLI the gateway serves: all point here, all hold the token."""
        secret = self.token.secret
        return {"SKILLEVAL_GATEWAY_URL": self.url, "SKILLEVAL_GATEWAY_TOKEN": secret,
                "ANTHROPIC_BASE_URL": self.url, "ANTHROPIC_API_KEY": secret,
                "OPENAI_BASE_URL": self.openai_url, "OPENAI_API_KEY": secret,
                "GOOGLE_GEMINI_BASE_URL": self.url, "GEMINI_API_KEY": secret}

    def agent_env(self, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """The whole environment for an agent process: allow-listed host variables, the gateway's,
        then ``extra``. Refuses (KeyLeak) if any value contains a real provider key."""
        env = {k: os.environ[k] for k in AGENT_ENV_ALLOW if os.environ.get(k)}
        env.update(self.gateway_env())
        env.update(extra or {})
        for name, value in env.items():
            if any(key in value for key in self.gateway.config.real_keys()):
                raise KeyLeak(f"environment variable {name} for trial {self.name!r} holds a real provider key")
        return env

    # -- what happened -------------------------------------------------------------------------
    def diverged(self, message: str) -> None:
        with self._lock:
            self.divergences.append(message)

    def begin(self) -> None:
        with self._lock:
            self._inflight += 1

    def wait_idle(self, timeout: float = 10.0) -> bool:
        """Wait until no request of this trial is being served. A client has its answer a moment
        before the gateway has logged it; call this before reading ``entries`` of a live trial."""
        with self._idle:
            return self._idle.wait_for(lambda: self._inflight == 0, timeout)

    def record(self, ex: Exchange) -> dict[str, Any]:
        cost, price = self.gateway.prices.cost(ex.request.model, ex.usage)
        billed = self.mode.billed and cost > 0
        entry: dict[str, Any] = {
            "ts": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"), "trial": self.name, "token_id": self.token.id,
            "mode": self.mode.name, "protocol": ex.protocol.name, "family": ex.protocol.family, "method": ex.method, "path": ex.path,
            "model": ex.request.model, "stream": ex.request.stream, "status": ex.status,
            "tokens_in": ex.usage.input_tokens, "tokens_out": ex.usage.output_tokens, "tokens_cached": ex.usage.cached_tokens,
            "latency_ms": ex.latency_ms, "cost_usd": cost, "price": price, "billed": billed,
            "tools": len(ex.request.tools), "tool_results": len(ex.request.tool_results),
            "note": ex.note, "error": ex.error, "detail": ex.detail or None,
        }
        if self.gateway.config.log_bodies:
            entry["body"] = self.gateway.scrubber.value(ex.payload)
        try:
            self.log.write(entry)
            if billed:
                self.gateway.budget.charge(cost)
        finally:  # even if the disk fails, the request is counted as finished
            with self._idle:
                self.entries.append(entry)
                self._inflight -= 1
                if self.failures.observe(entry):
                    self.ended.set()
                self._idle.notify_all()
        return entry

    @property
    def outage(self) -> str | None:
        """Why the gateway ended this trial early (upstream failures in a row), or None."""
        return self.failures.outage

    @property
    def families(self) -> set[str]:
        """The upstream families (anthropic, openai, gemini) this trial's requests went to."""
        return {str(e["family"]) for e in list(self.entries) if e.get("family")}

    @property
    def answered(self) -> bool:
        """At least one request got a good answer."""
        return any(e["status"] == 200 and not e["error"] for e in list(self.entries))

    @property
    def usage(self) -> Usage:
        total = Usage()
        for e in list(self.entries):
            total = total + Usage(e["tokens_in"], e["tokens_out"], e["tokens_cached"])
        return total

    @property
    def cost_usd(self) -> float:
        return round(float(sum(e["cost_usd"] for e in list(self.entries))), 8)

    def request_texts(self) -> list[str]:
        """Each logged request body as JSON text, in order: what skill-listing assertions search."""
        return [json.dumps(e.get("body"), ensure_ascii=False) for e in list(self.entries)]

    def check(self) -> None:
        """Raise :class:`ReplayDivergence` listing every divergence of this trial."""
        if self.divergences:
            raise ReplayDivergence("\n".join(self.divergences))

    def summary(self) -> dict[str, Any]:
        usage = self.usage
        return {"trial": self.name, "token_id": self.token.id, "mode": self.mode.name, "requests": len(self.entries),
                "tokens_in": usage.input_tokens, "tokens_out": usage.output_tokens, "cost_usd": self.cost_usd,
                "errors": sum(1 for e in self.entries if e["error"]), "divergences": list(self.divergences), "outage": self.outage}
