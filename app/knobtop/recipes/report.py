"""Reports from a recorded journal: setup, baseline knobs, timeline, per-phase statistics, CSV.

A journal is read once, streaming; only what reports need is kept: the header,
knob values, changes, restarts, notes, marks, errors, load phases, and one row
of derived metrics per sample (rates are derived here from the raw counters,
exactly as the live screen derives them).
"""
# Over 500 lines for now: every report format; #12 (issue 15) moves it to analysis/ and
# splits the formats.

from __future__ import annotations

import csv
import io
import math
import re
import statistics
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from knobtop.journal import (
    Change,
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
    Phase,
    RecipeRun,
    Restart,
    Sample,
    StepResult,
    Unknown,
)
from knobtop.metrics.derive import Snapshot, derive
from knobtop.recipes.results import collect, results_csv, results_markdown

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


@dataclass(frozen=True, slots=True)
class Row:
    """Derived metrics for the interval ending at one sample.

    Rates (tps, qps, hit_ratio, cpu) are None for the first sample and after a
    reconnect or server restart. ``load_tps``/``load_p95`` come from the load
    driver's report received since the previous sample (None when there was none).
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


@dataclass(frozen=True, slots=True)
class LoadPoint:
    """One per-interval report of the load driver (the sum over clients when several)."""

    t: float
    tps: float
    p95: float


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
    unknown_types: dict[str, int] = field(default_factory=dict)
    torn_tail: bool = False
    recipe_events: list[Event] = field(default_factory=list)  # recipe runs and their steps

    @property
    def label(self) -> str:
        """The file name, with the time range when only part of it was read."""
        if self.t_from is None and self.t_to is None:
            return self.path.name
        lo = fmt_rel(self.t_from) if self.t_from is not None else "start"
        hi = fmt_rel(self.t_to) if self.t_to is not None else "end"
        return f"{self.path.name} [{lo}-{hi})"

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


def _in_range(t: float, t_from: float | None, t_to: float | None) -> bool:
    return (t_from is None or t >= t_from) and (t_to is None or t < t_to)


def _apply_change(knobs: KnobValues, change: Change) -> None:
    if change.result != "ok":
        return
    knobs[change.knob] = change.new
    for knob, values in change.side_effects.items():
        if isinstance(values, list | tuple) and len(values) == 2:
            knobs[knob] = values[1]


def _line_of_event(path: Path, index: int) -> int:
    """The line number of the ``index``-th event (1-based; blank lines are not events)."""
    with path.open("rb") as fh:
        fh.readline()
        line_no, seen = 1, 0
        for line in fh:
            line_no += 1
            if line.strip():
                seen += 1
                if seen == index:
                    return line_no
    return line_no


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
        self.prev: Snapshot | None = None
        self.pending_load: LoadPoint | None = None
        self.open_phase: _OpenPhase | None = None
        self.spans: list[PhaseSpan] = []
        self.baseline_seen = False
        self.unknown: Counter[str] = Counter()
        self.last_seen = 0.0

    def feed(self, event: Event) -> None:
        data = self.data
        self.last_seen = max(self.last_seen, event.t)
        inside = _in_range(event.t, self.t_from, self.t_to)
        if inside:
            data.first_t = event.t if data.first_t is None else min(data.first_t, event.t)
            data.last_t = event.t if data.last_t is None else max(data.last_t, event.t)
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
        elif isinstance(event, RecipeRun | StepResult):
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
        header = self.data.header
        snap = Snapshot.from_values(
            event.t, header.counters, event.v, event.host, reconnect=event.re
        )
        values = derive(self.prev, snap, header.host_fields)
        self.prev = snap
        load, self.pending_load = self.pending_load, None
        if not inside:
            return
        self.data.rows.append(
            Row(
                t=event.t,
                wall=event.wall,
                tps=values.get("tps"),
                qps=values.get("qps"),
                hit_ratio=values.get("hit_ratio"),
                dirty_pct=values.get("dirty_pct"),
                history_len=values.get("history_len"),
                checkpoint_age=values.get("checkpoint_age"),
                cpu=values.get("cpu"),
                load_tps=load.tps if load else None,
                load_p95=load.p95 if load else None,
                threads_running=values.get("threads_running"),
            )
        )

    def _load(self, event: Load, inside: bool) -> None:
        hosts = self.open_phase.hosts if self.open_phase else 1
        if hosts > 1 and event.src != "all":
            return  # several clients: their per-second sum ("all") is the phase's number
        point = LoadPoint(t=event.t, tps=float(event.tps), p95=float(event.lat))
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
    path: str | Path, *, t_from: float | None = None, t_to: float | None = None
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
    path = Path(path)
    reader = JournalReader(path)
    data = JournalData(path=path, header=reader.header, t_from=t_from, t_to=t_to)
    loader = _Loader(data)
    for event in reader:
        try:
            loader.feed(event)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
            line_no = _line_of_event(path, reader.stats.events)
            raise JournalFormatError(
                path, line_no, f"{event.kind} event has values of the wrong type ({exc})"
            ) from None
    loader.finish()
    data.torn_tail = reader.stats.torn_tail
    return data


# --------------------------------------------------------------------------- statistics


def _median(values: Iterable[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return statistics.median(present) if present else None


def phase_stats(data: JournalData, span: PhaseSpan) -> PhaseStats:
    rows = [r for r in data.rows if span.contains(r.t)]
    loads = [p for p in data.loads if span.contains(p.t)]
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


# --------------------------------------------------------------------------- formatting


def fmt_rel(t: float) -> str:
    """Seconds since the session started as mm:ss (h:mm:ss from one hour on)."""
    sign = "-" if t < 0 else ""
    total = int(abs(t))
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{sign}{hours}:{minutes:02d}:{seconds:02d}"
    return f"{sign}{minutes:02d}:{seconds:02d}"


def fmt_utc(wall: float, with_date: bool = False) -> str:
    stamp = datetime.fromtimestamp(wall, UTC)
    return stamp.strftime("%Y-%m-%d %H:%M:%S UTC" if with_date else "%H:%M:%S")


def fmt_num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def fmt_knob(value: str | None) -> str:
    return "—" if value is None else value


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def md_table(head: Iterable[str], rows: Iterable[Iterable[object]]) -> list[str]:
    head = list(head)
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out.extend("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows)
    return out


def server_label(header: Header) -> str:
    server = header.server
    flavor = str(server.get("flavor") or "server")
    version = str(server.get("version") or "?")
    text = f"{flavor} {version}"
    version_text = server.get("version_text")
    if version_text and version_text != version:
        text += f" ({version_text})"
    return text


def _server_setup(header: Header) -> str:
    text = server_label(header)
    host, port, socket = (header.server.get(k) for k in ("host", "port", "socket"))
    if socket:
        text += f" on {socket}"
    elif host:
        text += f" on {host}:{port}" if port else f" on {host}"
    return text


def _hosts_setup(hosts: Mapping[str, object]) -> str:
    parts = []
    for name, facts in hosts.items():
        if not isinstance(facts, Mapping):
            parts.append(str(name))
            continue
        bits = []
        if facts.get("cpus"):
            bits.append(f"{facts['cpus']} CPUs")
        memory = facts.get("memory")
        if isinstance(memory, int | float) and memory > 0:
            bits.append(f"{memory / 2**30:.1f} GiB RAM")
        if facts.get("os"):
            bits.append(str(facts["os"]))
        hostname = facts.get("hostname")
        label = f"{name} ({hostname})" if hostname and hostname != name else str(name)
        parts.append(f"{label}: {', '.join(bits)}" if bits else label)
    return "; ".join(parts) or "—"


def report_warnings(data: JournalData) -> list[str]:
    """Things the reader of a report must know about the journal itself."""
    out = []
    if data.skipped_unknown:
        kinds = ", ".join(sorted(data.unknown_types))
        noun = "event" if data.skipped_unknown == 1 else "events"
        out.append(
            f"skipped {data.skipped_unknown} {noun} of unknown type ({kinds}); "
            "the journal may have been written by a newer knobtop"
        )
    if data.torn_tail:
        out.append("the last line was cut off mid-write (the writer was killed); it was left out")
    if data.end is None and data.t_to is None:
        out.append("the journal has no end event: the session was killed or is still running")
    return out


def _change_row(change: Change) -> list[str]:
    detail = f"{change.knob}: {fmt_knob(change.old)} → {fmt_knob(change.new)}"
    if change.requested != change.new:
        detail += f" (asked {change.requested})"
    detail += f" via {change.method}"
    extras = [
        f"{k}: {fmt_knob(v[0])} → {fmt_knob(v[1])}"
        for k, v in change.side_effects.items()
        if isinstance(v, list | tuple) and len(v) == 2
    ]
    if extras:
        detail += "; also " + ", ".join(extras)
    if change.message:
        detail += f" — {change.message}"
    if change.warnings:
        detail += " — " + "; ".join(change.warnings)
    return ["change", detail, change.result, change.reason or "by hand"]


def _timeline(data: JournalData) -> Iterator[tuple[float, float, list[str]]]:
    """(t, wall, [what, detail, result, reason]) of changes, restarts, notes, marks, errors."""
    for c in data.changes:
        yield c.t, c.wall, _change_row(c)
    for r in data.restarts:
        detail = f"{r.node}: {r.step} ({r.seconds:.1f} s)"
        if r.message:
            detail += f" — {r.message}"
        yield r.t, r.wall, ["restart", detail, r.result, ""]
    for n in data.notes:
        yield n.t, n.wall, ["note", n.text, "", ""]
    for m in data.marks:
        yield m.t, m.wall, ["mark", m.label, "", ""]
    for e in data.errors:
        yield e.t, e.wall, ["error", f"{e.source}: {e.message}", "gap" if e.gap else "", ""]


def markdown_report(data: JournalData) -> str:
    """A Markdown report of one journal (or one time range of it)."""
    h = data.header
    lines = [f"# knobtop report: {data.label}", ""]
    for warning in report_warnings(data):
        lines.append(f"> **Warning:** {warning}")
    if lines[-1]:
        lines.append("")

    lines += ["## Setup", ""]
    setup: list[tuple[str, str]] = [
        ("knobtop", h.knobtop),
        ("server", _server_setup(h)),
        ("hosts", _hosts_setup(h.hosts)),
        ("interval", f"{h.interval:g} s"),
        ("profile", h.profile or "—"),
        ("started", fmt_utc(h.started_wall, with_date=True)),
    ]
    if data.t_from is not None or data.t_to is not None:
        lo = fmt_rel(data.t_from) if data.t_from is not None else "start"
        hi = fmt_rel(data.t_to) if data.t_to is not None else "end"
        setup.append(("range", f"{lo} to {hi} (from inclusive, to exclusive)"))
    setup.append(("length", f"{data.duration:.1f} s, {len(data.rows)} samples"))
    if data.end is not None:
        setup.append(("ended", data.end.reason))
    lines += md_table(["", ""], setup)
    lines.append("")

    lines += ["## Baseline knobs", ""]
    if data.knobs_start:
        lines += md_table(
            ["knob", "value"], ((k, fmt_knob(v)) for k, v in sorted(data.knobs_start.items()))
        )
        changed = sorted(
            k
            for k in set(data.knobs_start) | set(data.knobs_end)
            if data.knobs_start.get(k) != data.knobs_end.get(k)
        )
        if changed:
            lines += ["", "Changed by the end:", ""]
            lines += md_table(
                ["knob", "start", "end"],
                (
                    (k, fmt_knob(data.knobs_start.get(k)), fmt_knob(data.knobs_end.get(k)))
                    for k in changed
                ),
            )
    else:
        lines.append("The journal has no knob snapshot.")
    lines.append("")

    lines += ["## Timeline", ""]
    events = sorted(_timeline(data), key=lambda item: item[0])
    if events:
        start_day = fmt_utc(h.started_wall, with_date=True)[:10]
        rows = []
        for t, wall, cells in events:
            utc = fmt_utc(wall, with_date=True)
            rows.append([fmt_rel(t), utc[11:19] if utc[:10] == start_day else utc, *cells])
        lines += md_table(["time", "UTC", "event", "detail", "result", "reason"], rows)
    else:
        lines.append("No changes, restarts, notes or marks.")
    lines.append("")

    lines += ["## Load phases", ""]
    stats = phase_table(data)
    if stats:
        lines += md_table(
            [
                "#",
                "workload",
                "threads",
                "start",
                "end",
                "duration",
                "TPS (load)",
                "TPS (server)",
                "p95 ms",
                "hit ratio %",
                "dirty %",
                "samples",
            ],
            (
                [
                    s.number,
                    s.workload,
                    s.threads,
                    fmt_rel(s.start),
                    fmt_rel(s.end),
                    f"{s.duration:.1f} s",
                    fmt_num(s.load_tps),
                    fmt_num(s.server_tps),
                    fmt_num(s.p95, 2),
                    fmt_num(s.hit_ratio, 2),
                    fmt_num(s.dirty_pct),
                    s.samples,
                ]
                for s in stats
            ),
        )
        lines += [
            "",
            "Medians over the phase's intervals; p95 is the median of the "
            "load driver's per-interval p95.",
        ]
    else:
        lines.append("No load phases.")
    lines.append("")
    runs = collect(data.recipe_events)
    if runs:
        lines += ["## Recipe results", ""]
        for results in runs:
            lines.append(results_markdown(results))
    return "\n".join(lines)


def steps_csv(data: JournalData) -> str:
    """One row per measured recipe step (all recipe runs in the journal)."""
    runs = collect(data.recipe_events)
    if not runs:
        raise ValueError(f"{data.path}: no recipe steps in this journal (knobtop run records "
                         "them); use --format csv for per-interval metrics")
    text = results_csv(runs[0])
    for results in runs[1:]:
        text += results_csv(results).split("\n", 1)[1]
    return text


def _csv_num(value: float | None) -> str:
    if value is None:
        return ""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def csv_report(data: JournalData) -> str:
    """One row per sample interval (header row first; empty cells for missing values), with
    the load phase it fell in (number, workload, threads; empty while no load ran).

    Every sample is a row, including the first, whose rates are empty because
    there is no earlier sample to take a difference from.
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    spans = iter(data.phases)  # both in time order: one pass
    span = next(spans, None)
    for row in data.rows:
        while span is not None and span.end < row.t:
            span = next(spans, None)
        inside = span is not None and span.start <= row.t
        phase = [str(span.number), span.workload, str(span.threads)] if span and inside else [
            "", "", ""]
        writer.writerow(
            [f"{row.t:.4f}", f"{row.wall:.3f}"]
            + [_csv_num(getattr(row, name)) for name in ROW_FIELDS[2:]]
            + phase
        )
    return buf.getvalue()


