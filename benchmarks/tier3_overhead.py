"""What the Tier 3 harness costs on top of the agent CLI itself, scripted mode, measured side by side.

Per agent, interleaved round by round (with_skill and without_skill arms of ``csv-summary-001``):

- bare:    the CLI alone — its adapter's command line, run as a plain subprocess against the
           gateway, no staging, no sandbox: the CLI's own wall time;
- agent:   the same CLI inside a trial, as the trial runner starts it: bubblewrap + the in-sandbox
           gateway relay around it (``TrialRecord.cli_seconds``);
- trial:   the whole trial (``TrialRecord.total_seconds``): staging, the gateway trial, the agent,
           trajectory parsing, grading.

Plugin time per trial = trial − bare, split into sandbox (agent − bare) and harness (trial − agent).
Then the pytest run of the issue's command, ``-n 1`` against ``-n 4``, for the xdist speed-up.

    .venv/bin/python benchmarks/tier3_overhead.py [--rounds 3] [--agents claude-code,codex,opencode,gemini] [--no-xdist]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pytest_skilleval.gateway import Gateway, GatewayConfig, Script
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier3.agents import AgentContext, AgentRegistry, ClaudeCode, Codex, GeminiCli, OpenCode
from pytest_skilleval.tier3.agents.base import Agent
from pytest_skilleval.tier3.cases import load_cases
from pytest_skilleval.tier3.options import DEFAULT_AGENTS_DIR, Tier3Settings
from pytest_skilleval.tier3.sandboxes import LocalSandbox
from pytest_skilleval.tier3.sandboxes.process import run_process
from pytest_skilleval.tier3.staging import agent_environment, hidden_dirs, stage_trial
from pytest_skilleval.tier3.trial import TrialRequest, TrialRunner

REPO = Path(__file__).resolve().parents[1]
AGENTS_DIR = Path(os.environ.get("SKILLEVAL_AGENTS_DIR", REPO / DEFAULT_AGENTS_DIR))
SKILL_DIR = REPO / "example_skills" / "csv-summary"
CASE = "csv-summary-001"


def bare_run(agent: Agent, gateway: Gateway, skill: Skill, arm: str, root: Path) -> float:
    """The CLI's own wall time: staged the same way (so it does the same work), run without a sandbox."""
    case = load_cases(skill).get(CASE)
    assert case is not None
    stage = stage_trial(root, skill, case, agent, arm)
    script = case.script_for(agent.name)
    assert script is not None
    with gateway.trial(f"bare-{agent.name}-{arm}-{root.name}", script=Script.from_data(script.render(stage.placeholders(skill.name)))) as trial:
        ctx = AgentContext(home=stage.home, workspace=stage.workspace, tmp=stage.tmp, gateway_url=trial.url)
        env = agent_environment(trial, stage, agent.configure(ctx))
        executable = agent.locate([AGENTS_DIR])
        assert executable is not None
        done = run_process(agent.command(executable, case.prompt, ctx), env, stage.workspace, 240)
    assert done.exit_code == 0, done.stderr[-2000:]
    return done.wall_s


