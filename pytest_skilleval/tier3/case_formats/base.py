"""What every shape module produces: the case objects of a file, as written, plus file-level facts."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from pytest_skilleval.results import Severity
from pytest_skilleval.tier3.case_formats.document import Path


class Report(Protocol):
    def __call__(self, path: Path, rule: str, severity: Severity, message: str, *,
                 field: str | None = None, suggestion: str | None = None) -> None: ...


@dataclass
class RawCase:
    """A case object as written, before normalisation."""

    data: Mapping[str, Any]
    path: Path  # where the object is in the document, for line numbers
    index: int
    #: False where the format has no ids (deployment scenarios): a generated id is then expected.
    ids_expected: bool = True
    environment: dict[str, Any] = field(default_factory=dict)
    #: Other skills the file says the case may use (a scenario's ``skills`` list).
    acceptable: tuple[str, ...] = ()


@dataclass
class Split:
    shape: str
    cases: list[RawCase]
    #: The skills the file says it is for; empty when it does not say.
    declared_skills: tuple[str, ...] = ()


@dataclass(frozen=True)
class Shape:
    name: str
    matches: Callable[[Any], bool]
    split: Callable[[Any, Report], Split]


def check_top_keys(data: Mapping[str, Any], known: frozenset[str], shape: str, report: Report) -> None:
    """Unknown file-level keys are reported LOW (a typo silently loses data) and otherwise ignored."""
    for key in data:
        if key not in known:
            report((str(key),), "unknown-key", Severity.LOW, f"unknown top-level key {key!r} in a {shape} file; ignored",
                   field=str(key), suggestion=f"known keys: {', '.join(sorted(known))}")


def case_list(value: Any, path: Path, report: Report, key: str, **kw: Any) -> list[RawCase]:
    """The case objects of a list; anything that is not a mapping is reported and skipped."""
    if not isinstance(value, list):
        report(path, "shape", Severity.HIGH, f"{key!r} must be a list of cases, got {type(value).__name__}", field=key)
        return []
    out = []
    for index, item in enumerate(value):
        if isinstance(item, Mapping):
            out.append(RawCase(item, (*path, index), index, **kw))
        else:
            report((*path, index), "case-type", Severity.HIGH,
                   f"case #{index + 1} must be an object with a prompt, got {type(item).__name__}", field=key)
    return out
