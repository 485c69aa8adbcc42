"""How well a few calibration runs know the run-to-run noise (issue 39 item 10).

A CV read from k runs is itself uncertain: 8 runs of the same noise gave detectable
effects from +14% to +33%. Under normal noise (k - 1) s^2 / sigma^2 is chi-square with
k - 1 degrees of freedom, so the CV's 95% interval is cv x sqrt((k - 1) / chi2 quantile);
:func:`knobtop.analysis.power.detectable_interval` carries it through the power
simulation. The rule: the interval is wide when its upper end is more than
:data:`CALIBRATION_SPAN` times the CV read; then more calibration runs are asked for (18
bring it within 1.5x). Pure Python, as stats.py (scipy.stats is too heavy to import).
"""

from __future__ import annotations

import math

__all__ = ["CALIBRATION_SPAN", "calibration_runs_needed", "chi2_quantile", "cv_interval"]

CALIBRATION_SPAN = 1.5


def _lower_gamma(a: float, x: float) -> float:
    """The regularized lower incomplete gamma P(a, x): its series below a + 1, its
    continued fraction (Lentz) above (Numerical Recipes 6.2)."""
    if x <= 0:
        return 0.0
    log_front = -x + a * math.log(x) - math.lgamma(a)
    if x < a + 1:
        term = total = 1.0 / a
        k = a
        for _ in range(1000):
            k += 1
            term *= x / k
            total += term
            if abs(term) < abs(total) * 1e-16:
                break
        return min(1.0, total * math.exp(log_front))
    tiny = 1e-300
    b = x + 1 - a
    c, d = 1 / tiny, 1 / b
    h = d
    for i in range(1, 1000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        step = d * c
        h *= step
        if abs(step - 1) < 1e-16:
            break
    return max(0.0, 1.0 - math.exp(log_front) * h)


def chi2_quantile(q: float, df: int) -> float:
    """The q-quantile of the chi-square distribution with ``df`` degrees of freedom
    (bisection on its CDF, to 1e-12 relative; scipy's ``chi2.ppf``)."""
    if not 0.0 < q < 1.0 or df < 1:
        raise ValueError(f"need 0 < q < 1 and df >= 1, got q={q}, df={df}")
    lo, hi = 0.0, float(df)
    while _lower_gamma(df / 2, hi / 2) < q:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if _lower_gamma(df / 2, mid / 2) < q:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return (lo + hi) / 2


def cv_interval(value: float, runs: int, level: float = 0.95) -> tuple[float, float]:
    """The ``level`` interval of a CV read from ``runs`` runs (chi-square, normal noise)."""
    if runs < 2:
        raise ValueError(f"a CV needs 2 runs or more, got {runs}")
    df = runs - 1
    tail = (1 - level) / 2
    return (value * math.sqrt(df / chi2_quantile(1 - tail, df)),
            value * math.sqrt(df / chi2_quantile(tail, df)))


def calibration_runs_needed(span: float = CALIBRATION_SPAN, level: float = 0.95) -> int:
    """The fewest calibration runs whose CV interval's upper end is within ``span`` times
    the CV read (1.5: 18 runs)."""
    k = 2
    while cv_interval(1.0, k, level)[1] > span:
        k += 1
    return k
