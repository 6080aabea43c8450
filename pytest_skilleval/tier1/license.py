"""``license``: what licence a skill ships under, where that is stated, and whether the statements
agree and allow reuse.

Evidence, strongest first: the frontmatter ``license`` (an SPDX expression, a known spelling, or a
sentence naming a file); licence files at the skill root (``LICENSE``/``LICENCE``/``COPYING``, with
an optional extension or ``-NAME`` suffix) identified by text fingerprints; ``SPDX-License-Identifier:``
in the first lines of the skill's text files.

Catalogs keep one licence at the repository root rather than one per skill, so a skill without a
declaration of its own inherits the licence files of the nearest parent folder that has any, up
to the collection root: the deepest ``--skills``/``skilleval_paths`` folder above the skill, else
the enclosing git work tree. With neither boundary nothing outside the skill is read, so a result
never depends on unrelated folders. A parent licence that agrees with the skill's own is listed as
a source only.

No evidence at all is LOW ``license.missing`` (MEDIUM under ``strict``) rather than INFO: without a
grant nobody may reuse the skill, which a reviewer should see, yet it says nothing about whether
the skill works (SkillEvaluator only warns here too).
"""

from __future__ import annotations

import functools
import os
import posixpath
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_skilleval import safefs
from pytest_skilleval.checks import Check, CheckContext, Reads
from pytest_skilleval.results import CheckResult, Finding, Severity
from pytest_skilleval.skill import Skill, parse_markdown
from pytest_skilleval.tier1 import rulefiles

RULES_FILE = Path(__file__).parent / "rules" / "licenses.yaml"
LICENSE_FILE = re.compile(r"(?i)^(?:licen[cs]e|copying|unlicense)(?:[-_.][\w.-]*)?$")
_SPDX = re.compile(r"SPDX-License-Identifier:\s*([\w.+\-() ]+?)\s*(?:-->|\*/|[\"'`]|\\n|$)")
_NAMED_FILE = re.compile(r"(?i)(?<![\w/.-])((?:[\w.-]+/)*(?:(?:licen[cs]e|copying)[\w.-]*|[\w.-]+\.(?:txt|md|rst)))(?![\w/-])")
#: What every _SPDX match holds.
_SPDX_TAG = "SPDX-License-Identifier:"
SPDX_HEADER_LINES = 50  # SPDX headers sit at the top; deeper mentions are prose about SPDX
MAX_PARENT_LEVELS = 8  # bound on the walk up to a git work tree
#: Under ``OR`` the licensee picks the most favourable alternative; this ranks them.
_RANK = {"permissive": 0, "unknown": 1, "copyleft": 2, "restricted": 3, "proprietary": 4}
_WHY = {"copyleft": "copyleft: derivatives must be shared under the same terms",
        "restricted": "restricts commercial use or derivatives", "proprietary": "proprietary: no grant to reuse it"}


@dataclass(frozen=True)
class Rules:
    category: dict[str, str]  # base id (see base_id) -> category
    canonical: dict[str, str]  # base id -> SPDX spelling
    aliases: dict[str, str]
    proprietary_phrases: tuple[str, ...]
    fingerprints: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]


@functools.cache
def load_rules() -> Rules:
    data = rulefiles.load(RULES_FILE)
    pairs = [(base_id(str(spdx)), cat, str(spdx)) for cat, ids in data["categories"].items() for spdx in ids]
    prints = tuple((str(fp["id"]), tuple(fp.get("all", ())), tuple(fp.get("none", ()))) for fp in data["fingerprints"])
    return Rules({b: c for b, c, _ in pairs}, {b: s for b, _, s in pairs},
                 {str(k): str(v) for k, v in data["aliases"].items()}, tuple(data["proprietary_phrases"]), prints)


def base_id(spdx: str) -> str:
    """Compare ids as SPDX does (case-insensitively), ignoring the only/or-later choice, which
    lives in a notice and not in the licence text a fingerprint sees."""
    low = spdx.strip().lower().rstrip("+")
    return low.removesuffix("-only").removesuffix("-or-later")


def spelled(spdx: str) -> str:
    """A known id in its SPDX spelling, keeping an only/or-later suffix (``gpl-3.0+`` -> ``GPL-3.0+``)."""
    base = base_id(spdx)
    known = load_rules().canonical.get(base)
    return known + spdx.strip()[len(base):] if known and spdx.strip().lower().startswith(base) else spdx.strip()


def category_of(spdx: str) -> str:
    return load_rules().category.get(base_id(spdx), "unknown")


