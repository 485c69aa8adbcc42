"""The built-in load's latency accounting: sysbench's histogram, a worker's counts for a
second or a run, and the parent's merge of them (each second's interval, the run's summary)."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from math import ceil, floor, log
from typing import Any

from knobtop.load.latencies import KEY_PER_LN, LN_ZERO, OpLatencies
from knobtop.load.sysbench_output import RunSummary

# sysbench's latency histogram: 1024 log-spaced buckets from 0.001 ms to 100 s.
HIST_SIZE = 1024
_DEDUCT = math.log(0.001)
_MULT = (HIST_SIZE - 1) / (math.log(100_000.0) - _DEDUCT)


def bucket(ms: float) -> int:
    """The histogram bucket of a latency, as sysbench's sb_histogram_update computes it."""
    if ms <= 0.0:
        return 0
    i = math.floor((math.log(ms) - _DEDUCT) * _MULT + 0.5)
    return 0 if i < 0 else min(i, HIST_SIZE - 1)


def percentile_ms(hist: dict[int, int], percentile: int) -> float:
    """The percentile of a sparse {bucket: count} histogram, as sysbench reports it."""
    total = sum(hist.values())
    limit = math.floor(total * percentile / 100 + 0.5)
    if limit == 0:
        return 0.0
    seen = 0
    for i in sorted(hist):
        seen += hist[i]
        if seen >= limit:
            return round(math.exp(i / _MULT + _DEDUCT), 2)
    return 0.0  # not reached


class Counts:
    __slots__ = ("errors", "hist", "ops", "other", "reads", "reconnects", "tx", "writes")

    def __init__(self) -> None:
        self.tx = self.reads = self.writes = self.other = self.errors = self.reconnects = 0
        self.hist = [0] * HIST_SIZE
        self.ops: dict[str, OpLatencies] = {}  # LinkBench: each operation's latencies

    def record(self, op: str | None, ms: float) -> None:
        """One request's latency: in sysbench's histogram and (LinkBench) its operation's.
        Once a request: bucket(ms) and key_of(ms) inline, from one logarithm (row 7b of
        bench/ weighs every microsecond here)."""
        lg = log(ms) if ms > 0.0 else LN_ZERO
        i = floor((lg - _DEDUCT) * _MULT + 0.5)
        self.hist[0 if i < 0 else i if i < HIST_SIZE else HIST_SIZE - 1] += 1
        if op is not None:
            lat = self.ops.get(op)
            if lat is None:
                lat = self.ops[op] = OpLatencies()
            lat.add(ceil(lg * KEY_PER_LN), ms)

    def add(self, other: Counts) -> None:
        for op, lat in other.ops.items():
            mine = self.ops.get(op)
            if mine is None:
                mine = self.ops[op] = OpLatencies()  # a copy: never the other's to change
            mine.merge(lat)
        self.tx += other.tx
        self.reads += other.reads
        self.writes += other.writes
        self.other += other.other
        self.errors += other.errors
        self.reconnects += other.reconnects
        for i, n in enumerate(other.hist):
            if n:
                self.hist[i] += n

    def sparse(self) -> dict[int, int]:
        return {i: n for i, n in enumerate(self.hist) if n}

    def numbers(self) -> tuple[int, int, int, int, int, int]:
        return (self.tx, self.reads, self.writes, self.other, self.errors, self.reconnects)


@dataclass
class Interval:
    seen: set[int] = field(default_factory=set)
    rates: list[float] = field(default_factory=lambda: [0.0] * 6)
    hist: dict[int, int] = field(default_factory=dict)
    ops: dict[str, list[Any]] = field(default_factory=dict)  # op -> [ops/s, OpLatencies]

    def add(
        self, index: int, elapsed: float, numbers: tuple[int, ...], hist: dict[int, int],
        ops: dict[str, OpLatencies] | None = None,
    ) -> None:
        self.seen.add(index)
        span = max(elapsed, 1e-3)
        for i, n in enumerate(numbers):
            self.rates[i] += n / span
        for b, n in hist.items():
            self.hist[b] = self.hist.get(b, 0) + n
        for op, lat in (ops or {}).items():
            have = self.ops.get(op)
            if have is None:
                have = self.ops[op] = [0.0, OpLatencies()]
            have[0] += lat.count / span
            have[1].merge(lat)


def run_summary(dones: list[tuple[Any, ...] | None], percentile: int) -> RunSummary | None:
    """The run's summary from each worker's "done" message, once every worker sent one."""
    if not dones or any(d is None for d in dones):
        return None
    elapsed = max(float(d[0]) for d in dones if d is not None)
    sums = [sum(int(d[i]) for d in dones if d is not None) for i in range(1, 7)]
    tx, reads, writes, other, errors, reconnects = sums
    hist: dict[int, int] = {}
    per_client: list[tuple[int, float]] = []
    mins: list[float] = []
    maxes: list[float] = []
    lat_sum = 0.0
    ops: dict[str, OpLatencies] = {}
    for d in dones:
        assert d is not None
        for b, n in d[7].items():
            hist[b] = hist.get(b, 0) + n
        for op, lat in (d[12] if len(d) > 12 else {}).items():
            ops.setdefault(op, OpLatencies()).merge(lat)
        if int(d[1]):
            mins.append(float(d[8]))
        maxes.append(float(d[9]))
        lat_sum += float(d[10])
        per_client.extend(d[11])
    events = [float(e) for e, _ in per_client] or [0.0]
    busy = [float(b) for _, b in per_client] or [0.0]
    span = max(elapsed, 1e-9)
    queries = reads + writes + other
    return RunSummary(
        reads=reads,
        writes=writes,
        other=other,
        total_queries=queries,
        transactions=tx,
        tps=round(tx / span, 2),
        queries=queries,
        qps=round(queries / span, 2),
        ignored_errors=errors,
        reconnects=reconnects,
        total_time_s=round(elapsed, 4),
        events=tx,
        latency_min_ms=round(min(mins), 2) if mins else 0.0,
        latency_avg_ms=round(lat_sum / tx, 2) if tx else 0.0,
        latency_max_ms=round(max(maxes), 2),
        latency_percentile=percentile,
        latency_pct_ms=percentile_ms(hist, percentile),
        latency_sum_ms=round(lat_sum, 2),
        events_avg=round(statistics.fmean(events), 4),
        events_stddev=round(statistics.pstdev(events), 2),
        exec_time_avg=round(statistics.fmean(busy), 4),
        exec_time_stddev=round(statistics.pstdev(busy), 2),
        ops={op: lat.numbers() for op, lat in sorted(ops.items())},
    )
