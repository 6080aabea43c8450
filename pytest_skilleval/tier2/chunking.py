"""Split a skill's Markdown into structural chunks, each with the file and line span it came from.

A chunk is a unit an author would copy or repeat: a paragraph, a top-level list item (with its
nested items), a fenced or indented code block (kept whole: half a command is meaningless), a
table, a block quote or an HTML block. Headings are not chunks of their own; they become the
chunk's ``section`` so a finding can say where it sits. Frontmatter is stripped first (parsed as
Markdown it would read as a rule plus a setext heading), and line numbers are those of the file.

The blocks come from markdown-it.rs (block rules only) where it is installed and can promise
markdown-it-py's blocks, else from markdown-it-py: the same chunks either way (``fast_blocks``).

Files: ``SKILL.md`` and the skill's other Markdown (``references/*.md`` and the like), but not the
evaluation folders (``evals/`` …): those describe the tests, not what the agent reads.
"""

from __future__ import annotations

import functools
import hashlib
import posixpath
import re
from bisect import bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from itertools import accumulate

from markdown_it import MarkdownIt
from markdown_it.token import Token

from pytest_skilleval import mdfast
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
    text = _cut(text)
    return _block_parser(text.count("|") <= MAX_TABLE_CELLS).parse(text)


#: A block as chunking reads it: ("heading", level, -1, title), or (kind, first line, end line, "") with
#: 0-based lines of the text, end exclusive, blank lines at either end left out; kind one of Chunk's.
Block = tuple[str, int, int, str]


def chunk_markdown(text: str, file: str, first_line: int = 1) -> list[Chunk]:
    """Chunks of a Markdown ``text`` whose first line is line ``first_line`` of ``file``."""
    lines = text.split("\n")
    blocks = fast_blocks(text, lines)
    if blocks is None:
        blocks = reference_blocks(text, lines)
    out: list[Chunk] = []
    section = ""
    headings: list[tuple[int, str]] = []
    for kind, start, end, title in blocks:
        if kind == "heading":
            headings = [h for h in headings if h[0] < start] + [(start, title)]
            section = " > ".join(h for _, h in headings)
        else:
            out.append(Chunk(file, start + first_line, end + first_line - 1, kind, section, "\n".join(lines[start:end])))
    return out


def chunk_texts(text: str) -> list[str]:
    """The texts of :func:`chunk_markdown`'s chunks, in order, without building the chunks: all the
    pooled body vector reads (a 10,000-skill catalog is ~360,000 chunks)."""
    lines = text.split("\n")
    blocks = fast_blocks(text, lines)
    if blocks is None:
        blocks = reference_blocks(text, lines)
    return ["\n".join(lines[start:end]) for kind, start, end, _ in blocks if kind != "heading"]


def _trimmed(out: list[Block], lines: list[str], kind: str, start: int, end: int) -> None:
    """Append the block without its blank first and last lines (a list item's span can run over the
    blank line after it), if anything is left."""
    while end > start and not lines[end - 1].strip():
        end -= 1
    while start < end and not lines[start].strip():
        start += 1
    if start < end:
        out.append((kind, start, end, ""))


def _cut(text: str) -> str:
    """The part of ``text`` the Markdown parsers read (as :func:`skill.parse_markdown`)."""
    if len(text) > MAX_MARKDOWN_CHARS:
        cut = text.rfind("\n", 0, MAX_MARKDOWN_CHARS)
        return text[: cut if cut > 0 else MAX_MARKDOWN_CHARS]
    return text


def reference_blocks(text: str, lines: list[str] | None = None) -> list[Block]:
    """The blocks of ``text`` from markdown-it-py's block tokens (:func:`parse_blocks`): what chunks were
    always cut from, and what :func:`fast_blocks` must give. ``lines``: ``text.split("\\n")`` if at hand."""
    lines = text.split("\n") if lines is None else lines
    tokens = parse_blocks(text)
    out: list[Block] = []
    i = 0

    def block(tok: Token, kind: str) -> None:
        if tok.map:
            _trimmed(out, lines, kind, tok.map[0], tok.map[1])

    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "heading_open":
            title = tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""
            out.append(("heading", int(tok.tag[1]), -1, title))
            i += 3
        elif tok.type in ("bullet_list_open", "ordered_list_open"):
            i = _list_items(tokens, i, block)
        elif tok.type in _CONTAINERS:
            block(tok, tok.type.removesuffix("_open"))
            i = _skip_block(tokens, i)
        elif tok.type == "paragraph_open":
            block(tok, "paragraph")
            i += 3
        elif tok.type in ("fence", "code_block"):
            block(tok, "code")
            i += 1
        elif tok.type == "html_block":
            block(tok, "html")
            i += 1
        else:
            i += 1
    return out


