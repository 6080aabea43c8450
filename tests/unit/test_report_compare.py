"""`skilleval compare`: paired with-skill changes, newly failing checks and trials, trigger rates, the exit status."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval import cli
from pytest_skilleval.reports import compare


def attempt(case: str, score: float, status: str = "PASSED", arm: str = "with_skill") -> dict[str, Any]:
    return {"case": case, "arm": arm, "attempt": 1, "execution": 1, "status": status, "score": score,
            "dimensions": {"correctness": score, "security": 1.0}}


def run(scores: dict[str, float], *, check: str = "PASSED", recall: float = 0.9) -> dict[str, Any]:
    attempts = [attempt(c, v, "PASSED" if v >= 0.5 else "FAILED") for c, v in scores.items()]
    attempts += [attempt(c, 0.0, "FAILED", "without_skill") for c in scores]
    return {"skills": [{"key": "demo", "verdict": "PASS" if check == "PASSED" else "FAIL",
                        "checks": [{"blocking": True, "result": {"check": "schema", "tier": 1, "status": check}},
                                   {"blocking": False, "result": {"check": "lint", "tier": 1, "status": "PASSED"}}],
                        "tier3": {"agents": [{"agent": "claude-code", "attempts": attempts}]},
                        "triggers": {"agents": [{"agent": "claude-code", "recall": {"value": recall}, "precision": {"value": 1.0}}]}}]}


def test_no_change_is_no_regression() -> None:
    old = run({"a": 1.0, "b": 1.0, "c": 0.5})
    result = compare.compare(old, copy.deepcopy(old))
    assert result.regressions == [] and "No regression" in compare.markdown(result)


def test_a_score_drop_is_named_with_its_paired_interval() -> None:
    result = compare.compare(run({"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0}), run({"a": 0.0, "b": 0.0, "c": 1.0, "d": 1.0, "new-case": 0.0}))
    overall = next(m for m in result.measures if m.measure == "overall")
    assert (overall.n, overall.delta) == (4, -0.5) and overall.regression  # new-case is not shared: left out
    assert next(m for m in result.measures if m.measure == "security").delta == 0.0
    assert any(r.startswith("demo · Claude Code · correctness: 100% → 50% (-50 points, 95% CI") for r in result.regressions)
    assert result.newly_failing_trials == ["demo · Claude Code · a a1: PASSED → FAILED", "demo · Claude Code · b a1: PASSED → FAILED"]
    # below the threshold it is reported, not a regression
    small = compare.compare(run({"a": 1.0, "b": 1.0}), run({"a": 0.96, "b": 1.0}))
    assert small.regressions == [] and small.measures[0].delta == pytest.approx(-0.02)


def test_checks_verdicts_and_triggers() -> None:
    result = compare.compare(run({"a": 1.0}), run({"a": 1.0}, check="FAILED", recall=0.6))
    assert result.newly_failing_checks == ["demo: tier 1 schema PASSED → FAILED"]
    assert "demo: verdict PASS → FAIL" in result.regressions
    assert result.triggers == ["demo · Claude Code · trigger recall: 90% → 60% (-30 points)"] and result.triggers[0] in result.regressions
    back = compare.compare(run({"a": 1.0}, check="FAILED"), run({"a": 1.0}))
    assert back.newly_passing_checks == ["demo: tier 1 schema FAILED → PASSED"] and back.regressions == []


def test_cli_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "old.json").write_text(json.dumps(run({"a": 1.0, "b": 1.0})))
    (tmp_path / "new.json").write_text(json.dumps(run({"a": 0.0, "b": 1.0})))
    assert cli.main(["compare", str(tmp_path / "old.json"), str(tmp_path / "new.json")]) == 1
    assert "regression(s)" in capsys.readouterr().out
    assert cli.main(["compare", str(tmp_path / "old.json"), str(tmp_path / "new.json"), "--threshold", "60"]) == 0
    capsys.readouterr()
    assert cli.main(["compare", str(tmp_path / "old.json"), str(tmp_path / "old.json"), "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["regressions"] == []
    assert cli.main(["compare", str(tmp_path / "old.json"), str(tmp_path / "nothing.json")]) == 2
