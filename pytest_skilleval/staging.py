"""Private copies of skill files for external scanners.

Scanners get copies, never the skill folder: a link swapped in after the inventory cannot be
followed, a skill's own ignore files (.gitleaksignore, .semgrepignore) cannot hide anything, and
the bytes are exactly those read through :mod:`safefs`.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from pytest_skilleval.skill import Skill

#: Batches up to this size are staged in RAM (/dev/shm) when there is one.
RAM_STAGE_MAX_BYTES = 256 * 1024 * 1024


@dataclass
class Staged:
    """Files copied to ``root/<index>/<rel>``; ``paths`` are those relative names, posix."""

    root: Path
    paths: list[str] = field(default_factory=list)

    def origin(self, reported: str) -> tuple[int, str] | None:
        """(skill index, rel) of a path a scanner reported, absolute or relative to ``root``."""
        p = Path(reported)
        if p.is_absolute():
            try:
                p = p.relative_to(self.root)
            except ValueError:
                return None
        parts = p.as_posix().lstrip("./").split("/", 1)
        return (int(parts[0]), parts[1]) if len(parts) == 2 and parts[0].isdigit() else None


@contextlib.contextmanager
def stage(items: Iterable[tuple[int, str, str]]) -> Iterator[Staged]:
    """Write (index, rel, text) items into a fresh private folder, removed afterwards.

    Small batches go to RAM (/dev/shm) when there is one: creating and deleting the corpus' 2,800
    files cost 7 s on a disk mounted with ``discard`` and 0.2 s on tmpfs, and copies of secrets
    never reach a disk.
    """
    items = list(items)
    small = sum(len(text) for _, _, text in items) <= RAM_STAGE_MAX_BYTES
    ram = "/dev/shm" if small and os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK | os.X_OK) else None
    with tempfile.TemporaryDirectory(prefix="skilleval-", dir=ram) as tmp:
        staged = Staged(Path(os.path.realpath(tmp)))  # scanners print resolved paths
        for index, rel, text in items:
            dest = staged.root / str(index) / rel
            dest.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            fd = os.open(dest, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)  # O_EXCL: never through a link
            with os.fdopen(fd, "wb") as fh:
                fh.write(text.encode("utf-8"))
            staged.paths.append(f"{index}/{rel}")
        yield staged


def readable_texts(skill: Skill) -> Iterator[tuple[str, str]]:
    """(rel, text) of every file, eval folders too, that reads as UTF-8 text: a secret hides anywhere."""
    for entry in skill.files(include_eval_dirs=True):
        if entry.nlink > 1 or entry.size > skill.limits.max_file_bytes:
            continue  # the files check reports these; they are never read
        text = skill.text(entry.rel)
        if text is not None:
            yield entry.rel, text
