"""A recorded journal read once, streaming, into what analysis needs: the header, knob values,
changes (knobtop's and those made outside it), restarts, notes, marks, errors, load phases,
and one row of derived metrics per sample (rates derived from the raw counters exactly as
the live screen derives them); per-phase statistics."""
# Over 600 lines (tests/unit/test_sizes.py's debt): the one fold from a journal's events
# to what reports need, fed three ways that must agree line for line (the quick path's
# checked samples, the report cache's kept fold, the CSV stream's phase pass); split, the
# three would drift apart.

from __future__ import annotations

import contextlib
import gc
import operator
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import NamedTuple

from knobtop.analysis.reportcache import (
    DEFAULT_CACHE,
    BadKept,
    Kept,
    ReportCache,
    default_dir,
    digest,
)
from knobtop.analysis.times import fmt_rel
from knobtop.journal import (
    Change,
    Checkpoint,
    End,
    Error,
    Event,
    Header,
    JournalFormatError,
    JournalReader,
    Knobs,
    Load,
    Mark,
    Note,
    OutsideChange,
    Phase,
    RecipeRun,
    Restart,
    Sample,
    StepResult,
    Trial,
    Unknown,
)
from knobtop.journal.events import JsonDict, target_of
from knobtop.metrics.derive import BRIEF_ROW, BriefDeriver, Snapshot, derive
from knobtop.printable import printable

# Columns of one per-interval row (and of the CSV report), in order.
ROW_FIELDS = (
    "t",
    "wall",
    "tps",
    "qps",
    "hit_ratio",
    "dirty_pct",
    "history_len",
    "checkpoint_age",
    "cpu",
    "load_tps",
    "load_p95",
    "threads_running",
)
#: csv_report's columns: the sample's, then the load phase it fell in.
CSV_FIELDS = (*ROW_FIELDS, "phase", "workload", "threads")

KnobValues = dict[str, str | None]
_T = operator.itemgetter(0)


class Row(NamedTuple):
    """Derived metrics for the interval ending at one sample.

    Rates (tps, qps, hit_ratio, cpu) are None for the first sample and after a
    reconnect or server restart. ``load_tps``/``load_p95`` come from the load
    driver's report received since the previous sample (None when there was none).

    A named tuple, not a frozen dataclass: a report makes one a second of journal (a day:
    86,400), a kept fold's each from its list in one call (``_make``), where a frozen
    dataclass set its 12 fields one ``object.__setattr__`` at a time (about a third of a
    1-hour report's reading of its kept fold); the class is made at import for half the cost.
    """

    t: float
    wall: float
    tps: float | None
    qps: float | None
    hit_ratio: float | None
    dirty_pct: float | None
    history_len: float | None
    checkpoint_age: float | None
    cpu: float | None
    load_tps: float | None
    load_p95: float | None
    threads_running: float | None


class LoadPoint(NamedTuple):
    """One per-interval report of the load driver (the sum over clients when several);
    a named tuple, as Row is."""

    t: float
    tps: float
    p95: float


_LOAD_FIELDS = ("t", "tps", "p95")  # LoadPoint's, in order


@dataclass(frozen=True, slots=True)
class PhaseSpan:
    """One load phase, clipped to the journal's read range.

    ``ended_by`` is "stop", "failed", "next start" or "end of journal".  A phase
    that ran to the end of the journal includes a point at exactly ``end``.
    """

    number: int
    workload: str
    threads: int
    driver: str
    host: str
    start: float
    end: float
    ended_by: str
    message: str = ""

    def contains(self, t: float) -> bool:
        if t < self.start:
            return False
        return t < self.end or (self.ended_by == "end of journal" and t <= self.end)


