"""Every report and cache write goes through atomic.py: whole files or nothing, never through a link."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from pytest_skilleval import atomic
from pytest_skilleval.atomic import UnsafeWriteError, create_exclusive, ensure_dir, trusted_prefix, write_atomic


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_text_and_bytes_are_written_whole_with_readable_permissions(tmp_path: Path) -> None:
    text = write_atomic(tmp_path / "a" / "b" / "card.md", "héllo\n")
    data = write_atomic(tmp_path / "blob.bin", b"\x00\x01")
    assert text.read_bytes() == "héllo\n".encode() and data.read_bytes() == b"\x00\x01"
    assert stat.S_IMODE(text.stat().st_mode) == 0o644
    assert leftovers(tmp_path / "a" / "b") == [] and leftovers(tmp_path) == []


def test_an_existing_file_is_replaced_not_appended(tmp_path: Path) -> None:
    target = tmp_path / "results.json"
    target.write_text("old content that is longer")
    write_atomic(target, "new")
    assert target.read_text() == "new"


def test_a_symlink_at_the_target_is_refused_and_its_victim_untouched(tmp_path: Path) -> None:
    victim = tmp_path / "bashrc"
    victim.write_text("original")
    (tmp_path / "out").mkdir()
    os.symlink(victim, tmp_path / "out" / "results.json")
    with pytest.raises(UnsafeWriteError, match="symbolic link"):
        write_atomic(tmp_path / "out" / "results.json", "payload")
    assert victim.read_text() == "original"


def test_a_symlinked_folder_in_the_path_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    project = tmp_path / "project"
    project.mkdir()
    os.symlink(elsewhere, project / "skilleval-report")
    with pytest.raises(UnsafeWriteError):
        write_atomic(project / "skilleval-report" / "skill" / "BENCHMARK.md", "x", trusted=project)
    with pytest.raises(UnsafeWriteError):
        ensure_dir(project / "skilleval-report" / "skill", trusted=project)
    assert list(elsewhere.iterdir()) == []


def test_links_at_or_above_the_trusted_prefix_are_allowed(tmp_path: Path) -> None:
    real = tmp_path / "private-tmp"
    real.mkdir()
    os.symlink(real, tmp_path / "tmp")  # like macOS /tmp -> /private/tmp: not the run's to refuse
    written = write_atomic(tmp_path / "tmp" / "report" / "results.json", "{}", trusted=tmp_path / "tmp")
    assert (real / "report" / "results.json").read_text() == "{}" and written.name == "results.json"
    with pytest.raises(UnsafeWriteError):  # without the trust, the same link is refused
        write_atomic(tmp_path / "tmp" / "report2" / "results.json", "{}")


def test_a_link_just_below_the_trusted_prefix_is_refused(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "made")
    with pytest.raises(UnsafeWriteError):
        ensure_dir(tmp_path / "made" / "x", trusted=tmp_path)


def test_a_failed_write_leaves_no_temporary_file_and_the_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "results.json"
    target.write_text("previous")

    def refuse(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", refuse)
    with pytest.raises(OSError, match="No space"):
        write_atomic(target, "new")
    assert target.read_text() == "previous" and leftovers(tmp_path) == []


def test_an_interrupt_mid_write_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(atomic.os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "card.md", "x")
    assert not (tmp_path / "card.md").exists() and leftovers(tmp_path) == []


def test_create_exclusive_claims_once(tmp_path: Path) -> None:
    claim = tmp_path / "claims" / "share-1"
    assert create_exclusive(claim, "worker gw0") is True
    assert create_exclusive(claim, "worker gw1") is False
    assert claim.read_text() == "worker gw0"


def test_create_exclusive_never_writes_through_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    os.symlink(victim, tmp_path / "claim")  # dangling: O_CREAT alone would create the victim
    assert create_exclusive(tmp_path / "claim", "x") is False
    assert not victim.exists()


def test_trusted_prefix_is_the_project_inside_it_and_the_existing_part_outside(tmp_path: Path) -> None:
    project = tmp_path / "checkout"
    (project / "skilleval-report").mkdir(parents=True)
    assert trusted_prefix(project / "skilleval-report" / "x", project) == project
    assert trusted_prefix(project, project) == project
    outside = tmp_path / "ci-artifacts"
    outside.mkdir()
    assert trusted_prefix(outside / "new" / "deeper", project) == outside
    assert trusted_prefix(outside / "report", project) == outside


def test_a_write_that_need_not_survive_a_power_cut_skips_fsync(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Reports and the scanner cache are rewritten by the next run: one fsync per file (a card per skill)
    cost seconds of wall time on a busy disk. Still whole-or-absent for every reader (rename)."""
    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    write_atomic(tmp_path / "card.md", "x", durable=False)
    assert synced == [] and (tmp_path / "card.md").read_text() == "x" and leftovers(tmp_path) == []
    write_atomic(tmp_path / "ledger.json", "y")
    assert len(synced) == 1


