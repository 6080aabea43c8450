"""Trajectory parsers and the registry that picks one, by sniffing a file or by name.

A parser is a small object: a ``name``, a ``sniff(first_lines) -> bool`` over the first lines of
a file, and ``parse(records, builder)`` that feeds one harness's records into a
:class:`TrajectoryBuilder`. Third parties add parsers with the ``pytest_skilleval_trajectory_parsers``
hook (see ``hookspecs.py``) or by calling :meth:`ParserRegistry.add`.
"""

from __future__ import annotations

import abc
import io
import json
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, ClassVar

from pytest_skilleval.trajectory.builder import TrajectoryBuilder
from pytest_skilleval.trajectory.model import Trajectory, TrajectoryParseError
from pytest_skilleval.trajectory.reader import RecordReader
from pytest_skilleval.trajectory.requestlog import read_request_context
from pytest_skilleval.trajectory.tools import ParseLimits


class TrajectoryParser(abc.ABC):
    name: ClassVar[str]
    aliases: ClassVar[tuple[str, ...]] = ()
    description: ClassVar[str] = ""
    #: Lower is sniffed first. Specific harnesses ~100; the catch-all generic parser last.
    priority: ClassVar[int] = 100
    #: False when the harness's output never carries file contents: a successful SKILL.md read then counts without one.
    bodies_recorded: ClassVar[bool] = True

    @abc.abstractmethod
    def sniff(self, first_lines: Sequence[str]) -> bool:
        """Whether the file whose first non-empty lines these are is this harness's output."""

    @abc.abstractmethod
    def parse(self, records: Iterable[dict[str, Any]], builder: TrajectoryBuilder) -> None:
        """Feed every record to ``builder``. Unexpected shapes may raise: the registry reports the line."""


def sniff_objects(first_lines: Sequence[str]) -> list[dict[str, Any]]:
    """The first lines that are whole JSON objects (a helper for ``sniff``)."""
    out = []
    for line in first_lines:
        try:
            obj = json.loads(line)
        except ValueError:
            continue
        if isinstance(obj, dict):
            out.append(obj)
    return out


class UnknownFormatError(ValueError):
    pass


class ParserRegistry:
    def __init__(self, parsers: Iterable[TrajectoryParser] = ()) -> None:
        self._parsers: list[TrajectoryParser] = []
        for p in parsers:
            self.add(p)

    def add(self, parser: TrajectoryParser) -> None:
        for have in self._parsers:
            if have.name == parser.name:
                if type(have) is type(parser):
                    return
                raise UnknownFormatError(f"two trajectory parsers are named {parser.name!r}: "
                                         f"{type(have).__module__}.{type(have).__qualname__} and "
                                         f"{type(parser).__module__}.{type(parser).__qualname__}")
        self._parsers.append(parser)

    def parsers(self) -> list[TrajectoryParser]:
        """In sniffing order: by priority, then registration order (stable sort)."""
        return sorted(self._parsers, key=lambda p: p.priority)

    def names(self) -> list[str]:
        return [p.name for p in self.parsers()]

    def get(self, name: str) -> TrajectoryParser:
        wanted = name.strip().casefold()
        for p in self._parsers:
            if wanted == p.name.casefold() or wanted in (a.casefold() for a in p.aliases):
                return p
        raise UnknownFormatError(f"unknown trajectory format {name!r} (known: {', '.join(self.names())})")

    def choose(self, first_lines: Sequence[str], name: str | None = None) -> TrajectoryParser | None:
        if name and name != "auto":
            return self.get(name)
        return next((p for p in self.parsers() if p.sniff(first_lines)), None)

    # -- parsing --------------------------------------------------------------------------------
    def parse_file(self, path: str | Path, *, format: str | None = None, request_log: str | Path | None = None,
                   limits: ParseLimits | None = None) -> Trajectory:
        """Parse one transcript, streamed. ``request_log``: a gateway request log supplying the offered catalog."""
        return self._parse(RecordReader(path, limits), format, request_log, limits)

    def parse_text(self, text: str, *, format: str | None = None, name: str = "<text>",
                   limits: ParseLimits | None = None) -> Trajectory:
        return self._parse(RecordReader(name, limits, stream=io.BytesIO(text.encode("utf-8")), name=name), format, None, limits)

    def parse_records(self, records: Iterable[dict[str, Any]], *, format: str, source: str | None = None,
                      limits: ParseLimits | None = None) -> Trajectory:
        """Already-decoded events (a live harness callback, an SDK's message list)."""
        parser = self.get(format)
        builder = TrajectoryBuilder(harness=parser.name, source=source, limits=limits or ParseLimits(),
                                    bodies_recorded=parser.bodies_recorded)
        counted = _Counter(iter(records), builder)
        _run(parser, counted, builder, source)
        return builder.build(counted.n)

    def _parse(self, reader: RecordReader, format: str | None, request_log: str | Path | None,
               limits: ParseLimits | None) -> Trajectory:
        first = reader.sniff_lines()
        if not first:
            raise TrajectoryParseError(reader.name, None, "empty file: no records")
        parser = self.choose(first, format)
        if parser is None:
            raise TrajectoryParseError(reader.name, 1, f"not a recognised trajectory format (known: {', '.join(self.names())}); "
                                                       "pass the format by name if the sniffing is wrong")
        builder = TrajectoryBuilder(harness=parser.name, source=reader.name, limits=limits or ParseLimits(),
                                    bodies_recorded=parser.bodies_recorded)
        records = _Tracked(reader, builder)
        _run(parser, records, builder, reader.name, reader)
        if request_log is not None:
            ctx = read_request_context(request_log, limits)
            if ctx.catalog is not None:
                builder.offer_catalog(ctx.catalog, "request log")
            if builder.task is None and ctx.task:
                builder.task = ctx.task
            builder.notes.append(f"request log {Path(request_log).name}: {ctx.requests} request(s) read")
        return builder.build(reader.line)


def _run(parser: TrajectoryParser, records: Iterator[dict[str, Any]], builder: TrajectoryBuilder, name: str | None,
         reader: RecordReader | None = None) -> None:
    try:
        parser.parse(records, builder)
    except TrajectoryParseError:
        raise
    except RecursionError:
        raise TrajectoryParseError(name, builder.line or None, f"{parser.name}: nesting too deep") from None
    except Exception as exc:  # a shape the parser did not expect: a parse error at that line, not a crash
        raise TrajectoryParseError(name, builder.line or None,
                                   f"{parser.name} parser: unexpected record shape ({type(exc).__name__}: {exc})") from exc


class _Tracked:
    """Yields the reader's records and keeps ``builder.line`` on the record being parsed."""

    def __init__(self, reader: RecordReader, builder: TrajectoryBuilder) -> None:
        self._it, self._reader, self._builder = reader.records(), reader, builder

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        record = next(self._it)
        self._builder.line = self._reader.line
        return record


class _Counter:
    def __init__(self, it: Iterator[dict[str, Any]], builder: TrajectoryBuilder) -> None:
        self._it, self._builder, self.n = it, builder, 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return self

    def __next__(self) -> dict[str, Any]:
        record = next(self._it)
        self.n += 1
        self._builder.line = self.n
        return record
