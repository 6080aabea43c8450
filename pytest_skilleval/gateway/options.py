"""Gateway options, ini keys and environment variables (same precedence as :mod:`pytest_skilleval.config`).

Real keys are not options: they are read from the host environment when the gateway is built,
held by the proxy only, and never written anywhere.
"""

from __future__ import annotations

import uuid
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
    from pytest_skilleval.gateway.protocols import FAMILIES  # here, not at the top: every pytest run reads these options

    out: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in text.split(","))):
        family, sep, value = item.partition("=")
        if not sep or family.strip() not in FAMILIES or not value.strip():
            raise pytest.UsageError(f"{flag}: expected 'family=value' with family in {', '.join(FAMILIES)}, got {item!r}")
        out[family.strip()] = value.strip()
    return out


def config_from_pytest(config: pytest.Config) -> GatewayConfig:
    values = {opt.name: config_mod.value(config, opt) for opt in OPTIONS}
    mode = str(values["skilleval_gateway"]).strip().lower()
    if mode not in MODES:
        raise pytest.UsageError(f"--skilleval-gateway: unknown mode {mode!r} (expected one of: {', '.join(MODES)})")
    timeout = float(values["skilleval_gateway_timeout"])
    budget = values["skilleval_budget_usd"]
    if not timeout > 0 or (budget is not None and budget < 0):
        raise pytest.UsageError("--skilleval-gateway-timeout must be positive and --skilleval-budget-usd not negative")
    failures, breaker = int(values["skilleval_upstream_failures"]), int(values["skilleval_circuit_breaker"])
    if failures < 0 or breaker < 0:
        raise pytest.UsageError("--skilleval-upstream-failures and --skilleval-circuit-breaker must be >= 0")
    upstreams = upstreams_from_env(_pairs("--skilleval-gateway-upstream", values["skilleval_gateway_upstream"] or ""),
                                   _pairs("--skilleval-gateway-key-env", values["skilleval_gateway_key_env"] or ""))
    log_dir, cassettes, prices = values["skilleval_gateway_log_dir"], values["skilleval_cassette_dir"], values["skilleval_gateway_prices"]
    # Every xdist worker gets the controller's run id: the budget ledger is shared by all of them.
    run_id = getattr(config, "workerinput", {}).get("testrunuid") or uuid.uuid4().hex[:12]
    return GatewayConfig(mode=mode, upstreams=upstreams, timeout_s=timeout,
                         log_dir=config.invocation_params.dir / log_dir if log_dir else None,
                         cassette_dir=config.rootpath / cassettes if cassettes else None,
                         budget_usd=float(budget) if budget is not None else None,
                         prices=Path(prices) if prices else None, run_id=str(run_id), upstream_failures=failures,
                         breaker_trials=breaker)
