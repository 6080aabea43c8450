"""Turn one case object, as written in any shape, into an :class:`EvalCase`, or report why not.

The rules (docs/eval-cases.md has the user-facing version):

- id: as written (integers become strings), else ``case-<n>`` by position; prefixed with the file
  stem for files other than ``evals.*``; must match the id alphabet (see :mod:`.fields`).
- ``expected_skill``: absent means the evaluated skill (the anchor's rule), so a negative control
  must say ``null``. ``should_trigger`` overrides it for routing. A case naming another skill is a
  negative for this one (the corpus calls such cases ``neg-*``), unless that skill is acceptable.
- ``files``: absent = stage all of ``evals/files/`` (None); ``[]``/null = nothing; entries are
  relative to the eval file's folder, or to the skill root when they already start with it.

Any HIGH problem drops the case (a case graded on a misread definition is worse than a case not
run), and the ``evals`` check fails on it; lower ones keep it.
"""

from __future__ import annotations

import difflib
import posixpath
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_skilleval.results import Severity
from pytest_skilleval.tier3.case_formats import assertions, fields, script
from pytest_skilleval.tier3.case_formats.base import RawCase, Report
from pytest_skilleval.tier3.case_formats.document import Document, Path
from pytest_skilleval.tier3.case_formats.model import EvalCase, Judge, Label, Problem, SourceRef

#: Evaluator control files a case may not stage into the agent's workspace.
CONTROL_FILES = frozenset({"evals.json", "evals.jsonl", "evals.yaml", "evals.yml", "config.yml", "config.yaml",
                           "grader.py", "grader.sh", "EVAL.md"})


@dataclass
class FileContext:
    """What normalising the cases of one eval file needs to know."""

    file: str  # the eval file, relative to the skill root
    doc: Document
    shape: str
    skill_name: str
    skill_names: frozenset[str]  # the frontmatter name and the folder name
    declared_skills: tuple[str, ...]
    exists: Callable[[str], bool]
    id_prefix: str = ""
    problems: list[Problem] = field(default_factory=list)

    @property
    def eval_dir(self) -> str:
        return posixpath.dirname(self.file)


def normalise(raw: RawCase, ctx: FileContext) -> EvalCase | None:
    data = raw.data
    start = len(ctx.problems)
    label = f"#{raw.index + 1}"

    def report(path: Path, rule: str, severity: Severity, message: str, *, field: str | None = None,
               suggestion: str | None = None) -> None:
        ctx.problems.append(Problem(rule, severity, message, ctx.file, ctx.doc.line((*raw.path, *path)), label, field, suggestion))

    def line_of(sub: Path) -> int | None:
        return ctx.doc.line((*raw.path, *sub))

    values = _pick(data, report)
    case_id = _case_id(values.get("id"), raw, ctx, report)
    label = case_id or label
    for path, dup_line in ctx.doc.duplicates:
        if path[:-1] == raw.path:
            ctx.problems.append(Problem("duplicate-key", Severity.HIGH, f"key {path[-1]!r} is given twice; only the last one is read",
                                        ctx.file, dup_line, label, str(path[-1])))
    for key in data:
        if key not in fields.KNOWN_KEYS:
            close = difflib.get_close_matches(str(key), fields.KNOWN_KEYS, n=1)
            report((str(key),), "unknown-key", Severity.LOW, "unknown key; kept as extra data and not interpreted", field=str(key),
                   suggestion=f"did you mean {close[0]!r}?" if close else None)

    prompt_key, prompt = values.get("prompt", ("prompt", None))
    if not isinstance(prompt, str) or not prompt.strip():
        problem = "is missing" if prompt is None else "must be a non-empty string"
        report((prompt_key,), "field-missing" if prompt is None else "field-type", Severity.HIGH,
               f"the prompt {problem}", field=prompt_key, suggestion="give the task as 'prompt' (or 'question')")
    output_key, expected_output = values.get("expected_output", ("expected_output", None))
    if expected_output is not None and not isinstance(expected_output, str):
        report((output_key,), "field-type", Severity.HIGH, f"must be a string, got {type(expected_output).__name__}", field=output_key)
    elif expected_output is None and ctx.shape == "agentskills":
        report((), "field-missing", Severity.MEDIUM, "'expected_output' is required by the agentskills format; the judge has no reference",
               field="expected_output")

    found = [a for key in fields.ASSERTION_KEYS if key in data
             for a in assertions.parse(data[key], key, report, ctx.skill_name, line_of)]
    if "must_not" in data:
        found += [a.model_copy(update={"text": f"Must not: {a.text}", "name": a.name or "must_not"}) if isinstance(a, Judge) else a
                  for a in assertions.parse(data["must_not"], "must_not", report, ctx.skill_name, line_of)]
    acceptable = _acceptable(values.get("acceptable_skills"), raw, ctx, report)
    expected_skill, should_trigger, routing = _routing(data, acceptable, ctx, report)
    staged = _files(data, ctx, report)
    expected_script = data.get("expected_script")
    if expected_script is not None and not isinstance(expected_script, str):
        report(("expected_script",), "field-type", Severity.HIGH, "must be a script path (string) or null", field="expected_script")
    scripts = script.parse(data["script"], report) if "script" in data else {}

    if any(p.severity.at_least(Severity.HIGH) for p in ctx.problems[start:]) or case_id is None:
        return None
    extra = {str(k): v for k, v in data.items() if str(k) in fields.KEPT_KEYS or str(k) not in fields.KNOWN_KEYS}
    return EvalCase(
        id=case_id, prompt=str(prompt), expected_output=expected_output, assertions=tuple(found), skill=ctx.skill_name,
        expected_skill=expected_skill, should_trigger=should_trigger, label=routing, acceptable_skills=acceptable,
        files=staged, expected_script=expected_script, scripts=scripts, environment=dict(raw.environment), extra=extra,
        shape=ctx.shape, source=SourceRef(file=ctx.file, line=ctx.doc.line(raw.path), index=raw.index))


