"""CompareApp: two journals (or two time ranges of one) as overlaid graphs on a common relative
time axis, with each phase pair's B/A ratios and what differs in knobs (`knobtop compare`).

Each side's series and events are compare_sides.py's, the tables and the header
compare_widgets.py's; the numbers come from analysis/compare.py."""

from __future__ import annotations

import io
from typing import Any, ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container, Grid
from textual.screen import Screen
from textual.widgets import DataTable, Footer

from knobtop.analysis.compare import Comparison
from knobtop.config import UiConfig
from knobtop.safefile import NotOwnFile, write_new
from knobtop.ui.base import ScreenApp
from knobtop.ui.compare_sides import SERIES, side_view, window_points
from knobtop.ui.compare_widgets import CompareHeader, KnobDiffTable, PhasePairTable
from knobtop.ui.widgets.graph_grid import GRAPHS, GraphSpec
from knobtop.ui.widgets.metric_graph import MetricGraph

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
ZOOMS = {"all": None, "5m": 300.0, "1m": 60.0}  # in the order key z cycles through them
NARROW_WIDTH = 120
NARROW_HEIGHT = 36


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
