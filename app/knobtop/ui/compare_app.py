"""CompareApp: two journals (or two time ranges of one) as overlaid graphs on a common relative
time axis, with each phase pair's B/A ratios and what differs in knobs (`knobtop compare`)."""
# Over 500 lines: the compare screen's overlay graphs, phase table and knob differences
# share one layout and one time axis; the numbers come from analysis/compare.py.

from __future__ import annotations

import io
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import zip_longest
from typing import Any, ClassVar

from rich.style import Style
from rich.text import Text
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Grid
from textual.content import Content
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from knobtop.analysis.compare import (
    RATIO_METRICS,
    Comparison,
    PhasePair,
    fmt_ratio,
    ratio_verdict,
)
from knobtop.analysis.journaldata import JournalData, PhaseStats
from knobtop.analysis.report import fmt_knob, fmt_num
from knobtop.analysis.report import report_warnings as journal_warnings
from knobtop.analysis.times import fmt_rel
from knobtop.config import UiConfig
from knobtop.safefile import NotOwnFile, write_new
from knobtop.ui.base import ScreenApp
from knobtop.ui.widgets.graph_grid import GRAPHS, GraphSpec
from knobtop.ui.widgets.metric_graph import (
    MARKER_GLYPH,
    OVERLAY_MARKER_GLYPH,
    SHARED_MARKER_GLYPH,
    MetricGraph,
    Point,
)

_SPECS = {spec.metric: spec for spec in GRAPHS}
COMPARE_GRAPHS: tuple[GraphSpec, ...] = tuple(
    _SPECS[name]
    for name in (
        "load_tps",
        "load_p95",
        "tps",
        "hit_ratio",
        "dirty_pct",
        "history_len",
        # Only on a wide screen:
        "checkpoint_age",
        "cpu",
        "qps",
    )
)
NARROW_GRAPHS = 6  # graphs shown on a narrow screen (the first ones)
ROW_METRICS = ("tps", "qps", "hit_ratio", "dirty_pct", "history_len", "checkpoint_age", "cpu")
LOAD_METRICS = {"load_tps": "tps", "load_p95": "p95"}  # graph metric -> LoadPoint attribute
ZOOMS = {"all": None, "5m": 300.0, "1m": 60.0}  # in the order key z cycles through them
SERIES = ((True, True), (True, False), (False, True))  # key s cycles: both, A only, B only
SERIES_NAMES = {(True, True): "A and B", (True, False): "A only", (False, True): "B only"}
NARROW_WIDTH = 120
NARROW_HEIGHT = 36
A_STYLE = "$text-primary bold"  # the colours of each side's graph line (MetricGraph's CSS)
B_STYLE = "$text-success bold"
WARN_STYLE = "$text-warning bold"


# ---------------------------------------------------------------------------------------------
# Each side on its own relative time axis (pure: no app needed)
# ---------------------------------------------------------------------------------------------
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


def pair_lines(pair: PhasePair, origins: tuple[float, float] = (0.0, 0.0)) -> list[str]:
    """The description of a phase pair, one short line per table row; its times are since
    each side's start (``origins``), like everything else on the screen."""

    def side(name: str, s: PhaseStats | None, origin: float) -> list[str]:
        if s is None:
            return [f"{name} —", "  (no partner)"]
        return [
            f"{name} #{s.number} {s.workload}",
            f"  x{s.threads} {fmt_rel(s.start - origin)}-{fmt_rel(s.end - origin)}",
        ]

    a, b = origins
    return [*side("A", pair.a, a), *side("B", pair.b, b), f"  by {pair.matched_by}"]


def pair_rows(
    pair: PhasePair, origins: tuple[float, float] = (0.0, 0.0)
) -> Iterator[tuple[str, str, str, str, float | None, int]]:
    """(description line, metric, A, B, B/A, better) per row of one pair: the numbers are
    compare.py's (PhaseStats medians and PhasePair.ratios), formatted as in its text output."""
    metrics = [
        (
            label,
            fmt_num(getattr(pair.a, name) if pair.a else None, digits),
            fmt_num(getattr(pair.b, name) if pair.b else None, digits),
            pair.ratios.get(name),
            better,
        )
        for name, label, digits, better in RATIO_METRICS
    ]
    for line, metric in zip_longest(pair_lines(pair, origins), metrics):
        label, a, b, value, better = metric if metric else ("", "", "", None, 0)
        yield line or "", label, a, b, value, better


