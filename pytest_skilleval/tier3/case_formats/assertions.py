"""Read a case's assertions, in every spelling real files use, into typed :mod:`.model` assertions.

Accepted forms (each item of an assertion list):

- a string: a free-text behaviour for the judge, unless it starts with ``kind:`` for a kind in
  :data:`PREFIX_KINDS` (``trajectory_contains:scripts/aiq.py health``, ``json_command:…``);
- ``{"name": ..., "text": ...}`` or ``{"text": ...}``: free text with a name;
- ``{"type": <kind>, ...}`` (or ``kind``, with arguments inline or under ``params``): typed. Kind
  names of the corpus map onto ours (``contains_pattern`` is a regex, ``contains_phrase`` a
  substring, ``text_contains``/``json_path_value`` from scenario files …).

Every malformed item is reported HIGH with its index and the offending key: an assertion that is
silently misread grades every trial of the case wrongly.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable, Mapping
from typing import Any

from pydantic import TypeAdapter, ValidationError

from pytest_skilleval.results import Severity
from pytest_skilleval.tier3.case_formats.base import Report
from pytest_skilleval.tier3.case_formats.document import Path
from pytest_skilleval.tier3.case_formats.model import (
    Assertion,
    Command,
    FileContains,
    FileExists,
    Judge,
    NotRegex,
    Regex,
    SkillInvoked,
    SkillNotInvoked,
)

_ADAPTER: TypeAdapter[Assertion] = TypeAdapter(Assertion)

#: Corpus and scenario kind names -> (our kind, extra fields implied by the name).
KIND_ALIASES: dict[str, tuple[str, dict[str, Any]]] = {
    "contains_pattern": ("regex", {}), "not_contains_pattern": ("not_regex", {}),
    "contains_phrase": ("contains", {}), "text_contains": ("contains", {}), "text_not_contains": ("not_contains", {}),
    "not_contains_phrase": ("not_contains", {}), "json_path_value": ("json_path", {"op": "equals"}),
    "json_path_contains": ("json_path", {"op": "contains"}), "json_command": ("command", {"json_output": True}),
}
#: Argument spellings -> our field name, per kind family.
_VALUE_ALIASES = ("phrase", "substring", "string")
_KINDS_WITH_VALUE = {"contains", "not_contains", "trajectory_contains", "trajectory_not_contains", "file_contains"}
#: ``kind:argument`` strings: kind -> the field the argument fills.
PREFIX_KINDS: dict[str, str] = {
    "trajectory_contains": "value", "trajectory_not_contains": "value", "json_command": "run", "command": "run", "contains": "value",
    "not_contains": "value", "regex": "pattern", "not_regex": "pattern", "file_exists": "path",
    "skill_invoked": "skill", "skill_not_invoked": "skill", "max_turns": "value", "max_tokens": "value", "max_cost": "value",
}
_PREFIX = re.compile(rf"({'|'.join(PREFIX_KINDS)}):(.*)", re.DOTALL)
_TRUTHY = "__truthy__"  # the scenario files' way of saying "present and not empty"


def parse(items: Any, key: str, report: Report, skill: str, line_of: Callable[[Path], int | None]) -> list[Assertion]:
    """The assertions under ``key`` (a list, or one string); problems go to ``report``.

    ``skill`` fills ``skill_invoked``/``skill_not_invoked`` that name no skill; ``line_of`` gives the
    file line of a path below the case, recorded on each assertion for failure messages.
    """
    if items is None:
        return []  # "expected_behavior": null says "none", like an empty list
    if isinstance(items, str):
        items = [items]
    if not isinstance(items, list):
        report((key,), "field-type", Severity.HIGH, f"must be a list of assertions, got {type(items).__name__}", field=key)
        return []
    out: list[Assertion] = []
    for index, item in enumerate(items):
        where = (key, index)
        spec = _spec(item, where, report)
        if spec is None:
            continue
        kind = spec.get("type")
        if kind in ("skill_invoked", "skill_not_invoked") and not spec.get("skill"):
            spec["skill"] = skill
        try:
            parsed = _ADAPTER.validate_python(spec)
        except ValidationError as exc:
            for error in exc.errors():
                loc = ".".join(str(p) for p in error["loc"][1:] or error["loc"])
                report(where, "assertion", Severity.HIGH, f"assertion #{index + 1} ({kind}): {loc}: {error['msg']}",
                       field=f"{key}[{index}]")
            continue
        problem = _semantic_problem(parsed)
        if problem:
            report(where, "assertion", Severity.HIGH, f"assertion #{index + 1} ({kind}): {problem}", field=f"{key}[{index}]")
            continue
        out.append(parsed.model_copy(update={"line": line_of(where)}))
    return out


def _spec(item: Any, where: tuple[str, int], report: Report) -> dict[str, Any] | None:
    """The item as a dict for the typed models, or None after reporting why it cannot be one."""
    field = f"{where[0]}[{where[1]}]"
    if isinstance(item, str):
        match = _PREFIX.fullmatch(item.strip())
        if match is None:
            return {"type": "judge", "text": item}
        kind, argument = match.group(1), match.group(2).strip()
        our_kind, implied = KIND_ALIASES.get(kind, (kind, {}))
        return {"type": our_kind, PREFIX_KINDS[kind]: argument, "text": item, **implied}
    if not isinstance(item, Mapping):
        report(where, "assertion", Severity.HIGH, f"an assertion must be a string or an object, got {type(item).__name__}", field=field)
        return None
    spec = {str(k): v for k, v in item.items() if k != "params"}
    params = item.get("params")
    if isinstance(params, Mapping):
        spec.update({str(k): v for k, v in params.items()})
    elif params is not None:
        report(where, "assertion", Severity.HIGH, "'params' must be an object", field=field)
        return None
    kind = spec.pop("type", None) or spec.pop("kind", None)
    if "id" in spec:
        spec.setdefault("name", spec.pop("id"))
    if kind is None:
        if "text" not in spec:
            report(where, "assertion", Severity.HIGH, "an assertion object needs 'type' (typed) or 'text' (free text)", field=field)
            return None
        kind = "judge"
    if not isinstance(kind, str):
        report(where, "assertion", Severity.HIGH, f"assertion type must be a string, got {kind!r}", field=field)
        return None
    kind, implied = KIND_ALIASES.get(kind, (kind, {}))
    for name, value in implied.items():
        spec.setdefault(name, value)
    if kind in _KINDS_WITH_VALUE:
        for alias in _VALUE_ALIASES:
            if alias in spec:
                spec.setdefault("value", spec.pop(alias))
    if kind == "json_path" and spec.get("expected") == _TRUTHY:
        spec.pop("expected")
        spec["op"] = "truthy"
    if kind == "command" and "command" in spec:
        spec.setdefault("run", spec.pop("command"))
    spec["type"] = kind
    return spec


def _semantic_problem(assertion: Assertion) -> str | None:
    """What the schema cannot say: patterns compile, paths stay in the workspace, texts are not empty."""
    if isinstance(assertion, Judge) and not assertion.text.strip():
        return "free-text assertion is empty"
    if isinstance(assertion, Regex | NotRegex | FileContains) and assertion.pattern is not None:
        try:
            re.compile(assertion.pattern)
        except re.error as exc:
            return f"pattern {assertion.pattern!r} is not a valid regular expression: {exc}"
    if isinstance(assertion, FileContains) and (assertion.value is None) == (assertion.pattern is None):
        return "give exactly one of 'value' (substring) or 'pattern' (regex)"
    if isinstance(assertion, FileExists | FileContains):
        path = assertion.path
        if not path or path.startswith(("/", "\\")) or re.match(r"[A-Za-z]:", path):
            return f"path {path!r} must be relative to the workspace"
        if posixpath.normpath(path).split("/")[0] == "..":
            return f"path {path!r} leaves the workspace"
    if isinstance(assertion, Command) and not assertion.run.strip():
        return "command is empty"
    if isinstance(assertion, SkillInvoked | SkillNotInvoked) and not assertion.skill.strip():
        return "skill name is empty"
    return None
