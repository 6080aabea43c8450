"""The only module that touches a skill's files.

A skill is untrusted input. Everything here is read descriptor-relative from the skill root with
``O_NOFOLLOW`` on every path component, so a symlink is never followed, a hardlinked file (which
may be a second name of a file outside the skill) is never read, FIFOs and devices are never
opened, sizes are bounded and text is decoded strictly. Problems become :class:`Finding` objects;
nothing here raises on bad input.

Nothing of a skill is ever imported or executed by this module or by any Tier 1 check.
"""

from __future__ import annotations

import enum
import os
import posixpath
import stat
from dataclasses import dataclass, field
from pathlib import Path

from pytest_skilleval.results import Finding, Severity, encodable, has_surrogates

#: Folders never walked inside a skill: tool caches and vendored dependencies, not skill content.
SKIPPED_DIRS = frozenset({".git", "node_modules", "__pycache__", ".venv", "venv", ".mypy_cache", ".ruff_cache", ".pytest_cache"})

#: Suffixes whose content must be UTF-8 text; anything else may be binary.
TEXT_SUFFIXES = frozenset(
    {".md", ".mdc", ".markdown", ".txt", ".rst", ".py", ".sh", ".bash", ".zsh", ".js", ".mjs", ".cjs",
     ".ts", ".tsx", ".jsx", ".json", ".jsonl", ".yaml", ".yml", ".toml", ".cfg", ".ini", ".csv",
     ".html", ".htm", ".xml", ".css", ".sql", ".r", ".rb", ".go", ".rs", ".java", ".ps1", ".env"}
)
TEXT_NAMES = frozenset({"LICENSE", "LICENCE", "COPYING", "NOTICE", "Makefile", "Dockerfile", "requirements.txt"})


@dataclass(frozen=True)
class Limits:
    max_file_bytes: int = 1024 * 1024
    max_files: int = 5000
    max_depth: int = 24


class EntryKind(str, enum.Enum):
    FILE = "file"
    DIR = "dir"
    SYMLINK = "symlink"
    SPECIAL = "special"  # FIFO, socket, block or character device


@dataclass(frozen=True)
class Entry:
    rel: str  # posix path relative to the skill root
    kind: EntryKind
    size: int = 0
    nlink: int = 1
    link_target: str | None = None

    @property
    def suffix(self) -> str:
        return posixpath.splitext(self.rel)[1].lower()

    @property
    def name(self) -> str:
        return posixpath.basename(self.rel)

    def expects_text(self) -> bool:
        return self.suffix in TEXT_SUFFIXES or self.name in TEXT_NAMES


@dataclass
class Inventory:
    """Every entry under a skill root, in sorted order, plus what was wrong with the tree."""

    root: Path
    entries: list[Entry] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    truncated: bool = False

    def files(self) -> list[Entry]:
        return [e for e in self.entries if e.kind is EntryKind.FILE]


def _finding(rule: str, severity: Severity, rel: str, message: str, suggestion: str | None = None) -> Finding:
    return Finding(rule=f"files.{rule}", severity=severity, file=rel, message=message, suggestion=suggestion)


def _link_leaves_root(rel: str, target: str) -> bool:
    """Decide lexically (never by following) whether a link target points outside the root."""
    if posixpath.isabs(target):
        return True
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(rel), target))
    return joined == ".." or joined.startswith("../")


def take_inventory(root: Path, limits: Limits = Limits()) -> Inventory:
    """Walk ``root`` without following links; classify every entry."""
    inv = Inventory(root=root)
    count = 0

    def walk(dir_path: Path, rel_dir: str, depth: int) -> None:
        nonlocal count
        try:
            with os.scandir(dir_path) as it:
                children = sorted(it, key=lambda d: d.name)
        except OSError as exc:
            inv.findings.append(_finding("unreadable-dir", Severity.MEDIUM, rel_dir or ".", f"cannot list folder: {exc.strerror}"))
            return
        for child in children:
            rel = f"{rel_dir}/{child.name}" if rel_dir else child.name
            if has_surrogates(child.name):
                # undecodable bytes (os.fsdecode's surrogateescape): no report, scanner or JSON can
                # carry such a name, so the entry is left out, named by its escaped form
                count += 1
                inv.findings.append(_finding("bad-name", Severity.HIGH, encodable(rel),
                                             "name is not valid UTF-8; not read", "rename it with UTF-8 characters"))
                continue
            if count >= limits.max_files:
                if not inv.truncated:
                    inv.truncated = True
                    inv.findings.append(_finding("too-many-files", Severity.MEDIUM, rel_dir or ".",
                                                 f"more than {limits.max_files} files; the rest were not inspected"))
                return
            try:
                st = child.stat(follow_symlinks=False)
            except OSError as exc:
                inv.findings.append(_finding("unreadable", Severity.MEDIUM, rel, f"cannot stat: {exc.strerror}"))
                continue
            count += 1
            mode = st.st_mode
            if stat.S_ISLNK(mode):
                try:
                    target = encodable(os.readlink(child.path))  # raw bytes: maybe not UTF-8
                except OSError:
                    target = "?"
                inv.entries.append(Entry(rel, EntryKind.SYMLINK, link_target=target))
                if _link_leaves_root(rel, target):
                    inv.findings.append(_finding("symlink-escape", Severity.HIGH, rel,
                                                 f"symbolic link points outside the skill ({target}); not followed",
                                                 "ship the file itself inside the skill folder"))
                else:
                    inv.findings.append(_finding("symlink", Severity.LOW, rel,
                                                 f"symbolic link to {target}; links are never followed",
                                                 "replace the link with the file it points to"))
            elif stat.S_ISDIR(mode):
                if child.name in SKIPPED_DIRS:
                    continue
                inv.entries.append(Entry(rel, EntryKind.DIR))
                if depth + 1 > limits.max_depth:
                    inv.findings.append(_finding("too-deep", Severity.MEDIUM, rel, f"folder nesting deeper than {limits.max_depth}; not inspected"))
                    continue
                walk(Path(child.path), rel, depth + 1)
            elif stat.S_ISREG(mode):
                inv.entries.append(Entry(rel, EntryKind.FILE, size=st.st_size, nlink=st.st_nlink))
                if st.st_nlink > 1:
                    inv.findings.append(_finding("hardlink", Severity.HIGH, rel,
                                                 f"file has {st.st_nlink} hard links and may be another file's second name; not read",
                                                 "copy the file instead of hard-linking it"))
                elif st.st_size > limits.max_file_bytes:
                    inv.findings.append(_finding("oversize", Severity.MEDIUM, rel,
                                                 f"file is {st.st_size} bytes, over the {limits.max_file_bytes}-byte cap; not read",
                                                 "move large data out of the skill or raise --skilleval-max-file-size"))
            else:
                kind = "FIFO" if stat.S_ISFIFO(mode) else "socket" if stat.S_ISSOCK(mode) else "device"
                inv.entries.append(Entry(rel, EntryKind.SPECIAL))
                inv.findings.append(_finding("special", Severity.HIGH, rel, f"{kind} inside the skill; never opened",
                                             "remove it: a skill ships regular files only"))

    walk(root, "", 0)
    return inv


