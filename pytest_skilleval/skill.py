"""The Skill model: one skill folder, read once through :mod:`safefs`, shared by every check.

Loading never raises on bad input. A missing or malformed manifest, an unreadable file or a link
that leaves the skill all end up as findings that the ``schema`` and ``files`` checks report.
"""

from __future__ import annotations

import functools
import hashlib
import posixpath
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from markdown_it import MarkdownIt
from markdown_it.token import Token

from pytest_skilleval import frontmatter, mdfast, safefs
from pytest_skilleval.results import Finding, Severity

MANIFEST = "SKILL.md"
#: Folders a skill keeps for its evaluation, not for the agent at run time.
EVAL_DIRS = frozenset({"evals", ".evals", "eval", "results", ".results"})


#: Table cells (``|``) a document may have parsed as tables. A cell costs ~3 tokens and ~1 KB, so a
#: 5,000 × 50 table took 10 s and 400 MB; past this bound (27× the most in a 754-skill corpus) the
#: document is parsed without the table rule: rows read as paragraphs, their links and code still seen.
MAX_TABLE_CELLS = 20_000
#: Characters of one document handed to the Markdown parser. Some inline shapes cost ~250 bytes of
#: tokens and ~100 µs per character (half a megabyte of ``*a`` took 180 MB and 8 s); the largest
#: SKILL.md in a 754-skill corpus is 294 KB. A longer SKILL.md is a ``schema.body-too-long`` finding.
MAX_MARKDOWN_CHARS = 320_000


@functools.cache
def _markdown(tables: bool = True) -> MarkdownIt:
    md = MarkdownIt("commonmark")
    return md.enable("table") if tables else md


@dataclass(frozen=True)
class Link:
    target: str
    line: int  # 1-based line in the file
    image: bool = False


