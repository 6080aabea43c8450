"""``security``: bandit and semgrep over a skill's scripts, one process each per batch of skills.

What is scanned: ``.py``, ``.sh``/``.bash``, ``.js``/``.mjs``/``.cjs``/``.ts`` files, and files
without an extension whose shebang names python, sh/bash/dash or node. Eval folders are left out
(the agent never runs them). Links, hardlinks and oversized files are never scanned.

How: each script is read once through :mod:`safefs` and its bytes are copied, under a neutral
name with a language suffix, into a private temporary folder; the scanners get those paths, never
the skill folder. So a link swapped in after the inventory is not followed, the skill's own
``.semgrepignore``/``.gitignore`` cannot hide files, and extensionless scripts (which semgrep skips
even when named) are scanned. ``# nosec``/``# nosemgrep`` in the skill are ignored: its author is
not the one who may silence the scanner.

Severity mapping. semgrep (rules in ``rules/semgrep/*.yaml``): ERROR → HIGH, WARNING → MEDIUM,
INFO → LOW, unless a rule's ``metadata.skilleval-severity`` says otherwise (exfiltration is
CRITICAL). bandit severity/confidence: HIGH with confidence ≥ MEDIUM → HIGH, HIGH/LOW → MEDIUM,
MEDIUM with ≥ MEDIUM → MEDIUM, MEDIUM/LOW → LOW, LOW/HIGH → LOW, anything else → INFO. A bandit
finding on a line semgrep already reports at least as severely is dropped (both see shell=True).

Failures: a missing, timed-out or crashed tool, or output that is not JSON, has the wrong shape or
names files it was not given, makes every skill that needed that tool INCOMPLETE, naming the tool
and how to install it; skills that did not need it are unaffected. A file a tool could not
*parse* is a LOW ``security.unparseable`` finding, not INCOMPLETE (Python would refuse to run it
too); a file it skipped silently, or failed on for another reason, makes its skill INCOMPLETE.
"""

from __future__ import annotations

import hashlib
import json
import os
import posixpath
import re
import tempfile
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval import tools
from pytest_skilleval.batch import BatchedCheck
from pytest_skilleval.checks import Check, CheckContext, Reads
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import Skill
from pytest_skilleval.tools import ToolError, ToolSpec

RULES_DIR = Path(__file__).resolve().parent / "rules" / "semgrep"
BANDIT_TIMEOUT_S, SEMGREP_TIMEOUT_S = 120.0, 300.0  # for a whole batch

SUFFIX_LANGUAGES = {".py": "python", ".sh": "shell", ".bash": "shell", ".js": "javascript", ".mjs": "javascript",
                    ".cjs": "javascript", ".ts": "typescript"}
SHEBANG_LANGUAGES = {"python": "python", "sh": "shell", "bash": "shell", "dash": "shell", "node": "javascript",
                     "nodejs": "javascript"}
#: Suffix of the private copy: what makes both scanners pick the right language.
STAGED_SUFFIX = {"python": ".py", "shell": ".sh", "javascript": ".js", "typescript": ".ts"}
SEMGREP_SEVERITY = {"ERROR": Severity.HIGH, "WARNING": Severity.MEDIUM, "INFO": Severity.LOW, **{s.value: s for s in Severity}}


BANDIT = ToolSpec("bandit", "bandit", "pip install bandit  (a dependency of pytest-skilleval)")
#: Without the version-check switch semgrep waits ~100 s for semgrep.dev after every scan.
#: The data cap (RLIMIT_DATA) has to hold what semgrep-core maps, not what it uses: measured with
#: semgrep 1.185 (strace), one job starts three threads, each with a ~954 MB stack that RLIMIT_DATA
#: counts though it is barely touched (~120 MB resident in all). On a quiet machine two of them are
#: alive at once (a run fails at 1,792 MB, passes at 2,048 MB); on a loaded one all three can be,
#: which a 2,048 MB cap turned into "the engine was killed" in CI. So the cap is every stack at once
#: plus a gigabyte of working memory, semgrep runs one job (xdist workers are the parallelism; each
#: job adds threads), and ``--max-memory`` bounds each file's analysis (the memory it really uses).
SEMGREP_THREAD_STACK_MB, SEMGREP_THREADS, SEMGREP_WORKING_MB = 954, 3, 1024
SEMGREP_FILE_MEMORY_MB = 512
SEMGREP = ToolSpec("semgrep", "semgrep", "pip install 'pytest-skilleval[scanners]'  (or: pip install semgrep)",
                   env={"SEMGREP_ENABLE_VERSION_CHECK": "0"},
                   memory_mb=SEMGREP_THREADS * SEMGREP_THREAD_STACK_MB + SEMGREP_WORKING_MB)

