"""The model: folding attempts into selections, canonical keys, and the bounded head-and-tail window."""

from __future__ import annotations

from pytest_skilleval.trajectory import (
    InvocationMethod,
    InvocationStatus,
    ParseLimits,
    SkillInvocation,
    Trajectory,
    TrajectoryBuilder,
    skill_key,
)


def inv(name: str, status: InvocationStatus, body: str | None = None, how: InvocationMethod = InvocationMethod.TOOL,
        message: str | None = None) -> SkillInvocation:
    return SkillInvocation(name=name, how=how, status=status, body=body, message=message)


def test_skill_key_folds_case_and_underscores_but_keeps_dots_and_namespaces() -> None:
    assert skill_key(" PDF_Processing ") == "pdf-processing"
    assert skill_key("data.clean") != skill_key("data-clean")
    assert skill_key("superpowers:brainstorming") != skill_key("brainstorming")


def test_one_success_anywhere_makes_a_skill_loaded_and_refused_needs_every_attempt() -> None:
    traj = Trajectory(harness="t", invocations=[
        inv("a", InvocationStatus.REFUSED, message="nope 1"), inv("A", InvocationStatus.LOADED, "body"), inv("a", InvocationStatus.REFUSED),
        inv("b", InvocationStatus.REFUSED, message="first"), inv("b", InvocationStatus.REFUSED, message="second"),
    ])
    a, b = traj.selections()
    assert (a.name, a.status, a.attempts, a.message, a.body) == ("A", InvocationStatus.LOADED, 3, None, "body")
    assert (b.status, b.message, b.attempts) == (InvocationStatus.REFUSED, "second", 2)


def test_the_fullest_body_wins_only_when_it_extends_the_kept_one() -> None:
    paged = Trajectory(harness="t", invocations=[inv("a", InvocationStatus.LOADED, "part one"),
                                                 inv("a", InvocationStatus.LOADED, "part one and part two")])
    assert paged.selections()[0].body == "part one and part two"
    different = Trajectory(harness="t", invocations=[inv("a", InvocationStatus.LOADED, "short"),
                                                     inv("a", InvocationStatus.LOADED, "something else entirely, longer")])
    assert different.selections()[0].body == "short"


def test_user_mentions_are_left_out_unless_asked_for() -> None:
    traj = Trajectory(harness="t", invocations=[inv("u", InvocationStatus.LOADED, how=InvocationMethod.MENTION), inv("m", InvocationStatus.LOADED)])
    assert [s.name for s in traj.selections()] == ["m"]
    assert [s.name for s in traj.selections(include_user=True)] == ["u", "m"]
    assert traj.invoked("U") is None and traj.invoked("U", include_user=True) is not None


def test_the_window_keeps_head_and_tail_and_counts_the_middle() -> None:
    b = TrajectoryBuilder(harness="t", limits=ParseLimits(head_items=3, tail_items=2, text_chars=80))
    for n in range(10):
        b.message("user" if n == 0 else "assistant", f"message {n} " + "x" * 100)
        b.tool_call(f"c{n}", "Bash", {"command": "echo " + "y" * 200})
        b.tool_result(f"c{n}", "z" * 500)
    traj = b.build(lines=30)
    assert [m.text[:9] for m in traj.messages] == ["message 0", "message 1", "message 2", "message 8", "message 9"]
    assert traj.omitted_messages == 5 and traj.total_messages == 10 and traj.omitted_tool_calls == 5
    assert traj.gap_after == traj.messages[2].position
    assert all(m.truncated and len(m.text) < 120 for m in traj.messages)
    assert all(len(c.result or "") < 120 and len(c.arguments["command"]) < 120 for c in traj.tool_calls)
    assert traj.task is not None and traj.task.startswith("message 0")
    assert traj.final_answer is not None and traj.final_answer.startswith("message 9") and traj.turns is None


def test_unanswered_calls_are_forgotten_oldest_first_and_invocations_are_capped() -> None:
    b = TrajectoryBuilder(harness="t", limits=ParseLimits(pending_calls=2, invocations=2))
    for n in range(4):
        b.tool_call(f"s{n}", "Skill", {"skill": f"k{n}"})
    assert b.tool_result("s0", "body") is None  # evicted
    assert b.tool_result("s3", "# body") is not None
    traj = b.build(lines=4)
    assert [i.name for i in traj.invocations] == ["k0", "k1"]
    assert traj.notes == ["2 skill invocation(s) beyond the limit of 2 were not kept"]
