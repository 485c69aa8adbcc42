"""Folds journal events into bounded plotted series and change markers (live, replay, follow)."""

from __future__ import annotations

import math
from array import array
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import overload

from knobtop.journal.events import (
    Change,
    Error,
    Event,
    Header,
    Knobs,
    Load,
    Mark,
    Note,
    OutsideChange,
    Phase,
    Restart,
    Sample,
    target_of,
)
from knobtop.metrics.catalog import names
from knobtop.metrics.derive import Snapshot, derive, has_rocksdb

DEFAULT_CAPACITY = 3600


class Clock:
    """The times of the last ``capacity`` points, a ring several series may share.

    A sample gives all the sample metrics a point at one time (a load report, all the load
    metrics): their series share one clock, so the hour every series keeps costs 8 bytes a
    point for each series' values and 8 for the times once, not 16 for each.
    """

    __slots__ = ("capacity", "n", "next", "t")

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self.t = array("d", bytes(8 * capacity))
        self.n = 0  # points held
        self.next = 0  # where the next point goes

    def tick(self, t: float) -> int:
        """Take the time of the next point; its place in the ring."""
        i = self.next
        self.t[i] = t
        self.next = (i + 1) % self.capacity
        if self.n < self.capacity:
            self.n += 1
        return i

    def index(self, k: int) -> int:
        """Ring position of the k-th newest point (0 = newest)."""
        return (self.next - 1 - k) % self.capacity


class Points(Sequence[tuple[float, "float | None"]]):
    """Points (t, value) held as two arrays of floats (a gap as NaN), read as ``(t, value)``
    tuples (``None`` for a gap) made when asked for.

    What a graph keeps between two paints: a tuple of point tuples costs about 100 bytes a
    point, in thousands of small objects that live from one paint to the next among the
    paint's short-lived ones; two arrays cost 16 bytes a point in two blocks."""

    __slots__ = ("_t", "_v")

    def __init__(self, t: array[float], v: array[float]) -> None:
        self._t = t
        self._v = v

    def __len__(self) -> int:
        return len(self._t)

    @overload
    def __getitem__(self, i: int) -> tuple[float, float | None]: ...
    @overload
    def __getitem__(self, i: slice) -> Points: ...

    def __getitem__(self, i: int | slice) -> tuple[float, float | None] | Points:
        if isinstance(i, slice):
            return Points(self._t[i], self._v[i])
        v = self._v[i]
        return (self._t[i], None if v != v else v)

    def __iter__(self) -> Iterator[tuple[float, float | None]]:
        for t, v in zip(self._t, self._v, strict=True):
            yield (t, None if v != v else v)


class Series:
    """The last ``capacity`` points of one metric; ``None`` values are gaps.

    A fixed-size float array used as a ring (a gap is stored as NaN), with its times on a
    :class:`Clock`, its own or one it shares: 8 or 16 bytes a point, where a deque of Python
    floats costs about 64, for the hour every series keeps.  A series on a shared clock is
    filled with :meth:`put` after the clock's ``tick``; one on its own with :meth:`append`.
    """

    __slots__ = ("_clock", "_v")

    def __init__(self, capacity: int = DEFAULT_CAPACITY, clock: Clock | None = None) -> None:
        self._clock = Clock(capacity) if clock is None else clock
        self._v = array("d", bytes(8 * self._clock.capacity))

    def append(self, t: float, value: float | None) -> None:
        self.put(self._clock.tick(t), value)

    def put(self, i: int, value: float | None) -> None:
        """The value of the point at ring position ``i`` (its clock's ``tick``)."""
        self._v[i] = math.nan if value is None else value

    def __len__(self) -> int:
        return self._clock.n

    def points(self, since: float | None = None) -> list[tuple[float, float | None]]:
        """Points at or after ``since`` (all without it), oldest first, as a list."""
        return list(self.window(-math.inf if since is None else since))

    def window(self, since: float) -> Points:
        """Points at or after ``since``, oldest first, as a compact :class:`Points` (a gap
        reads as None); walks back only as far as needed."""
        clock = self._clock
        ts = clock.t
        m = 0
        while m < clock.n and ts[clock.index(m)] >= since:
            m += 1
        if not m:
            return Points(array("d"), array("d"))
        first, end = clock.index(m - 1), clock.index(0) + 1
        if first < end:
            return Points(ts[first:end], self._v[first:end])
        return Points(ts[first:] + ts[:end], self._v[first:] + self._v[:end])

    @property
    def last(self) -> float | None:
        clock = self._clock
        for k in range(clock.n):
            v = self._v[clock.index(k)]
            if v == v:
                return v
        return None

    @property
    def last_t(self) -> float | None:
        clock = self._clock
        return clock.t[clock.index(0)] if clock.n else None


