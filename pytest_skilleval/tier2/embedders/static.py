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
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pytest_skilleval.providers.base import Embedder, ProviderError

DEFAULT_DIR = Path(__file__).resolve().parent.parent / "models" / "minilm-static-256"
#: Tokens gathered per batch: ~4 MiB of float32 rows, which stay in cache for the sums. (At 65,536
#: tokens every batch was a fresh 64 MiB array, and the gather cost more in page faults than in reads.)
TOKENS_PER_BATCH = 4096


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

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
        # every text's ids in one flat array (no array per text: a 10,000-skill catalog has ~250k chunks)
        lengths = np.fromiter((len(e.ids) for e in encodings), dtype=np.int64, count=len(encodings))
        flat = np.fromiter(itertools.chain.from_iterable(e.ids for e in encodings), dtype=np.int64, count=int(lengths.sum()))
        if self.unk_id is not None:
            known = flat != self.unk_id
            lengths = np.bincount(np.repeat(np.arange(len(texts)), lengths)[known], minlength=len(texts))
            flat = flat[known]
        ends = np.concatenate(([0], np.cumsum(lengths)))  # text k's tokens are flat[ends[k]:ends[k + 1]]
        start = 0
        while start < len(texts):  # as many whole texts as fit the token budget (at least one)
            stop = max(start + 1, int(np.searchsorted(ends, ends[start] + TOKENS_PER_BATCH, side="right")) - 1)
            self._pool(flat[ends[start]:ends[stop]], lengths[start:stop], out[start:stop])
            start = stop
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)  # an empty text stays the zero vector
        return out

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
