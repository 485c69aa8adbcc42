"""Folds journal events into bounded plotted series and change markers (live, replay, follow)."""

from __future__ import annotations

import math
from array import array
from collections import deque
from dataclasses import dataclass

from knobtop.journal.events import (
    Change,
    Error,
    Event,
    Header,
    Knobs,
    Load,
    Mark,
    Note,
    Phase,
    Restart,
    Sample,
    target_of,
)
from knobtop.metrics.derive import Snapshot, derive, has_rocksdb

DEFAULT_CAPACITY = 3600


class Series:
    """The last ``capacity`` points of one metric; ``None`` values are gaps.

    Two fixed-size float arrays used as a ring (a gap is stored as NaN): 16 bytes a point,
    where a deque of Python floats costs about 64, for the hour every series keeps.
    """

    __slots__ = ("_capacity", "_n", "_next", "_t", "_v")

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._capacity = capacity
        self._t = array("d", bytes(8 * capacity))
        self._v = array("d", bytes(8 * capacity))
        self._n = 0  # points held
        self._next = 0  # where the next point goes

    def append(self, t: float, value: float | None) -> None:
        i = self._next
        self._t[i] = t
        self._v[i] = math.nan if value is None else value
        self._next = (i + 1) % self._capacity
        if self._n < self._capacity:
            self._n += 1

    def __len__(self) -> int:
        return self._n

    def _index(self, k: int) -> int:
        """Ring position of the k-th newest point (0 = newest)."""
        return (self._next - 1 - k) % self._capacity

    def points(self, since: float | None = None) -> list[tuple[float, float | None]]:
        """Points at or after ``since``, oldest first; walks back only as far as needed."""
        out: list[tuple[float, float | None]] = []
        ts, vs = self._t, self._v
        for k in range(self._n):
            i = self._index(k)
            t = ts[i]
            if since is not None and t < since:
                break
            v = vs[i]
            out.append((t, None if v != v else v))  # NaN is a gap
        out.reverse()
        return out

    @property
    def last(self) -> float | None:
        for k in range(self._n):
            v = self._v[self._index(k)]
            if v == v:
                return v
        return None

    @property
    def last_t(self) -> float | None:
        return self._t[self._index(0)] if self._n else None


#: Marker kinds drawn as full-height lines: what a person did (a knob change, a restart, a
#: note, a mark).  The others (load phases, sampling gaps) are drawn lighter, as ticks.
FULL_KINDS = frozenset({"change", "restart", "note", "mark"})
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
    kind: str  # "change" | "load" | "gap" | "restart" | "note" | "mark"
    label: str
    tag: str = ""

    @property
    def full(self) -> bool:
        """Drawn full height (a person's action), not as a light tick."""
        return self.kind in FULL_KINDS


# Metrics derived from samples, plus the load driver's own numbers.
SAMPLE_METRICS = (
    "tps",
    "qps",
    "hit_ratio",
    "dirty_pct",
    "history_len",
    "checkpoint_age",
    "row_lock_waits",
    "threads_running",
    "cpu",
    "iowait",
    # InnoDB internals (the InnoDB page of graphs).
    "checkpoint_pct",
    "pages_flushed",
    "data_reads",
    "log_waits",
    # MyRocks (None on servers without it; see MetricBoard.has_rocksdb).
    "rocks_hit_ratio",
    "rocks_stalls",
    "rocks_stall_ms",
)
LOAD_METRICS = ("load_tps", "load_qps", "load_p95", "load_err")
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
        self.series: dict[str, Series] = {
            name: Series(capacity) for name in SAMPLE_METRICS + LOAD_METRICS
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
        for name in SAMPLE_METRICS:
            value = values.get(name)
            self.series[name].append(event.t, value)
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
        for name, value in (
            ("load_tps", event.tps),
            ("load_qps", event.qps),
            ("load_p95", event.lat),
            ("load_err", event.err),
        ):
            self.series[name].append(event.t, value)
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
            for name in LOAD_METRICS:
                self.series[name].append(event.t, None)
                self.latest[name] = None
