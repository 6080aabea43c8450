"""Similarity bands, and the per-backend calibration that lets one set of bands serve every model.

The bands (EXACT_DUPLICATE >= 0.95 … LOOSELY_RELATED >= 0.50, and 0.80 inside a skill) are stated
on a *reference scale*: that of transformer sentence embeddings (MiniLM here, OpenAI-style models in
SkillEvaluator), where those numbers mean what they say. Other models spread cosines differently:
the shipped static model puts two unrelated skill bodies at ~0.79. So each backend has a monotone
piecewise-linear map from its raw cosine to the reference scale, fitted on the 754-skill corpus by
matching pair counts (quantiles) against MiniLM (``models/calibrate.py`` reproduces the numbers).
Results record the backend id and the map, so a score can always be traced to what produced it.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from pytest_skilleval.results import Severity

#: (name, lower bound on the reference scale, severity, blocking)
BANDS: tuple[tuple[str, float, Severity, bool], ...] = (
    ("EXACT_DUPLICATE", 0.95, Severity.CRITICAL, True),
    ("HIGH_SIMILARITY", 0.90, Severity.HIGH, True),
    ("SIMILAR", 0.75, Severity.MEDIUM, False),
    ("LOOSELY_RELATED", 0.50, Severity.LOW, False),
)
LOWEST_BAND = BANDS[-1][1]
INTRA_THRESHOLD = 0.80


@dataclass(frozen=True)
class Scale:
    """raw cosine -> reference scale, by linear interpolation between knots (identity by default)."""

    raw: tuple[float, ...] = (-1.0, 1.0)
    ref: tuple[float, ...] = (-1.0, 1.0)
    source: str = "identity: the bands are stated on this model's scale"

    def __call__(self, x: np.ndarray | float) -> np.ndarray:
        return np.asarray(np.interp(x, self.raw, self.ref))

    def map_block(self, block: np.ndarray, floor: float = -1.0) -> np.ndarray:
        """The map over a big float32 block of cosines (the catalog similarity matrix), overwriting
        ``block``; entries that map below ``floor`` become -inf. A lookup table over the raw range
        that reaches ``floor`` (16k bins: it stays in cache), a few in-place passes: ~4x faster than
        np.interp, which also widens to float64. Error <= half a bin times the steepest slope."""
        lo = self.raw_for(floor) if floor > self.ref[0] else -1.0
        lut = _table(self.raw, self.ref, lo)
        bins = len(lut) - 2
        np.subtract(block, np.float32(lo), out=block)
        np.multiply(block, np.float32(bins / (1.0 - lo)), out=block)
        block += np.float32(1.5)  # bin 0 holds "below lo"; +0.5 rounds to the nearest bin
        np.clip(block, 0, bins + 1, out=block)  # float rounding can step just past 1
        return lut[block.astype(np.int32)]

    def raw_for(self, reference: float) -> float:
        """The raw cosine that maps to ``reference`` (the inverse map; knots are increasing)."""
        return float(np.interp(reference, self.ref, self.raw))

    def describe(self) -> dict[str, object]:
        return {"raw": list(self.raw), "reference": list(self.ref), "source": self.source}


LUT_BINS = 1 << 14


@functools.cache
def _table(raw: tuple[float, ...], ref: tuple[float, ...], lo: float) -> np.ndarray:
    """[-inf (below lo), f(lo), ..., f(1), f(1)]: the last entry catches an index rounded to bins + 1."""
    values = np.interp(np.linspace(lo, 1.0, LUT_BINS + 1), raw, ref).astype(np.float32)
    return np.concatenate([np.array([-np.inf], dtype=np.float32), values[:-1], values[-1:]])


IDENTITY = Scale()
_FIT = "quantile-matched to onnx:all-MiniLM-L6-v2-onnx-int8 on the 754-skill corpus (models/calibrate.py)"
#: Per (model id, aspect). Aspects: "description" (name: description), "body" (pooled SKILL.md body),
#: "chunk" (one paragraph / list item / code block, inside a skill).
SCALES: dict[tuple[str, str], Scale] = {
    # Spearman vs MiniLM over the corpus' 283,881 skill pairs: 0.45. Few pairs above 0.90 (4): the top
    # knots continue the last fitted segment towards (1, 1).
    ("static:minilm-static-256", "description"): Scale(
        raw=(-1.0, 0.705, 0.854, 0.886, 0.943, 0.971, 1.0), ref=(-1.0, 0.5, 0.75, 0.8, 0.9, 0.95, 1.0), source=_FIT),
    # Spearman 0.65 over the same pairs; of the static model's HIGH_SIMILARITY+ pairs, 99 % are >= 0.75 under MiniLM.
    ("static:minilm-static-256", "body"): Scale(
        raw=(-1.0, 0.832, 0.92, 0.934, 0.957, 0.973, 1.0), ref=(-1.0, 0.5, 0.75, 0.8, 0.9, 0.95, 1.0), source=_FIT),
    # Pairs inside one skill (1.13 M); the 0.80 knot keeps 90 % of MiniLM's pairs (a chat model verifies them).
    ("static:minilm-static-256", "chunk"): Scale(
        raw=(-1.0, 0.687, 0.845, 0.846, 0.935, 0.976, 1.0), ref=(-1.0, 0.5, 0.75, 0.8, 0.9, 0.95, 1.0), source=_FIT),
}


def scale_for(model_id: str, aspect: str) -> Scale:
    return SCALES.get((model_id, aspect), IDENTITY)


def band(reference_score: float) -> tuple[str, Severity, bool] | None:
    for name, lower, severity, blocking in BANDS:
        if reference_score >= lower:
            return name, severity, blocking
    return None


def bands_record(model_ids: dict[str, str]) -> dict[str, object]:
    """What a result stores about its bands: the fixed bands plus each aspect's backend and map."""
    return {
        "bands": {name: lower for name, lower, _s, _b in BANDS},
        "backends": {aspect: {"model": mid, "scale": scale_for(mid, aspect).describe()} for aspect, mid in model_ids.items()},
    }
