"""Statistics for A/B tuning experiments: medians, spread, Mann-Whitney U, a bootstrap CI of the
median ratio, a per-cell verdict, and a steady-state detector for per-second series.

Method (REFERENCE.md section 4, "Statistics"):

* **One run is one sample.**  Per-second values inside a run (TPS, latency) are strongly
  autocorrelated: the buffer pool, purge lag and checkpoint age carry over from one second to the
  next, so 300 seconds of one run are not 300 independent observations.  Each replicate is first
  reduced to a single number (e.g. the median TPS of its steady part, warmup trimmed) and only
  those per-run numbers are compared.  With 3-10 replicates per arm the samples are tiny.
* **Median ratio.**  The effect is reported as ``median(B) / median(A)``: relative change is what
  tuning questions ask ("2% faster"), it is unit-free so cells of different metrics read alike,
  and the median is not dragged by the one run that hit a checkpoint storm or a noisy neighbour.
* **Nonparametric.**  Run-to-run spread is about +-10% on the lab machine and is not normal
  (skewed, occasional outliers, bimodal when a run straddles a background flush), and with five
  runs normality cannot be checked anyway; Hoefler & Belli (SC'15) advise medians with
  nonparametric confidence intervals.  So: Mann-Whitney U on the per-run values (rank-based, no
  distribution assumed) and a percentile bootstrap CI of the median ratio, resampling each arm
  independently.  The verdicts read that CI from the bootstrap's exact distribution
  (:mod:`knobtop.analysis.medianboot`: what endless resamples would find, without their
  noise or cost); :func:`bootstrap_ratio_ci` draws the resamples, for data with a zero.

Verdict labels are neutral about direction (see :class:`Verdict`): ``"higher"`` means B's median
is higher than A's, which is good for TPS and bad for latency; the caller knows which.

A result is only called ``"higher"``/``"lower"`` when the bootstrap CI excludes 1 **and** the
Mann-Whitney p-value is at most ``1 - level``.  The percentile bootstrap alone is far too
optimistic with 2-4 runs per arm (with 2 runs an arm's resampled median takes only three values):
on same-distribution data with 10% noise it excluded 1 in about 37% of trials at n=2 and 11% at
n=4 instead of 5%.  Requiring the rank test as well brings that back under 5%.  A consequence,
on purpose: at level 0.95 three runs per arm can never give a verdict (the smallest two-sided
exact p for 3 vs 3 is 0.1); four or more per arm are needed, five recommended.

Paired rounds (issue 17): when both arms ran once in each round, :func:`compare_paired`
compares them round by round (median per-round ratio, bootstrap over rounds, exact
Wilcoxon signed-rank on the log ratios); :func:`holm` adjusts a table's p-values together.

Pure Python (stdlib only; importing scipy.stats costs 0.8 s and 88 MB, more than a report's
whole budget); the tests check every number against scipy/numpy and brute force.
"""
# Over 500 lines: the pieces of one verdict (exact rank tests two-sample and paired, the
# bootstrap CIs, Holm) share the rank and quantile helpers and the Verdict they fill; the
# steady-state detector shares _values. Splitting them would scatter one method.

from __future__ import annotations

import dataclasses
import math
import random
import statistics
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

from knobtop.analysis.medianboot import median_ci, median_ratio_ci

__all__ = [
    "HIGHER",
    "LOWER",
    "NOISE",
    "PAIRED_MIN_ROUNDS",
    "PAIRED_TEST",
    "TOO_FEW",
    "SteadyState",
    "Verdict",
    "bootstrap_ratio_ci",
    "compare_paired",
    "compare_runs",
    "cv",
    "holm",
    "iqr",
    "mann_whitney_u",
    "median",
    "min_runs_for_verdict",
    "mw_critical_u",
    "paired_min_rounds",
    "paired_ratio_ci",
    "quantile",
    "steady_index",
    "wilcoxon_critical_t",
    "wilcoxon_signed_rank",
]

