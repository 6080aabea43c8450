"""Codex CLI: exec --json events and session rollouts; SKILL.md loads are shell reads."""

from __future__ import annotations

from selection_support import FIXTURES

from pytest_skilleval.trajectory import InvocationMethod, InvocationStatus, load_trajectory

HERE = FIXTURES / "codex"


def test_exec_json_shell_reads_with_pipes_and_sigpipe() -> None:
    traj = load_trajectory(HERE / "exec_shell_read.jsonl")
    assert (traj.format, traj.session_id, traj.turns) == ("exec-json", "0199a7e2-5c1d-7b10-9d1e-000000000001", 1)
    got = [(i.name, i.how, i.status, i.path) for i in traj.invocations]
    assert got == [
        ("pdf-processing", InvocationMethod.SHELL_READ, InvocationStatus.LOADED, "/work/proj/.agents/skills/pdf-processing/SKILL.md"),
        ("greet", InvocationMethod.SHELL_READ, InvocationStatus.LOADED, "/work/proj/.codex/skills/greet/SKILL.md"),  # exit 141 is fine
    ]
    assert traj.invocations[0].body is not None and "pdftotext -layout" in traj.invocations[0].body
    assert not traj.catalog.recorded  # exec --json never shows it
    assert traj.final_answer == "FINAL: revenue grew from 12.1 to 13.4."
    assert (traj.usage.input_tokens, traj.usage.output_tokens) == (1234, 56)
    # item.started records the call; item.completed its result: one call each.
    assert [c.arguments["command"][15:23] for c in traj.tool_calls] == ["cat /wor", "sed -n '", "pdftotex"]


def test_exec_json_with_the_request_log_gets_catalog_and_task() -> None:
    traj = load_trajectory(HERE / "exec_shell_read.jsonl", request_log=HERE / "exec_shell_read.requests.jsonl")
    assert traj.catalog.names() == ["greet", "pdf-processing"] and traj.task == "How did revenue change in report.pdf?"


def test_sed_i_heredoc_writes_failed_reads_grep_tee_file_changes_and_unfinished_reads_do_not_count() -> None:
    traj = load_trajectory(HERE / "exec_not_loads.jsonl")
    assert traj.invocations == []
    assert [c.name for c in traj.tool_calls] == ["shell"] * 5 + ["apply_patch", "shell"]
    failed = traj.tool_calls[2]
    assert failed.is_error and failed.exit_code == 1
    assert not traj.tool_calls[-1].completed  # the run stopped mid-command
    assert traj.turns == 2


def test_rollout_payload_envelope_mentions_and_catalog() -> None:
    traj = load_trajectory(HERE / "rollout_mention.jsonl")
    assert (traj.format, traj.session_id, traj.model) == ("rollout", "0199b1c0-0000-7000-8000-000000000003", "gpt-5.5")
    assert traj.catalog.source == "system prompt"
    assert [(s.name, s.path) for s in traj.catalog.skills][0] == ("changelog-writer", "/work/proj/.codex/skills/changelog-writer/SKILL.md")
    # `$changelog-writer` plus its injected <skill> block: one user load, with the body; `$HOME` is not a skill.
    [mention] = [i for i in traj.invocations if i.by_user]
    assert (mention.name, mention.detail, mention.status) == ("changelog-writer", "$mention", InvocationStatus.LOADED)
    assert mention.body is not None and "Group commits by type." in mention.body
    # The agent's own choice: semver-bump read through exec_command; skill-creator's read failed (old output format, exit 1).
    assert [(s.name, s.how.value) for s in traj.selections()] == [("semver-bump", "shell_read")]
    assert traj.selections()[0].body is not None and traj.selections()[0].body.startswith("---\nname: semver-bump")  # preamble stripped
    assert traj.task is not None and traj.task.startswith("Use $changelog-writer")
    assert traj.final_answer is not None and traj.final_answer.endswith("2.0.0.")
    assert (traj.usage.input_tokens, traj.usage.cached_input_tokens, traj.usage.output_tokens) == (5100, 1200, 310)
    assert traj.duration_ms == 5020.0
