"""A scripted agent tries to read the host's secrets from inside the local sandbox, and cannot.

The real Claude Code CLI runs in bubblewrap through the gateway (as the other e2e tests do); the
scripted model makes it run one shell command that reads a canary in the host's HOME, one in the
project checkout, one in a neighbouring temp workspace, and ``/etc/shadow``. What the command printed
is the tool result the CLI sends back to the model: it must hold none of the canaries.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from e2e_clis import CLIS, REPO
from e2e_fixtures import Sandbox, gateway_fixture, sandbox_fixture  # noqa: F401 - imported to register the fixtures
from e2e_harness import run_cli

from pytest_skilleval.gateway import Gateway, Script


def test_agent_cannot_read_host_home_checkout_or_shadow(gateway: Gateway, sandbox: Sandbox, tmp_path_factory: object) -> None:
    secret, name = uuid.uuid4().hex, uuid.uuid4().hex
    neighbour = sandbox.root.parent / f"other-trial-{name}"
    canaries = [Path(os.path.expanduser("~")) / f".skilleval-canary-{name}", REPO / f".skilleval-canary-{name}", neighbour / "canary"]
    neighbour.mkdir()
    for n, path in enumerate(canaries):
        path.write_text(f"CANARY{n}-{secret}\n")
    command = "; ".join(f"cat {p}" for p in [*canaries, "/etc/shadow"]) + "; ls -A /root /home; echo PROBE-DONE"
    script = {"steps": [{"text": "Looking around.", "tool": "Bash", "args": {"command": command, "description": "Read files"}},
                        {"text": "FINAL: looked"}]}
    try:
        trial, _events, _stdout = run_cli(CLIS["claude-code"], gateway, sandbox, "claude-code-canaries", skill=False,
                                          script=Script.from_data(script))
    finally:
        for path in canaries:
            path.unlink()
    main = [text for text, entry in zip(trial.request_texts(), trial.entries, strict=True) if entry["tools"]]
    assert len(main) == 2, "the scripted Bash call did not come back as a tool result"
    result = main[1]  # the second request carries what the command printed
    assert secret not in "\n".join(trial.request_texts()), "a canary reached the model"
    assert "PROBE-DONE" in result and result.count("No such file or directory") >= 6, result[-3000:]
    if os.access("/etc/shadow", os.R_OK):
        first = Path("/etc/shadow").read_text().splitlines()[0]
        assert first not in result