_SHEBANG = re.compile(r"#![ \t]*(\S+)[ \t]*(.*)")
_PARSE_ERROR = re.compile(r"syntax|pars|lexical", re.IGNORECASE)


def shebang_language(text: str) -> str | None:
    """Language named by a ``#!`` line: ``/usr/bin/env -S python3 -u`` → python."""
    match = _SHEBANG.match(text.split("\n", 1)[0])
    if not match:
        return None
    words = [posixpath.basename(match.group(1)), *match.group(2).split()]
    if words[0] == "env":  # skip env's options and VAR=value assignments
        words = [w for w in words[1:] if not w.startswith("-") and "=" not in w] or [""]
    name = re.sub(r"[\d.]+$", "", words[0])  # python3.12 -> python
    return SHEBANG_LANGUAGES.get(name)


@dataclass(frozen=True)
class Script:
    rel: str  # path in the skill
    language: str
    data: bytes
    staged: str = ""  # absolute path of the private copy the scanners read

    def line_text(self, line: int) -> str | None:
        lines = self.data.decode("utf-8", "replace").splitlines()
        text = lines[line - 1].strip() if 1 <= line <= len(lines) else None
        return text if text is None or len(text) <= 160 else text[:157] + "..."


@dataclass
class _Plan:
    """What one skill needs: its scripts, and findings about scripts that could not be read."""

    scripts: list[Script] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def find_scripts(skill: Skill) -> _Plan:
    plan = _Plan()
    for entry in skill.files():
        language = SUFFIX_LANGUAGES.get(entry.suffix)
        if language is None and entry.suffix:
            continue
        if entry.nlink > 1 or entry.size > skill.limits.max_file_bytes:
            continue  # safefs flagged it (files check); never handed to a scanner
        text = skill.text(entry.rel)
        if text is None:
            if language is not None:  # a script we were asked to scan and cannot: say so
                problem = skill.read_problem(entry.rel)
                plan.findings.append(Finding(rule="security.unparseable", severity=Severity.LOW, file=entry.rel,
                                             message=f"script not scanned: {problem.message if problem else 'unreadable'}"))
            continue
        language = language or shebang_language(text)
        if language is not None:
            plan.scripts.append(Script(entry.rel, language, text.encode("utf-8")))
    return plan


@dataclass
class _Outcome:
    """One tool's answer for a batch: findings and per-file problems, keyed by staged path."""

    version: str
    findings: dict[str, list[Finding]] = field(default_factory=dict)
    problems: dict[str, list[str]] = field(default_factory=dict)

    def add(self, script: Script, finding: Finding) -> None:
        self.findings.setdefault(script.staged, []).append(finding)

    def problem(self, script: Script, text: str) -> None:
        self.problems.setdefault(script.staged, []).append(text)


def _load_json(tool: ToolSpec, text: str) -> dict[str, Any]:
    try:
        doc = json.loads(text)
    except ValueError as exc:
        raise ToolError(tool, "bad-output", f"output is not JSON ({exc}): {text[:200]!r}") from None
    if not isinstance(doc, dict):
        raise ToolError(tool, "bad-output", "output is not a JSON object")
    return doc


def _field(tool: ToolSpec, obj: Any, *path: str) -> Any:
    for key in path:
        if not isinstance(obj, dict) or key not in obj:
            raise ToolError(tool, "bad-output", f"JSON lacks {'.'.join(path)}")
        obj = obj[key]
    return obj


def _script_for(tool: ToolSpec, by_path: dict[str, Script], path: Any) -> Script:
    script = by_path.get(os.path.normpath(str(path)))
    if script is None:  # a result for a file we did not pass: the output cannot be trusted
        raise ToolError(tool, "bad-output", f"reported on a file it was not given: {path}")
    return script