class ReadError(Exception):
    """A file could not be read safely; ``finding`` says why and where."""

    def __init__(self, finding: Finding) -> None:
        super().__init__(finding.message)
        self.finding = finding


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIRECTORY = getattr(os, "O_DIRECTORY", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def read_bytes(root: Path, rel: str, limits: Limits = Limits()) -> bytes:
    """Read ``root/rel`` descriptor-relative, refusing links, specials, hardlinks and big files."""
    parts = [p for p in rel.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        raise ReadError(_finding("bad-path", Severity.HIGH, rel, "path leaves the skill folder"))
    fds: list[int] = []
    try:
        try:
            fd = os.open(root, os.O_RDONLY | _DIRECTORY | _NOFOLLOW)
        except OSError as exc:
            raise ReadError(_finding("unreadable", Severity.HIGH, ".", f"cannot open skill folder: {exc.strerror}")) from None
        fds.append(fd)
        for part in parts[:-1]:
            try:
                fd = os.open(part, os.O_RDONLY | _DIRECTORY | _NOFOLLOW, dir_fd=fd)
            except OSError:
                raise ReadError(_finding("unreadable", Severity.MEDIUM, rel, "a parent folder is a link or missing; not read")) from None
            fds.append(fd)
        try:
            fd = os.open(parts[-1], os.O_RDONLY | _NOFOLLOW | _NONBLOCK, dir_fd=fd)
        except OSError as exc:
            raise ReadError(_finding("unreadable", Severity.MEDIUM, rel, f"cannot open without following links: {exc.strerror}")) from None
        fds.append(fd)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ReadError(_finding("special", Severity.HIGH, rel, "not a regular file; not read"))
        if st.st_nlink > 1:
            raise ReadError(_finding("hardlink", Severity.HIGH, rel, "file has several hard links; not read"))
        if st.st_size > limits.max_file_bytes:
            raise ReadError(_finding("oversize", Severity.MEDIUM, rel, f"file is {st.st_size} bytes, over the cap; not read"))
        chunks: list[bytes] = []
        remaining = limits.max_file_bytes + 1
        while remaining > 0:
            chunk = os.read(fd, min(remaining, 1 << 16))
            if not chunk:
                break
            chunks.append(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks)
        if len(data) > limits.max_file_bytes:  # grew while we read it
            raise ReadError(_finding("oversize", Severity.MEDIUM, rel, "file grew past the size cap while being read; not read"))
        return data
    finally:
        for opened in reversed(fds):
            os.close(opened)


def decode_text(data: bytes, rel: str) -> str:
    """Strict UTF-8; a NUL byte or an invalid sequence means the file is not text."""
    if b"\x00" in data:
        raise ReadError(_finding("not-text", Severity.MEDIUM, rel, "binary content (NUL byte) where text is expected",
                                 "text files must be UTF-8; move binaries to assets/ with a binary extension"))
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise ReadError(Finding(rule="files.not-text", severity=Severity.MEDIUM, file=rel, line=line,
                                message=f"not valid UTF-8 at byte {exc.start}",
                                suggestion="save the file as UTF-8")) from None


def read_text(root: Path, rel: str, limits: Limits = Limits()) -> str:
    return decode_text(read_bytes(root, rel, limits), rel)


def is_within(root: Path, rel: str) -> bool:
    """Whether a relative reference stays inside the root, decided lexically."""
    if not rel or posixpath.isabs(rel) or rel.startswith("\\") or (len(rel) > 1 and rel[1] == ":"):
        return False
    norm = posixpath.normpath(rel)
    return not (norm == ".." or norm.startswith("../"))
