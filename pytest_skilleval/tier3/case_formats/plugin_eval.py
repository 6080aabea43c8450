"""Claude Code's plugin-eval case folders (``claude plugin eval``): ``evals/<case>/`` holding a
``prompt.md``, a ``case.yaml``, or both, and graders as ``graders/<name>.md`` files (YAML frontmatter
with ``type``, the body a rubric) or as entries of the ``graders:`` list of ``case.yaml``.

The prompt is ``prompt.md`` (frontmatter stripped), else ``case.yaml``'s ``execution.prompt`` or
``prompt``. Graders map onto our typed assertions where the meaning is the same:

| plugin-eval grader | assertion |
|---|---|
| ``regex`` over the reply (``source`` absent, ``reply``, ``last_message``, ``answer``) | ``regex`` |
| ``regex`` with ``source: file`` and ``path`` | ``file_contains`` with the pattern |
| ``tool_used`` of ``Skill`` (``max: 0``: must not) | ``skill_invoked`` / ``skill_not_invoked`` |
| ``file_exists`` (``glob`` or ``path``) | ``file_exists`` |
| ``llm`` / ``judge`` (rubric in the body or ``rubric`` / ``criteria``) | a judge criterion |

Graders with no counterpart (``tool_order``, ``baseline``, ``tool_used`` of other tools, ``regex``
over the whole trace) are reported LOW and not graded — never silently dropped. Cases are positive
unless ``case.yaml`` says ``should_trigger: false`` / ``expect_skill: false``.
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from pytest_skilleval import frontmatter
from pytest_skilleval.results import Severity
from pytest_skilleval.tier3.case_formats.base import RawCase
from pytest_skilleval.tier3.case_formats.document import SyntaxProblem, parse
from pytest_skilleval.tier3.case_formats.model import EvalCase, Problem
from pytest_skilleval.tier3.case_formats.normalise import FileContext, normalise

SHAPE = "plugin-eval"
CASE_FILES = ("prompt.md", "case.yaml")
REPLY_SOURCES = (None, "reply", "last_message", "last-message", "answer", "response", "output")


def case_folders(rels: list[str], eval_dirs: tuple[str, ...]) -> list[str]:
    """``evals/<case>`` folders that hold a prompt.md or a case.yaml, sorted."""
    found = set()
    for rel in rels:
        parts = rel.split("/")
        if len(parts) == 3 and parts[0] in eval_dirs and parts[2] in CASE_FILES:
            found.add(f"{parts[0]}/{parts[1]}")
    return sorted(found)


def _grader(spec: Mapping[str, Any], body: str, where: str, skill_name: str, problems: list[Problem]) -> Any | None:
    kind = str(spec.get("type") or spec.get("kind") or "").strip().lower()
    name = spec.get("name") or posixpath.splitext(posixpath.basename(where))[0]
    text = str(spec.get("description") or name)

    def unsupported(why: str) -> None:
        problems.append(Problem("grader-unsupported", Severity.LOW, f"grader {name!r} ({kind or 'no type'}): {why}; not graded", where,
                                suggestion="express it as a typed assertion in evals/evals.json if it matters"))

    if kind == "regex":
        pattern = spec.get("pattern") or spec.get("regex") or spec.get("value")
        source = spec.get("source")
        target = spec.get("target") if isinstance(spec.get("target"), Mapping) else {}
        source = source or target.get("source")
        path = spec.get("path") or target.get("path")
        flags = str(spec.get("flags") or "")
        if not isinstance(pattern, str) or not pattern:
            unsupported("no pattern")
            return None
        if source in REPLY_SOURCES:
            return {"type": "regex", "pattern": pattern, "ignore_case": "i" in flags, "text": text}
        if source == "file" and isinstance(path, str):
            return {"type": "file_contains", "path": path, "pattern": pattern, "text": text}
        unsupported(f"a regex over {source!r} has no counterpart here")
        return None
    if kind == "tool_used":
        tool = str(spec.get("tool") or spec.get("name_pattern") or "")
        if tool.lower() == "skill":
            never = spec.get("max") == 0 or spec.get("max_calls") == 0
            return {"type": "skill_not_invoked" if never else "skill_invoked", "skill": skill_name, "text": text}
        unsupported(f"tool_used of {tool or 'an unnamed tool'} has no counterpart here")
        return None
    if kind == "file_exists":
        path = spec.get("glob") or spec.get("path")
        if isinstance(path, str) and path:
            return {"type": "file_exists", "path": path, "text": text}
        unsupported("no glob or path")
        return None
    if kind in ("llm", "judge", "rubric"):
        rubric = (body or str(spec.get("rubric") or spec.get("criteria") or spec.get("prompt") or "")).strip()
        if rubric:
            return rubric
        unsupported("no rubric text")
        return None
    unsupported("this grader kind has no counterpart here")
    return None


def load_folder(folder: str, text: Callable[[str], str | None], exists: Callable[[str], bool], skill_name: str,
                skill_names: frozenset[str], grader_files: list[str]) -> tuple[list[EvalCase], list[Problem], int]:
    """One case folder → (cases (0 or 1), problems, case objects found)."""
    problems: list[Problem] = []
    data: dict[str, Any] = {}
    yaml_rel, prompt_rel = f"{folder}/case.yaml", f"{folder}/prompt.md"
    if exists(yaml_rel):
        raw = text(yaml_rel)
        try:
            parsed = parse(raw or "", yaml_rel).data if raw is not None else None
        except SyntaxProblem as exc:
            problems.append(Problem("syntax", Severity.HIGH, exc.message, yaml_rel, exc.line, suggestion="fix the syntax"))
            return [], problems, 1
        if isinstance(parsed, Mapping):
            data = dict(parsed)
        elif parsed is not None:
            problems.append(Problem("shape", Severity.HIGH, "case.yaml must be a mapping", yaml_rel, 1))
            return [], problems, 1
    prompt = None
    if exists(prompt_rel):
        prompt_text = text(prompt_rel) or ""
        prompt = frontmatter.parse(prompt_text, prompt_rel).body if prompt_text.startswith("---") else prompt_text
    execution = data.get("execution") if isinstance(data.get("execution"), Mapping) else {}
    prompt = (prompt or execution.get("prompt") or data.get("prompt") or "").strip()
    assertions: list[Any] = []
    for index, spec in enumerate(data.get("graders") or []):
        if isinstance(spec, Mapping):
            converted = _grader(spec, "", f"{yaml_rel}#graders[{index}]", skill_name, problems)
            if converted is not None:
                assertions.append(converted)
    for rel in grader_files:
        content = text(rel) or ""
        fm = frontmatter.parse(content, rel)
        converted = _grader(fm.data or {}, fm.body, rel, skill_name, problems)
        if converted is not None:
            assertions.append(converted)
    negative = data.get("should_trigger") is False or data.get("expect_skill") is False
    case: dict[str, Any] = {"id": str(data.get("name") or posixpath.basename(folder)), "prompt": prompt,
                            "expected_output": str(data.get("description") or "see the case's graders"), "assertions": assertions,
                            "expected_skill": None if negative else skill_name}
    for key in ("tags", "description"):
        if key in data:
            case[key] = data[key]
    doc = parse(json.dumps(case), f"{folder}/case.json")  # a document for the normaliser; problems name the folder
    ctx = FileContext(file=f"{folder}/case.yaml" if exists(yaml_rel) else prompt_rel, doc=doc, shape=SHAPE, skill_name=skill_name,
                      skill_names=skill_names, declared_skills=(), exists=exists, problems=problems)
    normalised = normalise(RawCase(doc.data, (), 0), ctx)
    problems[:] = [replace(p, file=ctx.file, line=None) if p.file.endswith("/case.json") else p for p in problems]
    return ([normalised] if normalised is not None else []), problems, 1