_BANDIT_LEVEL = {"UNDEFINED": 0, "LOW": 1, "MEDIUM": 2, "HIGH": 3}


def bandit_severity(severity: str, confidence: str) -> Severity:
    sev, conf = _BANDIT_LEVEL.get(severity.upper(), 0), _BANDIT_LEVEL.get(confidence.upper(), 0)
    if sev == 3:
        return Severity.HIGH if conf >= 2 else Severity.MEDIUM
    if sev == 2:
        return Severity.MEDIUM if conf >= 2 else Severity.LOW
    return Severity.LOW if sev == 1 and conf == 3 else Severity.INFO


def run_bandit(scripts: Sequence[Script], cwd: Path) -> _Outcome:
    by_path = {os.path.normpath(s.staged): s for s in scripts}
    # Exit 1 means "issues found"; a syntax error still exits 0, so errors[] is read below.
    run = tools.run(BANDIT, ["-f", "json", "-q", "--ignore-nosec", *by_path], timeout=BANDIT_TIMEOUT_S, cwd=cwd, ok_codes=(0, 1),
                    files=len(by_path))
    doc = _load_json(BANDIT, run.stdout)
    results, errors, metrics = (_field(BANDIT, doc, k) for k in ("results", "errors", "metrics"))
    out = _Outcome(version=tools.version(BANDIT) or "unknown")
    for item in results:
        script = _script_for(BANDIT, by_path, _field(BANDIT, item, "filename"))
        line = int(_field(BANDIT, item, "line_number"))
        test_id, name = str(_field(BANDIT, item, "test_id")), str(item.get("test_name", ""))
        cwe = (item.get("issue_cwe") or {}).get("id")
        out.add(script, Finding(
            rule=f"security.bandit.{test_id}", file=script.rel, line=line,
            severity=bandit_severity(str(_field(BANDIT, item, "issue_severity")), str(_field(BANDIT, item, "issue_confidence"))),
            message=f"{_field(BANDIT, item, 'issue_text')} ({name}{f', CWE-{cwe}' if cwe else ''})",
            suggestion=str(item["more_info"]) if item.get("more_info") else None, evidence=script.line_text(line)))
    reported = {os.path.normpath(k) for k in metrics if k != "_totals"}
    for err in errors:
        script = _script_for(BANDIT, by_path, _field(BANDIT, err, "filename"))
        reason = str(err.get("reason", "unknown error"))
        reported.add(os.path.normpath(script.staged))
        if _PARSE_ERROR.search(reason):
            out.add(script, Finding(rule="security.unparseable", severity=Severity.LOW, file=script.rel,
                                    message=f"bandit could not parse this script ({reason}); bandit did not check it"))
        else:
            out.problem(script, f"bandit: {reason} ({script.rel})")
    for path, script in by_path.items():
        if path not in reported:
            out.problem(script, f"bandit: did not report on {script.rel}")
    return out


