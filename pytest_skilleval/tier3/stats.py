"""The statistics of Tier 3, as pure functions: pass@k, pass^k, rerun pass@(R+1), Skill Lift with a
t interval over paired case differences whose coverage is measured (benchmarks/interval_coverage.py),
the power of a run, and the bands that turn numbers into verdict words.

Conventions shared by every function:

- An attempt is ``True`` (passed), ``False`` (failed) or ``None`` (errored: the trial or its judge
  broke). An errored attempt is *missing*, not failed: it is left out of ``n``. Scoring a broken
  judge as a failure would make an outage look like a bad skill.
- A score is a float in [0, 1] or ``None``/NaN for "not scored", with the same meaning.
- Nothing here draws from randomness: the same inputs always give the same interval (the comparison
  bootstrap takes a seed; NumPy's ``RandomState`` stream is frozen by its compatibility policy).
"""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # imported in the three functions that compute with it: reports import this module on every run
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


# -- Student t quantiles (no SciPy) -----------------------------------------------------------------
def _incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta I_x(a, b), by Lentz's continued fraction (Numerical Recipes 6.4)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x > (a + 1) / (a + b + 2):
        return 1.0 - _incomplete_beta(b, a, 1.0 - x)
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 300):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)), -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return front * h / a


def t_cdf(t: float, df: int) -> float:
    tail = 0.5 * _incomplete_beta(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


@functools.lru_cache(maxsize=4096)
def t_quantile(p: float, df: int) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom (bisection on the CDF; |error| < 1e-9)."""
    if not 0 < p < 1 or df < 1:
        raise ValueError(f"need 0 < p < 1 and df >= 1, got p={p}, df={df}")
    low, high = -1e4, 1e4
    for _ in range(100):
        mid = (low + high) / 2
        low, high = (mid, high) if t_cdf(mid, df) < p else (low, mid)
    return (low + high) / 2


# -- Skill Lift ---------------------------------------------------------------------------------------
#: The interval of a lift (benchmarks/interval_coverage.py measures it; docs/tier3.md reports the table).
INTERVAL_METHOD = "student-t on paired case differences, all-equal guard"
#: Fewer paired cases than this: no interval at all ("too few cases for an interval"). At n = 2 the t
#: quantile is 12.7 and the interval is the whole −100…+100 range for any realistic spread.
MIN_CASES_FOR_INTERVAL = 3
#: The t quantile is taken at 96 % for a 95 % interval: plain 95 % measured 0.92 coverage on a
#: rare-large-gain shape at n = 30 (benchmarks/interval_coverage.py); 96 % keeps every simulated shape
#: at >= 0.93 from n = 3 up. Skewed, bounded scores are why a textbook level falls short.
T_LEVEL = {0.95: 0.96}
POWER = 0.80  # the power the "smallest detectable lift" and the case count for a 10-point lift assume
TARGET_LIFT = 0.10
_SCORE_RANGE = (-1.0, 1.0)  # a paired difference of two 0–1 scores


@dataclass(frozen=True)
class Lift:
    """with − without over the cases scored in both arms, with a t interval over paired differences.

    ``ci_low``/``ci_high`` are None when there are fewer than :data:`MIN_CASES_FOR_INTERVAL` pairs.
    ``spread`` is the standard deviation of the paired differences (None below 2 pairs)."""

    with_skill: float | None
    without_skill: float | None
    delta: float | None
    ci_low: float | None
    ci_high: float | None
    n: int  # paired cases
    unpaired: int  # cases scored in one arm only (left out)
    confidence: float
    spread: float | None = None

    @property
    def band(self) -> Band | None:
        """A gain (PASS) or a loss (FAIL) only when the interval excludes 0 *and* the lift reaches
        the band; NEUTRAL when the interval spans 0; None when there is no lift or no interval."""
        if self.ci_low is None or self.ci_high is None:
            return None
        band = lift_band(self.delta)
        if band is Band.PASS and self.ci_low <= 0:
            return Band.NEUTRAL
        if band is Band.FAIL and self.ci_high >= 0:
            return Band.NEUTRAL
        return band


def lift(with_scores: Mapping[str, float | None], without_scores: Mapping[str, float | None], *,
         confidence: float = 0.95) -> Lift:
    """Skill Lift for one dimension: per-case scores of each arm, keyed by case id.

    Cases are paired by id; a case missing or unscored in either arm is left out of both means, so
    the two means and the interval describe the same cases (:func:`paired_interval` for the interval).
    """
    if not 0 < confidence < 1:
        raise ValueError("confidence must be in (0, 1)")
    scored_with = {k: v for k, v in with_scores.items() if _scored(v)}
    scored_without = {k: v for k, v in without_scores.items() if _scored(v)}
    paired = sorted(scored_with.keys() & scored_without.keys())
    unpaired = len(scored_with.keys() ^ scored_without.keys())
    if not paired:
        return Lift(None, None, None, None, None, 0, unpaired, confidence)
    import numpy as np

    a = np.array([scored_with[k] for k in paired], dtype=float)
    b = np.array([scored_without[k] for k in paired], dtype=float)
    diff = a - b
    interval = paired_interval(diff, confidence=confidence)
    spread = float(diff.std(ddof=1)) if diff.size > 1 else None
    return Lift(float(a.mean()), float(b.mean()), float(diff.mean()), *(interval or (None, None)), len(paired), unpaired,
                confidence, spread)


def _t_level(confidence: float) -> float:
    return T_LEVEL.get(confidence, confidence)


def _unseen_share(n: int, confidence: float) -> float:
    """The largest share of cases that all n sampled cases can miss with probability >= (1 − level) / 2."""
    return 1.0 - ((1.0 - _t_level(confidence)) / 2.0) ** (1.0 / n)


def paired_interval(differences: Sequence[float] | np.ndarray, *, confidence: float = 0.95) -> tuple[float, float] | None:
    """The interval of the mean paired difference; None below :data:`MIN_CASES_FOR_INTERVAL` pairs.

    Student t with n − 1 degrees of freedom (quantile at :data:`T_LEVEL`), clipped to the possible
    −1…+1. When every difference is the same the t interval has zero width, yet a share q of cases
    behaving otherwise goes unseen with probability (1 − level)/2 when q = 1 − ((1 − level)/2)^(1/n);
    the interval is then what such a share could move the mean: [m − q(1 + m), m + q(1 − m)].
    """
    import numpy as np

    data = np.asarray(differences, dtype=float)
    n = int(data.size)
    if n < MIN_CASES_FOR_INTERVAL:
        return None
    mean, sd = float(data.mean()), float(data.std(ddof=1))
    low_bound, high_bound = _SCORE_RANGE
    if sd < 1e-12:
        q = _unseen_share(n, confidence)
        low, high = mean - q * (mean - low_bound), mean + q * (high_bound - mean)
    else:
        half = t_quantile(1 - (1 - _t_level(confidence)) / 2, n - 1) * sd / math.sqrt(n)
        low, high = mean - half, mean + half
    return max(low_bound, low), min(high_bound, high)


@dataclass(frozen=True)
class Power:
    """What a lift's run could tell apart from 0: the smallest lift its interval would exclude 0 for
    at ``POWER`` (at this n and spread), and the paired cases a 10-point lift needs at that spread."""

    n: int
    spread: float | None
    detectable: float | None  # None: too few cases for an interval (or no spread to go on)
    cases_for_target: int | None  # None: no spread estimate (fewer than 2 pairs)
    target: float = TARGET_LIFT


def power(n: int, spread: float | None, *, confidence: float = 0.95, target: float = TARGET_LIFT, limit: int = 100_000) -> Power:
    """Minimum detectable lift of a paired t test (two-sided at the interval's level, power ``POWER``):
    (t_{1−α/2, n−1} + t_{power, n−1}) · s / √n; with zero spread, the all-equal guard's q / (1 − q)."""
    detectable = _detectable(n, spread, confidence) if n >= MIN_CASES_FOR_INTERVAL and spread is not None else None
    needed = None
    if spread is not None:
        needed = next((m for m in _candidates(limit) if (_detectable(m, spread, confidence) or math.inf) <= target + _EPS), None)
    return Power(n, spread, detectable, needed, target)


def _candidates(limit: int) -> Iterable[int]:
    m = MIN_CASES_FOR_INTERVAL
    while m <= limit:
        yield m
        m = m + 1 if m < 200 else int(m * 1.05)


def _detectable(n: int, spread: float | None, confidence: float) -> float | None:
    if spread is None or n < MIN_CASES_FOR_INTERVAL:
        return None
    if spread < 1e-12:
        q = _unseen_share(n, confidence)
        return q / (1 - q)
    level = _t_level(confidence)
    return (t_quantile(1 - (1 - level) / 2, n - 1) + t_quantile(POWER, n - 1)) * spread / math.sqrt(n)


def bootstrap_ci(values: Sequence[float] | np.ndarray, *, confidence: float = 0.95, resamples: int = 10_000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap interval of the mean of ``values``; deterministic for a seed. Kept for
    comparison only (benchmarks/interval_coverage.py): its coverage at small n is well below nominal."""
    import numpy as np

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