HIGHER = "higher"
"""B's median is higher than A's: CI of median(B)/median(A) entirely above 1, and p <= 1-level."""
LOWER = "lower"
"""B's median is lower than A's: CI entirely below 1, and p <= 1-level."""
NOISE = "noise"
"""Indistinguishable from run-to-run noise: CI spans 1, or p > 1-level, or no ratio (A median 0)."""
TOO_FEW = "too few runs"
"""Fewer than 2 runs in an arm: a ratio may be shown but no verdict is possible."""

# Steady-state defaults for 1 Hz sysbench TPS.  REFERENCE suggests a 60 x 1 s window; 30 s is
# used because experiment runs are often only 60-300 s and a 60 s window would spend a whole
# minute (or most of a short run) before it could ever fire, while 30 samples still estimate the
# CV to within roughly +-13% of itself.  cv_max 5%: a settled server's per-second TPS typically
# jitters 1-3%, a warming buffer pool or a flush storm far more.  slope_max 0.2%/s of the mean:
# with 30 samples and 3% noise the slope's standard error is about 0.06%/s, so a flat series
# passes with a wide margin, whereas a warmup still climbing 6% across the window does not.
DEFAULT_WINDOW = 30
DEFAULT_CV_MAX = 0.05
DEFAULT_SLOPE_MAX = 0.002


def _values(xs: Sequence[float], name: str = "xs") -> list[float]:
    """Copy to a list of floats; ValueError when empty or when a value is NaN."""
    out = [float(x) for x in xs]
    if not out:
        raise ValueError(f"{name} is empty")
    if any(math.isnan(x) for x in out):
        raise ValueError(f"{name} contains NaN")
    return out


def median(xs: Sequence[float]) -> float:
    """Median (mean of the two middle values for even n).  ValueError when empty or NaN."""
    return float(statistics.median(_values(xs)))


def _quantile_sorted(s: Sequence[float], q: float) -> float:
    h = (len(s) - 1) * q
    lo = math.floor(h)
    if lo >= len(s) - 1:
        return s[-1]
    return s[lo] + (h - lo) * (s[lo + 1] - s[lo])


def quantile(xs: Sequence[float], q: float) -> float:
    """The q-quantile (0 <= q <= 1) by linear interpolation between order statistics.

    Same as numpy's default (``method="linear"``, Hyndman-Fan type 7) and
    ``statistics.quantiles(method="inclusive")``.  ValueError when empty or q is outside [0, 1].
    """
    if not 0.0 <= q <= 1.0:
        raise ValueError(f"q must be in [0, 1], got {q}")
    return _quantile_sorted(sorted(_values(xs)), q)


def iqr(xs: Sequence[float]) -> float:
    """Interquartile range, ``quantile(xs, .75) - quantile(xs, .25)``."""
    s = sorted(_values(xs))
    return _quantile_sorted(s, 0.75) - _quantile_sorted(s, 0.25)


def cv(xs: Sequence[float]) -> float | None:
    """Coefficient of variation: sample stdev (n-1) / |mean|; None if n < 2 or the mean is 0.

    The absolute value of the mean keeps the CV non-negative so that threshold checks stay
    meaningful; for the positive metrics this module is meant for it equals stdev / mean.
    """
    v = _values(xs)
    if len(v) < 2:
        return None
    m = statistics.fmean(v)
    if m == 0:
        return None
    return statistics.stdev(v) / abs(m)


# --- Mann-Whitney U ------------------------------------------------------------------------------

# The exact null distribution is used when one arm has at most _EXACT_MAX_N values (scipy's
# mannwhitneyu "auto" rule, 1.7 to 1.17) or both have at most _EXACT_BOTH_N, with ties or
# without; beyond, the normal approximation.  scipy's "auto" falls back to the normal
# approximation whenever there are ties, even at 3 vs 3, where it is far off: 3 runs tied
# inside each arm gave p = 0.047 (a verdict) against an exact 0.10 (issue 17).
_EXACT_MAX_N = 8
_EXACT_BOTH_N = 10
_EXACT_TIED_TOTAL = 40  # beyond, the tied rank-sum table costs more than a report may spend


def _average_ranks(xs: Sequence[float]) -> tuple[list[float], list[int]]:
    """1-based ranks with ties given their average rank, and the size of every tie group."""
    order = sorted(range(len(xs)), key=xs.__getitem__)
    ranks = [0.0] * len(xs)
    groups: list[int] = []
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and xs[order[j + 1]] == xs[order[i]]:
            j += 1
        avg = (i + j) / 2 + 1  # ranks i+1 .. j+1
        for k in range(i, j + 1):
            ranks[order[k]] = avg
        groups.append(j - i + 1)
        i = j + 1
    return ranks, groups


