"""A trial's trajectory as the report shows it: ordered, bounded, trial folders named, the task first."""

from __future__ import annotations

from pytest_skilleval.tier3.record import MAX_STEPS
from pytest_skilleval.tier3.steps import trial_steps
from pytest_skilleval.trajectory import Message, ToolCall, Trajectory
from pytest_skilleval.trajectory.model import InvocationMethod, InvocationStatus, SkillInvocation


def test_steps_interleave_and_name_trial_folders() -> None:
    t = Trajectory(harness="claude-code", task="summarise /tmp/p-1/workspace/a.csv",
                   messages=[Message(role="assistant", text="Loading.", position=0), Message(role="assistant", text="Done.", position=3)],
                   tool_calls=[ToolCall(name="Read", arguments={"file_path": "/tmp/p-1/workspace/.claude/skills/x/SKILL.md"},
                                        result="body", completed=True, position=1)],
                   invocations=[SkillInvocation(name="x", how=InvocationMethod.FILE_READ, status=InvocationStatus.LOADED, tool="Read",
                                                position=1)])
    steps = trial_steps(t, {"/tmp/p-1/workspace": "<workspace>", "/tmp/p-1/workspace/.claude/skills/x": "<skill>"})
    assert [(s.kind, s.role or s.name) for s in steps] == [("message", "user"), ("message", "assistant"), ("tool", "Read"),
                                                           ("skill", "x"), ("message", "assistant")]
    assert steps[0].text == "summarise <workspace>/a.csv" and steps[2].text == '{"file_path": "<skill>/SKILL.md"}'
    assert steps[3].text == "loaded (file_read via Read)"


def test_long_runs_keep_head_and_tail() -> None:
    t = Trajectory(harness="x", messages=[Message(role="assistant", text=str(i), position=i) for i in range(100)])
    steps = trial_steps(t)
    assert len(steps) == MAX_STEPS and steps[0].text == "0" and steps[-1].text == "99"
    assert any(s.kind == "gap" and "61 step(s) left out" in s.text for s in steps)
    assert trial_steps(None) == []