@dataclass
class JournalData:
    """What the reports need from one journal (or one time range of it)."""

    path: Path
    header: Header
    t_from: float | None = None
    t_to: float | None = None
    knobs_start: KnobValues = field(default_factory=dict)
    knobs_end: KnobValues = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    outside: list[OutsideChange] = field(default_factory=list)  # changes not made by knobtop
    restarts: list[Restart] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    errors: list[Error] = field(default_factory=list)
    phases: list[PhaseSpan] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    loads: list[LoadPoint] = field(default_factory=list)
    end: End | None = None
    first_t: float | None = None  # first and last event time inside the range
    last_t: float | None = None
    skipped_unknown: int = 0
    other_targets: int = 0  # events of a recipe's further servers (series not drawn)
    target_knobs: dict[str, KnobValues] = field(default_factory=dict)  # each one's first
    unknown_types: dict[str, int] = field(default_factory=dict)
    torn_tail: bool = False
    recipe_events: list[Event] = field(default_factory=list)  # recipe runs and their steps

    @property
    def label(self) -> str:
        """The file name (printable: a name is someone else's text too), with the time range
        when only part of it was read."""
        name = printable(self.path.name, newlines=False)
        if self.t_from is None and self.t_to is None:
            return name
        lo = fmt_rel(self.t_from) if self.t_from is not None else "start"
        hi = fmt_rel(self.t_to) if self.t_to is not None else "end"
        return f"{name} [{lo}-{hi})"

    @property
    def duration(self) -> float:
        if self.first_t is None or self.last_t is None:
            return 0.0
        return max(0.0, self.last_t - self.first_t)


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


# --------------------------------------------------------------------------- reading


def _apply_change(knobs: KnobValues, change: Change) -> None:
    if change.result != "ok":
        return
    knobs[change.knob] = change.new
    for knob, values in change.side_effects.items():
        if isinstance(values, list | tuple) and len(values) == 2:
            knobs[knob] = values[1]


@dataclass
class _OpenPhase:
    event: Phase
    hosts: int


