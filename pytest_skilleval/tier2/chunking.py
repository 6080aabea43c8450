"""Split a skill's Markdown into structural chunks, each with the file and line span it came from.

A chunk is a unit an author would copy or repeat: a paragraph, a top-level list item (with its
nested items), a fenced or indented code block (kept whole: half a command is meaningless), a
table, a block quote or an HTML block. Headings are not chunks of their own; they become the
chunk's ``section`` so a finding can say where it sits. Frontmatter is stripped first (parsed as
Markdown it would read as a rule plus a setext heading), and line numbers are those of the file.

Files: ``SKILL.md`` and the skill's other Markdown (``references/*.md`` and the like), but not the
evaluation folders (``evals/`` …): those describe the tests, not what the agent reads.
"""

from __future__ import annotations

import functools
import hashlib
import posixpath
import re
from collections.abc import Callable
from dataclasses import dataclass

from markdown_it import MarkdownIt
from markdown_it.token import Token

from pytest_skilleval.skill import EVAL_DIRS, MAX_MARKDOWN_CHARS, MAX_TABLE_CELLS, Skill

MARKDOWN_SUFFIXES = frozenset({".md", ".markdown", ".mdc"})
#: Chunks shorter than this (in normalised characters) are not compared inside a skill: short list
#: items ("- Python 3.11") and one-line captions repeat legitimately and would drown real findings.
MIN_DEDUP_CHARS = 60
_OPEN = re.compile(r"---[ \t]*$")
_CLOSE = re.compile(r"(---|\.\.\.)[ \t]*$")
_SPACE = re.compile(r"\s+")
#: Token types that open a block we keep whole, mapped to the type that closes it.
_CONTAINERS = {"bullet_list_open": "bullet_list_close", "ordered_list_open": "ordered_list_close",
               "table_open": "table_close", "blockquote_open": "blockquote_close"}


@dataclass(frozen=True)
class Chunk:
    file: str  # posix path relative to the skill root
    start_line: int  # 1-based, inclusive
    end_line: int  # 1-based, inclusive
    kind: str  # paragraph | list_item | code | table | blockquote | html
    section: str  # the heading path above the chunk, " > "-joined ("" before the first heading)
    text: str  # the source lines of the chunk, as written

    @property
    def location(self) -> str:
        return f"{self.file}:{self.start_line}" if self.start_line == self.end_line else f"{self.file}:{self.start_line}-{self.end_line}"

    @property
    def normalized(self) -> str:
        return _SPACE.sub(" ", self.text).strip()

    @property
    def digest(self) -> str:
        """Identity of the normalised text: equal digests are verbatim duplicates."""
        return hashlib.sha256(self.normalized.encode()).hexdigest()


