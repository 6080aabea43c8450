"""Metering: prices, the per-trial JSONL log, the per-run budget, and the pytest fixtures/options."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pytest_skilleval.gateway import BudgetExceeded, Gateway, GatewayConfig, PriceTable, Script, Upstream
from pytest_skilleval.gateway.fake_upstream import FakeUpstream
from pytest_skilleval.gateway.protocols.base import Usage

HELLO = Script.from_data({"steps": [{"text": "hello"}]})


def ask(trial_url: str, secret: str, model: str = "claude-sonnet-4-6") -> httpx.Response:
    return httpx.post(trial_url + "/v1/messages", headers={"x-api-key": secret},
                      json={"model": model, "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]})


def test_price_lookup_takes_the_longest_prefix() -> None:
    table = PriceTable.load()
    assert table.lookup("gpt-4o-mini-2024-07-18")[0] == "gpt-4o-mini"
    assert table.lookup("gpt-4o-2024-08-06")[0] == "gpt-4o"
    assert table.lookup("models/gemini-2.5-flash-lite")[0] == "gemini-2.5-flash-lite"
    assert table.lookup("some-new-model")[0] == "default"
    cost, key = table.cost("claude-sonnet-4-6", Usage(input_tokens=1_000_000, output_tokens=1_000_000, cached_tokens=500_000))
    assert key == "claude-sonnet-4" and cost == pytest.approx(0.5 * 3 + 0.5 * 0.3 + 15)


def test_custom_price_table_needs_a_default(tmp_path: Path) -> None:
    path = tmp_path / "prices.json"
    path.write_text(json.dumps({"models": {"m": {"input": 1, "output": 2}}}))
    with pytest.raises(ValueError, match="default"):
        PriceTable.load(path)


def test_log_line_per_request(tmp_path: Path) -> None:
    with Gateway(GatewayConfig(log_dir=tmp_path)) as gw, gw.trial("case-1::with[a/b]", script=HELLO) as trial:
        for _ in range(3):
            assert ask(trial.url, trial.token.secret).status_code == 200
    (log,) = tmp_path.glob("case-1_with_a_b-*.jsonl")
    entries = [json.loads(line) for line in log.read_text().splitlines()]
    assert len(entries) == 3
    assert {k for k in entries[0]} >= {"protocol", "path", "model", "tokens_in", "tokens_out", "latency_ms", "cost_usd", "token_id"}
    assert entries[0]["protocol"] == "anthropic" and entries[0]["cost_usd"] == pytest.approx((1234 * 3 + 56 * 15) / 1e6)
    assert trial.summary()["requests"] == 3 and trial.cost_usd == pytest.approx(3 * entries[0]["cost_usd"])
    closed = [json.loads(line) for line in (tmp_path / "gateway.jsonl").read_text().splitlines()]
    assert closed[-1]["event"] == "trial_closed" and closed[-1]["requests"] == 3


@pytest.fixture
def upstream() -> Iterator[FakeUpstream]:
    with FakeUpstream() as server:
        yield server


def test_budget_stops_new_trials_once_spent(tmp_path: Path, upstream: FakeUpstream) -> None:
    # One upstream call costs 1234*3/1e6 + 56*15/1e6 = $0.004542 at claude-sonnet-4 prices.
    config = GatewayConfig(mode="proxy", upstreams={"anthropic": Upstream("anthropic", upstream.url, "k" * 20)},
                           budget_usd=0.006, log_dir=tmp_path, run_id="run1")
    with Gateway(config) as gw:
        with gw.trial("first") as trial:
            ask(trial.url, trial.token.secret)
        with gw.trial("second") as trial:  # $0.0045 < $0.006: still allowed
            ask(trial.url, trial.token.secret)
        with pytest.raises(BudgetExceeded, match=r"\$0.0091 of \$0.0060.*'third' not started"):
            gw.open_trial("third")
        # Another worker of the same run shares the ledger; another run does not.
        with Gateway(GatewayConfig(mode="proxy", budget_usd=0.006, log_dir=tmp_path, run_id="run1")) as worker2:
            with pytest.raises(BudgetExceeded):
                worker2.open_trial("elsewhere")
        with Gateway(GatewayConfig(mode="proxy", budget_usd=0.006, log_dir=tmp_path, run_id="run2")) as next_run:
            next_run.close_trial(next_run.open_trial("fresh"))


def test_scripted_calls_cost_nothing_against_the_budget(tmp_path: Path) -> None:
    with Gateway(GatewayConfig(budget_usd=0.001, log_dir=tmp_path)) as gw:
        for n in range(3):
            with gw.trial(f"t{n}", script=HELLO) as trial:
                ask(trial.url, trial.token.secret)
            assert trial.entries[0]["cost_usd"] > 0 and not trial.entries[0]["billed"]
        assert gw.budget.spent() == 0


def test_fixtures_and_options_in_a_pytest_run(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_gw="""
        import httpx
        from pytest_skilleval.gateway import Script

        def test_trial(skilleval_gateway, skilleval_gateway_trial, skilleval_gateway_config):
            assert skilleval_gateway_config.budget_usd == 2.5 and skilleval_gateway_config.mode == "scripted"
            trial = skilleval_gateway_trial(script=Script.from_data({"steps": [{"text": "hi"}]}))
            r = httpx.post(trial.openai_url + "/chat/completions", headers={"authorization": "Bearer " + trial.token.secret},
                           json={"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}]})
            assert r.json()["choices"][0]["message"]["content"] == "hi"
            assert skilleval_gateway.url.startswith("http://127.0.0.1:")
    """)
    result = pytester.runpytest("-p", "no:cacheprovider", "--skilleval-budget-usd", "2.5", "--skilleval-gateway-log-dir", "gwlogs")
    result.assert_outcomes(passed=1)
    (log,) = (pytester.path / "gwlogs").glob("test_gw.py_test_trial-*.jsonl")
    assert json.loads(log.read_text())["protocol"] == "openai-chat"


def test_bad_mode_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_x(skilleval_gateway):\n    pass\n")
    result = pytester.runpytest("-p", "no:cacheprovider", "--skilleval-gateway", "live")
    assert result.ret == pytest.ExitCode.USAGE_ERROR  # at start-up, not at the fixture's setup
    result.stderr.fnmatch_lines(["ERROR: --skilleval-gateway: unknown mode 'live'*"])