class _Loader:
    """The streaming fold from events to a JournalData."""

    def __init__(self, data: JournalData) -> None:
        self.data = data
        self.t_from = data.t_from
        self.t_to = data.t_to
        self.deriver = BriefDeriver(data.header.counters, data.header.host_fields)
        self.keep: Kept | None = None  # filled for the report cache as the journal is read
        self.prev_raw: tuple[float, list[int | float | None], dict[str, list[float]],
                             bool] | None = None
        self.pending_load: LoadPoint | None = None
        self.open_phase: _OpenPhase | None = None
        self.spans: list[PhaseSpan] = []
        self.baseline_seen = False
        self.unknown: Counter[str] = Counter()
        self.last_seen = 0.0

    def feed_sample(self, d: JsonDict) -> None:
        """``feed`` of a sample line's checked JSON object (JournalReader.quick): the
        same fold without building the Sample."""
        if not self._other_target(d):
            t = d["t"]
            self._raw_sample(t, d["wall"], d["v"], d.get("host") or {}, d.get("re", False),
                             self._seen(t))

    def feed_load(self, d: JsonDict) -> None:
        """``feed`` of a load line's checked JSON object, without building the Load."""
        if not self._other_target(d):
            t = d["t"]
            self._raw_load(t, d["src"], d["tps"], d["lat"], self._seen(t))

    def _other_target(self, d: JsonDict) -> bool:
        """A sample or load report of a recipe's further server: counted, not folded."""
        if not d.get("target"):
            return False
        self.data.other_targets += 1
        if self.keep is not None:
            self.keep.other_targets += 1
        return True

    def _seen_all(self, times: list[float]) -> None:
        """_seen of each of ``times`` in turn: max() and min() keep the first of equals,
        as _seen's strict comparisons do."""
        if not times:
            return
        top = max(times)
        if top > self.last_seen:
            self.last_seen = top
        if self.t_from is not None or self.t_to is not None:
            lo, hi = self.t_from, self.t_to
            times = [t for t in times if (lo is None or t >= lo) and (hi is None or t < hi)]
            if not times:
                return
        data = self.data
        first, last = min(times), max(times)
        if data.first_t is None or first < data.first_t:
            data.first_t = first
        if data.last_t is None or last > data.last_t:
            data.last_t = last

    def _seen(self, t: float) -> bool:
        """What ``feed`` does with every event's time (min and max as the comparisons they
        make); whether it lies inside the range."""
        if t > self.last_seen:
            self.last_seen = t
        if (self.t_from is not None and not t >= self.t_from) or (
                self.t_to is not None and not t < self.t_to):
            return False
        data = self.data
        if data.first_t is None or t < data.first_t:
            data.first_t = t
        if data.last_t is None or t > data.last_t:
            data.last_t = t
        return True

    def feed(self, event: Event) -> None:
        data = self.data
        target = target_of(event)
        if target and not isinstance(event, StepResult):
            # A recipe's further server (issue 19): its steps are the recipe's; its samples,
            # loads, phases and knobs are not this journal's own server's series (its first
            # knob snapshot is kept for the report's comparison of the servers).
            data.other_targets += 1
            if isinstance(event, Knobs):
                data.target_knobs.setdefault(target, dict(event.values))
            return
        inside = self._seen(event.t)
        if isinstance(event, Sample):
            self._sample(event, inside)
        elif isinstance(event, Load):
            self._load(event, inside)
        elif isinstance(event, Phase):
            self._phase(event)
        elif isinstance(event, Knobs):
            self._knobs(event)
        elif isinstance(event, Change):
            if self.t_from is not None and event.t < self.t_from:
                _apply_change(data.knobs_start, event)
            if self.t_to is None or event.t < self.t_to:
                _apply_change(data.knobs_end, event)
            if inside:
                data.changes.append(event)
        elif isinstance(event, OutsideChange):
            if self.t_from is not None and event.t < self.t_from:
                data.knobs_start[event.knob] = event.new
            if self.t_to is None or event.t < self.t_to:
                data.knobs_end[event.knob] = event.new
            if inside:
                data.outside.append(event)
        elif isinstance(event, RecipeRun | StepResult | Checkpoint | Trial):
            if inside:
                data.recipe_events.append(event)
        elif isinstance(event, Unknown):
            data.skipped_unknown += 1
            self.unknown[event.type] += 1
        elif not inside:
            return
        elif isinstance(event, Restart):
            data.restarts.append(event)
        elif isinstance(event, Note):
            data.notes.append(event)
        elif isinstance(event, Mark):
            data.marks.append(event)
        elif isinstance(event, Error):
            data.errors.append(event)
        elif isinstance(event, End):
            data.end = event

    def _sample(self, event: Sample, inside: bool) -> None:
        self._raw_sample(event.t, event.wall, event.v, event.host, event.re, inside)

    def _raw_sample(self, t: float, wall: float, v: list[int | float | None],
                    host: dict[str, list[float]], re: bool, inside: bool) -> None:
        prev, self.prev_raw = self.prev_raw, (t, v, host, re)
        try:
            tps, qps, hit, dirty, history, age, cpu, running = self.deriver.step(t, v, host, re)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError, ArithmeticError):
            # A malformed sample: derive itself says what is wrong (or, if it finds
            # nothing, its values stand).
            values = derive(None if prev is None else _snapshot(self.data.header, *prev),
                            _snapshot(self.data.header, t, v, host, re),
                            self.data.header.host_fields, brief=True)
            tps, qps, hit, dirty, history, age, cpu, running = (
                values.get(k) for k in BRIEF_ROW)
        load, self.pending_load = self.pending_load, None
        if not inside:
            return
        self.data.rows.append(Row(t, wall, tps, qps, hit, dirty, history, age, cpu,
                                  load.tps if load else None, load.p95 if load else None,
                                  running))

    def _load(self, event: Load, inside: bool) -> None:
        self._raw_load(event.t, event.src, event.tps, event.lat, inside)

    def _raw_load(self, t: float, src: str, tps: float, lat: float, inside: bool) -> None:
        hosts = self.open_phase.hosts if self.open_phase else 1
        if hosts > 1 and src != "all":
            if self.keep is not None:
                self.keep.dropped.append(t)
            return  # several clients: their per-second sum ("all") is the phase's number
        point = LoadPoint(t, float(tps), float(lat))
        self.pending_load = point
        if inside:
            self.data.loads.append(point)

    def _phase(self, event: Phase) -> None:
        if self.open_phase is not None:
            ended_by = "next start" if event.action == "start" else event.action
            self._close(event.t, ended_by, event.message if event.action != "start" else "")
        if event.action == "start":
            self.open_phase = _OpenPhase(event, len(event.host.split(",")))
        self.pending_load = None

    def _close(self, t: float, ended_by: str, message: str) -> None:
        assert self.open_phase is not None
        start = self.open_phase.event
        self.spans.append(
            PhaseSpan(
                number=start.phase,
                workload=start.workload,
                threads=start.threads,
                driver=start.driver,
                host=start.host,
                start=start.t,
                end=t,
                ended_by=ended_by,
                message=message or start.message,
            )
        )
        self.open_phase = None

    def _knobs(self, event: Knobs) -> None:
        data = self.data
        first = not self.baseline_seen
        self.baseline_seen = True
        if first or (self.t_from is not None and event.t < self.t_from):
            data.knobs_start.update(event.values)
        if first or self.t_to is None or event.t < self.t_to:
            data.knobs_end.update(event.values)

    def finish(self) -> None:
        data = self.data
        if self.open_phase is not None:
            self._close(self.last_seen, "end of journal", "")
        lo = self.t_from if self.t_from is not None else float("-inf")
        hi = self.t_to if self.t_to is not None else float("inf")
        for span in self.spans:
            start, end = max(span.start, lo), min(span.end, hi)
            if end < start or (end == start and span.end > span.start):
                continue  # the phase lies outside the range
            ended_by = span.ended_by
            if end < span.end:
                ended_by = "end of range"
            data.phases.append(replace(span, start=start, end=end, ended_by=ended_by))
        data.unknown_types = dict(self.unknown)