@lru_cache(maxsize=256)
def _u_counts(m: int, n: int) -> tuple[int, ...]:
    """Number of orderings giving U = 0 .. m*n for samples of size m and n without ties.

    These are the coefficients of the Gaussian binomial [m+n choose m]_q =
    prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), computed with exact integers.
    """
    if m > n:
        m, n = n, m
    poly = [1]
    for i in range(1, m + 1):
        shift = n + i
        grown = poly + [0] * shift
        for k in range(shift, len(grown)):  # multiply by (1 - q^shift)
            grown[k] -= poly[k - shift]
        for k in range(i, len(grown)):  # divide by (1 - q^i): exact, a running sum with stride i
            grown[k] += grown[k - i]
        poly = grown[: m * n + 1]  # higher coefficients are zero
    return tuple(poly)


def _tied_rank_sums(doubled: Sequence[int], k: int) -> list[int]:
    """How many k-subsets of the pooled values have each sum of doubled (average) ranks:
    index s counts the subsets whose doubled ranks sum to s.  Exact integers; a knapsack
    over the values, O(n k sum)."""
    total = sum(doubled)
    counts = [[0] * (total + 1) for _ in range(k + 1)]
    counts[0][0] = 1
    for taken, r in enumerate(doubled, start=1):
        for j in range(min(k, taken), 0, -1):
            row, prev = counts[j], counts[j - 1]
            for s in range(total, r - 1, -1):
                if prev[s - r]:
                    row[s] += prev[s - r]
    return counts[k]


def _exact_tied_p(ranks: Sequence[float], n1: int) -> float:
    """The exact two-sided permutation p of the first n1 values' rank sum, ties included:
    2 x the smaller tail of its distribution over all C(n, n1) splits, clipped to 1 (as
    ``scipy.stats.permutation_test`` computes a two-sided p)."""
    doubled = [round(2 * r) for r in ranks]  # average ranks are multiples of 1/2
    dist = _tied_rank_sums(doubled, n1)
    observed = sum(doubled[:n1])
    splits = math.comb(len(ranks), n1)
    low, high = sum(dist[: observed + 1]), sum(dist[observed:])
    return min(1.0, 2 * min(low, high) / splits)


def mann_whitney_u(a: Sequence[float], b: Sequence[float]) -> tuple[float, float]:
    """Mann-Whitney U test of a against b: (U statistic of a, two-sided p-value).

    U is the rank sum of a minus n_a(n_a+1)/2 (ties get average ranks), as scipy's
    ``mannwhitneyu``.  The p-value is exact when min(n_a, n_b) <= 8 or both are <= 10:
    without ties the null distribution of U enumerated with integers (equal to scipy's
    ``method="exact"``), with ties the permutation distribution of the tied rank sum (equal
    to ``scipy.stats.permutation_test`` over every split).  Larger samples get the normal
    approximation with tie correction and a 0.5 continuity correction (scipy's
    ``"asymptotic"``).  p is clipped to 1 (identical samples give p = 1).  ValueError if
    either sample is empty or contains NaN.
    """
    xa = _values(a, "a")
    xb = _values(b, "b")
    n1, n2 = len(xa), len(xb)
    ranks, groups = _average_ranks(xa + xb)
    u1 = math.fsum(ranks[:n1]) - n1 * (n1 + 1) / 2
    u2 = n1 * n2 - u1
    u = max(u1, u2)
    ties = any(g > 1 for g in groups)
    exact = min(n1, n2) <= _EXACT_MAX_N or max(n1, n2) <= _EXACT_BOTH_N
    if exact and ties and (max(n1, n2) <= _EXACT_BOTH_N or n1 + n2 <= _EXACT_TIED_TOTAL):
        p = _exact_tied_p(ranks, n1)
    elif exact and not ties:
        counts = _u_counts(n1, n2)
        # U is an integer here; P(U >= u) by summing the upper tail.
        tail = sum(counts[round(u) :])
        p = 2 * (tail / math.comb(n1 + n2, n1))
    else:
        n = n1 + n2
        tie_term = sum(g**3 - g for g in groups)
        var = n1 * n2 / 12 * ((n + 1) - tie_term / (n * (n - 1)))
        if var <= 0:  # every value tied: U sits exactly at its mean
            return u1, 1.0
        z = (u - n1 * n2 / 2 - 0.5) / math.sqrt(var)
        p = math.erfc(z / math.sqrt(2))  # 2 * P(Z > z)
    return u1, min(max(p, 0.0), 1.0)


