"""Skill-selection accuracy: one judge call per invoked skill, through the gateway with the real SDK."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from selection_support import FIXTURES, FaultyJudge, gateway_judge, request_texts, yes

from pytest_skilleval.results import Status
from pytest_skilleval.selection.judge import (
    SYSTEM_PROMPT,
    evaluate_selection,
    render_catalog,
    render_trajectory,
    rows_for,
)
from pytest_skilleval.trajectory import CatalogSkill, ParseLimits, SkillCatalog, TrajectoryBuilder, load_trajectory

REFUSED = FIXTURES / "claude-code" / "transcript_refused_retry.jsonl"


def bodies(texts: list[str]) -> list[dict]:
    return [json.loads(t) for t in texts]


def test_one_call_per_invoked_skill_with_verdict_rows(tmp_path: Path) -> None:
    traj = load_trajectory(REFUSED)
    with gateway_judge(tmp_path, no_for=("docx",)) as (judge, trial):
        result = evaluate_selection(traj, judge)
        sent = bodies(request_texts(trial))
    assert [(r.skill, r.label, r.score, r.passed) for r in result.rows] == [
        ("pdf-procesing", "Yes", 1.0, True), ("pdf-processing", "Yes", 1.0, True), ("docx", "No", 0.0, False)]
    assert [r.reason for r in result.rows] == ["pdf-procesing: the description fits the task", "pdf-processing: the description fits the task",
                                               "docx: docx does not fit"]
    assert result.score == pytest.approx(2 / 3) and not result.passed and result.status is Status.FAILED
    assert result.rows[0].judge_model == "claude-judge-test" and result.rows[0].input_tokens == 1234
    # Three requests, each fresh: the system prompt plus one user message, never an earlier verdict.
    assert len(sent) == 3
    for body, skill in zip(sent, ("pdf-procesing", "pdf-processing", "docx"), strict=True):
        assert body["system"] == SYSTEM_PROMPT and len(body["messages"]) == 1
        prompt = body["messages"][0]["content"]
        assert f"## Decision under evaluation\nThe agent invoked the skill: {skill}\n" in prompt + "\n"
        assert body["tool_choice"] == {"type": "tool", "name": "skill_selection_rating"}


def test_the_refusal_text_reaches_the_judge_only_for_a_refused_skill(tmp_path: Path) -> None:
    with gateway_judge(tmp_path) as (judge, trial):
        evaluate_selection(load_trajectory(REFUSED), judge)
        prompts = [b["messages"][0]["content"] for b in bodies(request_texts(trial))]
    assert "The harness said: Unknown skill: pdf-procesing" in prompts[0]
    assert "refused this load" in prompts[0] and "refused this load" not in prompts[1]
    assert "The harness said: Unknown skill: docx" in prompts[2]


def test_the_prompt_holds_task_catalog_trajectory_and_final_answer(tmp_path: Path) -> None:
    traj = load_trajectory(FIXTURES / "opencode" / "run_skill_tool.jsonl", request_log=FIXTURES / "opencode" / "run_skill_tool.requests.jsonl")
    with gateway_judge(tmp_path) as (judge, trial):
        evaluate_selection(traj, judge)
        prompt = bodies(request_texts(trial))[1]["messages"][0]["content"]
    assert prompt.startswith("## Task\nFind the tables in report.pdf\n\n## Available skills\n"
                             "- pdf-processing: Extract text & tables from PDF files.\n- greet: Greet in the house style.\n")
    assert '"tool": "skill"' in prompt and "## Agent's final response\nFINAL: the report has one revenue table." in prompt
    for word in ("abstain", "abstention", "abstained"):
        assert word not in prompt.lower() and word not in SYSTEM_PROMPT.lower()


def test_no_invocation_is_one_not_applicable_row_with_no_judge_call(tmp_path: Path) -> None:
    traj = load_trajectory(FIXTURES / "codex" / "exec_not_loads.jsonl")
    with gateway_judge(tmp_path) as (judge, trial):
        result = evaluate_selection(traj, judge)
        assert request_texts(trial) == []
    [row] = result.rows
    assert (row.label, row.score, row.passed, row.not_applicable, row.status) == ("not_applicable", None, True, True, Status.SKIPPED)
    assert row.reason == "no skill invoked (the offered catalog was not recorded); declining is not judged here"
    assert (result.score, result.passed, result.status) == (None, True, Status.SKIPPED)


def test_not_applicable_reasons_tell_offered_empty_and_user_invoked_apart() -> None:
    traj = load_trajectory(FIXTURES / "claude-code" / "transcript_slash_command.jsonl")
    offered = [CatalogSkill(name="greet", description="Greet.")]
    assert rows_for(traj, None, catalog=offered)[0].reason == (
        "no skill invoked; whether declining was correct is not judged here (user-invoked, not the agent's choice: greet)")
    empty = SkillCatalog(recorded=True, skills=[])
    assert rows_for(traj, None, catalog=empty)[0].reason.startswith("no skills were available to select from")


def test_a_missing_trajectory_is_a_failure_not_not_applicable() -> None:
    result = evaluate_selection(None, FaultyJudge([yes()]))
    [row] = result.rows
    assert (row.label, row.score, row.passed, row.not_applicable, row.reason) == ("missing", 0.0, False, False, "no trajectory provided")
    assert (result.score, result.passed, result.status) == (0.0, False, Status.FAILED)


def test_malformed_judge_replies_are_retried_then_an_error_row_never_zero() -> None:
    judge = FaultyJudge(["not json at all", '{"reasoning": "x", "score": "Maybe"}', "{}"])
    result = evaluate_selection(load_trajectory(FIXTURES / "codex" / "exec_shell_read.jsonl"), judge)
    assert [r.label for r in result.rows] == ["error", "error"]
    assert all(r.score is None and r.status is Status.ERROR for r in result.rows)
    assert "malformed" in result.rows[0].reason and result.rows[0].reason.startswith("pdf-processing: judge failed: ProviderError")
    assert len(judge.requests) == 6  # three attempts per skill, the retries bounded by structured()
    assert result.status is Status.ERROR and result.score is None


def test_a_judge_exception_is_an_error_row_and_other_rows_still_count() -> None:
    judge = FaultyJudge([RuntimeError("connection reset"), yes()])
    result = evaluate_selection(load_trajectory(FIXTURES / "codex" / "exec_shell_read.jsonl"), judge)
    assert [(r.skill, r.label) for r in result.rows] == [("pdf-processing", "error"), ("greet", "Yes")]
    assert result.score == 1.0 and result.status is Status.ERROR


def test_a_judge_the_gateway_refuses_is_an_error_row(tmp_path: Path) -> None:
    with gateway_judge(tmp_path) as (judge, trial):
        trial.gateway.close_trial(trial)  # the scoped token is revoked: every judge call gets a 401
        result = evaluate_selection(load_trajectory(FIXTURES / "codex" / "exec_shell_read.jsonl"), judge)
    assert {r.label for r in result.rows} == {"error"} and result.status is Status.ERROR
    assert "auth" in result.rows[0].reason


def test_no_judge_configured_gives_error_rows() -> None:
    result = evaluate_selection(load_trajectory(FIXTURES / "openhands" / "flat_invoke.jsonl"), None)
    assert [(r.label, r.reason) for r in result.rows] == [("error", "pdf-processing: no judge: no chat provider configured")]


def test_overrides_task_catalog_and_final_answer() -> None:
    judge = FaultyJudge([yes()])
    evaluate_selection(load_trajectory(FIXTURES / "openhands" / "flat_invoke.jsonl"), judge, task="Read q3.pdf",
                       catalog=[CatalogSkill(name="pdf-processing", description="PDFs.")], final_answer="done")
    prompt = judge.requests[0].messages[1].content
    assert "## Task\nRead q3.pdf" in prompt and "- pdf-processing: PDFs." in prompt and prompt.endswith("## Agent's final response\ndone")


def test_catalog_rendering_keeps_not_recorded_apart_from_empty() -> None:
    assert render_catalog(SkillCatalog()) == "(not recorded by this harness)"
    assert render_catalog(SkillCatalog(recorded=True)) == "(none: this harness advertised no skills)"
    assert render_catalog(SkillCatalog(recorded=True, skills=[CatalogSkill(name="a", description="b"), CatalogSkill(name="c")])) == "- a: b\n- c:"


def test_the_trajectory_is_capped_keeping_head_and_tail() -> None:
    b = TrajectoryBuilder(harness="t", limits=ParseLimits(head_items=5, tail_items=5))
    b.message("user", "FIRST-TASK")
    for n in range(50):
        b.tool_call(f"c{n}", "Bash", {"command": f"step {n}"})
        b.tool_result(f"c{n}", "out " * 50)
    b.message("assistant", "LAST-ANSWER")
    traj = b.build(lines=102)
    full = render_trajectory(traj)
    assert "tool call(s) from the middle of the run were not kept" in full
    capped = render_trajectory(traj, max_chars=600)
    assert len(capped) < 800 and "FIRST-TASK" in capped and "LAST-ANSWER" in capped
    assert "characters omitted from the middle of the trajectory; the omitted part may hold evidence" in capped