def parse_expression(text: str) -> list[list[str]] | None:
    """An SPDX expression as alternatives (``OR``) of id lists (``AND``) in canonical spelling;
    None when the text is not an expression (a sentence, a file name)."""
    tokens = re.findall(r"\(|\)|[^\s()]+", text)
    pos = 0

    def take(word: str) -> bool:
        nonlocal pos
        if pos < len(tokens) and tokens[pos].upper() == word:
            pos += 1
            return True
        return False

    def atom() -> list[list[str]]:
        nonlocal pos
        if take("("):
            inner = either()
            if not take(")"):
                raise ValueError("unclosed parenthesis")
            return inner
        tok = tokens[pos] if pos < len(tokens) else ""
        if not re.fullmatch(r"[A-Za-z0-9][\w.+:-]*", tok) or tok.upper() in ("AND", "OR", "WITH"):
            raise ValueError(f"not an id: {tok!r}")
        pos += 1
        if take("WITH"):  # an exception only widens the grant; the licence is what we judge
            pos += 1
        return [[spelled(tok)]]

    def both() -> list[list[str]]:
        alts = atom()
        while take("AND"):
            right = atom()
            alts = [a + b for a in alts for b in right][:64]  # bound the blow-up of nested ORs
        return alts

    def either() -> list[list[str]]:
        alts = both()
        while take("OR"):
            alts += both()
        return alts

    try:
        result = either()
    except ValueError:
        return None
    return result if pos == len(tokens) else None


def identify_text(text: str) -> str | None:
    """The licence id of a licence file's text, ``Proprietary``, or None when unrecognised.
    An open licence wins over proprietary words: "All rights reserved." heads many Apache files."""
    rules = load_rules()
    flat = " ".join(text.lower().split())
    for spdx, required, excluded in rules.fingerprints:
        if all(p in flat for p in required) and not any(p in flat for p in excluded):
            return spdx
    return "Proprietary" if any(p in flat for p in rules.proprietary_phrases) else None


def declared_ids(text: str) -> list[list[str]]:
    """Licence ids in a ``license:`` value: an expression, a known spelling, or ids in a sentence."""
    rules = load_rules()
    alias = rules.aliases.get(text.lower().rstrip(". "))
    expr = [[alias]] if alias else parse_expression(text)
    if expr or not text:
        return expr or []
    low, found = text.lower(), set()
    for key, spdx in [*rules.canonical.items(), *rules.aliases.items()]:
        if re.search(rf"(?<![\w.-]){re.escape(key)}(?![\w-])", low):
            found.add(spdx)
    if any(p in low for p in rules.proprietary_phrases):
        found.add("Proprietary")
    return [sorted(found)] if found else []


@dataclass(frozen=True)
class Evidence:
    source: str  # as shown on the card: "frontmatter", "LICENSE.txt", "../LICENSE", "SPDX header"
    file: str  # relative to the skill root ("../LICENSE" for an inherited file)
    line: int | None
    alternatives: list[list[str]]  # [] when the statement names no licence we can tell
    excerpt: str

    def ids(self) -> set[str]:
        return {spdx for alt in self.alternatives for spdx in alt}

    def bases(self) -> set[str]:
        return {base_id(spdx) for spdx in self.ids()}


class LicenseCheck(Check):
    name = "license"
    reads = Reads()  # SPDX headers in any text file
    description = "licence evidence: frontmatter, LICENSE files, SPDX headers; conflicts, copyleft, proprietary"

    def run(self, skill: Skill, ctx: CheckContext) -> CheckResult:
        strict = ctx.settings.profile == "strict"
        findings: list[Finding] = []
        declared, named = _frontmatter(skill, findings)
        files = [_file_evidence(rel, text) for rel in _own_license_files(skill, named)
                 if (text := skill.text(rel)) is not None]  # unreadable files are the ``files`` check's findings
        spdx = _spdx_headers(skill)
        own = ([declared] if declared and declared.alternatives else []) + files
        parent = _parent_files(skill, ctx.settings.skill_paths)
        governing = own or parent
        for ev in files + (parent if not own else []) + spdx:
            if not ev.alternatives:
                findings.append(_finding("license.unknown-id", Severity.LOW, ev, f"the licence in {ev.source} is not one we "
                                         "recognise", "use an unmodified licence text, or review its terms by hand"))
        if declared and declared.alternatives and "unknown" not in {category_of(i) for i in declared.ids()}:
            for ev in files:
                if ev.alternatives and not ev.bases() & declared.bases():
                    expr = " OR ".join(" AND ".join(alt) for alt in declared.alternatives)
                    findings.append(_finding(
                        "license.conflict", Severity.HIGH, declared, f"frontmatter declares {expr} but {ev.source} is "
                        f"{', '.join(sorted(ev.ids()))}", "state the same licence in the frontmatter and the licence file",
                        evidence=f"{declared.file}:{declared.line}: {declared.excerpt} | {ev.file}:{ev.line}: {ev.excerpt}"))
        findings += _restrictions(governing + spdx, strict)
        if not governing and not spdx:
            findings.append(Finding(rule="license.missing", severity=Severity.MEDIUM if strict else Severity.LOW,
                                    file=skill.manifest or "SKILL.md",
                                    message="no licence evidence: no `license` field, no LICENSE file, no SPDX headers",
                                    suggestion="add `license: <SPDX id>` to the frontmatter and ship the licence text"))
        agreeing = [ev for ev in parent if own and ev.bases() & {b for e in own for b in e.bases()}]
        return self.result(findings, metrics=_metrics(governing + agreeing + spdx, declared, inherited=not own and bool(parent)))