@dataclass
class Skill:
    """A skill folder. ``key`` is its stable report id (posix path below the collection root)."""

    root: Path
    key: str
    limits: safefs.Limits = field(default_factory=safefs.Limits)
    inventory: safefs.Inventory = field(init=False)
    manifest: str | None = field(init=False, default=None)
    manifest_text: str | None = field(init=False, default=None)
    frontmatter: frontmatter.Frontmatter = field(init=False)
    load_findings: list[Finding] = field(init=False, default_factory=list)
    _texts: dict[str, str | None] = field(init=False, default_factory=dict, repr=False)
    _read_findings: dict[str, Finding] = field(init=False, default_factory=dict, repr=False)
    _markdown_tokens: dict[str, list[Token]] = field(init=False, default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.inventory = safefs.take_inventory(self.root, self.limits)
        names = {e.rel for e in self.inventory.entries}
        if MANIFEST in names:
            self.manifest = MANIFEST
        elif "skill.md" in names:
            self.manifest = "skill.md"
            self.load_findings.append(Finding(rule="schema.manifest-case", severity=Severity.HIGH, file="skill.md",
                                              message="manifest is named skill.md; the spec requires SKILL.md",
                                              suggestion="rename skill.md to SKILL.md"))
        if self.manifest is None:
            self.load_findings.append(Finding(rule="schema.manifest-missing", severity=Severity.HIGH, file=MANIFEST,
                                              message="no SKILL.md in the skill folder"))
            self.frontmatter = frontmatter.Frontmatter()
            return
        self.manifest_text = self.text(self.manifest)
        if self.manifest_text is None:
            problem = self._read_findings.get(self.manifest)
            why = problem.message if problem else "unreadable"
            self.load_findings.append(Finding(rule="schema.manifest-unreadable", severity=Severity.HIGH,
                                              file=self.manifest, line=problem.line if problem else None,
                                              message=f"SKILL.md cannot be read: {why}"))
            self.frontmatter = frontmatter.Frontmatter()
            return
        self.frontmatter = frontmatter.parse(self.manifest_text, self.manifest)
        if len(self.frontmatter.body) > MAX_MARKDOWN_CHARS:
            self.load_findings.append(Finding(
                rule="schema.body-too-long", severity=Severity.HIGH, file=self.manifest,
                message=f"the body is {len(self.frontmatter.body)} characters; Markdown checks read only its first {MAX_MARKDOWN_CHARS}",
                suggestion="move reference material to references/ files the agent loads when needed"))

    # -- identity -------------------------------------------------------------------------------
    @property
    def folder_name(self) -> str:
        return self.root.name

    @property
    def meta(self) -> dict[str, Any]:
        """The frontmatter mapping, or ``{}`` when it is missing or malformed."""
        return self.frontmatter.data or {}

    @property
    def name(self) -> str:
        value = self.meta.get("name")
        return value if isinstance(value, str) and value else self.folder_name

    @property
    def description(self) -> str:
        value = self.meta.get("description")
        return value if isinstance(value, str) else ""

    @property
    def body(self) -> str:
        return self.frontmatter.body

    @property
    def body_start_line(self) -> int:
        return self.frontmatter.body_start_line

    def key_line(self, key: str) -> int | None:
        return self.frontmatter.key_lines.get(key)

    # -- files ------------------------------------------------------------------------------------
    def text(self, rel: str) -> str | None:
        """The file's text, or None when it cannot be read safely (see :meth:`read_problem`)."""
        if rel not in self._texts:
            try:
                self._texts[rel] = safefs.read_text(self.root, rel, self.limits)
            except safefs.ReadError as exc:
                self._texts[rel] = None
                self._read_findings[rel] = exc.finding
        return self._texts[rel]

    def read_problem(self, rel: str) -> Finding | None:
        self.text(rel)
        return self._read_findings.get(rel)

    def files(self, *, include_eval_dirs: bool = False) -> list[safefs.Entry]:
        out = []
        for e in self.inventory.files():
            top = e.rel.split("/", 1)[0]
            if not include_eval_dirs and "/" in e.rel and top in EVAL_DIRS:
                continue
            out.append(e)
        return out

    def text_files(self, suffixes: frozenset[str] | None = None, *, include_eval_dirs: bool = False) -> Iterator[tuple[str, str]]:
        """(rel, text) of each readable text file, sorted; unreadable files are skipped here and
        reported by the ``files`` check."""
        for e in self.files(include_eval_dirs=include_eval_dirs):
            if not _reads(e, suffixes):
                continue
            if e.nlink > 1 or e.size > self.limits.max_file_bytes:
                continue
            content = self.text(e.rel)
            if content is not None:
                yield e.rel, content

    def unread_files(self, suffixes: frozenset[str] | None = None, *, include_eval_dirs: bool = False,
                     accepts: Callable[[str], bool] | None = None) -> list[tuple[str, str]]:
        """(rel, why and the fix) of each file :meth:`text_files` with the same arguments would have yielded
        had it been readable (over the size cap, hard-linked, not UTF-8, cannot be opened), and of each folder
        whose files were never listed: what a check that reads those files did not see. A file whose suffix
        does not say text (an image) is never read as text, so it is never here. ``accepts``: of those files,
        the paths the check reads (a folder never listed is named whatever it says: what it holds is unknown)."""
        out = []
        for e in self.files(include_eval_dirs=include_eval_dirs):
            if not _reads(e, suffixes) or (accepts is not None and not accepts(e.rel)):
                continue
            if e.nlink > 1:
                out.append((e.rel, "hard-linked, so never read (it may be another file's second name); copy the file instead"))
            elif e.size > self.limits.max_file_bytes:
                out.append((e.rel, f"{e.size} bytes, over the {self.limits.max_file_bytes}-byte cap; "
                                   "raise --skilleval-max-file-size or split the file"))
            elif (problem := self.read_problem(e.rel)) is not None:
                out.append((e.rel, problem.message + (f"; {problem.suggestion}" if problem.suggestion else "")))
        for f in self.inventory.findings:  # entries the inventory never listed: what they hold is unknown
            rel = f.file or "."
            if not include_eval_dirs and "/" in rel and rel.split("/", 1)[0] in EVAL_DIRS:
                continue
            if f.rule in _UNLISTED_FOLDER:
                out.append((rel, f"{f.message}; its files were not read"))
            elif (f.rule == "files.unreadable" and _reads(safefs.Entry(rel, safefs.EntryKind.FILE), suffixes)
                  and (accepts is None or accepts(rel))):
                out.append((rel, f.message))
        return out

    @functools.cached_property
    def _entry_index(self) -> dict[str, safefs.Entry]:
        return {e.rel: e for e in self.inventory.entries}

    def exists(self, rel: str) -> bool:
        return posixpath.normpath(rel) in self._entry_index

    @functools.cached_property
    def content_digest(self) -> str:
        """``sha256:`` over every entry's path, kind, link target and bytes: the skill's revision."""
        h = hashlib.sha256()
        for entry in self.inventory.entries:
            # surrogatepass: never raise on a name, whatever the inventory let through
            h.update(f"\0{entry.rel}\0{entry.kind.value}\0{entry.link_target or ''}\0".encode("utf-8", "surrogatepass"))
            if entry.kind is safefs.EntryKind.FILE and entry.nlink == 1 and entry.size <= self.limits.max_file_bytes:
                try:
                    h.update(hashlib.sha256(safefs.read_bytes(self.root, entry.rel, self.limits)).digest())
                except safefs.ReadError:
                    h.update(b"unreadable")
        return "sha256:" + h.hexdigest()

    def entry(self, rel: str) -> safefs.Entry | None:
        return self._entry_index.get(posixpath.normpath(rel))

    # -- markdown ---------------------------------------------------------------------------------
    @functools.cached_property
    def body_tokens(self) -> list[Token]:
        """markdown-it tokens of the body; ``token.map`` is shifted to SKILL.md line numbers."""
        return parse_markdown(self.body, self.body_start_line)

    def markdown(self, rel: str) -> list[Token] | None:
        """markdown-it tokens of one Markdown file of the skill, parsed once for every check that
        reads it; SKILL.md gives :attr:`body_tokens`. None when the file cannot be read."""
        if rel == self.manifest:
            return self.body_tokens if self.manifest_text is not None else None
        if rel not in self._markdown_tokens:
            text = self.text(rel)
            if text is None:
                return None
            self._markdown_tokens[rel] = parse_markdown(text)
        return self._markdown_tokens[rel]

    def headings(self) -> list[tuple[int, str, int]]:
        """(level, text, line) of every heading in the body (the same list for every check: read, never change it)."""
        return self._headings

    @functools.cached_property
    def _headings(self) -> list[tuple[int, str, int]]:
        out = []
        toks = self.body_tokens
        for i, tok in enumerate(toks):
            if tok.type == "heading_open" and i + 1 < len(toks):
                out.append((int(tok.tag[1]), toks[i + 1].content.strip(), (tok.map[0] + 1) if tok.map else 0))
        return out

    def code_blocks(self) -> list[tuple[str, str, int]]:
        """(info, content, first line of content) of fenced and indented code in the body."""
        return [(t.info.strip(), t.content, (t.map[0] + 2 if t.type == "fence" else t.map[0] + 1) if t.map else 0)
                for t in self.body_tokens if t.type in ("fence", "code_block")]

    def links(self) -> list[Link]:
        return markdown_links(self.body_tokens)


#: Inventory findings about folders whose files were never listed (``safefs.take_inventory``).
_UNLISTED_FOLDER = frozenset({"files.unreadable-dir", "files.too-deep", "files.too-many-files"})


def _reads(entry: safefs.Entry, suffixes: frozenset[str] | None) -> bool:
    """Whether :meth:`Skill.text_files` with ``suffixes`` reads this file."""
    return entry.expects_text() if suffixes is None else entry.suffix in suffixes or entry.name in suffixes


def parse_markdown(text: str, first_line: int = 1, *, fast: bool = True) -> list[Token]:
    """markdown-it tokens of ``text`` (its first MAX_MARKDOWN_CHARS, cut at a line end); ``token.map``
    shifted so line 1 is ``first_line``. ``fast``: through markdown-it-pyrs (:mod:`mdfast`), only the
    tokens the checks read (headings, inline tokens, code, HTML blocks, table rows), the same as
    markdown-it-py's; code that needs every block's span (Tier 2's chunking) asks for ``fast=False``."""
    if len(text) > MAX_MARKDOWN_CHARS:
        cut = text.rfind("\n", 0, MAX_MARKDOWN_CHARS)
        text = text[: cut if cut > 0 else MAX_MARKDOWN_CHARS]
    tables = text.count("|") <= MAX_TABLE_CELLS
    shift = first_line - 1
    tokens = mdfast.parse(text, tables, shift) if fast else None
    if tokens is not None:
        return tokens  # its lines already shifted
    tokens = _markdown(tables).parse(text)
    if shift:
        for tok in tokens:
            if tok.map:
                tok.map = [tok.map[0] + shift, tok.map[1] + shift]
    return tokens


def markdown_links(tokens: list[Token]) -> list[Link]:
    """Links and images of a parsed document; code spans and fences are not links."""
    out: list[Link] = []
    for tok in tokens:
        if tok.type != "inline" or not tok.children:
            continue
        base = (tok.map[0] + 1) if tok.map else 0
        line = base
        for child in tok.children:
            if child.type in ("softbreak", "hardbreak"):
                line += 1
            elif child.type == "link_open":
                out.append(Link(str(child.attrs.get("href", "")), line))
            elif child.type == "image":
                out.append(Link(str(child.attrs.get("src", "")), line, image=True))
    return out