def load_journal(
    path: str | Path, *, t_from: float | None = None, t_to: float | None = None,
    cache: ReportCache | None = DEFAULT_CACHE,
) -> JournalData:
    """Read a journal once, keeping what reports need.

    ``t_from``/``t_to`` (seconds since the session started; from inclusive, to
    exclusive) restrict everything to a time range: knob values "at start" are
    those in force at ``t_from``, and rates at the range's first sample are
    still derived from the sample before it.

    Raises JournalFormatError (with the line number) for a line that is not a
    journal event, and for a file that is not a journal at all (line 1).
    Events of unknown types are skipped and counted; a torn last line (a
    write cut off by a kill) is left out and noted in ``torn_tail``.
    """
    with _no_gc():
        return _load(Path(path), t_from, t_to, cache)


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic garbage collector paused: a day's fold makes a million objects, none in a
    cycle, and the collector would walk them all again and again (a fifth of the time)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _load(path: Path, t_from: float | None, t_to: float | None,
          cache: ReportCache | None) -> JournalData:
    reader = JournalReader(path)
    data = JournalData(path=path, header=reader.header, t_from=t_from, t_to=t_to)
    loader = _Loader(data)
    if cache is DEFAULT_CACHE:
        where = default_dir()
        cache = ReportCache(where) if where is not None else None
    before = path.stat()
    size = before.st_size
    kept = cache.open(path, size) if cache is not None else None
    if kept is not None:
        try:
            _from_kept(reader, loader, kept)
        except BadKept:  # (values of the wrong type: the journal then)
            return _load(path, t_from, t_to, None)
        finally:
            kept.close()
        loader.finish()
        return data
    if cache is not None and size >= cache.min_bytes and t_from is None and t_to is None:
        loader.keep = Kept()  # (a range's fold is kept by no one)
    for _row in fold(reader, loader):
        pass
    loader.finish()
    data.torn_tail = reader.stats.torn_tail
    if cache is not None and loader.keep is not None and reader.consumed == size:
        after = path.stat()  # the bytes hashed are the bytes folded: the file unchanged
        if (after.st_size, after.st_mtime_ns, after.st_ino) == (
                size, before.st_mtime_ns, before.st_ino):
            loader.keep.torn_tail = data.torn_tail
            cache.write(path, size, digest(path, size), loader.keep,
                        ((data.rows, ROW_FIELDS), (data.loads, _LOAD_FIELDS)))
    return data


def _from_kept(reader: JournalReader, loader: _Loader, kept: Kept) -> None:
    """load_journal from a kept fold: the rows and load reports inside the range, the
    times of every sample and load report (the range's first and last), and every other
    line read and checked again, in order."""
    data = loader.data
    t_from, t_to = data.t_from, data.t_to

    def inside(t: float) -> bool:
        return (t_from is None or t >= t_from) and (t_to is None or t < t_to)

    whole = t_from is None and t_to is None
    for chunk in kept.row_chunks():  # (C's loops where they can: a day has 86,400 rows)
        loader._seen_all(list(map(_T, chunk)))
        data.rows.extend(map(Row._make, chunk if whole else (
            c for c in chunk if inside(c[0]))))
    for chunk in kept.load_chunks():
        loader._seen_all(list(map(_T, chunk)))
        data.loads.extend(map(LoadPoint._make, chunk if whole else (
            c for c in chunk if inside(c[0]))))
    loader._seen_all(kept.dropped)
    data.other_targets = kept.other_targets
    data.torn_tail = kept.torn_tail
    with reader.path.open("rb") as fh:
        for offset, line_no in kept.lines:
            fh.seek(offset)
            event = reader.decode_line(fh.readline(), line_no)
            try:
                loader.feed(event)
            except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
                raise JournalFormatError(
                    reader.path, line_no, f"{event.kind} event has values of the wrong type "
                    f"({exc})") from None