def _finding(rule: str, severity: Severity, ev: Evidence, message: str, suggestion: str, evidence: str | None = None) -> Finding:
    return Finding(rule=rule, severity=severity, file=ev.file, line=ev.line, message=message, suggestion=suggestion,
                   evidence=evidence if evidence is not None else ev.excerpt)


def _frontmatter(skill: Skill, findings: list[Finding]) -> tuple[Evidence | None, str | None]:
    """The declaration, and the file it names if any (``Complete terms in LICENSE.txt``)."""
    meta: Any = skill.meta
    key, value = "license", meta.get("license")
    if value is None and isinstance(meta.get("metadata"), dict):
        key, value = "metadata", meta["metadata"].get("license")
    if value is None:
        return None, None
    text = value.strip() if isinstance(value, str) else str(value)
    ev = Evidence("frontmatter", skill.manifest or "SKILL.md", skill.key_line(key), [], f"license: {text[:120]}")
    if not isinstance(value, str):
        findings.append(_finding("license.unknown-id", Severity.LOW, ev, f"`license` is a {type(value).__name__}, "
                                 "not an SPDX expression", "use an SPDX id such as MIT or Apache-2.0"))
        return ev, None
    named = _NAMED_FILE.fullmatch(text) or (None if parse_expression(text) else _NAMED_FILE.search(text))
    ev = Evidence(ev.source, ev.file, ev.line, [] if named and named.group(0) == text else declared_ids(text), ev.excerpt)
    for spdx in sorted(i for i in ev.ids() if category_of(i) == "unknown"):
        findings.append(_finding("license.unknown-id", Severity.LOW, ev, f"`license` names {spdx!r}, which is not a "
                                 "known SPDX id", "use an id from https://spdx.org/licenses/"))
    rel = posixpath.normpath(named.group(1).replace("\\", "/")) if named else None
    if rel is not None and not safefs.is_within(skill.root, rel):
        findings.append(_finding("license.file-missing", Severity.MEDIUM, ev, f"`license` points to {rel}, outside the "
                                 "skill; it is not read", "ship the licence text inside the skill folder"))
        return ev, None
    if rel is not None and not skill.exists(rel):
        findings.append(_finding("license.file-missing", Severity.MEDIUM, ev, f"`license` names {rel}, which is not in "
                                 "the skill", f"add {rel}, or name the file that holds the licence"))
        return ev, None
    if rel is None and not ev.alternatives:
        findings.append(_finding("license.unknown-id", Severity.LOW, ev, "`license` is neither an SPDX expression nor a "
                                 "licence file name", "use an SPDX id such as MIT or Apache-2.0"))
    return ev, rel


def _own_license_files(skill: Skill, named: str | None) -> list[str]:
    names = {e.rel for e in skill.files() if "/" not in e.rel and LICENSE_FILE.match(e.rel)}
    return sorted(names | ({named} if named else set()))


def _file_evidence(rel: str, text: str) -> Evidence:
    spdx = identify_text(text)
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return Evidence(rel, rel, 1, [[spdx]] if spdx else [], first[:120])


def _spdx_headers(skill: Skill) -> list[Evidence]:
    out = []
    for rel, text in skill.text_files():
        if _SPDX_TAG not in text:
            continue  # every match holds it: the lines of a file without it are not split, nor searched
        lines = text.splitlines()
        start = skill.body_start_line - 1 if rel == skill.manifest else 0
        for n in range(start, min(len(lines), start + SPDX_HEADER_LINES)):
            m = _SPDX.search(lines[n])
            # a header inside a Markdown code fence is an example of one, not a statement
            if m and not (rel.lower().endswith((".md", ".markdown", ".mdc")) and n + 1 in _fenced_lines(text)):
                out.append(Evidence("SPDX header", rel, n + 1, parse_expression(m.group(1)) or [], m.group(0)[:120]))
                break
    return out


