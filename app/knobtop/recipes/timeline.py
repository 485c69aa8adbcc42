"""What a timeline recipe's checkpoint holds (issue 18 part 5): each named metric over the
window before it, and whether it is still moving.

Pure functions over what the runner collected: the load's per-second reports (t, tps) and
(t, latency), and per-sample metric values (t, {metric: value}) including NDB's per-node
disk page buffer hit ratio as ``ndb_hit@NODE``.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

from knobtop.analysis.plateau import trend

CLIMBING, FALLING = "climbing", "falling"


def _inside(points: Sequence[tuple[float, float]], start: float, end: float) -> list[float]:
    return [v for t, v in points if start < t <= end]


def checkpoint_values(
    end: float, window: float, tps: Sequence[tuple[float, float]],
    lat: Sequence[tuple[float, float]],
    samples: Sequence[tuple[float, Mapping[str, float | None]]], metrics: Sequence[str],
) -> tuple[dict[str, float | None], dict[str, str]]:
    """The values at a checkpoint at session time ``end`` over (end - window, end], and the
    trends over (end - 2 x window, end] of those moving beyond their noise.

    ``load_tps`` is the window's transactions over its seconds (a second without a report
    counts 0: a restart shows), ``load_p95`` the median of per-second latencies, a sampled
    metric the mean of its samples' values (None without any). ``ndb_hit`` expands to one
    value per data node."""
    start, long_start = end - window, end - 2 * window
    values: dict[str, float | None] = {}
    series: dict[str, list[float]] = {}
    for metric in metrics:
        if metric == "load_tps":
            got = _inside(tps, start, end)
            values[metric] = round(sum(got) / max(window, len(got)), 2)
            series[metric] = _per_second(tps, long_start, end)
        elif metric == "load_p95":
            got = _inside(lat, start, end)
            values[metric] = round(statistics.median(got), 3) if got else None
        else:
            keys = ([k for k in _keys(samples) if k.startswith("ndb_hit@")]
                    if metric == "ndb_hit" else [metric])
            for key in keys:
                got = [float(v) for t, m in samples if start < t <= end
                       if (v := m.get(key)) is not None]
                values[key] = round(statistics.fmean(got), 3) if got else None
                series[key] = [float(v) for t, m in samples if long_start < t <= end
                               if (v := m.get(key)) is not None]
    trends: dict[str, str] = {}
    for key, ys in series.items():
        line = trend(ys)
        if line is not None and not line.flat:
            trends[key] = CLIMBING if line.drift > 0 else FALLING
    return values, trends


def _keys(samples: Sequence[tuple[float, Mapping[str, float | None]]]) -> list[str]:
    seen: dict[str, None] = {}
    for _, m in samples:
        for key in m:
            seen.setdefault(key, None)
    return list(seen)


def _per_second(points: Sequence[tuple[float, float]], start: float, end: float) -> list[float]:
    """One value per second of (start, end]: the reports in it, 0 for a second without."""
    seconds = max(1, round(end - start))
    out = [0.0] * seconds
    for t, v in points:
        if start < t <= end:
            out[min(seconds - 1, int(t - start))] += v
    return out


def still_moving(at: float, trends: Mapping[str, str]) -> str:
    """``still climbing at 600 s: load_tps, hit_ratio`` (or falling), "" when all settled."""
    parts = []
    for word in (CLIMBING, FALLING):
        names = [k for k, v in trends.items() if v == word]
        if names:
            parts.append(f"still {word} at {at:g} s: {', '.join(names)}")
    return "; ".join(parts)