def knob_rows(pair: PhasePair) -> Iterator[tuple[str, str, str, str]]:
    """(knob, "in force", A, B) for each knob in force that differs between the pair's two
    phases (a value, or "old → new" when it changed within the phase)."""
    if pair.a is None or pair.b is None:
        return
    if not pair.knobs:
        yield "knobs in force", "the same", "", ""
    for d in pair.knobs:  # the name goes where the table is widest, the ratios stay in view
        yield d.knob.removeprefix("innodb_"), "in force", fmt_knob(d.a), fmt_knob(d.b)


# ---------------------------------------------------------------------------------------------
# Widgets
# ---------------------------------------------------------------------------------------------
class FramedTable(DataTable[Text]):
    """A compare screen's table: a rounded border with its title, brighter when focused."""

    DEFAULT_CSS = """
    FramedTable {
        border: round $primary 50%;
        border-title-color: $text-accent;
    }
    FramedTable:focus {
        border: round $primary;
    }
    """


class HeaderBar(Static):
    """A compare screen's header: docked on top, one line per journal, never wrapped."""

    DEFAULT_CSS = """
    HeaderBar {
        dock: top;
        height: auto;
        background: $panel;
        color: $foreground;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """


class PhasePairTable(FramedTable):
    """Each pair of load phases: A, B and B/A of every metric, better/worse marked."""

    COMPONENT_CLASSES: ClassVar[set[str]] = DataTable.COMPONENT_CLASSES | {
        "phase-pair-table--better",
        "phase-pair-table--worse",
    }
    DEFAULT_CSS = """
    PhasePairTable > .phase-pair-table--better {
        color: $text-success;
        text-style: bold;
    }
    PhasePairTable > .phase-pair-table--worse {
        color: $text-error;
        text-style: bold;
    }
    """

    def __init__(
        self,
        pairs: Sequence[PhasePair],
        origins: tuple[float, float] = (0.0, 0.0),
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, id=id)
        self.pairs = list(pairs)
        self.origins = origins
        self.border_title = "Load phases: medians, B/A"
        self.border_subtitle = "✓ B better  ✗ B worse (by 2 % or more)"

    def on_mount(self) -> None:
        for name in ("phases", "metric", "A", "B", "B/A"):
            self.add_column(
                Text(name, justify="left" if name in ("phases", "metric") else "right"), key=name
            )
        self._fill()
        self.watch(self.app, "theme", self._restyle, init=False)

    def _restyle(self) -> None:
        row = self.cursor_row
        self.clear()
        self._fill()
        self.move_cursor(row=row)

    def _fill(self) -> None:
        get = self.get_component_rich_style
        styles = {
            1: get("phase-pair-table--better", partial=True),
            -1: get("phase-pair-table--worse", partial=True),
        }
        glyphs = {1: " ✓", -1: " ✗", 0: "  "}
        if not self.pairs:
            self.add_row(
                Text("Neither side has a load phase."), Text(""), Text(""), Text(""), Text("")
            )
            return
        for i, pair in enumerate(self.pairs):
            if i:
                self.add_row(*(Text("") for _ in range(5)))
            for line, label, a, b, value, better in pair_rows(pair, self.origins):
                verdict = ratio_verdict(value, better)
                ratio = Text(
                    fmt_ratio(value) + glyphs[verdict] if label else "",
                    justify="right",
                    style=styles.get(verdict, Style()),
                )
                self.add_row(
                    Text(line),
                    Text(label),
                    Text(a, justify="right"),
                    Text(b, justify="right"),
                    ratio,
                )
            for line, what, a, b in knob_rows(pair):
                self.add_row(Text(line), Text(what, style="italic"), Text(a, justify="right"),
                             Text(b, justify="right"), Text(""))


