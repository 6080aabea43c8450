"""On-disk cache of model calls, so an unchanged rerun makes zero upstream requests.

Chat replies are keyed by sha256 over (provider, model, base URL, the full request including its
schema, and the attempt index): repeated attempts of one trial stay distinct calls, while a rerun of
the same attempt is served from disk. Embeddings are keyed per text (model id + sha256 of the text),
so a batch with a few new texts embeds only those.

Writers never coordinate: every entry is written whole to a temporary file and renamed
(:func:`~pytest_skilleval.atomic.write_atomic`), so ``-n 8`` workers racing on one key each leave a
complete entry and readers never see half of one. An entry that does not parse or validate is
ignored (and replaced in ``readwrite`` mode). A failed write is counted, never fatal: a cache that
cannot be written must not turn a good judgement into an error.
"""

from __future__ import annotations

import hashlib
import io
import json
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from pytest_skilleval.atomic import write_atomic
from pytest_skilleval.providers.base import ChatProvider, ChatReply, ChatRequest, Embedder

if TYPE_CHECKING:
    import numpy as np

FORMAT = 1  # bump to orphan every entry when the key or the stored shape changes


@dataclass
class CacheStats:
    hits: int = 0
    misses: int = 0
    writes: int = 0
    corrupt: int = 0
    write_errors: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, name: str, n: int = 1) -> None:
        with self._lock:
            setattr(self, name, getattr(self, name) + n)


def _sha(data: str) -> str:
    return hashlib.sha256(data.encode("utf-8")).hexdigest()


class ProviderCache:
    """``mode``: off | read | readwrite. ``root`` None means off whatever the mode."""

    def __init__(self, root: Path | None, mode: str = "readwrite") -> None:
        if mode not in ("off", "read", "readwrite"):
            raise ValueError(f"unknown cache mode {mode!r}")
        self.root = Path(root) if root is not None else None
        self.mode = mode if root is not None else "off"
        self.stats = CacheStats()

    @property
    def readable(self) -> bool:
        return self.mode in ("read", "readwrite")

    @property
    def writable(self) -> bool:
        return self.mode == "readwrite"

    def path(self, kind: str, digest: str, suffix: str) -> Path:
        assert self.root is not None
        return self.root / kind / digest[:2] / f"{digest}{suffix}"

    def read(self, path: Path) -> bytes | None:
        if not self.readable:
            return None
        try:
            if path.is_symlink():  # the cache may sit in a checkout; never follow a planted link
                self.stats.add("corrupt")
                return None
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError:
            self.stats.add("corrupt")
            return None

    def write(self, path: Path, data: bytes | str) -> None:
        if not self.writable:
            return
        try:
            write_atomic(path, data)
        except OSError:
            self.stats.add("write_errors")
        else:
            self.stats.add("writes")

    # -- chat -----------------------------------------------------------------------------------------

    @staticmethod
    def chat_key(provider: str, model: str, base_url: str, request: ChatRequest) -> str:
        resolved = request.model_copy(update={"model": request.model or model})
        dumped = resolved.model_dump(mode="json", exclude={"sample"} if not request.sample else None)
        blob = {"format": FORMAT, "provider": provider, "model": request.model or model, "base_url": base_url, "request": dumped}
        return _sha(json.dumps(blob, sort_keys=True, ensure_ascii=False))

    def get_reply(self, key: str) -> ChatReply | None:
        if not self.readable:
            return None
        data = self.read(self.path("chat", key, ".json"))
        if data is None:
            return None
        try:
            entry = json.loads(data)
            if entry.get("format") != FORMAT or entry.get("key") != key:
                raise ValueError("entry of another key or format")
            return ChatReply.model_validate(entry["reply"]).model_copy(update={"cached": True})
        except (ValueError, KeyError, TypeError, AttributeError, ValidationError):
            self.stats.add("corrupt")
            return None

    def put_reply(self, key: str, reply: ChatReply) -> None:
        stored = reply.model_copy(update={"cached": False}).model_dump(mode="json")
        self.write(self.path("chat", key, ".json"), json.dumps({"format": FORMAT, "key": key, "reply": stored}, sort_keys=True))

    # -- embeddings -----------------------------------------------------------------------------------

    @staticmethod
    def embedding_key(model_id: str, text: str) -> str:
        return _sha(f"{FORMAT}\0{model_id}\0{_sha(text)}")

    def _vector_path(self, model_id: str, key: str) -> Path:
        return self.path(f"embeddings/{_sha(model_id)[:16]}", key, ".npy")

    def get_vector(self, model_id: str, text: str) -> np.ndarray | None:
        import numpy as np  # only when vectors are cached: importing numpy is ~70 ms of every run
        if not self.readable:
            return None
        data = self.read(self._vector_path(model_id, self.embedding_key(model_id, text)))
        if data is None:
            return None
        try:
            vec = np.load(io.BytesIO(data), allow_pickle=False)
            if vec.dtype != np.float32 or vec.ndim != 1 or not vec.size or not np.isfinite(vec).all() \
                    or abs(float(np.linalg.norm(vec)) - 1.0) > 1e-3:
                raise ValueError("not a unit float32 vector")
            return vec
        except (ValueError, OSError, EOFError):
            self.stats.add("corrupt")
            return None

    def put_vector(self, model_id: str, text: str, vec: np.ndarray) -> None:
        import numpy as np  # only when vectors are cached: importing numpy is ~70 ms of every run
        if not self.writable:
            return
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(vec, dtype=np.float32), allow_pickle=False)
        self.write(self._vector_path(model_id, self.embedding_key(model_id, text)), buf.getvalue())