def mw_critical_u(n1: int, n2: int, alpha: float = 0.05) -> int | None:
    """The smallest U (of either arm, without ties) whose two-sided p from
    :func:`mann_whitney_u` is at most ``alpha``; None when no U is (3 vs 3 at 0.05)."""
    total_pairs = n1 * n2
    exact = min(n1, n2) <= _EXACT_MAX_N or max(n1, n2) <= _EXACT_BOTH_N
    if exact:
        counts = _u_counts(n1, n2)
        splits = math.comb(n1 + n2, n1)
        tail = 0
        found: int | None = None
        for u in range(total_pairs, -1, -1):  # grow the upper tail while p stays <= alpha
            tail += counts[u]
            if 2 * tail / splits > alpha:
                break
            found = u
        return found
    n = n1 + n2
    sd = math.sqrt(n1 * n2 * (n + 1) / 12)
    for u in range(math.ceil(total_pairs / 2), total_pairs + 1):
        if math.erfc((u - total_pairs / 2 - 0.5) / sd / math.sqrt(2)) <= alpha:
            return u
    return None


# --- bootstrap -----------------------------------------------------------------------------------


def bootstrap_ratio_ci(
    a: Sequence[float],
    b: Sequence[float],
    *,
    level: float = 0.95,
    resamples: int = 10_000,
    seed: int = 0,
) -> tuple[float, float]:
    """Percentile bootstrap confidence interval (lo, hi) of ``median(b) / median(a)``.

    Each resample draws len(a) values from a and len(b) values from b, independently and with
    replacement, using ``random.Random(seed)``, so the result is deterministic for a seed (and
    Python version).  The bounds are the (1-level)/2 and (1+level)/2 quantiles (linear
    interpolation) of the resampled ratios.

    Zero guard: ValueError when median(a) is 0 (the ratio itself is undefined).  Resamples whose
    A median is 0 (possible when a holds zeros) are skipped; ValueError if all are.  Meant for
    positive metrics (TPS, latency); ValueError on empty input, NaN, level outside (0, 1) or
    resamples < 1.
    """
    xa = _values(a, "a")
    xb = _values(b, "b")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if statistics.median(xa) == 0:
        raise ValueError("median(a) is 0: the ratio median(b)/median(a) is undefined")
    rng = random.Random(seed)
    na, nb = len(xa), len(xb)
    ratios: list[float] = []
    # rng.choices(x, k=n) and statistics.median written out as they compute (the same
    # draws of rng.random(), the same middle values): the same ratios to the last bit in a
    # third of the time (a merged table's eight cells draw 160,000 resamples).
    rand, floor, fa, fb = rng.random, math.floor, na + 0.0, nb + 0.0
    ha, hb = na // 2, nb // 2
    odd_a, odd_b = na % 2 == 1, nb % 2 == 1
    for _ in range(resamples):
        sa = sorted([xa[floor(rand() * fa)] for _ in range(na)])
        sb = sorted([xb[floor(rand() * fb)] for _ in range(nb)])
        ma = sa[ha] if odd_a else (sa[ha - 1] + sa[ha]) / 2
        mb = sb[hb] if odd_b else (sb[hb - 1] + sb[hb]) / 2
        if ma != 0:
            ratios.append(mb / ma)
    if not ratios:
        raise ValueError("every resample of a has median 0")
    ratios.sort()
    alpha = (1.0 - level) / 2
    return _quantile_sorted(ratios, alpha), _quantile_sorted(ratios, 1.0 - alpha)


# --- verdict -------------------------------------------------------------------------------------