class KnobDiffTable(FramedTable):
    """Knobs that differ between A and B at start and at end, then each side's events."""

    def __init__(
        self, comparison: Comparison, sides: Sequence[SideView], *, id: str | None = None
    ) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, id=id)
        self.comparison = comparison
        self.sides = list(sides)
        self.border_title = "Knobs that differ, and events"

    def on_mount(self) -> None:
        for name in ("when", "knob", "A", "B"):
            self.add_column(name, key=name)
        c = self.comparison
        for when, diffs in (("at start", c.knobs_start), ("at end", c.knobs_end)):
            for d in diffs:
                self.add_row(Text(when), Text(d.knob), Text(fmt_knob(d.a)), Text(fmt_knob(d.b)))
        if not (c.knobs_start or c.knobs_end):
            self.add_row(Text("—"), Text("no knob differs"), Text(""), Text(""))
        events = sorted((e for side in self.sides for e in side.events), key=lambda e: e.t)
        for e in events:
            detail = Text(e.detail)
            a, b = (detail, Text("")) if e.side == "A" else (Text(""), detail)
            self.add_row(Text(f"{e.side} {fmt_rel(e.t)}"), Text(e.what), a, b)


class CompareHeader(HeaderBar):
    """Who is A and who is B (journal, server, length), the time window, and warnings."""

    def show(
        self,
        comparison: Comparison,
        sides: Sequence[SideView],
        t0: float,
        t1: float,
        zoom: str,
        shown: tuple[bool, bool],
    ) -> None:
        differs = comparison.server_differs
        lines: list[Content] = []
        for side, server, style in zip(
            sides, (comparison.server_a, comparison.server_b), (A_STYLE, B_STYLE), strict=True
        ):
            changes = sum(1 for e in side.events if e.marker is not None)
            lines.append(
                Content.assemble(
                    (f"{side.name} ", style),
                    (side.data.label, "bold"),
                    f"  {side.span:.1f} s, {len(side.data.rows)} samples, "
                    f"{changes} marker{'s' if changes != 1 else ''}  ",
                    (server, WARN_STYLE if differs else ""),
                )
            )
        parts: list[str | tuple[str, str]] = []
        if differs:
            parts.append((f"≠ {comparison.differs_words}  ", WARN_STYLE))
        window = "all" if zoom == "all" else f"zoom {zoom}"
        parts.append(f"since each side's start: {fmt_rel(t0)}-{fmt_rel(t1)} ({window})")
        parts.append(f"  {SERIES_NAMES[shown]}")
        # What the vertical lines in the graphs are (a change, note, restart, gap or load
        # start/stop of that side; the KnobDiffTable lists each).
        parts += ["  marks ", (f"{MARKER_GLYPH}A", A_STYLE), " ", (f"{OVERLAY_MARKER_GLYPH}B",
                  B_STYLE), f" {SHARED_MARKER_GLYPH}both"]
        warnings = [f"{side.name}: {w}" for side in sides for w in journal_warnings(side.data)]
        if warnings:
            parts.append(("  ⚠ " + "; ".join(warnings), WARN_STYLE))
        lines.append(Content.assemble(*parts))
        self.update(Content("\n").join(lines))


# ---------------------------------------------------------------------------------------------
# Screen and app
# ---------------------------------------------------------------------------------------------
# The keys of every compare screen: the tables' turn first, the time window's last; each
# screen puts its series keys between them (the footer shows them in that order).
TABLE_KEYS = [Binding("t", "toggle_tables", "Tables/graphs", id="compare.tables")]
WINDOW_KEYS = [
    Binding("z", "next_zoom", "Zoom", id="compare.zoom"),
    Binding("1", "zoom('1m')", "1 min", id="compare.zoom_1m", show=False),
    Binding("5", "zoom('5m')", "5 min", id="compare.zoom_5m", show=False),
    Binding("0", "zoom('all')", "All", id="compare.zoom_all", show=False),
    Binding("left_square_bracket", "pan(-0.5)", "Earlier", id="compare.earlier"),
    Binding("right_square_bracket", "pan(0.5)", "Later", id="compare.later"),
]


