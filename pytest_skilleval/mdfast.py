"""Markdown tokens from markdown-it-pyrs (Rust): the ones the checks read, as markdown-it-py gives them.

Parsing was half of Tier 1's time (4.7 s of a 754-skill catalog with markdown-it-py; 0.7 s here).
The Rust parser returns a tree of nodes with byte spans; this module walks it and emits, as
:class:`markdown_it.token.Token`, the part of markdown-it-py's flat stream that a check reads:
``heading_open`` with its line ``map``, ``inline`` tokens with children (text, code spans, link
openings, images, breaks, HTML), fences and code blocks with their content and info, HTML blocks,
table rows (``tr_open``, an ``inline`` per cell, ``tr_close``). Paragraph, list, quote, table-part
and cell open/close pairs, ``hr``, and emphasis markers and ``link_close`` inside inline tokens, are
not emitted (about half of the tokens; emphasised text joins the text around it): nothing reads them,
and Tier 2's chunking reads block spans from :func:`tree` (blocks only) itself.

What the checks read is the same token for token as markdown-it-py's (``tests/unit/test_mdfast.py``
compares both over every Markdown file of the shared corpus and over edge cases). Any node this module
does not know, and any document the Rust parser rejects, makes :func:`parse` return None: the caller
then parses with markdown-it-py, so an unusual document costs time, never a different answer.
"""

from __future__ import annotations

import functools
import re
from bisect import bisect_right
from itertools import accumulate
from typing import Any

from markdown_it.token import Token

try:
    import markdown_it_pyrs
except ImportError:  # no wheel for this platform: markdown-it-py does all the parsing
    markdown_it_pyrs = None


_new_token = Token.__new__


def _token(type_: str, tag: str, nesting: int, map: list[int] | None = None, content: str = "",
           children: list[Token] | None = None, attrs: dict[str, Any] | None = None, info: str = "", markup: str = "",
           hidden: bool = False) -> Token:
    """``Token(...)`` without the dataclass's keyword handling and ``__post_init__``: a corpus is a
    million tokens, and this is a third of their cost. Every field is set, as ``Token.__init__`` sets it."""
    t = _new_token(Token)
    t.type, t.tag, t.nesting, t.attrs, t.map, t.level = type_, tag, nesting, {} if attrs is None else attrs, map, 0  # type: ignore[assignment]
    t.children, t.content, t.markup, t.info, t.meta, t.block, t.hidden = children, content, markup, info, {}, False, hidden
    return t


def _leaf(type_: str, tag: str, content: str) -> Token:
    """:func:`_token` of an inline leaf (text, code span, break, inline HTML): over half of all tokens."""
    t = _new_token(Token)
    t.type = type_
    t.tag = tag
    t.nesting = 0
    t.attrs = {}
    t.map = None
    t.level = 0
    t.children = None
    t.content = content
    t.markup = ""
    t.info = ""
    t.meta = {}
    t.block = False
    t.hidden = False
    return t


class Unsupported(Exception):
    """A node this adapter does not translate: parse the document with markdown-it-py instead."""


@functools.cache
def _parser(tables: bool, inline: bool = True) -> Any:
    if inline:
        md = markdown_it_pyrs.MarkdownIt("commonmark")
    else:  # commonmark's block rules only: each block's inline content stays one text node
        md = markdown_it_pyrs.MarkdownIt("zero")
        md.enable_many(list(_COMMONMARK_BLOCK_RULES))
    return md.enable("table") if tables else md


#: The block rules of markdown-it.rs's commonmark preset (the others are inline rules).
_COMMONMARK_BLOCK_RULES = ("blockquote", "code", "fence", "heading", "hr", "html_block", "lheading", "list", "paragraph", "reference")


def available() -> bool:
    return markdown_it_pyrs is not None