def test_a_folder_that_sorts_before_the_project_is_not_inside_it(tmp_path: Path) -> None:
    # "inside the project" is a path relation, not an order: a sibling "a-artifacts" sorts before
    # "checkout" but is outside it, so only its existing part is trusted and a link in it is refused.
    project = tmp_path / "checkout"
    project.mkdir()
    sibling = tmp_path / "a-artifacts"
    assert trusted_prefix(sibling / "report", project) == tmp_path
    (tmp_path / "real").mkdir()
    os.symlink(tmp_path / "real", tmp_path / "a-link")
    with pytest.raises(UnsafeWriteError):
        write_atomic(tmp_path / "a-link" / "results.json", "{}", trusted=tmp_path / "z-trusted")
    assert not (tmp_path / "real" / "results.json").exists()


def test_a_claim_is_a_plain_readable_file(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        assert create_exclusive(tmp_path / "claim", "worker gw0") is True
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "claim").stat().st_mode) == 0o644


def test_a_failed_write_reports_its_own_error_even_when_the_temporary_file_is_gone(tmp_path: Path,
                                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    def vanish_then_fail(src: str, dst: str) -> None:
        os.unlink(src)  # e.g. a cleaner removed it: the clean-up must not replace the real error
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(atomic.os, "replace", vanish_then_fail)
    with pytest.raises(OSError, match="No space"):
        write_atomic(tmp_path / "results.json", "new")
    assert leftovers(tmp_path) == []


def test_a_document_written_in_chunks_is_whole_and_durable_unless_told_otherwise(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_skilleval.atomic import write_atomic_chunks

    synced: list[int] = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd))[1])
    written = write_atomic_chunks(tmp_path / "out" / "results.json", iter(["{", b'"a": 1', "}"]), trusted=tmp_path)
    assert written.read_text() == '{"a": 1}' and len(synced) == 1 and leftovers(written.parent) == []
    write_atomic_chunks(tmp_path / "out" / "again.json", ["x"], trusted=tmp_path, durable=False)
    assert len(synced) == 1


def test_many_small_chunks_text_and_bytes_are_written_as_given(tmp_path: Path) -> None:
    """Text chunks are joined before they are encoded and written (a page comes in ~200,000 of them): the
    bytes are those of the chunks in order, across join boundaries, bytes between texts, multi-byte text."""
    chunks: list[str | bytes] = []
    for i in range(40_000):
        chunks.append(f"é{i}✓\U0001f600" if i % 7 else "")
        if i % 9_999 == 0:
            chunks.append(b"\x00raw\xff")
    chunks.append("x" * (3 * atomic.JOIN_CHARS))
    chunks.append(b"end")
    target = atomic.write_atomic_chunks(tmp_path / "page.html", iter(chunks), durable=False)
    assert target.read_bytes() == b"".join(c.encode("utf-8") if isinstance(c, str) else c for c in chunks)


def test_a_chunk_that_cannot_be_encoded_leaves_no_file(tmp_path: Path) -> None:
    with pytest.raises(UnicodeEncodeError):
        atomic.write_atomic_chunks(tmp_path / "page.html", iter(["fine", "lone \ud800", "never"]))
    assert not (tmp_path / "page.html").exists() and leftovers(tmp_path) == []
