"""The harbor backend for real: Harbor 0.25 (its own Python 3.12 venv, `make harbor`) runs one job per arm
through its own orchestration and its docker environment, with the real Claude Code CLI in scripted mode
reaching this run's gateway through the socket relay; the trials come back as ordinary trial records
(cards, pass@k, lift). Harbor's exception_info is an ERROR, never a reward of 0. The job configs for
cloud environments load in Harbor's own models."""

from __future__ import annotations

import json
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import require
from e2e_clis import AGENTS_DIR, REPO

from pytest_skilleval.skill import Skill
from pytest_skilleval.tier3.agents import ClaudeCode
from pytest_skilleval.tier3.cases import load_cases
from pytest_skilleval.tier3.sandboxes.harbor import tasks

HARBOR = REPO / ".cache" / "harbor-venv" / "bin" / "harbor"
HARBOR_PYTHON = HARBOR.parent / "python"
COMMON = ("-p", "no:cacheprovider", f"--skilleval-agents-dir={AGENTS_DIR}", "--skilleval-sandbox=harbor", f"--skilleval-harbor={HARBOR}")


def need_harbor() -> None:
    require(HARBOR.exists(), "Harbor is not installed (make harbor)")
    require(shutil.which("docker") is not None and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0,
            "Harbor's docker environment needs a docker engine and the Compose v2 plugin (make test / make harbor)")
    require(ClaudeCode().locate([AGENTS_DIR]) is not None, "claude-code is not installed (make agents)")


def one_case_skill(base: Path, case_id: str = "semver-001") -> Path:
    dest = base / "skills" / "semver-bump"
    shutil.copytree(REPO / "example_skills" / "semver-bump", dest)
    evals = dest / "evals" / "evals.json"
    data = json.loads(evals.read_text())
    data["evals"] = [c for c in data["evals"] if c["id"] == case_id]
    evals.write_text(json.dumps(data, indent=2))
    return dest


def containers() -> set[str]:
    """Compose-managed containers (Harbor's trials); the docker sandbox's own tests may run beside this one."""
    done = subprocess.run(["docker", "ps", "-aq", "--filter", "label=com.docker.compose.project"], capture_output=True, text=True, check=True)
    return set(done.stdout.split())


def test_a_harbor_job_per_arm_with_claude_code_through_the_gateway(pytester: pytest.Pytester) -> None:
    need_harbor()
    one_case_skill(pytester.path)
    before = containers()
    result = pytester.runpytest_subprocess("--skills", "skills", "-m", "tier3", "--skilleval-tier3", "--skilleval-attempts", "2", "-n", "2",
                                           "--junitxml=junit.xml", *COMMON, timeout=900)
    out = result.stdout.str()
    outcomes = result.parseoutcomes()  # both with-skill attempts pass; the baseline fails its case (advisory)
    assert (outcomes["passed"], outcomes.get("advisory")) == (2, 2) and "failed" not in outcomes, outcomes
    assert result.ret == 0, out[-3000:]
    data = json.loads((pytester.path / "skilleval-report" / "results.json").read_text())
    agent = data["skills"][0]["tier3"]["agents"][0]
    attempts = agent["attempts"]
    assert sorted((a["arm"], a["attempt"], a["status"]) for a in attempts) == [
        ("with_skill", 1, "PASSED"), ("with_skill", 2, "PASSED"), ("without_skill", 1, "FAILED"), ("without_skill", 2, "FAILED")]
    assert (agent["arms"]["with_skill"]["passed"], agent["arms"]["without_skill"]["failed"]) == (2, 2)
    card = (pytester.path / "skilleval-report" / "semver-bump" / "BENCHMARK.md").read_text()
    assert "harbor 0.25" in card and "docker environment" in card
    assert "| with_skill | a2 |" in card and "| without_skill | a2 |" in card  # per-attempt rows, as for local trials
    overall = next(r for r in agent["lift"] if r["measure"] == "overall")
    assert overall["delta"] > 0
    # Each Harbor trial reached the gateway with its own token: metered requests on every record, distinct Harbor trials.
    records = [json.loads(line) for line in _trial_records(pytester.path)]
    assert len({r["artifacts"]["harbor_trial"] for r in records}) == 4
    assert all(r["requests"] >= 1 and r["tokens_in"] > 0 for r in records), [(r["requests"], r["tokens_in"]) for r in records]
    assert all(any(n.startswith("Harbor trial ") for n in r["notes"]) for r in records)
    with_skill = [r for r in records if r["arm"] == "with_skill"]
    assert all(r["invoked_skills"] == ["semver-bump"] and r["skill_listed"] for r in with_skill)
    job = json.loads(next(Path(with_skill[0]["artifacts"]["harbor_trial"]).parent.glob("result.json")).read_text())
    assert job["n_total_trials"] == 2 and job["stats"]["n_errored_trials"] == 0
    run_dir = Path(with_skill[0]["artifacts"]["harbor_trial"]).parents[3]  # <run>/<arm batch>/jobs/<job>/<trial>
    assert len(list(run_dir.glob("*/job.json"))) == 2  # one job per arm, shared by both xdist workers
    assert containers() <= before  # Harbor removed its containers (compose down), nothing of ours is left