#: Marker kinds drawn as full-height lines: what a person did (a knob change, one made
#: outside knobtop, a restart, a note, a mark).  The others (load phases, sampling gaps) are
#: drawn lighter, as ticks.
FULL_KINDS = frozenset({"change", "outside", "restart", "note", "mark"})
#: Before the tag of a change made outside knobtop: "⚠io_cap=300", not knobtop's "io_cap=300".
OUTSIDE_TAG = "⚠"
#: A load stop followed by a start within this many seconds is one phase change, one marker.
PHASE_MERGE_S = 5.0
#: Change reasons that are not a person's change (the session put a value back by itself).
AUTOMATIC_REASONS = frozenset({"re-applied after restart"})
# Words shortened in a marker's tag, so "innodb_io_capacity=1000" reads "io_cap=1000".
_SHORT_PREFIXES = ("innodb_", "rocksdb_", "performance_schema_", "ndb_")
_SHORT_WORDS = {
    "capacity": "cap", "buffer": "buf", "threads": "thr", "thread": "thr", "size": "sz",
    "instances": "inst", "maximum": "max", "minimum": "min", "percent": "pct",
    "neighbors": "nbrs", "adaptive": "adapt", "flushing": "flush", "commit": "cmt",
    "transaction": "trx", "concurrency": "conc", "log_file": "logf",
}


def short_knob(knob: str) -> str:
    """A knob's short name for a graph label: "innodb_io_capacity" -> "io_cap"."""
    name = knob
    for prefix in _SHORT_PREFIXES:
        if name.startswith(prefix) and len(name) > len(prefix):
            name = name[len(prefix):]
            break
    return "_".join(_SHORT_WORDS.get(word, word) for word in name.split("_"))


@dataclass(frozen=True, slots=True)
class Marker:
    """A vertical line on every graph: a knob or the load changed at ``t``.

    ``tag`` is the short text drawn beside the line ("io_cap=1000", "note", "restart").
    """

    t: float
    kind: str  # "change" | "outside" | "load" | "gap" | "restart" | "note" | "mark"
    label: str
    tag: str = ""

    @property
    def full(self) -> bool:
        """Drawn full height (a person's action), not as a light tick."""
        return self.kind in FULL_KINDS


# Metrics derived from samples, and the load driver's own numbers (metrics/catalog.py).
SAMPLE_METRICS = names("gauge") + names("interval")
LOAD_METRICS = names("load")
# LinkBench's operations by the seed posts' short names (load.linkbench.SHORT; metrics
# imports no load code): the series of its page are lb_SHORT_ops and lb_SHORT_p99.
LINKBENCH_SHORT = {"updatenode": "un", "getnode": "gn", "updatelink": "ul",
                   "getlinklist": "gl", "addlink": "al", "countlink": "cl",
                   "deletelink": "dl", "addnode": "an", "deletenode": "dn", "getlink": "mg"}


