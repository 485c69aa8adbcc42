"""Issue 17, parts 6-8's statistics: critical values of the rank tests (against the tests
themselves and scipy), the closed-form threshold behind the power simulation (against the
real verdicts), seeded simulations of whole tables (false-verdict rate under Holm, power
as calibrated), and the paired design's rule of rounds."""

from __future__ import annotations

import itertools
import math
import random
import statistics
from collections import Counter
from collections.abc import Callable

import pytest
import scipy.stats

from knobtop.analysis.noiseci import calibration_runs_needed, chi2_quantile, cv_interval
from knobtop.analysis.power import (
    _draws,
    _p,
    _threshold,
    best_p,
    detectable,
    detectable_effect,
    detectable_interval,
    deviations,
    median_boot,
    no_verdict_warning,
    plan_best_p,
    ratio_quantile,
    runs_for_verdict,
    simulate_tables,
    simulated_power,
)
from knobtop.analysis.stats import (
    bootstrap_ratio_ci,
    compare_runs,
    holm,
    mann_whitney_u,
    min_runs_for_verdict,
    mw_critical_u,
    paired_min_rounds,
    paired_ratio_ci,
    wilcoxon_critical_t,
    wilcoxon_signed_rank,
)


def _noise(sd: float) -> Callable[[random.Random], float]:
    def draw(rng: random.Random) -> float:
        return max(1e-6, rng.gauss(1.0, sd))

    return draw


# --- critical values ----------------------------------------------------------------------


@pytest.mark.parametrize(("n1", "n2"), [(3, 3), (3, 4), (4, 4), (5, 5), (5, 8), (8, 8),
                                         (10, 10), (12, 12), (20, 15)])
def test_the_critical_u_is_where_mann_whitney_crosses_five_percent(n1: int, n2: int) -> None:
    """Samples built to have U = u exactly (a's values interleaved with b's): p <= 0.05 from
    the critical U up, never below it; scipy agrees on the p of the boundary case."""
    crit = mw_critical_u(n1, n2)

    def with_u(u: int) -> tuple[list[float], list[float]]:
        # b_j below a_i for exactly n1*n2 - u pairs: put b's values between a's
        a = [float(10 * i) for i in range(n1)]
        b: list[float] = []
        left = n1 * n2 - u  # pairs with b < a
        for j in range(n2):
            k = min(n1, left)  # this b lies below the top k of a's values (no ties)
            b.append(10.0 * (n1 - k) - 5.0 + 0.01 * j)
            left -= k
        return a, b

    ps = {}
    for u in range(math.ceil(n1 * n2 / 2), n1 * n2 + 1):
        a, b = with_u(u)
        assert sum(1 for x in a for y in b if y > x) == u
        ps[u] = mann_whitney_u(a, b)[1]
    if crit is None:
        assert all(p > 0.05 for p in ps.values())
        return
    assert ps[crit] <= 0.05
    assert all(p > 0.05 for u, p in ps.items() if u < crit)
    a, b = with_u(crit)
    method = "exact" if min(n1, n2) <= 8 or max(n1, n2) <= 10 else "asymptotic"
    assert ps[crit] == pytest.approx(scipy.stats.mannwhitneyu(a, b, method=method).pvalue)


def test_three_runs_per_arm_can_never_reach_five_percent() -> None:
    assert mw_critical_u(3, 3) is None
    assert wilcoxon_critical_t(5) is None  # 2/32 = 0.0625
    assert wilcoxon_critical_t(6) == 21  # every round agreeing: 2/64


