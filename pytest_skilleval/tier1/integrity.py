"""``integrity``: everything the skill points at is really in the skill.

Checked: relative links and images (Markdown and HTML ``src``/``href``) in SKILL.md and every
other Markdown file, resolved against the linking file's folder as a renderer would; and the
skill's own files named in code (``python scripts/x.py``, ``references/api.md``) in fences and
code spans. Code is where an agent copies commands from, so a missing script there fails a run.

Only paths that clearly mean the skill are checked in code: those under the spec's ``scripts/``,
``references/`` and ``assets/`` folders or under a skill-root variable (``${CLAUDE_SKILL_DIR}/``,
``{baseDir}/``). ``python app.py`` or ``src/main.py`` name the user's project, and placeholders
(``<name>``, ``{x}``, globs, ``...``) name nothing yet; both are left alone. A missing file under
``scripts/`` or ``assets/`` when the skill ships no such folder at all is MEDIUM, not HIGH: that
is as often the user's repository (``python scripts/train.py``) as a folder left out. Links
leaving the skill are MEDIUM; ``BENCHMARK.md`` and ``skill-card.md`` (catalog reports about the
skill, written against the catalog repository) are not checked, as in SkillEvaluator.

Test files inside the skill are counted from the inventory (names only): nothing of the skill is
imported or run, so ``tests_executed`` is always 0. ``requirements*.txt`` lines without an exact
pin are LOW: the skill then runs against whatever version is newest that day.
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from urllib.parse import unquote

import pytest
from markdown_it.token import Token

from pytest_skilleval.checks import Check, CheckContext, Reads
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.safefs import EntryKind
from pytest_skilleval.skill import Skill
from pytest_skilleval.tier1._syntax import parse_problems

MARKDOWN = frozenset({".md", ".markdown", ".mdc"})
RESOURCE_DIRS = ("scripts", "references", "assets")
#: ``scheme:`` of a URL; two letters at least, so ``C:\x`` stays a (Windows) path.
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]+:")
_HTML_REF = re.compile(r"""\b(?:src|href)\s*=\s*["']([^"']+)["']""", re.IGNORECASE)
_SKILL_VAR = r"(?:\$\{?(?:[A-Z]+_)?SKILL_(?:DIR|ROOT|PATH|HOME)\}?|\{baseDir\}|\$\{?CLAUDE_PLUGIN_ROOT\}?)"
_SKILL_VAR_PREFIX = re.compile(_SKILL_VAR + r"[/\\]")
#: A path token in code that names the skill's own files; the lookbehind keeps out URLs
#: (``https://x/scripts/a``), other folders' subpaths (``src/scripts/a``) and home/abs paths.
_CODE_PATH = re.compile(
    rf"(?:(?<![\w/\\.~$@:%-])(?:\./)?(?=(?:{'|'.join(RESOURCE_DIRS)})[/\\])|{_SKILL_VAR}[/\\])([^\s'\"`()|;,=]+)")
#: What every _CODE_PATH match holds (a resource folder's name or a skill-root variable's): code without
#: any of them is not searched, and most code lines and spans have none.
_CODE_PATH_NEEDS = (*RESOURCE_DIRS, "SKILL_", "baseDir", "CLAUDE_PLUGIN_ROOT")
#: Any of _CODE_PATH_NEEDS, in one search (a third faster than six substring tests over the ~117,000 code
#: spans, code blocks and their lines of the corpus).
_CODE_PATH_NEED = re.compile("|".join(map(re.escape, _CODE_PATH_NEEDS)))
_PLACEHOLDER = re.compile(r"[<>{}*?\[\]$%…]|\.\.\.|\bX{3,}\b|\b(?:your|my)[-_]|\b(?:file-?name|foo|bar|baz)\b|^[A-Z0-9]+_[A-Z0-9_]+$")
#: A file name with an extension: extensionless code mentions are mostly folders of the user's
#: project ("scripts under `scripts/azd`"), which the skill cannot be expected to ship.
_FILE_NAME = re.compile(r"[^/]\.[A-Za-z0-9]{1,8}$")
_LINE_SUFFIX = re.compile(r":\d+(?:[-:]\d+)?$")  # "references/x.md:30" cites a line of the file
#: Catalog reports about the skill, not read by the agent; SkillEvaluator skips them too.
REPORT_FILES = frozenset({"benchmark.md", "skill-card.md"})
_TRAILING = ".,:;!"
TEST_NAME = re.compile(r"^(?:test_.*\.py|.*_test\.py|.*\.(?:test|spec)\.[cm]?[jt]sx?)$")
CODE_SUFFIXES = frozenset({".py", ".sh", ".bash", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".rb", ".go", ".ps1", ".r"})
_REQUIREMENTS = re.compile(r"^requirements[\w.-]*\.txt$")
#: Files that are empty on purpose (a package marker, a placeholder that keeps a folder in git).
EMPTY_BY_DESIGN = frozenset({"__init__.py", ".gitkeep", ".keep", "py.typed"})


@dataclass(frozen=True)
class Ref:
    """A reference to a file of the skill, as found in one Markdown file."""

    target: str
    file: str
    line: int
    code: bool  # found in a code span or fence rather than in a link


class IntegrityCheck(Check):
    name = "integrity"
    reads = Reads(MARKDOWN)  # the links it resolves
    description = "links and referenced scripts exist inside the skill; tests counted, never run; pinned requirements"

    def run(self, skill: Skill, ctx: CheckContext) -> CheckResult:
        findings: list[Finding] = []
        refs = list(self._refs(skill))
        # one finding per file and target: a link repeated on 30 lines is one fix, not 30
        lines: dict[tuple[str, str, bool], list[int]] = {}
        for ref in refs:
            lines.setdefault((ref.file, ref.target, ref.code), []).append(ref.line)
        for (file, target, code), where in lines.items():
            more = sorted(set(where))[1:]
            for f in _check_ref(skill, Ref(target, file, min(where), code)):
                extra = f" (also line{'s' if len(more) > 1 else ''} {', '.join(map(str, more[:10]))})" if more else ""
                findings.append(f.model_copy(update={"message": f.message + extra}))
        findings += _requirements(skill)
        syntax, parsed = parse_problems(skill)
        findings += syntax + _no_shebang(skill)
        tests = sorted(e.rel for e in skill.files() if _is_test(e.rel))
        return self.result(findings, metrics={
            "links_checked": sum(not r.code for r in refs), "code_refs_checked": sum(r.code for r in refs),
            "tests_found": len(tests), "tests_executed": 0, "test_files": tests[:20], "files_parsed": parsed})

    def _refs(self, skill: Skill) -> Iterator[Ref]:
        documents: list[tuple[str, list[Token]]] = []
        if skill.manifest and skill.manifest_text is not None:
            documents.append((skill.manifest, skill.body_tokens))
        for rel, _text in skill.text_files(MARKDOWN):
            if rel != skill.manifest and rel.lower() not in REPORT_FILES:
                documents.append((rel, skill.markdown(rel) or []))
        for rel, tokens in documents:
            yield from _token_refs(rel, tokens)


def _token_refs(rel: str, tokens: list[Token]) -> list[Ref]:
    """The references of one document, from one pass over its tokens: its links and images (as
    :func:`skill.markdown_links` finds them), then ``src``/``href`` in raw HTML, then file paths in code."""
    links: list[Ref] = []
    html: list[Ref] = []
    code: list[Ref] = []
    for tok in tokens:
        kind = tok.type
        if kind == "inline":
            children = tok.children
            if not children:
                continue
            line = (tok.map[0] + 1) if tok.map else 0
            for child in children:
                child_kind = child.type
                if child_kind == "text":  # the most common child, and none of the kinds below
                    continue
                if child_kind == "softbreak" or child_kind == "hardbreak":
                    line += 1
                elif child_kind == "code_inline":
                    code.extend(Ref(path, rel, line, code=True) for path in _code_paths(child.content))
                elif child_kind == "link_open":
                    links.append(Ref(str(child.attrs.get("href", "")), rel, line, code=False))
                elif child_kind == "image":
                    links.append(Ref(str(child.attrs.get("src", "")), rel, line, code=False))
                elif child_kind == "html_inline":
                    html.extend(Ref(m.group(1), rel, line, code=False) for m in _HTML_REF.finditer(child.content))
        elif kind == "html_block":
            if tok.map:
                for offset, text in enumerate(tok.content.splitlines()):
                    html.extend(Ref(m.group(1), rel, tok.map[0] + 1 + offset, code=False) for m in _HTML_REF.finditer(text))
        elif kind == "fence" or kind == "code_block":
            if tok.map and _may_hold_code_path(tok.content):
                first = tok.map[0] + (2 if kind == "fence" else 1)
                for offset, text in enumerate(tok.content.splitlines()):
                    code.extend(Ref(path, rel, first + offset, code=True) for path in _code_paths(text))
    return links + html + code


def _may_hold_code_path(text: str) -> bool:
    return _CODE_PATH_NEED.search(text) is not None


def _code_paths(text: str) -> Iterator[str]:
    if not _may_hold_code_path(text):
        return
    for m in _CODE_PATH.finditer(text):
        path = _LINE_SUFFIX.sub("", m.group(1).rstrip(_TRAILING))
        if _FILE_NAME.search(path) and not _PLACEHOLDER.search(path) and "://" not in path:
            yield m.group(0)[: m.start(1) - m.start(0)] + path  # keeps a skill-root variable in front


def _check_ref(skill: Skill, ref: Ref) -> list[Finding]:
    target = ref.target.strip().strip("<>")
    if not target or target.startswith(("#", "//")) or _SCHEME.match(target):
        return []  # same-page anchors and URLs are not files of the skill
    target = unquote(re.split(r"[#?]", target, maxsplit=1)[0])
    anchored = _SKILL_VAR_PREFIX.match(target) if ref.code else None
    target = target[anchored.end():] if anchored else target
    out: list[Finding] = []
    if "\\" in target and not ref.code:
        out.append(Finding(rule="integrity.backslash-path", severity=Severity.LOW, file=ref.file, line=ref.line,
                           message=f"link {ref.target} uses Windows backslashes; it breaks on Linux and macOS",
                           suggestion=f"write {target.replace(chr(92), '/')}"))
    target = target.replace("\\", "/")
    if not target or (ref.code is False and _PLACEHOLDER.search(target.rstrip("/"))):
        return out
    what = "command" if ref.code else "link"
    if target.startswith(("/", "~")) or re.match(r"^[A-Za-z]:/", target):
        return out + [_outside(ref, f"{what} {ref.target} is an absolute path, outside the skill")]
    if ref.code:  # a command runs from the skill root; a nested README may mean its own folder
        candidates = [posixpath.normpath(target), posixpath.normpath(posixpath.join(posixpath.dirname(ref.file), target))]
    else:  # a link resolves from its file's folder, as renderers do
        candidates = [posixpath.normpath(posixpath.join(posixpath.dirname(ref.file), target))]
    resolved = candidates[0]
    if resolved == ".." or resolved.startswith("../"):
        shown = f" ({resolved})" if resolved != target else ""
        return out + [_outside(ref, f"{what} {ref.target} leaves the skill folder{shown}")]
    found = next((c for c in candidates if skill.exists(c)), None)
    if found is not None:
        entry = skill.entry(found)
        if entry is not None and entry.kind is EntryKind.FILE and entry.size == 0 and entry.name not in EMPTY_BY_DESIGN:
            out.append(Finding(rule="integrity.empty-file", severity=Severity.HIGH, file=ref.file, line=ref.line,
                               message=f"{what} {ref.target} points at {found}, which is empty: the agent gets nothing",
                               suggestion=f"fill {found} or drop the reference", evidence=ref.target[:120]))
        return out
    if resolved == "." or skill.inventory.truncated:
        return out  # a truncated inventory cannot prove absence; ``files`` reports the truncation
    near = [e.rel for e in skill.inventory.entries if e.rel.lower() == resolved.lower()]
    hint = f"the skill has {near[0]}, which differs in case" if near else f"add {resolved} or fix the reference"
    if not ref.code:
        return out + [_missing("integrity.missing-file", Severity.HIGH, ref, f"links to {resolved}", hint)]
    top = resolved.split("/", 1)[0]
    if top in ("scripts", "assets") and not skill.exists(top) and not anchored:
        # No such folder at all: as likely the user's project ("python scripts/train.py") as a
        # folder the author forgot to ship, so it is reported, but below the default gate.
        return out + [_missing("integrity.missing-script", Severity.MEDIUM, ref, f"code refers to {resolved}",
                               f"ship {top}/ with the skill, or say that {resolved} is in the user's project")]
    return out + [_missing("integrity.missing-script", Severity.HIGH, ref, f"code refers to {resolved}", hint)]


def _missing(rule: str, severity: Severity, ref: Ref, what: str, hint: str) -> Finding:
    return Finding(rule=rule, severity=severity, file=ref.file, line=ref.line, message=f"{what}, which is not in the skill",
                   suggestion=hint, evidence=ref.target[:120])


def _outside(ref: Ref, message: str) -> Finding:
    return Finding(rule="integrity.link-outside", severity=Severity.MEDIUM, file=ref.file, line=ref.line,
                   message=message + "; it will not be there when the skill is installed elsewhere",
                   suggestion="copy what it points to into the skill, or link a URL", evidence=ref.target[:120])


def _no_shebang(skill: Skill) -> list[Finding]:
    """Executable text files without a ``#!`` line: run directly (``./scripts/x``), the shell guesses
    the interpreter and runs a Python or Node script as shell commands."""
    out = []
    for entry in skill.files():
        if entry.nlink > 1 or entry.size == 0 or entry.size > skill.limits.max_file_bytes:
            continue
        try:  # the mode bits only: the content is read through safefs below
            mode = os.lstat(skill.root / entry.rel).st_mode
        except OSError:
            continue
        if not (stat.S_ISREG(mode) and mode & 0o111):
            continue
        text = skill.text(entry.rel)
        if text is not None and not text.startswith("#!"):
            out.append(Finding(rule="integrity.no-shebang", severity=Severity.MEDIUM, file=entry.rel, line=1,
                               message=f"{entry.rel} is executable but has no '#!' line: run as ./{entry.rel} the shell "
                                       "guesses the interpreter",
                               suggestion="start it with e.g. '#!/usr/bin/env python3' or '#!/usr/bin/env bash'"))
    return out


def _is_test(rel: str) -> bool:
    parts = rel.split("/")
    if TEST_NAME.match(parts[-1]):
        return True
    return any(p in ("tests", "test") for p in parts[:-1]) and posixpath.splitext(rel)[1].lower() in CODE_SUFFIXES


def _requirements(skill: Skill) -> list[Finding]:
    out = []
    for entry in skill.files():
        if not _REQUIREMENTS.match(entry.name):
            continue
        text = skill.text(entry.rel)
        for n, raw in enumerate((text or "").splitlines(), start=1):
            spec = raw.split(" #", 1)[0].split(";", 1)[0].strip().rstrip("\\").strip()
            if not spec or spec.startswith(("#", "-")) or "://" in spec or "@" in spec:
                continue  # comments, pip options (-r, -e, --hash) and direct URL references
            if "==" not in spec or "*" in spec:  # "==1.*" still floats
                package = re.split(r"[<>=~!\[ ]", spec, maxsplit=1)[0]
                out.append(Finding(rule="integrity.unpinned-requirement", severity=Severity.LOW, file=entry.rel, line=n,
                                   message=f"requirement {spec!r} is not pinned to one version",
                                   suggestion=f"pin it, e.g. {package}==<tested version>"))
    return out


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    return [IntegrityCheck()]
