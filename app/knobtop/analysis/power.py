"""What effect can an experiment see?  Power by resampling the run-to-run noise (issue 17).

A verdict needs the bootstrap CI to exclude 1 *and* the rank test to agree
(:mod:`knobtop.analysis.stats`); with few runs and 10% noise a real +10% is found only a
quarter of the time.  Before a long run, and under every results table, knobtop says which
effect the planned replicates can find at 80% power.

**Method.**  The noise is the runs' relative deviations from their median (one number per
run: calibration runs of the baseline against itself, or the baseline cell's own runs).  One
simulated experiment draws ``n`` runs for arm A and ``n`` for arm B from those deviations
(a smoothed bootstrap: each draw gets a Gaussian jitter of Silverman's bandwidth, rescaled
so the variance stays the deviations' own, so five calibration runs do not make a
five-valued world), multiplies B by ``1 + effect``, and applies the very verdict the results
table uses (:func:`~knobtop.analysis.stats.compare_runs`, or
:func:`~knobtop.analysis.stats.compare_paired` when the design pairs rounds): the exact
rank test, and the percentile bootstrap CI taken from the bootstrap's exact distribution
(:mod:`knobtop.analysis.medianboot`, as the verdicts take it).
Power is the share of simulated experiments that read "higher".  With ``comparisons`` > 1
(a table's cells, Holm-corrected) a cell must also reach p <= 0.05 / comparisons, the
strictest step of Holm's procedure: a conservative bound.

B is only scaled, so each simulated experiment has one smallest effect at which it reads
"higher" (:func:`_threshold`, in closed form); power at any effect is the share of
thresholds below it, and :func:`detectable_effect` is their 80th percentile.  Pairs are
drawn independently: a drift that a paired design would cancel is not credited, so the
paired figure is conservative too.
"""

from __future__ import annotations

import math
import random
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from knobtop.analysis.medianboot import dist_quantile, median_boot, ratio_quantile
from knobtop.analysis.noiseci import cv_interval
from knobtop.analysis.stats import (
    HIGHER,
    LOWER,
    compare_paired,
    compare_runs,
    cv,
    holm,
    mann_whitney_u,
    mw_critical_u,
    paired_min_rounds,
    wilcoxon_critical_t,
    wilcoxon_signed_rank,
)

__all__ = [
    "ALPHA",
    "POWER",
    "Detectable",
    "TableSim",
    "best_p",
    "detectable",
    "detectable_effect",
    "detectable_interval",
    "deviations",
    "no_verdict_warning",
    "plan_best_p",
    "runs_for_verdict",
    "simulate_tables",
    "simulated_power",
]

POWER = 0.8
ALPHA = 0.05  # a verdict's (Holm-adjusted) p must be at most this (level 0.95)
MAX_EFFECT = 1.0  # +100%: beyond, "cannot see any effect" is the honest answer
_SIMS = 300
_RESAMPLES = 300


def deviations(runs: Sequence[float]) -> list[float]:
    """Each run relative to the runs' median (1.0 = the median); ValueError when the median
    is not positive."""
    mid = statistics.median(runs)
    if mid <= 0:
        raise ValueError("the runs' median is not positive: no relative spread")
    return [x / mid for x in runs]


# --- the best a plan can read -------------------------------------------------------------------


def best_p(runs: int, comparisons: int = 1, *, paired: bool = False) -> float:
    """The smallest Holm-adjusted p any cell of a table can reach with ``runs`` per arm
    (``paired``: rounds compared by the signed-rank test) in a family of ``comparisons``.

    It is the very test the results run, on the data most against the null: every run of B
    above every run of A (two samples), or every round's ratio on the same side of 1
    (paired), each with and without ties inside an arm (the same tie handling; ties can
    only raise an exact p, but they shrink the normal approximation's variance, so both
    are tried).  Holm multiplies the smallest p of a family by its size, and whatever the
    other cells read no cell's adjusted p falls below that.  1.0 below 2 runs (no test)."""
    if runs < 2:
        return 1.0
    if paired:
        p = min(wilcoxon_signed_rank([float(i + 1) for i in range(runs)])[1],
                wilcoxon_signed_rank([1.0] * runs)[1])
    else:
        a, b = [float(i) for i in range(runs)], [float(runs + i) for i in range(runs)]
        p = min(mann_whitney_u(a, b)[1], mann_whitney_u([0.0] * runs, [1.0] * runs)[1])
    return min(1.0, max(1, comparisons) * p)