_PLUS_ONE = (1).__add__
_SKIPPED = frozenset({"hr", "definition"})  # no chunk, and nothing in markdown-it-py's block stream either


def fast_blocks(text: str, lines: list[str] | None = None) -> list[Block] | None:
    """The same blocks from markdown-it.rs's tree (the top-level nodes and each list's items), ~3x less
    CPU than markdown-it-py's block parse; None where the Rust parser is missing or cannot promise
    markdown-it-py's blocks (``mdfast.tree``; a table row that markdown-it-py would read as the start of
    another block; a node this reader does not know). ``tests/unit/test_tier2_chunking.py`` compares
    both readers over every Markdown file of the shared corpus."""
    lines = text.split("\n") if lines is None else lines
    text = _cut(text)
    root = mdfast.tree(text, text.count("|") <= MAX_TABLE_CELLS, inline=False)
    if root is None:
        return None
    raw = text.encode("utf-8")
    # byte offset of each line's start: srcmap spans are bytes, chunks are cut by lines
    starts = list(accumulate(map(_PLUS_ONE, map(len, raw.split(b"\n")[:-1])), initial=0))
    out: list[Block] = []
    try:
        for node in root.children:
            name = node.name
            if name == "heading" or name == "lheading":
                kids = node.children
                title = raw[kids[0].srcmap[0]:kids[-1].srcmap[1]].decode("utf-8").strip() if kids else ""
                out.append(("heading", node.meta["level"], -1, title))
                continue
            if name in _SKIPPED:
                continue
            if name == "bullet_list" or name == "ordered_list":
                items = node.children
                if any(item.name != "list_item" for item in items):
                    return None
            elif name == "table":
                for part in node.children:
                    for row in part.children:
                        begin = row.srcmap[0]
                        if mdfast.starts_block(raw[starts[bisect_right(starts, begin) - 1]:row.srcmap[1]].decode("utf-8")):
                            return None
                items = [node]
            elif name in _FAST_KINDS:
                items = [node]
            else:
                return None
            kind = _FAST_KINDS[name]
            for item in items:
                begin, stop = item.srcmap
                first, end = bisect_right(starts, begin) - 1, bisect_right(starts, max(stop - 1, begin))
                if name == "fence":  # an unclosed fence's blank last lines are content, past the node's span
                    end = max(end, first + 1 + node.meta["content"].count("\n"))
                _trimmed(out, lines, kind, first, end)
    except (AttributeError, KeyError, TypeError, IndexError, ValueError):
        return None
    return out


_FAST_KINDS = {"paragraph": "paragraph", "bullet_list": "list_item", "ordered_list": "list_item", "blockquote": "blockquote",
               "table": "table", "fence": "code", "code_block": "code", "html_block": "html"}


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
    linked = _linked(skill)
    return [skill.manifest, *sorted(e.rel for e in skill.files() if _reads_markdown(skill, e.rel, linked))]


def _linked(skill: Skill) -> set[str]:
    return {posixpath.normpath(link.target.split("#", 1)[0]) for link in skill.links() if link.target and "://" not in link.target}


def _reads_markdown(skill: Skill, rel: str, linked: set[str]) -> bool:
    name = posixpath.basename(rel)
    if rel == skill.manifest or rel.split("/", 1)[0] in EVAL_DIRS or posixpath.splitext(rel)[1].lower() not in MARKDOWN_SUFFIXES:
        return False
    if "/" not in rel and rel not in linked:
        return False
    return not name.upper().startswith(("LICENSE", "LICENCE", "NOTICE"))  # legal text repeats by design, never guidance


def reads_markdown(skill: Skill, rel: str) -> bool:
    """Whether :func:`markdown_files` lists this file besides SKILL.md (Check.reads of the dedup check)."""
    return _reads_markdown(skill, rel, _linked(skill) if "/" not in rel else set())


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
