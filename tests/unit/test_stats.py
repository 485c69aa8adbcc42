"""knobtop.analysis.stats against scipy/numpy/statistics and hand math: medians and spread,
Mann-Whitney U (exact and asymptotic paths), the bootstrap CI of the median ratio, verdicts and
their cell text, and the steady-state detector."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from typing import Any

import numpy as np
import pytest
import scipy.stats

from knobtop.analysis.stats import (
    HIGHER,
    LOWER,
    NOISE,
    PAIRED_TEST,
    TOO_FEW,
    SteadyState,
    Verdict,
    bootstrap_ratio_ci,
    compare_paired,
    compare_runs,
    cv,
    holm,
    iqr,
    mann_whitney_u,
    median,
    quantile,
    steady_index,
    wilcoxon_signed_rank,
)

ODD = [3.1, 7.4, 1.2, 9.9, 5.5, 4.4, 8.8]
EVEN = [1012.0, 968.0, 1049.0, 991.0, 1003.0, 1101.0]

# Per-run median TPS, five runs per arm.  SAME_A/SAME_B: the same config run twice (about 3%
# spread).  FAST_B: a config about 10% faster, with its own spread.
SAME_A = [1012.0, 968.0, 1049.0, 991.0, 1003.0]
SAME_B = [985.0, 1031.0, 977.0, 1020.0, 1008.0]
FAST_B = [1104.0, 1131.0, 1089.0, 1150.0, 1117.0]


# --- median / quantile / iqr / cv ----------------------------------------------------------------


@pytest.mark.parametrize("xs", [ODD, EVEN, [42.0], [2.0, 1.0]])
def test_median_matches_numpy(xs: list[float]) -> None:
    assert median(xs) == pytest.approx(float(np.median(xs)))


@pytest.mark.parametrize("xs", [ODD, EVEN, [42.0], [5.0, 1.0]])
@pytest.mark.parametrize("q", [0.0, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 1.0])
def test_quantile_matches_numpy_linear(xs: list[float], q: float) -> None:
    assert quantile(xs, q) == pytest.approx(float(np.quantile(xs, q)))


def test_quantile_matches_statistics_inclusive() -> None:
    deciles = statistics.quantiles(ODD, n=10, method="inclusive")
    assert [quantile(ODD, k / 10) for k in range(1, 10)] == pytest.approx(deciles)
    # hand math: sorted EVEN = 968 991 1003 1012 1049 1101; q=.25 -> h=1.25 -> 991 + .25*12
    assert quantile(EVEN, 0.25) == pytest.approx(994.0)


def test_iqr_matches_scipy() -> None:
    for xs in (ODD, EVEN, SAME_A):
        assert iqr(xs) == pytest.approx(float(scipy.stats.iqr(xs)))
    assert iqr([7.0]) == 0.0


def test_cv_matches_scipy_variation() -> None:
    for xs in (ODD, EVEN, SAME_A, FAST_B):
        expected = float(scipy.stats.variation(xs, ddof=1))
        assert cv(xs) == pytest.approx(expected)
        assert cv(xs) == pytest.approx(statistics.stdev(xs) / statistics.fmean(xs))


def test_cv_none_cases_and_absolute_mean() -> None:
    assert cv([5.0]) is None
    assert cv([-1.0, 1.0]) is None  # mean 0
    # negative mean: stdev / |mean|, never negative
    assert cv([-2.0, -4.0]) == pytest.approx(statistics.stdev([2.0, 4.0]) / 3.0)


def test_bad_input_raises() -> None:
    with pytest.raises(ValueError):
        median([])
    with pytest.raises(ValueError):
        quantile([], 0.5)
    with pytest.raises(ValueError):
        quantile(ODD, 1.5)
    with pytest.raises(ValueError):
        iqr([])
    with pytest.raises(ValueError):
        cv([])
    with pytest.raises(ValueError):
        median([1.0, math.nan])


# --- Mann-Whitney U ------------------------------------------------------------------------------


def _scipy_mwu(a: list[float], b: list[float], method: str = "auto") -> tuple[float, float]:
    r = scipy.stats.mannwhitneyu(a, b, alternative="two-sided", method=method)
    return float(r.statistic), float(r.pvalue)


_rng = random.Random(42)  # deterministic: the same numbers on every run
LARGE_A = [round(_rng.gauss(1000, 60), 1) for _ in range(30)]
LARGE_B = [round(_rng.gauss(1040, 60), 1) for _ in range(25)]

MWU_CASES = {
    # scipy's docs example: small, no ties -> exact
    "small-no-ties": ([19.0, 22.0, 16.0, 29.0, 24.0], [20.0, 11.0, 17.0, 12.0]),
    "ties": ([1.0, 2.0, 2.0, 3.0, 4.0], [2.0, 3.0, 3.0, 5.0, 6.0, 6.0]),
    "unequal-3-vs-12": (
        [5.1, 7.7, 3.3],
        [1.0, 2.2, 4.4, 6.6, 8.8, 9.1, 10.5, 11.0, 12.3, 13.7, 0.4, 14.9],
    ),
    "8-vs-20": (
        [float(x) for x in (3, 17, 29, 42, 44, 58, 60, 72)],
        [float(x) for x in range(1, 100, 5)],
    ),
    "9-vs-9-asymptotic": (
        [1.1, 2.3, 3.5, 4.7, 5.9, 7.1, 8.3, 9.5, 10.7],
        [3.0, 6.0, 9.0, 12.0, 15.0, 18.0, 21.0, 24.0, 27.0],
    ),
    "large": (LARGE_A, LARGE_B),
    "same-arm-tps": (SAME_A, SAME_B),
    "one-vs-one": ([1.0], [2.0]),
    "identical": ([5.0, 6.0, 7.0], [5.0, 6.0, 7.0]),
    "all-tied": ([3.0, 3.0, 3.0], [3.0, 3.0]),
}


# Cases where scipy's "auto" is also knobtop's method: no ties, and one arm <= 8 (exact) or
# both large (normal approximation).  With ties, or 9-10 values each, knobtop is exact where
# scipy's "auto" approximates (issue 17): those are checked against the permutation test.
SCIPY_AUTO_CASES = ["small-no-ties", "unequal-3-vs-12", "8-vs-20", "large", "same-arm-tps",
                    "one-vs-one"]
PERMUTATION_CASES = ["ties", "identical", "all-tied", "9-vs-9-asymptotic"]


def _permutation_p(a: list[float], b: list[float]) -> float:
    """scipy's exact permutation test (every split) of the Mann-Whitney U statistic."""
    def u_of(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        return scipy.stats.mannwhitneyu(x, y, axis=axis, method="asymptotic").statistic

    result = scipy.stats.permutation_test((a, b), u_of, permutation_type="independent",
                                          n_resamples=np.inf, alternative="two-sided",
                                          vectorized=True)
    return float(result.pvalue)


def _brute_force_p(a: list[float], b: list[float]) -> float:
    """Every split of the pooled values by hand: 2 x the smaller tail of a's rank sum."""
    pooled = a + b
    order = sorted(pooled)
    rank = {v: (order.index(v) + 1 + len(order) - order[::-1].index(v)) / 2 for v in pooled}
    observed = sum(rank[v] for v in a)
    sums = [sum(rank[pooled[i]] for i in pick)
            for pick in itertools.combinations(range(len(pooled)), len(a))]
    low = sum(s <= observed + 1e-9 for s in sums)
    high = sum(s >= observed - 1e-9 for s in sums)
    return min(1.0, 2 * min(low, high) / len(sums))


@pytest.mark.parametrize("name", SCIPY_AUTO_CASES)
def test_mann_whitney_matches_scipy_auto(name: str) -> None:
    a, b = MWU_CASES[name]
    u, p = mann_whitney_u(a, b)
    su, sp = _scipy_mwu(a, b)
    assert u == pytest.approx(su)
    assert p == pytest.approx(sp, rel=1e-9, abs=1e-15)
    # U is a's statistic: swapping the samples gives n_a*n_b - U and the same p
    u2, p2 = mann_whitney_u(b, a)
    assert u2 == pytest.approx(len(a) * len(b) - su)
    assert p2 == pytest.approx(sp, rel=1e-9, abs=1e-15)


@pytest.mark.parametrize("name", ["small-no-ties", "unequal-3-vs-12", "8-vs-20"])
def test_mann_whitney_small_without_ties_is_exact(name: str) -> None:
    a, b = MWU_CASES[name]
    _, p = mann_whitney_u(a, b)
    _, exact = _scipy_mwu(a, b, "exact")
    _, asym = _scipy_mwu(a, b, "asymptotic")
    assert exact != pytest.approx(asym, rel=1e-6)  # the two paths really differ here
    assert p == pytest.approx(exact, rel=1e-9)


@pytest.mark.parametrize("name", ["large"])
def test_mann_whitney_large_is_asymptotic(name: str) -> None:
    a, b = MWU_CASES[name]
    _, p = mann_whitney_u(a, b)
    _, exact = _scipy_mwu(a, b, "exact")
    _, asym = _scipy_mwu(a, b, "asymptotic")
    assert exact != pytest.approx(asym, rel=1e-6)
    assert p == pytest.approx(asym, rel=1e-9)


@pytest.mark.parametrize("name", PERMUTATION_CASES)
def test_mann_whitney_small_with_ties_is_the_exact_permutation_p(name: str) -> None:
    """Changed by issue 17: these were scipy's "auto" (the normal approximation with ties,
    or at 9 vs 9); now the exact permutation p over every split, as scipy computes it."""
    a, b = MWU_CASES[name]
    u, p = mann_whitney_u(a, b)
    assert u == pytest.approx(_scipy_mwu(a, b)[0])
    assert p == pytest.approx(_permutation_p(a, b), rel=1e-9)
    assert mann_whitney_u(b, a)[1] == pytest.approx(p, rel=1e-9)


def test_mann_whitney_exact_with_ties_matches_brute_force() -> None:
    """Seeded small samples drawn from a few values (so ties are everywhere), 2..7 a side."""
    rng = random.Random(17)
    checked = 0
    for _ in range(120):
        a = [float(rng.choice((1, 2, 2, 3, 5))) for _ in range(rng.randint(2, 7))]
        b = [float(rng.choice((2, 3, 3, 4, 5, 8))) for _ in range(rng.randint(2, 7))]
        assert mann_whitney_u(a, b)[1] == pytest.approx(_brute_force_p(a, b), rel=1e-12), (a, b)
        checked += 1
    assert checked == 120


def test_tied_runs_the_issue_found_no_longer_claim_a_difference() -> None:
    """3 vs 3 runs tied inside each arm: the normal approximation gave p = 0.047 and the
    verdict "higher"; the exact p is 2/20 = 0.10 (3 vs 4: 2/35 = 0.057, was 0.025)."""
    a, b = [1000.0] * 3, [1100.0] * 3
    assert scipy.stats.mannwhitneyu(a, b).pvalue == pytest.approx(0.0463, abs=1e-3)
    assert mann_whitney_u(a, b)[1] == pytest.approx(2 / 20)
    assert compare_runs(a, b).label == NOISE
    assert mann_whitney_u(a, [1100.0] * 4)[1] == pytest.approx(2 / 35)
    assert compare_runs(a, [1100.0] * 4).label == NOISE


def test_mann_whitney_hand_math() -> None:
    # 5 vs 5, every b above every a: U_a = 0, and only 1 of C(10,5)=252 orderings is that
    # extreme in each direction -> p = 2/252.
    u, p = mann_whitney_u(SAME_A, FAST_B)
    assert u == 0.0
    assert p == pytest.approx(2 / 252)
    # identical samples: p = 1
    assert mann_whitney_u([5.0, 6.0, 7.0], [5.0, 6.0, 7.0])[1] == 1.0


def test_mann_whitney_empty_raises() -> None:
    with pytest.raises(ValueError):
        mann_whitney_u([], [1.0])
    with pytest.raises(ValueError):
        mann_whitney_u([1.0], [])


# --- bootstrap CI --------------------------------------------------------------------------------


def test_bootstrap_is_deterministic_for_a_seed() -> None:
    first = bootstrap_ratio_ci(SAME_A, SAME_B, seed=7)
    assert bootstrap_ratio_ci(SAME_A, SAME_B, seed=7) == first
    # 30 + 25 runs give enough distinct resampled ratios for another seed to show
    large = bootstrap_ratio_ci(LARGE_A, LARGE_B, seed=7, resamples=500)
    assert bootstrap_ratio_ci(LARGE_A, LARGE_B, seed=7, resamples=500) == large
    assert bootstrap_ratio_ci(LARGE_A, LARGE_B, seed=8, resamples=500) != large


def test_bootstrap_separated_contains_true_ratio_and_excludes_one() -> None:
    true_ratio = float(np.median(FAST_B) / np.median(SAME_A))
    lo, hi = bootstrap_ratio_ci(SAME_A, FAST_B)
    assert lo <= true_ratio <= hi
    assert lo > 1.0
    lo_r, hi_r = bootstrap_ratio_ci(FAST_B, SAME_A)
    assert hi_r < 1.0
    assert lo_r <= 1 / true_ratio <= hi_r


def test_bootstrap_same_distribution_spans_one() -> None:
    lo, hi = bootstrap_ratio_ci(SAME_A, SAME_B)
    assert lo < 1.0 < hi


def test_bootstrap_narrower_at_lower_level() -> None:
    lo90, hi90 = bootstrap_ratio_ci(SAME_A, SAME_B, level=0.90)
    lo99, hi99 = bootstrap_ratio_ci(SAME_A, SAME_B, level=0.99)
    assert hi90 - lo90 < hi99 - lo99
    assert lo99 <= lo90 and hi90 <= hi99


def test_bootstrap_bounds_are_attainable_ratios() -> None:
    # With 2 runs per arm a resampled median is x1, (x1+x2)/2 or x2, so every resampled ratio
    # is one of 9 values and the bounds lie within their range.
    a, b = [100.0, 110.0], [120.0, 130.0]
    meds_a = [100.0, 105.0, 110.0]
    meds_b = [120.0, 125.0, 130.0]
    ratios = [mb / ma for ma in meds_a for mb in meds_b]
    lo, hi = bootstrap_ratio_ci(a, b)
    assert min(ratios) <= lo <= hi <= max(ratios)


def test_bootstrap_close_to_scipy_percentile_bootstrap() -> None:
    def ratio(x: np.ndarray, y: np.ndarray, axis: int) -> np.ndarray:
        return np.asarray(np.median(y, axis=axis) / np.median(x, axis=axis))

    for a, b in ((SAME_A, FAST_B), (SAME_A, SAME_B), (LARGE_A[:9], LARGE_B[:7])):
        res = scipy.stats.bootstrap(
            (np.array(a), np.array(b)),
            ratio,
            vectorized=True,
            method="percentile",
            n_resamples=50_000,
            rng=np.random.default_rng(1),
        )
        lo, hi = bootstrap_ratio_ci(a, b, resamples=20_000)
        assert lo == pytest.approx(float(res.confidence_interval.low), rel=0.005)
        assert hi == pytest.approx(float(res.confidence_interval.high), rel=0.005)


def test_bootstrap_guards() -> None:
    with pytest.raises(ValueError):
        bootstrap_ratio_ci([0.0, 0.0, 5.0], [1.0, 2.0])  # median(a) == 0
    with pytest.raises(ValueError):
        bootstrap_ratio_ci([], [1.0])
    with pytest.raises(ValueError):
        bootstrap_ratio_ci(SAME_A, SAME_B, level=1.0)
    # resamples whose A median is 0 are skipped: a = [0, 10, 10] still gives finite bounds
    lo, hi = bootstrap_ratio_ci([0.0, 10.0, 10.0], [10.0, 11.0, 12.0])
    assert math.isfinite(lo) and math.isfinite(hi)


# --- compare_runs / Verdict ----------------------------------------------------------------------


def test_compare_runs_higher() -> None:
    v = compare_runs(SAME_A, FAST_B)
    assert v.label == HIGHER == "higher"
    assert v.ratio == pytest.approx(float(np.median(FAST_B) / np.median(SAME_A)))
    assert v.p == pytest.approx(_scipy_mwu(SAME_A, FAST_B)[1])
    assert v.lo is not None and v.lo > 1.0
    assert (v.n_a, v.n_b) == (5, 5)


def test_compare_runs_lower() -> None:
    v = compare_runs(FAST_B, SAME_A)
    assert v.label == LOWER == "lower"
    assert v.hi is not None and v.hi < 1.0


def test_compare_runs_noise() -> None:
    v = compare_runs(SAME_A, SAME_B)
    assert v.label == NOISE == "noise"
    assert v.lo is not None and v.hi is not None and v.lo < 1.0 < v.hi
    assert v.p == pytest.approx(_scipy_mwu(SAME_A, SAME_B)[1])


def test_compare_runs_too_few() -> None:
    v = compare_runs([1000.0], [1120.0, 1130.0])
    assert v.label == TOO_FEW == "too few runs"
    assert v.ratio == pytest.approx(1125.0 / 1000.0)
    assert v.lo is None and v.hi is None and v.p is None
    empty = compare_runs([], [])
    assert empty.label == TOO_FEW and empty.ratio is None


def test_compare_runs_three_runs_cannot_be_significant() -> None:
    # 3 vs 3, clearly apart: the bootstrap CI excludes 1, but the smallest exact two-sided
    # Mann-Whitney p for 3 vs 3 is 2/C(6,3) = 0.1 > 0.05, so no verdict beyond noise.
    a, b = SAME_A[:3], FAST_B[:3]
    lo, _ = bootstrap_ratio_ci(a, b)
    assert lo > 1.0
    v = compare_runs(a, b)
    assert v.p == pytest.approx(2 / 20)
    assert v.label == NOISE
    # at level 0.8 (alpha 0.2) the same data is enough
    assert compare_runs(a, b, level=0.8).label == HIGHER


def test_compare_runs_zero_baseline_is_noise_without_ratio() -> None:
    v = compare_runs([0.0, 0.0, 0.0], [5.0, 6.0, 7.0])
    assert v.ratio is None and v.label == NOISE
    # Ties inside the baseline: the exact permutation p (changed by issue 17; was scipy's
    # normal approximation)
    assert v.p == pytest.approx(_permutation_p([0.0, 0.0, 0.0], [5.0, 6.0, 7.0]))
    assert "n/a" in v.text()


def test_verdict_text_formats() -> None:
    assert Verdict(1.12, 1.05, 1.19, 0.03, 5, 5, HIGHER).text() == "1.12x [1.05-1.19] p=0.030"
    assert Verdict(0.9, 0.85, 0.95, 0.0004, 8, 8, LOWER).text() == "0.90x [0.85-0.95] p<0.001"
    assert Verdict(0.97, 0.91, 1.04, 0.55, 5, 5, NOISE).text() == "~ noise 0.97x [0.91-1.04]"
    # noise although the CI excludes 1: the p-value says why
    assert Verdict(1.2, 1.1, 1.3, 0.1, 3, 3, NOISE).text() == "~ noise 1.20x [1.10-1.30] p=0.10"
    # the digits that matter near 5% (issue 17: 0.0469 printed as p=0.05)
    assert Verdict(1.2, 1.1, 1.3, 0.0469, 5, 5, HIGHER).text() == "1.20x [1.10-1.30] p=0.047"
    assert Verdict(1.2, 1.1, 1.3, 0.057, 3, 4, NOISE).text() == "~ noise 1.20x [1.10-1.30] p=0.057"
    assert Verdict(1.12, None, None, None, 1, 1, TOO_FEW).text() == "1.12x (1 run each: no verdict)"
    assert Verdict(1.12, None, None, None, 1, 3, TOO_FEW).text() == "1.12x (runs 1/3: no verdict)"


def test_compare_runs_text_uses_real_numbers() -> None:
    v = compare_runs(SAME_A, FAST_B)
    ratio = float(np.median(FAST_B) / np.median(SAME_A))
    assert v.text().startswith(f"{ratio:.2f}x [")
    assert v.text().endswith("p=0.008")  # 2/252 = 0.0079
    assert compare_runs(SAME_A, SAME_B).text().startswith("~ noise ")


def test_verdict_is_frozen() -> None:
    v = Verdict(1.0, 0.9, 1.1, 0.5, 5, 5, NOISE)
    with pytest.raises(AttributeError):
        v.label = HIGHER  # type: ignore[misc]


# --- steady state --------------------------------------------------------------------------------

W = 30


def _plateau(n: int, level: float = 1000.0) -> list[float]:
    # deterministic +-1% wiggle
    return [level + 10.0 * (1 if i % 2 else -1) for i in range(n)]


def _numpy_steady_index(values: list[float], window: int, cv_max: float, slope_max: float) -> int:
    """Brute-force reference (no gaps): first i whose trailing window passes both tests."""
    x = np.arange(window)
    for i in range(window - 1, len(values)):
        w = np.array(values[i - window + 1 : i + 1])
        mean = w.mean()
        c = w.std(ddof=1) / abs(mean)
        slope = np.polyfit(x, w, 1)[0] / abs(mean)
        if c <= cv_max and abs(slope) <= slope_max:
            return i
    return -1


def test_ramp_then_plateau_steady_once_plateau_fills_window() -> None:
    # warmup jumps from 0 to 450 in 10 s, then a plateau at 1000: any warmup value left in the
    # window puts the CV above 5%, so the first steady index is 10 + 30 - 1 = 39.
    ramp = [50.0 * i for i in range(10)]
    values = ramp + _plateau(60)
    det = SteadyState(window=W)
    flags = [det.add(v) for v in values]
    assert flags.index(True) == len(ramp) + W - 1
    assert not any(flags[: len(ramp) + W - 1])
    assert all(flags[len(ramp) + W - 1 :])
    assert steady_index(values, window=W) == len(ramp) + W - 1


def test_gentle_warmup_matches_numpy_reference() -> None:
    # exponential approach to 1000 TPS with deterministic +-1.5% wiggle
    values = [1000 * (1 - math.exp(-t / 20)) + 15 * math.sin(1.7 * t) for t in range(200)]
    expected = _numpy_steady_index(values, W, 0.05, 0.002)
    assert expected > 2 * W  # the warmup really delays it
    assert steady_index(values) == expected
    det = SteadyState()
    for v in values[: expected + 1]:
        det.add(v)
    w = np.array(values[expected - W + 1 : expected + 1])
    assert det.steady
    assert det.cv == pytest.approx(float(w.std(ddof=1) / w.mean()))
    assert det.slope == pytest.approx(float(np.polyfit(np.arange(W), w, 1)[0] / w.mean()))


def test_noisy_series_never_steady() -> None:
    values = [900.0 if i % 2 else 1100.0 for i in range(200)]  # CV about 10%
    det = SteadyState()
    assert not any(det.add(v) for v in values)
    assert det.cv == pytest.approx(statistics.stdev(values[-W:]) / 1000.0)
    assert det.cv is not None and det.cv > 0.05
    assert steady_index(values) is None


def test_slope_criterion() -> None:
    # a steady 0.3%/s climb: CV over 30 s is only about 2.5%, but the slope is too steep
    climbing = [1000.0 * (1 + 0.003 * i) for i in range(120)]
    assert steady_index(climbing) is None
    det = SteadyState()
    for v in climbing[:W]:
        det.add(v)
    w = climbing[:W]
    assert det.cv is not None and det.cv < 0.05
    # hand math: slope 3 TPS/s over a window mean of 1000*(1 + 0.003*14.5)
    assert det.slope == pytest.approx(3.0 / statistics.fmean(w))
    # a 0.1%/s drift is within tolerance: steady as soon as the window is full
    assert steady_index([1000.0 * (1 + 0.001 * i) for i in range(60)]) == W - 1


def test_gap_resets_window() -> None:
    det = SteadyState()
    first = _plateau(40)
    assert [det.add(v) for v in first].index(True) == W - 1
    assert det.steady
    assert det.add(None) is False
    assert not det.steady and len(det) == 0 and det.cv is None and det.slope is None
    second = _plateau(40)
    assert [det.add(v) for v in second].index(True) == W - 1
    values: list[float | None] = [*first[:20], None, *second]
    assert steady_index(values) == 21 + W - 1
    # a NaN sample counts as a gap too
    assert steady_index([*first[:20], math.nan, *second]) == 21 + W - 1


def test_reset_and_partial_window() -> None:
    det = SteadyState(window=5)
    assert det.cv is None and det.slope is None
    det.add(10.0)
    assert det.cv is None
    det.add(12.0)
    assert det.cv == pytest.approx(statistics.stdev([10.0, 12.0]) / 11.0)
    assert det.slope == pytest.approx(2.0 / 11.0)
    assert not det.steady  # window not full
    det.reset()
    assert len(det) == 0 and det.cv is None and not det.steady
    with pytest.raises(ValueError):
        SteadyState(window=1)


# --- Holm across a table's cells (issue 17) ---------------------------------------------------


def _holm_by_definition(ps: list[float]) -> list[float]:
    """Holm straight from its definition: the k-th smallest p times (m - k), made monotone."""
    m = len(ps)
    order = sorted(range(m), key=lambda i: ps[i])
    out = [0.0] * m
    for k, i in enumerate(order):
        out[i] = min(1.0, max(min(1.0, (m - j) * ps[order[j]]) for j in range(k + 1)))
    return out


def test_holm_hand_values_and_gaps() -> None:
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    # no test in a cell: passed through, not counted in m
    assert holm([0.01, None, 0.04]) == pytest.approx([0.02, None, 0.04])
    assert holm([]) == []
    assert holm([0.7, 0.9]) == [1.0, 1.0]


def test_holm_matches_its_definition_on_random_families() -> None:
    rng = random.Random(1979)
    for _ in range(200):
        ps = [rng.random() ** 2 for _ in range(rng.randint(1, 12))]
        assert holm(ps) == pytest.approx(_holm_by_definition(ps))


def test_holm_keeps_false_verdicts_in_a_table_at_five_percent() -> None:
    """A/A tables of 8 cells (10% run-to-run noise, n = 3..8 a side), seeded: the share of
    tables with any p <= 0.05 is at most 5% (plus 3 binomial standard errors) after Holm,
    and far above it without (so the check could fail)."""
    rng = random.Random(8)
    tables = 400
    for n in range(3, 9):
        any_raw = any_holm = 0
        for _ in range(tables):
            ps = []
            for _cell in range(8):
                a = [1000 * rng.lognormvariate(0, 0.1) for _ in range(n)]
                b = [1000 * rng.lognormvariate(0, 0.1) for _ in range(n)]
                ps.append(mann_whitney_u(a, b)[1])
            any_raw += min(ps) <= 0.05
            any_holm += min(p for p in holm(ps) if p is not None) <= 0.05
        tolerance = 3 * math.sqrt(0.05 * 0.95 / tables)
        assert any_holm / tables <= 0.05 + tolerance, n
        if n >= 5:  # from 5 runs a side single cells can reach 5%
            assert any_raw / tables > 0.15, n


def test_a_table_judges_each_cell_on_its_holm_adjusted_p() -> None:
    from knobtop.analysis.results import build, results_markdown
    from knobtop.journal.events import StepResult

    base = [1000.0, 1010.0, 1020.0, 1030.0, 1040.0]
    # one overlap with the baseline: exact p = 2 x 2/252 = 0.016 alone, x4 under Holm
    shifted = [1035.0, 1100.0, 1110.0, 1120.0, 1130.0]
    same = [1005.0, 1015.0, 1025.0, 1035.0, 1045.0]
    runs = {("A", 1): base, ("A", 2): base, ("B", 1): shifted, ("B", 2): same,
            ("C", 1): same, ("C", 2): same}
    steps = [StepResult(t=float(i), wall=0.0, recipe="r", index=i, replicate=k + 1, arm=arm,
                        threads=threads, start=0.0, end=1.0, tps=tps, p95=2.0)
             for i, ((arm, threads), values) in enumerate(runs.items())
             for k, tps in enumerate(values)]
    alone = compare_runs(base, shifted)
    assert alone.label == HIGHER and alone.p == pytest.approx(4 / 252)

    table = build("r", ["A", "B", "C"], [1, 2], steps, "end")
    cell = table.cells[("B", 1)]
    assert cell.verdict is not None
    assert cell.verdict.p == pytest.approx(4 / 252)
    assert cell.verdict.p_holm == pytest.approx(4 * 4 / 252)
    assert cell.verdict.label == NOISE
    assert "(Holm 0.063)" in cell.verdict.text()
    assert "Holm correction across the 4 comparisons" in results_markdown(table)

    # One comparison only: nothing to correct, the verdict stands and no note is printed.
    pair = build("r", ["A", "B"], [1], [s for s in steps if s.threads == 1 and s.arm != "C"],
                 "end")
    only = pair.cells[("B", 1)].verdict
    assert only is not None and only.label == HIGHER and only.p_holm is None
    assert "Holm" not in results_markdown(pair)


# --- paired by round (issue 17) ---------------------------------------------------------------


def _brute_force_signed_rank_p(d: list[float]) -> float:
    """Every sign flip of the non-zero differences: 2 x the smaller tail of T+."""
    nz = [x for x in d if x != 0]
    if not nz:
        return 1.0
    mags = sorted(abs(x) for x in nz)
    rank = {m: (mags.index(m) + 1 + len(mags) - mags[::-1].index(m)) / 2 for m in mags}
    observed = sum(rank[abs(x)] for x in nz if x > 0)
    sums = [sum(rank[abs(x)] for x, s in zip(nz, signs, strict=True) if s)
            for signs in itertools.product((False, True), repeat=len(nz))]
    low = sum(s <= observed + 1e-9 for s in sums)
    high = sum(s >= observed - 1e-9 for s in sums)
    return min(1.0, 2 * min(low, high) / len(sums))


def test_wilcoxon_without_ties_matches_scipy_exact() -> None:
    rng = random.Random(1945)
    for _ in range(60):
        d = [rng.gauss(0.02, 0.05) for _ in range(rng.randint(2, 14))]
        t, p = wilcoxon_signed_rank(d)
        ref = scipy.stats.wilcoxon(d, method="exact")
        assert p == pytest.approx(float(ref.pvalue), rel=1e-9), d
        # scipy's statistic is min(T+, T-) for two-sided
        n = len(d)
        assert min(t, n * (n + 1) / 2 - t) == pytest.approx(float(ref.statistic))


def test_wilcoxon_with_ties_and_zeros_matches_every_sign_flip() -> None:
    rng = random.Random(6)
    for _ in range(120):
        d = [float(rng.choice((-2, -1, 0, 1, 1, 2, 3))) for _ in range(rng.randint(1, 10))]
        assert wilcoxon_signed_rank(d)[1] == pytest.approx(_brute_force_signed_rank_p(d),
                                                           rel=1e-12), d
    assert wilcoxon_signed_rank([0.0, 0.0]) == (0.0, 1.0)


def test_pairing_by_round_sees_through_a_drifting_machine() -> None:
    """Eight rounds on a machine that speeds up 6% a round (a warming cache); B is 3% faster
    than A within each round.  As two samples the drift swamps the effect; round by round
    it is plain (every round B > A: exact p = 2/256)."""
    a = [1000 * 1.06**r * (1 + 0.003 * ((-1) ** r)) for r in range(8)]
    b = [x * 1.03 * (1 + 0.002 * ((-1) ** (r + 1))) for r, x in enumerate(a)]
    assert compare_runs(a, b).label == NOISE
    paired = compare_paired(a, b)
    assert paired.label == HIGHER and paired.test == PAIRED_TEST
    assert paired.p == pytest.approx(2 / 256)
    assert paired.lo is not None and paired.hi is not None
    assert 1.0 < paired.lo <= 1.03 <= paired.hi
    assert compare_paired(a, a).label == NOISE
    assert compare_paired(a[:1], b[:1]).label == TOO_FEW
    with pytest.raises(ValueError):
        compare_paired(a, b[:-1])


def _steps(runs: dict[tuple[str, int], list[float]]) -> list[Any]:
    from knobtop.journal.events import StepResult

    return [StepResult(t=float(i), wall=0.0, recipe="r", index=i, replicate=k + 1, arm=arm,
                       threads=threads, start=0.0, end=1.0, tps=tps, p95=2.0)
            for i, ((arm, threads), values) in enumerate(runs.items())
            for k, tps in enumerate(values)]


def test_a_table_pairs_cells_with_six_rounds_and_names_the_test() -> None:
    from knobtop.analysis.results import build, results_markdown

    a = [1000 * 1.06**r for r in range(6)]
    b = [x * 1.03 for x in a]
    six = build("r", ["A", "B"], [4], _steps({("A", 4): a, ("B", 4): b}), "end")
    verdict = six.cells[("B", 4)].verdict
    assert verdict is not None and verdict.test == PAIRED_TEST and verdict.label == HIGHER
    assert "Wilcoxon signed-rank" in results_markdown(six)
    # Five rounds: a paired p could never go under 2/32 = 0.0625, so the runs are compared
    # as two samples, and the report says which test it used.
    five = build("r", ["A", "B"], [4], _steps({("A", 4): a[:5], ("B", 4): b[:5]}), "end")
    verdict = five.cells[("B", 4)].verdict
    assert verdict is not None and verdict.test == "Mann-Whitney"
    text = results_markdown(five)
    assert "Mann-Whitney" in text and "Wilcoxon" not in text
