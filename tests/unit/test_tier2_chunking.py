"""Tier 2 chunking: structure-aware chunks with exact file and line spans."""

from __future__ import annotations

from pathlib import Path

from conftest import manifest, write_skill

from pytest_skilleval.skill import Skill
from pytest_skilleval.tier2.chunking import chunk_markdown, chunk_skill, markdown_files, strip_frontmatter

BODY = """\
# Title

First paragraph, two lines
of text.

## Setup

- item one
- item two
  - nested under two
1. ordered

```bash
echo one

echo two
```

| a | b |
|---|---|
| 1 | 2 |

> quoted
> text
"""


def _spans(chunks: list) -> list[tuple[str, int, int, str]]:
    return [(c.kind, c.start_line, c.end_line, c.section) for c in chunks]


def test_blocks_become_chunks_with_line_spans_and_sections() -> None:
    chunks = chunk_markdown(BODY, "SKILL.md", first_line=5)
    assert _spans(chunks) == [
        ("paragraph", 7, 8, "Title"),
        ("list_item", 12, 12, "Title > Setup"),
        ("list_item", 13, 14, "Title > Setup"),  # the nested item stays inside its parent
        ("list_item", 15, 15, "Title > Setup"),
        ("code", 17, 21, "Title > Setup"),  # the fence is kept whole, blank line and all
        ("table", 23, 25, "Title > Setup"),
        ("blockquote", 27, 28, "Title > Setup"),
    ]
    code = chunks[4]
    assert code.text == "```bash\necho one\n\necho two\n```"
    assert code.location == "SKILL.md:17-21" and chunks[1].location == "SKILL.md:12"


def test_headings_are_context_not_chunks() -> None:
    chunks = chunk_markdown("# A\n\n## B\n\ntext under b\n\n# C\n\ntext under c\n", "x.md")
    assert [(c.text, c.section) for c in chunks] == [("text under b", "A > B"), ("text under c", "C")]


def test_frontmatter_is_stripped_and_lines_stay_those_of_the_file() -> None:
    body, start = strip_frontmatter("---\ntitle: x\n---\nHello\n")
    assert (body, start) == ("Hello\n", 4)
    unclosed = "---\nnot closed\n\nText\n"
    assert strip_frontmatter(unclosed) == (unclosed, 1)  # an unclosed block is text, not dropped
    assert strip_frontmatter("\ufeffA\r\nB\r\n") == ("A\nB\n", 1)


def test_skill_files_chunked_with_their_own_line_numbers(tmp_path: Path) -> None:
    root = write_skill(tmp_path, "demo-skill", {
        "SKILL.md": manifest(body="# Demo\n\nSee [the guide](references/guide.md) and [notes](NOTES.md).\n"),
        "references/guide.md": "---\ntitle: guide\n---\n# Guide\n\nGuide paragraph.\n",
        "NOTES.md": "Linked root note.\n",
        "README.md": "For people browsing the repo, not for the agent.\n",
        "BENCHMARK.md": "An evaluation card.\n",
        "evals/cases.md": "Evaluation notes.\n",
        "references/LICENSE.md": "License text.\n",
    })
    skill = Skill(root=root, key="demo-skill")
    assert markdown_files(skill) == ["SKILL.md", "NOTES.md", "references/guide.md"]
    located = [(c.file, c.start_line, c.text) for c in chunk_skill(skill)]
    assert located == [
        ("SKILL.md", 7, "See [the guide](references/guide.md) and [notes](NOTES.md)."),
        ("NOTES.md", 1, "Linked root note."),
        ("references/guide.md", 6, "Guide paragraph."),
    ]


def test_identical_text_has_identical_digest_whatever_the_whitespace() -> None:
    a, b = chunk_markdown("Same words here.\n\nSame   words\nhere.\n", "x.md")
    assert a.digest == b.digest and a.normalized == "Same words here."



def test_the_block_only_parse_has_the_blocks_of_the_full_parse() -> None:
    """Chunking skips markdown-it's inline pass; every block token and line span must stay that of the
    full markdown-it-py parse (``parse_markdown(fast=False)``) the chunks were cut from before."""
    from pytest_skilleval.skill import parse_markdown
    from pytest_skilleval.tier2.chunking import parse_blocks

    text = ("# Setup *now*\n\nInstall the tool `first`.\n\n| a | b |\n|---|---|\n| 1 | [x](y) |\n\n- one *item*\n  - nested\n\n"
            "> quoted\n> more\n\n1. first\n2. second\n\n```sh\nrun it\n```\n\n    indented\n\n<div>\nhtml\n</div>\n\nSetext\n---\n")
    def blocks(tokens: list) -> list[tuple[str, object, int]]:  # type: ignore[type-arg]
        return [(t.type, t.map, t.level) for t in tokens]
    full = parse_markdown(text, fast=False)
    assert blocks(parse_blocks(text)) == blocks(full)
    assert [t.content for t in parse_blocks(text) if t.type == "inline"] == [t.content for t in full if t.type == "inline"]
    assert [c.kind for c in chunk_markdown(text, "SKILL.md")] == ["paragraph", "table", "list_item", "blockquote", "list_item", "list_item",
                                                                  "code", "code", "html"]


