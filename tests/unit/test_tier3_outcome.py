"""The outcome rules (tier3/outcome.py) and the gateway's outage detection (gateway/outage.py), rule by rule."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval.gateway.outage import CIRCUIT_OPEN, CircuitBreaker, FailureCounter
from pytest_skilleval.tier3 import outcome
from pytest_skilleval.tier3.outcome import RunFacts, infrastructure_failure
from pytest_skilleval.tier3.sandboxes.process import run_process


def entry(status: int = 200, error: str | None = None, detail: str = "") -> dict[str, Any]:
    return {"status": status, "error": error, "detail": detail, "family": "anthropic"}


OK, E500, E400 = entry(), entry(500, "upstream_500", "overloaded"), entry(400, "upstream_400", "bad request")
STALL = entry(200, "upstream_stream_broken", "upstream stream stalled for 300s")


@pytest.mark.parametrize(("facts", "expected"), [
    (RunFacts(exit_code=0, requests=[OK]), None),
    (RunFacts(exit_code=0, requests=[E500, OK]), None),  # the agent's own retry got through: its outcome
    (RunFacts(exit_code=1, requests=[OK, E400]), "the model API failed and the agent got no answer after it: HTTP 400 upstream_400"),
    (RunFacts(exit_code=None, cancelled=True, outage="3 upstream failures in a row"), "upstream outage: 3 upstream failures in a row"),
    (RunFacts(exit_code=1, api_error_status=529, run_error="API Error: 529"), "the agent reported a model API error: HTTP 529"),
    (RunFacts(exit_code=1, run_error="error_during_execution", requests=[OK]), "the agent ended its run in error: error_during_execution"),
    (RunFacts(exit_code=1, run_error="error_max_turns", max_turns_reached=True, requests=[OK]), None),  # out of turns: the agent's FAIL
    (RunFacts(exit_code=None, timed_out=True, requests=[OK]), None),  # out of time: the agent's FAIL
    (RunFacts(exit_code=None, timed_out=True, requests=[STALL, OK]), "killed at the time limit while the upstream stalled"),
    (RunFacts(exit_code=-9, requests=[OK]), "the agent process was killed by signal 9"),
    (RunFacts(exit_code=137, requests=[OK]), "the agent process was killed (exit 137)"),
    (RunFacts(exit_code=1, requests=[OK]), None),  # a CLI that failed on its own, with an answer: graded
])
def test_infrastructure_failure_rules(facts: RunFacts, expected: str | None) -> None:
    found = infrastructure_failure(facts)
    assert found == expected if expected is None else (found or "").startswith(expected), found


def test_statuses_that_count() -> None:
    assert [outcome.passed(s) for s in ("PASSED", "FAILED", "ERROR", "NOT_SCORED", "SKIPPED")] == [True, False, None, None, None]
    assert outcome.COUNTED == {"PASSED", "FAILED"} and outcome.label("NOT_SCORED") == "NOT SCORED"


@pytest.mark.parametrize(("dims", "status"), [
    ({"security": 1.0, "efficiency": 1.0, "discoverability": 1.0, "correctness": None, "effectiveness": None}, "NOT_SCORED"),
    ({"security": 0.0, "efficiency": 1.0, "correctness": None, "effectiveness": None}, "FAILED"),
    ({"security": 1.0, "efficiency": 1.0, "correctness": 0.4, "effectiveness": None}, "FAILED"),
    ({"security": 0.4, "efficiency": 1.0, "correctness": 1.0, "effectiveness": 1.0}, "FAILED"),
    ({"security": None, "efficiency": None, "correctness": 0.5, "effectiveness": None}, "PASSED"),
])
def test_nothing_decided_security_and_efficiency_never_pass(dims: dict[str, float | None], status: str) -> None:
    assert outcome.decide_unasserted(dims).status == status


def test_no_output_and_workspace_changes(tmp_path: Path) -> None:
    (tmp_path / "input.csv").write_text("a,b\n")
    before = outcome.snapshot(tmp_path)
    assert outcome.workspace_changed(before, tmp_path) is False
    assert outcome.no_output(" \n", 0, False) and outcome.no_output(None, 0, None)
    assert not outcome.no_output("hi", 0, False) and not outcome.no_output(None, 1, False) and not outcome.no_output(None, 0, True)
    (tmp_path / "out.md").write_text("x")
    assert outcome.workspace_changed(before, tmp_path) is True
    assert outcome.workspace_changed(None, tmp_path) is None


def test_failures_in_a_row_make_an_outage_once() -> None:
    counter = FailureCounter(3)
    assert [counter.observe(e) for e in (E500, E500, OK, E500, E500)] == [False] * 5  # a good answer resets the count
    assert counter.observe(E400) is True and counter.outage is not None
    assert counter.outage.startswith("3 upstream failures in a row, the last: HTTP 400 upstream_400 (bad request)")
    assert counter.observe(E500) is False and counter.total == 6
    off = FailureCounter(0)
    assert not any(off.observe(E500) for _ in range(10)) and off.outage is None
    scripted = FailureCounter(1)  # a script that ran out, a client that left: not the upstream's failure
    assert not scripted.observe(entry(500, "script_exhausted")) and not scripted.observe(entry(200, "client_disconnected"))


def test_the_circuit_breaker_opens_probes_and_closes() -> None:
    now = [0.0]
    breaker = CircuitBreaker(threshold=2, cooldown_s=60, clock=lambda: now[0])
    breaker.trial_ended({"anthropic"}, "3 upstream failures in a row", answered=False)
    assert breaker.refusal({"anthropic"}) is None
    breaker.trial_ended({"anthropic"}, "3 upstream failures in a row", answered=False)
    refusal = breaker.refusal({"anthropic"})
    assert refusal is not None and refusal.startswith(f"{CIRCUIT_OPEN}: the anthropic upstream is down (2 trials in a row")
    assert breaker.refusal({"openai"}) is None and breaker.refusal(()) is None  # other upstreams, and agents not seen yet, run
    now[0] = 61.0
    assert breaker.refusal({"anthropic"}) is None  # the probe
    assert breaker.refusal({"anthropic"}) is not None  # only one at a time
    breaker.trial_ended({"anthropic"}, None, answered=True)
    assert breaker.refusal({"anthropic"}) is None and not breaker.is_open("anthropic")
    assert [kind for _, kind, _ in breaker.events] == ["opened", "probe", "closed"]


def test_a_cancelled_run_is_stopped_and_says_so(tmp_path: Path) -> None:
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.perf_counter()
    result = run_process([sys.executable, "-c", "import time; print('up', flush=True); time.sleep(60)"], {}, tmp_path, 30, cancel=cancel)
    assert time.perf_counter() - started < 5
    assert result.cancelled and not result.timed_out and result.exit_code is None and result.stdout.startswith("up")
    done = run_process([sys.executable, "-c", "print('ok')"], {}, tmp_path, 30, cancel=threading.Event())
    assert (done.exit_code, done.stdout.strip(), done.cancelled) == (0, "ok", False)


def test_the_agents_own_error_result_is_read_from_its_event_stream() -> None:
    """What the real Claude Code 2.1 prints when its upstream answers 400, and when it hits --max-turns."""
    from pytest_skilleval.tier3.agents import ClaudeCode
    from pytest_skilleval.trajectory import default_registry

    init = {"type": "system", "subtype": "init", "session_id": "s", "tools": [], "model": "claude-sonnet-4-5"}
    api = {"type": "result", "subtype": "success", "is_error": True, "api_error_status": 400, "num_turns": 1,
           "result": "API Error: 400 fake upstream 400", "session_id": "s"}
    turns = {"type": "result", "subtype": "error_max_turns", "is_error": True, "num_turns": 3, "session_id": "s"}
    parse = default_registry().parse_records
    failed = parse([init, api], format=ClaudeCode().parser)
    assert (failed.api_error_status, failed.run_error, failed.max_turns_reached) == (400, "API Error: 400 fake upstream 400", False)
    found = infrastructure_failure(RunFacts(exit_code=1, run_error=failed.run_error, api_error_status=failed.api_error_status))
    assert found is not None and found.startswith("the agent reported a model API error: HTTP 400")
    limited = parse([init, turns], format=ClaudeCode().parser)
    assert limited.max_turns_reached and limited.api_error_status is None
    assert infrastructure_failure(RunFacts(exit_code=1, run_error=limited.run_error, max_turns_reached=True, requests=[OK])) is None
