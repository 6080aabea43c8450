"""Checks on the agent's final answer: substring, regex, and a JSON path into the answer's JSON.

A missing answer fails the negative checks too: "must not contain X" asks for an answer without X,
and a trial whose only checks are negative must not pass by saying nothing.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pytest_skilleval.tier3.case_formats.model import Contains, JsonPath, NotContains, NotRegex, Regex
from pytest_skilleval.tier3.grading.model import TrialEvidence

#: Characters of the answer a pattern is matched against. Patterns come from eval files and Python's
#: ``re`` has no timeout, so the text is bounded; an agent answer is far below this.
ANSWER_LIMIT = 1_000_000
NO_ANSWER = "the agent gave no final answer"
_FENCE = re.compile(r"```[a-zA-Z]*\s*\n(.*?)```", re.S)
_PATH_TOKEN = re.compile(r"\[(-?\d+)\]|([^.\[\]]+)")

#: (passed, detail), or (passed, detail, applicable) for a check that may not apply to the trial.
Verdict = tuple[bool | None, str] | tuple[bool | None, str, bool]


def final_answer(evidence: TrialEvidence) -> str | None:
    """The runner's answer, else the trajectory's final answer."""
    if evidence.answer is not None:
        return evidence.answer
    return evidence.trajectory.final_answer if evidence.trajectory is not None else None


def quote(text: str, limit: int = 80) -> str:
    return repr(text if len(text) <= limit else text[:limit] + "…")


def first_json(text: str) -> tuple[bool, Any]:
    """(found, value): the whole text as JSON, else a fenced block, else the first ``{``/``[`` that decodes."""
    try:
        return True, json.loads(text)
    except ValueError:
        pass
    for match in _FENCE.finditer(text):
        try:
            return True, json.loads(match.group(1))
        except ValueError:
            continue
    decoder = json.JSONDecoder()
    starts = [i for i, ch in enumerate(text) if ch in "{["][:200]  # bounded: each try may scan far
    for start in starts:
        try:
            return True, decoder.raw_decode(text, start)[0]
        except ValueError:
            continue
    return False, None


def lookup(data: Any, path: str) -> Any:
    """``a.b[0].c`` / ``a.b.0.c`` / ``$.a.b``; raises KeyError naming the first missing step."""
    path = path.strip()
    if path.startswith("$"):
        path = path[1:].lstrip(".")
    value, walked = data, "$"
    for index, key in _PATH_TOKEN.findall(path):
        step = index if index else key
        if isinstance(value, list) and (index or key.lstrip("-").isdigit()):
            position = int(step)
            if not -len(value) <= position < len(value):
                raise KeyError(f"{walked}[{position}]")
            value = value[position]
        elif isinstance(value, dict) and not index and key in value:
            value = value[key]
        else:
            raise KeyError(f"{walked}.{step}")
        walked += f"[{step}]" if index else f".{step}"
    return value


def same(a: Any, b: Any) -> bool:
    """Equality that keeps JSON booleans and numbers apart (in Python ``True == 1``)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return bool(a == b)


def _answer(evidence: TrialEvidence) -> str | None:
    answer = final_answer(evidence)
    return None if answer is None else answer[:ANSWER_LIMIT]


def contains(a: Contains | NotContains, evidence: TrialEvidence) -> Verdict:
    answer = _answer(evidence)
    if answer is None:
        return False, NO_ANSWER
    found = (a.value.casefold() in answer.casefold()) if a.ignore_case else (a.value in answer)
    wanted = isinstance(a, Contains)
    where = f"found {quote(a.value)}" if found else f"{quote(a.value)} not in the answer {quote(answer, 160)}"
    return found == wanted, where


def regex(a: Regex | NotRegex, evidence: TrialEvidence) -> Verdict:
    answer = _answer(evidence)
    if answer is None:
        return False, NO_ANSWER
    match = re.search(a.pattern, answer, re.IGNORECASE if a.ignore_case else 0)
    wanted = isinstance(a, Regex)
    where = f"matched {quote(match.group(0))}" if match else f"no match for /{a.pattern}/ in {quote(answer, 160)}"
    return (match is not None) == wanted, where


def json_path(a: JsonPath, evidence: TrialEvidence) -> Verdict:
    answer = _answer(evidence)
    if answer is None:
        return False, NO_ANSWER
    found, data = first_json(answer)
    if not found:
        return False, "the answer holds no JSON"
    try:
        value = lookup(data, a.path)
    except KeyError as exc:
        return False, f"path {a.path!r} not found (missing at {exc.args[0]})"
    shown = quote(json.dumps(value, ensure_ascii=False))
    if a.op == "truthy":
        return bool(value), f"{a.path} = {shown}"
    if a.op == "contains":
        if isinstance(value, list):
            ok = any(same(item, a.expected) for item in value)
        elif isinstance(value, str):
            ok = isinstance(a.expected, str) and a.expected in value
        elif isinstance(value, dict):
            ok = isinstance(a.expected, str) and a.expected in value
        else:
            ok = False
        return ok, f"{a.path} = {shown} {'contains' if ok else 'does not contain'} {a.expected!r}"
    ok = same(value, a.expected)
    return ok, f"{a.path} = {shown}" + ("" if ok else f", expected {a.expected!r}")
