"""The older SkillEvaluator shapes: a bare list of cases, ``{"skill": ..., "cases": [...]}``, and
one case object on its own. Their cases use ``question``, ``ground_truth`` and
``expected_behavior``; a lone scenario file (``task`` + typed ``assertions``) is the single shape
too, because it is one case with a different spelling of the prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_skilleval.results import Severity
from pytest_skilleval.tier3.case_formats.base import RawCase, Report, Shape, Split, case_list, check_top_keys
from pytest_skilleval.tier3.case_formats.fields import PROMPT_KEYS

CASES_TOP_KEYS = frozenset({"skill", "cases", "version", "description", "$schema"})


def _list(data: list[Any], report: Report) -> Split:
    return Split("list", case_list(data, (), report, "cases"))


def _skill_cases(data: Mapping[str, Any], report: Report) -> Split:
    check_top_keys(data, CASES_TOP_KEYS, "skill-cases", report)
    skill = data.get("skill")
    declared: tuple[str, ...] = ()
    if isinstance(skill, str) and skill.strip():
        declared = (skill.strip(),)
    elif skill is not None:
        report(("skill",), "field-type", Severity.MEDIUM, f"top-level 'skill' must be the skill's name, got {skill!r}", field="skill")
    return Split("skill-cases", case_list(data["cases"], ("cases",), report, "cases"), declared)


def _single(data: Mapping[str, Any], report: Report) -> Split:
    skill = data.get("skill")
    declared = (skill.strip(),) if isinstance(skill, str) and skill.strip() else ()
    return Split("single", [RawCase(data, (), 0)], declared)


SHAPES = (
    Shape("skill-cases", lambda d: isinstance(d, Mapping) and "cases" in d, _skill_cases),
    Shape("list", lambda d: isinstance(d, list), _list),
    Shape("single", lambda d: isinstance(d, Mapping) and any(k in d for k in PROMPT_KEYS), _single),
)
