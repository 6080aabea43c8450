"""The agentskills.io shape, ``{"skill_name": ..., "evals": [...]}``, which Anthropic's
skill-creator also writes (with ``expectations`` instead of ``assertions`` and integer ids).

The anchor requires a non-empty ``skill_name``; a missing one is reported MEDIUM and the cases
still load against the skill being evaluated, because the folder already says which skill it is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_skilleval.results import Severity
from pytest_skilleval.tier3.case_formats.base import Report, Shape, Split, case_list, check_top_keys

NAME = "agentskills"
TOP_KEYS = frozenset({"skill_name", "evals", "scope", "scope_note", "version", "description", "$schema", "metadata"})


def matches(data: Any) -> bool:
    return isinstance(data, Mapping) and "evals" in data


def split(data: Mapping[str, Any], report: Report) -> Split:
    check_top_keys(data, TOP_KEYS, NAME, report)
    name = data.get("skill_name")
    declared: tuple[str, ...] = ()
    if isinstance(name, str) and name.strip():
        declared = (name.strip(),)
    else:
        problem = "is missing" if name is None else f"must be a non-empty string, got {name!r}"
        report(("skill_name",) if "skill_name" in data else (), "field-missing", Severity.MEDIUM,
               f"top-level 'skill_name' {problem}", field="skill_name", suggestion='add "skill_name": "<the skill\'s name>"')
    return Split(NAME, case_list(data["evals"], ("evals",), report, "evals"), declared)


SHAPE = Shape(NAME, matches, split)
