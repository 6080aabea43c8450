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

import os
import re
from pathlib import Path

import pytest
from e2e_clis import CLIS, FINAL_PLAIN, FINAL_SKILL, MARKER, REPO, SKILL_MD, Cli
from e2e_fixtures import Sandbox, gateway_fixture, sandbox_fixture  # noqa: F401 - imported to register the fixtures
from e2e_harness import run_cli

from pytest_skilleval.gateway import Gateway, Script, Trial
from pytest_skilleval.gateway.scrub import Scrubber

TRAJECTORIES = REPO / "fixtures" / "trajectories"


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
    trial, events, stdout = run_cli(cli, gateway, sandbox, f"{name}-plain", skill=False, script=Script.from_data(cli.script(False)))
    assert cli.final_text(events) == FINAL_PLAIN
    main = [e for e in trial.entries if e["tools"]]  # side calls (OpenCode's title) declare no tools
    assert [e["note"] for e in main] == ["steps[0]"]
    assert main[0]["tokens_in"] == 1234 and main[0]["tokens_out"] == 56
    save_sample(cli, "real_plain.jsonl", sanitize(stdout, sandbox, trial))


@pytest.mark.parametrize("name", CLIS)
def test_skill_is_listed_loaded_and_read(name: str, gateway: Gateway, sandbox: Sandbox) -> None:
    cli = CLIS[name]
    trial, events, stdout = run_cli(cli, gateway, sandbox, f"{name}-skill", skill=True, script=Script.from_data(cli.script(True)))
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
    assert TRAJECTORIES.is_dir(), f"{TRAJECTORIES} is part of the repository"
    for path in TRAJECTORIES.rglob("real_*.jsonl"):
        text = path.read_text()
        assert Scrubber().text(text) == text, f"{path} holds something key-shaped"
        assert "/tmp/pytest-of-" not in text, f"{path} holds a machine-specific path"
