"""Per-phase statistics of a journal: medians over each load phase's intervals."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from knobtop.analysis.journalrows import JournalData, PhaseSpan


@dataclass(frozen=True, slots=True)
class PhaseStats:
    """Per-phase statistics: medians over the phase's intervals."""

    number: int
    workload: str
    threads: int
    driver: str
    host: str
    start: float
    end: float
    duration: float
    ended_by: str
    load_tps: float | None  # median of the load driver's own per-interval TPS
    server_tps: float | None  # median of the server's per-interval TPS
    p95: float | None  # median of the per-interval p95 latencies (ms)
    hit_ratio: float | None  # median buffer pool hit ratio (%)
    dirty_pct: float | None  # median dirty pages (%)
    samples: int
    load_intervals: int


def _median(values: Iterable[float | None]) -> float | None:
    """statistics.median, written out: that module's import (random, fractions) would be
    a tenth of a short report's start."""
    present = sorted(v for v in values if v is not None)
    n = len(present)
    if not n:
        return None
    if n % 2:
        return present[n // 2]
    return (present[n // 2 - 1] + present[n // 2]) / 2


def phase_stats(data: JournalData, span: PhaseSpan) -> PhaseStats:
    lo, hi = span.start, span.end  # span.contains, written out (a day: 172,800 times)
    if span.ended_by == "end of journal":
        rows = [r for r in data.rows if lo <= r.t <= hi]
        loads = [p for p in data.loads if lo <= p.t <= hi]
    else:
        rows = [r for r in data.rows if lo <= r.t < hi]
        loads = [p for p in data.loads if lo <= p.t < hi]
    return PhaseStats(
        number=span.number,
        workload=span.workload,
        threads=span.threads,
        driver=span.driver,
        host=span.host,
        start=span.start,
        end=span.end,
        duration=max(0.0, span.end - span.start),
        ended_by=span.ended_by,
        load_tps=_median(p.tps for p in loads),
        server_tps=_median(r.tps for r in rows),
        p95=_median(p.p95 for p in loads),
        hit_ratio=_median(r.hit_ratio for r in rows),
        dirty_pct=_median(r.dirty_pct for r in rows),
        samples=len(rows),
        load_intervals=len(loads),
    )


def phase_table(data: JournalData) -> list[PhaseStats]:
    """One PhaseStats per load phase, in journal order."""
    return [phase_stats(data, span) for span in data.phases]
