"""The compare screen for three or more journals (issue 19 part 5): every journal's graphs
overlaid on one time axis since each one's start, one colour each with a legend, and the
load phases as verdict tables (a row per journal against the baseline's, from
analysis/merge.merge_phases)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Container
from textual.content import Content
from textual.widgets import Footer

from knobtop.analysis.journaldata import JournalData
from knobtop.analysis.report import report_warnings, server_label
from knobtop.analysis.results import Results
from knobtop.analysis.seedtables import sweep
from knobtop.analysis.times import fmt_rel
from knobtop.config import UiConfig
from knobtop.ui.base import ScreenApp
from knobtop.ui.compare_app import (
    COMPARE_GRAPHS,
    TABLE_KEYS,
    WINDOW_KEYS,
    CompareApp,
    WindowedScreen,
)
from knobtop.ui.compare_sides import SideView, side_view, window_points
from knobtop.ui.compare_widgets import A_STYLE, B_STYLE, WARN_STYLE, FramedTable, HeaderBar
from knobtop.ui.widgets.metric_graph import (
    MARKER_GLYPH,
    MAX_SERIES,
    OVERLAY_MARKER_GLYPH,
    MetricGraph,
)

# Each journal's colour in the header and the verdict table, as its line in the graphs
# (MetricGraph's series A, B, then its s3..s5 colours).
SERIES_STYLES = (A_STYLE, B_STYLE, "$text-error bold", "$text-accent bold", "$secondary bold")
assert len(SERIES_STYLES) == MAX_SERIES


@dataclass(frozen=True)
class ManyComparison:
    """Three or more journals (the baseline first) and their phases' verdict tables."""

    journals: Sequence[tuple[str, JournalData]]
    tables: dict[str, Results]  # by workload

    @property
    def first(self) -> JournalData:
        return self.journals[0][1]


def letter(i: int) -> str:
    return chr(ord("A") + i)


class ManyHeader(HeaderBar):
    """Each journal's letter in its colour, its label, length and server; the window."""

    def show(self, sides: Sequence[SideView], t0: float, t1: float, zoom: str,
             only: int | None) -> None:
        servers = [server_label(side.data.header) for side in sides]
        differ = len(set(servers)) > 1
        lines = [Content.assemble(
            (f"{side.name} ", SERIES_STYLES[i]), (side.data.label, "bold"),
            f"  {side.span:.1f} s, {len(side.data.rows)} samples  ",
            (servers[i], WARN_STYLE if differ else ""))
            for i, side in enumerate(sides)]
        window = "all" if zoom == "all" else f"zoom {zoom}"
        shown = "all journals" if only is None else f"{sides[only].name} only"
        parts: list[str | tuple[str, str]] = [
            f"since each one's start: {fmt_rel(t0)}-{fmt_rel(t1)} ({window})  {shown}  marks ",
            (f"{MARKER_GLYPH}A", A_STYLE), f" {OVERLAY_MARKER_GLYPH}others"]
        warnings = [f"{s.name}: {w}" for s in sides for w in report_warnings(s.data)]
        if warnings:
            parts.append(("  ⚠ " + "; ".join(warnings), WARN_STYLE))
        lines.append(Content.assemble(*parts))
        self.update(Content("\n").join(lines))


class PhaseVerdictTable(FramedTable):
    """The load phases by workload: a row per journal, a column per thread count, each cell
    its median TPS with the ratio and verdict against the baseline journal's."""

    def __init__(self, comparison: ManyComparison, *, id: str | None = None) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, id=id)
        self.comparison = comparison
        base = comparison.journals[0][0]
        self.border_title = f"Load phases: median TPS per phase, against {base}"
        self.border_subtitle = "verdict once both have 2+ phases (CI and rank test, Holm)"

    def on_mount(self) -> None:
        tables = [(w, sweep(r)) for w, r in self.comparison.tables.items()]
        width = max((len(t.header) for _, t in tables), default=2)
        self.add_column(Text("workload / journal"), key="journal")
        for i in range(1, width):
            self.add_column(Text("", justify="right"), key=f"c{i}")
        labels = [label for label, _ in self.comparison.journals]
        if not tables:
            self.add_row(Text("No journal has a load phase with a TPS."),
                         *(Text("") for _ in range(1, width)))
        for n, (workload, table) in enumerate(tables):
            if n:
                self.add_row(*(Text("") for _ in range(width)))
            pad = [Text("") for _ in range(width - len(table.header))]
            self.add_row(Text(workload, style="bold"),
                         *(Text(f"x{h}", justify="right", style="bold")
                           for h in table.header[1:]), *pad)
            for row in table.rows:
                i = labels.index(row[0]) if row[0] in labels else 0
                self.add_row(Text.assemble((letter(i), "bold"), " ", row[0]),
                             *(Text(cell, justify="right") for cell in row[1:]), *pad)


class ManyCompareScreen(WindowedScreen):
    """Every journal's graphs overlaid over 0..the longest one's length, and the phases'
    verdict tables.  Below 120x36 the graphs and the tables take turns (key t)."""

    tables = PhaseVerdictTable
    BINDINGS: ClassVar[list[Binding | tuple[str, str] | tuple[str, str, str]]] = [
        *TABLE_KEYS,
        Binding("s", "next_series", "All/each", id="compare.series"),
        *WINDOW_KEYS,
    ]

    def __init__(self, comparison: ManyComparison) -> None:
        super().__init__()
        self.comparison = comparison
        self.sides = [side_view(letter(i), data)
                      for i, (_, data) in enumerate(comparison.journals)]
        self.span = max(side.span for side in self.sides)
        self.only: int | None = None

    def compose(self) -> ComposeResult:
        yield ManyHeader(id="header")
        yield from self.compose_graphs(tuple(side.name for side in self.sides))
        with Container(id="tables"):
            yield PhaseVerdictTable(self.comparison, id="verdicts")
        yield Footer()

    def paint(self) -> None:
        t0, t1 = self.x_range
        for spec in COMPARE_GRAPHS:
            graph = self.query_one(f"#graph-{spec.metric}", MetricGraph)
            series = [(window_points(side.series[spec.metric], t0, t1), side.markers)
                      for side in self.sides]
            graph.show_only(self.only)
            graph.set_data(series[0][0], series[0][1], t0, t1, overlay=series[1][0],
                           overlay_markers=series[1][1], more=series[2:])
        self.query_one(ManyHeader).show(self.sides, t0, t1, self.zoom, self.only)

    def action_next_series(self) -> None:
        """All journals, then each one alone, then all again."""
        n = len(self.sides)
        self.only = 0 if self.only is None else (None if self.only + 1 >= n else self.only + 1)
        self.paint()


class ManyCompareApp(CompareApp):
    """`knobtop compare A B C ...` on a terminal: every journal on one screen; q quits,
    S saves a screenshot next to the first journal."""

    BINDING_CLASSES: ClassVar[tuple[type[Any], ...]] = (ManyCompareScreen,)

    def __init__(self, comparison: ManyComparison, config: UiConfig | None = None) -> None:
        ScreenApp.__init__(self, config)
        self.many = comparison
        self.compare_screen = ManyCompareScreen(comparison)
        self.screenshot_dir = comparison.first.path.parent


__all__ = ["ManyCompareApp", "ManyCompareScreen", "ManyComparison"]