def run_semgrep(scripts: Sequence[Script], cwd: Path, max_bytes: int) -> _Outcome:
    by_path = {os.path.normpath(s.staged): s for s in scripts}
    args = ["scan", "--jobs=1", "--config", str(RULES_DIR), "--json", "--quiet", "--metrics=off", "--disable-version-check",
            "--no-rewrite-rule-ids", "--disable-nosem", "--no-git-ignore", f"--max-target-bytes={max_bytes + 1}",
            f"--max-memory={SEMGREP_FILE_MEMORY_MB}", *by_path]
    # Any exit code is accepted here: semgrep explains a failure in its JSON, which is read below.
    run = tools.run(SEMGREP, args, timeout=SEMGREP_TIMEOUT_S, cwd=cwd, ok_codes=tuple(range(126)),
                    files=len(by_path))
    doc = _load_json(SEMGREP, run.stdout) if run.stdout.strip() else {}
    errors = doc.get("errors", [])
    if run.returncode != 0 or not doc:
        why = "; ".join(str(e.get("message", e))[:200] for e in errors if isinstance(e, dict)) or run.stderr.strip()[-300:]
        raise ToolError(SEMGREP, "crashed", f"exit code {run.returncode}: {why or 'no output'}")
    # A value of the wrong type fails below and is reported as bad-output by SecurityCheck._run_tools.
    results, scanned = _field(SEMGREP, doc, "results"), _field(SEMGREP, doc, "paths", "scanned")
    out = _Outcome(version=str(doc.get("version") or tools.version(SEMGREP) or "unknown"))
    for item in results:
        script = _script_for(SEMGREP, by_path, _field(SEMGREP, item, "path"))
        line = int(_field(SEMGREP, item, "start", "line"))
        metadata = _field(SEMGREP, item, "extra").get("metadata") or {}
        label = str(metadata.get("skilleval-severity") or _field(SEMGREP, item, "extra", "severity")).upper()
        if label not in SEMGREP_SEVERITY:
            raise ToolError(SEMGREP, "bad-output", f"unknown severity {label!r}")
        cwe = metadata.get("cwe")
        message = str(_field(SEMGREP, item, "extra", "message")).strip()
        out.add(script, Finding(
            rule=f"security.semgrep.{_field(SEMGREP, item, 'check_id')}", severity=SEMGREP_SEVERITY[label], file=script.rel,
            line=line, message=f"{message} ({cwe})" if cwe else message, suggestion=metadata.get("suggestion"),
            evidence=script.line_text(line)))  # extra.lines is "requires login" in OSS semgrep
    for err in errors:
        if err.get("path") is None:
            if str(err.get("level", "error")).lower() == "error":
                raise ToolError(SEMGREP, "crashed", str(err.get("message", err))[:300])
            continue  # a warning about the run, not about a file
        script = _script_for(SEMGREP, by_path, err["path"])
        kind = json.dumps(err.get("type"))
        if _PARSE_ERROR.search(kind):
            out.add(script, Finding(rule="security.unparseable", severity=Severity.LOW, file=script.rel,
                                    message=f"semgrep could not fully parse this script ({kind}); parts were not checked"))
        else:
            out.problem(script, f"semgrep: {kind} on {script.rel}: {str(err.get('message'))[:200]}")
    seen = {os.path.normpath(str(p)) for p in scanned} | {os.path.normpath(str(e["path"])) for e in errors if e.get("path")}
    for path, script in by_path.items():
        if path not in seen:  # skipped without saying why: unscanned is not clean
            out.problem(script, f"semgrep: did not scan {script.rel}")
    return out


#: A rule's finding is dropped on a line where the rule that supersedes it fires: the untainted
#: (MEDIUM) form of a sink where its tainted (HIGH) form already reports the line.
SUPERSEDED = {"security.semgrep.py-eval-exec-dynamic": ("security.semgrep.py-data-as-code-from-input",),
              "security.semgrep.py-archive-extract-unfiltered": ("security.semgrep.py-data-as-code-from-input",),
              # bandit's unfiltered-extraction test is HIGH whatever the archive: our rules judge where it came from
              "security.bandit.B202": ("security.semgrep.py-archive-extract-unfiltered", "security.semgrep.py-data-as-code-from-input")}


def _dedupe(semgrep: list[Finding], bandit: list[Finding]) -> list[Finding]:
    """One finding per rule and line (a rule's alternatives may match one line twice), no finding
    a superseding rule reports on the same line, and no bandit finding where semgrep already
    reports the line at least as severely."""
    unique = list({(f.rule, f.file, f.line): f for f in semgrep}.values())
    fired = {(f.rule, f.file, f.line) for f in unique}

    def superseded(f: Finding) -> bool:
        return any((by, f.file, f.line) in fired for by in SUPERSEDED.get(f.rule, ()))

    unique = [f for f in unique if not superseded(f)]
    worst: dict[tuple[str | None, int | None], int] = {}
    for f in unique:
        worst[f.file, f.line] = max(worst.get((f.file, f.line), -1), f.severity.rank)
    return unique + [f for f in bandit if worst.get((f.file, f.line), -1) < f.severity.rank and not superseded(f)]


def _rules_digest() -> str:
    """Part of the cache key, so editing a rule file invalidates cached results."""
    h = hashlib.sha256()
    for path in sorted(RULES_DIR.glob("*.yaml")):
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


