"""A measured window: the series it is read from, fed by the session's events of the server
being measured, and the ``StepResult`` fields they give (``StepWindow``).

The driver's per-second reports (TPS, latency percentile, errors, each with its second
stamp), the server's samples in it (hit ratio, dirty pages, history length, the host's OS
counters), NDB's per-node disk page buffer hit ratio, and for a one-load kind the named
metrics its checkpoints read.
"""

from __future__ import annotations

import statistics
from typing import Any

from knobtop.analysis.plateau import MIN_JUDGED, Plateau, trend
from knobtop.analysis.stats import SteadyState
from knobtop.journal.events import Load, Sample
from knobtop.load.multi import ALL
from knobtop.load.sysbench_output import seconds_covered
from knobtop.metrics.board import MetricBoard
from knobtop.metrics.derive import step_efficiency
from knobtop.metrics.footprint import Footprint, footprint_cost
from knobtop.recipes.model import Steady

# t, hit ratio, dirty %, history length, the server host's raw OS counters
SamplePoint = tuple[float, float | None, float | None, float | None, list[float] | None]


def window_summary(summary: dict[str, Any] | None) -> dict[str, Any]:
    """StepResult's window_* fields from a timed run's phase summary: the driver's own
    summary, or with several clients or instances each one's, combined (transactions
    summed; the worst percentile and maximum, which bound the union's; the mean latency
    over all transactions)."""
    if not summary:
        return {}
    parts = list(summary.get("sysbench_per_host", {}).values()) or (
        [summary["sysbench"]] if "sysbench" in summary else [])
    if not parts:
        return {}
    txn = sum(int(p.get("transactions", 0)) for p in parts)
    lat_sum = sum(float(p.get("latency_sum_ms", 0.0)) for p in parts)
    return {
        "window_txn": txn,
        "window_pct_ms": max(float(p.get("latency_pct_ms", 0.0)) for p in parts),
        "window_avg_ms": round(lat_sum / txn, 3) if txn else None,
        "window_max_ms": max(float(p.get("latency_max_ms", 0.0)) for p in parts),
        "window_s": max(float(p.get("total_time_s", 0.0)) for p in parts),
        **({"ops": dict(parts[0]["ops"])} if len(parts) == 1 and parts[0].get("ops") else {}),
    }


def window_transactions(tps: list[tuple[float, float]], seconds: list[int], start: float,
                        end: float) -> float:
    """Transactions of the per-second reports ``(t, tps)`` received in ``(start, end]``,
    each over the seconds its driver's stamp says it covers (``seconds_covered``: a line
    after a skipped tick covers two). ``seconds``: each report's stamp, in the order
    received."""
    total, previous = 0.0, 0
    for (t, rate), second in zip(tps, seconds, strict=True):
        if start < t <= end:
            total += rate * seconds_covered(previous, second)
        previous = second
    return total


def report_time(tps: list[tuple[float, float]], seconds: list[int], want: int) -> float | None:
    """When the first per-second report stamped ``want`` or later was received (None: none
    yet). ``tps``/``seconds`` as for :func:`window_transactions`."""
    for (t, _rate), second in zip(tps, seconds, strict=True):
        if second >= want:
            return t
    return None


def detector(rule: Steady) -> SteadyState | Plateau:
    """What judges a step's TPS steady under ``[steady]``."""
    if rule.judge == "noise":
        return Plateau(rule.window)
    return SteadyState(rule.window, rule.cv_max, rule.slope_max)


def plateau_text(s: SteadyState | Plateau | None, rule: Steady) -> str:
    """Where the wait for a TPS plateau stands, in words."""
    if isinstance(s, Plateau):
        if s.trend is None or len(s) < s.span:
            return f"TPS plateau (collecting {len(s)}/{s.span} s)"
        return f"TPS plateau: {s.trend.text()} (flat: drift <= 1% or |t| <= 2)"
    if s is None or s.cv is None:
        return "TPS plateau (collecting)"
    slope = s.slope if s.slope is not None else 0.0
    return (f"TPS plateau: CV {s.cv:.1%} (<= {rule.cv_max:.1%}), "
            f"slope {slope:+.2%}/s, window {len(s)}/{rule.window}")


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


