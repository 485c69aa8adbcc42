"""Parses sysbench 1.0 output: interval lines, queue lines, prepare progress, errors, summary."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields

__all__ = [
    "IntervalReport",
    "PrepareProgress",
    "QueueReport",
    "RunSummary",
    "SysbenchError",
    "SysbenchOutputParser",
    "parse_interval",
    "parse_queue",
    "parse_summary",
    "seconds_covered",
]

# sysbench prints every interval value with "%4.2f", so exactly two decimals are required:
# a line torn inside its last number then fails to match instead of yielding a wrong value.
_F2 = r"\d+\.\d{2}"
_INTERVAL_RE = re.compile(
    rf"^\[ *(?P<s>\d+)s \] thds: (?P<thds>\d+) (?:"
    rf"tps: (?P<tps>{_F2}) qps: (?P<qps>{_F2}) "
    rf"\(r/w/o: (?P<r>{_F2})/(?P<w>{_F2})/(?P<o>{_F2})\) "
    rf"lat \(ms,(?P<pct>\d+)%\): (?P<lat>{_F2}) "
    rf"err/s: (?P<err>{_F2}) reconn/s: (?P<reconn>{_F2})"
    rf"|eps: (?P<eps>{_F2}) lat \(ms,(?P<epct>\d+)%\): (?P<elat>{_F2})"
    r")\s*$"
)
_QUEUE_RE = re.compile(r"^queue length: (\d+), concurrency: (\d+)\s*$")
_CREATE_RE = re.compile(r"^Creating table '([^']+)'\.\.\.\s*$")
_INSERT_RE = re.compile(r"^Inserting (\d+) records into '([^']+)'\s*$")
_INDEX_RE = re.compile(r"^Creating a secondary index on '([^']+)'\.\.\.\s*$")
_FATAL_RE = re.compile(r"^FATAL: ?(.*?)\s*$")

_NUM = r"\d+(?:\.\d+)?"
_SQL_HEADER = "SQL statistics:"
_EXEC_TIME_RE = re.compile(rf"^\s*execution time \(avg/stddev\):\s+({_NUM})/({_NUM})\s*$")
# One pattern per summary line; every group is a number. The percentile line is handled apart
# because "--percentile=0" replaces it with "percentile stats: disabled".
_SUMMARY_RES: dict[str, re.Pattern[str]] = {
    "read": re.compile(r"^\s*read:\s+(\d+)\s*$"),
    "write": re.compile(r"^\s*write:\s+(\d+)\s*$"),
    "other": re.compile(r"^\s*other:\s+(\d+)\s*$"),
    "total": re.compile(r"^\s*total:\s+(\d+)\s*$"),
    "transactions": re.compile(rf"^\s*transactions:\s+(\d+)\s+\(({_NUM}) per sec\.\)\s*$"),
    "queries": re.compile(rf"^\s*queries:\s+(\d+)\s+\(({_NUM}) per sec\.\)\s*$"),
    "ignored": re.compile(rf"^\s*ignored errors:\s+(\d+)\s+\(({_NUM}) per sec\.\)\s*$"),
    "reconnects": re.compile(rf"^\s*reconnects:\s+(\d+)\s+\(({_NUM}) per sec\.\)\s*$"),
    "time": re.compile(rf"^\s*total time:\s+({_NUM})s\s*$"),
    "events": re.compile(r"^\s*total number of events:\s+(\d+)\s*$"),
    "min": re.compile(rf"^\s*min:\s+({_NUM})\s*$"),
    "avg": re.compile(rf"^\s*avg:\s+({_NUM})\s*$"),
    "max": re.compile(rf"^\s*max:\s+({_NUM})\s*$"),
    "sum": re.compile(rf"^\s*sum:\s+({_NUM})\s*$"),
    "fair_events": re.compile(rf"^\s*events \(avg/stddev\):\s+({_NUM})/({_NUM})\s*$"),
    "fair_time": _EXEC_TIME_RE,
}
_PERCENTILE_RE = re.compile(rf"^\s*(\d+)th percentile:\s+({_NUM})\s*$")
_PERCENTILE_OFF_RE = re.compile(r"^\s*percentile stats:\s+disabled\s*$")


def _clean(line: str) -> str:
    return line.rstrip("\r\n")


@dataclass(frozen=True, slots=True)
class IntervalReport:
    """One "[ Ns ]" line: rates over the last interval only. `db` is False for the eps form."""

    second: int
    threads: int
    tps: float
    qps: float
    reads: float
    writes: float
    other: float
    latency_percentile: int
    latency_ms: float
    errors_per_s: float
    reconnects_per_s: float
    db: bool = True
    # The built-in LinkBench (issue 20): per operation [ops/s, p50, p95, p99, max] (ms)
    ops: dict[str, list[float]] = field(default_factory=dict)

    def to_event(self) -> dict[str, object]:
        return {
            **({"ops": self.ops} if self.ops else {}),
            "s": self.second,
            "thds": self.threads,
            "tps": self.tps,
            "qps": self.qps,
            "r": self.reads,
            "w": self.writes,
            "o": self.other,
            "pct": self.latency_percentile,
            "lat": self.latency_ms,
            "err": self.errors_per_s,
            "reconn": self.reconnects_per_s,
        }


@dataclass(frozen=True, slots=True)
class QueueReport:
    """The "queue length" line that follows an interval line when --rate is above 0."""

    queue_length: int
    concurrency: int


@dataclass(frozen=True, slots=True)
class PrepareProgress:
    """A prepare step on one table; stage is "create", "insert" or "index"."""

    table: str
    stage: str
    records: int = 0


@dataclass(frozen=True, slots=True)
class SysbenchError:
    """A "FATAL:" line, without its prefix."""

    message: str


@dataclass(frozen=True, slots=True)
class RunSummary:
    """The cumulative report printed when a DB benchmark ends."""

    reads: int
    writes: int
    other: int
    total_queries: int
    transactions: int
    tps: float
    queries: int
    qps: float
    ignored_errors: int
    reconnects: int
    total_time_s: float
    events: int
    latency_min_ms: float
    latency_avg_ms: float
    latency_max_ms: float
    latency_percentile: int
    latency_pct_ms: float
    latency_sum_ms: float
    events_avg: float
    events_stddev: float
    exec_time_avg: float
    exec_time_stddev: float
    # The built-in LinkBench (issue 20): per operation over the whole run
    # [count, p50, p95, p99, max, mean] (ms), from one sketch of every latency
    ops: dict[str, list[float]] = field(default_factory=dict)

    def to_event(self) -> dict[str, object]:
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        if not out.get("ops"):
            out.pop("ops", None)  # a sysbench run: as before
        return out


def seconds_covered(previous: int, second: int) -> int:
    """How many seconds a per-second report stamped ``second`` covers, after one stamped
    ``previous`` (0 before the first): sysbench's reporter skips a tick when it wakes late
    (report_thread_proc), and its next line's rates are over every second since its last
    one. A stamp that goes back is a new run's: its first line covers its own stamp."""
    return second - previous if second > previous else second


