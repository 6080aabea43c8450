"""Embeddings cached on disk by (model id, content hash), shared by every process of a run.

The provider layer's general cache (issue 4) had not landed when Tier 2 was written, so this is a
small one of Tier 2's own, shaped for vectors: entries are written in immutable *packs* (a keys
file and a float16 matrix), so concurrent xdist workers never write the same file and need no
lock; a reader that misses simply rescans for packs other workers wrote since. Many small packs
are merged now and then, so a rerun over 10,000 skills opens a handful of files, not thousands.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pytest_skilleval import atomic
from pytest_skilleval.providers.base import Embedder

KEY_BYTES = 16  # 128 bits of sha256: collisions are not a practical concern at catalog sizes
#: Merge packs once a model's folder holds more than this many.
MERGE_AT = 64


def text_key(model_id: str, text: str, kind: str = "text") -> bytes:
    return hashlib.sha256(f"{model_id}\0{kind}\0{text}".encode()).digest()[:KEY_BYTES]


class EmbeddingCache:
    """Vectors of one model, by key. ``get`` returns what is present; ``put`` adds a pack."""

    def __init__(self, root: Path, model_id: str, *, read_only: bool = False) -> None:
        slug = re.sub(r"[^A-Za-z0-9._-]+", "_", model_id)[:60]
        self.dir = root / "embeddings" / f"{slug}-{hashlib.sha256(model_id.encode()).hexdigest()[:12]}"
        self.model_id = model_id
        self.read_only = read_only  # --skilleval-cache=read: use entries, never write
        self._index: dict[bytes, tuple[str, int]] = {}  # key -> (pack name, row)
        self._packs: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # pack name -> (keys, vectors)

    def _scan(self) -> None:
        """Load packs written since the last scan (by this or another process)."""
        try:
            names = sorted(p.name.removesuffix(".keys.npy") for p in self.dir.glob("*.keys.npy"))
        except OSError:
            return
        for name in names:
            if name in self._packs:
                continue
            try:
                keys = np.load(self.dir / f"{name}.keys.npy")
                vecs = np.load(self.dir / f"{name}.vecs.npy", mmap_mode="r")
            except (OSError, ValueError):
                continue  # being merged away by another worker; its entries live on in the merged pack
            self._add(name, keys, vecs)

    def _add(self, name: str, keys: np.ndarray, vecs: np.ndarray) -> None:
        self._packs[name] = (keys, vecs)
        raw = keys.tobytes()
        for row in range(len(keys)):
            self._index[raw[row * KEY_BYTES:(row + 1) * KEY_BYTES]] = (name, row)

    def get(self, keys: Sequence[bytes]) -> dict[int, np.ndarray]:
        """{position in ``keys``: vector} for the keys that are cached."""
        positions, vectors = self.lookup(keys)
        return dict(zip(positions.tolist(), vectors, strict=True))

    def lookup(self, keys: Sequence[bytes]) -> tuple[np.ndarray, np.ndarray]:
        """(positions in ``keys`` that are cached, their float32 vectors in that order), read with one
        gather per pack: a catalog's chunks repeat across skills, and reading ~300,000 cached rows one
        at a time was ~10 % of the static pass over a cold 10,000-skill catalog."""
        if any(k not in self._index for k in keys):
            self._scan()
        by_pack: dict[str, tuple[list[int], list[int]]] = {}
        for i, key in enumerate(keys):
            hit = self._index.get(key)
            if hit is not None:
                positions, rows = by_pack.setdefault(hit[0], ([], []))
                positions.append(i)
                rows.append(hit[1])
        if not by_pack:
            return np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        order = np.array([i for positions, _ in by_pack.values() for i in positions], dtype=np.int64)
        vectors = np.concatenate([np.asarray(self._packs[name][1][rows], dtype=np.float32) for name, (_, rows) in by_pack.items()])
        return order, vectors

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        if not keys or self.read_only:
            return
        try:
            key_array = np.frombuffer(b"".join(keys), dtype=np.uint8).reshape(-1, KEY_BYTES)
            self._write(key_array, np.asarray(vectors, dtype=np.float16))
            if len(self._packs) > MERGE_AT:
                self._merge()
        except OSError:
            pass  # a cache that cannot be written only costs speed

    def _write(self, keys: np.ndarray, vecs: np.ndarray) -> None:
        name = f"{time.time_ns():x}-{os.getpid()}-{hashlib.sha256(keys.tobytes()).hexdigest()[:8]}"
        # vectors first: a pack exists for readers only once its keys file is in place
        atomic.write_atomic(self.dir / f"{name}.vecs.npy", _npy(vecs))
        atomic.write_atomic(self.dir / f"{name}.keys.npy", _npy(keys))
        self._add(name, keys, vecs)

    def _merge(self) -> None:
        """Tiered: merge the smaller half of the packs, so a vector is rewritten O(log n) times, not
        once per merge (rewriting everything each time would be quadratic over a big catalog)."""
        self._scan()
        small = sorted(self._packs, key=lambda n: (len(self._packs[n][0]), n))[:max(2, MERGE_AT // 2)]
        keys = np.concatenate([self._packs[n][0] for n in small])
        vecs = np.concatenate([np.asarray(self._packs[n][1], dtype=np.float16) for n in small])
        self._write(keys, vecs)
        for name in small:
            del self._packs[name]
            for suffix in (".keys.npy", ".vecs.npy"):
                (self.dir / f"{name}{suffix}").unlink(missing_ok=True)


def _npy(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


class CachedEmbedder(Embedder):
    """Wraps an embedder: cached texts cost a lookup, the rest are embedded once and stored."""

    def __init__(self, inner: Embedder, cache: EmbeddingCache | None) -> None:
        self.inner = inner
        self.cache = cache
        self.model_id = inner.model_id
        self.dim = inner.dim
        self.embedded = 0  # texts actually sent to the model by this process: the benchmark reads it

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_keyed(texts, [text_key(self.model_id, t) for t in texts])

    def embed_keyed(self, texts: Sequence[str], keys: Sequence[bytes]) -> np.ndarray:
        if self.cache is not None:
            positions, cached = self.cache.lookup(keys)
        else:
            positions, cached = np.zeros(0, dtype=np.int64), np.zeros((0, 0), dtype=np.float32)
        is_cached = np.zeros(len(texts), dtype=bool)
        is_cached[positions] = True
        todo = np.flatnonzero(~is_cached)
        # identical texts (repeated boilerplate is common) are embedded once: unique[key] = (its row in fresh, first position)
        unique: dict[bytes, tuple[int, int]] = {}
        for i in todo.tolist():
            unique.setdefault(keys[i], (len(unique), i))
        fresh = np.asarray(self.inner.embed([texts[i] for _, i in unique.values()]), dtype=np.float32) if unique else None
        if fresh is not None:  # at the cache's precision, so a result never depends on whether the cache was warm
            fresh = fresh.astype(np.float16).astype(np.float32)
        dim = fresh.shape[1] if fresh is not None else (cached.shape[1] if len(positions) else self.dim)
        out = np.zeros((len(texts), dim), dtype=np.float32)
        if len(positions):
            out[positions] = cached
        if fresh is not None:
            self.embedded += len(unique)
            out[todo] = fresh[np.fromiter((unique[keys[i]][0] for i in todo.tolist()), dtype=np.int64, count=len(todo))]
            if self.cache is not None:
                self.cache.put(list(unique), fresh)
        norms = np.linalg.norm(out, axis=1, keepdims=True)  # float16 storage: renormalise
        np.divide(out, norms, out=out, where=norms > 0)
        return out
