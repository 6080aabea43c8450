"""The trial runner's outcomes that need no agent run: not applicable, and could not run (an ERROR record)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import manifest, write_skill

from pytest_skilleval.gateway import Gateway, GatewayConfig
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier3.agents import ClaudeCode, Codex
from pytest_skilleval.tier3.cases import load_cases
from pytest_skilleval.tier3.options import Tier3Settings
from pytest_skilleval.tier3.sandboxes import LocalSandbox
from pytest_skilleval.tier3.trial import TrialRequest, TrialRunner, TrialSkipped, body_reached

EVALS = {"skill_name": "demo-skill", "evals": [{"id": "c1", "prompt": "Do it", "expected_output": "done",
                                                "script": {"claude-code": [{"text": "done"}]}}]}


@pytest.fixture
def request_for(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    for name in ("claude", "codex"):  # stand-ins: these tests never start the CLI
        fake = tmp_path / "bin" / name
        fake.parent.mkdir(exist_ok=True)
        fake.write_text("#!/bin/sh\nexit 0\n")
        fake.chmod(0o755)
        monkeypatch.setenv(f"SKILLEVAL_{'CLAUDE_CODE' if name == 'claude' else 'CODEX'}_PATH", str(fake))
    skill = Skill(root=write_skill(tmp_path, "demo-skill", {"SKILL.md": manifest(), "evals/evals.json": json.dumps(EVALS)}), key="demo-skill")
    case = load_cases(skill).get("c1")

    def make(agent):  # type: ignore[no-untyped-def]
        return TrialRequest(skill=skill, skill_key="demo-skill", case=case, agent=agent, arm="with_skill", name="demo::c1")  # type: ignore[arg-type]

    return make


def runner(gateway: Gateway) -> TrialRunner:
    return TrialRunner(gateway, LocalSandbox(use_bwrap=False), Tier3Settings(enabled=True, allow_unsandboxed=True))


def test_no_script_for_the_agent_is_not_applicable(request_for, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with Gateway(GatewayConfig(mode="scripted")) as gw, pytest.raises(TrialSkipped, match="no `script` for codex"):
        runner(gw).run(request_for(Codex()), tmp_path / "t")


def test_a_trial_that_cannot_start_is_an_error_record(request_for, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    with Gateway(GatewayConfig(mode="replay", cassette_dir=tmp_path / "cassettes")) as gw:
        record = runner(gw).run(request_for(ClaudeCode()), tmp_path / "t")
    assert record.status == "ERROR" and "no cassette" in (record.reason or "")
    assert record.grade is not None and record.grade.score is None and record.passed is None  # missing, not a zero


def test_body_reached_looks_for_a_distinctive_line() -> None:
    body = "# Title\n\nShort.\nUse the \"quoted\" tool with care, always.\n"
    texts = [json.dumps({"messages": [{"content": "x: Use the \"quoted\" tool with care, always."}]}, ensure_ascii=False)]
    assert body_reached(texts, body) is True
    assert body_reached(["{}"], body) is False
    assert body_reached(texts, "# T\n\nshort\n") is None  # nothing distinctive enough to look for


def test_a_missing_agent_cli_names_every_folder_it_was_looked_for_in(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Outside CI a missing CLI skips its trials: the reason names the agents folder (rootdir-relative, so a
    wrong rootdir shows) and PATH, so a skip for the wrong folder is visible."""
    empty_path = tmp_path / "bin"
    empty_path.mkdir()
    monkeypatch.setenv("PATH", str(empty_path))
    monkeypatch.delenv(ClaudeCode().override_var, raising=False)
    agents_dir = tmp_path / "proj" / ".cache" / "agents"
    reason = ClaudeCode().missing((agents_dir,))
    assert reason is not None and f"not found in {agents_dir} or PATH" in reason and ClaudeCode().override_var in reason
