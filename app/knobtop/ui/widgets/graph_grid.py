"""GraphGrid: the live graphs, fed from the MetricBoard at a paint rate of its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from textual.app import ComposeResult
from textual.containers import Container, Grid

from knobtop.metrics.board import MetricBoard
from knobtop.metrics.catalog import page_rows
from knobtop.ui.widgets.incident_page import IncidentPage
from knobtop.ui.widgets.metric_graph import MetricGraph
from knobtop.ui.widgets.units import unit_of


@dataclass(frozen=True)
class GraphSpec:
    """One graph of a page: its metric and title; how its values read comes from the
    metric's unit (``units.UNITS``)."""

    metric: str
    title: str

    @property
    def unit(self) -> str:
        return unit_of(self.metric).suffix

    @property
    def fmt(self) -> Callable[[float], str]:
        return unit_of(self.metric).fmt

    @property
    def axis_fmt(self) -> Callable[[float], str]:
        return unit_of(self.metric).axis


#: Graph pages (keys 1-3, 5): the overview, InnoDB's internals, MyRocks, LinkBench; each
#: page's graphs are the rows of metrics/catalog.py that name it, in the catalog's order.
PAGES: dict[str, tuple[str, tuple[GraphSpec, ...]]] = {
    page: (title, tuple(GraphSpec(m.name, m.title_on(page)) for m in rows))
    for page, (title, rows) in page_rows().items()
}
GRAPHS: tuple[GraphSpec, ...] = PAGES["overview"][1]

#: Page 4 holds no graphs: what the server is doing right now (its own widget).
INCIDENT = "incident"

#: The graph windows a person can pick (seconds): 1, 2, 5, 15 and 60 minutes.
WINDOWS: tuple[float, ...] = (60.0, 120.0, 300.0, 900.0, 3600.0)


def graph_id(page: str, metric: str) -> str:
    """The overview keeps the plain ids (``graph-tps``); other pages prefix theirs."""
    return f"graph-{metric}" if page == "overview" else f"{page}-{metric}"


class GraphPage(Grid):
    """One page of graphs sharing the grid's time window."""

    DEFAULT_CSS = """
    GraphPage {
        grid-size: 3;
        grid-gutter: 0 1;
        height: 1fr;
    }
    GraphPage MetricGraph {
        height: 1fr;
    }
    """

    def __init__(self, page: str, specs: tuple[GraphSpec, ...], classes: str = "") -> None:
        super().__init__(id=f"page-{page}", classes=classes)
        self.page = page
        self.specs = specs
        self._ready = False  # its graphs are mounted (on_mount)
        self._waiting: tuple[MetricBoard, float] | None = None  # a draw asked before that

    def compose(self) -> ComposeResult:
        for spec in self.specs:
            yield MetricGraph(spec.title, fmt=spec.fmt, unit=spec.unit, axis_fmt=spec.axis_fmt,
                              time_axis=True, sliding=True,
                              id=graph_id(self.page, spec.metric))

    def on_mount(self) -> None:
        self._ready = True
        if self._waiting is not None:  # shown for the first time: draw what was asked
            board, window = self._waiting
            self._waiting = None
            self.draw(board, window)

    def draw(self, board: MetricBoard, window: float) -> None:
        if not self._ready:  # just mounted (GraphGrid.show_page): its graphs come next
            self._waiting = (board, window)
            return
        # A strip chart: the newest sample sits at the right edge and history scrolls left.
        t_end = board.now
        t_start = t_end - window
        # A person's changes, restarts, notes and marks are full-height lines with a tag;
        # load phases and sampling gaps are light ticks, so they never bury the line.
        shown = [m for m in board.markers if m.t >= t_start]
        markers = [(m.t, m.tag or m.label) for m in shown if m.full]
        ticks = [(m.t, m.tag or m.label) for m in shown if not m.full]
        for spec in self.specs:
            graph = self.query_one(f"#{graph_id(self.page, spec.metric)}", MetricGraph)
            series = board.series.get(spec.metric)
            points = series.window(t_start) if series is not None else ()
            graph.set_data(points, markers, t_start, t_end, ticks=ticks)


class GraphGrid(Container):
    """The graph pages (one shown at a time), with the change/load markers on every graph."""

    DEFAULT_CSS = """
    GraphGrid {
        height: 1fr;
    }
    GraphGrid > GraphPage.-hidden, GraphGrid > IncidentPage.-hidden {
        display: none;
    }
    """

    window = 120.0  # seconds of history on screen (one of WINDOWS)

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.page = "overview"

    def compose(self) -> ComposeResult:
        # Only the page on screen: each graph is a widget with its own message pump (~90 KB),
        # so the other pages are mounted when first shown (show_page), not at start (24 of
        # the 33 graphs; bench row 5d).
        yield GraphPage(self.page, PAGES[self.page][1])
        yield IncidentPage(id=f"page-{INCIDENT}", classes="-hidden")

    @property
    def page_title(self) -> str:
        return "Incident" if self.page == INCIDENT else PAGES[self.page][0]

    def show_page(self, page: str) -> None:
        self.page = page
        if page in PAGES and not self.query(f"#page-{page}"):
            self.mount(GraphPage(page, PAGES[page][1]))
        for grid in self.query(GraphPage):
            grid.set_class(grid.page != page, "-hidden")
        self.query_one(IncidentPage).set_class(page != INCIDENT, "-hidden")

    def draw(self, board: MetricBoard) -> None:
        if self.page == INCIDENT:  # drawn from incident events, not from the board
            return
        self.query_one(f"#page-{self.page}", GraphPage).draw(board, self.window)
