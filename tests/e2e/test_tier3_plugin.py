"""Tier 3 as a user runs it: real CLIs in scripted mode through pytest, xdist, reruns, attempts,
JUnit, the cards and results.json, ``--block-on-agent-eval``, and the ``skill_trial`` fixture."""

from __future__ import annotations

import json
import shutil
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path

import pytest
from conftest import require
from e2e_clis import AGENTS_DIR, CLIS, REPO
from e2e_fixtures import have

pytest_plugins = ["pytester"]
COMMON = ("-p", "no:cacheprovider", f"--skilleval-agents-dir={AGENTS_DIR}")


def need(*agents: str) -> None:
    require(have("bwrap"), "Tier 3 trials need bubblewrap (apt-get install bubblewrap)")
    for name in agents:
        agent = CLIS[name].agent
        require(agent.locate([AGENTS_DIR]) is not None, f"{name}: `{agent.executable}` is not installed (make agents)")


def junit_names(path: Path) -> list[str]:
    return [f"{case.get('classname')}::{case.get('name')}" for case in ET.parse(path).getroot().iter("testcase")
            if "tier3" in (case.get("classname") or "") + (case.get("name") or "")]


def test_two_agents_xdist_reruns(pytester: pytest.Pytester) -> None:
    """The issue's command: pytest --skills example_skills -m tier3 --skilleval-agents=claude-code,codex -n 4 --reruns 2"""
    need("claude-code", "codex")
    shutil.copytree(REPO / "example_skills", pytester.path / "example_skills")
    result = pytester.runpytest_subprocess("--skills", "example_skills", "-m", "tier3", "--skilleval-agents=claude-code,codex",
                                           "-n", "4", "--reruns", "2", "--junitxml=junit.xml", *COMMON, timeout=600)
    out = result.stdout.str()
    assert result.ret == 0, out[-4000:]  # advisory: baselines that fail their case do not fail the run
    # 9 cases × 2 arms × 2 agents; the 6 positive cases' baselines fail, so each is run 3 times (2 reruns)
    outcomes = result.parseoutcomes()
    # the failing baselines show as ADVISORY (the expected outcome), not as failures; every trial is
    # decided by typed assertions, none NOT SCORED for want of a judge
    assert (outcomes["passed"], outcomes["advisory"], outcomes["rerun"]) == (24, 12, 24) and "failed" not in outcomes, outcomes
    assert "skipped" not in outcomes and "NOT SCORED" not in out, outcomes
    names = junit_names(pytester.path / "junit.xml")
    assert len(names) == 60 and len(set(names)) == 60, Counter(names).most_common(3)  # 36 items + 24 reruns, each its own name
    assert sum(n.endswith("-a1-run1]") for n in names) == 12 and sum(n.endswith("-a1-run2]") for n in names) == 12
    data = json.loads((pytester.path / "skilleval-report" / "results.json").read_text())
    for skill in data["skills"]:
        t3 = skill["tier3"]
        assert t3["scripted"] and t3["reruns"] == 2 and {a["agent"] for a in t3["agents"]} == {"claude-code", "codex"}
        for agent in t3["agents"]:
            assert agent["verdict"] == "PASS"
            with_arm, without = agent["arms"]["with_skill"], agent["arms"]["without_skill"]
            assert with_arm["reruns"]["k"] == 3 and with_arm["reruns"]["rate"] == 1.0
            assert without["reruns"]["failed_cases"] == t3["labels"]["positive"]  # every positive baseline, all 3 attempts
            assert max(r["execution"] for r in agent["attempts"]) == 3
            overall = next(r for r in agent["lift"] if r["measure"] == "overall")
            assert overall["delta"] > 0 and overall["n"] == t3["cases"]
        assert not skill["recommended_for_publication"]  # scripted: never publication evidence
        card = (pytester.path / "skilleval-report" / skill["key"] / "BENCHMARK.md").read_text()
        assert "pass@3 (reruns)" in card and "harness check — not a model measurement" in card
        assert "| Claude Code (Baseline → Skill) | Codex CLI (Baseline → Skill) |" in card
        assert "| without_skill | a1 | 3 | FAILED |" in card  # per-attempt rows, reruns included
    assert "pass@3 (reruns) 100%" in out and "failed trials are advisory" in out


def test_attempts_give_unique_names_and_pass_at_k(pytester: pytest.Pytester) -> None:
    need("claude-code")
    shutil.copytree(REPO / "example_skills" / "semver-bump", pytester.path / "skills" / "semver-bump")
    result = pytester.runpytest_subprocess("--skills", "skills", "-m", "tier3", "--skilleval-tier3", "--skilleval-attempts", "2", "-n", "2",
                                           "--junitxml=junit.xml", *COMMON, timeout=600)
    assert result.ret == 0, result.stdout.str()[-3000:]
    names = junit_names(pytester.path / "junit.xml")
    assert len(names) == 12 and len(set(names)) == 12
    assert any(n.endswith("semver-001[claude-code-with_skill-a2]") for n in names)
    card = (pytester.path / "skilleval-report" / "semver-bump" / "BENCHMARK.md").read_text()
    assert "pass@1 100%, pass^1 100%; pass@2 100%, pass^2 100%" in card  # with_skill
    assert "pass@2 33%, pass^2 33%" in card  # without_skill: only the negative control passes
    assert "- Attempts per case and arm: 2" in card


