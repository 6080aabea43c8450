"""OpenCode: run --format json parts."""

from __future__ import annotations

from selection_support import FIXTURES

from pytest_skilleval.trajectory import InvocationMethod, InvocationStatus, load_trajectory

HERE = FIXTURES / "opencode"


def test_skill_tool_refusal_then_load_with_catalog_from_the_request_log() -> None:
    traj = load_trajectory(HERE / "run_skill_tool.jsonl", request_log=HERE / "run_skill_tool.requests.jsonl")
    refused, loaded = traj.selections()
    assert (refused.name, refused.status, refused.message) == ("pdf", InvocationStatus.REFUSED,
                                                               'Skill "pdf" not found. Available skills: pdf-processing, greet')
    assert (loaded.name, loaded.how, loaded.status) == ("pdf-processing", InvocationMethod.TOOL, InvocationStatus.LOADED)
    assert loaded.body is not None and loaded.body.startswith("# Skill: pdf-processing") and "<skill_content" not in loaded.body
    assert traj.catalog.find("pdf-processing").description == "Extract text & tables from PDF files."  # type: ignore[union-attr]
    assert traj.task == "Find the tables in report.pdf"  # not the title generator's prompt
    assert (traj.turns, traj.cost_usd, traj.duration_ms) == (3, 0.013626, 1600.0)
    assert (traj.usage.input_tokens, traj.usage.output_tokens) == (3702, 168)
    assert traj.final_answer == "FINAL: the report has one revenue table."


def test_failed_read_write_and_sed_i_do_not_count() -> None:
    traj = load_trajectory(HERE / "run_not_loads.jsonl")
    assert traj.invocations == []
    assert [(c.name, c.is_error) for c in traj.tool_calls] == [("read", True), ("write", False), ("bash", False), ("read", False)]


def test_a_read_of_skill_md_counts_with_numbered_lines_removed() -> None:
    [inv] = load_trajectory(HERE / "run_read_skill_md.jsonl").invocations
    assert (inv.name, inv.how) == ("semver-bump", InvocationMethod.FILE_READ)
    assert inv.body is not None and "00001|" not in inv.body and "name: semver-bump" in inv.body
