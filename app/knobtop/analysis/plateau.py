"""Is a per-second series (TPS) still moving?  Judged against its own noise (issue 17).

The older rule (:class:`knobtop.analysis.stats.SteadyState`: CV <= 5% and slope <= 0.2%/s
over one 30-s window) fires on the first full window of a slow climb (0.1%/s is 3% over the
window, within its slope bound) and, at high thread counts where per-second TPS jitters
more than 5%, never fires at all.  Here the question is the one a person asks of the graph:
*is there a trend the noise cannot explain?*

:func:`trend` fits a least-squares line to the values and reports

* ``drift``: the relative change the line makes across the span, slope x (n - 1) / mean;
* ``noise``: the residuals' standard deviation / mean (the per-second jitter);
* ``t``: the slope over its standard error, the error widened for the residuals' lag-1
  autocorrelation (per-second TPS wanders: with r the lag-1 correlation the series holds
  about n (1 - r) / (1 + r) independent values, not n).

A span is **flat** when its drift is immaterial (at most :data:`FLAT_DRIFT`, 1%) or cannot
be told from the noise (|t| <= :data:`T_MAX`, 2).  :class:`Plateau` judges the last
``2 x window`` values and waits until it has them all: a longer look than one window, so
a slow climb shows as a significant drift instead of hiding inside one window's jitter
(0.1%/s under 2% jitter passes a 30-s window's test about 4 times in 10, a 60-s span's
almost never).
The runner also applies :func:`trend` to each step's measured window: a window that still
drifted was measured off the plateau, and the results table says so.
"""

from __future__ import annotations

import itertools
import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["FLAT_DRIFT", "LONG", "MIN_JUDGED", "T_MAX", "Plateau", "Trend", "trend"]

FLAT_DRIFT = 0.01
"""A drift of at most 1% across the span is flat whatever the noise says."""
T_MAX = 2.0
"""|slope / standard error| at most 2: the trend is within what noise makes (about 95%)."""
LONG = 2
"""The plateau judges the last LONG x window values."""
MIN_JUDGED = 10
"""A measured window is judged flat or drifting only with at least 10 values: with fewer,
one noisy second decides the line."""


@dataclass(frozen=True, slots=True)
class Trend:
    """A least-squares line through a span of values (see the module's docstring)."""

    n: int
    mean: float
    drift: float  # signed: the fitted line's change across the span / |mean|
    noise: float  # residual standard deviation / |mean|
    t: float  # slope / its standard error (autocorrelation-widened); inf when that is 0

    @property
    def flat(self) -> bool:
        """No trend beyond the noise: the drift is at most 1%, or |t| <= 2."""
        return abs(self.drift) <= FLAT_DRIFT or abs(self.t) <= T_MAX

    def text(self) -> str:
        """``drift +3.1% over 45 s, noise 2.0%, t 4.1``."""
        return (f"drift {self.drift:+.1%} over {self.n} s, noise {self.noise:.1%}, "
                f"t {self.t:.1f}")


def trend(values: Sequence[float]) -> Trend | None:
    """The trend of ``values`` (one per second); None with fewer than 3 values, a mean of 0
    or a non-finite value."""
    ys = [float(v) for v in values]
    n = len(ys)
    if n < 3 or not all(math.isfinite(y) for y in ys):
        return None
    mean = math.fsum(ys) / n
    if mean == 0:
        return None
    xbar = (n - 1) / 2
    sxx = n * (n * n - 1) / 12
    slope = math.fsum((i - xbar) * (y - mean) for i, y in enumerate(ys)) / sxx
    resid = [y - (mean + slope * (i - xbar)) for i, y in enumerate(ys)]
    ss = math.fsum(r * r for r in resid)
    sd = math.sqrt(ss / (n - 2))
    r1 = 0.0
    if ss > 0:
        r1 = math.fsum(a * b for a, b in itertools.pairwise(resid)) / ss
    widen = math.sqrt((1 + r1) / (1 - r1)) if 0 < r1 < 1 else 1.0
    se = sd / math.sqrt(sxx) * widen
    t = slope / se if se > 0 else 0.0 if slope == 0 else math.copysign(math.inf, slope)
    return Trend(n=n, mean=mean, drift=slope * (n - 1) / abs(mean), noise=sd / abs(mean), t=t)


class Plateau:
    """Incremental plateau detector: steady once ``LONG x window`` values are in and they
    are flat (:attr:`Trend.flat`).  ``add(None)`` and
    non-finite values are gaps: they clear the span, so steadiness is re-earned.  Each add
    costs O(LONG x window)."""

    def __init__(self, window: int) -> None:
        if window < 3:
            raise ValueError(f"window must be >= 3, got {window}")
        self.window = window
        self.span = LONG * window
        self._values: deque[float] = deque(maxlen=LONG * window)
        self._trend: Trend | None = None

    def reset(self) -> None:
        self._values.clear()
        self._trend = None

    def add(self, value: float | None) -> bool:
        """Append one value; return whether the series is on its plateau now."""
        if value is None or not math.isfinite(value):
            self.reset()
            return False
        self._values.append(float(value))
        self._trend = trend(self._values)
        return self.steady

    @property
    def steady(self) -> bool:
        t = self._trend
        return t is not None and len(self._values) == self.span and t.flat

    @property
    def trend(self) -> Trend | None:
        """The trend of the values held (None before 3 of them)."""
        return self._trend

    def __len__(self) -> int:
        return len(self._values)