@pytest.mark.parametrize("n", [6, 7, 8, 10, 15, 30])
def test_the_critical_signed_rank_matches_the_test(n: int) -> None:
    crit = wilcoxon_critical_t(n)
    assert crit is not None
    for t in range(n * (n + 1) // 2 + 1):
        # differences whose positive ranks sum to t: greedy over ranks n..1
        left, signs = t, []
        for r in range(n, 0, -1):
            if r <= left:
                signs.append(1.0)
                left -= r
            else:
                signs.append(-1.0)
        if left:
            continue
        d = [s * r for s, r in zip(signs, range(n, 0, -1), strict=True)]
        p = wilcoxon_signed_rank(d)[1]
        if t >= crit:
            assert p <= 0.05, (t, p)
        elif t >= n * (n + 1) / 4:
            assert p > 0.05, (t, p)


@pytest.mark.parametrize("family", [1, 2, 4, 8, 16])
def test_the_fewest_runs_for_a_verdict_are_where_separation_passes_holm(family: int) -> None:
    """n runs of B all above n of A: the smallest p there is; times the family it passes
    0.05 at min_runs_for_verdict and not one run fewer."""
    n = min_runs_for_verdict(family)
    apart = [float(i) for i in range(n)], [float(i + 100) for i in range(n)]
    assert mann_whitney_u(*apart)[1] * family <= 0.05
    fewer = [float(i) for i in range(n - 1)], [float(i + 100) for i in range(n - 1)]
    assert mann_whitney_u(*fewer)[1] * family > 0.05


def test_paired_rounds_grow_with_the_family() -> None:
    """Pairing is only used where the signed-rank test can pass Holm's strictest step."""
    assert [paired_min_rounds(m) for m in (1, 2, 4, 8)] == [6, 7, 8, 9]
    for m in (1, 2, 4, 8, 16):
        n = paired_min_rounds(m)
        assert 2 / 2**n * m <= 0.05 < (2 / 2 ** (n - 1) * m if n > 6 else 1)


# --- the threshold is the verdict ----------------------------------------------------------


def test_the_bootstrap_median_distribution_is_every_resample_counted() -> None:
    """median_boot against all n^n resamples (ties in the data included)."""
    rng = random.Random(21)
    for n in range(1, 7):
        for tied in (False, True):
            xs = [float(rng.choice((1, 2, 2, 3))) if tied else rng.gauss(10, 2)
                  for _ in range(n)]
            brute: Counter[float] = Counter()
            for idx in itertools.product(range(n), repeat=n):
                brute[statistics.median([xs[i] for i in idx])] += 1
            mine: Counter[float] = Counter()
            for value, p in median_boot(xs):
                mine[value] += p
            assert sum(mine.values()) == pytest.approx(1.0)
            for value in set(brute) | set(mine):
                assert mine[value] == pytest.approx(brute[value] / n**n, abs=1e-12), (xs, value)


def test_the_exact_ratio_bound_is_the_bootstrap_with_endless_resamples() -> None:
    rng = random.Random(8)
    for n in (4, 5, 8):
        a = [rng.gauss(1000, 100) for _ in range(n)]
        b = [rng.gauss(1080, 100) for _ in range(n)]
        exact = ratio_quantile(median_boot(a), median_boot(b), 0.025)
        drawn = bootstrap_ratio_ci(a, b, resamples=100_000, seed=3)[0]
        assert exact == pytest.approx(drawn, rel=0.004)
        ratios = [y / x for x, y in zip(a, b, strict=True)]
        paired = paired_ratio_ci(a, b, resamples=100_000, seed=3)[0]
        assert min(median_boot(ratios), key=lambda vp: abs(vp[0] - paired))[0] == \
            pytest.approx(paired, rel=0.004)


@pytest.mark.parametrize("paired", [False, True])
def test_the_threshold_is_where_both_halves_of_the_verdict_turn(paired: bool) -> None:
    """Above the threshold B x (1 + t) passes the rank test at 5% and the (exact) bootstrap
    CI clears 1; just below, one of the two fails."""
    rng = random.Random(11)
    runs = [1000 * (1 + rng.gauss(0, 0.1)) for _ in range(10)]
    checked = 0
    for n in (4, 5, 6, 8):
        for a, b in _draws(deviations(runs), n, 25, seed=n):
            t = _threshold(a, b, paired, 0.05)
            if math.isinf(t):
                assert (paired and n < 6) or (not paired and n < 4)
                continue

            def passes(effect: float, a: list[float] = a, b: list[float] = b) -> bool:
                bb = [y * (1 + effect) for y in b]
                logs = [math.log(y / x) for x, y in zip(a, bb, strict=True)]
                p = wilcoxon_signed_rank(logs)[1] if paired else mann_whitney_u(a, bb)[1]
                return p <= 0.05 and _lower(a, bb, paired) > 1.0

            assert passes(t + 1e-7) and not passes(t - 1e-7), (n, t)
            checked += 1
    assert checked >= (40 if paired else 60)


def _lower(a: list[float], b: list[float], paired: bool) -> float:
    if paired:
        dist = median_boot([y / x for x, y in zip(a, b, strict=True)])
        total = 0.0
        for value, p in dist:
            total += p
            if total >= 0.025 - 1e-12:
                return value
        return dist[-1][0]
    return ratio_quantile(median_boot(a), median_boot(b), 0.025)


# --- whole tables, seeded -----------------------------------------------------------------


@pytest.mark.parametrize("paired", [False, True])
@pytest.mark.parametrize("n", [3, 4, 5, 6, 7, 8])
def test_a_table_of_eight_a_a_cells_rarely_claims_a_difference(n: int, paired: bool) -> None:
    """A/A data with 10% noise: the share of 8-cell tables (Holm) with any "higher" or
    "lower" stays within 5% plus its binomial tolerance (3 standard errors)."""
    sims = 600
    found = simulate_tables(_noise(0.10), n, cells=8, paired=paired, sims=sims,
                            seed=100 * n + paired)
    tolerance = 3 * math.sqrt(0.05 * 0.95 / sims)
    assert found.any_verdict <= 0.05 + tolerance
    assert found.tables == sims and found.cells == 8


def test_one_a_a_cell_reads_a_difference_at_most_five_percent_of_the_time() -> None:
    for n in (5, 8):
        sims = 3000
        one = simulate_tables(_noise(0.10), n, cells=1, sims=sims, seed=n)
        assert one.higher + one.lower <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / sims)