class SecurityCheck(BatchedCheck):
    name = "security"
    reads = Reads(frozenset(SUFFIX_LANGUAGES))  # extensionless files are sniffed only when readable
    description = "bandit and semgrep (packaged rules) over the skill's Python, shell and JS/TS scripts"
    tools = (BANDIT, SEMGREP)
    cache_version = "1-" + _rules_digest()

    def needs_scan(self, skill: Skill) -> bool:
        return bool(find_scripts(skill).scripts)

    def scan(self, skills: Sequence[Skill], ctx: CheckContext) -> dict[Path, CheckResult]:
        plans = {skill.root: find_scripts(skill) for skill in skills}
        outcomes: dict[str, _Outcome | ToolError] = {}
        if any(plan.scripts for plan in plans.values()):  # else no process is started at all
            with tempfile.TemporaryDirectory(prefix="skilleval-security-") as tmp:
                staged = self._stage(Path(tmp), plans)
                outcomes = self._run_tools(staged, Path(tmp), max(s.limits.max_file_bytes for s in skills))
        return {root: self._result(plan, outcomes) for root, plan in plans.items()}

    @staticmethod
    def _stage(tmp: Path, plans: dict[Path, _Plan]) -> list[Script]:
        """Write each script's bytes to ``s<skill>/<n>-<stem><suffix>``; point the plans at the copies."""
        for i, plan in enumerate(plans.values()):
            (tmp / f"s{i}").mkdir()
            for j, script in enumerate(plan.scripts):
                stem = re.sub(r"[^A-Za-z0-9_-]", "_", posixpath.splitext(posixpath.basename(script.rel))[0])[:40]
                path = tmp / f"s{i}" / f"{j}-{stem}{STAGED_SUFFIX[script.language]}"
                path.write_bytes(script.data)
                plan.scripts[j] = Script(script.rel, script.language, script.data, str(path))
        return [script for plan in plans.values() for script in plan.scripts]

    @staticmethod
    def _run_tools(scripts: list[Script], cwd: Path, max_bytes: int) -> dict[str, _Outcome | ToolError]:
        """bandit (Python only) and semgrep (everything) run side by side: each mostly waits on startup."""
        python = [s for s in scripts if s.language == "python"]
        outcomes: dict[str, _Outcome | ToolError] = {}
        with ThreadPoolExecutor(max_workers=2, thread_name_prefix="skilleval-security") as pool:
            futures = {SEMGREP: pool.submit(run_semgrep, scripts, cwd, max_bytes)}
            if python:
                futures[BANDIT] = pool.submit(run_bandit, python, cwd)
            for spec, future in futures.items():
                try:
                    outcomes[spec.name] = future.result()
                except ToolError as exc:
                    outcomes[spec.name] = exc
                except (ValueError, TypeError, AttributeError, KeyError) as exc:  # JSON of an unexpected shape
                    outcomes[spec.name] = ToolError(spec, "bad-output", f"unexpected JSON: {type(exc).__name__}: {exc}")
        return outcomes

    def _result(self, plan: _Plan, outcomes: dict[str, _Outcome | ToolError]) -> CheckResult:
        counts = {"scripts": len(plan.scripts), **Counter(s.language for s in plan.scripts)}
        needed = (["bandit"] if counts.get("python") else []) + (["semgrep"] if plan.scripts else [])
        done = {name: o for name in needed if isinstance(o := outcomes.get(name), _Outcome)}
        failures = [o for name in needed if isinstance(o := outcomes.get(name), ToolError)]
        versions = {name: o.version for name, o in done.items()}
        versions.update({e.tool.name: "missing" if e.kind == "missing" else "failed" for e in failures})
        # Split the batch's answer back to this skill by the staged path of each of its scripts.
        problems = [p for o in done.values() for s in plan.scripts for p in o.problems.get(s.staged, [])]
        reason = "; ".join([str(e) for e in failures] + problems + [f"{n}: not run" for n in needed if n not in outcomes])
        if reason:
            return CheckResult.incomplete(self.name, reason, tier=self.tier, tools=versions, metrics=counts)
        found = {name: [f for s in plan.scripts for f in o.findings.get(s.staged, [])] for name, o in done.items()}
        return self.result(plan.findings + _dedupe(found.get("semgrep", []), found.get("bandit", [])),
                           metrics=counts, tools=versions)


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    return [SecurityCheck()]
