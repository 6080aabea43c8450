"""The statistics of Tier 3, as pure functions: pass@k, pass^k, rerun pass@(R+1), Skill Lift with a
paired bootstrap confidence interval, and the bands that turn numbers into verdict words.

Conventions shared by every function:

- An attempt is ``True`` (passed), ``False`` (failed) or ``None`` (errored: the trial or its judge
  broke). An errored attempt is *missing*, not failed: it is left out of ``n``. Scoring a broken
  judge as a failure would make an outage look like a bad skill.
- A score is a float in [0, 1] or ``None``/NaN for "not scored", with the same meaning.
- Nothing here draws from global randomness: the bootstrap takes a seed, so the same inputs always
  give the same interval (NumPy's ``RandomState`` stream is frozen by NumPy's compatibility policy).
"""

from __future__ import annotations

import enum
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

Attempt = bool | None

#: Lift bands (the anchor's): a lift of at least +0.05 is a PASS, at most -0.10 a FAIL.
LIFT_PASS, LIFT_FAIL = 0.05, -0.10
#: Dimension bands (the anchor's): >= 0.50 PASS, 0.40 to < 0.50 NEUTRAL, < 0.40 FAIL.
DIMENSION_PASS, DIMENSION_FAIL = 0.50, 0.40
#: Band edges are compared with this slack, so 0.55 - 0.50 (= 0.04999…) counts as +0.05.
_EPS = 1e-9
_CHUNK = 1000  # bootstrap resamples drawn per batch, bounding memory for large case sets


class Band(str, enum.Enum):
    PASS = "PASS"
    NEUTRAL = "NEUTRAL"
    FAIL = "FAIL"


# -- pass@k ------------------------------------------------------------------------------------------
def pass_at_k(n: int, c: int, k: int) -> float | None:
    """Unbiased pass@k = 1 - C(n-c, k) / C(n, k): the chance that k of the n attempts, drawn
    without replacement, include a pass. None when n < k (not enough attempts to say).

    Computed as 1 - prod_{i=n-c+1..n} (1 - k/i), which never forms the huge binomials.
    """
    _check_counts(n, c, k)
    if n < k:
        return None
    if n - c < k:
        return 1.0  # every k-subset must contain a pass
    return 1.0 - math.prod(1.0 - k / i for i in range(n - c + 1, n + 1))


def pass_hat_k(n: int, c: int, k: int) -> float | None:
    """pass^k = C(c, k) / C(n, k): the chance that k attempts drawn without replacement *all* pass
    (reliability rather than capability). None when n < k."""
    _check_counts(n, c, k)
    if n < k:
        return None
    return math.prod((c - i) / (n - i) for i in range(k)) if c >= k else 0.0


def counts(attempts: Iterable[Attempt]) -> tuple[int, int]:
    """(n, c): scored attempts and passes; errored (None) attempts are missing, not failures."""
    scored = [a for a in attempts if a is not None]
    return len(scored), sum(1 for a in scored if a)


@dataclass(frozen=True)
class PassAtK:
    """pass@k and pass^k averaged over cases; cases with fewer than k scored attempts are excluded."""

    k: int
    pass_at_k: float | None
    pass_hat_k: float | None
    cases: int  # cases averaged
    excluded: tuple[str, ...]  # case ids with n < k


def pass_at_k_over_cases(attempts: Mapping[str, Sequence[Attempt]], k: int) -> PassAtK:
    at, hat, excluded = [], [], []
    for case_id, outcomes in attempts.items():
        n, c = counts(outcomes)
        value = pass_at_k(n, c, k)
        if value is None:
            excluded.append(case_id)
            continue
        at.append(value)
        hat.append(pass_hat_k(n, c, k) or 0.0)
    return PassAtK(k, _mean(at), _mean(hat), len(at), tuple(excluded))


def _check_counts(n: int, c: int, k: int) -> None:
    if k < 1 or n < 0 or not 0 <= c <= n:
        raise ValueError(f"need k >= 1 and 0 <= c <= n, got n={n}, c={c}, k={k}")


# -- reruns: pass@(R+1) ------------------------------------------------------------------------------
@dataclass(frozen=True)
class RerunCase:
    case_id: str
    attempts: tuple[Attempt, ...]  # every recorded attempt, in order
    passed: bool | None  # any attempt passed; None when every attempt errored
    first_pass_attempt: int | None  # 1-based

    @property
    def missing(self) -> int:
        return sum(1 for a in self.attempts if a is None)


@dataclass(frozen=True)
class RerunSummary:
    """pass@(R+1) under ``--reruns R``: a case passes if any of its attempts passed."""

    max_attempts: int
    passed_cases: int
    failed_cases: int
    missing_cases: int  # no scored attempt at all
    rate: float | None  # passed / (passed + failed)
    cases: tuple[RerunCase, ...]