def parse(text: str, tables: bool = True, shift: int = 0) -> list[Token] | None:
    """markdown-it-py-shaped tokens of ``text`` (line ``map`` 0-based, as markdown-it-py's, plus
    ``shift``), or None when the fast path cannot promise markdown-it-py's answer."""
    root = tree(text, tables)
    if root is None:
        return None
    try:
        return _Walk(text, shift).document(root)
    except (Unsupported, ValueError, TypeError, IndexError, KeyError, RecursionError):
        return None


def tree(text: str, tables: bool = True, *, inline: bool = True) -> Any | None:
    """markdown-it.rs's syntax tree of ``text`` (nodes with ``name``, ``srcmap`` byte spans, ``meta``,
    ``children``), or None where it is not to be read as markdown-it-py's: no wheel, NUL or CR in the
    text (markdown-it-py replaces NUL and normalises CR line ends), or a document the Rust parser rejects.
    ``inline=False``: blocks only, each block's inline content one ``text`` node (Tier 2's chunking)."""
    if markdown_it_pyrs is None or "\0" in text or "\r" in text or _parts_ways(text, tables):
        return None
    try:
        return _parser(tables, inline).tree(text)
    except (ValueError, TypeError, IndexError, KeyError, RecursionError):
        return None


#: A quote's line followed by a line that does not continue the quote with ``>`` (a lazy line): markdown-it-py
#: ends the quote at a lazy line that may start a block (an ordered item not numbered 1, an empty item,
#: a table row...) where markdown-it.rs may keep it in the quote. 18 of the corpus's 1,904 Markdown files.
_QUOTE_THEN_LAZY = re.compile(r"^[ \t]*>[^\n]*\n[ \t]*[^\s>]", re.M)
#: A line holding a pipe over a line of dashes: a one-column table in markdown-it-py, a setext heading in markdown-it.rs.
_PIPE_OVER_DASHES = re.compile(r"^[^\n]*\|[^\n]*\n {0,3}-+[ \t]*$", re.M)


#: The pieces :func:`_parts_ways` finds the two constructs above with: each begins with a newline, a
#: literal the regular expression engine skips to (the patterns above try every line start; they are
#: the definitions, and the tests compare both over the corpus and edge cases).
_QUOTE_LINE_AFTER = re.compile(r"\n[ \t]*>")
_QUOTE_LINE_FIRST = re.compile(r"[ \t]*>")
_LAZY_LINE = re.compile(r"[ \t]*[^\s>]")
_DASHES_LINE_AFTER = re.compile(r"\n {0,3}-+[ \t]*(?=\n|\Z)")


def _parts_ways(text: str, tables: bool) -> bool:
    """Whether ``text`` holds a construct on which the two parsers were found to give different blocks
    (fuzzing both; ``tests/unit/test_mdfast.py``'s edge cases): such a document is read by markdown-it-py."""
    return (">" in text and _quote_then_lazy(text)) or (tables and "|" in text and _pipe_over_dashes(text))


def _quote_then_lazy(text: str) -> bool:
    """``_QUOTE_THEN_LAZY.search(text) is not None``: a line whose first character after spaces and tabs
    is ``>``, and a next line whose first such character is neither white space nor ``>``."""
    quote_lines = [m.start() + 1 for m in _QUOTE_LINE_AFTER.finditer(text)]
    if _QUOTE_LINE_FIRST.match(text):
        quote_lines.insert(0, 0)
    for start in quote_lines:
        end = text.find("\n", start)
        if end >= 0 and _LAZY_LINE.match(text, end + 1):
            return True
    return False


def _pipe_over_dashes(text: str) -> bool:
    """``_PIPE_OVER_DASHES.search(text) is not None``: a line of up to three spaces, dashes and then spaces
    or tabs, under a line holding a pipe (the first line has none above it)."""
    for m in _DASHES_LINE_AFTER.finditer(text):
        above = text.rfind("\n", 0, m.start()) + 1
        if "|" in text[above:m.start()]:
            return True
    return False


