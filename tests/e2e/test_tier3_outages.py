"""Outages and idle agents with the REAL Claude Code CLI, in bubblewrap, through the gateway (issue 10, items 1 and 2).

The upstream is the gateway's fake vendor API (``gateway/fake_upstream.py``): the only fake here, and
only to inject the faults — HTTP 400, HTTP 500. The CLI, the gateway in proxy mode, the sandbox, the
trial runner, the grader and the controller's statistics are the package's own.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from conftest import manifest, require, write_skill
from e2e_clis import AGENTS_DIR, CLIS
from e2e_fixtures import have

from pytest_skilleval.gateway import Gateway, GatewayConfig, Script, Upstream
from pytest_skilleval.gateway.fake_upstream import FakeUpstream
from pytest_skilleval.reports.tier3 import terminal_lines
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier3 import report as tier3_report
from pytest_skilleval.tier3.cases import load_cases
from pytest_skilleval.tier3.items import format_trial
from pytest_skilleval.tier3.options import Tier3Settings
from pytest_skilleval.tier3.record import TrialRecord
from pytest_skilleval.tier3.sandboxes import LocalSandbox
from pytest_skilleval.tier3.trial import TrialRequest, TrialRunner

CLAUDE = CLIS["claude-code"].agent
ANSWER = "The answer is 42."
EVALS = {"skill_name": "demo-skill", "evals": [
    {"id": "free-text", "prompt": "What is six times seven?", "expected_output": "42",
     "assertions": ["says 42"],  # free text only: before issue 10 an error text PASSED such a case
     "script": {"claude-code": [{"text": ANSWER}]}},
    {"id": "typed", "prompt": "What is six times seven?", "expected_output": "42",
     "assertions": [{"type": "contains", "value": "42"}],
     "script": {"claude-code": [{"text": ANSWER}]}},
    {"id": "empty-reply", "prompt": "What is six times seven?", "expected_output": "42",
     "assertions": ["says 42"],
     "script": {"claude-code": [{"text": ""}]}},
]}


@pytest.fixture(scope="module")
def skill(tmp_path_factory: pytest.TempPathFactory) -> Skill:
    base = tmp_path_factory.mktemp("skills")
    return Skill(root=write_skill(base, "demo-skill", {"SKILL.md": manifest(), "evals/evals.json": json.dumps(EVALS)}), key="demo-skill")


@pytest.fixture(scope="module")
def sandbox() -> Iterator[LocalSandbox]:
    require(have("bwrap"), "Tier 3 trials need bubblewrap (apt-get install bubblewrap)")
    require(CLAUDE.locate([AGENTS_DIR]) is not None, "claude-code: `claude` is not installed (make agents)")
    box = LocalSandbox()
    require(box.isolated, f"Tier 3 trials need bubblewrap: {box.bwrap_problem}")
    yield box
    box.close()


def proxy_gateway(upstream: FakeUpstream, tmp: Path, **config: object) -> Gateway:
    return Gateway(GatewayConfig(mode="proxy", upstreams={"anthropic": Upstream("anthropic", upstream.url, "sk-ant-fake-upstream-key")},
                                 log_dir=tmp, **config))  # type: ignore[arg-type]


def run(runner: TrialRunner, skill: Skill, case_id: str, root: Path, arm: str = "with_skill", attempt: int = 1) -> TrialRecord:
    case = load_cases(skill).get(case_id)
    assert case is not None
    req = TrialRequest(skill=skill, skill_key="demo-skill", case=case, agent=CLAUDE, arm=arm, name=f"{case_id}-{arm}-a{attempt}",
                       attempt=attempt, nodeid=f"demo-skill::tier3::{case_id}[claude-code-{arm}-a{attempt}]")
    return runner.run(req, root)


def settings(**kw: object) -> Tier3Settings:
    return Tier3Settings(enabled=True, agents_dirs=(AGENTS_DIR,), timeout_s=240, **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("status", ["400", "500"])
def test_an_upstream_error_is_an_error_trial_that_enters_no_mean(status: str, skill: Skill, sandbox: LocalSandbox, tmp_path: Path) -> None:
    """On a99a1ca the CLI's "API Error: 400 …" was the answer: FAILED (Correctness 0) — or PASSED for a free-text case."""
    with FakeUpstream(fault=status) as upstream, proxy_gateway(upstream, tmp_path / "gw") as gateway:
        runner = TrialRunner(gateway, sandbox, settings(infra_retries=0))
        records = [run(runner, skill, case, tmp_path / f"{case}-{arm}", arm)
                   for case in ("free-text", "typed") for arm in ("with_skill", "without_skill")]
    for record in records:
        assert record.status == "ERROR" and record.error_cause == "infra", format_trial(record)
        assert record.reason is not None and f"HTTP {status}" in record.reason
        assert record.grade is not None and record.grade.score is None and set(record.grade.dimensions.values()) == {None}
    t3 = tier3_report.build(records, blocking=False, reruns=0)
    agent = t3.agents[0]
    for arm in agent.arms.values():
        assert arm.errors == 2 and arm.passed == arm.failed == 0 and arm.pass_rate is None
        assert set(arm.measures.values()) == {None}
        assert all(p.pass_at_k is None for p in arm.pass_at_k)
    assert all(row.delta is None for row in agent.lift)
    assert t3.errors == 4 and t3.status() == "INCOMPLETE"


