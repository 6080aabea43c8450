"""A skill's eval cases: find its eval files, read every real shape, normalise, say what is wrong.

This is the API Tier 3 builds items from::

    case_set = load_cases(skill)          # never raises on bad input
    for case in case_set:                 # EvalCase: frozen, typed
        case.prompt, case.assertions, case.label, case.script_for("codex"), case.files
    case_set.problems / case_set.findings()   # located by file, line, case and field
    case_set.digest()                     # "sha256:…" over the normalised cases and their input files, for cards
    case_set.case_digest(case)            # the same for one case (the baseline cache's key)

Where cases are looked for: ``evals/evals.{json,jsonl,yaml,yml}`` (and the legacy
``eval/dataset.*``/``eval/evals.*``) first, then every other ``.json/.jsonl/.yaml/.yml`` at the top
of ``evals/`` or ``eval/`` except ``config.yml`` — real skills ship deployment scenarios and
extended sets there. Cases from those other files get ids prefixed with the file stem
(``deploy.case-1``, ``evals-full.cudf-001``) so an extended set can repeat its base set's ids.
All reading goes through :meth:`Skill.text`, the safe reader.
"""

from __future__ import annotations

import collections
import hashlib
import json
import posixpath
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from pytest_skilleval import safefs
from pytest_skilleval.results import Finding, Severity
from pytest_skilleval.safefs import EntryKind
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier3.case_formats import detect, fields, plugin_eval
from pytest_skilleval.tier3.case_formats.base import Split, case_list
from pytest_skilleval.tier3.case_formats.document import Path, SyntaxProblem, parse
from pytest_skilleval.tier3.case_formats.model import (
    Assertion,
    EvalCase,
    Label,
    Problem,
    Script,
    ScriptStep,
    SourceRef,
)
from pytest_skilleval.tier3.case_formats.normalise import FileContext, normalise

__all__ = ["Assertion", "CaseSet", "EvalCase", "EvalFile", "Label", "Problem", "Script", "ScriptStep", "SourceRef",
           "case_inputs", "discover", "input_digests", "load_cases", "load_file"]

EVAL_DIRS = ("evals", "eval")
PRIMARY_STEMS = {"evals": ("evals",), "eval": ("evals", "dataset")}
SUFFIXES = (".json", ".jsonl", ".yaml", ".yml")
#: Files at the top of an eval folder that are evaluator settings or trigger sets (triggers/sets.py), not cases.
NOT_CASE_FILES = frozenset({"config.yml", "config.yaml", "triggers.json", "triggers.jsonl", "triggers.yaml", "triggers.yml"})
#: /2: the digest covers the bytes of each case's input files too (editing evals/files/sales.csv changes it).
DIGEST_ALGORITHM = "pytest-skilleval-cases/2"


@dataclass(frozen=True)
class EvalFile:
    path: str  # relative to the skill root
    primary: bool  # an evals.* / dataset.* file, as opposed to an extra set beside it
    shape: str | None  # None when unreadable, unparsable or not a case file
    found: int = 0  # case objects in the file
    loaded: int = 0  # cases that passed normalisation


@dataclass(frozen=True)
class CaseSet:
    """The loaded cases of one skill, the problems found, and the files read."""

    skill: str
    cases: tuple[EvalCase, ...]
    problems: tuple[Problem, ...]
    files: tuple[EvalFile, ...]
    #: Per case id: its input files (skill-relative) -> "sha256:…" of their bytes, or "unreadable: why".
    inputs: dict[str, dict[str, str]] = field(default_factory=dict)

    def __iter__(self) -> Iterator[EvalCase]:
        return iter(self.cases)

    def __len__(self) -> int:
        return len(self.cases)

    def get(self, case_id: str) -> EvalCase | None:
        return next((c for c in self.cases if c.id == case_id), None)

    def counts(self) -> dict[str, int]:
        labels = collections.Counter(c.label for c in self.cases)
        return {"cases": len(self.cases), **{label.value: labels[label] for label in Label},
                "invalid": sum(f.found for f in self.files) - len(self.cases)}

    def digest(self) -> str:
        """sha256 over the normalised cases in load order and the bytes of their input files;
        unchanged by moving cases within a file, changed by editing any input file."""
        return _sha256({"algorithm": DIGEST_ALGORITHM, "cases": [self._view(c) for c in self.cases]})

    def case_digest(self, case: EvalCase) -> str:
        """The same digest for one case: its normalised content and its input files' bytes."""
        return _sha256({"algorithm": DIGEST_ALGORITHM, "case": self._view(case)})

    def _view(self, case: EvalCase) -> dict[str, Any]:
        return {**case.digest_view(), "input_digests": self.inputs.get(case.id, {})}

    def findings(self) -> list[Finding]:
        return [p.finding() for p in self.problems]

    def metrics(self) -> dict[str, Any]:
        shapes = sorted({f.shape for f in self.files if f.shape})
        agents = sorted({agent for c in self.cases for agent in c.scripts})
        tier3 = "ready" if self.cases else "not evaluable: no eval cases" + ("" if self.files else " (no evals/evals.json)")
        return {**self.counts(), "files": {f.path: f.shape or "unread" for f in self.files}, "shapes": shapes,
                "scripted_agents": agents, "dataset_digest": self.digest(), "digest_algorithm": DIGEST_ALGORITHM, "tier3": tier3}


