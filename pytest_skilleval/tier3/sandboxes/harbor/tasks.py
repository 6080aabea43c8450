"""Eval cases as Harbor tasks, and a job per arm.

One task folder per case::

    <case>/instruction.md          the case's prompt
    <case>/task.toml               timeouts and resources
    <case>/environment/Dockerfile  FROM the trial image; COPY the case's input files to /workspace
    <case>/tests/test.sh           the verifier: writes reward 1 — Harbor's reward only says the trial
                                   completed; the grade is ours, computed on the host from the
                                   evidence: the workspace (a task artifact Harbor downloads right
                                   after the agent, to <trial>/artifacts/workspace), the agent's
                                   event stream and the gateway's request log

A job (``job.json``, Harbor's JobConfig) runs every case of one skill × agent × arm: ``n_attempts``
is ``--skilleval-attempts``, infrastructure retries are Harbor's ``retry.max_retries``, and the
with-skill job passes the staged skill folder in ``agents[0].skills`` (Harbor installs it where the
CLI discovers skills). For local docker/podman an extra compose file cuts the network
(``network_mode: none``) and mounts the gateway folder, and the relay runs as the container's command.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # a type only: every run imports this module through the sandbox registry
    from pytest_skilleval.tier3.case_formats.model import EvalCase

IN_CONTAINER_GATEWAY = "/run/skilleval-gw"
WORKSPACE = "/workspace"
CLAIMS_SOCKET = "claims.sock"
CLAIM_FILE = "skilleval-claim.json"  # written to /logs/agent by the claim client
#: Where Harbor's claude-code agent puts CLAUDE_CONFIG_DIR, and so the skills it installs.
CLAUDE_CONFIG_DIR = "/logs/agent/sessions"
#: Harbor's agent names for ours (Harbor also ships codex, gemini-cli and opencode agents).
HARBOR_AGENTS = {"claude-code": "claude-code", "codex": "codex", "gemini": "gemini-cli", "opencode": "opencode"}
LOCAL_ENVIRONMENTS = ("docker", "podman")

# The in-container half of the token hand-out (claims.py), stdlib only.
CLAIM_CLIENT = f'''import json, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(30)
s.connect("{IN_CONTAINER_GATEWAY}/{CLAIMS_SOCKET}")
ask = {{"task": os.environ.get("SKILLEVAL_TASK_DIR", ""), "trial": socket.gethostname()}}  # the container's own name
s.sendall((json.dumps(ask) + "\\n").encode())
got = json.loads(s.makefile("r").readline() or "{{}}")
if not got.get("token"):
    sys.exit("skilleval: the gateway has no token for this trial")
# Harbor copies /logs/agent to the trial's folder: the host matches the trial to its attempt by this file.
os.makedirs("/logs/agent", exist_ok=True)
with open("/logs/agent/{CLAIM_FILE}", "w") as fh:
    json.dump({{"task": got["task"], "number": got["number"]}}, fh)
print(got["token"])
'''
# Found first: Harbor runs `export PATH="$HOME/.local/bin:$PATH"; ... claude ...` as root.
CLAUDE_WRAPPER = '''#!/bin/sh
# skilleval: give this trial its own scoped gateway token, then run the real Claude Code.
case "$1" in --version|-v|-V) exec /opt/skilleval/agents/node_modules/.bin/claude "$@" ;; esac
token=$(python3 -I -S /opt/skilleval/claim.py) || exit 97
export ANTHROPIC_API_KEY="$token"
unset ANTHROPIC_AUTH_TOKEN
exec /opt/skilleval/agents/node_modules/.bin/claude "$@"
'''
HARBOR_IMAGE_DOCKERFILE = '''FROM {base}
COPY claim.py /opt/skilleval/claim.py
COPY claude /root/.local/bin/claude
ENV SKILLEVAL_HARBOR=1
LABEL skilleval.image=agent
'''
VERIFIER = '''#!/bin/sh
# skilleval: the grade is computed on the host from the workspace artifact, the event stream and the gateway's log.
mkdir -p /logs/verifier
echo 1 > /logs/verifier/reward.txt
'''


def slug(text: str) -> str:
    return re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")[:60] or "case"


@dataclass(frozen=True)
class TaskSpec:
    case: EvalCase
    folder: Path
    files: dict[str, bytes]  # workspace-relative path -> bytes (the case's inputs)


def write_task(spec: TaskSpec, image: str, *, agent_timeout_s: float, cpus: float, memory_mb: int) -> None:
    root = spec.folder
    (root / "environment" / "workspace").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "instruction.md").write_text(spec.case.prompt, encoding="utf-8")
    for rel, data in spec.files.items():
        dest = root / "environment" / "workspace" / rel
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(data)
        if data.startswith(b"#!"):
            dest.chmod(0o755)
    (root / "environment" / "Dockerfile").write_text(f"FROM {image}\nCOPY workspace/ {WORKSPACE}/\nWORKDIR {WORKSPACE}\n")
    verifier = root / "tests" / "test.sh"
    verifier.write_text(VERIFIER)
    verifier.chmod(0o755)
    # The workspace the agent left is downloaded as an artifact right after the agent (before the verifier).
    (root / "task.toml").write_text(f'''schema_version = "1.4"
artifacts = [{{ source = "{WORKSPACE}", destination = "workspace" }}]

[task]
name = "skilleval/{root.name}"
description = {json.dumps(f"pytest-skilleval eval case {spec.case.id}")}

[verifier]
timeout_sec = 120.0
environment_mode = "shared"

[agent]
timeout_sec = {float(agent_timeout_s)}

[environment]
network_mode = "public"
build_timeout_sec = 600.0
cpus = {cpus:g}
memory_mb = {int(memory_mb)}
workdir = "{WORKSPACE}"
''', encoding="utf-8")


def overlay(bridge_folder: Path, port: int, socket_name: str) -> dict[str, Any]:
    """The extra compose file for local docker/podman: no network, the gateway folder, the relay as PID 1's child.
    (Harbor's own no-network modes need egress sidecar images from Docker Hub.)"""
    relay = ["python3", "-I", "-S", "/opt/skilleval/relay.py", str(port), f"{IN_CONTAINER_GATEWAY}/{socket_name}", "--", "sleep", "infinity"]
    return {"services": {"main": {
        "network_mode": "none",
        "environment": {"SKILLEVAL_TASK_DIR": "${CONTEXT_DIR}"},  # compose fills in each trial's task folder
        "volumes": [f"{bridge_folder}:{IN_CONTAINER_GATEWAY}:ro"],
        "command": relay,
        "init": True,
        "stop_grace_period": "1s"}}}


def job_config(*, name: str, jobs_dir: Path, tasks: Sequence[Path], agent: str, model: str, environment: str, attempts: int,
               concurrency: int, retries: int, skill_dir: Path | None, base_url: str | None, overlay_file: Path | None,
               agent_env: dict[str, str] | None = None) -> dict[str, Any]:
    """Harbor's JobConfig for one arm, as plain JSON (checked against Harbor's own models in its venv by the tests)."""
    env: dict[str, Any] = {"type": environment, "delete": True}
    if overlay_file is not None:
        env["extra_docker_compose"] = [str(overlay_file)]
    agent_cfg: dict[str, Any] = {"name": HARBOR_AGENTS.get(agent, agent), "model_name": model}
    if skill_dir is not None:
        agent_cfg["skills"] = [str(skill_dir)]
    if base_url is not None:
        agent_cfg["base_url"] = base_url
    if agent_env:
        agent_cfg["env"] = dict(agent_env)
    return {"job_name": name, "jobs_dir": str(jobs_dir), "n_attempts": attempts, "n_concurrent_trials": concurrency,
            "retry": {"max_retries": retries, "min_wait_sec": 1.0, "max_wait_sec": 10.0}, "quiet": True,
            "environment": env, "agents": [agent_cfg], "tasks": [{"path": str(t)} for t in tasks]}
