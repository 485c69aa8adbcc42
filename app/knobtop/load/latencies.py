"""Per-operation latencies of the built-in LinkBench (issue 20): recorded at little cost per
request, answered by DDSketch.

A request's latency is counted under the key DDSketch's logarithmic mapping gives it,
``ceil(ln(ms) / ln(gamma))`` with ``gamma = (1 + a) / (1 - a)`` for the relative accuracy
``a`` (1%), with the exact count, sum and maximum beside it. ``DDSketch.add`` does the same
and more on every call (its weight check, the dense store's bounds and growth, min and max),
at about twice the cost (``bench/linkbench_driver.py`` measures both each run); a worker
takes the logarithm once, for this key and for sysbench's histogram bucket. The counts
cross the workers' pipes once a second and merge by adding; a report's percentiles come from
a DDSketch filled with each key's representative value and count, which puts every one of
them back under its own key, so they are the percentiles DDSketch itself would give, within
its relative accuracy of the exact ones.

Imports nothing beyond ``math`` until a report asks for percentiles: the workers never do.
"""

from __future__ import annotations

import math
from typing import Any

__all__ = ["KEY_PER_LN", "LN_ZERO", "SKETCH_ACCURACY", "OpLatencies", "key_of"]

SKETCH_ACCURACY = 0.01
# 1 / ln(gamma) of DDSketch's LogarithmicMapping for SKETCH_ACCURACY (offset 0, its default)
KEY_PER_LN = 1.0 / math.log1p(2.0 * SKETCH_ACCURACY / (1.0 - SKETCH_ACCURACY))
# A latency of 0 (never measured: a request is a network round trip) counts as 1 ns
LN_ZERO = math.log(1e-6)


def key_of(ms: float) -> int:
    """The key of a latency in ms (what the worker computes inline)."""
    return math.ceil((math.log(ms) if ms > 0.0 else LN_ZERO) * KEY_PER_LN)


class OpLatencies:
    """One operation's latencies: how many fell under each key, their count, sum and max."""

    __slots__ = ("count", "keys", "max", "sum")

    def __init__(self) -> None:
        self.keys: dict[int, int] = {}
        self.count = 0
        self.sum = 0.0
        self.max = 0.0

    def add(self, key: int, ms: float) -> None:
        keys = self.keys
        keys[key] = keys.get(key, 0) + 1
        self.count += 1
        self.sum += ms
        if ms > self.max:
            self.max = ms

    def merge(self, other: OpLatencies) -> None:
        keys = self.keys
        for key, n in other.keys.items():
            keys[key] = keys.get(key, 0) + n
        self.count += other.count
        self.sum += other.sum
        if other.max > self.max:
            self.max = other.max

    def sketch(self) -> Any:
        """A DDSketch of these latencies, to the sketch's accuracy."""
        from ddsketch import DDSketch, LogarithmicMapping

        sketch = DDSketch(relative_accuracy=SKETCH_ACCURACY)  # this mapping's, offset 0
        value = LogarithmicMapping(SKETCH_ACCURACY).value
        for key, n in self.keys.items():
            sketch.add(value(key), n)
        return sketch

    def numbers(self, rate: float | None = None) -> list[float]:
        """[ops/s or count, p50, p95, p99, max] in ms (with ``rate`` None: [count, p50,
        p95, p99, max, mean]); max and mean exact, the percentiles DDSketch's."""
        q = self.sketch().get_quantile_value
        head = [round(rate, 2)] if rate is not None else [float(self.count)]
        out = head + [round(q(p), 3) for p in (0.5, 0.95, 0.99)] + [round(self.max, 3)]
        if rate is None:
            out.append(round(self.sum / self.count, 3) if self.count else 0.0)
        return out