def parse_interval(line: str) -> IntervalReport | None:
    """Parse a "[ Ns ] thds: ..." line (tps or eps form); None for anything else."""
    m = _INTERVAL_RE.match(_clean(line))
    if m is None:
        return None
    try:
        return _interval(m)
    except ValueError:  # a number too long for int() (4300+ digits): not sysbench's
        return None


def _interval(m: re.Match[str]) -> IntervalReport:
    second, threads = int(m["s"]), int(m["thds"])
    if m["eps"] is not None:
        eps = float(m["eps"])
        return IntervalReport(
            second=second,
            threads=threads,
            tps=eps,
            qps=0.0,
            reads=0.0,
            writes=0.0,
            other=0.0,
            latency_percentile=int(m["epct"]),
            latency_ms=float(m["elat"]),
            errors_per_s=0.0,
            reconnects_per_s=0.0,
            db=False,
        )
    return IntervalReport(
        second=second,
        threads=threads,
        tps=float(m["tps"]),
        qps=float(m["qps"]),
        reads=float(m["r"]),
        writes=float(m["w"]),
        other=float(m["o"]),
        latency_percentile=int(m["pct"]),
        latency_ms=float(m["lat"]),
        errors_per_s=float(m["err"]),
        reconnects_per_s=float(m["reconn"]),
    )


