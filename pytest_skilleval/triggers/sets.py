"""A skill's trigger set: queries labelled with whether the agent should load the skill.

``evals/triggers.json`` (or ``.yaml``/``.yml``/``.jsonl``) is either a list of queries — the shape
skill-creator and the agentskills.io guide use — or a mapping with ``queries`` and an optional
``script`` (the scripted model's routing rule, used only in scripted mode)::

    {"script": {"match": ["\\bcsv\\b"], "unless": ["excel|xlsx"]},
     "queries": [{"id": "profile", "query": "What is in sales.csv?", "should_trigger": true},
                 {"query": "Convert report.xlsx to CSV", "should_trigger": false, "note": "near miss"}]}

A query has ``query`` and ``should_trigger`` and optionally ``id`` (default ``q01``, ``q02``, …),
``note``, ``files`` (skill-relative inputs staged into the workspace) and ``acceptable_skills``
(other skills whose load is not a mistake). With ``--skilleval-triggers-from-cases``, eval cases
that carry a routing label (``should_trigger`` or an expected skill) are queries too, ids
``case.<case-id>``. Nothing here raises on bad input: problems are located by file and line and
reported by the ``evals`` check, and a query with a problem is left out.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_skilleval.results import Finding, Severity
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier3.case_formats.document import SyntaxProblem, parse
from pytest_skilleval.tier3.case_formats.model import Label, Problem
from pytest_skilleval.tier3.cases import load_cases

TRIGGER_FILES = ("evals/triggers.json", "evals/triggers.yaml", "evals/triggers.yml", "evals/triggers.jsonl")
QUERY_KEYS = frozenset({"id", "query", "should_trigger", "note", "files", "acceptable_skills"})
ID_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,79}$")
DIGEST_ALGORITHM = "pytest-skilleval-triggers/1"


@dataclass(frozen=True)
class ScriptRule:
    """The scripted model's rule for one skill: it "wants" the skill when a ``match`` pattern finds the
    query and no ``unless`` pattern does (case-insensitive ``re.search``). Scripted mode only."""

    match: tuple[str, ...] = ()
    unless: tuple[str, ...] = ()

    def wants(self, query: str) -> bool:
        hit = any(re.search(p, query, re.I) for p in self.match)
        return hit and not any(re.search(p, query, re.I) for p in self.unless)


@dataclass(frozen=True)
class TriggerQuery:
    id: str
    query: str
    should_trigger: bool
    note: str | None = None
    files: tuple[str, ...] = ()
    acceptable_skills: tuple[str, ...] = ()
    file: str = ""
    line: int | None = None

    def digest_view(self) -> dict[str, Any]:
        return {"id": self.id, "query": self.query, "should_trigger": self.should_trigger, "files": list(self.files),
                "acceptable_skills": list(self.acceptable_skills)}


@dataclass(frozen=True)
class TriggerSet:
    skill: str
    queries: tuple[TriggerQuery, ...] = ()
    script: ScriptRule | None = None
    files: tuple[str, ...] = ()
    problems: tuple[Problem, ...] = ()

    def __iter__(self) -> Iterator[TriggerQuery]:
        return iter(self.queries)

    def __len__(self) -> int:
        return len(self.queries)

    def get(self, query_id: str) -> TriggerQuery | None:
        return next((q for q in self.queries if q.id == query_id), None)

    def digest(self) -> str:
        payload = {"algorithm": DIGEST_ALGORITHM, "queries": [q.digest_view() for q in self.queries]}
        text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    def findings(self) -> list[Finding]:
        return [p.finding() for p in self.problems]

    def counts(self) -> dict[str, int]:
        positives = sum(1 for q in self.queries if q.should_trigger)
        return {"queries": len(self.queries), "should_trigger": positives, "should_not_trigger": len(self.queries) - positives}


def load_trigger_set(skill: Skill, *, from_cases: bool = False) -> TriggerSet:
    """The skill's trigger queries (and its eval cases' routing labels when ``from_cases``); never raises."""
    queries: list[TriggerQuery] = []
    problems: list[Problem] = []
    files: list[str] = []
    script: ScriptRule | None = None
    for rel in TRIGGER_FILES:
        if skill.entry(rel) is None:
            continue
        files.append(rel)
        try:
            found, rule = _load_file(skill, rel, problems)
        except Exception as exc:  # noqa: BLE001 - a bug here must not become a collection error
            problems.append(Problem("internal", Severity.HIGH, f"could not load the trigger file ({exc!r}); please report this", rel))
            continue
        queries += found
        script = script or rule
    if from_cases:
        queries += _from_cases(skill)
    seen: dict[str, TriggerQuery] = {}
    unique = []
    for q in queries:
        first = seen.get(q.id)
        if first is not None:
            problems.append(Problem("trigger-id-duplicate", Severity.HIGH, f"id {q.id!r} is already used at {first.file}:{first.line}; "
                                    "this query is not run", q.file, q.line, q.id, "id", "give every query a unique id"))
            continue
        seen[q.id] = q
        unique.append(q)
    return TriggerSet(skill.name, tuple(unique), script, tuple(files), tuple(problems))


def _load_file(skill: Skill, rel: str, problems: list[Problem]) -> tuple[list[TriggerQuery], ScriptRule | None]:
    text = skill.text(rel)
    if text is None:
        why = skill.read_problem(rel)
        problems.append(Problem("trigger-unreadable", Severity.HIGH, f"cannot read the trigger file: {why.message if why else 'unreadable'}",
                                rel, why.line if why else None))
        return [], None
    try:
        doc = parse(text, rel)
    except SyntaxProblem as exc:
        problems.append(Problem("trigger-syntax", Severity.HIGH, exc.message, rel, exc.line, suggestion="fix the syntax"))
        return [], None
    problems += [Problem("trigger-syntax", Severity.HIGH, message, rel, line) for line, message in doc.bad_lines]

    def report(path: tuple[str | int, ...], rule: str, message: str, *, query: str | None = None, field: str | None = None,
               suggestion: str | None = None) -> None:
        problems.append(Problem(rule, Severity.HIGH, message, rel, doc.line(path), query, field, suggestion))

    data, base, rule = doc.data, (), None
    if isinstance(data, Mapping):
        unknown = sorted(set(data) - {"queries", "script", "skill", "skill_name"})
        if unknown:
            report((unknown[0],), "trigger-field-unknown", f"unknown key(s) {', '.join(map(repr, unknown))}",
                   suggestion="a trigger file holds 'queries' and optionally 'script'")
        rule = _script_rule(data.get("script"), ("script",), report)
        data, base = data.get("queries"), ("queries",)
    if not isinstance(data, list):
        report(base, "trigger-shape", "expected a list of queries ({\"query\": …, \"should_trigger\": true|false}) "
               "or a mapping with 'queries'", suggestion="see docs/triggers.md")
        return [], rule
    out = []
    for index, raw in enumerate(data):
        query = _query(raw, (*base, index), index, rel, doc.line((*base, index)), report)
        if query is not None:
            out.append(query)
    if not out and not problems:
        report(base, "trigger-empty", "the trigger file holds no queries")
    return out, rule


Report = Any  # the local ``report`` callable of _load_file


def _query(raw: Any, path: tuple[str | int, ...], index: int, rel: str, line: int | None, report: Report) -> TriggerQuery | None:
    label = f"#{index + 1}"
    if not isinstance(raw, Mapping):
        report(path, "trigger-shape", f"query {label} must be a mapping, got {type(raw).__name__}", query=label)
        return None
    qid = raw.get("id", f"q{index + 1:02d}")
    if not isinstance(qid, (str, int)) or isinstance(qid, bool) or not ID_PATTERN.match(str(qid)):
        report((*path, "id"), "trigger-field-type", f"id must be letters, digits, '.', '_' or '-' (up to 80), got {qid!r}",
               query=label, field="id")
        return None
    qid, ok = str(qid), True
    unknown = sorted(set(raw) - QUERY_KEYS)
    if unknown:
        report((*path, unknown[0]), "trigger-field-unknown", f"unknown key(s) {', '.join(map(repr, unknown))}", query=qid,
               field=str(unknown[0]), suggestion=f"allowed: {', '.join(sorted(QUERY_KEYS))}")
        ok = False
    text = raw.get("query")
    if not isinstance(text, str) or not text.strip():
        report((*path, "query"), "trigger-field-missing" if text is None else "trigger-field-type",
               "needs a non-empty string 'query'", query=qid, field="query")
        ok = False
    should = raw.get("should_trigger")
    if not isinstance(should, bool):
        report((*path, "should_trigger"), "trigger-field-missing" if should is None else "trigger-field-type",
               f"'should_trigger' must be true or false, got {should!r}", query=qid, field="should_trigger")
        ok = False
    note = raw.get("note")
    if note is not None and not isinstance(note, str):
        report((*path, "note"), "trigger-field-type", "'note' must be a string", query=qid, field="note")
        ok = False
    lists = {}
    for key in ("files", "acceptable_skills"):
        value = raw.get(key, [])
        value = [value] if isinstance(value, str) else value
        if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
            report((*path, key), "trigger-field-type", f"'{key}' must be a string or a list of strings", query=qid, field=key)
            ok = False
            continue
        if key == "files" and any(v.startswith("/") or ".." in v.split("/") for v in value):
            report((*path, key), "trigger-field-type", "'files' must be skill-relative paths inside the skill", query=qid, field=key)
            ok = False
        lists[key] = tuple(value)
    if not ok:
        return None
    assert isinstance(text, str) and isinstance(should, bool)
    return TriggerQuery(qid, text.strip(), should, note, lists.get("files", ()), lists.get("acceptable_skills", ()), rel, line)


def _script_rule(raw: Any, path: tuple[str, ...], report: Report) -> ScriptRule | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or set(raw) - {"match", "unless"}:
        report(path, "trigger-script", "'script' must be a mapping with 'match' (and optionally 'unless'): lists of regular expressions",
               field="script")
        return None
    parts: dict[str, tuple[str, ...]] = {}
    for key in ("match", "unless"):
        value = raw.get(key, [])
        value = [value] if isinstance(value, str) else value
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            report((*path, key), "trigger-script", f"'script.{key}' must be a list of regular expressions", field=f"script.{key}")
            return None
        for pattern in value:
            try:
                re.compile(pattern)
            except re.error as exc:
                report((*path, key), "trigger-script", f"'script.{key}': bad regular expression {pattern!r}: {exc}", field=f"script.{key}")
                return None
        parts[key] = tuple(value)
    return ScriptRule(parts.get("match", ()), parts.get("unless", ()))


def _from_cases(skill: Skill) -> list[TriggerQuery]:
    """Eval cases with a resolved routing label (positive: for this skill; negative: ``should_trigger: false`` or
    ``expected_skill: null``) are trigger queries; their bad cases are the ``evals`` check's business."""
    out = []
    for case in load_cases(skill):
        if case.label is Label.UNLABELLED:  # the file names another skill and the case does not say
            continue
        out.append(TriggerQuery(f"case.{case.id}", case.prompt, case.label is Label.POSITIVE, None, tuple(case.files or ()),
                                case.acceptable_skills, case.source.file, case.source.line))
    return out
