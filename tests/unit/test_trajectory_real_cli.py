"""The real agent CLIs' own output (recorded by the gateway work through scripted trials), parsed.

``fixtures/trajectories/<cli>/real_skill.jsonl`` is each CLI's event stream for "load the greet skill,
then answer", with ``real_skill.requests.jsonl`` the gateway's request log of that trial;
``real_plain.jsonl`` is a plain answer with no skill.
"""

from __future__ import annotations

import pytest
from selection_support import FIXTURES

from pytest_skilleval.trajectory import InvocationMethod, InvocationStatus, load_trajectory

CLIS = {  # folder: (parser, how the skill is loaded, whether the stream carries the body)
    "claude-code": ("claude-code", InvocationMethod.TOOL, True),
    "codex": ("codex", InvocationMethod.SHELL_READ, True),
    "opencode": ("opencode", InvocationMethod.TOOL, True),
    "gemini": ("gemini-cli", InvocationMethod.TOOL, False),
}


@pytest.mark.parametrize("folder", sorted(CLIS))
def test_real_skill_trial(folder: str) -> None:
    harness, how, has_body = CLIS[folder]
    here = FIXTURES / folder
    traj = load_trajectory(here / "real_skill.jsonl", request_log=here / "real_skill.requests.jsonl")
    assert traj.harness == harness
    [sel] = traj.selections()
    assert (sel.name, sel.how, sel.status) == ("greet", how, InvocationStatus.LOADED)
    assert ("HOUSE-STYLE-MARKER" in (sel.body or "")) is has_body
    # The catalog the model was sent (the CLI's bundled skills too), recovered from the request log.
    greet = traj.catalog.find("greet")
    assert traj.catalog.source == "request log" and greet is not None and (greet.description or "").startswith("Use this skill")
    assert len(traj.catalog.skills) >= 2
    assert traj.task is not None and "Greet me in the house style." in traj.task
    assert traj.final_answer == "FINAL: HOUSE-STYLE-HELLO"
    assert (traj.usage.input_tokens, traj.usage.output_tokens) == (2468, 112)  # the stub's fixed numbers, two turns


@pytest.mark.parametrize("folder", sorted(CLIS))
def test_real_plain_trial(folder: str) -> None:
    traj = load_trajectory(FIXTURES / folder / "real_plain.jsonl")
    assert traj.harness == CLIS[folder][0]
    assert traj.selections(include_user=True) == [] and traj.final_answer == "FINAL: PLAIN-ANSWER"
    assert (traj.usage.input_tokens, traj.usage.output_tokens) == (1234, 56)


def test_real_claude_details() -> None:
    here = FIXTURES / "claude-code"
    plain = load_trajectory(here / "real_plain.jsonl")
    assert plain.catalog.source == "init event" and plain.cost_usd is not None and plain.turns == 1
    skill = load_trajectory(here / "real_skill.jsonl")
    assert skill.invocations[0].call_id is not None and skill.invocations[0].path is not None
    assert skill.invocations[0].path.endswith(".claude/skills/greet/SKILL.md")
