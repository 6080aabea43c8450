"""Atomic, link-refusing file writes: the one helper every report and cache write goes through.

A report folder may sit in a checkout that an untrusted pull request controls, so a write never
goes through a symbolic link (a planted ``skilleval-report -> ~/.bashrc`` must not be followed),
and a reader never sees a half-written file: data goes to a temporary file that is renamed.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path


class UnsafeWriteError(OSError):
    pass


def _refuse_links(path: Path, trusted: Path | None = None) -> None:
    # a set, not ``trusted.parents`` searched for each part: every report card comes this way twice
    stop = {trusted, *trusted.parents} if trusted is not None else set()
    for part in [path, *path.parents]:
        if part in stop:
            return  # the trusted prefix and above: links the user cannot change (macOS /tmp -> /private/tmp)
        if part.is_symlink():
            raise UnsafeWriteError(f"refusing to write through the symbolic link {part}")


def ensure_dir(path: Path, trusted: Path | None = None) -> Path:
    """Create ``path``; no component of it may be a symbolic link, except ``trusted`` and its ancestors."""
    path = Path(os.path.abspath(path))
    _refuse_links(path, trusted)
    path.mkdir(parents=True, exist_ok=True)
    _refuse_links(path, trusted)
    return path


def trusted_prefix(target: Path, project: Path) -> Path:
    """The part of ``target``'s path a run may take as given: inside ``project`` (a checkout a pull request
    may control) only ``project`` itself; elsewhere every folder that already exists. Links are refused
    below it — in the project, and in every folder the run creates."""
    target = Path(os.path.abspath(target))
    if target == project or project in target.parents:
        return project
    existing = next((p for p in (target.parent, *target.parent.parents) if os.path.lexists(p)), Path(target.anchor))
    return existing


def write_atomic(path: Path, data: str | bytes, trusted: Path | None = None, *, durable: bool = True) -> Path:
    """Write ``path`` whole or not at all. ``durable=False`` skips the fsync: for files the next run
    writes again (reports, the scanner cache), where a power cut may cost the file but a reader still
    never sees half of it; one fsync per file was seconds of wall time for a card per skill."""
    return write_atomic_chunks(path, (data,), trusted, durable=durable)


def write_atomic_chunks(path: Path, chunks: Iterable[str | bytes], trusted: Path | None = None, *, durable: bool = True) -> Path:
    """Like :func:`write_atomic`, the data given piece by piece (a large document is never whole in memory)."""
    path = Path(os.path.abspath(path))
    ensure_dir(path.parent, trusted)
    if path.is_symlink():
        raise UnsafeWriteError(f"refusing to replace the symbolic link {path}")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            for piece in _joined(chunks):
                fh.write(piece)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    return path


#: Text is written in pieces of about this many characters: a template's output comes in hundreds of
#: thousands of small strings, and one encode and write call each cost more than the page's rendering of them.
JOIN_CHARS = 1 << 16


def _joined(chunks: Iterable[str | bytes]) -> Iterator[bytes]:
    """The chunks as UTF-8 bytes, consecutive strings joined up to :data:`JOIN_CHARS` (the same bytes)."""
    texts: list[str] = []
    size = 0
    for chunk in chunks:
        if isinstance(chunk, str):
            texts.append(chunk)
            size += len(chunk)
            if size < JOIN_CHARS:
                continue
            chunk = ""
        if texts:
            yield "".join(texts).encode("utf-8")
            texts, size = [], 0
        if chunk:
            yield chunk
    if texts:
        yield "".join(texts).encode("utf-8")


def create_exclusive(path: Path, text: str = "") -> bool:
    """Create ``path`` only if it does not exist (an atomic claim); False when someone else has it."""
    ensure_dir(path.parent)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as fh:
        fh.write(text)
    return True