def plan_best_p(runs: int, comparisons: int = 1) -> float:
    """:func:`best_p` for a plan of ``runs`` complete rounds, paired as the results table
    pairs them (``paired_min_rounds(comparisons)`` rounds or more) and two samples below."""
    return best_p(runs, comparisons, paired=runs >= paired_min_rounds(comparisons))


def runs_for_verdict(comparisons: int = 1) -> int:
    """The fewest rounds (runs per arm) whose :func:`plan_best_p` is at most :data:`ALPHA`:
    1 comparison: 4; 2: 5; 8: 6."""
    n = 2
    while plan_best_p(n, comparisons) > ALPHA:
        n += 1
    return n


def no_verdict_warning(runs: int, comparisons: int = 1, *, what: str = "replicates",
                       none: str = "no cell can get a verdict (higher or lower)",
                       fix: str = "") -> str | None:
    """The warning before a run whose plan can never give a verdict (``runs`` rounds, a Holm
    family of ``comparisons``), None when some cell can: the best p any cell can read and
    the fewest ``what`` that can read <= 0.05 (``none``: what cannot happen; ``fix``: a
    further way out, appended)."""
    p = plan_best_p(runs, comparisons)
    if p <= ALPHA:
        return None
    family = ("1 comparison" if comparisons <= 1 else f"{comparisons} comparisons (Holm)")
    design = "paired rounds" if runs >= paired_min_rounds(comparisons) else "runs per arm"
    return (f"{what} = {runs}: with {runs} {design} and a family of {family} the "
            f"best a cell can read is p = {p:.3f} (above {ALPHA}): {none}; give at least "
            f"{runs_for_verdict(comparisons)} {what}{fix}")


def _draws(devs: Sequence[float], n: int, sims: int, seed: int) -> list[tuple[list[float],
                                                                                list[float]]]:
    """``sims`` pairs of n draws each from the smoothed, variance-kept deviations."""
    rng = random.Random(seed)
    k = len(devs)
    mean = statistics.fmean(devs)
    sd = statistics.stdev(devs) if k > 1 else 0.0
    h = 0.9 * sd * k ** -0.2 if sd > 0 else 0.0
    # A draw's variance is the deviations' population variance ((k - 1) / k sd^2) plus h^2;
    # scaled to sd^2 (the unbiased sample variance). The older 1 / sqrt(1 + h^2 / sd^2)
    # left it at ((k - 1) / k + h^2 / sd^2) / (1 + h^2 / sd^2) of it: 4 runs drew 9% less
    # spread than they showed, so aa-noise's 4 calibration rounds read a low effect.
    shrink = sd / math.sqrt((k - 1) / k * sd**2 + h**2) if sd > 0 else 1.0

    def one() -> float:
        x = rng.choice(devs) + rng.gauss(0.0, h) if h else rng.choice(devs)
        return max(1e-9, mean + (x - mean) * shrink)

    return [([one() for _ in range(n)], [one() for _ in range(n)]) for _ in range(sims)]