def fold(reader: JournalReader, loader: _Loader) -> Iterator[Row]:
    """Feed every event of the journal to ``loader``, yielding each row as it is added (the
    CSV report writes them as they come).  Samples and load reports come checked but not
    built into events (JournalReader.quick); a value of the wrong type the checks let
    through (a host's CPU list shorter than its fields) is named by file and line."""
    rows = loader.data.rows
    keep = loader.keep
    for line_no, item in reader.quick():
        before = len(rows)
        try:
            if type(item) is dict:
                if item["ev"] == "sample":
                    loader.feed_sample(item)
                else:
                    loader.feed_load(item)
            else:
                assert isinstance(item, Event)
                if keep is not None:
                    if isinstance(item, Sample | Load):  # not the quick path's: not kept
                        loader.keep = keep = None
                    else:
                        keep.lines.append([reader.line_start, line_no])
                loader.feed(item)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
            kind = item["ev"] if isinstance(item, dict) else item.kind
            raise JournalFormatError(
                reader.path, line_no, f"{kind} event has values of the wrong type ({exc})"
            ) from None
        if len(rows) > before:
            yield rows[-1]


def phase_spans(path: Path, t_from: float | None = None, t_to: float | None = None
                ) -> tuple[list[PhaseSpan], PhaseSpan | None, float]:
    """The load phases of the journal as load_journal finds them, read without decoding
    the lines that cannot be phase events: only a line with ``phase`` or a backslash (a
    JSON escape may spell it) in its bytes can decode to one.  A phase still running at the
    end of the journal ends at infinity here (load_journal ends it at the journal's last
    time, which takes reading every line); it is also returned (None if there is none or
    the range leaves nothing of it), with its start.  A line that is not an event is
    passed over: load_journal names it."""
    reader = JournalReader(path)
    data = JournalData(path=path, header=reader.header, t_from=t_from, t_to=t_to)
    loader = _Loader(data)
    for line in _maybe_phases(path):
        try:
            event = reader.decode_line(line, 0)
            if isinstance(event, Phase):
                loader.feed(event)
        except (JournalFormatError, TypeError, ValueError, KeyError, AttributeError):
            continue
    running = loader.open_phase
    loader.last_seen = float("inf")
    loader.finish()
    if running is None:
        return data.phases, None, 0.0
    start = running.event.t  # did finish() keep it? (the clipping of finish())
    lo = max(start, t_from if t_from is not None else float("-inf"))
    hi = t_to if t_to is not None else float("inf")
    kept = not (hi < lo or hi == lo)  # its end, infinity, is past its start
    return data.phases, data.phases[-1] if kept else None, start


def _maybe_phases(path: Path, block: int = 1 << 20) -> Iterator[bytes]:
    """The whole lines after the header that hold ``phase`` or a backslash (a last line
    without its newline is a cut-off write, not a line)."""
    with path.open("rb") as fh:
        fh.readline()
        rest = b""
        while chunk := fh.read(block):
            chunk = rest + chunk
            cut = chunk.rfind(b"\n") + 1
            chunk, rest = chunk[:cut], chunk[cut:]
            if b"phase" in chunk or b"\\" in chunk:
                for line in chunk.splitlines(keepends=True):
                    if (b"phase" in line or b"\\" in line) and not line.isspace():
                        yield line


def _snapshot(header: Header, t: float, v: list[int | float | None],
              host: dict[str, list[float]], re: bool) -> Snapshot:
    return Snapshot.from_values(t, header.counters, v, host, reconnect=re)


# --------------------------------------------------------------------------- statistics


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
