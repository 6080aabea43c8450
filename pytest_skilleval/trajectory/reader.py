"""Read a transcript as a stream of JSON records, one line at a time.

JSON Lines (every harness's event stream and on-disk transcript) is read line by line with a
bounded line length, so memory does not grow with the file. A single JSON document (a Strands or
ADK dump) cannot be streamed without a streaming JSON parser, so it is read whole, up to a size
limit, and its message list is replayed as records. Every failure is a
:class:`TrajectoryParseError` naming the file and line.
"""

from __future__ import annotations

import json
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import IO, Any

from pytest_skilleval.trajectory.model import TrajectoryParseError
from pytest_skilleval.trajectory.tools import ParseLimits

SNIFF_LINES = 20
SNIFF_CHARS = 256 * 1024  # per line handed to sniff(): enough to see every envelope key
# Keys under which a JSON document keeps its list of messages/events, in the order tried.
LIST_KEYS = ("messages", "events", "contents", "items", "history", "trajectory", "conversation", "steps")


class RecordReader:
    """Iterates the records of one file; ``line`` is the 1-based line of the record last yielded."""

    def __init__(self, path: str | Path, limits: ParseLimits | None = None, *, stream: IO[bytes] | None = None,
                 name: str | None = None) -> None:
        self.path = Path(path) if stream is None else None
        self.name = name or str(path)
        self.limits = limits or ParseLimits()
        self.line = 0
        self._stream = stream
        self.first_lines: list[str] = []
        self._document = False

    def error(self, message: str, line: int | None = None) -> TrajectoryParseError:
        return TrajectoryParseError(self.name, self.line if line is None else line, message)

    def _open(self) -> IO[bytes]:
        if self._stream is not None:
            return self._stream
        try:
            return open(self.path, "rb")  # type: ignore[arg-type]
        except OSError as exc:
            raise TrajectoryParseError(self.name, None, f"cannot read: {exc.strerror or exc}") from None

    def _raw_lines(self, fh: IO[bytes]) -> Iterator[tuple[int, bytes]]:
        limit = self.limits.max_line_bytes
        n = 0
        while True:
            raw = fh.readline(limit + 1)
            if not raw:
                return
            n += 1
            if len(raw) > limit and not raw.endswith(b"\n"):
                raise self.error(f"line is longer than {limit} bytes; the file is not a transcript or the limit is too low", n)
            yield n, raw

    def sniff_lines(self) -> list[str]:
        """The first non-empty lines, decoded, for the parsers' ``sniff``. Reads from a fresh handle."""
        if self.first_lines:
            return self.first_lines
        fh = self._open()
        try:
            for _, raw in self._raw_lines(fh):
                text = raw.decode("utf-8", errors="replace").strip()
                if text and not self.first_lines:
                    # `[`, or a `{` line that is not a whole object: one (pretty-printed) JSON document.
                    self._document = text[0] == "[" or (text[0] == "{" and not _is_json(text))
                if text:
                    self.first_lines.append(text[:SNIFF_CHARS])
                if len(self.first_lines) >= SNIFF_LINES:
                    break
        finally:
            if self._stream is None:
                fh.close()
            else:
                fh.seek(0)
        return self.first_lines

    def records(self) -> Generator[dict[str, Any], None, None]:
        self.sniff_lines()
        if self._document:
            yield from self._document_records()
            return
        fh = self._open()
        try:
            pending_error: TrajectoryParseError | None = None
            for n, raw in self._raw_lines(fh):
                if pending_error is not None:  # a bad line that is not the last one: corrupt, not truncated
                    raise pending_error
                self.line = n
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise self.error(f"not UTF-8 text (byte {exc.start})") from None
                if not text.strip():
                    continue
                try:
                    obj = json.loads(text)
                except ValueError as exc:
                    if not raw.endswith(b"\n"):
                        raise self.error(f"truncated: the last line ends mid-record ({exc}); was the run cut off?") from None
                    pending_error = self.error(f"invalid JSON: {exc}")
                    continue
                if not isinstance(obj, dict):
                    raise self.error(f"expected one JSON object per line, got {type(obj).__name__}")
                yield obj
            if pending_error is not None:
                raise TrajectoryParseError(self.name, pending_error.line,
                                           f"{pending_error.message} (the last line: was the run cut off?)")
        finally:
            if self._stream is None:
                fh.close()

    def _document_records(self) -> Iterator[dict[str, Any]]:
        fh = self._open()
        try:
            data = fh.read(self.limits.max_document_bytes + 1)
        finally:
            if self._stream is None:
                fh.close()
        if len(data) > self.limits.max_document_bytes:
            raise self.error(f"a single JSON document over {self.limits.max_document_bytes} bytes cannot be streamed; "
                             "write the trajectory as JSON Lines", 1)
        try:
            doc = json.loads(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise self.error(f"not UTF-8 text (byte {exc.start})", 1) from None
        except json.JSONDecodeError as exc:
            hint = "truncated: the document ends early" if exc.pos >= len(data.rstrip()) - 1 else "invalid JSON"
            raise self.error(f"{hint}: {exc.msg} (column {exc.colno})", exc.lineno) from None
        del data
        self.line = 1
        if isinstance(doc, list):
            items, header = doc, {}
        elif isinstance(doc, dict):
            key = next((k for k in LIST_KEYS if isinstance(doc.get(k), list)), None)
            items = doc[key] if key else [doc]
            header = {k: v for k, v in doc.items() if k != key} if key else {}
        else:
            raise self.error(f"expected a JSON object or list, got {type(doc).__name__}", 1)
        if header:
            yield header  # e.g. Strands' system_prompt, Gemini's systemInstruction: the catalog lives there
        for item in items:
            if isinstance(item, dict):
                yield item


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
        return True
    except ValueError:
        return False