def parse_queue(line: str) -> QueueReport | None:
    """Parse a "queue length: N, concurrency: N" line; None for anything else."""
    m = _QUEUE_RE.match(_clean(line))
    if m is None:
        return None
    try:
        return QueueReport(queue_length=int(m[1]), concurrency=int(m[2]))
    except ValueError:  # a number too long for int()
        return None


def _parse_prepare(line: str) -> PrepareProgress | None:
    if m := _CREATE_RE.match(line):
        return PrepareProgress(table=m[1], stage="create")
    if m := _INSERT_RE.match(line):
        try:
            return PrepareProgress(table=m[2], stage="insert", records=int(m[1]))
        except ValueError:  # a number too long for int()
            return None
    if m := _INDEX_RE.match(line):
        return PrepareProgress(table=m[1], stage="index")
    return None


def parse_summary(text: str) -> RunSummary | None:
    """Parse the last summary block in text; None unless every line of it is present."""
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == _SQL_HEADER]
    if not starts:
        return None
    found: dict[str, tuple[str, ...]] = {}
    percentile: tuple[int, float] | None = None
    for line in lines[starts[-1] + 1 :]:
        for key, pattern in _SUMMARY_RES.items():
            if key not in found and (m := pattern.match(line)):
                found[key] = m.groups()
                break
        else:
            if m := _PERCENTILE_RE.match(line):
                try:
                    percentile = (int(m[1]), float(m[2]))
                except ValueError:  # a number too long for int()
                    return None
            elif _PERCENTILE_OFF_RE.match(line):
                percentile = (0, 0.0)
        if "fair_time" in found:
            break
    if percentile is None or len(found) != len(_SUMMARY_RES):
        return None
    try:
        return _summary(found, percentile)
    except ValueError:  # a number too long for int()
        return None


def _summary(found: dict[str, tuple[str, ...]], percentile: tuple[int, float]) -> RunSummary:
    return RunSummary(
        reads=int(found["read"][0]),
        writes=int(found["write"][0]),
        other=int(found["other"][0]),
        total_queries=int(found["total"][0]),
        transactions=int(found["transactions"][0]),
        tps=float(found["transactions"][1]),
        queries=int(found["queries"][0]),
        qps=float(found["queries"][1]),
        ignored_errors=int(found["ignored"][0]),
        reconnects=int(found["reconnects"][0]),
        total_time_s=float(found["time"][0]),
        events=int(found["events"][0]),
        latency_min_ms=float(found["min"][0]),
        latency_avg_ms=float(found["avg"][0]),
        latency_max_ms=float(found["max"][0]),
        latency_percentile=percentile[0],
        latency_pct_ms=percentile[1],
        latency_sum_ms=float(found["sum"][0]),
        events_avg=float(found["fair_events"][0]),
        events_stddev=float(found["fair_events"][1]),
        exec_time_avg=float(found["fair_time"][0]),
        exec_time_stddev=float(found["fair_time"][1]),
    )


class SysbenchOutputParser:
    """Turns sysbench output, fed one line at a time, into report objects.

    feed() returns IntervalReport, QueueReport, PrepareProgress and SysbenchError objects as
    their lines arrive, and a RunSummary once, on the "execution time (avg/stddev):" line that
    ends the summary. Other lines (banner, options, trailing wrapper output) are ignored.
    """

    def __init__(self) -> None:
        self._summary_lines: list[str] | None = None
        self.summary: RunSummary | None = None

    def feed(self, line: str) -> list[object]:
        out: list[object] = []
        for part in line.splitlines():
            item = self._feed_one(part)
            if item is not None:
                out.append(item)
        return out

    def _feed_one(self, line: str) -> object | None:
        if line.strip() == _SQL_HEADER:
            self._summary_lines = [line]
            return None
        if self._summary_lines is not None:
            self._summary_lines.append(line)
            if _EXEC_TIME_RE.match(line):
                summary = parse_summary("\n".join(self._summary_lines))
                self._summary_lines = None
                if summary is not None:
                    self.summary = summary
                return summary
        if line.startswith("["):
            return parse_interval(line)
        if line.startswith("queue length:"):
            return parse_queue(line)
        if line.startswith("FATAL:"):
            m = _FATAL_RE.match(line)
            return SysbenchError(message=m[1] if m else line)
        if line.startswith(("Creating ", "Inserting ")):
            return _parse_prepare(line)
        return None
