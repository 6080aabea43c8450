"""Trigger items as pytest collects them (no agent runs here): ids, markers, opt-in, options."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def skills(pytester: pytest.Pytester) -> Path:
    for name in ("csv-summary", "semver-bump"):
        shutil.copytree(REPO / "example_skills" / name, pytester.path / "skills" / name)
    return pytester.path / "skills"


def test_items_ids_markers_and_opt_in(pytester: pytest.Pytester, skills: Path) -> None:
    off = pytester.runpytest_subprocess("--skills", "skills", "--collect-only", "-q", "-m", "triggers", "-p", "no:cacheprovider")
    assert "no tests collected" in off.stdout.str() or "deselected" in off.stdout.str()
    result = pytester.runpytest_subprocess("--skills", "skills", "--skilleval-triggers", "--skilleval-agents=claude-code,codex",
                                           "--skilleval-trigger-runs=2", "--collect-only", "-q", "-m", "triggers and agent_codex",
                                           "-p", "no:cacheprovider")
    ids = [line for line in result.stdout.lines if "::triggers::" in line]
    assert len(ids) == 2 * 12 * 2  # skills × queries × runs, codex only
    assert "skills/csv-summary::triggers::near-xlsx[codex-r2]" in ids
    header = pytester.runpytest_subprocess("--skills", "skills", "--skilleval-triggers", "--skilleval-agents=claude-code,codex",
                                           "--skilleval-trigger-runs=2", "--collect-only", "-m", "nothing", "-p", "no:cacheprovider")
    assert "skilleval triggers: agents, gateway=scripted agents=claude-code,codex runs=2" in header.stdout.str()


def test_model_mode_collects_and_bad_options_are_usage_errors(pytester: pytest.Pytester, skills: Path) -> None:
    result = pytester.runpytest_subprocess("--skills", "skills/csv-summary", "--skilleval-trigger-mode=model", "--collect-only", "-q",
                                           "-m", "triggers", "-p", "no:cacheprovider")
    assert "skills/csv-summary::triggers::whats-in-csv[claude-code-r3]" in result.stdout.lines
    for bad in ("--skilleval-trigger-mode=guess", "--block-on-triggers=0.8", "--skilleval-trigger-runs=0"):
        run = pytester.runpytest_subprocess("--skills", "skills", "--skilleval-triggers", bad, "--collect-only", "-p", "no:cacheprovider")
        assert run.ret == pytest.ExitCode.USAGE_ERROR, bad


def test_from_cases_adds_the_routing_labelled_cases(pytester: pytest.Pytester, skills: Path) -> None:
    (skills / "semver-bump" / "evals" / "triggers.json").unlink()
    result = pytester.runpytest_subprocess("--skills", "skills/semver-bump", "--skilleval-triggers", "--skilleval-triggers-from-cases",
                                           "--skilleval-trigger-runs=1", "--collect-only", "-q", "-m", "triggers", "-p", "no:cacheprovider")
    cases = json.loads((skills / "semver-bump" / "evals" / "evals.json").read_text())["evals"]
    ids = [line for line in result.stdout.lines if "::triggers::" in line]
    assert len(ids) == len(cases) and all("::triggers::case." in i for i in ids)