def discover(skill: Skill) -> tuple[list[tuple[str, bool]], list[Problem]]:
    """(path, primary) of each eval file, primary files first; problems for ones that cannot be read."""
    found: list[tuple[str, bool]] = []
    problems: list[Problem] = []
    for entry in skill.inventory.entries:
        folder, _, name = entry.rel.partition("/")
        suffix = posixpath.splitext(name)[1].lower()
        if folder not in EVAL_DIRS or "/" in name or suffix not in SUFFIXES or name in NOT_CASE_FILES:
            continue
        primary = posixpath.splitext(name)[0] in PRIMARY_STEMS[folder]
        if entry.kind is not EntryKind.FILE:
            if primary:
                problems.append(Problem("unreadable", Severity.HIGH, f"the eval file is a {entry.kind.value}, not a regular file; not read",
                                        entry.rel, suggestion="replace it with a regular file"))
            continue
        found.append((entry.rel, primary))
    found.sort(key=lambda item: (not item[1], item[0]))
    for folder in EVAL_DIRS:
        primaries = [p for p, is_primary in found if is_primary and p.startswith(folder + "/")]
        if len(primaries) > 1:
            problems.append(Problem("ambiguous", Severity.MEDIUM, f"{len(primaries)} dataset files ({', '.join(primaries)}); all are loaded",
                                    primaries[1], suggestion="keep one evals.* file"))
    return found, problems


def load_cases(skill: Skill) -> CaseSet:
    """Every eval case of ``skill``; never raises on bad input (problems are returned instead)."""
    paths, problems = discover(skill)
    cases: list[EvalCase] = []
    files: list[EvalFile] = []
    seen: dict[str, EvalCase] = {}
    for rel, primary in paths:
        eval_file, file_cases, file_problems = load_file(skill, rel, primary=primary)
        files.append(eval_file)
        problems.extend(file_problems)
        for case in file_cases:
            first = seen.get(case.id)
            if first is not None:
                problems.append(Problem("id-duplicate", Severity.HIGH,
                                        f"id {case.id!r} is already used at {first.source.file}:{first.source.line}; this case is not run",
                                        rel, case.source.line, case.id, "id", "give every case a unique id"))
                continue
            seen[case.id] = case
            cases.append(case)
    rels = [e.rel for e in skill.inventory.entries if e.kind is EntryKind.FILE]
    names = frozenset({skill.name, skill.folder_name})
    for folder in plugin_eval.case_folders(rels, EVAL_DIRS):  # Claude Code plugin-eval case folders
        graders = sorted(r for r in rels if r.startswith(folder + "/graders/") and r.endswith(".md") and r.count("/") == 3)
        folder_cases, folder_problems, found = plugin_eval.load_folder(folder, skill.text, skill.exists, skill.name, names, graders)
        files.append(EvalFile(folder + "/", False, plugin_eval.SHAPE, found, len(folder_cases)))
        problems.extend(folder_problems)
        for case in folder_cases:
            if case.id in seen:
                problems.append(Problem("id-duplicate", Severity.HIGH, f"id {case.id!r} is already used at {seen[case.id].source.file}; "
                                        "this case is not run", case.source.file, None, case.id, "id", "give every case a unique id"))
                continue
            seen[case.id] = case
            cases.append(case)
    return CaseSet(skill.name, tuple(cases), tuple(problems), tuple(files), {c.id: input_digests(skill, c) for c in cases})


def case_inputs(skill: Skill, case: EvalCase) -> list[str]:
    """Skill-relative paths of the case's inputs: its ``files``, or (not given) all of ``<eval dir>/files/``."""
    if case.files is not None:
        return list(case.files)
    prefix = posixpath.join(posixpath.dirname(case.source.file), "files") + "/"
    return [e.rel for e in skill.inventory.files() if e.rel.startswith(prefix)]