def _trial_records(path: Path) -> list[str]:
    """The whole trial records, as JUnit carries them (property skilleval.trial)."""
    root = ET.parse(path / "junit.xml").getroot()
    return [p.get("value") or "" for p in root.iter("property") if p.get("name") == "skilleval.trial"]


def test_harbor_exception_info_is_an_infrastructure_error_not_a_zero(pytester: pytest.Pytester) -> None:
    """The fault: an agent time limit (50 ms) no Claude Code start-up can meet, so Harbor ends the trial with AgentTimeoutError.
    (1 s was met on a quiet machine: the scripted trial finished and passed.)"""
    need_harbor()
    one_case_skill(pytester.path)
    result = pytester.runpytest_subprocess("--skills", "skills", "-m", "tier3", "--skilleval-tier3", "--skilleval-skip-baseline",
                                           "--skilleval-trial-timeout", "0.05", "--skilleval-harbor-retries", "0", "--junitxml=junit.xml",
                                           *COMMON, timeout=600)
    result.assert_outcomes(failed=1)
    (record,) = [json.loads(r) for r in _trial_records(pytester.path)]
    assert record["status"] == "ERROR" and record["error_cause"] == "infra", record
    assert "AgentTimeoutError" in record["reason"] and record["grade"]["status"] == "ERROR"  # not a FAILED 0
    data = json.loads((pytester.path / "skilleval-report" / "results.json").read_text())
    assert data["skills"][0]["tier3"]["agents"][0]["arms"]["with_skill"]["errors"] == 1
    assert data["skills"][0]["tiers"]["3"]["status"].startswith("INCOMPLETE"), data["skills"][0]["tiers"]["3"]


def test_a_broken_harbor_job_is_an_infra_error_for_each_item_and_runs_once(pytester: pytest.Pytester) -> None:
    """The fault: a harbor executable that answers --version and then fails every job."""
    need_harbor()
    one_case_skill(pytester.path)
    calls = pytester.path / "calls.txt"
    fake = pytester.path / "fake-harbor"
    fake.write_text(f'#!/bin/sh\necho "$1" >> {calls}\n[ "$1" = --version ] && {{ echo "harbor 0.25.0"; exit 0; }}\n'
                    'echo "cannot reach the cluster" >&2; exit 3\n')
    fake.chmod(0o755)
    common = [a for a in COMMON if not a.startswith("--skilleval-harbor=")]
    result = pytester.runpytest_subprocess("--skills", "skills", "-m", "tier3", "--skilleval-tier3", "--skilleval-skip-baseline",
                                           "--skilleval-attempts", "2", f"--skilleval-harbor={fake}", "--junitxml=junit.xml", *common,
                                           timeout=600)
    result.assert_outcomes(failed=2)
    records = [json.loads(r) for r in _trial_records(pytester.path)]
    assert [(r["status"], r["error_cause"]) for r in records] == [("ERROR", "infra")] * 2, records
    assert all("harbor exited 3: cannot reach the cluster" in r["reason"] for r in records)
    assert calls.read_text().split().count("run") == 1  # one job for the arm, not one per item


@pytest.mark.parametrize("environment", ["daytona", "modal"])
def test_cloud_job_configs_load_in_harbors_own_models(tmp_path: Path, environment: str) -> None:
    require(HARBOR_PYTHON.exists(), "Harbor is not installed (make harbor)")
    skill = Skill(root=REPO / "example_skills" / "semver-bump", key="semver-bump")
    case = load_cases(skill).get("semver-001")
    assert case is not None
    task = tmp_path / "tasks" / "semver-001"
    tasks.write_task(tasks.TaskSpec(case, task, {"notes.txt": b"x"}), "ghcr.io/example/agent:1", agent_timeout_s=300, cpus=1, memory_mb=2048)
    config = tasks.job_config(name="semver-bump-with_skill", jobs_dir=tmp_path / "jobs", tasks=[task], agent="claude-code",
                              model="anthropic/claude-sonnet-4-5", environment=environment, attempts=3, concurrency=50, retries=2,
                              skill_dir=REPO / "example_skills" / "semver-bump", base_url=None, overlay_file=None)
    (tmp_path / "job.json").write_text(json.dumps(config))
    check = f"""
import json, sys, tomllib
from harbor.models.job.config import JobConfig
from harbor.models.task.config import TaskConfig
job = JobConfig.model_validate(json.load(open({str(tmp_path / "job.json")!r})))
task = TaskConfig.model_validate(tomllib.load(open({str(task / "task.toml")!r}, "rb")))
print(job.environment.type.value, job.n_attempts, job.retry.max_retries, job.agents[0].name, len(job.agents[0].skills), task.agent.timeout_sec,
      task.environment.workdir, task.artifacts[0].source)
"""
    done = subprocess.run([str(HARBOR_PYTHON), "-c", check], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == [environment, "3", "2", "claude-code", "1", "300.0", "/workspace", "/workspace"]
