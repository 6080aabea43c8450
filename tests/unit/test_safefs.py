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


def files_at(root: Path, *rels: str) -> Path:
    """A folder holding a one-line file at each relative path."""
    for rel in rels:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text("x\n")
    return root


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
    root = files_at(tmp_path / "skill", "a/1.md", "a/2.md", "b/1.md", "b/2.md", "c.md")
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
        safefs.decode_text(b"one\n\xff two\n", "a.md")
    assert info.value.finding.line == 2
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


@pytest.mark.parametrize("cap", [100, 101])
def test_a_file_that_grows_past_the_cap_while_read_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cap: int) -> None:
    root = skill_root(tmp_path, {"grows.txt": b"x" * 200})
    real_fstat = os.fstat

    def stale_fstat(fd: int) -> os.stat_result:  # the size seen before the file grew: under the cap
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, 10, 0, 0, 0))

    monkeypatch.setattr(safefs.os, "fstat", stale_fstat)
    with pytest.raises(safefs.ReadError, match="grew past the size cap"):
        safefs.read_bytes(root, "grows.txt", safefs.Limits(max_file_bytes=cap))
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


@pytest.mark.parametrize("cap", [4095, 4096])
def test_a_file_exactly_at_an_odd_or_even_cap_is_read_whole(tmp_path: Path, cap: int) -> None:
    root = skill_root(tmp_path, {"at.bin": b"y" * cap, "over.bin": b"y" * (cap + 1)})
    assert safefs.read_bytes(root, "at.bin", safefs.Limits(max_file_bytes=cap)) == b"y" * cap
    with pytest.raises(safefs.ReadError):
        safefs.read_bytes(root, "over.bin", safefs.Limits(max_file_bytes=cap))


def test_a_skill_root_that_is_a_file_is_not_a_skill_folder(tmp_path: Path) -> None:
    (tmp_path / "not-a-folder").write_text("x")
    for rel in ("SKILL.md", "a/SKILL.md"):
        with pytest.raises(safefs.ReadError) as info:
            safefs.read_bytes(tmp_path / "not-a-folder", rel)
        assert (info.value.finding.file, info.value.finding.severity) == (".", Severity.HIGH)
        assert "cannot open skill folder" in info.value.finding.message


def test_the_walk_goes_on_after_a_skipped_or_too_deep_folder(tmp_path: Path) -> None:
    root = files_at(tmp_path / "skill", "a/b/deep.md", "a/z.md", ".git/config", "node_modules/x.js", "z.md")
    inv = safefs.take_inventory(root, safefs.Limits(max_depth=1))
    rels = [e.rel for e in inv.entries]
    assert rels == ["a", "a/b", "a/z.md", "z.md"]
    assert [f.file for f in inv.findings if f.rule == "files.too-deep"] == ["a/b"]


def test_files_are_the_regular_files_only(tmp_path: Path) -> None:
    root = skill_root(tmp_path, {"sub/a.md": "# a\n"})
    (root / "link.md").symlink_to("SKILL.md")
    os.mkfifo(root / "pipe")
    assert [e.rel for e in safefs.take_inventory(root).files()] == ["SKILL.md", "sub/a.md"]


@pytest.mark.parametrize("target", [".", "-notes.md", "sub/../SKILL.md"])
def test_a_link_to_a_name_that_sorts_before_dot_dot_stays_inside(tmp_path: Path, target: str) -> None:
    root = skill_root(tmp_path, {"sub/x.md": "x\n"})
    (root / "alias").symlink_to(target)
    found = [f for f in safefs.take_inventory(root).findings if f.file == "alias"]
    assert [(f.rule, f.severity) for f in found] == [("files.symlink", Severity.LOW)]


def test_a_socket_is_named_as_one(tmp_path: Path) -> None:
    import socket

    root = skill_root(tmp_path)
    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(root / "s"))
        found = [f for f in safefs.take_inventory(root).findings if f.rule == "files.special"]
    assert len(found) == 1 and found[0].message.startswith("socket inside the skill")


