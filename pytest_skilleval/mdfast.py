"""Markdown tokens from markdown-it-pyrs (Rust), in the shape markdown-it-py gives them.

Parsing was half of Tier 1's time (4.7 s of a 754-skill catalog with markdown-it-py; 0.7 s here).
The Rust parser returns a tree of nodes with byte spans; this module walks it and emits the flat
stream of :class:`markdown_it.token.Token` the checks read: block open/close pairs with their line
``map``, ``inline`` tokens with children (text, code spans, links, images, breaks, emphasis, HTML),
fences and code blocks with their content and info, tables as rows and cells.

What the checks read is the same token for token as markdown-it-py's (``tests/unit/test_mdfast.py``
compares both over every Markdown file of the shared corpus and over edge cases). Any node this module
does not know, and any document the Rust parser rejects, makes :func:`parse` return None: the caller
then parses with markdown-it-py, so an unusual document costs time, never a different answer.
"""

from __future__ import annotations

import bisect
import functools
import re
from typing import Any

from markdown_it.token import Token

try:
    import markdown_it_pyrs
except ImportError:  # no wheel for this platform: markdown-it-py does all the parsing
    markdown_it_pyrs = None


class Unsupported(Exception):
    """A node this adapter does not translate: parse the document with markdown-it-py instead."""


@functools.cache
def _parser(tables: bool) -> Any:
    md = markdown_it_pyrs.MarkdownIt("commonmark")
    return md.enable("table") if tables else md


def available() -> bool:
    return markdown_it_pyrs is not None


def parse(text: str, tables: bool = True) -> list[Token] | None:
    """markdown-it-py-shaped tokens of ``text`` (line ``map`` 0-based, as markdown-it-py's), or None
    when the fast path cannot promise markdown-it-py's answer."""
    if markdown_it_pyrs is None or "\0" in text or "\r" in text:
        return None  # markdown-it-py replaces NUL and normalises CR line ends: leave those to it
    try:
        tree = _parser(tables).tree(text)
        return _Walk(text).document(tree)
    except (Unsupported, ValueError, TypeError, IndexError, KeyError, RecursionError):
        return None


_CONTAINERS = {"bullet_list": "ul", "ordered_list": "ol", "list_item": "li", "blockquote": "blockquote",
               "thead": "thead", "tbody": "tbody", "trow": "tr"}
#: A line that may start a block (a list item of any number, a quote, a heading, a fence, HTML, an
#: indented line): markdown-it-py ends a table there, markdown-it.rs may read it as one more row.
_BLOCK_START = re.compile(r"[ \t]*(?:\d{1,9}[.)](?:[ \t]|$)|[-+*](?:[ \t]|$)|>|#|```|~~~|<)|[ ]{4}|\t")
_INLINE = frozenset({"text", "text_special", "softbreak", "hardbreak", "code_inline", "html_inline", "em", "strong",
                     "link", "autolink", "image"})


