"""Claude Code: stream-json events and transcript JSONL."""

from __future__ import annotations

import json
from pathlib import Path

from selection_support import FIXTURES

from pytest_skilleval.trajectory import InvocationMethod, InvocationStatus, load_trajectory

HERE = FIXTURES / "claude-code"
REINVOKED = "Base directory for this skill: /s/x\n\n(Re-invocation of /x — see above)"
LISTING = "<system-reminder>\nThe following skills are available for use with the Skill tool:\n\n- x: X things.\n</system-reminder>"


def test_stream_json_skill_tool_with_synthetic_body_and_metering() -> None:
    traj = load_trajectory(HERE / "stream_skill_loaded.jsonl")
    assert (traj.harness, traj.format, traj.session_id, traj.model) == ("claude-code", "stream-json", "6f1c2a10-0001", "claude-sonnet-4-5")
    [inv] = traj.invocations
    assert (inv.name, inv.how, inv.status, inv.tool, inv.call_id) == ("pdf-processing", InvocationMethod.TOOL, InvocationStatus.LOADED,
                                                                      "Skill", "toolu_01A")
    assert inv.detail == "args=report.pdf"
    assert inv.body is not None and inv.body.startswith("# PDF processing") and "Launching skill" not in inv.body
    assert inv.path == "/work/proj/.claude/skills/pdf-processing/SKILL.md"
    assert traj.final_answer == "FINAL: one table found, revenue 12.1 -> 13.4."
    assert (traj.turns, traj.cost_usd, traj.duration_ms) == (3, 0.013626, 2870.0)
    assert (traj.usage.input_tokens, traj.usage.output_tokens) == (3702, 168)
    assert [c.name for c in traj.tool_calls] == ["Skill", "Bash"] and traj.tool_calls[1].result.startswith("Quarterly")


def test_on_disk_transcript_with_the_older_command_argument() -> None:
    traj = load_trajectory(HERE / "transcript_older_command_arg.jsonl")
    assert traj.format == "transcript" and traj.task == "Review my staged changes before I commit"
    [sel] = traj.selections()
    assert (sel.name, sel.status) == ("code-review", InvocationStatus.LOADED)
    assert sel.body == "# Code review\n\nRead the diff hunk by hunk. Flag bugs before style."
    # One API message split over lines counts its usage once.
    assert (traj.usage.input_tokens, traj.usage.output_tokens, traj.usage.cached_input_tokens) == (2400, 120, 1000)


def test_refusals_retries_and_parallel_calls() -> None:
    traj = load_trajectory(HERE / "transcript_refused_retry.jsonl")
    got = [(s.name, s.status.value, s.message) for s in traj.selections()]
    assert got == [("pdf-procesing", "refused", "Unknown skill: pdf-procesing"), ("pdf-processing", "loaded", None),
                   ("docx", "refused", "Unknown skill: docx")]
    assert traj.invoked("PDF_processing").body.startswith("# PDF processing")  # type: ignore[union-attr]


def test_slash_command_is_a_user_mention_and_builtins_do_not_count() -> None:
    traj = load_trajectory(HERE / "transcript_slash_command.jsonl")
    assert traj.selections() == []  # not the agent's choice
    [mention] = traj.selections(include_user=True)
    assert (mention.name, mention.how, mention.by_user, mention.status) == ("greet", InvocationMethod.MENTION, True, InvocationStatus.LOADED)
    assert traj.invocations[0].detail == "slash-command /greet"
    assert all(i.name != "clear" for i in traj.invocations)


def test_writes_edits_and_failed_reads_of_skill_md_do_not_count() -> None:
    traj = load_trajectory(HERE / "transcript_reads_not_loads.jsonl")
    assert traj.invocations == []
    assert [c.name for c in traj.tool_calls] == ["Read", "Bash", "Write", "Bash"]
    assert traj.tool_calls[0].is_error and traj.tool_calls[0].error == "File does not exist."


def test_a_read_of_skill_md_with_a_body_counts_and_sidechains_are_marked() -> None:
    traj = load_trajectory(HERE / "transcript_read_skill_md.jsonl")
    [inv] = traj.invocations
    assert (inv.name, inv.how, inv.status) == ("csv-summary", InvocationMethod.FILE_READ, InvocationStatus.LOADED)
    assert inv.body is not None and inv.body.startswith("---\nname: csv-summary")  # the Read tool's line numbers are removed
    assert [m.agent for m in traj.messages] == [None, "sidechain", None]
    assert traj.turns == 2  # the sub-agent's turn is not the main agent's
    assert traj.final_answer is not None and traj.final_answer.startswith("sales.csv")


def test_command_name_shadowing_and_success_false(tmp_path: Path) -> None:
    lines = [
        {"type": "assistant", "message": {"id": "m1", "content": [{"type": "tool_use", "id": "t1", "name": "Skill", "input": {"skill": "x"}},
                                                                  {"type": "tool_use", "id": "t2", "name": "Skill", "input": {"skill": "y"}}]}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t1", "content": "Launching skill: x"}]},
         "tool_use_result": {"success": True, "commandName": "x-wrapper"}},
        {"type": "user", "message": {"content": [{"type": "tool_result", "tool_use_id": "t2", "content": "no"}]},
         "tool_use_result": {"success": False, "commandName": "y"}},
        {"type": "user", "message": {"content": [{"type": "text", "text": REINVOKED}]}, "isSynthetic": True},
        {"type": "attachment", "attachment": {"type": "skill_listing", "content": LISTING}},
    ]
    path = tmp_path / "c.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    traj = load_trajectory(path)
    x, y = traj.invocations
    assert (x.status, x.detail, x.body) == (InvocationStatus.LOADED, "commandName=x-wrapper", None)  # a re-invocation note is no body
    assert (y.status, y.message) == (InvocationStatus.REFUSED, "no")
    assert traj.catalog.names() == ["x"] and traj.catalog.source == "harness reminder"


def test_a_body_without_a_skill_call_is_an_injected_mention(tmp_path: Path) -> None:
    body = {"type": "user", "message": {"content": "Base directory for this skill: /s/lonely\n\nDo things."}, "isMeta": True}
    path = tmp_path / "c.jsonl"
    path.write_text(json.dumps({"type": "user", "message": {"content": "hi"}}) + "\n" + json.dumps(body) + "\n")
    [inv] = load_trajectory(path).invocations
    assert (inv.name, inv.how, inv.detail, inv.body) == ("lonely", InvocationMethod.MENTION, "injected body", "Do things.")
