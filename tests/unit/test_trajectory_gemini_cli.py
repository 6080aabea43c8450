"""Gemini CLI: stream-json events (no bodies) and a contents history (bodies in <activated_skill>)."""

from __future__ import annotations

from selection_support import FIXTURES

from pytest_skilleval.trajectory import InvocationMethod, InvocationStatus, load_trajectory

HERE = FIXTURES / "gemini"


def test_stream_activate_skill_refused_then_loaded_and_reads_counted_on_status() -> None:
    traj = load_trajectory(HERE / "stream_activate_skill.jsonl")
    got = [(i.name, i.how, i.status) for i in traj.invocations]
    assert got == [("greet-user", InvocationMethod.TOOL, InvocationStatus.REFUSED), ("greet", InvocationMethod.TOOL, InvocationStatus.LOADED),
                   ("sign-off", InvocationMethod.FILE_READ, InvocationStatus.LOADED)]
    assert traj.invocations[0].message == 'Skill "greet-user" not found. Available skills are: greet, skill-creator'
    # The stream carries display strings, never bodies: "Skill **greet** activated…" is an acknowledgement.
    assert all(i.body is None for i in traj.invocations)
    # The read of nope/SKILL.md failed: it does not count.
    assert "nope" not in [i.name for i in traj.invocations]
    assert [m.text for m in traj.messages if m.role == "assistant"] == ["I'll activate the greeting skill.", "FINAL: HOUSE-STYLE-HELLO"]
    assert (traj.task, traj.session_id, traj.model, traj.duration_ms) == ("Greet me in the house style", "9d3e-0001", "gemini-2.5-flash", 2100.0)
    assert (traj.usage.input_tokens, traj.usage.output_tokens) == (2468, 112)


def test_request_log_supplies_the_system_instruction_catalog() -> None:
    traj = load_trajectory(HERE / "stream_activate_skill.jsonl", request_log=HERE / "stream_activate_skill.requests.jsonl")
    assert traj.catalog.names() == ["greet", "sign-off", "skill-creator"]
    assert traj.catalog.skills[0].path == "/work/proj/.gemini/skills/greet/SKILL.md"


def test_contents_history_document_has_the_body_inside_activated_skill() -> None:
    traj = load_trajectory(HERE / "contents_history.json")
    assert traj.format == "contents" and traj.catalog.names() == ["greet", "pdf-processing"]
    [inv] = traj.invocations
    assert (inv.name, inv.status, inv.body) == ("greet", InvocationStatus.LOADED, "# Greet\nOpen with HOUSE-STYLE-HELLO.")
    assert traj.final_answer == "HOUSE-STYLE-HELLO, new team!"