def test_the_simulated_table_judges_as_the_results_table_does() -> None:
    """simulate_tables skips the bootstrap where p cannot pass: the same verdicts as
    results.build on the same runs (build pairs from the same rounds count)."""
    from knobtop.analysis.results import build
    from knobtop.journal.events import StepResult

    rng = random.Random(5)
    seen: set[str] = set()
    for effect in (0.0, 0.25):
        for _ in range(3):
            runs: dict[tuple[str, int], list[float]] = {}
            for level in (1, 2, 3, 4):
                runs[("A", level)] = [rng.gauss(1000, 100) for _ in range(6)]
                runs[("B", level)] = [rng.gauss(1000, 100) * (1 + effect) for _ in range(6)]
            steps = [StepResult(t=0.0, wall=0.0, recipe="r", index=0, replicate=k + 1,
                                arm=arm, threads=lvl, start=0.0, end=1.0, tps=v, p95=1.0)
                     for (arm, lvl), vs in runs.items() for k, v in enumerate(vs)]
            table = build("r", ["A", "B"], [1, 2, 3, 4], steps, "end")
            labels = [table.cells[("B", lvl)].verdict.label  # type: ignore[union-attr]
                      for lvl in (1, 2, 3, 4)]
            # the same four comparisons through the simulation's shortcut (6 rounds,
            # 4 comparisons: unpaired, as paired_min_rounds(4) is 8)
            ps = [_p(runs[("A", lvl)], runs[("B", lvl)], False) for lvl in (1, 2, 3, 4)]
            adjusted = holm(ps)
            for lvl, p_adj, label in zip((1, 2, 3, 4), adjusted, labels, strict=True):
                if p_adj is None or p_adj > 0.05:
                    assert label == "noise"
                else:
                    full = compare_runs(runs[("A", lvl)], runs[("B", lvl)]).adjusted(p_adj)
                    assert full.label == label
                seen.add(label)
    assert seen == {"noise", "higher"}  # both branches of the shortcut were compared


def test_power_at_plus_20_percent_is_what_the_calibration_predicted() -> None:
    """Calibrate on A/A runs of 10% noise, predict the power of n = 5 and n = 8 at +20% by
    resampling them; simulate experiments from the true noise: within 0.08.  (200
    calibration runs, so the test checks the method, not the calibration's own luck: 8
    runs read a CV only to about +-25%, and power moves steeply with it.)"""
    rng = random.Random(2026)
    calibration = [1000 * max(0.01, rng.gauss(1, 0.10)) for _ in range(200)]
    devs = deviations(calibration)
    for n in (5, 8):
        predicted = simulated_power(devs, n, 0.20, sims=400, seed=1)
        actual = simulate_tables(_noise(0.10), n, effect=0.20, cells=1, sims=800,
                                 seed=7).higher
        assert predicted == pytest.approx(actual, abs=0.08), (n, predicted, actual)
        # and the effect found at 80% power does give about 80% in the true world
        effect = detectable_effect(devs, n, sims=400, seed=2)
        assert effect is not None
        at = simulate_tables(_noise(0.10), n, effect=effect, cells=1, sims=800, seed=8)
        assert at.higher == pytest.approx(0.80, abs=0.08), (n, effect, at.higher)


