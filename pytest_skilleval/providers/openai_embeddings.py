"""Embeddings from any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, NVIDIA Build, vLLM, ...).

Vectors come back L2-normalised float32 so that cosine similarity is a dot product and Tier 2's
thresholds mean the same for every backend of one ``model_id``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_skilleval.providers.base import Embedder, ProviderError
from pytest_skilleval.providers.openai_chat import import_openai
from pytest_skilleval.providers.retry import MalformedReply, RetryPolicy, call_with_retries, sdk_classifier


def normalise(rows: Any) -> np.ndarray:
    """Rows scaled to unit length; a zero or non-finite row is a broken reply, not a vector."""
    arr = np.asarray(rows, dtype=np.float32)
    if arr.ndim != 2 or not np.isfinite(arr).all():
        raise MalformedReply(f"embeddings are not a finite 2-d array (shape {arr.shape})")
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    if arr.shape[0] and (norms == 0).any():
        raise MalformedReply("an embedding is the zero vector")
    return (arr / norms).astype(np.float32) if arr.shape[0] else arr


class OpenAIEmbedder(Embedder):
    def __init__(self, model: str, *, api_key: str, base_url: str | None = None, name: str = "openai",
                 timeout: float = 120.0, retry: RetryPolicy | None = None, batch_size: int = 256,
                 extra_body: dict[str, Any] | None = None, client: Any = None) -> None:
        if not model:
            raise ProviderError(name, "config", "no embedding model configured (set SKILLEVAL_EMBEDDING_MODEL)")
        openai = import_openai()
        self.name, self.model, self.base_url = name, model, base_url or ""
        self.model_id = f"{name}:{model}"
        self.dim = 0  # learnt from the first reply
        self.batch_size = max(1, batch_size)
        self.extra_body = extra_body  # e.g. NVIDIA's retrieval models need {"input_type": "passage"}
        self.retry = retry or RetryPolicy()
        self.client = client or openai.OpenAI(api_key=api_key, base_url=base_url, timeout=timeout, max_retries=0)
        self._classify = sdk_classifier(openai)

    def _batch(self, texts: list[str]) -> np.ndarray:
        def once() -> np.ndarray:
            # encoding_format="float": plain JSON numbers, no dependence on the SDK's base64 decoding.
            reply = self.client.embeddings.create(model=self.model, input=texts, encoding_format="float", extra_body=self.extra_body)
            data = getattr(reply, "data", None) or []
            by_index = {getattr(d, "index", -1): getattr(d, "embedding", None) for d in data}
            if sorted(by_index) != list(range(len(texts))):
                raise MalformedReply(f"asked for {len(texts)} embeddings, got indices {sorted(by_index)[:10]}")
            rows = [by_index[i] for i in range(len(texts))]
            if any(not isinstance(r, list) or not r for r in rows) or len({len(r) for r in rows}) != 1:  # type: ignore[arg-type]
                raise MalformedReply("embeddings of differing or zero length")
            return normalise(rows)

        return call_with_retries(once, self._classify, self.name, self.retry)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        parts = [self._batch(texts[i:i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        out = np.concatenate(parts) if len(parts) > 1 else parts[0]
        if self.dim and out.shape[1] != self.dim:
            raise ProviderError(self.name, "malformed", f"embedding size changed from {self.dim} to {out.shape[1]}")
        self.dim = int(out.shape[1])
        return out