class WindowedScreen(Screen[None]):
    """What the compare screens share: a time window over every journal's graphs since its
    start (zoom, pan) and, below 120x36, graphs and tables taking turns (key t).  A screen
    sets ``span`` and ``tables`` (the table focused when the tables show) and paints."""

    DEFAULT_CSS = """
    WindowedScreen #graphs {
        grid-size: 3 3;
        grid-gutter: 0 1;
        height: 1fr;
    }
    WindowedScreen #tables {
        height: auto;
        max-height: 45%;
    }
    WindowedScreen #tables DataTable {
        width: 100%;
        height: auto;
        max-height: 100%;
    }
    WindowedScreen.-narrow #graphs {
        grid-size: 2 3;
    }
    WindowedScreen.-narrow #graphs .wide-only {
        display: none;
    }
    WindowedScreen.-narrow #tables {
        display: none;
        height: 1fr;
        max-height: 100%;
    }
    WindowedScreen.-narrow.-tables #graphs {
        display: none;
    }
    WindowedScreen.-narrow.-tables #tables {
        display: block;
    }
    """

    AUTO_FOCUS = ""  # _reflow focuses a table when the tables are on screen
    tables: ClassVar[type[DataTable[Any]]] = DataTable

    def __init__(self) -> None:
        super().__init__()
        self.span = 0.0
        self.zoom = "all"
        self.x0 = 0.0
        self.narrow: bool | None = None

    def paint(self) -> None:
        raise NotImplementedError

    def compose_graphs(self, labels: tuple[str, ...] = ("A", "B")) -> ComposeResult:
        """The grid of overlaid graphs (the last ones on a wide screen only)."""
        with Grid(id="graphs"):
            for i, spec in enumerate(COMPARE_GRAPHS):
                yield MetricGraph(spec.title, fmt=spec.fmt, unit=spec.unit,
                                  axis_fmt=spec.axis_fmt, labels=labels,
                                  id=f"graph-{spec.metric}",
                                  classes="wide-only" if i >= NARROW_GRAPHS else None)

    def on_mount(self) -> None:
        self._reflow(self.size.width, self.size.height)
        self.paint()

    def on_resize(self, event: events.Resize) -> None:
        self._reflow(event.size.width, event.size.height)

    def _reflow(self, width: int, height: int) -> None:
        narrow = width < NARROW_WIDTH or height < NARROW_HEIGHT
        if narrow != self.narrow:
            self.narrow = narrow
            self.set_class(narrow, "-narrow")
            self.refresh_bindings()
            self._focus_tables(not narrow or self.has_class("-tables"))

    def _focus_tables(self, tables_shown: bool) -> None:
        if tables_shown:
            self.query_one(self.tables).focus()
        else:
            self.set_focus(None)

    @property
    def x_range(self) -> tuple[float, float]:
        """The time window shown, in seconds since each side's start."""
        span = max(self.span, 1.0)
        window = ZOOMS[self.zoom]
        if window is None or window >= span:
            return 0.0, span
        x0 = min(max(0.0, self.x0), span - window)
        return x0, x0 + window

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "toggle_tables":
            return self.narrow  # on a wide screen the tables are always there
        if action == "pan":
            return ZOOMS[self.zoom] is not None
        return True

    def action_toggle_tables(self) -> None:
        tables = not self.has_class("-tables")
        self.set_class(tables, "-tables")
        self._focus_tables(tables)

    def action_next_zoom(self) -> None:
        names = list(ZOOMS)
        self.action_zoom(names[(names.index(self.zoom) + 1) % len(names)])

    def action_zoom(self, zoom: str) -> None:
        self.zoom = zoom
        self.x0 = 0.0
        self.refresh_bindings()
        self.paint()

    def action_pan(self, fraction: float) -> None:
        window = ZOOMS[self.zoom]
        if window is None:
            return
        self.x0 = min(max(0.0, self.x_range[0] + fraction * window), max(0.0, self.span - window))
        self.paint()


