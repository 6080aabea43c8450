"""The file tree of a skill is read safely: every hazard is a finding with a location, never a traceback."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import manifest, rules, run_check, write_skill

from pytest_skilleval import safefs
from pytest_skilleval.results import Severity
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1.files import FilesCheck


def _skill(tmp_path: Path, files: dict[str, str | bytes] | None = None) -> Path:
    return write_skill(tmp_path, "demo-skill", {"SKILL.md": manifest(), **(files or {})})


def _finding(result, rule):  # type: ignore[no-untyped-def]
    matches = [f for f in result.findings if f.rule == rule]
    assert matches, f"{rule} not in {rules(result)}"
    return matches[0]


def test_clean_skill_has_no_file_findings(tmp_path: Path) -> None:
    root = _skill(tmp_path, {"scripts/run.py": "print('hi')\n", "references/a.md": "# A\n"})
    result = run_check(FilesCheck(), Skill(root=root, key="demo-skill"))
    assert result.findings == []
    assert result.metrics["files"] == 3
    assert result.metrics["digest"].startswith("sha256:")


def test_symlink_leaving_the_skill_is_a_finding_and_never_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret")
    root = _skill(tmp_path)
    os.symlink(secret, root / "notes.md")
    os.symlink("../secret.txt", root / "rel.md")
    skill = Skill(root=root, key="demo-skill")
    result = run_check(FilesCheck(), skill)
    f = _finding(result, "files.symlink-escape")
    assert f.severity is Severity.HIGH and f.file in ("notes.md", "rel.md")
    assert {x.file for x in result.findings if x.rule == "files.symlink-escape"} == {"notes.md", "rel.md"}
    assert skill.text("notes.md") is None and skill.text("rel.md") is None  # never followed
    assert "top secret" not in str(result.model_dump())


def test_symlink_inside_the_skill_is_reported_but_not_followed(tmp_path: Path) -> None:
    root = _skill(tmp_path, {"references/a.md": "# A\n"})
    os.symlink("references/a.md", root / "alias.md")
    skill = Skill(root=root, key="demo-skill")
    assert _finding(run_check(FilesCheck(), skill), "files.symlink").severity is Severity.LOW
    assert skill.text("alias.md") is None


def test_symlinked_parent_folder_is_not_entered(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.md").write_text("outside")
    root = _skill(tmp_path)
    os.symlink(outside, root / "references")
    skill = Skill(root=root, key="demo-skill")
    assert _finding(run_check(FilesCheck(), skill), "files.symlink-escape").file == "references"
    with pytest.raises(safefs.ReadError):
        safefs.read_text(root, "references/x.md")


def test_hardlinked_file_is_a_finding_and_not_read(tmp_path: Path) -> None:
    other = tmp_path / "elsewhere.txt"
    other.write_text("private")
    root = _skill(tmp_path)
    os.link(other, root / "data.txt")
    skill = Skill(root=root, key="demo-skill")
    f = _finding(run_check(FilesCheck(), skill), "files.hardlink")
    assert f.severity is Severity.HIGH and f.file == "data.txt"
    assert skill.text("data.txt") is None


def test_fifo_is_a_finding_and_never_opened(tmp_path: Path) -> None:
    root = _skill(tmp_path)
    os.mkfifo(root / "pipe.md")  # opening it for reading would block forever
    skill = Skill(root=root, key="demo-skill")
    f = _finding(run_check(FilesCheck(), skill), "files.special")
    assert f.severity is Severity.HIGH and f.file == "pipe.md" and "FIFO" in f.message
    assert skill.text("pipe.md") is None


def test_oversize_file_is_a_finding_and_not_read(tmp_path: Path) -> None:
    root = _skill(tmp_path, {"references/big.md": "x" * 5000})
    skill = Skill(root=root, key="demo-skill", limits=safefs.Limits(max_file_bytes=4096))
    f = _finding(run_check(FilesCheck(), skill), "files.oversize")
    assert f.severity is Severity.MEDIUM and f.file == "references/big.md" and "5000" in f.message


def test_binary_where_text_is_expected_is_a_finding(tmp_path: Path) -> None:
    root = _skill(tmp_path, {"references/notes.md": b"ok\n\x00\x01binary", "scripts/x.py": b"# ok\nprint(1)\n\xff\xfe\n"})
    result = run_check(FilesCheck(), Skill(root=root, key="demo-skill"))
    by_file = {f.file: f for f in result.findings if f.rule == "files.not-text"}
    assert set(by_file) == {"references/notes.md", "scripts/x.py"}
    assert by_file["scripts/x.py"].line == 3  # the invalid byte is on line 3


def test_binary_assets_are_not_text_findings(tmp_path: Path) -> None:
    root = _skill(tmp_path, {"assets/logo.png": b"\x89PNG\r\n\x1a\n\x00\x00"})
    assert run_check(FilesCheck(), Skill(root=root, key="demo-skill")).findings == []


def test_binary_skill_md_is_a_schema_finding_not_a_crash(tmp_path: Path) -> None:
    root = write_skill(tmp_path, "demo-skill", {"SKILL.md": b"\x00\x01\x02\xff"})
    skill = Skill(root=root, key="demo-skill")
    assert skill.frontmatter.data is None
    assert [f.rule for f in skill.load_findings] == ["schema.manifest-unreadable"]


def test_skipped_and_hidden_folders(tmp_path: Path) -> None:
    root = _skill(tmp_path, {"node_modules/pkg/index.js": "x", ".git/config": "x", ".env": "KEY=1\n"})
    rels = {e.rel for e in Skill(root=root, key="demo-skill").inventory.entries}
    assert ".env" in rels  # hidden files are content (and may hold secrets)
    assert not any(r.startswith(("node_modules", ".git")) for r in rels)


@pytest.mark.parametrize("rel", ["../x", "/etc/passwd", "a/../../x", ""])
def test_read_refuses_paths_leaving_the_root(tmp_path: Path, rel: str) -> None:
    root = _skill(tmp_path)
    with pytest.raises(safefs.ReadError):
        safefs.read_bytes(root, rel)


@pytest.mark.parametrize("rel", ["../outside.txt", "a/../../outside.txt", "./../outside.txt"])
def test_read_refuses_to_climb_out_even_when_the_target_exists(tmp_path: Path, rel: str) -> None:
    # The refusal must come from the '..' rule, not from "file not found": the outside file is real here.
    (tmp_path / "outside.txt").write_text("host data")
    root = _skill(tmp_path, {"a/inner.md": "# in\n"})
    with pytest.raises(safefs.ReadError) as info:
        safefs.read_bytes(root, rel)
    assert info.value.finding.rule == "files.bad-path"
    assert info.value.finding.severity is Severity.HIGH


@pytest.mark.parametrize(("rel", "target"), [("up", ".."), ("deep/up", "../.."), ("dots", "./.."), ("sub/x", "../../outside")])
def test_a_link_to_the_parent_itself_escapes(tmp_path: Path, rel: str, target: str) -> None:
    root = _skill(tmp_path)
    (root / rel).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(target, root / rel)
    result = run_check(FilesCheck(), Skill(root=root, key="demo-skill"))
    found = _finding(result, "files.symlink-escape")
    assert found.severity is Severity.HIGH and found.file == rel


def test_a_link_that_stays_inside_is_low(tmp_path: Path) -> None:
    root = _skill(tmp_path, {"references/a.md": "# A\n"})
    os.symlink("references/a.md", root / "alias.md")
    result = run_check(FilesCheck(), Skill(root=root, key="demo-skill"))
    assert _finding(result, "files.symlink").severity is Severity.LOW
    assert "files.symlink-escape" not in rules(result)


def test_a_file_exactly_at_the_size_cap_is_read_and_one_byte_more_is_not(tmp_path: Path) -> None:
    limits = safefs.Limits(max_file_bytes=4096)
    root = _skill(tmp_path, {"at.txt": b"x" * 4096, "over.txt": b"x" * 4097})
    assert safefs.read_bytes(root, "at.txt", limits) == b"x" * 4096
    with pytest.raises(safefs.ReadError) as info:
        safefs.read_bytes(root, "over.txt", limits)
    assert info.value.finding.rule == "files.oversize"
    inv = safefs.take_inventory(root, limits)
    assert [f.file for f in inv.findings if f.rule == "files.oversize"] == ["over.txt"]


def test_a_folder_exactly_at_the_depth_limit_is_inspected_and_one_deeper_is_not(tmp_path: Path) -> None:
    limits = safefs.Limits(max_depth=3)
    root = _skill(tmp_path, {"a/b/c/at.md": "# at\n", "a/b/c/d/below.md": "# below\n"})
    inv = safefs.take_inventory(root, limits)
    rels = {e.rel for e in inv.entries}
    assert "a/b/c/at.md" in rels
    assert "a/b/c/d/below.md" not in rels
    assert [f.file for f in inv.findings if f.rule == "files.too-deep"] == ["a/b/c/d"]
