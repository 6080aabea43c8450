"""Does every script and data file of a skill parse? Used by the ``integrity`` check.

An agent that runs a script that does not parse gets a syntax error instead of the skill's work, and
a JSON or YAML file that does not parse breaks whatever reads it. Nothing is run: Python is compiled
to an AST in this process, shell goes through ``bash -n`` (parse only), JavaScript through ``node
--check`` (parse only), each on a private copy of the text in a temporary folder, never on the
skill's own file. JSON is read with :mod:`json`, YAML composed (not constructed, so custom tags such
as CloudFormation's ``!Ref`` are fine) with PyYAML.

Left alone: ``templates/`` and ``assets/`` (a template may hold placeholders that only parse once
filled in), evaluation folders (the ``evals`` check reads those), JSON dialects with comments
(``tsconfig.json``, ``.vscode/``, ``*.jsonc``), TypeScript (Node 20 has no type stripping), and
shell or Node where the tool is absent (an INFO finding says which files were not checked).
"""

from __future__ import annotations

import ast
import json
import posixpath
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import yaml

from pytest_skilleval.results import Finding, Severity
from pytest_skilleval.skill import Skill

PYTHON = frozenset({".py"})
SHELL = frozenset({".sh", ".bash"})
JAVASCRIPT = frozenset({".js", ".mjs", ".cjs"})
JSON = frozenset({".json"})
YAML = frozenset({".yaml", ".yml"})
#: Folders whose files may be templates, not yet parseable.
TEMPLATE_DIRS = frozenset({"templates", "template", "assets"})
#: JSON files that are JSON-with-comments by convention.
_JSONC = re.compile(r"(?:^|/)(?:tsconfig[\w.-]*|jsconfig[\w.-]*|devcontainer|\.eslintrc|\.babelrc|settings|launch|tasks|"
                    r"extensions|keybindings)\.json$|(?:^|/)\.vscode/")
_TOOL_LINE = re.compile(r":\s*line\s+(\d+):|^[^:\n]*:(\d+)\s*$", re.MULTILINE)
_COMPOSER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
TIMEOUT_S = 20


def _finding(rel: str, line: int | None, kind: str, detail: str) -> Finding:
    return Finding(rule="integrity.script-syntax", severity=Severity.HIGH, file=rel, line=line,
                   message=f"{kind} does not parse: {detail}",
                   suggestion="fix the syntax error; an agent that runs or reads this file gets the error instead")


def _python(rel: str, text: str) -> Finding | None:
    try:
        compile(text, rel, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        version = ".".join(map(str, sys.version_info[:2]))
        return _finding(rel, exc.lineno, f"Python (checked with {version})", exc.msg)
    except ValueError as exc:  # NUL bytes
        return _finding(rel, None, "Python", str(exc))
    return None


def _json(rel: str, text: str) -> Finding | None:
    try:
        json.loads(text)
    except json.JSONDecodeError as exc:
        return _finding(rel, exc.lineno, "JSON", exc.msg)
    return None


def _yaml(rel: str, text: str) -> Finding | None:
    try:
        for _ in yaml.compose_all(text, Loader=_COMPOSER):
            pass
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc).split("\n", 1)[0]
        return _finding(rel, mark.line + 1 if mark is not None else None, "YAML", str(problem))
    return None


class _Workdir:
    """The private folder of the copies bash and node read, made on first use: most skills have no
    shell or JavaScript file, and a folder per skill was 750 mkdir/rmdir pairs over a catalog."""

    def __init__(self) -> None:
        self._tmp: tempfile.TemporaryDirectory[str] | None = None

    def path(self) -> Path:
        if self._tmp is None:
            self._tmp = tempfile.TemporaryDirectory(prefix="skilleval-syntax-")
        return Path(self._tmp.name)

    def close(self) -> None:
        if self._tmp is not None:
            self._tmp.cleanup()


def _tool(rel: str, text: str, command: list[str], kind: str, work: Path) -> Finding | None:
    """Run a parse-only ``command`` on a private copy of ``text``; a finding when it reports an error."""
    copy = work / f"{len(list(work.iterdir()))}{posixpath.splitext(rel)[1]}"
    copy.write_text(text, encoding="utf-8")
    try:
        proc = subprocess.run([*command, str(copy)], capture_output=True, text=True, timeout=TIMEOUT_S, cwd=work,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return None  # could not check: not a finding about the skill
    if proc.returncode == 0:
        return None
    out = (proc.stderr or proc.stdout).replace(str(copy), rel)
    m = _TOOL_LINE.search(out)
    line = int(m.group(1) or m.group(2)) if m else None
    detail = next((ln.strip() for ln in out.splitlines() if "rror" in ln), out.strip().splitlines()[0] if out.strip() else "")
    return _finding(rel, line, kind, detail[:200])


def _shell_kind(rel: str, text: str) -> bool:
    if posixpath.splitext(rel)[1].lower() in SHELL:
        return True
    first = text.split("\n", 1)[0]
    return first.startswith("#!") and bool(re.search(r"\b(?:ba)?sh\b", first))


def parse_problems(skill: Skill) -> tuple[list[Finding], dict[str, int]]:
    """Findings for files that do not parse, and how many files of each kind were checked."""
    findings: list[Finding] = []
    checked = {"python": 0, "shell": 0, "javascript": 0, "json": 0, "yaml": 0}
    unchecked: dict[str, list[str]] = {}
    found_tools: dict[str, str | None] = {}

    def tool(name: str) -> str | None:
        """The path of ``name``, looked up at its first use (most skills have no script: PATH is not searched)."""
        if name not in found_tools:
            found_tools[name] = shutil.which(name)
        return found_tools[name]

    work = _Workdir()
    try:
        for entry in skill.files():
            rel = entry.rel
            if rel.split("/", 1)[0] in TEMPLATE_DIRS or entry.nlink > 1 or entry.size > skill.limits.max_file_bytes:
                continue
            suffix = entry.suffix
            if suffix not in PYTHON | SHELL | JAVASCRIPT | JSON | YAML and suffix:
                continue
            text = skill.text(rel)
            if text is None:
                continue  # unreadable or binary: the files check reports it
            problem: Finding | None = None
            if suffix in PYTHON:
                checked["python"] += 1
                problem = _python(rel, text)
            elif suffix in JSON:
                if _JSONC.search(rel):
                    continue
                checked["json"] += 1
                problem = _json(rel, text)
            elif suffix in YAML:
                checked["yaml"] += 1
                problem = _yaml(rel, text)
            elif suffix in JAVASCRIPT:
                node = tool("node")
                if node is None:
                    unchecked.setdefault("node", []).append(rel)
                    continue
                checked["javascript"] += 1
                problem = _tool(rel, text, [node, "--check"], "JavaScript (node --check)", work.path())
            elif _shell_kind(rel, text):
                bash = tool("bash")
                if bash is None:
                    unchecked.setdefault("bash", []).append(rel)
                    continue
                checked["shell"] += 1
                problem = _tool(rel, text, [bash, "-n"], "shell (bash -n)", work.path())
            if problem is not None:
                findings.append(problem)
    finally:
        work.close()
    for tool, rels in unchecked.items():
        findings.append(Finding(rule="integrity.syntax-unchecked", severity=Severity.INFO, file=rels[0], line=None,
                                message=f"{len(rels)} file(s) not syntax-checked: {tool} is not installed",
                                suggestion=f"install {tool} to check them"))
    return findings, checked
