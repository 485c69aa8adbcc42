"""Each side of a comparison on its own relative time axis: its series, its events and
markers since its start, and the points a time window shows (pure: no app needed)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from knobtop.analysis.journaldata import JournalData
from knobtop.analysis.report import fmt_knob
from knobtop.ui.widgets.graph_math import Point

ROW_METRICS = ("tps", "qps", "hit_ratio", "dirty_pct", "history_len", "checkpoint_age", "cpu")
LOAD_METRICS = {"load_tps": "tps", "load_p95": "p95"}  # graph metric -> LoadPoint attribute
SERIES = ((True, True), (True, False), (False, True))  # key s cycles: both, A only, B only
SERIES_NAMES = {(True, True): "A and B", (True, False): "A only", (False, True): "B only"}


@dataclass(frozen=True, slots=True)
class SideEvent:
    """Something that happened on one side, at ``t`` seconds since that side's start."""

    t: float
    side: str  # "A" | "B"
    what: str  # a knob name, "note", "restart", "load" or "gap"
    detail: str
    marker: str | None  # the graph marker's label, None when not drawn (a refused change)


@dataclass(frozen=True)
class SideView:
    """One side of a comparison as the graphs show it: times since the side's start."""

    name: str
    data: JournalData
    origin: float  # the journal's start (0) or the range's start
    span: float  # seconds from origin to the side's last event
    series: dict[str, list[Point]]
    events: list[SideEvent]

    @property
    def markers(self) -> list[tuple[float, str]]:
        return [(e.t, e.marker) for e in self.events if e.marker is not None]


def side_origin(data: JournalData) -> float:
    """Time 0 of a side: the range's start, or the journal's (session) start."""
    return data.t_from if data.t_from is not None else 0.0


def load_series(data: JournalData, attr: str, origin: float) -> list[Point]:
    """The load driver's per-interval numbers, with a gap where a phase stopped or failed
    (as on the live screen: a stopped load leaves no flat line behind)."""
    points: list[Point] = [(p.t - origin, float(getattr(p, attr))) for p in data.loads]
    points += [(s.end - origin, None) for s in data.phases if s.ended_by in ("stop", "failed")]
    return sorted(points, key=lambda point: point[0])  # stable: a stop follows its last load


def side_events(name: str, data: JournalData, origin: float) -> list[SideEvent]:
    """Changes, notes, restarts, gaps and load starts/stops, by time.  A load that starts or
    stops within an interval of the side's own start or end is where the run begins or
    ends, not a change within it, and is left out."""
    out: list[SideEvent] = []
    for ch in data.changes:
        if ch.result == "ok":
            detail = f"{fmt_knob(ch.old)} → {fmt_knob(ch.new)}"
            marker: str | None = f"{name}: {ch.knob}={fmt_knob(ch.new)}"
        else:
            detail = f"{fmt_knob(ch.old)} → {ch.requested} ({ch.result})"
            marker = None
        out.append(SideEvent(ch.t - origin, name, ch.knob, detail, marker))
    for note in data.notes:
        out.append(SideEvent(note.t - origin, name, "note", note.text, f"{name}: {note.text}"))
    for r in data.restarts:
        if r.step == "restart":
            out.append(
                SideEvent(r.t - origin, name, "restart", r.node, f"{name}: restart {r.node}")
            )
    for e in data.errors:
        if e.gap:
            out.append(SideEvent(e.t - origin, name, "gap", e.source, f"{name}: gap {e.source}"))
    edge = 1.5 * data.header.interval
    last = data.last_t if data.last_t is not None else origin
    for span in data.phases:
        if span.start - origin > edge:
            what = f"{span.workload} x{span.threads}"
            out.append(SideEvent(span.start - origin, name, "load", what, f"{name}: load {what}"))
        if span.ended_by in ("stop", "failed") and last - span.end > edge:
            label = f"{name}: load {span.ended_by}"
            out.append(SideEvent(span.end - origin, name, "load", span.ended_by, label))
    return sorted(out, key=lambda e: e.t)


def side_view(name: str, data: JournalData) -> SideView:
    origin = side_origin(data)
    series: dict[str, list[Point]] = {
        metric: [(row.t - origin, getattr(row, metric)) for row in data.rows]
        for metric in ROW_METRICS
    }
    for metric, attr in LOAD_METRICS.items():
        series[metric] = load_series(data, attr, origin)
    last = data.last_t if data.last_t is not None else origin
    return SideView(
        name=name,
        data=data,
        origin=origin,
        span=max(0.0, last - origin),
        series=series,
        events=side_events(name, data, origin),
    )


def window_points(points: Sequence[Point], t0: float, t1: float) -> list[Point]:
    """The points inside [t0, t1] without trailing gaps, so a graph's title shows each side's
    last value in the window rather than the gap where its load stopped."""
    inside = [p for p in points if t0 <= p[0] <= t1]
    while inside and inside[-1][1] is None:
        inside.pop()
    return inside
