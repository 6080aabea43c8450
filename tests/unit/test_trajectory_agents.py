"""OpenHands, Google ADK, Strands AgentSkills and the generic any-agent rule."""

from __future__ import annotations

import json
from pathlib import Path

from selection_support import FIXTURES

from pytest_skilleval.trajectory import InvocationMethod, InvocationStatus, load_trajectory


def test_openhands_sdk_events_fold_a_refused_spelling_into_the_loaded_skill() -> None:
    traj = load_trajectory(FIXTURES / "openhands" / "sdk_events.jsonl")
    assert traj.catalog.names() == ["pdf-processing", "changelog-writer"]
    refused, loaded = traj.invocations
    assert (refused.name, refused.status) == ("changelog_writer", InvocationStatus.REFUSED)
    assert refused.message is not None and refused.message.startswith("Skill 'changelog_writer' not found")
    assert (loaded.status, loaded.body) == (InvocationStatus.LOADED, "# Changelog writer\nGroup commits by type; one line each.")
    [sel] = traj.selections()  # `_` folds to `-`: one skill, loaded, shown under the name that loaded
    assert (sel.name, sel.status, sel.attempts) == ("changelog-writer", InvocationStatus.LOADED, 2)
    assert traj.final_answer is not None and traj.final_answer.startswith("## 1.4.0")
    assert traj.task == "Write the changelog entry for the last three commits"


def test_openhands_flat_actions() -> None:
    [inv] = load_trajectory(FIXTURES / "openhands" / "flat_invoke.jsonl").invocations
    assert (inv.name, inv.call_id, inv.body) == ("pdf-processing", "tc-9", "# PDF processing\nUse pdftotext.")


def test_openhands_v0_stream_and_file_editor(tmp_path: Path) -> None:
    events = [
        {"id": 1, "source": "user", "action": "message", "args": {"content": "use the skill"}},
        {"id": 2, "source": "agent", "action": "run", "args": {"command": "cat skills/pdf/SKILL.md"}},
        {"id": 3, "source": "environment", "observation": "run", "cause": 2, "content": "---\nname: pdf\n---\nbody",
         "extras": {"exit_code": 0}},
        {"id": 4, "source": "agent", "action": "edit", "args": {"path": "skills/x/SKILL.md", "content": "---\nname: x\n---"}},
        {"id": 5, "source": "environment", "observation": "edit", "cause": 4, "content": "edited"},
    ]
    path = tmp_path / "v0.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events) + "\n")
    traj = load_trajectory(path)
    assert traj.harness == "openhands" and [(i.name, i.how) for i in traj.invocations] == [("pdf", InvocationMethod.SHELL_READ)]


def test_adk_events_discovery_catalog_refusal_and_empty_name() -> None:
    traj = load_trajectory(FIXTURES / "google-adk" / "session_events.jsonl")
    assert traj.catalog.source == "discovery tool" and traj.catalog.names() == ["semver-bump", "changelog-writer"]
    got = [(i.name, i.status.value, i.message) for i in traj.invocations]
    # The empty skill_name call makes no event: it would invent a skill called "".
    assert got == [("semver-bmp", "refused", "Skill 'semver-bmp' not found."), ("semver-bump", "loaded", None)]
    assert traj.invocations[1].body is not None and traj.invocations[1].body.startswith("# Semver bump")
    assert (traj.usage.input_tokens, traj.usage.output_tokens) == (3000, 48)
    assert traj.final_answer == "Breaking change: 1.4.0 -> 2.0.0."


def test_adk_bare_call_events_with_a_prefixed_tool_and_structured_discovery() -> None:
    traj = load_trajectory(FIXTURES / "google-adk" / "bare_calls.jsonl")
    assert traj.catalog.names() == ["csv-summary", "pdf-processing"]
    assert [(i.name, i.tool, i.body) for i in traj.invocations] == [("csv-summary", "myapp_load_skill", "# CSV summary\nReport per-column stats.")]


def test_strands_refusal_text_with_success_status_empty_name_and_bodyless_activation() -> None:
    traj = load_trajectory(FIXTURES / "strands" / "agent_skills_run.json")
    got = [(s.name, s.status.value, s.body is not None) for s in traj.selections()]
    assert got == [("pdf-procesing", "refused", False), ("pdf-processing", "loaded", True), ("csv-summary", "loaded", False)]
    assert traj.selections()[0].message == "Skill 'pdf-procesing' not found. Available skills: pdf-processing, csv-summary"
    assert "Location: /srv/skills/pdf-processing/SKILL.md" in (traj.selections()[1].body or "")


def test_strands_session_manager_messages_fold_a_repeated_load() -> None:
    traj = load_trajectory(FIXTURES / "strands" / "session_messages.jsonl")
    assert len(traj.invocations) == 2
    [sel] = traj.selections()
    assert (sel.name, sel.attempts, sel.status) == ("changelog-writer", 2, InvocationStatus.LOADED)
    assert not traj.catalog.recorded


def test_generic_reads_count_only_with_a_body_and_a_name() -> None:
    traj = load_trajectory(FIXTURES / "generic" / "openai_chat_read.jsonl")
    # read_file of csv-summary: counted. `cat` with an empty result: not. A bare SKILL.md without frontmatter: no name, no event.
    assert [(i.name, i.how) for i in traj.invocations] == [("csv-summary", InvocationMethod.FILE_READ)]
    assert traj.final_answer is not None and traj.final_answer.startswith("orders.csv")


def test_generic_responses_items_with_a_markdown_catalog() -> None:
    traj = load_trajectory(FIXTURES / "generic" / "responses_items.jsonl")
    assert traj.catalog.names() == ["greet", "semver-bump"]
    assert [(i.name, i.how) for i in traj.invocations] == [("semver-bump", InvocationMethod.SHELL_READ)]


def test_generic_anthropic_blocks_and_unkeyed_results_pair_only_with_the_previous_call(tmp_path: Path) -> None:
    lines = [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "load_skill", "input": {"skill_name": "x"}}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "b", "name": "web_fetch", "input": {}}]},
        {"type": "function_call_output", "output": "# X body from an unrelated tool"},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "Loaded skill x"}]},
    ]
    path = tmp_path / "g.jsonl"
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    [inv] = load_trajectory(path).invocations
    assert (inv.status, inv.body) == (InvocationStatus.LOADED, None)  # an acknowledgement, and not the web page


def test_a_skill_call_without_an_outcome_is_attempted(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_text(json.dumps({"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "Skill",
                                                                  "input": {"skill": "x"}}]}) + "\n")
    [sel] = load_trajectory(path).selections()
    assert sel.status is InvocationStatus.ATTEMPTED