def test_more_replicates_or_less_noise_detect_smaller_effects() -> None:
    rng = random.Random(9)
    noisy = [1000 * rng.gauss(1, 0.10) for _ in range(10)]
    quiet = [1000 + (x - 1000) / 4 for x in noisy]  # the same shape, a quarter the spread
    five, eight = detectable(noisy, 5), detectable(noisy, 8)
    assert five is not None and eight is not None
    assert five.effect is not None and eight.effect is not None
    assert eight.effect < five.effect
    calm = detectable(quiet, 5)
    assert calm is not None and calm.effect is not None and calm.effect < five.effect / 2
    three = detectable(noisy, 3)
    assert three is not None and three.effect is None
    assert "cannot find any effect" in three.text()
    assert detectable(noisy[:2], 5) is None  # too few runs to read the noise from


# --- the best a plan can read (issue 39 item 10) ---------------------------------------------


@pytest.mark.parametrize("n", [2, 3, 4, 5, 6, 8, 10])
def test_the_best_p_is_the_exact_test_at_full_separation_as_scipy_has_it(n: int) -> None:
    """Two samples: 2 / C(2n, n), scipy's exact Mann-Whitney; paired: 2 / 2^n, scipy's
    exact Wilcoxon; with ties inside the arms no smaller."""
    a, b = list(range(n)), list(range(n, 2 * n))
    exact = scipy.stats.mannwhitneyu(a, b, method="exact").pvalue
    assert best_p(n) == pytest.approx(exact, rel=1e-12)
    assert best_p(n) == pytest.approx(2 / math.comb(2 * n, n), rel=1e-12)
    signed = scipy.stats.wilcoxon(list(range(1, n + 1)), method="exact").pvalue
    assert best_p(n, paired=True) == pytest.approx(signed, rel=1e-12)
    assert best_p(n, 3) == pytest.approx(min(1.0, 3 * exact), rel=1e-12)
    rng = random.Random(n)
    for _ in range(200):  # no data reaches below it, ties or not
        xa = [float(rng.randint(0, 4)) for _ in range(n)]
        xb = [float(rng.randint(0, 4)) for _ in range(n)]
        assert mann_whitney_u(xa, xb)[1] >= best_p(n) - 1e-15
        d = [float(rng.randint(-3, 3)) for _ in range(n)]
        assert wilcoxon_signed_rank(d)[1] >= best_p(n, paired=True) - 1e-15


def test_the_plan_pairs_its_rounds_as_the_results_do() -> None:
    assert plan_best_p(3) == pytest.approx(0.1)
    assert plan_best_p(4) == pytest.approx(2 / 70)
    assert plan_best_p(6) == pytest.approx(2 / 64)  # paired from 6 rounds of one comparison
    assert plan_best_p(6, 2) == pytest.approx(2 * 2 / 924)  # two samples below 7
    assert plan_best_p(1) == 1.0


@pytest.mark.parametrize("family", [1, 2, 3, 4, 8, 16, 32])
def test_runs_for_verdict_is_the_first_plan_below_five_percent(family: int) -> None:
    """Every plan from runs_for_verdict on can read p <= 0.05 (paired or not), none below;
    it agrees with the older closed form."""
    n = runs_for_verdict(family)
    assert n == min_runs_for_verdict(family)
    assert all(plan_best_p(k, family) <= 0.05 for k in range(n, 31))
    assert all(plan_best_p(k, family) > 0.05 for k in range(1, n))
    assert no_verdict_warning(n, family) is None
    warning = no_verdict_warning(n - 1, family)
    assert warning is not None and f"give at least {n} replicates" in warning
    assert runs_for_verdict(1) == 4 and runs_for_verdict(2) == 5 and runs_for_verdict(8) == 6


# --- the two families of a report (issue 39 item 10) ------------------------------------------


