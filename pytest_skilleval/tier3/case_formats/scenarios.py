"""Deployment-scenario files: ``{"skills": [...], "env": ..., "resources": ..., "expects": [{"query",
"checks"}]}``. NVIDIA ships them beside ``evals.json`` (``evals/deploy.json``, ``eval/h100.json`` …)
for runs against live services or GPUs.

Cases have no ids, so ids are generated from the file stem and position. The file-level ``env``,
``resources``, ``platforms`` and ``deploy_mode`` are copied into every case's ``environment`` so a
trial runner can skip what its sandbox cannot provide; other skills in ``skills`` are acceptable.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_skilleval.results import Severity
from pytest_skilleval.tier3.case_formats.base import Report, Shape, Split, case_list, check_top_keys

NAME = "expects"
ENVIRONMENT_KEYS = ("env", "resources", "platforms", "deploy_mode")
TOP_KEYS = frozenset({"skills", "expects", "version", "description", *ENVIRONMENT_KEYS})


def matches(data: Any) -> bool:
    return isinstance(data, Mapping) and "expects" in data


def split(data: Mapping[str, Any], report: Report) -> Split:
    check_top_keys(data, TOP_KEYS, NAME, report)
    skills = data.get("skills")
    declared: tuple[str, ...] = ()
    if isinstance(skills, str):
        skills = [skills]
    if isinstance(skills, list) and all(isinstance(s, str) and s.strip() for s in skills):
        declared = tuple(s.strip() for s in skills)
    elif skills is not None:
        report(("skills",), "field-type", Severity.MEDIUM, "top-level 'skills' must be a list of skill names", field="skills")
    environment = {key: data[key] for key in ENVIRONMENT_KEYS if key in data}
    cases = case_list(data["expects"], ("expects",), report, "expects", ids_expected=False, environment=environment,
                      acceptable=declared)
    return Split(NAME, cases, declared)


SHAPE = Shape(NAME, matches, split)