def _fmt_p(p: float) -> str:
    """p with the digits that matter near the 5% line: 0.047 is not printed as 0.05."""
    if p < 0.001:
        return "p<0.001"
    if p < 0.1:
        return f"p={p:.3f}"
    return f"p={p:.2f}"


@dataclass(frozen=True, slots=True)
class Verdict:
    """The comparison of arm B against baseline arm A for one cell.

    ``ratio`` is median(B)/median(A); ``lo``/``hi`` the bootstrap CI of it; ``p`` the two-sided
    Mann-Whitney p-value; ``n_a``/``n_b`` the run counts.  Any of the floats is None when it
    cannot be computed (too few runs; ratio, lo and hi when median(A) is 0).

    ``label`` is direction-neutral, because the metric may be throughput (higher is better) or
    latency (lower is better); the caller decides which is good:

    * ``"higher"`` (:data:`HIGHER`): CI entirely above 1 and p <= 1 - level.
    * ``"lower"`` (:data:`LOWER`): CI entirely below 1 and p <= 1 - level.
    * ``"noise"`` (:data:`NOISE`): indistinguishable from run-to-run noise: the CI spans 1, or it
      excludes 1 but the rank test does not agree (p > 1 - level, typical with <= 4 runs per
      arm), or median(A) is 0 so there is no ratio.
    * ``"too few runs"`` (:data:`TOO_FEW`): n_a < 2 or n_b < 2.
    """

    ratio: float | None
    lo: float | None
    hi: float | None
    p: float | None
    n_a: int
    n_b: int
    label: str
    p_holm: float | None = None  # Holm-adjusted p across a table's cells (see holm())
    test: str = "Mann-Whitney"  # or PAIRED_TEST: which test gave p (a report names it)

    def adjusted(self, p_holm: float | None, level: float = 0.95) -> Verdict:
        """This verdict within a family of comparisons: ``p_holm`` is its Holm-adjusted p;
        "higher"/"lower" stay only when that is <= 1 - level too."""
        label = self.label
        if label in (HIGHER, LOWER) and (p_holm is None or p_holm > 1.0 - level):
            label = NOISE
        return dataclasses.replace(self, p_holm=p_holm, label=label)

    def text(self) -> str:
        """One short cell text, e.g. ``1.12x [1.05-1.19] p=0.030``, ``~ noise 0.97x [0.91-1.04]``
        (p is added to a noise cell only when the CI alone would have excluded 1), or
        ``1.12x (1 run each: no verdict)``."""
        ratio = "n/a" if self.ratio is None else f"{self.ratio:.2f}x"
        if self.label == TOO_FEW:
            runs = (
                f"{self.n_a} run{'' if self.n_a == 1 else 's'} each"
                if self.n_a == self.n_b
                else f"runs {self.n_a}/{self.n_b}"
            )
            return f"{ratio} ({runs}: no verdict)"
        if self.ratio is None:
            return f"~ noise n/a (median A is 0){self._p_text()}"
        ci = "" if self.lo is None or self.hi is None else f" [{self.lo:.2f}-{self.hi:.2f}]"
        if self.label == NOISE:
            spans = self.lo is None or self.hi is None or self.lo <= 1.0 <= self.hi
            return f"~ noise {ratio}{ci}{'' if spans else self._p_text()}"
        return f"{ratio}{ci}{self._p_text()}"

    def _p_text(self) -> str:
        if self.p is None:
            return ""
        if self.p_holm is None:
            return f" {_fmt_p(self.p)}"
        return f" {_fmt_p(self.p)} (Holm {_fmt_p(self.p_holm)[2:]})"