@functools.lru_cache(maxsize=8)
def _fenced_lines(text: str) -> frozenset[int]:
    return frozenset(n for tok in parse_markdown(text) if tok.type in ("fence", "code_block") and tok.map
                     for n in range(tok.map[0] + 1, tok.map[1] + 1))


def _parent_files(skill: Skill, skill_paths: tuple[Path, ...]) -> list[Evidence]:
    """Licence files of the nearest parent folder that has any, up to the collection root."""
    root = skill.root.absolute()
    above = [b for b in skill_paths if b in root.parents]
    top = max(above, key=lambda b: len(b.parts)) if above else next(
        (up for up in list(root.parents)[:MAX_PARENT_LEVELS] if os.path.lexists(up / ".git")), None)  # a stat, not a read
    here, hops = root.parent, "../"
    while top is not None:
        found = []
        for name in _licence_names(here):
            try:
                st = os.lstat(here / name)
            except OSError:
                continue
            evidence = _licence_evidence(hops + name, str(here), name, (st.st_ino, st.st_mtime_ns, st.st_size), skill.limits)
            if evidence is not None:
                found.append(evidence)
        if found or here == top or here == here.parent:
            return found
        here, hops = here.parent, hops + "../"
    return []


# Every skill of a catalog asks about the same parent folders. Listing and reading them once per
# skill made the check quadratic in the catalog's size, so a folder's listing is kept while its
# signature (inode, mtime) is unchanged, and a licence file's evidence while its own is.
def _licence_names(folder: Path) -> tuple[str, ...]:
    """Names of the licence files directly in ``folder`` (regular files, never a link)."""
    try:
        st = os.stat(folder)
        return _listed_licence_names(str(folder), (st.st_ino, st.st_mtime_ns))
    except OSError:
        return ()


@functools.lru_cache(maxsize=4096)
def _listed_licence_names(folder: str, signature: tuple[int, int]) -> tuple[str, ...]:
    with os.scandir(folder) as it:  # only names are listed here; contents go through safefs like every other read
        return tuple(sorted(d.name for d in it if d.is_file(follow_symlinks=False) and LICENSE_FILE.match(d.name)))


@functools.lru_cache(maxsize=4096)
def _licence_evidence(rel: str, folder: str, name: str, signature: tuple[int, int, int], limits: safefs.Limits) -> Evidence | None:
    try:
        return _file_evidence(rel, safefs.read_text(Path(folder), name, limits))
    except safefs.ReadError:
        return None


def _restrictions(evidence: list[Evidence], strict: bool) -> list[Finding]:
    """One finding per licence that limits reuse, where it is first stated; an expression is only
    as restrictive as its best alternative (``MIT OR GPL-3.0`` is not copyleft). Under ``strict``
    these are CRITICAL, matching SkillEvaluator's block-list under its external profile."""
    out, seen = [], set()
    for ev in evidence:
        best = min(ev.alternatives, key=lambda alt: max(_RANK[category_of(i)] for i in alt), default=[])
        for spdx in best:
            cat = category_of(spdx)
            if cat in _WHY and (cat, base_id(spdx)) not in seen:
                seen.add((cat, base_id(spdx)))
                severity = Severity.CRITICAL if strict else Severity.HIGH if cat == "proprietary" else Severity.MEDIUM
                out.append(_finding(f"license.{cat}", severity, ev, f"{spdx} ({ev.source}) is {_WHY[cat]}",
                                    "relicense under a permissive licence, or confirm the reuse terms with the owner"))
    return out


def _metrics(evidence: list[Evidence], declared: Evidence | None, inherited: bool) -> dict[str, Any]:
    """``license`` is the card line, e.g. ``MIT (frontmatter + LICENSE.txt)``."""
    sources: dict[str, list[str]] = {}
    for ev in evidence:
        for spdx in sorted(ev.ids()):
            if ev.source not in sources.setdefault(spdx, []):
                sources[spdx].append(ev.source)
    ids = sorted(sources)
    head = declared.excerpt.removeprefix("license: ") if declared and declared.alternatives else ", ".join(ids)
    labels = " + ".join(dict.fromkeys(src for spdx in ids for src in sources[spdx]))
    return {"license": f"{head} ({labels})" if ids else None, "license_ids": ids, "license_sources": sources,
            "license_inherited": inherited}


@pytest.hookimpl
def pytest_skilleval_checks(config: pytest.Config) -> list[Check]:
    return [LicenseCheck()]
