"""Issue 41: the verdicts' bootstrap CI read from the bootstrap's exact distribution
(analysis.medianboot), against brute force over every pair of resampled medians and
against the resampling bootstrap it replaces."""

from __future__ import annotations

import random
import statistics

import pytest

from knobtop.analysis.medianboot import (
    dist_quantile,
    median_boot,
    median_ci,
    median_ratio_ci,
    ratio_point,
)
from knobtop.analysis.stats import (
    bootstrap_ratio_ci,
    compare_paired,
    compare_runs,
    paired_ratio_ci,
)


def _brute_quantile(a: list[float], b: list[float], q: float) -> float:
    """The q-quantile of B/A over every pair of support points, summed by hand."""
    pairs: dict[float, float] = {}
    for av, ap in median_boot(a):
        for bv, bp in median_boot(b):
            pairs[bv / av] = pairs.get(bv / av, 0.0) + ap * bp
    total = 0.0
    for ratio in sorted(pairs):
        total += pairs[ratio]
        if total >= q - 1e-12:
            return ratio
    raise AssertionError("the probabilities do not reach q")


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 9])
def test_the_ci_bound_is_the_support_ratio_brute_force_finds(n: int) -> None:
    rng = random.Random(n)
    for _ in range(20):
        a = [round(rng.gauss(1000, 80)) for _ in range(n)]  # rounded: ties happen
        b = [round(rng.gauss(1050, 80)) for _ in range(n + 1)]
        for q in (0.025, 0.5, 0.975):
            # (the bisection alone stops up to 2^-32 of the span above: about 1e-10 here)
            assert ratio_point(median_boot(a), median_boot(b), q) == pytest.approx(
                _brute_quantile(a, b, q), rel=1e-13, abs=0)


def test_a_bound_of_exactly_one_reads_one() -> None:
    """Identical arms: the CI's ends are ratios of the data, 1 among them; no bisection
    leftover makes a bound of 1 read "above 1"."""
    runs = [1000.0, 1010.0, 990.0, 1000.0, 1005.0]
    lo, hi = median_ratio_ci(runs, [x * 1.0 for x in runs], 0.95)
    assert lo < 1.0 < hi
    flat = [1000.0] * 5
    assert median_ratio_ci(flat, flat, 0.95) == (1.0, 1.0)


def test_the_exact_ci_is_what_endless_resamples_find() -> None:
    rng = random.Random(41)
    for n in (4, 5, 8, 15):
        a = [rng.gauss(1000, 100) for _ in range(n)]
        b = [rng.gauss(1080, 100) for _ in range(n)]
        exact = median_ratio_ci(a, b, 0.95)
        drawn = bootstrap_ratio_ci(a, b, resamples=100_000, seed=3)
        assert exact == pytest.approx(drawn, rel=0.004)
        ratios = [y / x for x, y in zip(a, b, strict=True)]
        paired = paired_ratio_ci(a, b, resamples=100_000, seed=3)
        assert median_ci(ratios, 0.95) == pytest.approx(paired, rel=0.004)


def test_a_medians_distribution_sums_to_one_and_keeps_its_values() -> None:
    xs = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0]
    dist = median_boot(xs)
    assert sum(p for _, p in dist) == pytest.approx(1.0)
    assert dist_quantile(dist, 0.0) == min(xs) and dist_quantile(dist, 1.0) == max(xs)
    assert dist_quantile(dist, 0.5) == statistics.median(xs)


def test_the_verdicts_take_the_exact_ci() -> None:
    a = [1000.0, 1020.0, 980.0, 1010.0, 995.0]
    b = [1100.0, 1090.0, 1120.0, 1080.0, 1105.0]
    v = compare_runs(a, b)
    assert (v.lo, v.hi) == median_ratio_ci(a, b, 0.95)
    assert v.label == "higher"
    # (one seed against another: the same CI, as nothing is drawn)
    assert (compare_runs(a, b, seed=9).lo, compare_runs(a, b, seed=9).hi) == (v.lo, v.hi)
    p = compare_paired(a, b)
    assert (p.lo, p.hi) == median_ci([y / x for x, y in zip(a, b, strict=True)], 0.95)


def test_a_zero_run_still_gets_the_resampled_ci() -> None:
    """The exact distribution is for positive values; a run of 0 (a stalled load) falls
    back to the resamples, whose A medians of 0 are left out."""
    a = [0.0, 1000.0, 1010.0, 990.0, 1005.0]
    b = [1100.0, 1090.0, 1120.0, 1080.0, 1105.0]
    v = compare_runs(a, b, seed=5, resamples=2000)
    assert (v.lo, v.hi) == bootstrap_ratio_ci(a, b, seed=5, resamples=2000)