def _pick(data: Mapping[str, Any], report: Report) -> dict[str, tuple[str, Any]]:
    """Canonical field -> (key used, value) for fields with several spellings; clashes reported."""
    out: dict[str, tuple[str, Any]] = {}
    for canonical, spellings in fields.SINGULAR.items():
        present = [k for k in spellings if k in data]
        if present:
            out[canonical] = (present[0], data[present[0]])
        if len(present) > 1:
            report((present[1],), "alias-clash", Severity.MEDIUM, f"both {present[0]!r} and {present[1]!r} are given; {present[0]!r} is used",
                   field=present[1], suggestion=f"keep only {present[0]!r}")
    return out


def _case_id(given: tuple[str, Any] | None, raw: RawCase, ctx: FileContext, report: Report) -> str | None:
    key, value = given if given else ("id", None)
    if value is None:
        if raw.ids_expected:
            report((), "id-missing", Severity.LOW, f"no id; using the positional id case-{raw.index + 1}, which changes if cases move",
                   field="id", suggestion='give every case a stable "id"')
        value = f"case-{raw.index + 1}"
    elif isinstance(value, bool) or not isinstance(value, int | str):
        report((key,), "id-invalid", Severity.HIGH, f"must be a string or an integer, got {value!r}", field=key)
        return None
    case_id = ctx.id_prefix + str(value)
    problem = fields.id_problem(case_id)
    if problem:
        report((key,), "id-invalid", Severity.HIGH, f"id {case_id!r} {problem}", field=key)
        return None
    return case_id


def _acceptable(given: tuple[str, Any] | None, raw: RawCase, ctx: FileContext, report: Report) -> tuple[str, ...]:
    """Names from a comma/newline string, a list of names, or a list of ``{name|skill: ...}`` objects."""
    names: list[str] = list(raw.acceptable)
    if given is not None:
        key, value = given
        if isinstance(value, str):
            value = [part for chunk in value.splitlines() for part in chunk.split(",")]
        if value is None:
            value = []
        if not isinstance(value, list):
            report((key,), "field-type", Severity.HIGH, "must be a list of skill names", field=key)
            value = []
        for index, item in enumerate(value):
            if isinstance(item, Mapping):
                item = item.get("name", item.get("skill"))
            if not isinstance(item, str):
                report((key, index), "field-type", Severity.HIGH, f"entry #{index + 1} is not a skill name", field=key)
            elif item.strip():
                names.append(item.strip().lstrip("/"))
    return tuple(dict.fromkeys(n for n in names if n not in ctx.skill_names))