def test_aa_runs_the_baseline_twice_and_the_card_shows_the_noise_floor_and_power(pytester: pytest.Pytester) -> None:
    # Issue 10: `--skilleval-aa` is a third arm staged exactly like without_skill (the skill absent), and
    # the card states the A/A noise floor beside the real lift, and the power line.
    need("claude-code")
    shutil.copytree(REPO / "example_skills" / "semver-bump", pytester.path / "skills" / "semver-bump")
    result = pytester.runpytest_subprocess("--skills", "skills", "-m", "tier3", "--skilleval-tier3", "--skilleval-aa", *COMMON, timeout=600)
    assert result.ret == 0, result.stdout.str()[-3000:]
    outcomes = result.parseoutcomes()
    assert "failed" not in outcomes and outcomes["advisory"] >= 2, outcomes  # the repeated baseline is a baseline too
    data = json.loads((pytester.path / "skilleval-report" / "results.json").read_text())
    agent = data["skills"][0]["tier3"]["agents"][0]
    repeat = [r for r in agent["attempts"] if r["arm"] == "without_skill_aa"]
    baseline = [r for r in agent["attempts"] if r["arm"] == "without_skill"]
    assert len(repeat) == len(baseline) > 0 and all(r["skill_listed"] is False and not r["invoked"] for r in repeat)
    assert [r["status"] for r in repeat] == [r["status"] for r in baseline]  # scripted: the same run twice
    assert agent["noise_floor"]["delta"] == 0 and agent["power"]["n"] == len(baseline)
    card = (pytester.path / "skilleval-report" / "semver-bump" / "BENCHMARK.md").read_text()
    assert "- A/A noise floor (Claude Code): the without_skill arm run twice differs by ±0 points" in card
    assert "- Power (Claude Code): " in card and "a 10-point lift needs ≈ " in card


FAILING_SKILL_EVALS = {"skill_name": "broken-skill", "evals": [{
    "id": "b1", "prompt": "Say the magic word.", "expected_output": "abracadabra",
    "assertions": [{"type": "contains", "value": "abracadabra", "text": "says the magic word"}],
    "script": {"claude-code": [{"text": "I do not know any magic word."}]}}]}


@pytest.mark.parametrize(("flags", "code"), [((), 0), (("--block-on-agent-eval",), 1)], ids=["advisory", "blocking"])
def test_block_on_agent_eval_makes_a_fail_verdict_fail_the_run(pytester: pytest.Pytester, flags: tuple[str, ...], code: int) -> None:
    need("claude-code")
    from conftest import manifest, write_skill

    write_skill(pytester.path / "skills", "broken-skill", {"SKILL.md": manifest("broken-skill", "Use when the user wants a magic word."),
                                                           "evals/evals.json": json.dumps(FAILING_SKILL_EVALS)})
    result = pytester.runpytest_subprocess("--skills", "skills", "-m", "tier3", "--skilleval-tier3", "--skilleval-skip-baseline", *flags,
                                           *COMMON, timeout=300)
    assert result.ret == code, result.stdout.str()[-3000:]
    result.assert_outcomes(failed=1)
    data = json.loads((pytester.path / "skilleval-report" / "results.json").read_text())
    skill = data["skills"][0]
    assert skill["tier3"]["verdict"] == "FAIL" and data["exit_status"] == code
    assert skill["tiers"]["3"]["status"] == ("FAIL (harness check)" if code else "FAIL (advisory) (harness check)")
    assert skill["verdict"] == ("FAIL" if code else "PASS")


HAND_WRITTEN = f'''
def test_semver_skill_helps(skill_trial):
    result = skill_trial.run({str(REPO / "example_skills" / "semver-bump")!r}, "semver-001", agent="claude-code")
    assert result.with_skill_passed and result.lift > 0, result.summary()
    assert [r.status for r in result.without_skill] == ["FAILED"]
    assert result.with_skill[0].invoked_skills == ["semver-bump"]
'''


def test_skill_trial_fixture(pytester: pytest.Pytester) -> None:
    need("claude-code")
    pytester.makepyfile(test_hand_written=HAND_WRITTEN)
    result = pytester.runpytest_subprocess(*COMMON, timeout=300)
    result.assert_outcomes(passed=1)


@pytest.mark.parametrize(("flags", "word"), [((), "ADVISORY"), (("--block-on-agent-eval",), "FAILED")], ids=["advisory", "blocking"])
def test_a_failing_baseline_shows_as_advisory_unless_blocking(pytester: pytest.Pytester, flags: tuple[str, ...], word: str) -> None:
    """A without-skill trial that fails its case is the expected outcome: Tier 1's advisory word, not a red failure."""
    need("claude-code")
    shutil.copytree(REPO / "example_skills" / "semver-bump", pytester.path / "skills" / "semver-bump")
    result = pytester.runpytest_subprocess("--skills", "skills", "-m", "tier3", "--skilleval-tier3", "-k", "semver-001", "-v", *flags,
                                           *COMMON, timeout=600)
    out = result.stdout.str()
    result.stdout.fnmatch_lines([f"*semver-001?claude-code-without_skill-a1? {word}*"])
    outcomes = result.parseoutcomes()
    if word == "ADVISORY":
        assert result.ret == 0 and (outcomes.get("passed"), outcomes.get("advisory"), outcomes.get("failed")) == (1, 1, None), out[-3000:]
        assert "FAILED skills/" not in out  # not listed among the failures
    else:
        assert outcomes.get("failed") == 1, out[-3000:]
