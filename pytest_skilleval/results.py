"""Typed results: the one currency every check, comparison and trial reports in.

A check returns a :class:`CheckResult`. It carries findings and, for scored checks, a score and
the pass mark. It does *not* decide the pytest outcome; :mod:`pytest_skilleval.gate` does, so the
terminal, JUnit, JSON and ``BENCHMARK.md`` always agree.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from pytest_skilleval.levels import _SEVERITY_KEY, Severity, Status  # the enums live apart from pydantic (levels.py)


class Finding(BaseModel):
    """One observation about a skill, with a location a user can jump to."""

    model_config = ConfigDict(frozen=True)

    rule: str = Field(description="stable rule id, e.g. 'schema.name-mismatch'")
    severity: Severity
    message: str
    file: str | None = Field(default=None, description="path relative to the skill root, posix")
    line: int | None = Field(default=None, description="1-based line number")
    suggestion: str | None = None
    evidence: str | None = Field(default=None, description="a short, redacted excerpt")

    def location(self) -> str:
        if self.file is None:
            return "-"
        return f"{self.file}:{self.line}" if self.line else self.file

    def format_line(self) -> str:
        """The line shown in a failure: ``SEVERITY file:line message``."""
        text = f"{self.severity.value:<8} {self.location()} {self.message} [{self.rule}]"
        if self.suggestion:
            text += f"\n         fix: {self.suggestion}"
        return text

    def sort_key(self) -> tuple[int, str, int, str, str]:
        return (-self.severity.rank, self.file or "", self.line or 0, self.rule, self.message)


class Deduction(BaseModel):
    """A named point deduction of a scored check (e.g. quality), so a user sees why."""

    model_config = ConfigDict(frozen=True)

    dimension: str
    rule: str
    points: int
    reason: str


class CheckResult(BaseModel):
    """What one check found on one skill.

    ``status`` is what the check itself knows: PASSED for "ran to completion", or INCOMPLETE,
    SKIPPED, ERROR with a ``reason``. The gate turns a completed result into PASSED/FAILED from
    the findings, the score and the policy.
    """

    check: str
    tier: int = 1
    status: Status = Status.PASSED
    reason: str | None = None
    findings: list[Finding] = Field(default_factory=list)
    score: float | None = None
    min_score: float | None = None
    deductions: list[Deduction] = Field(default_factory=list)
    metrics: dict[str, Any] = Field(default_factory=dict)
    tools: dict[str, str] = Field(default_factory=dict, description="tool name -> version used")
    duration_s: float | None = None

    @classmethod
    def incomplete(cls, check: str, reason: str, **kw: Any) -> CheckResult:
        return cls(check=check, status=Status.INCOMPLETE, reason=reason, **kw)

    @classmethod
    def skipped(cls, check: str, reason: str, **kw: Any) -> CheckResult:
        return cls(check=check, status=Status.SKIPPED, reason=reason, **kw)

    @classmethod
    def error(cls, check: str, reason: str, **kw: Any) -> CheckResult:
        return cls(check=check, status=Status.ERROR, reason=reason, **kw)

    def sorted_findings(self) -> list[Finding]:
        return sorted(self.findings, key=Finding.sort_key)

    def severity_counts(self) -> dict[str, int]:
        counts = dict.fromkeys(_SEVERITY_KEY.values(), 0)
        for f in self.findings:
            counts[_SEVERITY_KEY[f.severity]] += 1
        return counts

    def encodable(self) -> CheckResult:
        """This result with every lone surrogate escaped (see :func:`encodable`); itself when there is none."""
        data = self.model_dump(mode="python")
        if not _may_hold_surrogates(data) and not _holds_tuple(data["metrics"]):
            return self  # what the walk below concludes, without it: nothing to escape, no tuple to come back as a list
        clean = encodable_data(data)
        return self if clean == data else CheckResult.model_validate(clean)

    def to_json(self) -> str:
        """JSON text that survives xdist serialization on ``report.user_properties``."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> CheckResult:
        return cls.model_validate_json(text)


#: A str code point in U+D800..U+DFFF. Decoding UTF-8 never yields one, but JSON's ``"\\ud800"``
#: escape and undecodable file names (``surrogateescape``) do, and such a string cannot be encoded:
#: it breaks xdist's transport of a report and every report writer.
_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(text: str) -> str:
    """``text`` with each surrogate code point written as the escape ``\\udXXX``: UTF-8 encodable."""
    return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text) if _SURROGATE.search(text) else text


_Model = TypeVar("_Model", bound=BaseModel)


def encodable_model(model: _Model) -> _Model:
    """``model`` with every string in it (a path from a folder whose name is not valid UTF-8, say) made
    :func:`encodable`, through its JSON form; itself when there is none. A string holding a surrogate
    cannot be dumped to JSON nor sent by xdist, so a trial record holding one would end as an error
    that is not the skill's."""
    data = model.model_dump(mode="json")
    if not _may_hold_surrogates(data):
        return model
    clean = encodable_data(data)
    return model if clean == data else type(model).model_validate(clean)


def has_surrogates(text: str) -> bool:
    return _SURROGATE.search(text) is not None


def _may_hold_surrogates(data: Any) -> bool:
    """False only when no string in ``data`` (keys included) holds a surrogate: JSON text without ASCII
    escaping keeps every string's code points, and one C-speed dump and search is what every result pays
    instead of :func:`encodable_data`'s walk. Data JSON cannot write (tuple keys, cycles) may hold some."""
    try:
        text = json.dumps(data, ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return True
    return has_surrogates(text)


def _holds_tuple(value: Any) -> bool:
    """Whether JSON-like data holds a tuple (:func:`encodable_data` returns it as a list). Only ``metrics``
    of a result can: its other fields are typed."""
    todo = [value]
    while todo:
        v = todo.pop()
        if isinstance(v, tuple):
            return True
        if isinstance(v, dict):
            todo.extend(v.values())
        elif isinstance(v, list):
            todo.extend(v)
    return False


def encodable_data(value: Any) -> Any:
    """A copy of JSON-like data (dicts, lists, tuples, strings, scalars) with every string, keys too,
    made :func:`encodable`. Iterative: the depth of the data cannot exhaust the stack."""
    def fix(v: Any) -> Any:
        return encodable(v) if isinstance(v, str) else v

    root: list[Any] = [value]
    todo: list[tuple[Any, Any]] = [(root, 0)]  # (container, key or index) whose value needs fixing
    while todo:
        container, key = todo.pop()
        v = container[key]
        if isinstance(v, dict):
            copy = {fix(k): item for k, item in v.items()}
            container[key] = copy
            todo.extend((copy, k) for k in copy)
        elif isinstance(v, (list, tuple)):  # a tuple comes back as a list, as JSON would give it
            items = list(v)
            container[key] = items
            todo.extend((items, i) for i in range(len(items)))
        else:
            container[key] = fix(v)
    return root[0]
