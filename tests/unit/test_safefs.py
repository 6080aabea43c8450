"""safefs on its own: the default caps at their exact boundaries, the file-count cap, names that are
not UTF-8, lexical containment, strict decoding and the refusals of the descriptor-relative reader.
(The findings as the files check reports them: tests/unit/test_files_check.py.)"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from conftest import manifest, write_skill

from pytest_skilleval import safefs
from pytest_skilleval.results import Severity

MIB = 1024 * 1024


def skill_root(tmp_path: Path, files: dict[str, str | bytes] | None = None) -> Path:
    return write_skill(tmp_path, "demo-skill", {"SKILL.md": manifest(), **(files or {})})


def rules_of(inv: safefs.Inventory) -> list[str]:
    return [f.rule for f in inv.findings]


def test_the_default_size_cap_is_one_mebibyte_exactly(tmp_path: Path) -> None:
    root = skill_root(tmp_path, {"at.bin": b"x" * MIB, "over.bin": b"x" * (MIB + 1)})
    assert safefs.read_bytes(root, "at.bin") == b"x" * MIB  # read in several chunks, whole
    with pytest.raises(safefs.ReadError) as info:
        safefs.read_bytes(root, "over.bin")
    assert info.value.finding.rule == "files.oversize" and info.value.finding.severity is Severity.MEDIUM
    inv = safefs.take_inventory(root)
    assert [f.file for f in inv.findings if f.rule == "files.oversize"] == ["over.bin"]


def test_the_default_depth_and_file_count_caps(tmp_path: Path) -> None:
    deep = "/".join(f"d{i}" for i in range(24))
    root = skill_root(tmp_path, {f"{deep}/at.md": "# at\n", f"{deep}/d24/below.md": "# below\n"})
    inv = safefs.take_inventory(root)
    rels = {e.rel for e in inv.entries}
    assert f"{deep}/at.md" in rels and f"{deep}/d24/below.md" not in rels
    assert [f.file for f in inv.findings if f.rule == "files.too-deep"] == [f"{deep}/d24"]
    assert safefs.Limits().max_files == 5000  # the documented default (--help of the files check)


@pytest.mark.parametrize("cap", [3, 4])
def test_the_file_count_cap_inspects_exactly_that_many_entries(tmp_path: Path, cap: int) -> None:
    root = tmp_path / "skill"
    root.mkdir()
    for name in ("a.md", "b.md", "c.md", "d.md"):
        (root / name).write_text("x\n")
    inv = safefs.take_inventory(root, safefs.Limits(max_files=cap))
    assert [e.rel for e in inv.entries] == ["a.md", "b.md", "c.md", "d.md"][:cap]
    if cap == 4:  # every file fits: nothing truncated
        assert not inv.truncated and "files.too-many-files" not in rules_of(inv)
    else:
        assert inv.truncated and rules_of(inv).count("files.too-many-files") == 1


def test_the_file_count_cap_is_reported_once_across_folders(tmp_path: Path) -> None:
    root = tmp_path / "skill"
    for rel in ("a/1.md", "a/2.md", "b/1.md", "b/2.md", "c.md"):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    inv = safefs.take_inventory(root, safefs.Limits(max_files=2))
    assert rules_of(inv).count("files.too-many-files") == 1
    assert len(inv.entries) == 2


def test_a_name_that_is_not_utf8_is_a_high_finding_and_left_out(tmp_path: Path) -> None:
    root = skill_root(tmp_path)
    os.makedirs(os.path.join(os.fsencode(root), b"ok"))
    with open(os.path.join(os.fsencode(root), b"bad-\xff.md"), "wb") as fh:
        fh.write(b"# x\n")
    inv = safefs.take_inventory(root)
    bad = [f for f in inv.findings if f.rule == "files.bad-name"]
    assert len(bad) == 1 and bad[0].severity is Severity.HIGH
    assert all("bad-" not in e.rel for e in inv.entries)
    assert {e.rel for e in inv.entries} == {"SKILL.md", "ok"}


def test_a_bad_name_counts_toward_the_file_cap(tmp_path: Path) -> None:
    root = tmp_path / "skill"
    root.mkdir()
    with open(os.path.join(os.fsencode(root), b"a-\xff"), "wb") as fh:
        fh.write(b"x")
    (root / "b.md").write_text("x\n")
    inv = safefs.take_inventory(root, safefs.Limits(max_files=1))
    assert inv.entries == [] and inv.truncated


@pytest.mark.parametrize(("rel", "inside"), [
    ("references/a.md", True), ("a/../b.md", True), ("a", True), (".", True),
    ("", False), ("/etc/passwd", False), ("\\\\host\\share", False), ("C:evil", False), ("c:", False),
    ("..", False), ("../x", False), ("a/../../x", False), ("./../x", False),
])
def test_is_within_decides_lexically(tmp_path: Path, rel: str, inside: bool) -> None:
    assert safefs.is_within(tmp_path, rel) is inside


@pytest.mark.parametrize(("rel", "text"), [("a.MD", True), ("x/LICENSE", True), ("requirements.txt", True), ("img.png", False),
                                           ("Makefile.bak", False), ("notes", False)])
def test_which_files_must_be_text(rel: str, text: bool) -> None:
    assert safefs.Entry(rel, safefs.EntryKind.FILE).expects_text() is text


def test_decoding_is_strict_and_says_where(tmp_path: Path) -> None:
    assert safefs.decode_text("line\nzwei ü\n".encode(), "a.md") == "line\nzwei ü\n"
    with pytest.raises(safefs.ReadError) as info:
        safefs.decode_text(b"one\ntwo\n\xff three\n", "a.md")
    assert info.value.finding.line == 3 and info.value.finding.message == "not valid UTF-8 at byte 8"
    with pytest.raises(safefs.ReadError) as info:
        safefs.decode_text(b"text\x00more", "a.md")
    assert info.value.finding.rule == "files.not-text"


def test_a_skill_root_that_is_a_link_is_not_read(tmp_path: Path) -> None:
    real = skill_root(tmp_path / "real")
    (tmp_path / "linked").symlink_to(real)
    with pytest.raises(safefs.ReadError) as info:
        safefs.read_bytes(tmp_path / "linked", "SKILL.md")
    assert info.value.finding.severity is Severity.HIGH and info.value.finding.file == "."


def test_the_reader_refuses_links_specials_and_hardlinks_at_any_depth(tmp_path: Path) -> None:
    root = skill_root(tmp_path / "s", {"sub/deeper/real.md": "# r\n"})
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "x.md").write_text("host data")
    (root / "sub" / "out").symlink_to(tmp_path / "outside")
    (root / "link.md").symlink_to(root / "SKILL.md")
    os.mkfifo(root / "pipe.md")
    os.link(root / "sub" / "deeper" / "real.md", tmp_path / "second-name.md")
    assert safefs.read_text(root, "./SKILL.md").startswith("---")  # "." parts are harmless
    expected = {"sub/out/x.md": ("files.unreadable", Severity.MEDIUM), "link.md": ("files.unreadable", Severity.MEDIUM),
                "pipe.md": ("files.special", Severity.HIGH), "sub/deeper/real.md": ("files.hardlink", Severity.HIGH),
                "sub/missing/x.md": ("files.unreadable", Severity.MEDIUM)}
    for rel, (rule, severity) in expected.items():
        with pytest.raises(safefs.ReadError) as info:
            safefs.read_bytes(root, rel)
        assert (info.value.finding.rule, info.value.finding.severity) == (rule, severity), rel


def test_a_file_that_grows_past_the_cap_while_read_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = skill_root(tmp_path, {"grows.txt": b"x" * 200})
    real_fstat = os.fstat

    def stale_fstat(fd: int) -> os.stat_result:  # the size seen before the file grew: under the cap
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, 10, 0, 0, 0))

    monkeypatch.setattr(safefs.os, "fstat", stale_fstat)
    with pytest.raises(safefs.ReadError, match="grew past the size cap"):
        safefs.read_bytes(root, "grows.txt", safefs.Limits(max_file_bytes=100))
    assert safefs.read_bytes(root, "grows.txt", safefs.Limits(max_file_bytes=200)) == b"x" * 200


def test_every_descriptor_is_closed_on_success_and_refusal(tmp_path: Path) -> None:
    root = skill_root(tmp_path, {"a/b/c.md": "# c\n"})
    os.mkfifo(root / "a" / "b" / "p.md")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(20):
        safefs.read_bytes(root, "a/b/c.md")
        with pytest.raises(safefs.ReadError):
            safefs.read_bytes(root, "a/b/p.md")
    assert len(os.listdir("/proc/self/fd")) == before
