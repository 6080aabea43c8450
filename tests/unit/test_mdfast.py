"""mdfast gives the tokens markdown-it-py gives, wherever a check reads them.

The projection below is everything Tier 1 reads from Markdown tokens: headings (level, line, text),
inline tokens (line, and the children a check reads: text, code spans, inline HTML, images with their
label and source, breaks, link targets), fences and indented code (lines, content, info), HTML
blocks, table rows. Both parsers must agree on it for every Markdown file and every SKILL.md body of
the shared corpus and for the edge cases here; where the fast path cannot promise that, it returns
None and markdown-it-py parses.
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from conftest import CORPUS, require
from markdown_it import MarkdownIt
from markdown_it.token import Token

from pytest_skilleval import mdfast
from pytest_skilleval.skill import Skill, parse_markdown

SLOW = MarkdownIt("commonmark").enable("table")


def _children(tok: Token) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    for c in tok.children or ():
        if c.type == "text" and not c.content:
            continue  # markdown-it-py leaves empty text where emphasis delimiters were: nothing to read
        if c.type in ("text", "code_inline", "html_inline"):
            item: tuple[Any, ...] = (c.type, c.content)
        elif c.type == "image":
            item = ("image", c.content, c.attrs.get("src"))
        elif c.type in ("softbreak", "hardbreak"):
            item = (c.type,)
        elif c.type == "link_open":
            item = ("link_open", c.attrs.get("href"))
        else:
            continue
        if item[0] == "text" and out and out[-1][0] == "text":
            out[-1] = ("text", out[-1][1] + item[1])
        else:
            out.append(item)
    return out


def project(tokens: list[Token]) -> list[tuple[Any, ...]]:
    out: list[tuple[Any, ...]] = []
    prev = None
    for t in tokens:
        if t.type == "heading_open":
            out.append((t.type, t.tag, t.map[0] if t.map else None))
        elif t.type == "inline":
            out.append(("inline", t.map[0] if t.map else None, t.content.strip() if prev == "heading_open" else None, _children(t)))
        elif t.type == "fence":
            out.append((t.type, tuple(t.map or ()), t.content, t.info))
        elif t.type == "code_block":
            out.append((t.type, tuple(t.map or ()), t.content))
        elif t.type == "html_block":
            out.append((t.type, t.map[0] if t.map else None, t.content))
        elif t.type in ("tr_open", "tr_close"):
            out.append((t.type,))
        prev = t.type
    return out


EDGE_CASES = [
    "# Title\n\nText with `code` and [link](http://x.y/a b \"t\") and ![alt *em*](img.png).\n",
    "Entities &amp; &copy; &#35; &#x41; \\* \\_ \\\\ done\n",
    "<http://auto.link/path> and <mailto:a@b.c> and <a@b.c>\n",
    "Setext\n===\n\nSetext two\nlines\n---\n",
    "## Closed ##\n#\n### \n#hashtag\n",
    "- tight\n- list\n  - nested\n    with lazy\n- end\n\n1. loose\n\n2. items\n",
    "> quote\n> - list in quote\n>   ```sh\n>   rm -rf /\n>   ```\n",
    "```python title=x\ncode\n```\n\n~~~\ntilde\n~~~\n\n    indented\n    code\n\n\n    more\n",
    "```\nunclosed\n\n",
    "- item\n  ```\n  unclosed in list\n\nafter\n",
    "| a | b |\n|:--|--:|\n| `x|y` | [l](u) |\n| 3 |\n",
    "<div>\n*not md*\n</div>\n\n<!-- comment -->\ntext <span>inline</span> <br/>\n",
    "hard  \nbreak\\\nsoft\nbreak\n",
    "[ref]\n\n[ref]: http://example.com \"Title\"\n[other]: <url with space>\n",
    "``code with ` tick`` and `` ` `` and `multi\nline`\n",
    "*em **strong** em* ***both*** _under_ __dunder__ **unclosed\n",
    "Tab\tinside\n\n\tcode by tab\n",
    "![outer ![inner](a.png)](b.png)\n",
    "[link with `code` and *em*](http://x \"t\") [empty]()\n",
    "Text\n***\n---\n___\n",
    "1) paren list\n2) second\n",
    "  # indented heading\n   > indented quote\n",
    "| only header |\n|---|\n",
    "a | b\n--|--\nc | d\n",
    "",
    "\n\n\n",
    "<script>\nalert(1)\n</script>\nafter\n",
    "Foo *bar\nbaz*\n",
    "[a](<b c>) [d](e 'f') [g](h (i))\n",
    "* a\n\n  b\n\n* c\n",
    "> a\nlazy\n> b\n\n>\n",
    "#5 not heading\n\\# not heading\n",
    # markdown-it-py ends a table at a list item of any number; the fast path must not read it as a row
    "| a | b |\n|---|---|\n| 1 | 2 |\n8. **x** y\n",
    # where the parsers differ, the fast path declines: CR line ends, NUL, a non-ASCII link (punycode
    # in markdown-it-py, percent-encoding in markdown-it.rs), nesting past the Rust parser's limit
    "line\r\nwith crlf\r\n",
    "nul\0byte\n",
    # a line that may start a block right after a quote's line: markdown-it-py ends the quote there,
    # markdown-it.rs took it as a lazy continuation; a pipe over a dashes line: a one-column table in
    # markdown-it-py, a setext heading in markdown-it.rs (both found by fuzzing, review)
    "## Steps\n\n> Back up the database before you start.\n2. Stop the service.\n3. Run the migration.\n",
    "> quote\n-\n",
    "## Flags\n\n| Flag |\n---\n| --dry-run |\n\nRun with the flag first.\n",
    "ünïcödé 中文 😀 `日本` [リンク](http://例え.jp)\n",
    ">" * 3000 + " deep\n",
]


@pytest.mark.parametrize("text", EDGE_CASES)
def test_edge_cases_read_the_same(text: str) -> None:
    require(mdfast.available(), "markdown-it-pyrs is not installed (no wheel for this Python): the fast path is off")
    assert project(parse_markdown(text)) == project(SLOW.parse(text))


@pytest.mark.parametrize("text", ["line\r\nwith crlf\r\n", "nul\0byte\n", "[リンク](http://例え.jp)\n", ">" * 3000 + " x\n",
                                  "| a | b |\n|---|---|\n| 1 | 2 |\n8. x\n"])
def test_the_fast_path_declines_what_it_cannot_promise(text: str) -> None:
    require(mdfast.available(), "markdown-it-pyrs is not installed (no wheel for this Python): the fast path is off")
    assert mdfast.parse(text) is None


def test_lines_are_shifted_like_markdown_it_py() -> None:
    text = "# H\n\n```sh\nrm -rf /\n```\n\n- [a](b)\n"
    assert project(parse_markdown(text, 7)) == project(parse_markdown(text, 7, fast=False))
    assert [t.map for t in parse_markdown(text, 7) if t.type == "fence"] == [[8, 11]]


def test_every_markdown_file_and_skill_body_of_the_corpus_reads_the_same() -> None:
    require(mdfast.available(), "markdown-it-pyrs is not installed (no wheel for this Python): the fast path is off")
    require(CORPUS.is_dir(), f"the shared corpus is not at {CORPUS}")
    differ, declined, files = [], 0, 0
    for path in sorted(p for p in CORPUS.rglob("*") if p.suffix.lower() in (".md", ".markdown", ".mdc") and p.is_file()):
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        texts = [text]
        if path.name == "SKILL.md":
            texts.append(Skill(path.parent, path.parent.name).body)
        for t in texts:
            files += 1
            fast = mdfast.parse(t)
            if fast is None:
                declined += 1
            elif project(fast) != project(SLOW.parse(t)):
                differ.append(str(path.relative_to(CORPUS)))
    assert files > 1500
    assert differ == []
    assert declined < files // 20  # the fast path is the rule, not the exception


def test_a_fast_token_is_a_whole_token() -> None:
    # mdfast builds its million tokens without Token's dataclass __init__; each must still have every
    # field, with Token's defaults (a field added to Token would be left unset and fail here)
    for fast, slow in ((mdfast._token("text", "", 0), Token("text", "", 0)),
                       (mdfast._token("td_open", "td", 1, [3, 4], attrs={"style": "text-align:left"}),
                        Token("td_open", "td", 1, map=[3, 4], attrs={"style": "text-align:left"})),
                       (mdfast._token("inline", "", 0, [1, 2], "a b", []), Token("inline", "", 0, map=[1, 2], content="a b", children=[])),
                       (mdfast._token("paragraph_open", "p", 1, [0, 1], hidden=True), Token("paragraph_open", "p", 1, map=[0, 1], hidden=True))):
        assert type(fast) is Token and fast == slow
    first, second = mdfast._token("text", "", 0), mdfast._token("text", "", 0)
    assert first.attrs is not second.attrs and first.meta is not second.meta  # no dict shared between tokens


def test_adjacent_text_is_one_token() -> None:
    # emphasis markers are not among the tokens a check reads, so the text inside joins the text around it
    tokens = mdfast.parse("a &amp; b\\*c *d* e\n")
    assert tokens is not None
    assert [(c.type, c.content) for c in tokens[0].children or []] == [("text", "a & b*c d e")]


#: The block tokens a check reads; the fast stream holds only these (and, inside inline tokens, no
#: emphasis markers and no link_close): the rest was half of the tokens and a third of the parse's time.
READ = ("heading_open", "inline", "fence", "code_block", "html_block", "tr_open", "tr_close")


@pytest.mark.parametrize("text", EDGE_CASES)
def test_the_fast_stream_is_markdown_it_pys_read_tokens_in_order(text: str) -> None:
    require(mdfast.available(), "markdown-it-pyrs is not installed (no wheel for this Python): the fast path is off")
    fast = mdfast.parse(text)
    if fast is not None:
        def first_lines(tokens: list[Token]) -> list[tuple[str, int | None]]:  # a setext heading's end differs, unread
            return [(t.type, t.map[0] if t.map else None) for t in tokens if t.type in READ]
        assert [t.type for t in fast] == [kind for kind, _ in first_lines(fast)]  # nothing else
        assert first_lines(fast) == first_lines(SLOW.parse(text))
        assert not {c.type for t in fast for c in t.children or ()} & {"em_open", "em_close", "strong_open", "strong_close", "link_close"}


#: Where the line-start tests of _parts_ways could slip: first and last lines, CR, tabs, blank and
#: white-space-only lines, quotes in quotes, a pipe two lines up, dashes behind four spaces.
_PARTS_WAYS_TEXTS = ["> q\nlazy", "> q", ">", "\n> q\n  x", "x\n>\n>\n-", " \t> q\n\t\t2. x", "> q\n>> more\n> \n",
                     "> q\n\n2. x", "> q\n \n", "> q\r\nx", "a > b\nc", "| a\n---", "| a\n    ---", "|\n   -  \t\n",
                     "| a\n\n---", "---\n| a", "a | b\n---\r\n", "| x\n-", "x\n| a\n --- \n", "|\n--x\n", "| a\n---\n"]


def test_parts_ways_finds_what_its_patterns_find() -> None:
    # _parts_ways skips to each line that may start one of the two constructs instead of trying the
    # patterns at every line start: the same answer for the corpus's Markdown and the edge cases
    rng = random.Random(12)  # and short texts of the characters the constructs are made of
    texts = list(_PARTS_WAYS_TEXTS) + EDGE_CASES + ["".join(rng.choices(">|- \t\n\rx2.", k=rng.randrange(30))) for _ in range(5000)]
    assert any(map(mdfast._quote_then_lazy, texts)) and any(map(mdfast._pipe_over_dashes, texts))
    assert not all(map(mdfast._quote_then_lazy, texts)) and not all(map(mdfast._pipe_over_dashes, texts))
    if CORPUS.is_dir():
        texts += [p.read_text("utf-8", errors="replace") for p in sorted(CORPUS.rglob("*.md"))]
    assert len(texts) > 50
    for text in texts:
        assert mdfast._quote_then_lazy(text) == (mdfast._QUOTE_THEN_LAZY.search(text) is not None), text[:80]
        assert mdfast._pipe_over_dashes(text) == (mdfast._PIPE_OVER_DASHES.search(text) is not None), text[:80]