def ndb_hit_ratio(
    prev: dict[str, list[int]], cur: dict[str, list[int]]
) -> dict[str, float | None]:
    """Per data node: direct returns / (direct returns + waits for I/O) over the interval,
    in %; without a previous sample, since the node started (REFERENCE.md section 2)."""
    out: dict[str, float | None] = {}
    for node, (direct, wait_io) in cur.items():
        before = prev.get(node)
        if before is not None and direct >= before[0] and wait_io >= before[1]:
            direct, wait_io = direct - before[0], wait_io - before[1]
        total = direct + wait_io
        out[node] = 100.0 * direct / total if total > 0 else None
    return out


class MetricBoard:
    """The state every view draws from, rebuilt by applying events in order."""

    def __init__(self, header: Header, capacity: int = DEFAULT_CAPACITY,
                 target: str = "") -> None:
        self.header = header
        self._capacity = capacity
        # The server whose events it applies: "" the header's own; a recipe's further
        # target's events (issue 19) have their own board, or none.
        self.target = target
        # The sample metrics get a point at each sample, the load metrics at each load
        # report (and a gap at a stop), all of a kind at once: one clock for each kind.
        self._sample_clock = Clock(capacity)
        self._load_clock = Clock(capacity)
        self.series: dict[str, Series] = {
            **{name: Series(clock=self._sample_clock) for name in SAMPLE_METRICS},
            **{name: Series(clock=self._load_clock) for name in LOAD_METRICS},
        }
        self.markers: deque[Marker] = deque(maxlen=256)
        self.latest: dict[str, float | None] = {}
        # Per host: the OS metrics of the newest sample (host name -> metric -> value).
        self.hosts: dict[str, dict[str, float | None]] = {}
        # NDB: per data node, the disk page buffer hit ratio (%) over the last interval.
        self.ndb_hit: dict[str, float | None] = {}
        self._prev_ndb: dict[str, list[int]] = {}
        self.knob_values: dict[str, str | None] = {}
        self.load_running = False
        self.load_hosts = 1  # clients in the current phase
        # The newest report of each load source ("sysbench@HOST", and "all" for the sum).
        self.load_by_src: dict[str, Load] = {}
        self.load_label = ""
        self.samples = 0
        # True once any sample carried MyRocks counters: the MyRocks panel shows from then on.
        self.has_rocksdb = False
        self.version = 0  # bumped on every change, so views know when to repaint
        self._prev: Snapshot | None = None

    @property
    def now(self) -> float:
        """The time of the newest sample or load report."""
        times = [s.last_t for s in self.series.values() if s.last_t is not None]
        return max(times) if times else 0.0

    def apply(self, event: Event) -> None:
        if target_of(event) != self.target:
            return
        self.version += 1
        if isinstance(event, Sample):
            self._apply_sample(event)
        elif isinstance(event, Load):
            self._apply_load(event)
        elif isinstance(event, Change):
            if event.result == "ok":
                self.knob_values[event.knob] = event.new
                for knob, (_old, new) in event.side_effects.items():
                    self.knob_values[knob] = new
                if event.reason not in AUTOMATIC_REASONS:
                    self._apply_change_marker(event)
        elif isinstance(event, OutsideChange):
            self.knob_values[event.knob] = event.new
            self.markers.append(Marker(event.t, "outside", event.text,
                                       f"{OUTSIDE_TAG}{short_knob(event.knob)}={event.new}"))
        elif isinstance(event, Phase):
            self._apply_phase(event)
        elif isinstance(event, Error) and event.gap:
            self.markers.append(Marker(event.t, "gap", event.source, "gap"))
        elif isinstance(event, Restart) and event.step == "restart":
            self.markers.append(Marker(event.t, "restart", f"restart {event.node}", "restart"))
        elif isinstance(event, Knobs):
            self.knob_values.update(event.values)
        elif isinstance(event, Note):
            self.markers.append(Marker(event.t, "note", f"✎ {event.text}", "note"))
        elif isinstance(event, Mark):
            self.markers.append(Marker(event.t, "mark", f"⚑ {event.label}", "mark"))

    def _apply_change_marker(self, event: Change) -> None:
        tag = f"{short_knob(event.knob)}={event.new}"
        if event.method.endswith("restart"):
            # A static change is journaled after the restart it caused (with the change's
            # start time): that restart is this change, one line "pool=1G ⟳", not two.
            end = event.t + event.duration + 1.0
            absorbed = [m for m in self.markers if m.kind == "restart" and event.t <= m.t <= end]
            for m in absorbed:
                self.markers.remove(m)
            if absorbed:
                tag += " ⟳"
        self.markers.append(Marker(event.t, "change", f"{event.knob}={event.new}", tag))

    def _apply_sample(self, event: Sample) -> None:
        snap = Snapshot.from_values(
            event.t, self.header.counters, event.v, event.host, reconnect=event.re
        )
        values = derive(self._prev, snap, self.header.host_fields)
        self._prev = snap
        self.samples += 1
        if not self.has_rocksdb and has_rocksdb(snap):
            self.has_rocksdb = True
        i = self._sample_clock.tick(event.t)
        for name in SAMPLE_METRICS:
            value = values.get(name)
            self.series[name].put(i, value)
            self.latest[name] = value
        for key, value in values.items():
            metric, at, host = key.partition("@")
            if at:
                self.hosts.setdefault(host, {})[metric] = value
        if event.ndb:
            self.ndb_hit = ndb_hit_ratio(self._prev_ndb if not event.re else {}, event.ndb)
            self._prev_ndb = event.ndb

    def _apply_load(self, event: Load) -> None:
        self.load_by_src[event.src] = event
        if self.load_hosts > 1 and event.src != "all":
            return  # several clients: the graphs show their per-second sum
        i = self._load_clock.tick(event.t)
        for name, value in (
            ("load_tps", event.tps),
            ("load_qps", event.qps),
            ("load_p95", event.lat),
            ("load_err", event.err),
        ):
            self.series[name].put(i, value)
            self.latest[name] = value
        if event.ops:
            self._apply_ops(event)

    def _apply_ops(self, event: Load) -> None:
        """LinkBench (issue 20): each operation's ops/s and p99, as ``lb_SHORT_ops`` and
        ``lb_SHORT_p99`` (series made on the first report that has them)."""
        for op, numbers in event.ops.items():
            short = LINKBENCH_SHORT.get(op, op)
            for name, value in ((f"lb_{short}_ops", numbers[0]),
                                (f"lb_{short}_p99", numbers[3])):
                series = self.series.get(name)
                if series is None:
                    series = self.series[name] = Series(self._capacity)
                series.append(event.t, value)
                self.latest[name] = value

    def _apply_phase(self, event: Phase) -> None:
        if event.action == "start":
            self.load_running = True
            self.load_hosts = len(event.host.split(","))
            self.load_by_src = {}
            self.load_label = f"{event.workload} x{event.threads}"
            instances = int((event.summary or {}).get("instances") or 1)
            clients = self.load_hosts // instances
            if instances > 1:
                self.load_label += f" in {instances} instances"
            if clients > 1:
                self.load_label += f" on {clients} clients"
            label = f"load {self.load_label}"
            # A stop just before (a thread or workload change) and this start are one phase
            # change: one tick, named after the new phase.  So is a pause for a restart,
            # however long the restart took: the stop is followed only by that restart.
            restarted = False
            for m in reversed(self.markers):
                if m.kind == "restart" or m.tag.endswith("⟳"):
                    restarted = True
                    continue
                if m.kind == "load" and m.label == "load stop" and (
                        restarted or m.t >= event.t - PHASE_MERGE_S):
                    self.markers.remove(m)
                break
            self.markers.append(Marker(event.t, "load", label, f"x{event.threads}"))
        else:
            self.load_running = False
            self.markers.append(Marker(event.t, "load", f"load {event.action}", event.action))
            # A stopped load leaves no flat line behind: the next point is a gap.
            i = self._load_clock.tick(event.t)
            for name in LOAD_METRICS:
                self.series[name].put(i, None)
                self.latest[name] = None
