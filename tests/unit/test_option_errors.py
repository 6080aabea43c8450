"""A bad option value is one clean usage error at start-up (``ERROR: ...``, exit 4, no traceback), wherever it
is set (flag, ini key, environment) and whichever subsystem reads it: not a traceback at each trial's setup
once the gateway fixture first reads it, and not a value a dry run accepts and prices."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import manifest, write_skill

pytest_plugins = ["pytester"]
EVALS = {"skill_name": "demo-skill", "evals": [
    {"id": "c1", "prompt": "Do the demo", "expected_output": "done", "script": [{"text": "done"}]}]}


@pytest.fixture
def skills(pytester: pytest.Pytester) -> Path:
    write_skill(pytester.path / "skills", "demo-skill", {"SKILL.md": manifest(), "evals/evals.json": json.dumps(EVALS)})
    return pytester.path / "skills"


def usage_error(result: pytest.RunResult, message: str) -> None:
    err = result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, (result.ret, result.stdout.str()[-3000:], err[-3000:])
    assert f"ERROR: {message}" in err, err
    assert "Traceback" not in err + result.stdout.str()


@pytest.mark.parametrize(("args", "message"), [
    (("--skilleval-gateway=bogus",), "--skilleval-gateway: unknown mode 'bogus' (expected one of: "),
    (("--skilleval-tier3", "--skilleval-dry-run", "--skilleval-gateway=bogus"), "--skilleval-gateway: unknown mode 'bogus'"),
    (("--skilleval-budget-usd=-1",), "--skilleval-budget-usd must not be negative"),
    (("--skilleval-tier3", "--skilleval-dry-run", "--skilleval-budget-usd=-1"), "--skilleval-budget-usd must not be negative"),
    (("--skilleval-gateway-timeout=0",), "--skilleval-gateway-timeout must be positive"),
    (("--skilleval-upstream-failures=-1",), "--skilleval-upstream-failures and --skilleval-circuit-breaker must be >= 0"),
    (("--skilleval-gateway-upstream=nope",), "--skilleval-gateway-upstream: expected 'family=value'"),
    (("--skilleval-min-rubric=500",), "--skilleval-min-rubric must be between 0 and 100"),
    (("--skilleval-min-rubric=-1",), "--skilleval-min-rubric must be between 0 and 100"),
    (("-o", "skilleval_allow_incomplete=maybe"), "ini key skilleval_allow_incomplete: invalid truth value 'maybe'"),
    (("-o", "skilleval_no_block_on_dedup=maybe"), "ini key skilleval_no_block_on_dedup: invalid truth value 'maybe'"),
    (("-o", "skilleval_min_quality=high"), "ini key skilleval_min_quality: expected a number, got 'high'"),
], ids=lambda v: " ".join(v) if isinstance(v, tuple) else None)
def test_a_bad_value_is_a_usage_error_at_start_up(pytester: pytest.Pytester, skills: Path, args: tuple[str, ...], message: str) -> None:
    usage_error(pytester.runpytest("--skills", "skills", "--collect-only", "-p", "no:cacheprovider", *args), message)


def test_a_bad_gateway_mode_from_the_environment_and_the_ini_file(pytester: pytest.Pytester, skills: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SKILLEVAL_GATEWAY", "bogus")
    usage_error(pytester.runpytest("--skills", "skills", "--collect-only", "-p", "no:cacheprovider"), "--skilleval-gateway: unknown mode")
    monkeypatch.delenv("SKILLEVAL_GATEWAY")
    pytester.makeini("[pytest]\nskilleval_budget_usd = -2\n")
    usage_error(pytester.runpytest("--skills", "skills", "--collect-only", "-p", "no:cacheprovider"), "--skilleval-budget-usd")


@pytest.mark.parametrize("env", ["SKILLEVAL_NO_BLOCK_ON_DEDUP", "SKILLEVAL_ALLOW_INCOMPLETE"])
def test_a_bad_boolean_from_the_environment_is_a_usage_error_naming_the_variable(
        pytester: pytest.Pytester, skills: Path, monkeypatch: pytest.MonkeyPatch, env: str) -> None:
    """SKILLEVAL_NO_BLOCK_ON_DEDUP=maybe was read as false: Tier 2 kept blocking, with no word."""
    monkeypatch.setenv(env, "maybe")
    usage_error(pytester.runpytest("--skills", "skills", "--collect-only", "-p", "no:cacheprovider"),
                f"environment variable {env}: expected a boolean, got 'maybe'")
    monkeypatch.setenv(env, " Off ")  # what the flag and ini forms accept is accepted here too
    assert pytester.runpytest("--skills", "skills", "--collect-only", "-p", "no:cacheprovider").ret == pytest.ExitCode.OK


def test_a_run_with_a_bad_gateway_mode_stops_before_any_item_and_writes_no_report(pytester: pytest.Pytester, skills: Path) -> None:
    result = pytester.runpytest("--skills", "skills", "-p", "no:cacheprovider", "--skilleval-tier3", "--skilleval-checks=schema",
                                "--skilleval-gateway=bogus", "--skilleval-report-dir=rep")
    usage_error(result, "--skilleval-gateway: unknown mode 'bogus'")
    assert not (pytester.path / "rep").exists()


def test_good_values_are_what_the_gateway_fixture_gets(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_gw='''
def test_config(skilleval_gateway_config):
    c = skilleval_gateway_config
    assert (c.mode, c.budget_usd, c.timeout_s, c.upstream_failures, c.breaker_trials) == ("record", 0.0, 12.5, 0, 0)
''')
    result = pytester.runpytest("-p", "no:cacheprovider", "--skilleval-gateway=Record", "--skilleval-budget-usd=0",
                                "--skilleval-gateway-timeout=12.5", "--skilleval-upstream-failures=0", "--skilleval-circuit-breaker=0")
    result.assert_outcomes(passed=1)
