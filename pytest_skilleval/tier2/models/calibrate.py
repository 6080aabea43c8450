"""Fit the static model's calibration (``calibration.SCALES``) against MiniLM on a skills corpus.

For each aspect, every pair is scored by both models. For each band boundary ``t`` on the reference
(MiniLM) scale, the static knot is the raw cosine above which the static model finds as many pairs
as MiniLM finds at ``t`` (quantile matching), so each band flags about as many pairs under either
backend. Chunks use the pairs inside one skill (what dedup compares); at the intra threshold the
knot is lowered to keep ``RECALL`` of MiniLM's pairs, because a chat model verifies those
candidates and a missed duplicate is the costlier error. Also prints agreement figures for
docs/tier2.md. Slow the first time (MiniLM on ~50k chunks); vectors are kept in the Tier 2 cache::

    .venv/bin/python pytest_skilleval/tier2/models/calibrate.py ../shared/corpus [cache-dir]
"""

from __future__ import annotations

import random
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np

REFERENCE = (0.50, 0.75, 0.80, 0.90, 0.95)
RECALL = 0.90
MIN_PAIRS = 20
CHUNK_SAMPLE = 200  # skills whose chunks are paired for the "chunk" aspect


def _ranks(x: np.ndarray) -> np.ndarray:
    r = np.empty(len(x))
    r[np.argsort(x, kind="stable")] = np.arange(len(x))
    return r


def fit(ref: np.ndarray, raw: np.ndarray, recall_at: float | None = None) -> tuple[tuple[float, ...], tuple[float, ...], dict[str, float]]:
    knots_raw, knots_ref = [-1.0], [-1.0]
    report: dict[str, float] = {"pairs": float(len(ref)), "spearman": float(np.corrcoef(_ranks(ref), _ranks(raw))[0, 1])}
    ordered = np.sort(raw)[::-1]
    for t in REFERENCE:
        positives = ref >= t
        n = int(positives.sum())
        if n == 0:
            continue
        k = float(ordered[n - 1])
        if n < MIN_PAIRS:  # too few pairs to place a knot: continue the previous segment towards (1, 1)
            k = knots_raw[-1] + (t - knots_ref[-1]) / (1.0 - knots_ref[-1]) * (1.0 - knots_raw[-1])
        if recall_at is not None and t == recall_at:
            k = min(k, float(np.quantile(raw[positives], 1.0 - RECALL)))
        report[f"n>={t}"] = float(n)
        report[f"recall@{t}"] = float((raw[positives] >= k).mean())
        knots_raw.append(max(k, knots_raw[-1] + 1e-3))  # strictly increasing, or the inverse map breaks
        knots_ref.append(t)
    if knots_raw[-1] < 1.0:
        knots_raw.append(1.0)
        knots_ref.append(1.0)
    return tuple(round(x, 3) for x in knots_raw), tuple(knots_ref), report


def _pairs(vectors: np.ndarray, groups: Sequence[int] | None = None) -> np.ndarray:
    iu = np.triu_indices(len(vectors), 1)
    sims = (vectors @ vectors.T)[iu]
    if groups is None:
        return sims
    g = np.asarray(groups)
    return sims[g[iu[0]] == g[iu[1]]]


def main(corpus: Path, cache_dir: Path) -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
    from pytest_skilleval.skill import Skill
    from pytest_skilleval.tier2.cache import CachedEmbedder, EmbeddingCache
    from pytest_skilleval.tier2.chunking import MIN_DEDUP_CHARS, chunk_skill
    from pytest_skilleval.tier2.embedders.onnx_minilm import OnnxMiniLMEmbedder
    from pytest_skilleval.tier2.embedders.static import StaticEmbedder
    from pytest_skilleval.tier2.inter import SkillText, body_vectors

    models = [CachedEmbedder(e, EmbeddingCache(cache_dir, e.model_id)) for e in (OnnxMiniLMEmbedder(), StaticEmbedder())]
    skills = [Skill(root=p.parent, key=str(p.parent.relative_to(corpus))) for p in sorted(corpus.rglob("SKILL.md"))]
    texts = [SkillText.of(s) for s in skills]
    sample = random.Random(7).sample(range(len(skills)), min(CHUNK_SAMPLE, len(skills)))
    chunks, owner = [], []
    for i in sample:
        for c in chunk_skill(skills[i]):
            if len(c.normalized) >= MIN_DEDUP_CHARS:
                chunks.append(c.text)
                owner.append(i)
    scores: dict[str, list[np.ndarray]] = {"description": [], "body": [], "chunk": []}
    for m in models:
        scores["description"].append(_pairs(m.embed([t.short_text for t in texts])))
        scores["body"].append(_pairs(body_vectors(texts, m)))
        scores["chunk"].append(_pairs(m.embed(chunks), owner))
    print(f"# {len(skills)} skills, {len(chunks)} chunks from {len(sample)} sampled skills")
    for aspect, (ref, raw) in scores.items():
        knots_raw, knots_ref, report = fit(ref, raw, recall_at=0.80 if aspect == "chunk" else None)
        print(f'("{models[1].model_id}", "{aspect}"): Scale(raw={knots_raw}, ref={knots_ref}),')
        print("#   " + ", ".join(f"{k}={v:g}" if k.startswith(("n>=", "pairs")) else f"{k}={v:.3f}" for k, v in report.items()))
    return 0


if __name__ == "__main__":
    corpus = Path(sys.argv[1] if len(sys.argv) > 1 else "../shared/corpus").resolve()
    raise SystemExit(main(corpus, Path(sys.argv[2] if len(sys.argv) > 2 else ".skilleval-cache").resolve()))