# -- the Rust parser's blocks (issue 12: chunking was ~15 CPU s of a cold 10,000-skill catalog) ----------

def _markdown_texts() -> list[str]:
    """Every Markdown file of the shared corpus and every SKILL.md body, as chunking reads them."""
    from conftest import CORPUS, require

    require(CORPUS.is_dir(), f"the shared corpus is not at {CORPUS}")
    texts = []
    for path in sorted(p for p in CORPUS.rglob("*") if p.suffix.lower() in (".md", ".markdown", ".mdc") and p.is_file()):
        try:
            text = path.read_text("utf-8")
        except (OSError, UnicodeDecodeError):
            continue
        texts.append(strip_frontmatter(text)[0])
        if path.name == "SKILL.md":
            texts.append(Skill(path.parent, path.parent.name).body)
    return texts


def test_the_rust_parser_gives_markdown_it_pys_blocks_for_every_markdown_file_of_the_corpus() -> None:
    """The chunks are cut from markdown-it.rs's tree where it is installed; every block (kind, line span,
    heading title) must be markdown-it-py's, over the whole corpus, or the chunks and every Tier 2 score move."""
    from conftest import require

    from pytest_skilleval import mdfast
    from pytest_skilleval.tier2.chunking import fast_blocks, reference_blocks

    require(mdfast.available(), "markdown-it-pyrs is not installed (no wheel for this Python): the fast path is off")
    texts = _markdown_texts()
    fast = [fast_blocks(t) for t in texts]  # once per text (it was parsed twice, ~1.3 s of the test)
    declined = [t for t, blocks in zip(texts, fast, strict=True) if blocks is None]
    differ = [t[:80] for t, blocks in zip(texts, fast, strict=True) if blocks is not None and blocks != reference_blocks(t)]
    assert len(texts) > 2000
    assert differ == []
    assert len(declined) < len(texts) // 50  # the Rust parser is the rule


def test_edge_cases_give_the_same_blocks_or_are_declined() -> None:
    from conftest import require
    from test_mdfast import EDGE_CASES

    from pytest_skilleval import mdfast
    from pytest_skilleval.tier2.chunking import fast_blocks, reference_blocks

    require(mdfast.available(), "markdown-it-pyrs is not installed (no wheel for this Python): the fast path is off")
    extra = ["```\nunclosed\n\n\n", "# a\n## b\n### c\n## d\ntext\n", "Setext *x*\nsecond line\n===\n\npara\n",
             "- a\n\n\n- b\n\n  para in b\n\n      code in b\n\nafter\n", "   ```\n   indented fence\n   ```\n",
             "| a |\n|---|\n| 1 |\n- list after table\n", "<!--\nopen comment\n\ntext\n", "[x]: http://y\n\npara\n"]
    for text in EDGE_CASES + extra:
        fast = fast_blocks(text)
        assert fast is None or fast == reference_blocks(text), text
    for declined in ("line\r\nwith crlf\r\n", "nul\0byte\n", "| a | b |\n|---|---|\n| 1 | 2 |\n8. x\n"):
        assert fast_blocks(declined) is None


def test_a_document_the_rust_parser_declines_is_chunked_by_markdown_it_py() -> None:
    from pytest_skilleval.tier2.chunking import reference_blocks

    text = "# T\r\n\r\n| a | b |\r\n|---|---|\r\n| 1 | 2 |\r\n8. item\r\n"
    assert [c.kind for c in chunk_markdown(text, "x.md")] == [kind for kind, *_ in reference_blocks(text) if kind != "heading"]


def test_chunk_texts_are_the_chunks_texts() -> None:
    """The pooled body reads only the chunks' texts (no Chunk, no section): the same texts, in order."""
    from pytest_skilleval.tier2.chunking import chunk_texts

    for text in [BODY, "# T\r\n\r\npara\r\n\r\n- a\r\n- b\r\n", "", "# only a heading\n", *_markdown_texts()[:400]]:
        assert chunk_texts(text) == [c.text for c in chunk_markdown(text, "x.md")]