def input_digests(skill: Skill, case: EvalCase) -> dict[str, str]:
    """Each input file of ``case`` -> "sha256:…" of its bytes (through the safe reader), or why it is unreadable."""
    out: dict[str, str] = {}
    for rel in sorted(case_inputs(skill, case)):
        entry = skill.entry(rel)
        if entry is None or entry.kind is not EntryKind.FILE:
            out[rel] = "unreadable: not a regular file in the skill"
            continue
        try:
            out[rel] = "sha256:" + hashlib.sha256(safefs.read_bytes(skill.root, rel, skill.limits)).hexdigest()
        except safefs.ReadError as exc:
            out[rel] = f"unreadable: {exc.finding.message}"
    return out


def _sha256(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def load_file(skill: Skill, rel: str, *, primary: bool = True) -> tuple[EvalFile, list[EvalCase], list[Problem]]:
    """Read one eval file of ``skill``. Unexpected errors become a problem too: collection must go on."""
    try:
        return _load_file(skill, rel, primary)
    except Exception as exc:  # noqa: BLE001 - a bug here must not become a collection error for a whole catalog
        return EvalFile(rel, primary, None), [], [Problem("internal", Severity.HIGH, f"could not load the file ({exc!r}); please report this", rel)]


def _load_file(skill: Skill, rel: str, primary: bool) -> tuple[EvalFile, list[EvalCase], list[Problem]]:
    text = skill.text(rel)
    if text is None:
        why = skill.read_problem(rel)
        message = f"cannot read the eval file: {why.message if why else 'unreadable'}"
        return EvalFile(rel, primary, None), [], [Problem("unreadable", Severity.HIGH, message, rel, why.line if why else None)]
    try:
        doc = parse(text, rel)
    except SyntaxProblem as exc:
        return EvalFile(rel, primary, None), [], [Problem("syntax", Severity.HIGH, exc.message, rel, exc.line, suggestion="fix the syntax")]
    problems = [Problem("syntax", Severity.HIGH, message, rel, line) for line, message in doc.bad_lines]
    if doc.surrogate_lines:
        problems.append(Problem("surrogate", Severity.HIGH, "a string holds a lone surrogate (an escape such as \\ud800 with no "
                                "pair): it is not Unicode text, no agent can be sent it; it was kept escaped",
                                rel, doc.surrogate_lines[0], suggestion="remove the escape or write the character itself"))

    def report(path: Path, rule: str, severity: Severity, message: str, *, field: str | None = None, suggestion: str | None = None) -> None:
        problems.append(Problem(rule, severity, message, rel, doc.line(path), None, field, suggestion))

    if doc.jsonl:
        split: Split | None = Split("jsonl", case_list(doc.data, (), report, "cases"))
    else:
        shape = detect(doc.data)
        split = shape.split(doc.data, report) if shape else None
    if split is None:
        if primary:
            problems.append(Problem("shape", Severity.HIGH, "not a recognised eval file: expected a list of cases, "
                                    '{"skill_name", "evals"}, {"skill", "cases"}, {"expects"} or one case object', rel, 1,
                                    suggestion="see docs/eval-cases.md for the accepted shapes"))
        else:
            problems.append(Problem("not-cases", Severity.INFO, "no eval cases recognised in this file; ignored", rel, 1))
        return EvalFile(rel, primary, None), [], problems

    case_paths = {raw.path for raw in split.cases}
    for path, line in doc.duplicates:
        if path[:-1] not in case_paths:
            problems.append(Problem("duplicate-key", Severity.HIGH, f"key {path[-1]!r} is given twice; only the last one is read",
                                    rel, line, field=str(path[-1])))
    names = frozenset({skill.name, skill.folder_name})
    if split.declared_skills and not set(split.declared_skills) & names:
        problems.append(Problem("skill-mismatch", Severity.MEDIUM,
                                f"the file is for {', '.join(split.declared_skills)!s}, but this skill is {skill.name!r}; "
                                "cases that do not name an expected skill are unlabelled", rel, doc.line(()),
                                suggestion=f"set the file's skill name to {skill.name!r}"))
    if primary and not split.cases and not problems:
        problems.append(Problem("empty", Severity.MEDIUM, "the eval file holds no cases", rel, 1))
    stem = posixpath.splitext(posixpath.basename(rel))[0]
    ctx = FileContext(file=rel, doc=doc, shape=split.shape, skill_name=skill.name, skill_names=names,
                      declared_skills=split.declared_skills, exists=skill.exists,
                      id_prefix="" if primary else fields.safe_stem(stem) + ".", problems=problems)
    cases = [case for raw in split.cases if (case := normalise(raw, ctx)) is not None]
    return EvalFile(rel, primary, split.shape, len(split.cases), len(cases)), cases, problems