def _routing(data: Mapping[str, Any], acceptable: tuple[str, ...], ctx: FileContext, report: Report) -> tuple[str | None, bool | None, Label]:
    should = data.get("should_trigger")
    if should is not None and not isinstance(should, bool):
        report(("should_trigger",), "field-type", Severity.HIGH, f"must be true or false, got {should!r}", field="should_trigger")
        should = None
    mismatch = bool(ctx.declared_skills) and not set(ctx.declared_skills) & ctx.skill_names
    if "expected_skill" not in data:
        expected: str | None = ctx.declared_skills[0] if mismatch else ctx.skill_name
        label = Label.UNLABELLED if mismatch else Label.POSITIVE
    else:
        expected = data["expected_skill"]
        if isinstance(expected, str) and not expected.strip():
            report(("expected_skill",), "field-type", Severity.LOW, "empty string; read as null (a negative control)", field="expected_skill",
                   suggestion='write "expected_skill": null')
            expected = None
        if expected is not None and not isinstance(expected, str):
            report(("expected_skill",), "field-type", Severity.HIGH, f"must be a skill name or null, got {expected!r}", field="expected_skill")
            expected = None
        expected = expected.strip().lstrip("/") if expected else None
        if expected and expected not in ctx.skill_names and any(n.endswith("-" + expected) for n in ctx.skill_names):
            # A skill renamed with a family prefix (cutile-python -> tilegym-cutile-python) whose
            # cases kept the old name: that is this skill, not a sibling to route to.
            report(("expected_skill",), "stale-skill-name", Severity.LOW,
                   f"{expected!r} looks like a former name of this skill; read as {ctx.skill_name!r}", field="expected_skill",
                   suggestion=f'write "expected_skill": "{ctx.skill_name}"')
            expected = ctx.skill_name
        positive = expected is not None and (expected in ctx.skill_names or expected in acceptable)
        label = Label.POSITIVE if positive else Label.NEGATIVE
    if should is not None:
        label = Label.POSITIVE if should else Label.NEGATIVE
    return expected, should, label


def _files(data: Mapping[str, Any], ctx: FileContext, report: Report) -> tuple[str, ...] | None:
    if "files" not in data:
        return None
    value = data["files"]
    if value is None:
        return ()
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        report(("files",), "field-type", Severity.HIGH, "must be a path or a list of paths", field="files")
        return ()
    out: list[str] = []
    for index, item in enumerate(value):
        where = ("files", index)
        if not isinstance(item, str) or not item.strip():
            report(where, "file-path", Severity.HIGH, f"entry #{index + 1} must be a non-empty path", field="files")
            continue
        if item.startswith(("/", "\\")) or "\\" in item or (len(item) > 1 and item[1] == ":"):
            report(where, "file-path", Severity.HIGH, f"{item!r} must be a relative posix path", field="files")
            continue
        rel = _resolve(item, ctx)
        if rel is None:
            report(where, "file-path", Severity.HIGH, f"{item!r} leaves the skill folder", field="files")
        elif posixpath.basename(rel) in CONTROL_FILES and posixpath.dirname(rel) == ctx.eval_dir:
            report(where, "file-path", Severity.HIGH, f"{item!r} is an evaluator control file and must not reach the agent", field="files")
        elif not ctx.exists(rel):
            report(where, "file-missing", Severity.HIGH, f"{item!r} does not exist (looked for {rel})", field="files")
        else:
            out.append(rel)
    return tuple(out)


def _resolve(item: str, ctx: FileContext) -> str | None:
    """Skill-root-relative path of a ``files`` entry; None when it escapes the skill."""
    base = ctx.eval_dir
    candidates = [item] if base and (item == base or item.startswith(base + "/")) else [posixpath.join(base, item), item]
    resolved = [posixpath.normpath(c) for c in candidates]
    if any(r == ".." or r.startswith("../") for r in resolved[:1]):
        return None
    return next((r for r in resolved if not r.startswith("../") and ctx.exists(r)), resolved[0])
