"""A braille line plot of one time series, or two overlaid, with vertical change markers.

Layout at 40x6 (a ramp with a gap at 60-70 s, a knob change at 40 s, a note at 90 s, a load
phase change at 20 s)::

    tps 1.20K/s                      0-1.20K   <- title, latest value+unit, y range (holds it)
    1.20K     ╷   │io_cap=1000 ⢀⣀⡠note│⠉   <- margin: y max; ticks (load phases) on the top row
                     │        ⢀⣀⡠⠤⠒│⠉⠁         only; each full-height line's tag beside it
                     │ ⢀⣀⡠⠤  ⠈⠁    │
                ⢀⣀⠤⠤⠒│⠉⠁           │
        0 ⣀⠤⠔⠒⠊⠉⠁    │             │           <- ... and the y minimum (usually 0) at the bottom

Full-height lines are for what a person did (``markers``); load phases and gaps are ``ticks``.
Data first: lines and ticks are drawn under the series (a cell holding dots shows the dots),
and repeated on the time axis below the plot where there is one.  Each line's tag goes right
of it, or left when there is no room, whole, on a plot row where it hides no dot, newest
first, never over another line or tag (``place_tags``); a tag with no such place is left
out, never cut (the journal pane lists every change).

Everything the widget shows is computed by the pure helpers of graph_math
(``column_means`` -> ``y_range`` -> ``rasterize`` -> braille text), so they can be tested
without an app; graph_strips turns their output into pre-styled ``Strip``s.  The widget builds
those once per (data version, size) and serves them from ``render_line``.

Overlay (``set_data(..., overlay=...)``, used by ``knobtop compare``): a second series "B" is
drawn in the same plot on the same y range (``shared_y_range``), each series rasterised on its
own and the dot masks OR-ed, so a cell holds the dots of both.  ``overlay_owners`` says whose
dots a cell holds, which picks its style (A, B, or both).  Without colour (NO_COLOR) the title
names each side's latest value ("A 1.20K  B 1.41K"), B's markers are dashed (``┆``) and
``show_series`` can hide either line.  ``more`` adds series C.. (up to MAX_SERIES, compare of
N journals), each in a colour of its own; ``show_only`` draws one of them alone.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import ClassVar

from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from knobtop.metrics.board import Points
from knobtop.ui.widgets.graph_math import (
    EMPTY,
    MARGIN,
    MARKER_GLYPH,
    MAX_SERIES,
    MIN_PLOT_COLS,
    NEWEST_GLYPH,
    NO_VALUE,
    OVERLAY_MARKER_GLYPH,
    OWNER_A,
    OWNER_B,
    OWNER_BOTH,
    OWNER_SEVERAL,
    RANGE_SEP,
    SHARED_MARKER_GLYPH,
    TICK_GLYPH,
    Point,
    axis_label,
    braille_char,
    braille_mask,
    cell_aligned,
    cells_text,
    column_bitmaps,
    column_means,
    default_fmt,
    latest_value,
    marker_glyphs,
    merge_masks,
    nice_max,
    nice_step,
    overlay_owners,
    owner_runs,
    place_tags,
    rasterize,
    scale_to_row,
    series_owners,
    shared_y_range,
    span_label,
    time_axis_text,
    time_to_col,
    value_range,
    y_range,
)
from knobtop.ui.widgets.graph_strips import (
    GraphStyles,
    axis_strip,
    line_rows,
    owned_rows,
    place_marks,
    series_styles,
    title_strip,
)

# The graph's helpers keep their old address here: importers say metric_graph.X.
__all__ = [
    "EMPTY", "MARGIN", "MARKER_GLYPH", "MAX_SERIES", "MIN_PLOT_COLS", "NEWEST_GLYPH", "NO_VALUE",
    "OVERLAY_MARKER_GLYPH", "OWNER_A", "OWNER_B", "OWNER_BOTH", "OWNER_SEVERAL", "RANGE_SEP",
    "SHARED_MARKER_GLYPH", "TICK_GLYPH", "MetricGraph", "Point", "axis_label", "braille_char",
    "braille_mask", "cell_aligned", "cells_text", "column_bitmaps", "column_means", "default_fmt",
    "latest_value", "merge_masks", "nice_max", "nice_step", "overlay_owners", "owner_runs",
    "place_tags", "rasterize", "scale_to_row", "series_owners", "shared_y_range", "span_label",
    "time_axis_text", "time_to_col", "value_range", "y_range",
]


class MetricGraph(Widget):
    """One metric over time as a braille line, with knob/load changes as vertical markers.

    Call ``set_data`` whenever the data may have changed (e.g. every tick); it repaints only
    if the inputs differ.  Strips are built once per (data version, size) and cached.
    With ``overlay`` a second series is drawn over the first (see the module docstring).
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "metric-graph--line",
        "metric-graph--marker",
        "metric-graph--axis",
        "metric-graph--title",
        "metric-graph--value",
        "metric-graph--overlay",
        "metric-graph--both",
        "metric-graph--s3",
        "metric-graph--s4",
        "metric-graph--s5",
    }

    # Theme variables only.  $text-primary / $text-accent / $text-warning are the theme's
    # contrast-adjusted $primary / $accent / $warning: one-dot-wide braille needs the contrast.
    DEFAULT_CSS = """
    MetricGraph {
        height: 1fr;
        min-height: 3;
    }
    MetricGraph > .metric-graph--title {
        color: $foreground;
        text-style: bold;
    }
    MetricGraph > .metric-graph--value {
        color: $text-accent;
        text-style: bold;
    }
    MetricGraph > .metric-graph--line {
        color: $text-primary;
    }
    MetricGraph > .metric-graph--marker {
        color: $text-warning;
    }
    MetricGraph > .metric-graph--axis {
        color: $text-muted;
    }
    MetricGraph > .metric-graph--overlay {
        color: $text-success;
    }
    MetricGraph > .metric-graph--both {
        color: $foreground;
    }
    MetricGraph > .metric-graph--s3 {
        color: $text-error;
    }
    MetricGraph > .metric-graph--s4 {
        color: $text-accent;
    }
    MetricGraph > .metric-graph--s5 {
        color: $secondary;
    }
    """

    def __init__(
        self,
        title: str,
        *,
        fmt: Callable[[float], str] = default_fmt,
        unit: str = "",
        axis_fmt: Callable[[float], str] | None = None,  # the y labels' (default: fmt)
        labels: tuple[str, ...] = ("A", "B"),
        time_axis: bool = False,
        sliding: bool = False,  # a window that moves with each sample: see cell_aligned
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._graph_title = title
        self._fmt = fmt
        self._unit = unit
        self._axis_fmt = fmt if axis_fmt is None else axis_fmt
        self._labels = labels
        self._time_axis = time_axis
        self._sliding = sliding
        self._points: Sequence[Point] = ()
        self._markers: tuple[tuple[float, str], ...] = ()
        self._ticks: tuple[tuple[float, str], ...] = ()
        self._overlay: tuple[Point, ...] | None = None
        self._overlay_markers: tuple[tuple[float, str], ...] = ()
        self._more: tuple[tuple[tuple[Point, ...], tuple[tuple[float, str], ...]], ...] = ()
        self._only: int | None = None  # with ``more``: the one series drawn (None: all)
        self._shown = (True, True)
        self._t_start = 0.0
        self._t_end = 0.0
        self._data_key: object = None
        self._data_version = 0
        self._strips_key: tuple[int, int, int] | None = None
        self._styles: GraphStyles | None = None
        self._strips: list[Strip] = []

    def set_data(
        self,
        points: Sequence[tuple[float, float | None]],
        markers: Sequence[tuple[float, str]],
        t_start: float,
        t_end: float,
        *,
        overlay: Sequence[tuple[float, float | None]] | None = None,
        overlay_markers: Sequence[tuple[float, str]] = (),
        ticks: Sequence[tuple[float, str]] = (),
        more: Sequence[tuple[Sequence[Point], Sequence[tuple[float, str]]]] = (),
    ) -> None:
        """Plot ``points`` ((t, value), None = gap) over [t_start, t_end] with ``markers``.

        ``points`` must be sorted by t.  They are copied (a few microseconds for thousands of
        points), so the caller may keep appending to its deque (at run time an iterator works
        too).  Markers (t, tag) are full-height lines with their tag beside them where there
        is room; ``ticks`` (t, tag) are light marks on the top plot row only (load phases).
        Markers outside [t_start, t_end] are not drawn.  Nothing is repainted when length,
        first/last point, markers, ticks and t range are unchanged.

        ``overlay`` (sorted by t, on the same time axis) is drawn as series B over ``points``
        (series A) on one y range, with ``overlay_markers`` as B's markers; None (the default)
        plots ``points`` alone, exactly as before.  ``more`` adds series C, D, ... (points,
        markers) over both, up to MAX_SERIES in all, each in its own colour.
        """
        pts = points if isinstance(points, (tuple, Points)) else tuple(points)
        n = len(pts)
        markers_key = tuple(markers)
        ticks_key = tuple(ticks)
        first, last = (pts[0], pts[-1]) if n else (None, None)
        key: tuple[object, ...] = (n, first, last, markers_key, ticks_key, t_start, t_end)
        over: tuple[Point, ...] | None = None
        over_markers: tuple[tuple[float, str], ...] = ()
        if overlay is not None:
            over = overlay if isinstance(overlay, tuple) else tuple(overlay)
            over_markers = tuple(overlay_markers)
            m = len(over)
            key += (m, over[0] if m else None, over[-1] if m else None, over_markers)
        extra = tuple((tuple(p), tuple(mk)) for p, mk in more)[:MAX_SERIES - 2]
        for p, mk in extra:
            key += (len(p), p[0] if p else None, p[-1] if p else None, mk)
        if key == self._data_key:
            return
        self._data_key = key
        self._points = pts
        self._markers = markers_key
        self._ticks = ticks_key
        self._overlay = over
        self._overlay_markers = over_markers
        self._more = extra
        self._t_start = t_start
        self._t_end = t_end
        self._data_version += 1
        self._repaint()

    @property
    def shown(self) -> tuple[bool, bool]:
        """Whether series A and series B (the overlay) are drawn."""
        return self._shown

    def show_series(self, a: bool = True, b: bool = True) -> None:
        """Draw only some series of an overlay; the y range still covers both, so flipping
        between A and B shows their difference at one scale.  Hidden lines take their
        markers with them; the title keeps both latest values."""
        if (a, b) == self._shown:
            return
        self._shown = (a, b)
        self._data_version += 1
        self._repaint()

    def show_only(self, series: int | None) -> None:
        """With ``more``: draw only series ``series`` (0 = A), or all (None); the y range
        still covers every series."""
        if series == self._only:
            return
        self._only = series
        self._data_version += 1
        self._repaint()

    def _repaint(self) -> None:
        """Repaint the rows that changed, not the whole graph.

        A new sample at 1 Hz usually changes the title and the newest column: rebuilding
        the rows here and handing Textual only the ones that differ saves it restyling
        (and the terminal redrawing) the rest.  Before the first paint, after a resize or a
        style change, everything is repainted."""
        width, height = self.size
        if (self._strips_key is None or self._strips_key[1:] != (width, height)
                or width <= 0 or height <= 0):
            self.refresh()
            return
        old = self._strips
        new = self._build(width, height)
        self._strips, self._strips_key = new, (self._data_version, width, height)
        if len(old) != len(new):
            self.refresh()
            return
        changed = [y for y, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
        regions: list[Region] = []
        for y in changed:  # consecutive rows as one region
            if regions and regions[-1].bottom == y:
                last = regions[-1]
                regions[-1] = Region(last.x, last.y, last.width, last.height + 1)
            else:
                regions.append(Region(0, y, width, 1))
        if regions:
            self.refresh(*regions)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        # Theme / CSS changed (also called for every descendant when an ancestor's classes
        # change): the cached styles and pre-styled strips are stale.
        self._styles = None
        self._strips_key = None

    def _get_styles(self) -> GraphStyles:
        # Widget.refresh() empties Textual's own component-style cache, and a component style
        # walks every ancestor for the background; at one refresh per tick that was a third of
        # the build cost, so the resolved styles are kept until notify_style_update.
        if self._styles is None:
            get = self.get_component_rich_style
            self._styles = GraphStyles(
                base=self.rich_style,
                title=get("metric-graph--title"),
                value=get("metric-graph--value"),
                line=get("metric-graph--line"),
                marker=get("metric-graph--marker"),
                axis=get("metric-graph--axis"),
                overlay=get("metric-graph--overlay"),
                both=get("metric-graph--both"),
                more=tuple(get(f"metric-graph--s{n}") for n in range(3, MAX_SERIES + 1)),
            )
        return self._styles

    def render_line(self, y: int) -> Strip:
        width, height = self.size
        key = (self._data_version, width, height)
        if key != self._strips_key:
            self._strips = self._build(width, height)
            self._strips_key = key
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(width, self._get_styles().base)

    # -- building ------------------------------------------------------------------------------
    def _latest_text(self, points: Sequence[Point] | None = None) -> str:
        points = self._points if points is None else points
        value = points[-1][1] if points else None
        if value is None:
            return NO_VALUE
        return f"{self._fmt(value)}{self._unit}"

    def _build(self, width: int, height: int) -> list[Strip]:
        if width <= 0 or height <= 0:
            return []
        if self._more:
            return self._build_many(width, height)
        if self._overlay is not None:
            return self._build_overlay(width, height, self._overlay)
        styles = self._get_styles()
        margin = MARGIN if width >= MARGIN + MIN_PLOT_COLS else 0
        cols, plot_rows = width - margin, height - 1
        axis = self._time_axis and plot_rows >= 3  # the bottom row becomes the time axis
        if axis:
            plot_rows -= 1
        t0, t1 = self._t_start, self._t_end
        if self._sliding:
            t0, t1 = cell_aligned(t0, t1, cols)
        columns = column_means(self._points, t0, t1, cols * 2)
        lo, hi = value_range(columns, latest_value(self._points))
        masks = rasterize(columns, lo, hi, cols, plot_rows)
        hi_label, lo_label = axis_label(hi, self._axis_fmt), axis_label(lo, self._axis_fmt)

        marks = place_marks(masks, plot_rows, cols, self._markers, self._ticks, t0, t1,
                            styles.marker)
        strips = [title_strip(self._graph_title, width,
                              [Segment(self._latest_text(), styles.value)],
                              lo_label, hi_label, -1, styles)]
        strips += line_rows(width, margin, (hi_label, lo_label), masks, marks.row_runs, styles)
        if axis:
            strips.append(axis_strip(width, margin, t0, t1, marks, styles))
        return strips

    def _build_overlay(self, width: int, height: int, overlay: Sequence[Point]) -> list[Strip]:
        styles = self._get_styles()
        show_a, show_b = self._shown
        margin = MARGIN if width >= MARGIN + MIN_PLOT_COLS else 0
        cols, plot_rows = width - margin, height - 1
        t0, t1 = self._t_start, self._t_end
        columns_a = column_means(self._points, t0, t1, cols * 2)
        columns_b = column_means(overlay, t0, t1, cols * 2)
        latest = [v for v in (latest_value(self._points), latest_value(overlay))
                  if v is not None and math.isfinite(v)]
        lo, hi = y_range([value for _, value, _ in (*columns_a, *columns_b)] + latest)
        masks_a = rasterize(columns_a if show_a else [], lo, hi, cols, plot_rows)
        masks_b = rasterize(columns_b if show_b else [], lo, hi, cols, plot_rows)
        hi_label, lo_label = axis_label(hi, self._axis_fmt), axis_label(lo, self._axis_fmt)

        glyphs, newest_col = marker_glyphs(
            ((show_a, self._markers), (show_b, self._overlay_markers)), t0, t1, cols)
        newest_x = margin + newest_col if newest_col >= 0 else -1
        strips = [
            title_strip(self._graph_title, width, self._legend(overlay, styles), lo_label,
                        hi_label, newest_x, styles)
        ]
        owner_style = {OWNER_A: styles.line, OWNER_B: styles.overlay, OWNER_BOTH: styles.both}
        rows = [(cells_text(merge_masks(masks_a[r], masks_b[r])),
                 overlay_owners(masks_a[r], masks_b[r])) for r in range(plot_rows)]
        return strips + owned_rows(width, margin, (hi_label, lo_label), rows,
                                   glyphs, owner_style, styles)

    def _build_many(self, width: int, height: int) -> list[Strip]:
        """Three or more series on one y range (compare of N journals): each in its colour,
        a cell with dots of several in the "both" colour; A's markers solid, the others'
        dashed, several in one column doubled."""
        styles = self._get_styles()
        series = [(self._points, self._markers),
                  (self._overlay or (), self._overlay_markers), *self._more]
        shown = [self._only is None or self._only == i for i in range(len(series))]
        margin = MARGIN if width >= MARGIN + MIN_PLOT_COLS else 0
        cols, plot_rows = width - margin, height - 1
        t0, t1 = self._t_start, self._t_end
        columns = [column_means(points, t0, t1, cols * 2) for points, _ in series]
        latest = [v for points, _ in series if (v := latest_value(points)) is not None
                  and math.isfinite(v)]
        lo, hi = y_range([value for cs in columns for _, value, _ in cs] + latest)
        masks = [rasterize(cs if show else [], lo, hi, cols, plot_rows)
                 for cs, show in zip(columns, shown, strict=True)]
        hi_label, lo_label = axis_label(hi, self._axis_fmt), axis_label(lo, self._axis_fmt)
        glyphs, _newest = marker_glyphs(
            [(show, markers) for show, (_, markers) in zip(shown, series, strict=True)],
            t0, t1, cols)
        colours = series_styles(styles)
        owner_style = {i + 1: style for i, style in enumerate(colours)}
        owner_style[OWNER_SEVERAL] = styles.both
        owner_style[EMPTY] = styles.line
        bold = Style(bold=True)
        legend: list[Segment] = []
        for i, (points, _) in enumerate(series):
            if legend:
                legend.append(Segment("  ", styles.base))
            label = self._labels[i] if i < len(self._labels) else chr(ord("A") + i)
            legend.append(Segment(f"{label} {self._latest_text(points)}",
                                  colours[i] + bold if shown[i] else styles.axis))
        strips = [title_strip(self._graph_title, width, legend, lo_label, hi_label, -1, styles)]
        rows = []
        for r in range(plot_rows):
            row = [m[r] for m in masks]
            merged = bytes(row[0])
            for other in row[1:]:
                merged = merge_masks(merged, other)
            rows.append((cells_text(merged), series_owners(row)))
        return strips + owned_rows(width, margin, (hi_label, lo_label), rows,
                                   glyphs, owner_style, styles)

    def _legend(self, overlay: Sequence[Point], styles: GraphStyles) -> list[Segment]:
        """The title's legend: each side's latest value ("A 1.20K  B 1.41K") in the colour of
        its line, a hidden side's in the axis colour."""
        show_a, show_b = self._shown
        label_a, label_b = self._labels
        bold = Style(bold=True)
        s_a = styles.line + bold if show_a else styles.axis
        s_b = styles.overlay + bold if show_b else styles.axis
        return [
            Segment(f"{label_a} {self._latest_text()}", s_a),
            Segment("  ", styles.base),
            Segment(f"{label_b} {self._latest_text(overlay)}", s_b),
        ]
