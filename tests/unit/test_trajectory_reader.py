"""Reading and choosing: streamed JSON Lines, JSON documents, sniffing, names, and parse errors with lines."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from selection_support import FIXTURES

from pytest_skilleval.trajectory import (
    ParseLimits,
    ParserRegistry,
    TrajectoryBuilder,
    TrajectoryParseError,
    TrajectoryParser,
    UnknownFormatError,
    default_registry,
    load_trajectory,
)

LINE = json.dumps({"role": "user", "content": "hello"})


def write(tmp_path: Path, text: str | bytes, name: str = "t.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


@pytest.mark.parametrize(("folder", "harness"), [
    ("claude-code", "claude-code"), ("codex", "codex"), ("opencode", "opencode"), ("gemini", "gemini-cli"),
    ("openhands", "openhands"), ("google-adk", "google-adk"), ("strands", "strands"), ("generic", "generic"),
])
def test_each_fixture_is_sniffed_as_its_harness(folder: str, harness: str) -> None:
    files = [p for p in sorted((FIXTURES / folder).iterdir()) if ".requests." not in p.name]
    assert files
    for path in files:
        assert load_trajectory(path).harness == harness, path.name


def test_a_name_or_alias_overrides_sniffing() -> None:
    path = FIXTURES / "generic" / "openai_chat_read.jsonl"
    assert load_trajectory(path, format="Gemini").harness == "gemini-cli"
    with pytest.raises(UnknownFormatError, match="unknown trajectory format 'nope' \\(known: google-adk"):
        load_trajectory(path, format="nope")


def test_truncated_last_line_names_the_line(tmp_path: Path) -> None:
    path = write(tmp_path, LINE + "\n" + LINE + "\n" + '{"role": "assistant", "content": "cut of')
    with pytest.raises(TrajectoryParseError) as err:
        load_trajectory(path)
    assert err.value.line == 3 and "truncated" in err.value.message and str(path) in str(err.value)
    assert str(err.value).startswith(f"{path}:3: ")


def test_a_bad_middle_line_is_corrupt_not_truncated(tmp_path: Path) -> None:
    path = write(tmp_path, LINE + "\n{not json}\n" + LINE + "\n")
    with pytest.raises(TrajectoryParseError, match=r":2: invalid JSON") as err:
        load_trajectory(path)
    assert "cut off" not in err.value.message


def test_a_bad_last_line_with_newline_says_it_was_last(tmp_path: Path) -> None:
    with pytest.raises(TrajectoryParseError, match=r":2: invalid JSON.*the last line"):
        load_trajectory(write(tmp_path, LINE + "\n{oops\n"))


@pytest.mark.parametrize(("content", "message"), [
    (b"", "empty file"),
    (b"\n\n", "empty file"),
    (LINE.encode() + b"\n[1, 2]\n", ":2: expected one JSON object per line"),
    (LINE.encode() + b"\n\xff\xfe{}\n", ":2: not UTF-8"),
    (b"plain text, not json\n", ":1: not a recognised trajectory format"),
    (b'{\n  "messages": [\n    {"role": "user", "content": "x"}\n', "truncated: the document ends early"),
    (b'{\n  "messages": [1,,2]\n}\n', ":2: invalid JSON"),
])
def test_bad_input_is_a_parse_error_never_a_crash(tmp_path: Path, content: bytes, message: str) -> None:
    with pytest.raises(TrajectoryParseError, match=message):
        load_trajectory(write(tmp_path, content))


def test_an_overlong_line_is_refused_with_its_number(tmp_path: Path) -> None:
    path = write(tmp_path, LINE + "\n" + json.dumps({"role": "user", "content": "x" * 5000}) + "\n")
    with pytest.raises(TrajectoryParseError, match=r":2: line is longer than 1000 bytes"):
        load_trajectory(path, limits=ParseLimits(max_line_bytes=1000))


def test_an_oversized_document_asks_for_json_lines(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps({"messages": [{"role": "user", "content": "y" * 3000}]}, indent=1), "t.json")
    with pytest.raises(TrajectoryParseError, match="write the trajectory as JSON Lines"):
        load_trajectory(path, limits=ParseLimits(max_document_bytes=1000))


def test_a_missing_file_is_a_parse_error(tmp_path: Path) -> None:
    with pytest.raises(TrajectoryParseError, match="cannot read"):
        load_trajectory(tmp_path / "absent.jsonl", format="generic")


def test_a_parser_crash_on_an_unexpected_shape_names_the_line(tmp_path: Path) -> None:
    class Fragile(TrajectoryParser):
        name = "fragile"

        def sniff(self, first_lines: Sequence[str]) -> bool:
            return True

        def parse(self, records: Iterable[dict[str, Any]], builder: TrajectoryBuilder) -> None:
            for rec in records:
                rec["must"]  # noqa: B018 - the KeyError is the point

    path = write(tmp_path, json.dumps({"must": 1}) + "\n" + json.dumps({"other": 2}) + "\n")
    with pytest.raises(TrajectoryParseError, match=r":2: fragile parser: unexpected record shape \(KeyError"):
        ParserRegistry([Fragile()]).parse_file(path)


def test_shapes_the_built_in_parsers_do_not_expect_are_errors_or_ignored(tmp_path: Path) -> None:
    odd = [{"type": "assistant", "message": {"content": 7}}, {"type": "user", "message": {"content": [None, 3, {"type": "x"}]}},
           {"type": "result", "usage": "n/a", "num_turns": "two"}]
    path = write(tmp_path, "\n".join(json.dumps(o) for o in odd) + "\n")
    traj = load_trajectory(path, format="claude-code")
    assert traj.invocations == [] and traj.turns == 1


def test_registry_order_and_clashes() -> None:
    reg = default_registry()
    assert reg.names()[0] == "google-adk" and reg.names()[-1] == "generic"

    class Other(TrajectoryParser):
        name = "codex"

        def sniff(self, first_lines: Sequence[str]) -> bool:
            return False

        def parse(self, records: Iterable[dict[str, Any]], builder: TrajectoryBuilder) -> None:
            pass

    with pytest.raises(UnknownFormatError, match="two trajectory parsers are named 'codex'"):
        reg.add(Other())


def test_parse_text_and_records_in_memory() -> None:
    reg = default_registry()
    traj = reg.parse_text(LINE + "\n", name="inline")
    assert traj.source == "inline" and traj.task == "hello"
    traj = reg.parse_records([{"kind": "InvokeSkillAction", "name": "pdf"}, {"kind": "InvokeSkillObservation", "content": "body"}],
                             format="openhands", source="live")
    assert [(i.name, i.status.value, i.body) for i in traj.invocations] == [("pdf", "loaded", "body")]
    assert traj.lines == 2


def test_a_json_document_replays_its_list_and_header() -> None:
    traj = load_trajectory(FIXTURES / "strands" / "agent_skills_run.json")
    assert traj.catalog.source == "system prompt" and traj.catalog.names() == ["pdf-processing", "csv-summary"]
    assert traj.task == "Extract the tables from q3.pdf and summarise them"