_TIME = r"(?:\d+(?::\d{1,2}){0,2}(?:\.\d+)?)"
_RANGE = re.compile(rf"^\s*({_TIME})?\s*(?:-|\.\.)\s*({_TIME})?\s*$")


def parse_time(text: str) -> float:
    """Seconds from "75", "75.5", "1:15" or "1:01:15"."""
    parts = text.strip().split(":")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise ValueError(f"not a time: {text!r} (use seconds, mm:ss or h:mm:ss)") from None
    seconds = 0.0
    for v in values:
        seconds = seconds * 60 + v
    if not math.isfinite(seconds):  # "nan", "inf", a thousand digits
        raise ValueError(f"not a time: {text!r} (use seconds, mm:ss or h:mm:ss)")
    return seconds


def parse_range(text: str) -> tuple[float | None, float | None]:
    """A time range "FROM-TO" (either side may be empty): "0-50", "50-", "1:00..2:30"."""
    match = _RANGE.match(text)
    if not match or (match.group(1) is None and match.group(2) is None):
        raise ValueError(f"not a time range: {text!r} (use FROM-TO, e.g. 0:30-1:00 or 50-)")
    lo = parse_time(match.group(1)) if match.group(1) else None
    hi = parse_time(match.group(2)) if match.group(2) else None
    if lo is not None and hi is not None and hi <= lo:
        raise ValueError(f"empty time range: {text!r}")
    return lo, hi