def rerun_pass(attempts: Mapping[str, Sequence[Attempt]]) -> RerunSummary:
    rows = []
    for case_id, outcomes in attempts.items():
        recorded = tuple(outcomes)
        first = next((i + 1 for i, a in enumerate(recorded) if a is True), None)
        passed = True if first else (False if any(a is False for a in recorded) else None)
        rows.append(RerunCase(case_id, recorded, passed, first))
    good = sum(1 for r in rows if r.passed is True)
    bad = sum(1 for r in rows if r.passed is False)
    return RerunSummary(max((len(r.attempts) for r in rows), default=0), good, bad, len(rows) - good - bad,
                        good / (good + bad) if good + bad else None, tuple(rows))


# -- Skill Lift ---------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Lift:
    """with − without over the cases scored in both arms, with a paired bootstrap CI."""

    with_skill: float | None
    without_skill: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    n: int  # paired cases
    unpaired: int  # cases scored in one arm only (left out)
    confidence: float
    resamples: int
    seed: int

    @property
    def band(self) -> Band | None:
        return lift_band(self.delta)


def lift(with_scores: Mapping[str, float | None], without_scores: Mapping[str, float | None], *,
         confidence: float = 0.95, resamples: int = 10_000, seed: int = 0) -> Lift:
    """Skill Lift for one dimension: per-case scores of each arm, keyed by case id.

    Cases are paired by id; a case missing or unscored in either arm is left out of both means, so
    the two means and the interval describe the same cases. The interval is the percentile
    interval of the mean paired difference over ``resamples`` resamples of cases with replacement.
    """
    if not 0 < confidence < 1 or resamples < 1:
        raise ValueError("confidence must be in (0, 1) and resamples >= 1")
    scored_with = {k: v for k, v in with_scores.items() if _scored(v)}
    scored_without = {k: v for k, v in without_scores.items() if _scored(v)}
    paired = sorted(scored_with.keys() & scored_without.keys())
    unpaired = len(scored_with.keys() ^ scored_without.keys())
    if not paired:
        return Lift(None, None, None, None, None, 0, unpaired, confidence, resamples, seed)
    a = np.array([scored_with[k] for k in paired], dtype=float)
    b = np.array([scored_without[k] for k in paired], dtype=float)
    diff = a - b
    low, high = bootstrap_ci(diff, confidence=confidence, resamples=resamples, seed=seed)
    return Lift(float(a.mean()), float(b.mean()), float(diff.mean()), low, high, len(paired), unpaired, confidence, resamples, seed)


def bootstrap_ci(values: Sequence[float] | np.ndarray, *, confidence: float = 0.95, resamples: int = 10_000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values``; deterministic for a seed."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("no values to resample")
    rng = np.random.RandomState(seed)
    means = np.empty(resamples)
    for start in range(0, resamples, _CHUNK):
        size = min(_CHUNK, resamples - start)
        means[start:start + size] = data[rng.randint(0, data.size, size=(size, data.size))].mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = np.quantile(means, [tail, 1 - tail])
    return float(low), float(high)


# -- bands --------------------------------------------------------------------------------------------
def lift_band(delta: float | None) -> Band | None:
    if not _scored(delta):
        return None
    assert delta is not None
    if delta >= LIFT_PASS - _EPS:
        return Band.PASS
    if delta <= LIFT_FAIL + _EPS:
        return Band.FAIL
    return Band.NEUTRAL


def dimension_band(score: float | None) -> Band | None:
    if not _scored(score):
        return None
    assert score is not None
    if score >= DIMENSION_PASS - _EPS:
        return Band.PASS
    if score >= DIMENSION_FAIL - _EPS:
        return Band.NEUTRAL
    return Band.FAIL


def verdict(dimension_scores: Mapping[str, float | None]) -> Band | None:
    """An agent's verdict (the anchor's rule): FAIL if any dimension FAILs, else NEUTRAL if any is
    NEUTRAL, else PASS. Unscored dimensions are skipped; None when nothing was scored."""
    bands = [b for b in (dimension_band(s) for s in dimension_scores.values()) if b is not None]
    if not bands:
        return None
    for worst in (Band.FAIL, Band.NEUTRAL):
        if worst in bands:
            return worst
    return Band.PASS


def mean_scored(scores: Iterable[float | None]) -> float | None:
    """Mean of the scored values; None when there are none."""
    return _mean([s for s in scores if _scored(s)])  # type: ignore[misc]


def _scored(value: float | None) -> bool:
    return value is not None and not math.isnan(value)


def _mean(values: Sequence[float]) -> float | None:
    return math.fsum(values) / len(values) if values else None
