"""The controller's report writer (reports/session.py) without a pytest session: card folders that can never
climb out of the report dir, keys that sanitise to one folder, and results.json streamed piece by piece."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_skilleval.atomic import UnsafeWriteError
from pytest_skilleval.reports.model import CheckRecord, RunReport, build_run, build_skill
from pytest_skilleval.reports.session import card_dir, write_reports
from pytest_skilleval.results import CheckResult


@pytest.mark.parametrize(("key", "parts"), [
    ("skills/pdf", ("skills", "pdf")),
    ("../../etc/pdf", ("etc", "pdf")),  # '..' is dropped, never followed
    ("/abs/pdf", ("abs", "pdf")),
    ("a/./b//c", ("a", "b", "c")),
    # a separator on Windows; elsewhere a character of a name (a folder named so, or an escape: see identity.py)
    ("win\\..\\pdf", ("win", "pdf") if os.sep == "\\" else ("win\\..\\pdf",)),
    ("..", ("skill",)),  # nothing left: a fixed name, never the report dir itself
    ("", ("skill",)),
])
def test_a_card_folder_stays_inside_the_report_dir(tmp_path: Path, key: str, parts: tuple[str, ...]) -> None:
    assert card_dir(tmp_path / "rep", key) == (tmp_path / "rep").joinpath(*parts)



def test_skills_whose_folder_names_differ_only_in_undecodable_bytes_get_their_own_card_folders(tmp_path: Path) -> None:
    """Keys of folders named by bytes that are not UTF-8 (0xff, 0xfe), a folder literally named ``\udcff``, one named
    ``udcff``: the card folder is the key, its backslashes kept (a backslash split it into folders and a surrogate's
    escape lost to its folder: ``victim-\udcff`` went to ``victim-/udcff``, ``\udcff`` to ``udcff``, beside a skill
    ``udcff``). Each card in its own key's folder, none moved aside."""
    keys = ["victim-\\udcff", "victim-\\udcfe", "\\udcff", "\\\\udcff", "udcff", "group-\\udcfe/\\udcff"]
    written = write_reports(_run(keys), tmp_path / "rep")
    cards = {p.parent.relative_to(tmp_path / "rep").as_posix(): p for p in written if p.name == "BENCHMARK.md"}
    assert sorted(cards) == sorted(keys)
    for i, key in enumerate(keys):
        assert f"- Path: `{key}`" in cards[key].read_text("utf-8") and f"skill-{i}" in cards[key].read_text("utf-8")

def _run(keys: list[str]) -> RunReport:
    skills = [build_skill(key, f"skill-{i}", f"/src/{i}", [CheckRecord(blocking=True, result=CheckResult(check="schema", tier=1))])
              for i, key in enumerate(keys)]
    return build_run(skills, tool={"name": "pytest-skilleval", "version": "0.0.0"}, generated_at="2026-01-01T00:00:00+00:00", complete=True,
                     exit_status=0, settings={})


def test_three_keys_that_sanitise_to_one_folder_get_three_cards(tmp_path: Path) -> None:
    run = _run(["x", "./x", "../x"])
    written = write_reports(run, tmp_path / "rep")
    cards = sorted(p.relative_to(tmp_path / "rep").as_posix() for p in written if p.name == "BENCHMARK.md")
    assert cards == ["x/BENCHMARK.md", "x_/BENCHMARK.md", "x__/BENCHMARK.md"]
    owners = [[i for i in range(3) if f"skill-{i}" in (tmp_path / "rep" / c).read_text("utf-8")] for c in cards]
    assert sorted(owners) == [[0], [1], [2]]  # each card is its own skill's, none overwritten
    assert not (tmp_path / "x").exists() and sorted(p.name for p in (tmp_path / "rep").iterdir()) == [
        "index.html", "results.json", "x", "x_", "x__"]


@pytest.mark.parametrize("keys", [[], ["one"], ["a/b", "c", "d"]], ids=["none", "one", "three"])
def test_results_json_streamed_is_the_whole_document(tmp_path: Path, keys: list[str]) -> None:
    run = _run(keys)
    written = write_reports(run, tmp_path / "rep")
    text = (tmp_path / "rep/results.json").read_text("utf-8")
    assert text == run.model_dump_json(indent=2) + "\n"
    assert RunReport.model_validate_json(text) == run
    assert written[-2:] == [tmp_path / "rep/results.json", tmp_path / "rep/index.html"] and (tmp_path / "rep/index.html").is_file()
    assert len(written) == len(keys) + 2


def test_reports_are_written_without_an_fsync_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A card per skill: an fsync each was seconds of wall time over a catalog (see atomic.write_atomic)."""
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    assert len(write_reports(_run(["a", "b"]), tmp_path / "rep")) == 4
    assert synced == []


def test_a_link_inside_the_project_is_refused_and_one_above_it_is_not(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    real_project = tmp_path / "real-project"
    real_project.mkdir()
    (real_project / "linked").symlink_to(elsewhere)  # planted in the checkout
    with pytest.raises(UnsafeWriteError, match="symbolic link"):
        write_reports(_run(["a"]), real_project / "linked" / "rep", real_project)
    assert list(elsewhere.iterdir()) == []
    (tmp_path / "project").symlink_to(real_project)  # the project's own path goes through a link (macOS /tmp): the user's
    written = write_reports(_run(["a"]), tmp_path / "project" / "rep", tmp_path / "project")
    assert (real_project / "rep" / "results.json").is_file() and len(written) == 3


def test_without_a_project_no_link_is_followed(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "linked").symlink_to(elsewhere)
    with pytest.raises(UnsafeWriteError, match="symbolic link"):
        write_reports(_run(["a"]), tmp_path / "linked" / "rep")
    assert list(elsewhere.iterdir()) == []
