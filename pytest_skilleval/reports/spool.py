"""Results on disk while the run goes on, so the report controller's memory does not grow with the catalog.

A 5,000-skill run kept every check result (as pydantic objects) in the controller until the reports
were written: gigabytes. Each result's JSON text is appended to an anonymous temporary file as it
arrives; only its offset stays in memory. At session end the report writer reads the results back
one skill at a time. The file is private to this process (unlinked from the start, gone when it is
closed or the process dies) and append-only; a run that is interrupted still reads back everything
that was appended before the interrupt.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import IO


class Spool:
    """Append-only text records, each found again by ``(group, name)``; a later record replaces an
    earlier one with the same group and name (as the dict it replaces did)."""

    def __init__(self) -> None:
        self._file: IO[bytes] | None = None
        self._end = 0
        self._at_end = True  # the file's position: a buffered file's seek writes out its buffer, one system call per record
        self._index: dict[str, dict[str, tuple[int, int]]] = {}

    def add(self, group: str, name: str, text: str) -> None:
        data = text.encode("utf-8")
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix="skilleval-spool-")
        if not self._at_end:
            self._file.seek(self._end)
            self._at_end = True
        self._file.write(data)
        self._index.setdefault(group, {})[name] = (self._end, len(data))
        self._end += len(data)

    def groups(self) -> list[str]:
        return list(self._index)

    def __contains__(self, group: object) -> bool:
        return group in self._index

    def __bool__(self) -> bool:
        return bool(self._index)

    def read(self, group: str) -> Iterator[str]:
        """The group's records in the order their names were first added."""
        if self._file is None:
            return
        self._file.flush()
        for offset, size in list(self._index.get(group, {}).values()):
            self._at_end = False  # again at every record: an add between two may have moved it back to the end
            self._file.seek(offset)
            yield self._file.read(size).decode("utf-8")

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
        self._index.clear()
        self._end = 0
        self._at_end = True
