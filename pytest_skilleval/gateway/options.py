"""Gateway options, ini keys and environment variables (same precedence as :mod:`pytest_skilleval.config`).

Real keys are not options: they are read from the host environment when the gateway is built,
held by the proxy only, and never written anywhere.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_skilleval import config as config_mod
from pytest_skilleval.config import Option
from pytest_skilleval.gateway.config import MODES, GatewayConfig, upstreams_from_env

OPTIONS = (
    Option("skilleval_gateway", "--skilleval-gateway", "SKILLEVAL_GATEWAY", "scripted",
           f"Model gateway mode for agent trials: {', '.join(MODES)}."),
    Option("skilleval_gateway_upstream", "--skilleval-gateway-upstream", "SKILLEVAL_GATEWAY_UPSTREAM", "",
           "proxy/record upstreams as 'family=URL,...' (families: anthropic, openai, gemini); default: the vendors' APIs."),
    Option("skilleval_gateway_key_env", "--skilleval-gateway-key-env", "SKILLEVAL_GATEWAY_KEY_ENV", "",
           "Host variables holding upstream keys, 'family=VAR,...' (default ANTHROPIC_API_KEY, OPENAI_API_KEY, GEMINI_API_KEY)."),
    Option("skilleval_gateway_timeout", "--skilleval-gateway-timeout", "SKILLEVAL_GATEWAY_TIMEOUT", 300.0,
           "Seconds the gateway waits on an upstream read before answering 504.", "float"),
    Option("skilleval_gateway_log_dir", "--skilleval-gateway-log-dir", "SKILLEVAL_GATEWAY_LOG_DIR", "skilleval-report/gateway",
           "Folder for the per-trial request logs (JSON lines); '' keeps them in memory."),
    Option("skilleval_cassette_dir", "--skilleval-cassette-dir", "SKILLEVAL_CASSETTE_DIR", "cassettes",
           "Folder (relative to rootdir) of record/replay cassettes, one JSON file per trial."),
    Option("skilleval_budget_usd", "--skilleval-budget-usd", "SKILLEVAL_BUDGET_USD", None,
           "Stop starting trials once this many USD were spent on real (proxy/record) model calls in this run.", "float"),
    Option("skilleval_upstream_failures", "--skilleval-upstream-failures", "SKILLEVAL_UPSTREAM_FAILURES", 3,
           "End a trial as an infrastructure ERROR after this many upstream failures in a row (5xx, 4xx, timeout, "
           "stalled stream); 0 never does.", "int"),
    Option("skilleval_circuit_breaker", "--skilleval-circuit-breaker", "SKILLEVAL_CIRCUIT_BREAKER", 2,
           "Stop starting trials against an upstream after this many trials in a row were ended by an outage "
           "(one probe trial per minute after that); 0 never does.", "int"),
    Option("skilleval_gateway_prices", "--skilleval-gateway-prices", "SKILLEVAL_GATEWAY_PRICES", None,
           "A JSON price table replacing the built-in one (USD per million tokens)."),
)


def add_options(parser: pytest.Parser) -> None:
    group = parser.getgroup("skilleval", "skill evaluation (pytest-skilleval)")
    for opt in OPTIONS:
        group.addoption(opt.flag, action="store", default=None, dest=opt.name, metavar="VALUE", help=opt.help)
        parser.addini(opt.name, opt.help, type="string", default=None)


def _pairs(flag: str, text: str) -> dict[str, str]:
    if not text.strip():  # every pytest run checks these options: the protocols are imported only for a value to check
        return {}
    from pytest_skilleval.gateway.protocols import FAMILIES

    out: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        family, sep, value = item.partition("=")
        if not sep or family.strip() not in FAMILIES or not value.strip():
            raise pytest.UsageError(f"{flag}: expected 'family=value' with family in {', '.join(FAMILIES)}, got {item!r}")
        out[family.strip()] = value.strip()
    return out


@dataclass(frozen=True)
class GatewayOptions:
    """The gateway's options, checked: all of its :class:`GatewayConfig` but the upstreams' keys, which are read
    from the host environment only when the gateway is built (:func:`config_from_pytest`)."""

    mode: str
    timeout_s: float
    budget_usd: float | None
    urls: dict[str, str]
    key_env: dict[str, str]
    log_dir: Path | None
    cassette_dir: Path | None
    prices: Path | None
    run_id: str
    upstream_failures: int
    breaker_trials: int


#: The options as checked at start-up (gateway/fixtures.py's pytest_configure): a bad value is a usage error
#: then, once, and not an error at the setup of every trial that asks for the gateway.
GATEWAY_OPTIONS = pytest.StashKey[GatewayOptions]()


def read_options(config: pytest.Config) -> GatewayOptions:
    """The gateway options of flag > ini > environment > default; a bad value raises :class:`pytest.UsageError`."""
    values = {opt.name: config_mod.value(config, opt) for opt in OPTIONS}
    mode = str(values["skilleval_gateway"]).strip().lower()
    if mode not in MODES:
        raise pytest.UsageError(f"--skilleval-gateway: unknown mode {mode!r} (expected one of: {', '.join(MODES)})")
    timeout = float(values["skilleval_gateway_timeout"])
    if not timeout > 0:
        raise pytest.UsageError(f"--skilleval-gateway-timeout must be positive, got {timeout:g}")
    budget = values["skilleval_budget_usd"]
    if budget is not None and not budget >= 0:  # NaN is no budget either
        raise pytest.UsageError(f"--skilleval-budget-usd must not be negative, got {budget:g}")
    failures, breaker = int(values["skilleval_upstream_failures"]), int(values["skilleval_circuit_breaker"])
    if failures < 0 or breaker < 0:
        raise pytest.UsageError("--skilleval-upstream-failures and --skilleval-circuit-breaker must be >= 0")
    urls = _pairs("--skilleval-gateway-upstream", values["skilleval_gateway_upstream"] or "")
    key_env = _pairs("--skilleval-gateway-key-env", values["skilleval_gateway_key_env"] or "")
    log_dir, cassettes, prices = values["skilleval_gateway_log_dir"], values["skilleval_cassette_dir"], values["skilleval_gateway_prices"]
    # Every xdist worker gets the controller's run id: the budget ledger is shared by all of them.
    run_id = getattr(config, "workerinput", {}).get("testrunuid") or uuid.uuid4().hex[:12]
    return GatewayOptions(mode=mode, timeout_s=timeout, budget_usd=float(budget) if budget is not None else None, urls=urls, key_env=key_env,
                          log_dir=config.invocation_params.dir / log_dir if log_dir else None,
                          cassette_dir=config.rootpath / cassettes if cassettes else None,
                          prices=Path(prices) if prices else None, run_id=str(run_id), upstream_failures=failures, breaker_trials=breaker)


def config_from_pytest(config: pytest.Config) -> GatewayConfig:
    """The gateway's config: the options checked at start-up, and the upstreams' keys read from the host environment now."""
    opts = config.stash.get(GATEWAY_OPTIONS, None) or read_options(config)
    return GatewayConfig(mode=opts.mode, upstreams=upstreams_from_env(opts.urls, opts.key_env), timeout_s=opts.timeout_s,
                         log_dir=opts.log_dir, cassette_dir=opts.cassette_dir, budget_usd=opts.budget_usd, prices=opts.prices,
                         run_id=opts.run_id, upstream_failures=opts.upstream_failures, breaker_trials=opts.breaker_trials)