class CompareScreen(WindowedScreen):
    """Overlaid graphs over 0..max(duration A, duration B), the phase pairs' B/A ratios and
    the knob differences.  Below 120x36 the graphs and the tables take turns (key t)."""

    DEFAULT_CSS = """
    CompareScreen #tables {
        layout: horizontal;
    }
    CompareScreen #tables DataTable {
        width: 1fr;
    }
    CompareScreen.-narrow #tables {
        layout: vertical;
    }
    CompareScreen.-narrow #tables DataTable {
        width: 100%;
        max-height: 1fr;
    }
    """

    tables = PhasePairTable
    BINDINGS: ClassVar[list[Binding | tuple[str, str] | tuple[str, str, str]]] = [
        *TABLE_KEYS,
        Binding("s", "next_series", "A+B/A/B", id="compare.series"),
        Binding("a", "show(True, False)", "A only", id="compare.show_a", show=False),
        Binding("b", "show(False, True)", "B only", id="compare.show_b", show=False),
        Binding("o", "show(True, True)", "A and B", id="compare.show_both", show=False),
        *WINDOW_KEYS,
    ]

    def __init__(self, comparison: Comparison) -> None:
        super().__init__()
        self.comparison = comparison
        self.sides = (side_view("A", comparison.a), side_view("B", comparison.b))
        self.span = max(self.sides[0].span, self.sides[1].span)
        self.shown = (True, True)

    def compose(self) -> ComposeResult:
        yield CompareHeader(id="header")
        yield from self.compose_graphs()
        with Container(id="tables"):
            origins = (self.sides[0].origin, self.sides[1].origin)
            yield PhasePairTable(self.comparison.pairs, origins, id="phases")
            yield KnobDiffTable(self.comparison, self.sides, id="knobs")
        yield Footer()

    def paint(self) -> None:
        t0, t1 = self.x_range
        side_a, side_b = self.sides
        for spec in COMPARE_GRAPHS:
            graph = self.query_one(f"#graph-{spec.metric}", MetricGraph)
            graph.show_series(*self.shown)
            graph.set_data(
                window_points(side_a.series[spec.metric], t0, t1),
                side_a.markers,
                t0,
                t1,
                overlay=window_points(side_b.series[spec.metric], t0, t1),
                overlay_markers=side_b.markers,
            )
        header = self.query_one(CompareHeader)
        header.show(self.comparison, self.sides, t0, t1, self.zoom, self.shown)

    # -- keys ----------------------------------------------------------------------------------
    def action_show(self, a: bool, b: bool) -> None:
        self.shown = (a, b)
        self.paint()

    def action_next_series(self) -> None:
        self.action_show(*SERIES[(SERIES.index(self.shown) + 1) % len(SERIES)])


class CompareApp(ScreenApp):
    """`knobtop compare --format tui`: the comparison on one screen; q quits."""

    # The screens and widgets whose bindings this app shows (one keymap serves all).
    BINDING_CLASSES: ClassVar[tuple[type[Any], ...]] = (CompareScreen,)
    TITLE = "knobtop compare"
    BINDINGS: ClassVar[list[Binding | tuple[str, str] | tuple[str, str, str]]] = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("S", "save_svg", "Screenshot", id="app.screenshot", show=False),
    ]

    def __init__(self, comparison: Comparison, config: UiConfig | None = None) -> None:
        super().__init__(config)
        self.comparison = comparison
        self.compare_screen: Screen[None] = CompareScreen(comparison)
        self.screenshot_dir = comparison.a.path.parent  # next to journal A, as the live screen

    def action_save_svg(self) -> str | None:
        """The whole screen as an SVG next to journal A (a download in a browser)."""
        name = f"knobtop-compare-{self._stamp()}.svg"
        svg = self.export_screenshot()
        if self.is_web:
            self.deliver_text(io.StringIO(svg), save_filename=name, mime_type="image/svg+xml",
                              encoding="utf-8")
            self.notify(f"screenshot {name} sent to your browser", timeout=6, markup=False)
            return name
        try:
            # A new file of this user's own, never written through a link planted at the
            # name (NAME-2.svg when a screenshot of this second is there already).
            where = write_new(self.screenshot_dir, name, svg.encode())
        except NotOwnFile as exc:
            self.notify(f"screenshot not saved: {exc}", severity="error", timeout=12,
                        markup=False)
            return None
        except OSError as exc:
            self.notify(f"screenshot not saved to {self.screenshot_dir / name}: "
                        f"{exc.strerror or exc}. Fix: make {self.screenshot_dir} writable, or "
                        "run knobtop compare with journal A in a folder you can write to.",
                        severity="error", timeout=12, markup=False)
            return None
        self.notify(f"screenshot saved: {where}", timeout=6, markup=False)
        return str(where)

    def on_mount(self) -> None:
        self.apply_config()
        self.push_screen(self.compare_screen)