def test_limits_and_entries_are_values_that_cannot_change(tmp_path: Path) -> None:
    import dataclasses

    limits = safefs.Limits(max_files=3)
    assert {limits, safefs.Limits(max_files=3)} == {limits}  # hashable: usable as a cache key
    with pytest.raises(dataclasses.FrozenInstanceError):
        limits.max_files = 10**9  # type: ignore[misc]
    entry = safefs.Entry("a.md", safefs.EntryKind.FILE, size=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        entry.size = 0  # type: ignore[misc]


def test_a_bad_name_past_the_cap_still_stops_the_walk_after_it(tmp_path: Path) -> None:
    root = tmp_path / "skill"
    root.mkdir()
    (root / "a.md").write_text("x\n")
    with open(os.path.join(os.fsencode(root), b"b-\xff"), "wb") as fh:
        fh.write(b"x")
    (root / "c.md").write_text("x\n")
    inv = safefs.take_inventory(root, safefs.Limits(max_files=1))
    assert [e.rel for e in inv.entries] == ["a.md"] and inv.truncated
    trunc = [f for f in inv.findings if f.rule == "files.too-many-files"]
    assert len(trunc) == 1 and trunc[0].file == "."  # the skill folder itself
    inv = safefs.take_inventory(root, safefs.Limits(max_files=2))  # the bad name counts once
    assert [e.rel for e in inv.entries] == ["a.md"] and inv.truncated
    inv = safefs.take_inventory(root, safefs.Limits(max_files=3))
    assert [e.rel for e in inv.entries] == ["a.md", "c.md"] and not inv.truncated


def test_a_folder_or_file_that_cannot_be_inspected_is_a_finding(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # As root, permissions do not stop a listing: the failures are injected where the OS reports them.
    root = skill_root(tmp_path, {"locked/x.md": "x\n", "racy.md": "x\n", "z.md": "x\n"})
    real_scandir = os.scandir

    class VanishingEntry:
        def __init__(self, entry: os.DirEntry[str]) -> None:
            self.name, self.path, self._entry = entry.name, entry.path, entry

        def stat(self, *, follow_symlinks: bool = True) -> os.stat_result:
            if self.name == "racy.md":
                raise FileNotFoundError(2, "No such file or directory")  # deleted between listing and stat
            return self._entry.stat(follow_symlinks=follow_symlinks)

    class Listing:
        def __init__(self, path: str) -> None:
            if os.path.basename(path) == "locked":
                raise PermissionError(13, "Permission denied")
            self._it = real_scandir(path)

        def __enter__(self) -> list[VanishingEntry]:
            return [VanishingEntry(e) for e in self._it]

        def __exit__(self, *exc: object) -> None:
            self._it.close()

    def unreadable_link(path: str) -> str:
        raise OSError(5, "Input/output error")

    (root / "link").symlink_to("z.md")
    monkeypatch.setattr(safefs.os, "scandir", Listing)
    monkeypatch.setattr(safefs.os, "readlink", unreadable_link)
    inv = safefs.take_inventory(root)
    assert [e.link_target for e in inv.entries if e.rel == "link"] == ["?"]
    found = {(f.rule, f.file, f.severity) for f in inv.findings}
    assert ("files.unreadable-dir", "locked", Severity.MEDIUM) in found
    assert ("files.unreadable", "racy.md", Severity.MEDIUM) in found
    assert "z.md" in {e.rel for e in inv.entries}  # the walk goes on


def test_a_file_used_as_a_folder_in_the_path_is_refused_as_a_parent(tmp_path: Path) -> None:
    root = skill_root(tmp_path)
    with pytest.raises(safefs.ReadError) as info:
        safefs.read_bytes(root, "SKILL.md/x.md")
    assert info.value.finding.message == "a parent folder is a link or missing; not read"


def test_an_oversize_file_is_refused_before_it_is_read(tmp_path: Path) -> None:
    root = skill_root(tmp_path, {"big.txt": b"x" * 5000})
    with pytest.raises(safefs.ReadError) as info:
        safefs.read_bytes(root, "big.txt", safefs.Limits(max_file_bytes=4096))
    assert info.value.finding.message == "file is 5000 bytes, over the cap; not read"


def test_a_file_that_grows_past_a_cap_of_one_chunk_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cap = 1 << 16  # the cap + 1 takes a second read of one byte
    root = skill_root(tmp_path, {"grows.bin": b"x" * (cap + 10)})
    real_fstat = os.fstat

    def stale_fstat(fd: int) -> os.stat_result:
        st = real_fstat(fd)
        return os.stat_result((st.st_mode, st.st_ino, st.st_dev, st.st_nlink, st.st_uid, st.st_gid, 10, 0, 0, 0))

    monkeypatch.setattr(safefs.os, "fstat", stale_fstat)
    with pytest.raises(safefs.ReadError, match="grew past the size cap"):
        safefs.read_bytes(root, "grows.bin", safefs.Limits(max_file_bytes=cap))


@pytest.mark.parametrize("rel", ["-notes.md", "#draft.md", "sub/!x.md"])
def test_names_that_sort_before_dot_dot_are_ordinary_names(tmp_path: Path, rel: str) -> None:
    root = skill_root(tmp_path, {rel: "plain\n"})
    assert safefs.read_text(root, rel) == "plain\n"
