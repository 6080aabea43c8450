"""Tier 2's static model: a text's vector is the mean of its tokens' rows, whatever path computes it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from pytest_skilleval.tier2.chunking import chunk_markdown
from pytest_skilleval.tier2.embedders import static

REPO = Path(__file__).resolve().parent.parent.parent

# Texts where a tokenizer could split differently in context than word by word: accents and combining
# marks (the normaliser strips them), a combining mark right after a space, CJK (split per character),
# control and format characters, other Unicode spaces (not word breaks here), a word over WordPiece's
# 100-character limit ([UNK], dropped), punctuation runs, an empty text and one of spaces only.
EDGE = ["Café naïve résumé", "e\u0301 \u0301x", "处理 PDF 文件的表格", "tab\there\r\nline", "zero\u200bwidth joiner\u200d",
        "no\u00a0break\u2003em\u3000space", "vt\x0bff\x0cnul\x00bell\x07", "x" * 150 + " tail", "--flag=value,(a);[b]{c}!?",
        "", "   ", "\u2603\u2603 snow \U0001f600", "ALLCAPS CamelCase snake_case kebab-case", "İstanbul ǅemal ß"]


def _corpus_texts() -> list[str]:
    texts = list(EDGE)
    for path in sorted((REPO / "example_skills").rglob("*.md")):
        texts += [c.text for c in chunk_markdown(path.read_text("utf-8"), path.name)]
    return texts


def _reference(model: static.StaticEmbedder, texts: Sequence[str]) -> np.ndarray:
    """The definition: each whole text through the tokenizer, unknown tokens dropped, mean of the rows."""
    out = np.zeros((len(texts), model.dim), dtype=np.float32)
    for i, text in enumerate(texts):
        ids = [t for t in model.tokenizer.encode(text, add_special_tokens=False).ids if t != model.unk_id]
        if ids:
            out[i] = model.table[np.array(ids)].sum(0) / len(ids)
    norms = np.linalg.norm(out, axis=1, keepdims=True)
    return np.divide(out, norms, out=np.zeros_like(out), where=norms > 0)


class CountingTokenizer:
    """The real tokenizer, counting the strings it is asked to encode."""

    def __init__(self, inner: object) -> None:
        self.inner = inner
        self.encoded = 0

    def encode_batch_fast(self, texts: list[str], **kw: object) -> object:
        self.encoded += len(texts)
        return self.inner.encode_batch_fast(texts, **kw)  # type: ignore[attr-defined]

    def __getattr__(self, name: str) -> object:
        return getattr(self.inner, name)


def test_vectors_are_the_whole_text_tokenizers_mean_of_rows() -> None:
    """Words are tokenized once each and reused: the token ids of a text, and so its vector, must be
    exactly what the tokenizer gives for the whole text."""
    model = static.StaticEmbedder()
    texts = _corpus_texts()
    assert np.allclose(model.embed(texts), _reference(model, texts), atol=1e-6)
    assert np.array_equal(model.embed(texts[::-1]), model.embed(texts)[::-1])  # and does not depend on what came before


def test_each_distinct_word_is_tokenized_once_per_process() -> None:
    """Tokenizing was most of the static pass (~11 of 14 CPU s for 2,000 skills' chunks): chunks of one
    catalog share most of their words, so each distinct word goes to the tokenizer once."""
    model = static.StaticEmbedder()
    spy = CountingTokenizer(model.tokenizer)
    model.tokenizer = spy  # type: ignore[assignment]
    texts = ["Parse the CSV file and count the rows.", "Count the rows of the CSV file.", "the the the"]
    first = model.embed(texts)
    distinct = {w for t in texts for w in t.split()}
    assert spy.encoded <= len(distinct)
    spy.encoded = 0
    assert np.array_equal(model.embed(texts), first)
    assert spy.encoded == 0


def test_the_word_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(static, "MAX_WORDS", 5)
    model = static.StaticEmbedder()
    texts = _corpus_texts()[:40]
    expected = _reference(model, texts)
    for text, want in zip(texts, expected, strict=True):
        assert np.allclose(model.embed([text])[0], want, atol=1e-6)
        assert len(model.words) <= max(5, len(text.split()))
