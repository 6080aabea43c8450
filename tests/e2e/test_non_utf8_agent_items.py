"""A skill folder whose name is not valid UTF-8 (``semver-bump-\\xff``) under Tier 3 and trigger trials.

Its trial items' locations held the raw path (a surrogate): under xdist execnet refused to send the
worker's reports and the run ended in INTERNALERROR, exit 3, no report at all; at ``-n 0`` every trial
FAILED because its record could not be dumped to JSON. The trials must be scored as on a plain name."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from e2e_clis import REPO
from test_tier3_plugin import COMMON, need

pytest_plugins = ["pytester"]
KEY = "semver-bump-\\udcff"  # the skill key, escaped as results.json writes it


def _run(pytester: pytest.Pytester, *args: str) -> tuple[pytest.RunResult, dict]:
    shutil.copytree(REPO / "example_skills" / "semver-bump", os.fsdecode(os.fsencode(pytester.path) + b"/skills/semver-bump-\xff"))
    result = pytester.runpytest_subprocess("--skills", "skills", "--skilleval-report-dir=rep", "-rA", *args, *COMMON, timeout=600)
    text = result.stdout.str() + result.stderr.str()
    assert "INTERNALERROR" not in text and "surrogates not allowed" not in text, text[-4000:]
    assert result.ret in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED), text[-4000:]
    data = json.loads((pytester.path / "rep" / "results.json").read_bytes().decode("utf-8"))
    return result, next(s for s in data["skills"] if s["key"] == KEY)


@pytest.mark.parametrize("workers", ["0", "2"])
def test_tier3_trials_of_a_skill_folder_not_utf8(pytester: pytest.Pytester, workers: str) -> None:
    need("claude-code")
    result, skill = _run(pytester, "-m", "tier3", "--skilleval-tier3", "-k", "semver-001", "-n", workers)
    outcomes = result.parseoutcomes()
    # as on a plain name (test_a_failing_baseline_shows_as_advisory_unless_blocking): the skill arm passes, the baseline is advisory
    assert (outcomes.get("passed"), outcomes.get("advisory"), outcomes.get("failed")) == (1, 1, None), result.stdout.str()[-4000:]
    attempts = [a for agent in skill["tier3"]["agents"] for a in agent["attempts"]]
    assert sorted(a["status"] for a in attempts) == ["FAILED", "PASSED"], attempts
    assert f"skills/{KEY}::tier3::semver-001[claude-code-with_skill-a1]" in result.stdout.str()


@pytest.mark.parametrize("workers", ["0", "2"])
def test_trigger_trials_of_a_skill_folder_not_utf8(pytester: pytest.Pytester, workers: str) -> None:
    need("claude-code")
    result, skill = _run(pytester, "-m", "triggers", "--skilleval-triggers", "--skilleval-agents=claude-code", "-n", workers)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed") and not outcomes.get("failed") and not outcomes.get("error"), result.stdout.str()[-4000:]
    assert f"skills/{KEY}::triggers::" in result.stdout.str()
    assert skill["triggers"], skill.keys()
