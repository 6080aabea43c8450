"""The default embedder: a static (model2vec-style) model distilled from MiniLM, shipped in the package.

A text's vector is the mean of its tokens' rows in one 30k x 256 table, so embedding costs a
tokenizer pass and a gather: ~10k chunks per second on one core, which is what makes Tier 2 work
on a 10,000-skill catalog. Quality is below the transformer (see docs/tier2.md), so its similarity
bands are calibrated separately (``calibration.py``) under its own model id.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import json
import re
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pytest_skilleval.providers.base import Embedder, ProviderError

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "models" / "minilm-static-256"
#: Tokens gathered per batch: ~4 MiB of float32 rows, which stay in cache for the sums. (At 65,536
#: tokens every batch was a fresh 64 MiB array, and the gather cost more in page faults than in reads.)
TOKENS_PER_BATCH = 4096
#: Word breaks for the per-word token memory: characters the BERT normaliser and pre-tokenizer always
#: treat as whitespace, so no token spans one and a text's ids are its words' ids joined. (Other
#: Unicode spaces and control characters stay inside a "word" and go to the tokenizer in it.)
WORD = re.compile(r"[^ \t\n\r]+")
#: Distinct words remembered (~150 bytes each); past this the memory starts again.
MAX_WORDS = 200_000


class StaticEmbedder(Embedder):
    def __init__(self, model_dir: Path = DEFAULT_DIR, *, verify: bool = True) -> None:
        from tokenizers import Tokenizer

        meta_path = model_dir / "model.json"
        try:
            self.meta = json.loads(meta_path.read_text("utf-8")) if meta_path.exists() else {"id": model_dir.name}
            if verify:  # the table is data we ship; a corrupted file must not yield plausible scores
                for name, key in (("embeddings.npy", "embeddings_sha256"), ("tokenizer.json", "tokenizer_sha256")):
                    if _sha256(model_dir / name) != self.meta.get(key):
                        raise ProviderError("static", "config", f"{model_dir / name}: sha256 does not match model.json")
            self.table = np.load(model_dir / "embeddings.npy").astype(np.float32)
            self.tokenizer = Tokenizer.from_file(str(model_dir / "tokenizer.json"))
        except OSError as exc:
            raise ProviderError("static", "config", f"static model missing in {model_dir}: {exc}") from exc
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.unk_id = self.tokenizer.token_to_id("[UNK]")
        self.dim = int(self.table.shape[1])
        self.model_id = f"static:{self.meta['id']}"
        # Tokenizing was most of the static pass (the tokenizer runs ~400k tokens per CPU second), and
        # a catalog's chunks share most of their words: each distinct word is tokenized once, and a
        # text's ids are gathered from its words'. words[w] is w's row in starts/lengths; its ids
        # (unknown tokens already dropped) are ids[starts[row]:starts[row] + lengths[row]].
        self.words: dict[str, int] = {}
        self.starts = np.zeros(0, dtype=np.int64)
        self.lengths = np.zeros(0, dtype=np.int64)
        self.ids = np.zeros(0, dtype=np.int64)
        # one model per process (load_static): the word memory is learnt under a lock, so two threads
        # embedding at once cannot see a word whose ids are not in place yet
        self._learning = threading.Lock()

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        with self._learning:
            flat, lengths = self._token_ids(texts)
        ends = np.concatenate(([0], np.cumsum(lengths)))  # text k's tokens are flat[ends[k]:ends[k + 1]]
        start = 0
        while start < len(texts):  # as many whole texts as fit the token budget (at least one)
            stop = max(start + 1, int(np.searchsorted(ends, ends[start] + TOKENS_PER_BATCH, side="right")) - 1)
            self._pool(flat[ends[start]:ends[stop]], lengths[start:stop], out[start:stop])
            start = stop
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)  # an empty text stays the zero vector
        return out

    def _token_ids(self, texts: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
        """Every text's known token ids in one flat array (no array per text: a 10,000-skill catalog has
        ~360k chunks), and each text's count: what the tokenizer gives for the whole text, word by word."""
        per_text = [WORD.findall(t) for t in texts]
        words = list(itertools.chain.from_iterable(per_text))
        self._learn(words)
        rows = np.fromiter(map(self.words.__getitem__, words), dtype=np.int64, count=len(words))
        counts = self.lengths[rows]  # tokens of each word occurrence
        token_ends = np.concatenate(([0], np.cumsum(counts)))
        word_ends = np.concatenate(([0], np.cumsum(np.fromiter(map(len, per_text), dtype=np.int64, count=len(texts)))))
        lengths = np.diff(token_ends[word_ends])
        # position p of the flat array is token (p - first token of its word) of that word
        flat = self.ids[np.repeat(self.starts[rows] - token_ends[:-1], counts) + np.arange(token_ends[-1])]
        return flat, lengths

    def _learn(self, words: Sequence[str]) -> None:
        """Tokenize the words not seen yet (each once), keeping their known ids."""
        new = [w for w in dict.fromkeys(words) if w not in self.words]
        if not new:
            return
        if len(self.words) + len(new) > MAX_WORDS:  # start again; this call's words are all learnt below
            new = list(dict.fromkeys(words))
            self.words = {}
            self.starts = self.lengths = self.ids = np.zeros(0, dtype=np.int64)
        encodings = self.tokenizer.encode_batch_fast(new, add_special_tokens=False)
        counts = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        ids = np.fromiter(itertools.chain.from_iterable(e.ids for e in encodings), dtype=np.int64, count=int(counts.sum()))
        if self.unk_id is not None:  # [UNK] carries no meaning: it is not part of the mean
            known = ids != self.unk_id
            counts = np.bincount(np.repeat(np.arange(len(new)), counts)[known], minlength=len(new))
            ids = ids[known]
        first = len(self.words)
        self.words.update(zip(new, range(first, first + len(new)), strict=True))
        self.starts = np.concatenate((self.starts, len(self.ids) + np.concatenate(([0], np.cumsum(counts)[:-1]))))
        self.lengths = np.concatenate((self.lengths, counts))
        self.ids = np.concatenate((self.ids, ids))

    def _pool(self, flat: np.ndarray, lengths: np.ndarray, out: np.ndarray) -> None:
        keep = lengths > 0
        if not keep.any():
            return
        offsets = np.concatenate(([0], np.cumsum(lengths[keep])[:-1]))
        sums = np.add.reduceat(self.table[flat], offsets, axis=0)
        out[keep] = sums / lengths[keep, None]


@functools.cache
def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()
