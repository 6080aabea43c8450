"""Running one agent CLI trial through the gateway, shared by the e2e tests."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from e2e_clis import SKILL, SKILL_MD, Cli
from e2e_fixtures import Sandbox, have, require

from pytest_skilleval.gateway import Gateway, Trial

TIMEOUT_S = 240


def run_cli(cli: Cli, gateway: Gateway, box: Sandbox, name: str, skill: bool, **trial_options: Any) -> tuple[Trial, list[dict[str, Any]], str]:
    """Run one CLI trial through ``gateway``; checks exit code, no refused request, no egress, no failed request."""
    require(cli.binary.exists(), f"{cli.name}: {cli.binary} is not installed (make test installs it from agents/package-lock.json)")
    for program in cli.needs:
        require(have(program), f"{cli.name} needs `{program}` (apt-get install {'ripgrep' if program == 'rg' else 'bubblewrap'})")
    if skill:
        folder = box.workspace / cli.skill_root / SKILL
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(SKILL_MD)
    refused, egress = len(gateway.refused), len(gateway.egress)
    prompt = "Greet me in the house style." if skill else "Say hello."
    with gateway.trial(name, **trial_options) as trial:
        extra = {"HOME": str(box.home), "TMPDIR": str(box.tmp), "NO_COLOR": "1",
                 # The gateway doubles as the HTTP(S) proxy: a request to anywhere but loopback is
                 # refused and recorded in gateway.egress instead of leaving the machine.
                 "HTTPS_PROXY": trial.url, "HTTP_PROXY": trial.url, "https_proxy": trial.url, "http_proxy": trial.url,
                 "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
        extra.update(cli.prepare(box.home, trial))
        done = subprocess.run(cli.command(prompt, trial), cwd=box.workspace, env=trial.agent_env(extra), stdin=subprocess.DEVNULL,
                              capture_output=True, text=True, timeout=TIMEOUT_S)
    assert done.returncode == 0, f"{cli.name} exited {done.returncode}\nstderr:\n{done.stderr[-3000:]}\nstdout:\n{done.stdout[-3000:]}"
    events = [json.loads(line) for line in done.stdout.splitlines() if line.strip().startswith("{")]
    assert gateway.refused[refused:] == [], "a request without a live token reached the gateway"
    assert gateway.egress[egress:] == [], f"{cli.name} tried to reach the network: {gateway.egress[egress:]}"
    assert trial.entries, f"{cli.name} made no model request"
    assert all(e["status"] == 200 and e["error"] is None for e in trial.entries), trial.entries
    return trial, events, done.stdout
