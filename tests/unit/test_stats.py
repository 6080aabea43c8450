"""Tier 3 statistics: pass@k against hand values and brute-force enumeration, reruns, lift CIs, bands."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from pytest_skilleval.tier3 import stats
from pytest_skilleval.tier3.stats import Band


# -- pass@k and pass^k ---------------------------------------------------------------------------------
@pytest.mark.parametrize(("n", "c", "k", "expected"), [
    (10, 3, 1, 0.3),  # k=1 is the plain pass rate
    (10, 3, 5, 1 - 21 / 252),  # 1 - C(7,5)/C(10,5)
    (5, 0, 2, 0.0),
    (5, 5, 5, 1.0),
    (4, 3, 2, 1.0),  # only one failure: every pair holds a pass
    (3, 1, 2, 2 / 3),  # pairs {p,f1},{p,f2},{f1,f2}
])
def test_pass_at_k_hand_values(n: int, c: int, k: int, expected: float) -> None:
    assert stats.pass_at_k(n, c, k) == pytest.approx(expected)


@pytest.mark.parametrize(("n", "c", "k", "expected"), [(10, 3, 2, 3 / 45), (3, 3, 3, 1.0), (5, 1, 2, 0.0), (4, 2, 1, 0.5)])
def test_pass_hat_k_hand_values(n: int, c: int, k: int, expected: float) -> None:
    assert stats.pass_hat_k(n, c, k) == pytest.approx(expected)


def test_pass_at_k_matches_brute_force_enumeration_of_subsets() -> None:
    for n in range(1, 8):
        for c in range(n + 1):
            attempts = [True] * c + [False] * (n - c)
            for k in range(1, n + 1):
                subsets = list(itertools.combinations(attempts, k))
                assert stats.pass_at_k(n, c, k) == pytest.approx(sum(any(s) for s in subsets) / len(subsets)), (n, c, k)
                assert stats.pass_hat_k(n, c, k) == pytest.approx(sum(all(s) for s in subsets) / len(subsets)), (n, c, k)


def test_product_form_is_stable_where_binomials_are_huge() -> None:
    n, c, k = 400, 37, 50
    exact = 1 - math.comb(n - c, k) / math.comb(n, k)  # Python ints: exact, slow, fine for a test
    assert stats.pass_at_k(n, c, k) == pytest.approx(exact, rel=1e-12)


@pytest.mark.parametrize("fn", [stats.pass_at_k, stats.pass_hat_k])
def test_fewer_attempts_than_k_is_no_answer_not_zero(fn: object) -> None:
    assert fn(2, 2, 3) is None  # type: ignore[operator]


@pytest.mark.parametrize(("n", "c", "k"), [(3, 4, 1), (3, -1, 1), (3, 1, 0), (-1, 0, 1)])
def test_impossible_counts_are_rejected(n: int, c: int, k: int) -> None:
    with pytest.raises(ValueError):
        stats.pass_at_k(n, c, k)


def test_an_errored_attempt_is_missing_not_failed() -> None:
    assert stats.counts([True, None, None, False]) == (2, 1)
    summary = stats.pass_at_k_over_cases({"a": [True, None, None], "b": [None, None, None], "c": [False, False, True]}, k=1)
    # a: one scored attempt, a pass -> 1.0 (not 1/3); b: nothing scored -> excluded; c: 1/3.
    assert summary.pass_at_k == pytest.approx((1.0 + 1 / 3) / 2)
    assert summary.cases == 2 and summary.excluded == ("b",)


def test_pass_at_k_over_cases_averages_per_case_values() -> None:
    summary = stats.pass_at_k_over_cases({"a": [True, False, False, False], "b": [True, True, True, False], "c": [True]}, k=2)
    assert summary.pass_at_k == pytest.approx((stats.pass_at_k(4, 1, 2) + stats.pass_at_k(4, 3, 2)) / 2)  # type: ignore[operator]
    assert summary.pass_hat_k == pytest.approx((0.0 + 3 / 6) / 2)
    assert summary.excluded == ("c",)


def test_no_case_with_enough_attempts_gives_none() -> None:
    summary = stats.pass_at_k_over_cases({"a": [True]}, k=3)
    assert summary.pass_at_k is None and summary.pass_hat_k is None and summary.cases == 0


# -- reruns ------------------------------------------------------------------------------------------
def test_rerun_pass_any_attempt_passing_passes_and_every_attempt_is_kept() -> None:
    summary = stats.rerun_pass({"a": [False, True, False], "b": [False, False, False], "c": [None, None], "d": [None, True]})
    rows = {r.case_id: r for r in summary.cases}
    assert rows["a"].passed is True and rows["a"].first_pass_attempt == 2 and rows["a"].attempts == (False, True, False)
    assert rows["b"].passed is False and rows["b"].first_pass_attempt is None
    assert rows["c"].passed is None and rows["c"].missing == 2
    assert rows["d"].passed is True and rows["d"].first_pass_attempt == 2 and rows["d"].missing == 1
    assert (summary.passed_cases, summary.failed_cases, summary.missing_cases) == (2, 1, 1)
    assert summary.rate == pytest.approx(2 / 3) and summary.max_attempts == 3


def test_rerun_pass_of_nothing() -> None:
    summary = stats.rerun_pass({})
    assert summary.rate is None and summary.max_attempts == 0


def test_a_rerun_rate_where_every_case_failed_or_passed_is_zero_or_one_not_missing() -> None:
    summary = stats.rerun_pass({"a": [False, False], "b": [False], "c": [None]})
    assert (summary.passed_cases, summary.failed_cases, summary.missing_cases, summary.rate) == (0, 2, 1, 0.0)
    every_case_passed = stats.rerun_pass({"a": [False, True], "b": [True], "c": [None, None, False, True]})
    assert (every_case_passed.passed_cases, every_case_passed.failed_cases, every_case_passed.rate) == (3, 0, 1.0)
    assert [r.first_pass_attempt for r in every_case_passed.cases] == [2, 1, 4]


# -- lift ------------------------------------------------------------------------------------------------
def test_lift_pairs_cases_and_reports_n() -> None:
    result = stats.lift({"a": 1.0, "b": 1.0, "c": 0.0, "x": 0.9, "n": float("nan")},
                        {"a": 0.0, "b": 1.0, "c": 0.0, "y": 0.2, "n": 0.5})
    assert result.n == 3 and result.unpaired == 3  # x, y, and n (NaN in one arm)
    assert result.with_skill == pytest.approx(2 / 3) and result.without_skill == pytest.approx(1 / 3)
    assert result.delta == pytest.approx(1 / 3) and result.band is Band.NEUTRAL  # three cases: the interval spans 0
    assert result.ci_low is not None and result.ci_high is not None
    assert -1.0 <= result.ci_low <= 0 <= result.delta <= result.ci_high <= 1.0


def test_lift_is_deterministic_and_order_free() -> None:
    rng = random.Random(7)
    with_scores = {str(i): rng.random() for i in range(40)}
    without_scores = {str(i): rng.random() for i in range(40)}
    first = stats.lift(with_scores, without_scores)
    assert stats.lift(dict(reversed(list(with_scores.items()))), without_scores) == first


def test_constant_differences_get_the_unseen_share_interval_not_zero_width() -> None:
    # Ten cases that all moved by +0.2 cannot rule out a share q = 1 − 0.02^(1/10) of cases that move otherwise.
    result = stats.lift({str(i): 0.8 for i in range(10)}, {str(i): 0.6 for i in range(10)})
    q = 1 - 0.02 ** (1 / 10)
    assert result.delta == pytest.approx(0.2) and result.spread == pytest.approx(0.0)
    assert result.ci_low == pytest.approx(0.2 - q * 1.2) and result.ci_high == pytest.approx(0.2 + q * 0.8)


def test_no_paired_case_is_no_lift() -> None:
    result = stats.lift({"a": 1.0}, {"b": 0.0})
    assert result.delta is None and result.n == 0 and result.unpaired == 2 and result.band is None


@pytest.mark.parametrize(("p", "df", "expected"), [(0.975, 1, 12.7062), (0.975, 2, 4.3027), (0.975, 9, 2.2622), (0.975, 29, 2.0452),
                                                   (0.8, 9, 0.8834), (0.98, 4, 2.9985), (0.025, 4, -2.7764)])
def test_t_quantiles_match_the_tables(p: float, df: int, expected: float) -> None:
    assert stats.t_quantile(p, df) == pytest.approx(expected, abs=1e-4)


def test_below_three_pairs_there_is_no_interval_and_no_gain() -> None:
    result = stats.lift({"a": 1.0, "b": 0.9}, {"a": 0.0, "b": 0.1})
    assert result.delta == pytest.approx(0.9) and (result.ci_low, result.ci_high) == (None, None) and result.band is None


def test_a_lift_is_a_gain_only_when_its_interval_excludes_zero() -> None:
    # Regression (issue 10, item 4): +53 points over three cases, one of which lost: the interval spans 0,
    # so this is no gain — a99a1ca called it PASS from the point estimate.
    spans = stats.lift({"a": 1.0, "b": 1.0, "c": 0.0}, {"a": 0.0, "b": 0.0, "c": 0.4})
    assert spans.delta == pytest.approx(0.2 + 1 / 3) and spans.ci_low is not None and spans.ci_low < 0 < (spans.ci_high or 0)
    assert spans.band is Band.NEUTRAL
    clear = stats.lift({str(i): 0.9 + 0.01 * (i % 3) for i in range(12)}, {str(i): 0.3 + 0.02 * (i % 4) for i in range(12)})
    assert clear.ci_low is not None and clear.ci_low > 0 and clear.band is Band.PASS
    loss = stats.lift({str(i): 0.1 + 0.01 * (i % 3) for i in range(12)}, {str(i): 0.8 for i in range(12)})
    assert loss.band is Band.FAIL


def _coverage(sample: object, truth: float, n: int, datasets: int, rng: random.Random) -> float:
    covered = 0
    for _ in range(datasets):
        pairs = [sample(rng) for _ in range(n)]  # type: ignore[operator]
        result = stats.lift({str(i): w for i, (w, _) in enumerate(pairs)}, {str(i): b for i, (_, b) in enumerate(pairs)})
        covered += result.ci_low is not None and result.ci_low - 1e-12 <= truth <= (result.ci_high or 0) + 1e-12
    return covered / datasets


@pytest.mark.parametrize(("name", "sample", "truth"), [
    ("pass/fail ties", lambda g: (float(g.random() < 0.8), float(g.random() < 0.5)), 0.3),
    ("few cases gain a lot", lambda g: (g.uniform(0.5, 1.0) if g.random() < 0.3 else 0.0, 0.0), 0.225),
    ("bounded", lambda g: (g.betavariate(4, 2), g.betavariate(2, 3)), 4 / 6 - 2 / 5)])
def test_the_interval_covers_the_true_lift_at_small_n(name: str, sample: object, truth: float) -> None:
    # Regression (issue 10, item 4): the percentile bootstrap covered ~0.84 at n = 5. The goal is 0.93;
    # 300 datasets give a binomial sd of ~0.013, so 0.91 is the floor a correct method clears.
    rng = random.Random(10)
    assert _coverage(sample, truth, 5, 300, rng) >= 0.91, name


def test_power_says_what_a_run_can_detect_and_what_a_ten_point_lift_needs() -> None:
    small, large = stats.power(5, 0.3), stats.power(50, 0.3)
    assert small.detectable is not None and large.detectable is not None and large.detectable < small.detectable
    assert small.cases_for_target == large.cases_for_target  # a property of the spread, not of this run's n
    needed = small.cases_for_target
    assert needed is not None and 60 < needed < 90  # ((1.96 + 0.84) · 0.3 / 0.1)² ≈ 71, a little more for t
    assert (stats.power(needed, 0.3).detectable or 1) <= 0.1 < (stats.power(needed - 1, 0.3).detectable or 1)
    assert stats.power(2, 0.3).detectable is None and stats.power(1, None).cases_for_target is None


def test_interval_narrows_with_more_cases() -> None:
    rng = random.Random(1)
    small = stats.paired_interval([rng.gauss(0, 0.3) for _ in range(20)])
    large = stats.paired_interval([rng.gauss(0, 0.3) for _ in range(500)])
    assert small is not None and large is not None and (large[1] - large[0]) < (small[1] - small[0]) / 3


@pytest.mark.parametrize("kwargs", [{"confidence": 1.0}, {"confidence": 0.0}, {"confidence": 1.5}, {"confidence": -0.5}])
def test_lift_rejects_bad_settings(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        stats.lift({"a": 1.0}, {"a": 0.0}, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(("p", "df"), [(1.0, 5), (0.0, 5), (1.5, 5), (-0.5, 5), (0.5, 0)])
def test_t_quantile_rejects_a_probability_outside_zero_one_and_no_degrees_of_freedom(p: float, df: int) -> None:
    # p = 1 has no quantile: bisection would return the bracket's edge, 10^4, as if it were one
    with pytest.raises(ValueError):
        stats.t_quantile(p, df)


def test_bootstrap_of_nothing_is_an_error() -> None:
    with pytest.raises(ValueError):
        stats.bootstrap_ci([])


# -- bands ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize(("delta", "band"), [
    (0.05, Band.PASS), (0.55 - 0.50, Band.PASS), pytest.param(0.35 - 0.30, Band.PASS, id="0.35-0.30-is-0.0499..."),
    (0.0499, Band.NEUTRAL), (0.0, Band.NEUTRAL), (-0.0999, Band.NEUTRAL),
    (-0.10, Band.FAIL), (0.40 - 0.50, Band.FAIL), (-0.5, Band.FAIL), (1.0, Band.PASS), (None, None), (float("nan"), None),
])
def test_lift_band_edges(delta: float | None, band: Band | None) -> None:
    assert stats.lift_band(delta) is band


@pytest.mark.parametrize(("score", "band"), [
    (0.50, Band.PASS), (1.0, Band.PASS), (0.4999, Band.NEUTRAL), (0.40, Band.NEUTRAL), (0.3999, Band.FAIL), (0.0, Band.FAIL),
    pytest.param(0.7 - 0.3, Band.NEUTRAL, id="0.7-0.3-float-noise"), (None, None),
])
def test_dimension_band_edges(score: float | None, band: Band | None) -> None:
    assert stats.dimension_band(score) is band


def test_verdict_is_the_worst_dimension_band() -> None:
    assert stats.verdict({"security": 0.9, "correctness": 0.6}) is Band.PASS
    assert stats.verdict({"security": 0.9, "correctness": 0.45}) is Band.NEUTRAL
    assert stats.verdict({"security": 0.3, "correctness": 0.45}) is Band.FAIL
    assert stats.verdict({"security": None, "correctness": 0.7}) is Band.PASS
    assert stats.verdict({"security": None}) is None


def test_mean_scored_skips_missing() -> None:
    assert stats.mean_scored([1.0, None, 0.0, float("nan")]) == 0.5
    assert stats.mean_scored([None]) is None


# -- exact values (issue 15: mutants of the t distribution, the intervals and the power survived the tests above) ---
def _t_cdf_closed_form(t: float, df: int) -> float:
    """Student t CDFs that have a closed form (Abramowitz & Stegun 26.7.3/26.7.4), independent of the beta function."""
    if df == 1:
        return 0.5 + math.atan(t) / math.pi
    if df == 2:
        return 0.5 + t / (2 * math.sqrt(2 + t * t))
    if df == 3:
        return 0.5 + (math.atan(t / math.sqrt(3)) + math.sqrt(3) * t / (3 + t * t)) / math.pi
    assert df == 4
    return 0.5 + 3 * t / (8 * math.sqrt(1 + t * t / 4)) * (1 - t * t / (12 * (1 + t * t / 4)))


def _t_quantile_df2(p: float) -> float:
    return (2 * p - 1) / math.sqrt(2 * p * (1 - p))


@pytest.mark.parametrize("df", [1, 2, 3, 4])
@pytest.mark.parametrize("t", [-30.0, -4.0, -1.3, -0.2, 0.05, 0.7, 1.9, 3.5, 12.0, 80.0])
def test_t_cdf_matches_the_closed_forms(t: float, df: int) -> None:
    assert stats.t_cdf(t, df) == pytest.approx(_t_cdf_closed_form(t, df), rel=1e-10, abs=1e-13)


@pytest.mark.parametrize(("a", "x"), [(0.5, 0.3), (3.0, 0.9), (40.0, 0.995), (200.0, 0.9999), (7.5, 0.05), (5.0, 0.3)])
def test_incomplete_beta_matches_powers_of_x(a: float, x: float) -> None:
    # I_x(a, 1) = x^a and I_x(1, b) = 1 - (1 - x)^b: both branches of the continued fraction, far from 1/2
    # (I_0.3(1, 5) is past its switch point 2/8 below x = 1/2, where 1 - x and 1 % x part)
    assert stats._incomplete_beta(a, 1.0, x) == pytest.approx(x ** a, rel=1e-10)
    assert stats._incomplete_beta(1.0, a, x) == pytest.approx(1 - (1 - x) ** a, rel=1e-10)


def _t_cdf_series(t: float, df: int) -> float:
    """Student's t CDF for any df from the finite series of Abramowitz & Stegun 26.7.3 (odd df) and 26.7.4 (even df)."""
    theta = math.atan(t / math.sqrt(df))
    sin, cos = math.sin(theta), math.cos(theta)
    if df % 2 == 0:
        term = total = 1.0
        for k in range(1, df // 2):
            term *= (2 * k - 1) / (2 * k) * cos * cos
            total += term
        within = sin * total  # P(-t < T < t), signed like t
    else:
        term = total = cos if df > 1 else 0.0
        for k in range(1, (df - 1) // 2):
            term *= 2 * k / (2 * k + 1) * cos * cos
            total += term
        within = 2 / math.pi * (theta + sin * total)
    return 0.5 + within / 2


@pytest.mark.parametrize("df", [10, 11, 30, 31])
@pytest.mark.parametrize("t", [-2.5, -0.001, 0.001, 0.01, 0.05, 0.3, 1.8, 6.0])
def test_t_cdf_matches_the_series_at_more_degrees_of_freedom(t: float, df: int) -> None:
    # near t = 0 the beta argument df / (df + t²) is close to 1, where only the swapped continued fraction converges
    assert stats.t_cdf(t, df) == pytest.approx(_t_cdf_series(t, df), rel=1e-10, abs=1e-13)


def test_the_ends_of_the_incomplete_beta_and_the_t_cdf() -> None:
    assert stats._incomplete_beta(2.0, 0.5, 0.0) == 0.0 and stats._incomplete_beta(2.0, 0.5, 1.0) == 1.0
    assert stats.t_cdf(-math.inf, 3) == 0.0 and stats.t_cdf(math.inf, 3) == 1.0  # df / (df + t²) = 0


def test_a_t_interval_uses_n_minus_one_degrees_of_freedom() -> None:
    data = [0.1, 0.2, 0.6]
    mean, sd = sum(data) / 3, math.sqrt(sum((d - sum(data) / 3) ** 2 for d in data) / 2)
    half = _t_quantile_df2(0.98) * sd / math.sqrt(3)  # 95 % is taken at the 96 % quantile (T_LEVEL)
    assert stats.paired_interval(data) == pytest.approx((mean - half, min(1.0, mean + half)), rel=1e-8)
    assert stats.paired_interval([0.1, 0.2, 0.6], confidence=0.5) == pytest.approx(
        (mean - _t_quantile_df2(0.75) * sd / math.sqrt(3), mean + _t_quantile_df2(0.75) * sd / math.sqrt(3)), rel=1e-8)


def test_a_four_case_interval_uses_three_degrees_of_freedom() -> None:
    # an even n: n ^ 1 would give 5 degrees of freedom where n - 1 gives 3 (t at 98 %, df 3: 3.4819 in the tables)
    data = [0.1, 0.2, 0.6, 0.3]
    mean, sd = sum(data) / 4, math.sqrt(sum((d - sum(data) / 4) ** 2 for d in data) / 3)
    half = stats.t_quantile(0.98, 3) * sd / 2
    assert stats.t_quantile(0.98, 3) == pytest.approx(3.4819, abs=1e-4)
    assert stats.paired_interval(data) == pytest.approx((mean - half, mean + half), rel=1e-8)


def test_power_of_a_four_case_run_uses_three_degrees_of_freedom() -> None:
    # t at 98 % and 80 %, df 3: 3.4819 and 0.9785 in the tables (an even n, where n ^ 1 would be 5)
    assert stats.t_quantile(0.8, 3) == pytest.approx(0.9785, abs=1e-4)
    assert stats.power(4, 0.3).detectable == pytest.approx((stats.t_quantile(0.98, 3) + stats.t_quantile(0.8, 3)) * 0.3 / 2, rel=1e-12)


def test_power_of_a_three_case_run_uses_two_degrees_of_freedom() -> None:
    assert stats.power(3, 0.3).detectable == pytest.approx((_t_quantile_df2(0.98) + _t_quantile_df2(0.8)) * 0.3 / math.sqrt(3), rel=1e-8)
    # at a 50 % level the first quantile is the 75 % one (a level at or below 1/2 is where 1 - level and 1 % level part)
    assert stats.power(3, 0.3, confidence=0.5).detectable == pytest.approx(
        (_t_quantile_df2(0.75) + _t_quantile_df2(0.8)) * 0.3 / math.sqrt(3), rel=1e-8)


def test_the_power_and_interval_options_are_keyword_only() -> None:
    with pytest.raises(TypeError):
        stats.power(5, 0.3, 0.5)  # type: ignore[misc]
    with pytest.raises(TypeError):
        stats.paired_interval([0.1, 0.2, 0.6], 0.5)  # type: ignore[misc]
    with pytest.raises(TypeError):
        stats.lift({"a": 1.0}, {"a": 0.0}, 0.5)  # type: ignore[misc]
    with pytest.raises(TypeError):
        stats.bootstrap_ci([0.1, 0.2], 0.5)  # type: ignore[misc]


def test_no_case_count_past_the_limit() -> None:
    # a 10-point lift at spread 0.6 needs 306 cases (the candidate grid): none within a limit of 250
    assert stats.power(3, 0.6, limit=250).cases_for_target is None
    assert stats.power(3, 0.6, limit=306).cases_for_target == 306


def test_one_paired_case_has_no_spread() -> None:
    single = stats.lift({"a": 0.9}, {"a": 0.4})
    assert single.n == 1 and single.delta == pytest.approx(0.5) and single.spread is None and single.ci_low is None
    pair = stats.lift({"a": 0.9, "b": 0.5}, {"a": 0.4, "b": 0.4})  # differences 0.5 and 0.1: two pairs have a spread
    assert pair.spread == pytest.approx(0.4 / math.sqrt(2)) and pair.ci_low is None


@pytest.mark.parametrize("confidence", [0.95, 0.5])
def test_zero_spread_power_and_interval_follow_the_unseen_share(confidence: float) -> None:
    level = 0.96 if confidence == 0.95 else confidence
    q = 1 - ((1 - level) / 2) ** (1 / 5)
    assert stats.power(5, 0.0, confidence=confidence).detectable == pytest.approx(q / (1 - q), rel=1e-12)
    assert stats.paired_interval([0.2] * 5, confidence=confidence) == pytest.approx((0.2 - q * 1.2, 0.2 + q * 0.8), rel=1e-12)


def test_a_spread_of_exactly_the_noise_floor_is_a_spread_not_all_equal() -> None:
    # 1e-12 is the floor below which paired differences count as all equal; at the floor itself they
    # get the t interval and the t power (not the unseen-share ones, which are ~10^11 times wider)
    data = [-1e-12, 0.0, 1e-12]
    assert math.sqrt(sum(d * d for d in data) / 2) == 1e-12  # its sd (n - 1) is the floor to the last bit
    half = _t_quantile_df2(0.98) * 1e-12 / math.sqrt(3)
    assert stats.paired_interval(data) == pytest.approx((-half, half), rel=1e-8, abs=0)  # abs=0: approx's default 1e-12 would swamp these
    assert stats.power(3, 1e-12).detectable == pytest.approx((_t_quantile_df2(0.98) + _t_quantile_df2(0.8)) * 1e-12 / math.sqrt(3), rel=1e-8, abs=0)


def test_the_case_count_for_a_ten_point_lift_past_two_hundred() -> None:
    # past 200 the candidates grow by 5 %: the answer is the first candidate that reaches 10 points
    needed = stats.power(3, 0.6).cases_for_target
    assert needed is not None and 250 < needed < 350
    assert (stats.power(needed, 0.6).detectable or 1) <= 0.1 < (stats.power(int(needed / 1.05), 0.6).detectable or 1)
    # the candidates past 200 are 210, 220, 231, 242, 254, 266, 279, 292, 306, …: the answer is 306 although
    # 304 would already do (the 5 % steps trade that for fewer t quantiles up to a limit of 100,000 cases)
    assert needed == 306 and (stats.power(304, 0.6).detectable or 1) <= 0.1


def test_a_spread_that_exactly_ten_cases_detect_needs_ten_cases() -> None:
    # the detectable lift at 10 cases is 0.1 up to the last bit of the product: the slack lets float noise pass
    spread = 0.1 * math.sqrt(10) / (stats.t_quantile(0.98, 9) + stats.t_quantile(0.8, 9))
    assert stats.power(3, spread).cases_for_target == 10


def test_bootstrap_percentiles_over_a_known_resampling_distribution() -> None:
    # the mean of two draws from {0, 1} is 0, 0.5 or 1 with chances 1/4, 1/2, 1/4
    assert stats.bootstrap_ci([0.0, 1.0], confidence=0.4) == (0.5, 0.5)
    assert stats.bootstrap_ci([0.0, 1.0]) == (0.0, 1.0)  # the default is 95 %
    assert stats.bootstrap_ci([0.3] * 4, resamples=1500) == (0.3, 0.3)  # a last batch smaller than the others
    assert stats.bootstrap_ci([0.3], resamples=1) == (0.3, 0.3)  # the first resample is drawn too
    low, high = stats.bootstrap_ci([0.0, 1.0, 0.0, 1.0], resamples=1500, seed=3)
    assert low < 0.5 < high



def test_bootstrap_cuts_half_the_missing_confidence_from_each_tail() -> None:
    # ten 0s and ten 1s: a resample's mean is Binomial(20, 1/2) / 20, whose 2.5 % point is 6/20
    # (P(X <= 5) = 0.021, P(X <= 6) = 0.058) and 97.5 % point 14/20; at 99.5 % they are 4/20 and 16/20
    data = [0.0] * 10 + [1.0] * 10
    assert stats.bootstrap_ci(data) == (0.3, 0.7)
    assert stats.bootstrap_ci(data, confidence=0.995) == (0.2, 0.8)
    assert stats.bootstrap_ci(data, confidence=0.9) == (0.3, 0.7)  # 5 % point 6/20; a 10 % tail would give 7/20 (P(X <= 7) = 0.132)


def test_bootstrap_draws_ten_thousand_resamples_with_seed_zero_by_default() -> None:
    data = [math.sqrt(i) / 3 for i in range(1, 9)]  # irregular values: one resample more or less moves a percentile
    default = stats.bootstrap_ci(data)
    assert default == stats.bootstrap_ci(data, resamples=10_000, seed=0)
    assert default != stats.bootstrap_ci(data, resamples=10_001) and default != stats.bootstrap_ci(data, resamples=9_999)
    assert default != stats.bootstrap_ci(data, seed=1)


def test_results_are_immutable_values() -> None:
    import dataclasses
    results = [stats.pass_at_k_over_cases({"a": [True]}, 1), stats.rerun_pass({"a": [True]}), stats.rerun_pass({"a": [True]}).cases[0],
               stats.lift({"a": 1.0}, {"a": 0.0}), stats.power(3, 0.3)]
    for result in results:
        with pytest.raises(dataclasses.FrozenInstanceError):
            result.n = 0  # type: ignore[union-attr]


def test_rerun_rate_with_as_many_passed_as_failed_cases() -> None:
    summary = stats.rerun_pass({"a": [False, True], "b": [False, False], "c": [None]})
    assert (summary.passed_cases, summary.failed_cases, summary.missing_cases, summary.rate) == (1, 1, 1, 0.5)


@pytest.mark.parametrize(("ci_low", "band"), [(0.0, Band.NEUTRAL), (-0.05, Band.NEUTRAL), (0.01, Band.PASS)])
def test_a_gain_needs_an_interval_that_excludes_zero(ci_low: float, band: Band) -> None:
    # a lower end exactly at 0 does not exclude 0; one a little below it neither
    assert stats.Lift(0.6, 0.4, 0.2, ci_low, 0.45, 10, 0, 0.95).band is band


@pytest.mark.parametrize(("ci_high", "band"), [(0.0, Band.NEUTRAL), (0.05, Band.NEUTRAL), (-0.01, Band.FAIL)])
def test_a_loss_needs_an_interval_that_excludes_zero(ci_high: float, band: Band) -> None:
    assert stats.Lift(0.3, 0.5, -0.2, -0.45, ci_high, 10, 0, 0.95).band is band


def test_a_loss_whose_interval_reaches_zero_is_neutral_and_spread_is_the_sample_sd() -> None:
    spans = stats.lift({"a": 0.0, "b": 0.0, "c": 1.0}, {"a": 0.5, "b": 0.5, "c": 0.5})
    assert spans.delta == pytest.approx(-1 / 6) and stats.lift_band(spans.delta) is Band.FAIL
    assert spans.ci_high is not None and spans.ci_high > 0 and spans.band is Band.NEUTRAL
    assert spans.spread == pytest.approx(math.sqrt(1 / 3))  # sd with n - 1: differences -0.5, -0.5, +0.5