def compare_runs(
    a: Sequence[float],
    b: Sequence[float],
    *,
    level: float = 0.95,
    seed: int = 0,
    resamples: int = 10_000,
) -> Verdict:
    """Compare per-run values of arm B against baseline arm A (one number per run).

    Never raises for few or zero runs (that is the "too few runs" label) nor for median(A) = 0
    (label "noise" with ratio None); ValueError for NaN values or level outside (0, 1).
    See :class:`Verdict` for the labels.  The CI is the bootstrap's exact one for positive
    values; ``seed`` and ``resamples`` are for data with a zero or below (resampled).
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    xa = [float(x) for x in a]
    xb = [float(x) for x in b]
    if any(math.isnan(x) for x in xa + xb):
        raise ValueError("run values contain NaN")
    n_a, n_b = len(xa), len(xb)
    ratio: float | None = None
    if xa and xb:
        ma = statistics.median(xa)
        if ma != 0:
            ratio = statistics.median(xb) / ma
    if n_a < 2 or n_b < 2:
        return Verdict(ratio, None, None, None, n_a, n_b, TOO_FEW)
    _, p = mann_whitney_u(xa, xb)
    if ratio is None:
        return Verdict(None, None, None, p, n_a, n_b, NOISE)
    if min(xa) > 0 and min(xb) > 0:  # the bootstrap's own distribution, exactly
        lo, hi = median_ratio_ci(xa, xb, level)
    else:  # (a zero or negative value: resamples, each A median of 0 left out)
        lo, hi = bootstrap_ratio_ci(xa, xb, level=level, seed=seed, resamples=resamples)
    significant = p <= 1.0 - level
    if lo > 1.0 and significant:
        label = HIGHER
    elif hi < 1.0 and significant:
        label = LOWER
    else:
        label = NOISE
    return Verdict(ratio, lo, hi, p, n_a, n_b, label)


# --- paired by round ------------------------------------------------------------------------

PAIRED_TEST = "Wilcoxon signed-rank, paired by round"
# With 5 pairs the smallest exact two-sided signed-rank p is 2/32 = 0.0625: no verdict could
# ever be reached at 95%, so fewer rounds than this are compared unpaired (decided by the
# design, never by the data).
PAIRED_MIN_ROUNDS = 6


def min_runs_for_verdict(family: int = 1) -> int:
    """The fewest runs per arm whose smallest two-sample p (every run of B above every run
    of A: 2 / C(2n, n)) passes Holm's strictest step, 0.05 / family: with fewer, no cell of
    such a table can read "higher" or "lower" whatever the arms do.  1 comparison: 4;
    8: 6."""
    n = 2
    while 2 / math.comb(2 * n, n) * max(1, family) > 0.05:
        n += 1
    return n


def paired_min_rounds(family: int = 1) -> int:
    """The fewest rounds a table of ``family`` comparisons pairs: the smallest exact
    signed-rank p (every round agreeing, 2 / 2^n) must pass Holm's strictest step,
    0.05 / family.  1 comparison: 6 rounds; 4: 8; 8: 9.  Below, the runs are compared as
    two samples, whose smallest p is far smaller (5 vs 5: 0.008; 8 vs 8: 0.0002)."""
    n = PAIRED_MIN_ROUNDS
    while 2 / 2**n * max(1, family) > 0.05:
        n += 1
    return n
_WILCOXON_EXACT_MAX_N = 50


def wilcoxon_signed_rank(d: Sequence[float]) -> tuple[float, float]:
    """Wilcoxon signed-rank test of differences ``d`` against 0: (T+, two-sided p).

    Zero differences are dropped (scipy's ``zero_method="wilcox"``); ranks of |d| are
    averaged over ties.  p is exact for up to 50 non-zero differences, ties included: the
    distribution of T+ over all 2^n sign assignments (equal to scipy's ``method="exact"``
    without ties, and to a permutation test over every sign flip with them), 2 x the
    smaller tail, clipped to 1; beyond, the normal approximation with tie correction.
    p is 1 when every difference is 0.  ValueError on empty input or NaN."""
    values = [x for x in _values(d, "d") if x != 0]
    n = len(values)
    if n == 0:
        return 0.0, 1.0
    ranks, groups = _average_ranks([abs(x) for x in values])
    t_plus = math.fsum(r for r, x in zip(ranks, values, strict=True) if x > 0)
    if n <= _WILCOXON_EXACT_MAX_N:
        doubled = [round(2 * r) for r in ranks]
        total = sum(doubled)
        counts = [0] * (total + 1)
        counts[0] = 1
        for r in doubled:  # subsets by their sum: each rank's sign is + or -
            for s in range(total, r - 1, -1):
                counts[s] += counts[s - r]
        observed = round(2 * t_plus)
        low, high = sum(counts[: observed + 1]), sum(counts[observed:])
        return t_plus, min(1.0, 2 * min(low, high) / 2**n)
    mean = n * (n + 1) / 4
    tie_term = sum(g**3 - g for g in groups)
    var = n * (n + 1) * (2 * n + 1) / 24 - tie_term / 48
    if var <= 0:
        return t_plus, 1.0
    z = (abs(t_plus - mean) - 0.5) / math.sqrt(var)
    return t_plus, min(1.0, math.erfc(max(z, 0.0) / math.sqrt(2)))


def wilcoxon_critical_t(n: int, alpha: float = 0.05) -> int | None:
    """The smallest T+ (n non-zero differences without ties) whose two-sided p from
    :func:`wilcoxon_signed_rank` is at most ``alpha``; None when none is (5 pairs at 0.05)."""
    top = n * (n + 1) // 2
    if n <= _WILCOXON_EXACT_MAX_N:
        counts = [0] * (top + 1)
        counts[0] = 1
        for r in range(1, n + 1):
            for s in range(top, r - 1, -1):
                counts[s] += counts[s - r]
        tail = 0
        found: int | None = None
        for t in range(top, -1, -1):
            tail += counts[t]
            if 2 * tail / 2**n > alpha:
                break
            found = t
        return found
    mean = n * (n + 1) / 4
    sd = math.sqrt(n * (n + 1) * (2 * n + 1) / 24)
    for t in range(math.ceil(mean), top + 1):
        if math.erfc((t - mean - 0.5) / sd / math.sqrt(2)) <= alpha:
            return t
    return None


def paired_ratio_ci(a: Sequence[float], b: Sequence[float], *, level: float = 0.95,
                    resamples: int = 10_000, seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the median per-round ratio b_i / a_i, resampling rounds
    (``random.Random(seed)``: deterministic).  ValueError when the arms differ in length,
    a baseline value is 0, or on the inputs :func:`bootstrap_ratio_ci` refuses."""
    xa, xb = _values(a, "a"), _values(b, "b")
    if len(xa) != len(xb):
        raise ValueError(f"paired arms differ in length: {len(xa)} and {len(xb)}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples}")
    if any(x == 0 for x in xa):
        raise ValueError("a baseline run is 0: its round has no ratio")
    ratios = [y / x for x, y in zip(xa, xb, strict=True)]
    rng = random.Random(seed)
    n = len(ratios)
    meds = sorted(statistics.median(rng.choices(ratios, k=n)) for _ in range(resamples))
    alpha = (1.0 - level) / 2
    return _quantile_sorted(meds, alpha), _quantile_sorted(meds, 1.0 - alpha)


def compare_paired(a: Sequence[float], b: Sequence[float], *, level: float = 0.95
                   ) -> Verdict:
    """Arm B against baseline A, run i of each from the same round: the median per-round
    ratio B/A with its bootstrap CI, and the Wilcoxon signed-rank test on the per-round log
    ratios (so a drift that moves both arms of a round cancels).  Labels as
    :func:`compare_runs`; "too few runs" below 2 pairs; "noise" without a ratio (a baseline
    run of 0)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    xa, xb = [float(x) for x in a], [float(x) for x in b]
    if len(xa) != len(xb):
        raise ValueError(f"paired arms differ in length: {len(xa)} and {len(xb)}")
    if any(math.isnan(x) for x in xa + xb):
        raise ValueError("run values contain NaN")
    n = len(xa)
    if n < 2:
        ratio = xb[0] / xa[0] if n == 1 and xa[0] != 0 else None
        return Verdict(ratio, None, None, None, n, n, TOO_FEW, test=PAIRED_TEST)
    if any(x <= 0 for x in xa) or any(y <= 0 for y in xb):
        return Verdict(None, None, None, None, n, n, NOISE, test=PAIRED_TEST)
    ratio = statistics.median(y / x for x, y in zip(xa, xb, strict=True))
    _, p = wilcoxon_signed_rank([math.log(y / x) for x, y in zip(xa, xb, strict=True)])
    lo, hi = median_ci([y / x for x, y in zip(xa, xb, strict=True)], level)
    significant = p <= 1.0 - level
    label = HIGHER if lo > 1.0 and significant else LOWER if hi < 1.0 and significant \
        else NOISE
    return Verdict(ratio, lo, hi, p, n, n, label, test=PAIRED_TEST)


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm's step-down adjusted p-values for a family of tests (None: no test, not counted).

    The i-th smallest of m p-values becomes max over j <= i of min(1, (m - j) p_(j)); a test
    is significant at alpha when its adjusted p is <= alpha, which holds the chance of any
    false verdict in the family at alpha whatever the tests' dependence (Holm 1979)."""
    ranked = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(ranked)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for k, (p, i) in enumerate(ranked):
        running = max(running, min(1.0, (m - k) * p))
        out[i] = running
    return out


# --- steady state --------------------------------------------------------------------------------


class SteadyState:
    """Incremental steady-state detector over a rolling window of per-second values
    (e.g. TPS): steady when the window is full, its coefficient of variation <= cv_max and the
    absolute least-squares slope, relative to the window mean, <= slope_max per sample.

    ``add(None)`` (a gap in the series) and non-finite values clear the window, so steadiness
    must be re-earned over a full window after a gap.  ``cv`` and ``slope`` describe the current
    window contents as soon as it holds 2 values (None before, or when its mean is 0), so a UI can
    show them while the window fills; ``slope`` is signed (the series' direction), relative to
    |mean|, per sample.  Each add costs O(window).  See DEFAULT_* above for why the defaults.
    """

    def __init__(
        self,
        window: int = DEFAULT_WINDOW,
        cv_max: float = DEFAULT_CV_MAX,
        slope_max: float = DEFAULT_SLOPE_MAX,
    ) -> None:
        if window < 2:
            raise ValueError(f"window must be >= 2, got {window}")
        if cv_max < 0 or slope_max < 0:
            raise ValueError("cv_max and slope_max must be >= 0")
        self.window = window
        self.cv_max = cv_max
        self.slope_max = slope_max
        self._values: deque[float] = deque(maxlen=window)
        self._cv: float | None = None
        self._slope: float | None = None
        self._steady = False

    def reset(self) -> None:
        """Forget every value."""
        self._values.clear()
        self._cv = None
        self._slope = None
        self._steady = False

    def add(self, value: float | None) -> bool:
        """Append one sample (None or a non-finite value is a gap and clears the window);
        return whether the series is steady now."""
        if value is None or not math.isfinite(value):
            self.reset()
            return False
        self._values.append(float(value))
        self._update()
        return self._steady

    def _update(self) -> None:
        ys = self._values
        n = len(ys)
        self._cv = self._slope = None
        self._steady = False
        if n < 2:
            return
        mean = math.fsum(ys) / n
        if mean == 0:
            return
        ss = math.fsum((y - mean) ** 2 for y in ys)
        xbar = (n - 1) / 2
        sxy = math.fsum((i - xbar) * (y - mean) for i, y in enumerate(ys))
        sxx = n * (n * n - 1) / 12
        self._cv = math.sqrt(ss / (n - 1)) / abs(mean)
        self._slope = sxy / sxx / abs(mean)
        self._steady = (
            n == self.window and self._cv <= self.cv_max and abs(self._slope) <= self.slope_max
        )

    @property
    def steady(self) -> bool:
        """True when the window is full and both CV and relative slope are within bounds."""
        return self._steady

    @property
    def cv(self) -> float | None:
        """Coefficient of variation of the window (sample stdev / |mean|)."""
        return self._cv

    @property
    def slope(self) -> float | None:
        """Least-squares slope of the window per sample, divided by |mean| (signed)."""
        return self._slope

    def __len__(self) -> int:
        return len(self._values)


def steady_index(
    values: Sequence[float | None],
    *,
    window: int = DEFAULT_WINDOW,
    cv_max: float = DEFAULT_CV_MAX,
    slope_max: float = DEFAULT_SLOPE_MAX,
) -> int | None:
    """The first index i at which a SteadyState fed values[0..i] becomes steady (None if never).

    The steady part of a run then starts at ``i - window + 1`` (the window that qualified).
    """
    det = SteadyState(window, cv_max, slope_max)
    for i, v in enumerate(values):
        if det.add(v):
            return i
    return None