def measure(agents: list[Agent], rounds: int) -> None:
    skill = Skill(root=SKILL_DIR, key="csv-summary")
    cases = load_cases(skill)
    case = cases.get(CASE)
    assert case is not None
    sandbox = LocalSandbox()
    if not sandbox.isolated:
        sys.exit(f"bubblewrap is needed: {sandbox.bwrap_problem}")
    rows: dict[str, dict[str, list[float]]] = {a.name: {"bare": [], "agent": [], "trial": []} for a in agents}
    with Gateway(GatewayConfig(mode="scripted")) as gateway, tempfile.TemporaryDirectory(prefix="t3-bench-") as tmp:
        runner = TrialRunner(gateway, sandbox, Tier3Settings(enabled=True, agents_dirs=(AGENTS_DIR,)), hidden=tuple(hidden_dirs(agents)))
        for agent in agents:  # warm-up: first starts fill the page cache and the adapter's caches
            bare_run(agent, gateway, skill, "with_skill", Path(tmp) / f"warm-{agent.name}")
        for n in range(rounds):
            for agent in agents:
                for arm in ("with_skill", "without_skill"):
                    rows[agent.name]["bare"].append(bare_run(agent, gateway, skill, arm, Path(tmp) / f"bare-{agent.name}-{arm}-{n}"))
                    req = TrialRequest(skill=skill, skill_key="csv-summary", case=case, agent=agent, arm=arm,
                                       name=f"bench-{agent.name}-{arm}-{n}", dataset_digest=cases.digest())
                    record = runner.run(req, Path(tmp) / f"trial-{agent.name}-{arm}-{n}")
                    assert record.status == ("PASSED" if arm == "with_skill" else "FAILED"), record.reason
                    rows[agent.name]["agent"].append(record.cli_seconds or 0.0)
                    rows[agent.name]["trial"].append(record.total_seconds or 0.0)
    sandbox.close()
    print(f"\nper trial, median of {rounds * 2} ({rounds} rounds × 2 arms), seconds; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"{'agent':<12} {'bare CLI':>9} {'in sandbox':>11} {'whole trial':>12} {'plugin':>8} {'of which sandbox':>17} {'harness':>8} "
          f"{'plugin %':>9}")
    for name, r in rows.items():
        bare, agent_s, trial = (statistics.median(r[k]) for k in ("bare", "agent", "trial"))
        plugin = trial - bare
        print(f"{name:<12} {bare:>9.2f} {agent_s:>11.2f} {trial:>12.2f} {plugin:>8.2f} {agent_s - bare:>17.2f} {trial - agent_s:>8.2f} "
              f"{100 * plugin / bare:>8.0f}%")


def xdist_speedup(agents: str, repeats: int) -> None:
    """-n 1 and -n 4 alternate (1, 4, 1, 4, …) so that drifting machine load hits both alike; medians."""
    with tempfile.TemporaryDirectory(prefix="t3-xdist-") as tmp:
        shutil.copytree(REPO / "example_skills", Path(tmp) / "example_skills")
        times: dict[str, list[float]] = {"1": [], "4": []}
        for _ in range(repeats):
            for workers in ("1", "4"):
                started = time.perf_counter()
                done = subprocess.run([sys.executable, "-m", "pytest", "--skills", "example_skills", "-m", "tier3",
                                       f"--skilleval-agents={agents}", "-n", workers, "-q", "-p", "no:cacheprovider",
                                       f"--skilleval-agents-dir={AGENTS_DIR}", "--skilleval-report-dir=", "-o", "addopts="],
                                      cwd=tmp, capture_output=True, text=True)
                times[workers].append(time.perf_counter() - started)
                summary = (done.stdout.strip().splitlines() or ["?"])[-1]
                print(f"-n {workers}: {times[workers][-1]:.1f} s  ({summary.strip('= ')}); load average {os.getloadavg()[0]:.1f}")
        one, four = statistics.median(times["1"]), statistics.median(times["4"])
        print(f"median -n 1 {one:.1f} s, -n 4 {four:.1f} s: speed-up {one / four:.2f}× on {os.cpu_count()} cores")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--agents", default="claude-code,codex,opencode,gemini")
    parser.add_argument("--xdist-agents", default="claude-code,codex", help="agents of the -n 1 vs -n 4 run")
    parser.add_argument("--xdist-repeats", type=int, default=2)
    parser.add_argument("--no-xdist", action="store_true")
    args = parser.parse_args()
    registry = AgentRegistry([ClaudeCode(), Codex(), OpenCode(), GeminiCli()])
    agents = [a for a in registry.select(args.agents) if a.missing([AGENTS_DIR]) is None]
    measure(agents, args.rounds)
    if not args.no_xdist:
        xdist_speedup(args.xdist_agents, args.xdist_repeats)


if __name__ == "__main__":
    main()
