"""The case keys every shape may use, their aliases, and the case-id rules.

One table for all shapes: the anchor normalises ``prompt``→``question``,
``expected_output``→``ground_truth`` and ``assertions``→``expected_behavior``; here the names run
the other way (agentskills names are canonical) and the deployment-scenario and Anthropic
spellings join them.
"""

from __future__ import annotations

import re

ID_KEYS = ("id", "scenario_id")
PROMPT_KEYS = ("prompt", "question", "query", "task")
EXPECTED_OUTPUT_KEYS = ("expected_output", "ground_truth")
#: All of these are lists of assertions; when a case has several they are concatenated in this order.
ASSERTION_KEYS = ("assertions", "expected_behavior", "expectations", "checks")
ACCEPTABLE_KEYS = ("acceptable_skills", "acceptable_alternates")
#: Canonical field -> accepted spellings, first one wins when a case gives several.
SINGULAR = {"id": ID_KEYS, "prompt": PROMPT_KEYS, "expected_output": EXPECTED_OUTPUT_KEYS, "acceptable_skills": ACCEPTABLE_KEYS}
ROUTING_KEYS = ("expected_skill", "should_trigger")
OTHER_KEYS = ("files", "expected_script", "script", "must_not")
#: Keys real files use that the plugin keeps in ``extra`` without interpreting them.
KEPT_KEYS = frozenset({
    "name", "description", "notes", "tags", "category", "difficulty", "metadata", "expected_references",
    "expected_workflow", "expected_test", "_extraction", "_phrasing", "fixture", "with_skill_docs",
    "without_skill_docs", "backend", "schema_version", "skill",
})
KNOWN_KEYS = frozenset({*ID_KEYS, *PROMPT_KEYS, *EXPECTED_OUTPUT_KEYS, *ASSERTION_KEYS, *ACCEPTABLE_KEYS,
                        *ROUTING_KEYS, *OTHER_KEYS, *KEPT_KEYS})

# Case ids name pytest items, result folders and JUnit test cases, so they are restricted to a
# portable file-name alphabet (the anchor's rule), bounded in length, and never a Windows device name.
ID_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MAX_ID_LENGTH = 128
WINDOWS_RESERVED = frozenset({"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(1, 10)), *(f"LPT{i}" for i in range(1, 10))})


def id_problem(case_id: str) -> str | None:
    """Why ``case_id`` is not a valid case id, or None."""
    if not case_id:
        return "is empty"
    if len(case_id) > MAX_ID_LENGTH:
        return f"is {len(case_id)} characters long; at most {MAX_ID_LENGTH} are allowed"
    if not ID_PATTERN.fullmatch(case_id):
        return "must start with a letter or digit and use only letters, digits, '.', '_' and '-'"
    if case_id.split(".", 1)[0].upper() in WINDOWS_RESERVED:
        return "is a reserved device name on Windows (CON, NUL, COM1 …) and cannot name a results folder"
    return None


def safe_stem(stem: str) -> str:
    """A file stem made usable as an id prefix: characters outside the id alphabet become '-'."""
    cleaned = re.sub(r"[^A-Za-z0-9._-]", "-", stem).lstrip("._-")
    return cleaned or "evals"