def strip_frontmatter(text: str) -> tuple[str, int]:
    """(body, 1-based line where the body starts). An unclosed block is left in: it is text then."""
    text = text.lstrip("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    lines = text.split("\n")
    if not lines or not _OPEN.match(lines[0]):
        return text, 1
    close = next((i for i in range(1, len(lines)) if _CLOSE.match(lines[i])), None)
    if close is None:
        return text, 1
    return "\n".join(lines[close + 1:]), close + 2


@functools.cache
def _block_parser(tables: bool) -> MarkdownIt:
    """markdown-it-py as :func:`skill.parse_markdown` runs it with ``fast=False`` (chunks are cut by
    list-item and quote spans, which must be markdown-it-py's), without its inline pass: chunks need
    only block tokens and their line maps, and inline parsing was half of the parse time."""
    md = MarkdownIt("commonmark")
    return (md.enable("table") if tables else md).disable("inline")


def parse_blocks(text: str) -> list[Token]:
    """Block tokens of ``text`` as ``skill.parse_markdown(text, fast=False)`` finds them (same length
    cap, same table rule, same line maps); inline tokens keep their source but get no children."""
    if len(text) > MAX_MARKDOWN_CHARS:
        cut = text.rfind("\n", 0, MAX_MARKDOWN_CHARS)
        text = text[: cut if cut > 0 else MAX_MARKDOWN_CHARS]
    return _block_parser(text.count("|") <= MAX_TABLE_CELLS).parse(text)


def chunk_markdown(text: str, file: str, first_line: int = 1) -> list[Chunk]:
    """Chunks of a Markdown ``text`` whose first line is line ``first_line`` of ``file``."""
    lines = text.split("\n")
    tokens = parse_blocks(text)
    out: list[Chunk] = []
    headings: list[tuple[int, str]] = []
    i = 0

    def emit(tok: Token, kind: str) -> None:
        if not tok.map:
            return
        start, end = tok.map
        while end > start and not lines[end - 1].strip():
            end -= 1  # a list item's span can run over the blank line after it
        while start < end and not lines[start].strip():
            start += 1
        if start < end:
            section = " > ".join(h for _, h in headings)
            out.append(Chunk(file, start + first_line, end + first_line - 1, kind, section, "\n".join(lines[start:end])))

    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "heading_open":
            level = int(tok.tag[1])
            title = tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""
            headings = [h for h in headings if h[0] < level] + [(level, title)]
            i += 3
        elif tok.type in ("bullet_list_open", "ordered_list_open"):
            i = _list_items(tokens, i, emit)
        elif tok.type in _CONTAINERS:
            emit(tok, tok.type.removesuffix("_open"))
            i = _skip_block(tokens, i)
        elif tok.type == "paragraph_open":
            emit(tok, "paragraph")
            i += 3
        elif tok.type in ("fence", "code_block"):
            emit(tok, "code")
            i += 1
        elif tok.type == "html_block":
            emit(tok, "html")
            i += 1
        else:
            i += 1
    return out


def _skip_block(tokens: list[Token], i: int) -> int:
    """Index just past the container opened at ``i`` (same-type nesting is balanced by level)."""
    close, level = _CONTAINERS[tokens[i].type], tokens[i].level
    j = i + 1
    while j < len(tokens) and not (tokens[j].type == close and tokens[j].level == level):
        j += 1
    return j + 1


def _list_items(tokens: list[Token], i: int, emit: Callable[[Token, str], None]) -> int:
    """Emit each top-level item of the list opened at ``i`` (nested lists stay inside it)."""
    end = _skip_block(tokens, i)
    item_level = tokens[i].level + 1
    for j in range(i + 1, end):
        if tokens[j].type == "list_item_open" and tokens[j].level == item_level:
            emit(tokens[j], "list_item")
    return end


def markdown_files(skill: Skill) -> list[str]:
    """SKILL.md, then the Markdown an agent can reach, sorted: files in subfolders (``references/`` …)
    and root files that SKILL.md links to. Other root files (README.md, BENCHMARK.md, skill cards)
    are written for people and would only add noise; evaluation folders describe the tests."""
    if not skill.manifest:
        return []
    linked = {posixpath.normpath(link.target.split("#", 1)[0]) for link in skill.links() if link.target and "://" not in link.target}
    names = []
    for entry in skill.files():
        top = entry.rel.split("/", 1)[0]
        if entry.rel == skill.manifest or top in EVAL_DIRS or entry.suffix not in MARKDOWN_SUFFIXES:
            continue
        if "/" not in entry.rel and entry.rel not in linked:
            continue
        if entry.name.upper().startswith(("LICENSE", "LICENCE", "NOTICE")):
            continue  # legal text repeats by design and is never loaded as guidance
        names.append(entry.rel)
    return [skill.manifest, *sorted(names)]


def chunk_skill(skill: Skill) -> list[Chunk]:
    """Every chunk of the skill's Markdown; unreadable files are the ``files`` check's business."""
    out: list[Chunk] = []
    for rel in markdown_files(skill):
        if rel == skill.manifest:
            if skill.manifest_text is None:
                continue
            out += chunk_markdown(skill.body, rel, skill.body_start_line)
            continue
        text = skill.text(rel)
        if text is None:
            continue
        body, start = strip_frontmatter(text)
        out += chunk_markdown(body, rel, start)
    return out