def _a_a_report(n: int, cells: int, sims: int, *, latency_follows: bool,
                seed: int) -> tuple[float, float]:
    """A/A reports of ``cells`` comparisons on average TPS and on latency, each verdict table
    Holm-corrected on its own as results.build does: (share of reports with a false
    verdict in the TPS table, share with one in either table). Latency is either 1 / TPS
    of the same run (Little's law at fixed threads) or noise of its own."""
    rng = random.Random(seed)
    draw = _noise(0.10)
    tps_hit = any_hit = 0
    for _ in range(sims):
        tps = [([draw(rng) for _ in range(n)], [draw(rng) for _ in range(n)])
               for _ in range(cells)]
        lat = ([([1 / x for x in a], [1 / y for y in b]) for a, b in tps] if latency_follows
               else [([draw(rng) for _ in range(n)], [draw(rng) for _ in range(n)])
                     for _ in range(cells)])
        hits = []
        for family in (tps, lat):
            ps = [_p(a, b, False) for a, b in family]
            adjusted = holm(ps) if cells > 1 else ps
            hits.append(any(p is not None and p <= 0.05
                            and compare_runs(a, b, resamples=300).label != "noise"
                            for (a, b), p in zip(family, adjusted, strict=True)))
        tps_hit += hits[0]
        any_hit += hits[0] or hits[1]
    return tps_hit / sims, any_hit / sims


def test_the_whole_reports_a_a_false_verdict_rate_is_what_the_docs_say() -> None:
    """docs/reference/recipes.md: TPS and latency are two Holm families, each held at 5%;
    the whole report at most 1 - 0.95^2 (9.75%) when their noise is independent (the
    aa-noise design, 5 rounds at 2 thread counts: about 6.5%), and the TPS table's own rate
    when latency follows TPS."""
    sims = 2000
    tolerance = 3 * math.sqrt(0.05 * 0.95 / sims)
    tps, both = _a_a_report(5, 2, sims, latency_follows=False, seed=39)
    assert tps <= 0.05 + tolerance
    assert 0.05 < both <= 1 - 0.95**2
    tps, both = _a_a_report(5, 2, sims // 2, latency_follows=True, seed=40)
    assert both == tps <= 0.05 + tolerance


# --- calibration with an interval (issue 39 item 10) -------------------------------------------


@pytest.mark.parametrize("df", [1, 2, 3, 7, 17, 19, 50, 99])
def test_chi2_quantiles_are_scipys(df: int) -> None:
    for q in (0.001, 0.025, 0.5, 0.975, 0.999):
        assert chi2_quantile(q, df) == pytest.approx(scipy.stats.chi2.ppf(q, df), rel=1e-9)


def test_the_cv_interval_is_the_chi_square_one_and_its_rule_asks_for_18_runs() -> None:
    lo, hi = cv_interval(0.10, 8)
    assert lo == pytest.approx(0.10 * math.sqrt(7 / scipy.stats.chi2.ppf(0.975, 7)))
    assert hi == pytest.approx(0.10 * math.sqrt(7 / scipy.stats.chi2.ppf(0.025, 7)))
    assert lo < 0.10 < hi
    needed = calibration_runs_needed()
    assert needed == 18
    assert cv_interval(1.0, needed)[1] <= 1.5 < cv_interval(1.0, needed - 1)[1]


def test_the_chi_square_interval_covers_the_true_cv_about_95_percent_of_the_time() -> None:
    rng = random.Random(7)
    sims, covered = 2000, 0
    for _ in range(sims):
        runs = [rng.gauss(1000, 80) for _ in range(8)]
        lo, hi = cv_interval(statistics.stdev(runs) / statistics.fmean(runs), 8)
        covered += lo <= 0.08 <= hi
    assert abs(covered / sims - 0.95) <= 3 * math.sqrt(0.05 * 0.95 / sims)


def test_the_detectable_interval_brackets_the_detectable_effect() -> None:
    rng = random.Random(3)
    runs = [rng.gauss(1000, 80) for _ in range(8)]
    found = detectable(runs, 5, comparisons=2)
    ends = detectable_interval(runs, 5, comparisons=2)
    assert found is not None and found.effect is not None and ends is not None
    lo, hi = ends
    assert lo is not None and hi is not None and lo < found.effect < hi
    assert detectable_interval([1000.0, 1000.0, 1000.0], 5) is None  # no spread
    assert detectable_interval([1000.0, 1010.0], 5) is None  # too few runs


def test_the_smoothed_draws_keep_the_runs_sample_variance() -> None:
    """aa-noise's 4 calibration runs: the simulated noise has the variance they show (it
    used to be 9% less: the population variance of 4 values, jitter shrunk to match)."""
    devs = [0.9, 0.97, 1.02, 1.11]
    drawn = [x for a, b in _draws(devs, 10, 4000, 1) for x in a + b]
    assert statistics.variance(drawn) == pytest.approx(statistics.variance(devs), rel=0.03)
    assert statistics.fmean(drawn) == pytest.approx(statistics.fmean(devs), abs=0.003)
