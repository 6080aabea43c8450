"""The gateway: one ThreadingHTTPServer on loopback that every agent and SDK talks to.

Routing is by path suffix (``/messages``, ``/responses``, ``/chat/completions``,
``/models/<m>:…``), so any base-URL prefix a client adds still lands. Each model request must
carry a live scoped token; the token names the trial, the trial's mode answers, and the
exchange is logged to that trial's JSONL file.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import re
import threading
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from pytest_skilleval.gateway.cassette import Cassette
from pytest_skilleval.gateway.config import GatewayConfig
from pytest_skilleval.gateway.exchange import Exchange
from pytest_skilleval.gateway.handler import BadRequest, Handler, read_body, send_json_bytes
from pytest_skilleval.gateway.metering import Budget, PriceTable, RequestLog
from pytest_skilleval.gateway.modes import Mode, ProxyMode, RecordMode, ReplayMode, ScriptedMode
from pytest_skilleval.gateway.modes.pool import ConnectionPool
from pytest_skilleval.gateway.outage import CircuitBreaker
from pytest_skilleval.gateway.protocols import for_path
from pytest_skilleval.gateway.protocols.base import dumps
from pytest_skilleval.gateway.script import Script
from pytest_skilleval.gateway.scrub import Scrubber
from pytest_skilleval.gateway.tokens import TokenRegistry, presented_secret
from pytest_skilleval.gateway.trial import Trial


def slug(name: str) -> str:
    """A file name for a trial; deterministic, so replay finds what record wrote."""
    clean = re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("._")[:100] or "trial"
    return clean if clean == name else f"{clean}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


class Gateway:
    """Start with ``with Gateway(GatewayConfig(...)) as gw:``; open trials with ``gw.trial(name, ...)``."""

    def __init__(self, config: GatewayConfig | None = None) -> None:
        self.config = config or GatewayConfig()
        self.prices = PriceTable.load(self.config.prices)
        ledger = self.config.log_dir / f"budget-{self.config.run_id}.jsonl" if self.config.log_dir else None
        self.budget = Budget(self.config.budget_usd, ledger)
        self.tokens: TokenRegistry[Trial] = TokenRegistry()
        # Real keys literally; scoped tokens are caught by their sk-skilleval- shape (built once: it
        # runs on every logged body).
        self.scrubber = Scrubber(self.config.real_keys())
        self.pool = ConnectionPool()  # keep-alive upstream connections, shared by every proxy/record trial
        self.trials: list[Trial] = []
        self.breaker = CircuitBreaker(self.config.breaker_trials, self.config.breaker_cooldown_s)
        self.refused: list[dict[str, Any]] = []  # requests without a live token
        self.egress: list[dict[str, Any]] = []  # attempts to use the gateway as a proxy to elsewhere
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self._gateway_log = RequestLog(self.config.log_dir / "gateway.jsonl" if self.config.log_dir else None)


    # -- lifecycle -----------------------------------------------------------------------------
    def start(self) -> Gateway:
        if self._server is None:
            server = ThreadingHTTPServer((self.config.host, 0), Handler)
            server.daemon_threads = True  # a client that never hangs up must not block shutdown
            server.gateway = self  # type: ignore[attr-defined]
            self._server = server
            self._thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                                            name="skilleval-gateway", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        for trial in [t for t in self.trials if not t.closed]:
            self.close_trial(trial)
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None
        self.pool.close()

    def __enter__(self) -> Gateway:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        if self._server is None:
            raise RuntimeError("the gateway is not started")
        return f"http://{self.config.host}:{self._server.server_port}"

    # -- trials --------------------------------------------------------------------------------
    def cassette_path(self, name: str) -> Path:
        if self.config.cassette_dir is None:
            raise ValueError("record/replay need a cassette folder (--skilleval-cassette-dir)")
        return self.config.cassette_dir / f"{slug(name)}.json"

    def _mode(self, mode: str, name: str, script: Script | None, cassette: Path | None, placeholders: Mapping[str, str]) -> Mode:
        if mode == "scripted":
            if script is None:
                raise ValueError(f"trial {name!r}: scripted mode needs a script")
            return ScriptedMode(script)
        if mode == "proxy":
            return ProxyMode(self.config.upstreams, self.config.timeout_s, self.scrubber, self.pool)
        path = cassette or self.cassette_path(name)
        if mode == "record":
            return RecordMode(self.config.upstreams, self.config.timeout_s, self.scrubber, self.pool, path, name, placeholders)
        if mode == "replay":
            if not path.is_file():
                raise FileNotFoundError(f"trial {name!r}: no cassette at {path} (record it with --skilleval-gateway=record)")
            return ReplayMode(Cassette.load(path), name, placeholders)
        raise ValueError(f"unknown gateway mode {mode!r}")

    def open_trial(self, name: str, *, script: Script | None = None, cassette: Path | None = None, mode: str | None = None,
                   placeholders: Mapping[str, str] | None = None, wrap: Callable[[Mode], Mode] | None = None) -> Trial:
        """Issue a token for a new trial. Raises BudgetExceeded when the run's budget is spent.

        ``placeholders`` (e.g. ``{"<WORKSPACE>": str(ws)}``) make recorded tool results comparable
        across runs whose temp paths differ. ``wrap`` decorates the trial's mode (the trigger mode's
        decision cut-off ends a conversation early whatever answers it).
        """
        self.budget.check(name)
        placeholders = dict(placeholders or {})
        chosen = self._mode(mode or self.config.mode, name, script, cassette, placeholders)
        if wrap is not None:
            chosen = wrap(chosen)
        log = RequestLog(self.config.log_dir / f"{slug(name)}.jsonl" if self.config.log_dir else None)
        trial = Trial(self, name, chosen, log, placeholders)
        trial.token = self.tokens.issue(trial)
        self.trials.append(trial)
        return trial

    def close_trial(self, trial: Trial) -> None:
        """Revoke the token first (nothing new gets in), then let the mode finish (cassettes)."""
        if trial.closed:
            return
        self.tokens.revoke(trial.token)
        trial.wait_idle()  # requests already inside finish and are logged before the trial is summed up
        trial.closed = True
        seen = len(self.breaker.events)
        self.breaker.trial_ended(trial.families, trial.outage, trial.answered)
        for family, kind, message in self.breaker.events[seen:]:  # the breaker says so, in the gateway's own log
            self._gateway_log.write({"event": f"circuit_{kind}", "family": family, "detail": message, "trial": trial.name})
        for problem in trial.mode.close():
            trial.diverged(problem)
        self._gateway_log.write({"event": "trial_closed", **trial.summary()})

    @contextmanager
    def trial(self, name: str, **kwargs: Any) -> Iterator[Trial]:
        trial = self.open_trial(name, **kwargs)
        try:
            yield trial
        finally:
            self.close_trial(trial)

    # -- serving -------------------------------------------------------------------------------
    def _refuse(self, kind: str, handler: BaseHTTPRequestHandler, status: int, body: Any, detail: str) -> None:
        entry = {"ts": dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds"), "event": kind, "method": handler.command,
                 "path": urlsplit(handler.path).path if not handler.path.startswith("/") else handler.path.split("?")[0],
                 "status": status, "detail": detail}
        (self.egress if kind == "egress_blocked" else self.refused).append(entry)
        self._gateway_log.write(entry)
        send_json_bytes(handler, status, dumps(body))

    def serve(self, handler: BaseHTTPRequestHandler, method: str) -> None:
        parts = urlsplit(handler.path)
        if method == "CONNECT" or parts.scheme or parts.netloc:
            # Someone used us as an HTTP(S) proxy (HTTPS_PROXY points here in e2e runs): an attempted
            # connection outside loopback. Refuse it and keep a record, so a test can assert none happened.
            self._refuse("egress_blocked", handler, 403, {"error": "egress blocked by skilleval gateway"}, handler.path)
            return
        path, query = parts.path, dict(parse_qsl(parts.query))
        headers = {k.lower(): v for k, v in handler.headers.items()}
        try:
            body = read_body(handler, headers)
        except (BadRequest, OSError) as exc:
            send_json_bytes(handler, 400, dumps({"error": {"message": str(exc)}}))
            return
        if method == "GET":
            if "/npm/" in path:  # OpenCode's plugin lookup (NPM_CONFIG_REGISTRY points here): nothing to install
                send_json_bytes(handler, 200, b"{}")
            elif path.endswith("/models"):
                send_json_bytes(handler, 200, dumps({"object": "list", "data": [{"id": "skilleval-gateway", "object": "model"}]}))
            else:
                send_json_bytes(handler, 404, dumps({"error": {"message": f"no such endpoint: GET {path}"}}))
            return
        protocol = for_path(path)
        if protocol is None:
            send_json_bytes(handler, 404, dumps({"error": {"message": f"no model endpoint at {path}"}}))
            return
        secret = presented_secret(headers, query)
        found = self.tokens.resolve(secret)
        if found is None:
            why = "token revoked: its trial has ended" if self.tokens.is_revoked(secret) else "missing or unknown token"
            self._refuse("refused", handler, 401, protocol.error_body(401, f"skilleval gateway: {why}"), why)
            return
        trial = found[1]
        try:
            payload = json.loads(body)
            if not isinstance(payload, dict):
                raise ValueError("the body must be a JSON object")
            request = protocol.parse(path, query, payload)
        except ValueError as exc:
            send_json_bytes(handler, 400, dumps(protocol.error_body(400, f"skilleval gateway: unreadable request: {exc}")))
            return
        ex = Exchange(handler, method, path, query, headers, body, payload, protocol, request, trial)
        trial.begin()
        try:
            if trial.outage:  # ended for an outage: nothing more reaches the upstream; 400 so no client retries it
                ex.send_error(400, "trial_ended", f"skilleval gateway: trial ended after an upstream outage: {trial.outage}")
            else:
                trial.mode.handle(ex)
        except Exception as exc:  # noqa: BLE001 - a bug in a mode must become an error response, not a hung client
            if ex.status == 0:
                ex.send_error(500, "gateway_error", f"skilleval gateway failed: {exc!r}")
            else:
                ex.fail("gateway_error", repr(exc))
                handler.close_connection = True
        finally:
            trial.record(ex)