def starts_block(line: str) -> bool:
    """Whether a table row's line (from its line start) may start another block: markdown-it-py ends a
    table there, markdown-it.rs may read it as one more row."""
    return _BLOCK_START.match(line) is not None


#: Blocks that hold blocks and give no token of their own.
_CONTAINERS = frozenset({"bullet_list", "ordered_list", "list_item", "blockquote", "thead", "tbody", "trow"})
#: A line that may start a block (a list item of any number, a quote, a heading, a fence, HTML, an
#: indented line): markdown-it-py ends a table there, markdown-it.rs may read it as one more row.
_BLOCK_START = re.compile(r"[ \t]*(?:\d{1,9}[.)](?:[ \t]|$)|[-+*](?:[ \t]|$)|>|#|```|~~~|<)|[ ]{4}|\t")
_PLUS_ONE = (1).__add__
_INLINE = frozenset({"text", "text_special", "softbreak", "hardbreak", "code_inline", "html_inline", "em", "strong",
                     "link", "autolink", "image"})


class _Walk:
    def __init__(self, text: str, shift: int = 0) -> None:
        self.raw = text.encode("utf-8")
        # byte offset of each line's start, all in C: the running sum of the lengths of the lines before
        self.starts = list(accumulate(map(_PLUS_ONE, map(len, self.raw.split(b"\n")[:-1])), initial=0))
        self.shift = shift
        self.out: list[Token] = []

    def lines(self, start: int, end: int) -> list[int]:
        """``[first, last + 1]``, 0-based, of the lines holding bytes ``start`` to ``end`` (exclusive)."""
        starts = self.starts
        shift = self.shift
        return [bisect_right(starts, start) - 1 + shift, bisect_right(starts, max(end - 1, start)) + shift]

    def span(self, node: Any) -> list[int]:
        return self.lines(*node.srcmap)

    def ascii_destination(self, node: Any) -> None:
        """markdown-it-py writes a non-ASCII host in punycode, markdown-it.rs percent-encodes it."""
        start, end = node.srcmap
        if not self.raw[start:end].isascii():
            raise Unsupported("a link with non-ASCII characters")

    def source(self, start: int, end: int) -> str:
        return self.raw[start:end].decode("utf-8")

    def document(self, root: Any) -> list[Token]:
        for child in root.children:
            self.block(child, child.name)
        return self.out

    def block(self, node: Any, name: str) -> None:
        out = self.out
        if name == "paragraph":
            out.append(self.inline_of(node.children, self.span(node)))
        elif name in _CONTAINERS:
            run: list[Any] = []  # a tight list item holds its paragraph's inline nodes directly
            for child in node.children:
                child_name = child.name
                if child_name in _INLINE:
                    run.append(child)
                    continue
                if run:
                    self.hidden_paragraph(run)
                    run = []
                self.block(child, child_name)
            if run:
                self.hidden_paragraph(run)
        elif name == "heading" or name == "lheading":
            where = self.span(node)
            out.append(_token("heading_open", f"h{node.meta['level']}", 1, where))
            out.append(self.inline_of(node.children, where))
        elif name == "fence" or name == "code_block":
            meta = node.meta
            info = meta.get("info", "") if name == "fence" else ""
            content = meta["content"]
            where = self.span(node)
            if name == "fence":  # an unclosed fence's blank last lines are content, past the node's span
                where[1] = max(where[1], where[0] + 1 + content.count("\n"))
            out.append(_token(name, "code", 0, where, content, info=info))
        elif name == "html_block":
            out.append(_token("html_block", "", 0, self.span(node), node.meta["content"]))
        elif name == "hr" or name == "definition":
            return  # no token a check reads (link reference definitions leave none in markdown-it-py either)
        elif name == "table":
            for part in node.children:
                self.table_part(part)
        else:
            raise Unsupported(name)

    def hidden_paragraph(self, nodes: list[Any]) -> None:
        """The paragraph of a tight list item, which markdown-it-py keeps as a hidden paragraph: its inline token."""
        start, end = nodes[0].srcmap[0], nodes[-1].srcmap[1]
        self.out.append(self.inline_of(nodes, self.lines(start, end), start, end))

    def table_part(self, part: Any) -> None:
        part_name = part.name
        if part_name not in ("thead", "tbody"):
            raise Unsupported(part_name)
        out = self.out
        for row in part.children:
            if row.name != "trow":
                raise Unsupported(row.name)
            start = row.srcmap[0]
            if starts_block(self.source(self.starts[bisect_right(self.starts, start) - 1], row.srcmap[1])):
                raise Unsupported("a row that markdown-it-py reads as the start of another block")
            where = self.span(row)
            out.append(_token("tr_open", "tr", 1, where))
            for td in row.children:
                if td.name != "tcell":
                    raise Unsupported(td.name)
                out.append(self.inline_of(td.children, where))
            out.append(_token("tr_close", "tr", -1))

    def inline_of(self, kids: list[Any], where: list[int], start: int = -1, end: int = -1) -> Token:
        """The ``inline`` token of ``kids``; ``start``/``end``: their byte span when the caller has it."""
        if kids:
            if start < 0:
                start, end = kids[0].srcmap[0], kids[-1].srcmap[1]
            content = self.source(start, end).strip()
        else:
            content = ""
        children: list[Token] = []
        self.inlines(kids, children)
        t = _leaf("inline", "", content)
        t.map = list(where)
        t.children = children
        return t

    def inlines(self, nodes: list[Any], out: list[Token]) -> None:
        """Append the tokens of ``nodes`` to ``out``; adjacent text becomes one token as it is appended,
        like markdown-it-py's ``text_join`` rule. The node names in order of frequency (text is over half)."""
        append = out.append
        for node in nodes:
            name = node.name
            if name == "text":
                text = node.meta["content"]
                if out and out[-1].type == "text":
                    out[-1].content += text
                else:
                    append(_leaf("text", "", text))
            elif name == "code_inline":
                kids = node.children
                append(_leaf("code_inline", "code", kids[0].meta.get("content", "") if len(kids) == 1
                             else "".join([c.meta.get("content", "") for c in kids])))
            elif name == "softbreak" or name == "hardbreak":
                append(_leaf(name, "br", ""))
            elif name == "strong" or name == "em":  # the markers are not read: their text joins the text around it
                self.inlines(node.children, out)
            elif name == "html_inline":
                append(_leaf("html_inline", "", node.meta["content"]))
            elif name == "link":
                self.ascii_destination(node)
                meta = node.meta
                attrs = {"href": meta["url"]}
                if meta.get("title") is not None:
                    attrs["title"] = meta["title"]
                append(_token("link_open", "a", 1, attrs=attrs))
                self.inlines(node.children, out)
            elif name == "text_special":
                text = node.meta["content"]
                if out and out[-1].type == "text":
                    out[-1].content += text
                else:
                    append(_leaf("text", "", text))
            elif name == "autolink":
                self.ascii_destination(node)
                append(_token("link_open", "a", 1, attrs={"href": node.meta["url"]}, markup="autolink", info="auto"))
                self.inlines(node.children, out)
            elif name == "image":
                self.ascii_destination(node)
                kids = node.children
                alt: list[Token] = []
                self.inlines(kids, alt)
                meta = node.meta
                attrs = {"src": meta["url"], "alt": ""}
                if meta.get("title") is not None:
                    attrs["title"] = meta["title"]
                # markdown-it-py keeps the label's source as the image's content
                label = self.source(kids[0].srcmap[0], kids[-1].srcmap[1]) if kids else ""
                append(_token("image", "img", 0, attrs=attrs, content=label, children=alt))
            else:
                raise Unsupported(name)
