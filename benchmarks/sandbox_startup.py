"""Trial start-up overhead of the sandboxes, measured side by side in one run (median of N).

The same probe — a Python one-liner that makes one request to the gateway and exits — run:

- bare:    as a plain subprocess on the host (no sandbox): the probe's own cost;
- local:   in the ``local`` sandbox (bubblewrap + the in-sandbox relay);
- docker:  in the ``docker`` sandbox (container create, copy-in, start, relay, wait, logs, copy-back, remove).

Rounds interleave bare/local/docker so machine load hits all three alike. Start-up overhead =
sandbox − bare. Then Harbor (if installed: ``make harbor``): one job of N trials of a no-op task
(Harbor's ``nop`` agent, the trial image, ``network_mode: none``, one trial at a time); a trial's
overhead is its whole wall time (environment set-up, agent set-up, verifier, teardown — the agent
does nothing), and the job's fixed cost is the ``harbor run`` wall time minus the trials.

    .venv/bin/python benchmarks/sandbox_startup.py [--rounds 20] [--no-harbor]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

from pytest_skilleval.gateway import Gateway, GatewayConfig
from pytest_skilleval.tier3.options import DEFAULT_AGENTS_DIR
from pytest_skilleval.tier3.sandboxes import DockerSandbox, LocalSandbox, RunSpec
from pytest_skilleval.tier3.sandboxes.harbor.results import JobResult, read_trials
from pytest_skilleval.tier3.sandboxes.process import run_process

REPO = Path(__file__).resolve().parents[1]
AGENTS_DIR = Path(os.environ.get("SKILLEVAL_AGENTS_DIR", REPO / DEFAULT_AGENTS_DIR))
HARBOR = REPO / ".cache" / "harbor-venv" / "bin" / "harbor"
PROBE = "import sys, urllib.request; urllib.request.urlopen(sys.argv[1] + '/v1/models', timeout=10).read()"


def median_ms(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:7.0f} ms (min {min(values) * 1000:.0f}, max {max(values) * 1000:.0f})"


def sandboxes(rounds: int) -> dict[str, list[float]]:
    local, docker = LocalSandbox(), DockerSandbox(agents_dir=AGENTS_DIR)
    problem = docker.unavailable()
    if problem:
        sys.exit(f"docker sandbox unavailable: {problem}")
    if not local.isolated:
        sys.exit(f"local sandbox cannot confine here: {local.bwrap_problem}")
    times: dict[str, list[float]] = {"bare": [], "local": [], "docker": []}
    with Gateway(GatewayConfig(mode="scripted")) as gw, tempfile.TemporaryDirectory() as tmp:
        port = urlsplit(gw.url).port
        assert port is not None
        for n in range(rounds + 1):  # round 0 warms caches and is not counted
            for name in ("bare", "local", "docker"):
                ws = Path(tmp) / f"{name}-{n}"
                ws.mkdir()
                argv = (sys.executable if name != "docker" else "python3", "-I", "-c", PROBE, gw.url)
                env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}
                started = time.perf_counter()
                if name == "bare":
                    done = run_process(argv, env, ws, 60)
                else:
                    box = local if name == "local" else docker
                    done = box.run(RunSpec(argv=argv, env=env, cwd=ws, writable=(ws,), timeout_s=60, network="gateway",
                                           gateway=("127.0.0.1", port)))
                wall = time.perf_counter() - started
                if done.exit_code != 0:
                    sys.exit(f"{name}: the probe failed: {done.stderr[-1000:]}")
                if n:
                    times[name].append(wall)
    docker.close()
    local.close()
    return times


def harbor(rounds: int, image: str) -> tuple[list[float], float] | None:
    if not HARBOR.exists():
        print("harbor: not installed (make harbor): skipped")
        return None
    with tempfile.TemporaryDirectory() as tmp:
        task = Path(tmp) / "noop"
        (task / "environment").mkdir(parents=True)
        (task / "tests").mkdir()
        (task / "instruction.md").write_text("Do nothing.")
        (task / "environment" / "Dockerfile").write_text(f"FROM {image}\n")
        (task / "tests" / "test.sh").write_text("#!/bin/sh\necho 1 > /logs/verifier/reward.txt\n")
        (task / "tests" / "test.sh").chmod(0o755)
        (task / "task.toml").write_text('schema_version = "1.4"\n\n[verifier]\ntimeout_sec = 60.0\n\n[agent]\ntimeout_sec = 60.0\n\n'
                                        '[environment]\nnetwork_mode = "public"\nbuild_timeout_sec = 600.0\n')
        overlay = Path(tmp) / "overlay.json"
        overlay.write_text(json.dumps({"services": {"main": {"network_mode": "none", "init": True, "stop_grace_period": "1s"}}}))
        config = {"job_name": "startup", "jobs_dir": str(Path(tmp) / "jobs"), "n_attempts": rounds + 1, "n_concurrent_trials": 1,
                  "quiet": True, "environment": {"type": "docker", "delete": True, "extra_docker_compose": [str(overlay)]},
                  "agents": [{"name": "nop"}], "tasks": [{"path": str(task)}]}
        (Path(tmp) / "job.json").write_text(json.dumps(config))
        env = {k: v for k, v in os.environ.items() if k in ("PATH", "HOME", "LANG", "DOCKER_HOST")}
        started = time.perf_counter()
        done = subprocess.run([str(HARBOR), "run", "-c", str(Path(tmp) / "job.json"), "-y", "-q"], capture_output=True, text=True,
                              env={**env, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}, timeout=3600)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            print(f"harbor run failed: {done.stderr[-1500:]}")
            return None
        job_dir = Path(tmp) / "jobs" / "startup"
        trials = sorted((r for _, r in read_trials(job_dir)), key=lambda r: str(r.started_at))
        job = JobResult.model_validate_json((job_dir / "result.json").read_bytes())
        if job.stats.n_errored_trials:
            print(f"harbor: {job.stats.n_errored_trials} trial(s) errored")
        seconds = [r.seconds for r in trials[1:] if r.seconds is not None]  # the first builds the task image
        return seconds, wall - sum(r.seconds or 0 for r in trials)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--no-harbor", action="store_true")
    args = parser.parse_args()
    load = os.getloadavg()[0]
    print(f"sandbox start-up, median of {args.rounds} (load average {load:.1f} on {os.cpu_count()} CPUs)")
    times = sandboxes(args.rounds)
    bare = statistics.median(times["bare"])
    for name in ("bare", "local", "docker"):
        extra = "" if name == "bare" else f"   overhead {(statistics.median(times[name]) - bare) * 1000:6.0f} ms"
        print(f"  {name:7s} {median_ms(times[name])}{extra}")
    local_over = statistics.median(times["local"]) - bare
    docker_over = statistics.median(times["docker"]) - bare
    print(f"  docker / local start-up overhead: {docker_over / local_over:.1f}x" if local_over > 0 else "")
    if not args.no_harbor:
        measured = harbor(args.rounds, "skilleval/agent:latest")
        if measured:
            seconds, fixed = measured
            print(f"  harbor  {median_ms(seconds)} per no-op trial (docker environment, one at a time); "
                  f"job fixed cost {fixed:.1f} s")
            print(f"  harbor / docker per-trial overhead: {statistics.median(seconds) / docker_over:.0f}x")


if __name__ == "__main__":
    main()