def _threshold(a: list[float], b: list[float], paired: bool, alpha: float) -> float:
    """The smallest effect at which this simulated experiment reads "higher": the verdict
    of :func:`compare_runs` / :func:`compare_paired` on ``a`` and ``b x (1 + effect)``
    for every effect above it, and not below (inf when never).

    Both conditions move with the effect in closed form.  The bootstrap CI of a ratio
    scales with B (the same resamples, each ratio times 1 + effect), so it clears 1 above
    1 / lo - 1.  The rank tests count pairs: Mann-Whitney's U is the number of (a, b) pairs
    with b (1 + effect) > a, which reaches the critical U once the effect passes the
    c-th smallest a / b - 1; the signed-rank T+ is the number of Walsh averages of the log
    ratios above -log(1 + effect), so it passes the c-th largest of them."""
    if paired:
        crit = wilcoxon_critical_t(len(a), alpha)
        if crit is None:
            return math.inf
        logs = [math.log(y / x) for x, y in zip(a, b, strict=True)]
        walsh = sorted(((logs[i] + logs[j]) / 2 for i in range(len(logs))
                        for j in range(i, len(logs))), reverse=True)
        rank = math.exp(-walsh[crit - 1]) - 1
        lo = dist_quantile(median_boot([y / x for x, y in zip(a, b, strict=True)]), _TAIL)
    else:
        crit = mw_critical_u(len(a), len(b), alpha)
        if crit is None:
            return math.inf
        rank = sorted(x / y for x in a for y in b)[crit - 1] - 1
        lo = ratio_quantile(median_boot(a), median_boot(b), _TAIL)
    return max(rank, 1 / lo - 1)


_TAIL = 0.025  # the 95% CI's lower bound


def _thresholds(devs: Sequence[float], n: int, paired: bool, comparisons: int, sims: int,
                seed: int) -> list[float]:
    alpha = 0.05 / max(1, comparisons)
    return sorted(_threshold(a, b, paired, alpha) for a, b in _draws(devs, n, sims, seed))


def simulated_power(devs: Sequence[float], n: int, effect: float, *, paired: bool = False,
                    comparisons: int = 1, sims: int = _SIMS, seed: int = 0) -> float:
    """The share of simulated experiments (n runs per arm, B = A x (1 + effect)) that the
    results table would call "higher"; at effect 0, the false-verdict rate."""
    found = _thresholds(devs, n, paired, comparisons, sims, seed)
    return sum(1 for t in found if t < effect) / len(found)


def detectable_effect(devs: Sequence[float], n: int, *, paired: bool = False,
                      comparisons: int = 1, power: float = POWER, sims: int = _SIMS,
                      seed: int = 0) -> float | None:
    """The smallest relative effect (0.12 = +12%) found with at least ``power``; None when
    even +100% is not (too few runs for the test ever to reach its p)."""
    found = _thresholds(devs, n, paired, comparisons, sims, seed)
    effect = max(0.0, found[math.ceil(power * len(found)) - 1])
    return None if effect >= MAX_EFFECT else effect


@dataclass(frozen=True, slots=True)
class Detectable:
    """The smallest effect a design can find at 80% power, and what it was read from."""

    runs: int  # the runs the noise was read from
    cv: float | None  # their coefficient of variation
    replicates: int  # runs per arm of the planned design
    paired: bool
    comparisons: int
    effect: float | None  # None: no effect up to +100% reaches the power

    def text(self) -> str:
        noise = "" if self.cv is None else f"run-to-run CV {self.cv:.1%} over {self.runs} runs; "
        design = (f"{self.replicates} {'paired rounds' if self.paired else 'runs per arm'}"
                  + (f", Holm over {self.comparisons}" if self.comparisons > 1 else ""))
        if self.effect is None:
            return (f"{noise}{design} cannot find any effect up to +100% at "
                    f"{POWER:.0%} power: add replicates")
        return f"{noise}{design} find +{self.effect:.0%} or more at {POWER:.0%} power"


def detectable(runs: Sequence[float], replicates: int, *, comparisons: int = 1,
               seed: int = 0) -> Detectable | None:
    """What ``replicates`` runs per arm can find, given the noise of ``runs`` (at least 3
    positive runs; None otherwise).  Paired when the design pairs them
    (``paired_min_rounds(comparisons)`` rounds or more, as the results table decides)."""
    values = [x for x in runs if x > 0]
    if len(values) < 3:
        return None
    paired = replicates >= paired_min_rounds(comparisons)
    effect = detectable_effect(deviations(values), replicates, paired=paired,
                               comparisons=comparisons, seed=seed)
    return Detectable(len(values), cv(values), replicates, paired, comparisons, effect)