class _Walk:
    def __init__(self, text: str) -> None:
        self.raw = text.encode("utf-8")
        self.starts = [0]
        pos = self.raw.find(b"\n")
        while pos != -1:
            self.starts.append(pos + 1)
            pos = self.raw.find(b"\n", pos + 1)
        self.out: list[Token] = []

    def line(self, offset: int) -> int:
        """0-based line holding byte ``offset``."""
        return bisect.bisect_right(self.starts, offset) - 1

    def span(self, node: Any) -> list[int]:
        start, end = node.srcmap
        return [self.line(start), self.line(max(end - 1, start)) + 1]

    def ascii_destination(self, node: Any) -> None:
        """markdown-it-py writes a non-ASCII host in punycode, markdown-it.rs percent-encodes it."""
        start, end = node.srcmap
        if not self.raw[start:end].isascii():
            raise Unsupported("a link with non-ASCII characters")

    def source(self, start: int, end: int) -> str:
        return self.raw[start:end].decode("utf-8")

    def document(self, root: Any) -> list[Token]:
        for child in root.children:
            self.block(child)
        return self.out

    def block(self, node: Any) -> None:
        name = node.name
        if name == "paragraph":
            where = self.span(node)
            self.out.append(Token("paragraph_open", "p", 1, map=where))
            self.out.append(self.inline(node, where))
            self.out.append(Token("paragraph_close", "p", -1))
        elif name in ("heading", "lheading"):
            tag = f"h{node.meta['level']}"
            where = self.span(node)
            self.out.append(Token("heading_open", tag, 1, map=where))
            self.out.append(self.inline(node, where))
            self.out.append(Token("heading_close", tag, -1))
        elif name in ("fence", "code_block"):
            info = node.meta.get("info", "") if name == "fence" else ""
            content = node.meta["content"]
            where = self.span(node)
            if name == "fence":  # an unclosed fence's blank last lines are content, past the node's span
                where[1] = max(where[1], where[0] + 1 + content.count("\n"))
            self.out.append(Token(name, "code", 0, map=where, content=content, info=info))
        elif name == "html_block":
            self.out.append(Token("html_block", "", 0, map=self.span(node), content=node.meta["content"]))
        elif name == "hr":
            self.out.append(Token("hr", "hr", 0, map=self.span(node)))
        elif name == "definition":
            return  # link reference definitions leave no token in markdown-it-py either
        elif name == "table":
            where = self.span(node)
            self.out.append(Token("table_open", "table", 1, map=where))
            for part in node.children:
                self.table_part(part, node.meta.get("alignments") or [])
            self.out.append(Token("table_close", "table", -1))
        elif name in _CONTAINERS:
            tag = _CONTAINERS[name]
            self.out.append(Token(f"{name}_open", tag, 1, map=self.span(node)))
            run: list[Any] = []  # a tight list item holds its paragraph's inline nodes directly
            for child in node.children:
                if child.name in _INLINE:
                    run.append(child)
                    continue
                self.hidden_paragraph(run)
                run = []
                self.block(child)
            self.hidden_paragraph(run)
            self.out.append(Token(f"{name}_close", tag, -1))
        else:
            raise Unsupported(name)

    def hidden_paragraph(self, nodes: list[Any]) -> None:
        """The paragraph of a tight list item, which markdown-it-py keeps as a hidden paragraph."""
        if not nodes:
            return
        start, end = nodes[0].srcmap[0], nodes[-1].srcmap[1]
        where = [self.line(start), self.line(max(end - 1, start)) + 1]
        self.out.append(Token("paragraph_open", "p", 1, map=where, hidden=True))
        self.out.append(self.inline_of(nodes, where))
        self.out.append(Token("paragraph_close", "p", -1, hidden=True))

    def table_part(self, part: Any, alignments: list[str]) -> None:
        if part.name not in ("thead", "tbody"):
            raise Unsupported(part.name)
        self.out.append(Token(f"{part.name}_open", part.name, 1, map=self.span(part)))
        cell = "th" if part.name == "thead" else "td"
        for row in part.children:
            if row.name != "trow":
                raise Unsupported(row.name)
            where = self.span(row)
            if _BLOCK_START.match(self.source(self.starts[where[0]], row.srcmap[1])):
                raise Unsupported("a row that markdown-it-py reads as the start of another block")
            self.out.append(Token("tr_open", "tr", 1, map=where))
            for n, td in enumerate(row.children):
                if td.name != "tcell":
                    raise Unsupported(td.name)
                align = alignments[n] if n < len(alignments) else "none"
                attrs = {"style": f"text-align:{align}"} if align not in ("none", "") else {}
                self.out.append(Token(f"{cell}_open", cell, 1, map=where, attrs=attrs))
                self.out.append(self.inline(td, where))
                self.out.append(Token(f"{cell}_close", cell, -1))
            self.out.append(Token("tr_close", "tr", -1))
        self.out.append(Token(f"{part.name}_close", part.name, -1))

    def inline(self, node: Any, where: list[int]) -> Token:
        return self.inline_of(node.children, where)

    def inline_of(self, kids: list[Any], where: list[int]) -> Token:
        content = self.source(kids[0].srcmap[0], kids[-1].srcmap[1]).strip() if kids else ""
        children: list[Token] = []
        self.inlines(kids, children)
        return Token("inline", "", 0, map=list(where), content=content, children=_join_text(children))

    def inlines(self, nodes: list[Any], out: list[Token]) -> None:
        for node in nodes:
            name = node.name
            if name in ("text", "text_special"):
                out.append(Token("text", "", 0, content=node.meta["content"]))
            elif name in ("softbreak", "hardbreak"):
                out.append(Token(name, "br", 0))
            elif name == "code_inline":
                out.append(Token("code_inline", "code", 0, content="".join(c.meta.get("content", "") for c in node.children)))
            elif name == "html_inline":
                out.append(Token("html_inline", "", 0, content=node.meta["content"]))
            elif name in ("em", "strong"):
                tag = name
                out.append(Token(f"{name}_open", tag, 1))
                self.inlines(node.children, out)
                out.append(Token(f"{name}_close", tag, -1))
            elif name == "link":
                self.ascii_destination(node)
                attrs = {"href": node.meta["url"]}
                if node.meta.get("title") is not None:
                    attrs["title"] = node.meta["title"]
                out.append(Token("link_open", "a", 1, attrs=attrs))
                self.inlines(node.children, out)
                out.append(Token("link_close", "a", -1))
            elif name == "autolink":
                self.ascii_destination(node)
                out.append(Token("link_open", "a", 1, attrs={"href": node.meta["url"]}, markup="autolink", info="auto"))
                self.inlines(node.children, out)
                out.append(Token("link_close", "a", -1, markup="autolink", info="auto"))
            elif name == "image":
                self.ascii_destination(node)
                alt: list[Token] = []
                self.inlines(node.children, alt)
                attrs = {"src": node.meta["url"], "alt": ""}
                if node.meta.get("title") is not None:
                    attrs["title"] = node.meta["title"]
                kids = node.children  # markdown-it-py keeps the label's source as the image's content
                label = self.source(kids[0].srcmap[0], kids[-1].srcmap[1]) if kids else ""
                out.append(Token("image", "img", 0, attrs=attrs, content=label, children=_join_text(alt)))
            else:
                raise Unsupported(name)


def _join_text(tokens: list[Token]) -> list[Token]:
    """Adjacent text tokens as one, like markdown-it-py's ``text_join`` rule."""
    out: list[Token] = []
    for t in tokens:
        if t.type == "text" and out and out[-1].type == "text":
            out[-1].content += t.content
        else:
            out.append(t)
    return out
