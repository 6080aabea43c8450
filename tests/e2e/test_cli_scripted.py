"""The four real agent CLIs complete scripted trials through the gateway, offline and keyless.

For each CLI: (a) a plain answer, and (b) a two-turn skill trial — the scripted model calls the
CLI's own skill-loading tool, then answers. The gateway log must show the skill listed to the
model, and the SKILL.md body reaching the model in a later request; the CLI's JSON output must
carry the final text. No key exists anywhere: the CLI gets the trial's scoped token only.

Raw samples are saved under fixtures/trajectories/<cli>/ (``real_plain.jsonl``, ``real_skill.jsonl``:
the CLI's event stream; ``real_skill.requests.jsonl``: the gateway's request log) when missing or
when SKILLEVAL_UPDATE_TRAJECTORIES=1, with temp paths and tokens replaced.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from clis import CLIS, FINAL_PLAIN, FINAL_SKILL, MARKER, REPO, SKILL, SKILL_MD, Cli
from conftest import Sandbox, have, require

from pytest_skilleval.gateway import Gateway, Script, Trial
from pytest_skilleval.gateway.scrub import Scrubber

TRAJECTORIES = REPO / "fixtures" / "trajectories"
TIMEOUT_S = 240


def run_cli(cli: Cli, gateway: Gateway, box: Sandbox, name: str, skill: bool) -> tuple[Trial, list[dict[str, Any]], str]:
    require(cli.binary.exists(), f"{cli.name}: {cli.binary} is not installed (make test installs it from agents/package-lock.json)")
    for program in cli.needs:
        require(have(program), f"{cli.name} needs `{program}` (apt-get install {'ripgrep' if program == 'rg' else 'bubblewrap'})")
    if skill:
        folder = box.workspace / cli.skill_root / SKILL
        folder.mkdir(parents=True)
        (folder / "SKILL.md").write_text(SKILL_MD)
    refused, egress = len(gateway.refused), len(gateway.egress)
    prompt = "Greet me in the house style." if skill else "Say hello."
    with gateway.trial(name, script=Script.from_data(cli.script(skill))) as trial:
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


def sanitize(text: str, box: Sandbox, trial: Trial) -> str:
    """Sample files must hold no key and no machine-specific path."""
    for path, label in ((box.workspace, "$WORKSPACE"), (box.home, "$HOME"), (box.tmp, "$TMPDIR"), (box.root, "$TRIAL_ROOT")):
        text = text.replace(str(path), label)
    text = text.replace(trial.url, "http://127.0.0.1:$PORT")
    return Scrubber([trial.token.secret]).text(text)


def save_sample(cli: Cli, filename: str, text: str) -> Path:
    path = TRAJECTORIES / cli.name / filename
    if not path.exists() or os.environ.get("SKILLEVAL_UPDATE_TRAJECTORIES") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return path


@pytest.mark.parametrize("name", CLIS)
def test_plain_answer(name: str, gateway: Gateway, sandbox: Sandbox) -> None:
    cli = CLIS[name]
    trial, events, stdout = run_cli(cli, gateway, sandbox, f"{name}-plain", skill=False)
    assert cli.final_text(events) == FINAL_PLAIN
    main = [e for e in trial.entries if e["tools"]]  # side calls (OpenCode's title) declare no tools
    assert [e["note"] for e in main] == ["steps[0]"]
    assert main[0]["tokens_in"] == 1234 and main[0]["tokens_out"] == 56
    save_sample(cli, "real_plain.jsonl", sanitize(stdout, sandbox, trial))


@pytest.mark.parametrize("name", CLIS)
def test_skill_is_listed_loaded_and_read(name: str, gateway: Gateway, sandbox: Sandbox) -> None:
    cli = CLIS[name]
    trial, events, stdout = run_cli(cli, gateway, sandbox, f"{name}-skill", skill=True)
    assert cli.final_text(events) == FINAL_SKILL
    texts = trial.request_texts()
    main = [n for n, e in enumerate(trial.entries) if e["tools"]]  # side calls (OpenCode's title) declare no tools
    assert [trial.entries[n]["note"] for n in main] == ["steps[0]", "steps[1]"], [e["note"] for e in trial.entries]
    first, second = main
    # Request side: the skill was offered to the model (name + description in this CLI's format)...
    assert cli.listing in texts[first], f"{cli.name} did not list the skill in its first request"
    assert SKILL_MD.split("description: ")[1].split("\n")[0] in texts[first]
    # ...its body was not in the prompt up front, and it reached the model after the load tool ran.
    assert MARKER not in texts[first]
    assert MARKER in texts[second] and trial.entries[second]["tool_results"] >= 1
    # Output side: the CLI reported the tool call in its own event stream.
    assert cli.load_tool in stdout or name == "codex" and "command_execution" in stdout
    log = trial.log.path
    assert log is not None
    requests = sanitize(log.read_text(), sandbox, trial)
    assert trial.token.secret not in requests and not re.search(r"sk-skilleval-[A-Za-z0-9_-]{8}", requests)
    for path in (save_sample(cli, "real_skill.jsonl", sanitize(stdout, sandbox, trial)),
                 save_sample(cli, "real_skill.requests.jsonl", requests)):
        saved = path.read_text()
        assert "sk-skilleval-" not in saved and "/tmp/pytest-of-" not in saved, path


def test_saved_samples_hold_no_keys() -> None:
    """Whatever is committed under fixtures/trajectories/ is scrubbed (checked on every run)."""
    if not TRAJECTORIES.exists():
        pytest.skip("no samples saved yet")
    for path in TRAJECTORIES.rglob("real_*.jsonl"):
        text = path.read_text()
        assert Scrubber().text(text) == text, f"{path} holds something key-shaped"
        assert "/tmp/pytest-of-" not in text, f"{path} holds a machine-specific path"