# --- the detectable effect at both ends of the noise's interval (issue 39 item 10) ------------


def detectable_interval(runs: Sequence[float], replicates: int, *, comparisons: int = 1,
                        seed: int = 0) -> tuple[float | None, float | None] | None:
    """The detectable effect (:func:`detectable`) at both ends of the noise's 95% interval:
    the runs' deviations scaled about their mean so their CV is either end of
    :func:`cv_interval` (None for an end that finds nothing up to +100%); None when the
    runs cannot say (fewer than 3 positive, or no spread)."""
    values = [x for x in runs if x > 0]
    spread = cv(values) if len(values) >= 3 else None
    if not spread:
        return None
    devs = deviations(values)
    mean = statistics.fmean(devs)
    paired = replicates >= paired_min_rounds(comparisons)
    ends: list[float | None] = []
    for end in cv_interval(spread, len(values)):
        factor = end / spread
        scaled = [mean + (d - mean) * factor for d in devs]
        ends.append(detectable_effect(scaled, replicates, paired=paired,
                                      comparisons=comparisons, seed=seed))
    return ends[0], ends[1]


# --- whole tables: the false-verdict rate and power under Holm --------------------------------


@dataclass(frozen=True, slots=True)
class TableSim:
    """Simulated results tables (see :func:`simulate_tables`)."""

    tables: int
    cells: int
    any_verdict: float  # share of tables with at least one "higher" or "lower"
    higher: float  # share of cells reading "higher"
    lower: float  # share of cells reading "lower"


def simulate_tables(draw: Callable[[random.Random], float], n: int, *, effect: float = 0.0,
                    cells: int = 8, paired: bool = False, sims: int = 1000,
                    seed: int = 0) -> TableSim:
    """``sims`` results tables of ``cells`` comparisons, each of ``n`` runs per arm drawn by
    ``draw`` (B's times ``1 + effect``), judged as :func:`knobtop.analysis.results.build`
    judges them: paired when ``paired`` and n >= ``paired_min_rounds(cells)``, Holm across
    the cells
    when there is more than one.  With effect 0 ``any_verdict`` is the table's
    false-verdict rate.

    A cell can only read "higher"/"lower" when its (adjusted) p is at most 0.05, so the
    bootstrap CI (the costly half of a verdict) is computed only for those cells; the label
    is then exactly the one the table would print (fewer bootstrap resamples)."""
    rng = random.Random(seed)
    by_round = paired and n >= paired_min_rounds(cells)
    tables_hit = higher = lower = 0
    for _ in range(sims):
        pairs = [([draw(rng) for _ in range(n)], [draw(rng) * (1 + effect) for _ in range(n)])
                 for _ in range(cells)]
        ps = [_p(a, b, by_round) for a, b in pairs]
        adjusted = holm(ps) if cells > 1 else ps
        hit = False
        for (a, b), p_adj in zip(pairs, adjusted, strict=True):
            if p_adj is None or p_adj > 0.05:
                continue
            verdict = (compare_paired(a, b) if by_round else
                       compare_runs(a, b, resamples=_RESAMPLES))
            if verdict.label == HIGHER:
                higher += 1
                hit = True
            elif verdict.label == LOWER:
                lower += 1
                hit = True
        tables_hit += hit
    total = sims * cells
    return TableSim(sims, cells, tables_hit / sims, higher / total, lower / total)


def _p(a: list[float], b: list[float], paired: bool) -> float:
    if paired:
        return wilcoxon_signed_rank([math.log(y / x) for x, y in zip(a, b, strict=True)])[1]
    return mann_whitney_u(a, b)[1]