class CachedChat(ChatProvider):
    """Any :class:`ChatProvider` (a user's too) with the disk cache in front. Errors are never cached."""

    def __init__(self, inner: ChatProvider, cache: ProviderCache) -> None:
        self.inner, self.cache = inner, cache
        self.name, self.model = inner.name, inner.model
        self.base_url: str = getattr(inner, "base_url", "") or ""

    def chat(self, request: ChatRequest) -> ChatReply:
        if not self.cache.readable and not self.cache.writable:
            return self.inner.chat(request)
        key = self.cache.chat_key(self.name, self.model, self.base_url, request)
        hit = self.cache.get_reply(key)
        if hit is not None:
            self.cache.stats.add("hits")
            return hit
        self.cache.stats.add("misses")
        reply = self.inner.chat(request)
        if not reply.cached:  # an inner cache's hit is already on disk somewhere
            self.cache.put_reply(key, reply)
        return reply


class CachedEmbedder(Embedder):
    """Any :class:`Embedder` with a per-text disk cache: only texts never seen are sent to ``inner``."""

    def __init__(self, inner: Embedder, cache: ProviderCache) -> None:
        self.inner, self.cache = inner, cache
        self.model_id = inner.model_id
        self.dim = inner.dim

    def _embed_inner(self, texts: list[str]) -> np.ndarray:
        import numpy as np  # only when vectors are cached: importing numpy is ~70 ms of every run
        fresh = np.asarray(self.inner.embed(texts), dtype=np.float32)
        if fresh.ndim != 2 or fresh.shape[0] != len(texts):
            raise ValueError(f"{type(self.inner).__name__}.embed returned shape {fresh.shape} for {len(texts)} texts")
        return fresh

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np  # only when vectors are cached: importing numpy is ~70 ms of every run
        texts = list(texts)
        unique = list(dict.fromkeys(texts))
        found = {t: v for t in unique if (v := self.cache.get_vector(self.model_id, t)) is not None}
        sizes = {v.shape[0] for v in found.values()} | ({self.dim} if self.dim else set())
        if len(sizes) > 1:  # vectors of two sizes under one model id (the model changed): trust none
            self.cache.stats.add("corrupt", len(found))
            found = {}
        missing = [t for t in unique if t not in found]
        self.cache.stats.add("hits", len(found))
        if missing:
            self.cache.stats.add("misses", len(missing))
            fresh = self._embed_inner(missing)
            if found and fresh.shape[1] not in sizes:  # same story, discovered by the fresh reply
                self.cache.stats.add("corrupt", len(found))
                found, missing = {}, unique
                fresh = self._embed_inner(unique)
            for text, vec in zip(missing, fresh, strict=True):
                found[text] = vec
                self.cache.put_vector(self.model_id, text, vec)
        if found:
            self.dim = int(next(iter(found.values())).shape[0])
        if not texts:
            return np.zeros((0, self.dim or self.inner.dim), dtype=np.float32)
        return np.stack([found[t] for t in texts]).astype(np.float32, copy=False)