class StepWindow:
    """The series of the current step (or one-load kind's load), and what they give."""

    def __init__(self) -> None:
        self.tps: list[tuple[float, float]] = []  # (t, tps) of the current phase
        self.seconds: list[int] = []  # the driver's second stamp of each of those
        self.p95: list[tuple[float, float]] = []
        self.err: list[tuple[float, float]] = []
        self.samples: list[SamplePoint] = []
        self.ndb: list[tuple[float, dict[str, float | None]]] = []  # per-node hit ratio
        self.timeline_samples: list[tuple[float, dict[str, float | None]]] = []
        self.multi = False  # several clients: only their per-second sums count
        self.steady: SteadyState | Plateau | None = None

    def clear(self, steady: SteadyState | Plateau | None = None) -> None:
        """Empty every series for a new window, judged steady by ``steady``."""
        self.tps, self.p95, self.err, self.samples = [], [], [], []
        self.seconds, self.ndb, self.timeline_samples = [], [], []
        self.steady = steady

    def load(self, event: Load) -> None:
        if self.multi and event.src != ALL:
            return  # several clients: the per-second sum is the step's TPS
        self.tps.append((event.t, event.tps))
        self.seconds.append(event.s)
        self.p95.append((event.t, event.lat))
        self.err.append((event.t, event.err))
        if self.steady is not None:
            self.steady.add(event.tps)

    def sample(self, event: Sample, board: MetricBoard, metrics: tuple[str, ...] | None
               ) -> None:
        """A sample of the server (its values as ``board`` derived them); ``metrics``: what
        a one-load kind's checkpoints read (None: not one)."""
        server_host = next(iter(event.host.values()), None)  # the target's is first
        self.samples.append((event.t, board.latest.get("hit_ratio"),
                             board.latest.get("dirty_pct"),
                             board.latest.get("history_len"), server_host))
        if board.ndb_hit:
            self.ndb.append((event.t, dict(board.ndb_hit)))
        if metrics is not None:
            values = {m: board.latest.get(m) for m in metrics}
            values.update({f"ndb_hit@{node}": v for node, v in board.ndb_hit.items()})
            self.timeline_samples.append((event.t, values))

    def report_time(self, want: int) -> float | None:
        return report_time(self.tps, self.seconds, want)

    def ndb_hit(self, start: float, end: float) -> dict[str, float]:
        """Each NDB data node's disk page buffer hit ratio over the window (median)."""
        per_node: dict[str, list[float]] = {}
        for t, nodes in self.ndb:
            if start < t <= end:
                for node, value in nodes.items():
                    if value is not None:
                        per_node.setdefault(node, []).append(value)
        return {n: round(statistics.median(v), 3) for n, v in per_node.items()}

    def fields(self, start: float, end: float, board: MetricBoard | None,
               footprints: tuple[Footprint, Footprint] | None = None,
               summary: dict[str, Any] | None = None,
               reports_until: float | None = None) -> dict[str, Any]:
        """The window ``(start, end]``'s measured StepResult fields: the server's samples
        in it, the driver's reports received in it or, for its last second's, by
        ``reports_until``."""
        until = end if reports_until is None else max(end, reports_until)

        def inside(points: list[tuple[float, float]]) -> list[float]:
            return [v for t, v in points if start < t <= until]

        tps = inside(self.tps)
        mid = _median(tps)
        seconds = max(len(tps), round(end - start))
        line = trend(tps) if len(tps) >= MIN_JUDGED else None
        window = [s for s in self.samples if start < s[0] <= end]
        hits = [s[1] for s in window if s[1] is not None]
        dirty = [s[2] for s in window if s[2] is not None]
        history = [s[3] for s in window if s[3] is not None]
        avg = (window_transactions(self.tps, self.seconds, start, until) / seconds
               if seconds else 0.0)
        timed = window_summary(summary)
        if timed.get("window_txn") and timed.get("window_s"):
            # A timed run's own count: its last part-second is in no per-second report
            avg = timed["window_txn"] / timed["window_s"]
        cost: dict[str, float | str | None] = dict(efficiency(window, avg, board))
        if footprints is not None:
            first, last = footprints
            own = footprint_cost(first, last, avg * (last.t - first.t))
            cost.update({k: v if isinstance(v, str) or v is None else round(v, 3)
                         for k, v in own.items()})
        return dict(
            tps=_median(tps), p95=_median(inside(self.p95)),
            err=_median(inside(self.err)), hit_ratio=_median(hits),
            dirty_pct=_median(dirty), intervals=len(tps),
            avg_tps=round(avg, 2) if seconds or timed else None,
            stall=(round(sum(1 for v in tps if v < mid / 2) / seconds, 4)
                   if mid is not None and seconds else None),
            drift=None if line is None else round(line.drift, 4),
            flat=None if line is None else line.flat,
            history_start=history[0] if history else None,
            history_end=history[-1] if history else None,
            ndb_hit=self.ndb_hit(start, end),
            **{k: v for k, v in timed.items() if k != "window_s"},
            **cost,
        )


def efficiency(window: list[SamplePoint], avg_tps: float, board: MetricBoard | None
               ) -> dict[str, float | None]:
    """The server host's CPU and disk cost per transaction between the window's first
    and last sample that carry its OS counters."""
    hosts = [(s[0], s[4]) for s in window if s[4]]
    if len(hosts) < 2 or board is None:
        return {}
    (t0, first), (t1, last) = hosts[0], hosts[-1]
    assert first is not None and last is not None
    cost = step_efficiency(first, last, board.header.host_fields, avg_tps * (t1 - t0),
                           t1 - t0)
    return {k: None if v is None else round(v, 3) for k, v in cost.items()}


__all__ = ["SamplePoint", "StepWindow", "detector", "efficiency", "plateau_text",
           "report_time", "window_summary", "window_transactions"]
