"""Running one agent CLI trial through the gateway, shared by the e2e tests — with the package's code:
the adapter's config and command line, the trial environment of ``tier3/staging.py`` and the
``local`` sandbox (bubblewrap when present, so these runs are confined too)."""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import urlsplit

from conftest import require
from e2e_clis import SKILL, SKILL_MD, Cli
from e2e_fixtures import Sandbox, have

from pytest_skilleval.gateway import Gateway, Trial
from pytest_skilleval.tier3.sandboxes import LocalSandbox, RunSpec
from pytest_skilleval.tier3.staging import Stage, agent_environment

TIMEOUT_S = 240
SANDBOX = LocalSandbox()  # one per process: it keeps one gateway bridge per gateway


def run_cli(cli: Cli, gateway: Gateway, box: Sandbox, name: str, skill: bool, **trial_options: Any) -> tuple[Trial, list[dict[str, Any]], str]:
    """Run one CLI trial through ``gateway``; checks exit code, no refused request, no egress, no failed request."""
    binary = cli.binary
    require(binary is not None, f"{cli.name}: `{cli.agent.executable}` is not installed (make test installs it from agents/package-lock.json)")
    assert binary is not None
    for program in cli.needs:
        require(have(program), f"{cli.name} needs `{program}` (apt-get install {'ripgrep' if program == 'rg' else 'bubblewrap'})")
    folder = box.workspace / cli.skill_root / SKILL
    if skill:
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(SKILL_MD)
    out = box.root / "out"
    out.mkdir(exist_ok=True)
    stage = Stage(root=box.root, workspace=box.workspace, home=box.home, tmp=box.tmp, out=out, skill_dir=folder, installed=skill)
    refused, egress = len(gateway.refused), len(gateway.egress)
    prompt = "Greet me in the house style." if skill else "Say hello."
    with gateway.trial(name, **trial_options) as trial:
        ctx = cli.context(box.home, box.workspace, box.tmp, trial)
        env = agent_environment(trial, stage, cli.agent.configure(ctx))
        port = urlsplit(trial.url).port
        assert port is not None
        done = SANDBOX.run(RunSpec(argv=tuple(cli.agent.command(binary, prompt, ctx)), env=env, cwd=box.workspace, writable=stage.writable,
                                   timeout_s=TIMEOUT_S, network="gateway", gateway=("127.0.0.1", port)))
    assert done.exit_code == 0, f"{cli.name} exited {done.exit_code}\nstderr:\n{done.stderr[-3000:]}\nstdout:\n{done.stdout[-3000:]}"
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip().startswith("{")]
    assert gateway.refused[refused:] == [], "a request without a live token reached the gateway"
    assert gateway.egress[egress:] == [], f"{cli.name} tried to reach the network: {gateway.egress[egress:]}"
    assert trial.entries, f"{cli.name} made no model request"
    assert all(e["status"] == 200 and e["error"] is None for e in trial.entries), trial.entries
    return trial, events, done.stdout