def test_six_trials_against_an_upstream_that_answers_500_finish_as_errors_within_two_minutes(skill: Skill, sandbox: LocalSandbox,
                                                                                              tmp_path: Path) -> None:
    """Claude Code backs off and retries a 500 on its own for minutes; the gateway ends each trial after 3
    failures in a row, and after 2 such trials the circuit breaker stops starting new ones."""
    started = time.perf_counter()
    with FakeUpstream(fault="500") as upstream, proxy_gateway(upstream, tmp_path / "gw") as gateway:
        runner = TrialRunner(gateway, sandbox, settings())  # the default: one infrastructure retry
        records = [run(runner, skill, "typed", tmp_path / f"t{n}", attempt=n) for n in range(1, 7)]
        events = list(gateway.breaker.events)
        upstream_requests = len(upstream.requests)
    elapsed = time.perf_counter() - started
    assert elapsed < 120, f"six trials took {elapsed:.0f} s"
    assert [r.status for r in records] == ["ERROR"] * 6 and {r.error_cause for r in records} == {"infra"}
    first = records[0]
    assert first.reason is not None and first.reason.startswith("upstream outage: 3 upstream failures in a row"), format_trial(first)
    assert first.infra_retries == 1 and any(n.startswith("infrastructure retry 1:") for n in first.notes)
    assert [e[1] for e in events] == ["opened"] and events[0][0] == "anthropic"
    refused = records[1:]
    assert all((r.reason or "").startswith("circuit breaker open: the anthropic upstream is down") for r in refused)
    assert all(r.requests == 0 and r.infra_retries == 0 for r in refused)
    assert upstream_requests <= 2 * 4, upstream_requests  # two runs of the first trial, 3 failures each (+1 in flight)
    t3 = tier3_report.build(records, blocking=False, reruns=0)  # the run says so: terminal and card
    assert t3.breaker_refused == 5 and t3.infra_retries == 1 and t3.status() == "INCOMPLETE"
    said = terminal_lines("demo-skill", t3)
    assert any(line.startswith("tier3 demo-skill: 5 trial(s) not started, ERROR: circuit breaker open: the anthropic upstream is down")
               for line in said), said
    print(f"\nsix trials against a 500 upstream: {elapsed:.1f} s in all; first trial {first.total_seconds:.1f} s "
          f"(two runs); {upstream_requests} upstream request(s)")


def test_an_infrastructure_retry_that_succeeds_is_recorded_once(skill: Skill, sandbox: LocalSandbox, tmp_path: Path) -> None:
    with FakeUpstream(Script.from_data({"steps": [{"text": ANSWER}]}), fault="500") as upstream, \
            proxy_gateway(upstream, tmp_path / "gw") as gateway:
        def heal() -> None:  # the outage ends once the first run has been ended by the gateway
            while len(upstream.requests) < 3:
                time.sleep(0.05)
            upstream.set_fault(None)

        healer = threading.Thread(target=heal, daemon=True)
        healer.start()
        record = run(TrialRunner(gateway, sandbox, settings()), skill, "typed", tmp_path / "t")
        healer.join(5)
    assert record.status == "PASSED" and record.infra_retries == 1 and record.attempt == 1 and record.execution == 1, format_trial(record)
    assert any(n.startswith("infrastructure retry 1: the run before it ERRORed (upstream outage") for n in record.notes)


def test_a_scripted_empty_reply_is_failed_no_output(skill: Skill, sandbox: LocalSandbox, tmp_path: Path) -> None:
    """On a99a1ca this trial PASSED: Security 1.0 (clean) and Efficiency 1.0 (no calls) carried the 0.5 threshold."""
    with Gateway(GatewayConfig(mode="scripted", log_dir=tmp_path / "gw")) as gateway:
        record = run(TrialRunner(gateway, sandbox, settings()), skill, "empty-reply", tmp_path / "t")
    assert record.status == "FAILED" and (record.reason or "").startswith("no output"), format_trial(record)
    assert record.exit_code == 0 and record.requests >= 1 and not (record.final_answer or "").strip()
