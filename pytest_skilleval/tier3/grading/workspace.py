"""Read the trial's workspace after the agent ran, without trusting anything the agent left there.

Every byte in the workspace was under the agent's control, so a ``file_contains`` check must not
become a way to read the host: a symlink planted as ``out.txt -> ~/.ssh/id_rsa`` would otherwise
put a private key into a report. The walk goes one component at a time through directory file
descriptors with ``O_NOFOLLOW``, so a link is always *seen* rather than silently followed; a link
whose target resolves inside the workspace is followed (agents do create ``latest -> run-3``),
one whose target leaves it is refused. FIFOs and devices are never opened (a FIFO would block),
and reads are capped.
"""

from __future__ import annotations

import os
import posixpath
import stat
from dataclasses import dataclass
from pathlib import Path

MAX_READ_BYTES = 4 * 1024 * 1024
MAX_LINK_HOPS = 40  # the kernel's own limit for nested links


class Refused(Exception):
    """The path cannot be read safely, or is not there; the message says which, for the report."""


@dataclass(frozen=True)
class Entry:
    rel: str  # the path as resolved inside the workspace (links followed, when they stay inside)
    kind: str  # file | directory | symlink | fifo | device | socket | other
    size: int


@dataclass(frozen=True)
class _Link:
    prefix: tuple[str, ...]  # the components up to and including the link
    rest: tuple[str, ...]
    target: str


def _kind(mode: int) -> str:
    for test, name in ((stat.S_ISREG, "file"), (stat.S_ISDIR, "directory"), (stat.S_ISLNK, "symlink"), (stat.S_ISFIFO, "fifo"),
                       (stat.S_ISCHR, "device"), (stat.S_ISBLK, "device"), (stat.S_ISSOCK, "socket")):
        if test(mode):
            return name
    return "other"


def _parts(rel: str) -> tuple[str, ...]:
    norm = posixpath.normpath(rel.replace("\\", "/"))
    if norm.startswith("/") or norm == ".." or norm.startswith("../"):
        raise Refused(f"{rel!r} is not a path inside the workspace")
    return () if norm == "." else tuple(norm.split("/"))


def _inside(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _walk(root: str, parts: tuple[str, ...]) -> tuple[int, str, os.stat_result] | _Link:
    """(parent dir fd, name, lstat) of the last component, or the first symlink met on the way.

    The caller owns the returned fd. Missing components raise :class:`Refused`.
    """
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        if not parts:
            handed, fd = fd, -1
            return handed, ".", os.stat(".", dir_fd=handed, follow_symlinks=False)
        for index, name in enumerate(parts):
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                raise Refused(f"{'/'.join(parts[: index + 1])} does not exist") from None
            if stat.S_ISLNK(st.st_mode):
                return _Link(parts[: index + 1], parts[index + 1:], os.readlink(name, dir_fd=fd))
            if index == len(parts) - 1:
                handed, fd = fd, -1
                return handed, name, st
            if not stat.S_ISDIR(st.st_mode):
                raise Refused(f"{'/'.join(parts[: index + 1])} is a {_kind(st.st_mode)}, not a directory")
            child = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
            os.close(fd)
            fd = child
        raise AssertionError("unreachable")  # pragma: no cover - the loop returns on the last component
    finally:
        if fd >= 0:
            os.close(fd)


def _resolve(workspace: Path, rel: str) -> tuple[int, str, os.stat_result, str]:
    root = os.path.realpath(workspace)
    if not os.path.isdir(root):
        raise Refused(f"the workspace {workspace} is not a directory")
    parts = _parts(rel)
    for _ in range(MAX_LINK_HOPS):
        try:
            found = _walk(root, parts)
        except OSError as exc:
            raise Refused(f"{rel}: {exc.strerror or exc}") from None
        if not isinstance(found, _Link):
            return (*found, "/".join(parts) or ".")
        link = "/".join(found.prefix)
        target = os.path.realpath(os.path.join(root, *found.prefix))
        if not _inside(target, root):
            raise Refused(f"{link} is a symlink to {found.target!r}, which is outside the workspace; not followed")
        parts = _parts(os.path.relpath(target, root).replace(os.sep, "/")) + found.rest
    raise Refused(f"{rel}: too many levels of symbolic links")


def entry(workspace: Path, rel: str) -> Entry:
    """What ``rel`` is inside the workspace (links inside it followed). Raises :class:`Refused`."""
    fd, _name, st, resolved = _resolve(workspace, rel)
    os.close(fd)
    return Entry(resolved, _kind(st.st_mode), st.st_size)


def read_text(workspace: Path, rel: str, limit: int = MAX_READ_BYTES) -> tuple[str, bool]:
    """The file's text (undecodable bytes replaced) and whether it was cut at ``limit`` bytes."""
    fd, name, st, resolved = _resolve(workspace, rel)
    try:
        if not stat.S_ISREG(st.st_mode):
            raise Refused(f"{resolved} is a {_kind(st.st_mode)}, not a regular file")
        # O_NONBLOCK: if a FIFO was swapped in after the stat, open() must not hang the grader.
        file_fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=fd)
    except OSError as exc:
        raise Refused(f"{rel}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    with os.fdopen(file_fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise Refused(f"{resolved} is not a regular file")
        data = handle.read(limit + 1)
    return data[:limit].decode("utf-8", errors="replace"), len(data) > limit
