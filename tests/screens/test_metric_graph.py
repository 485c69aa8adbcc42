"""Tests for the MetricGraph braille plot: its pure helpers, and one rendered app."""

from __future__ import annotations

import math
import random

import pytest
from textual.app import App, ComposeResult
from textual.geometry import Region

from knobtop.ui.widgets import MetricGraph
from knobtop.ui.widgets.metric_graph import (
    MARGIN,
    MARKER_GLYPH,
    NEWEST_GLYPH,
    axis_label,
    braille_char,
    braille_mask,
    cell_aligned,
    cells_text,
    column_means,
    default_fmt,
    nice_max,
    nice_step,
    rasterize,
    scale_to_row,
    time_to_col,
    y_range,
)


def is_braille(ch: str) -> bool:
    return 0x2801 <= ord(ch) <= 0x28FF


# ---------------------------------------------------------------------------------------------
# Braille encoding
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("left", "right", "expected"),
    [
        (0b1111, 0b0000, "\u2847"),  # full left column: dots 1,2,3,7 -> ⡇
        (0b0000, 0b1111, "\u28b8"),  # full right column: dots 4,5,6,8 -> ⢸
        (0b0001, 0b1000, "\u2881"),  # top-left + bottom-right: dots 1,8
        (0b1000, 0b0001, "\u2848"),  # bottom-left + top-right: dots 7,4
        (0b0110, 0b0000, "\u2806"),  # middle of the left column: dots 2,3
        (0b1111, 0b1111, "\u28ff"),
    ],
)
def test_braille_char_maps_column_bitmaps_to_code_points(
    left: int, right: int, expected: str
) -> None:
    assert braille_char(left, right) == expected


def test_empty_braille_cell_is_a_plain_space() -> None:
    assert braille_mask(0, 0) == 0
    assert braille_char(0, 0) == " "
    assert cells_text(bytes([0, 0x47, 0])) == " \u2847 "


# ---------------------------------------------------------------------------------------------
# Scaling and rasterizing
# ---------------------------------------------------------------------------------------------
def test_scale_puts_max_on_top_dot_row_and_zero_on_bottom() -> None:
    assert scale_to_row(100.0, 0.0, 100.0, 8) == 0
    assert scale_to_row(0.0, 0.0, 100.0, 8) == 7
    assert scale_to_row(50.0, 0.0, 100.0, 9) == 4
    assert scale_to_row(-5.0, 0.0, 100.0, 8) == 7  # clamped
    assert scale_to_row(500.0, 0.0, 100.0, 8) == 0


def test_rasterize_max_in_top_dot_row_zero_in_bottom_dot_row() -> None:
    # Two cells wide, two cells tall: value 0 in dot column 0, value 100 in dot column 3.
    columns = [(0, 0.0, False), (3, 100.0, False)]
    rows = rasterize(columns, 0.0, 100.0, cell_cols=2, cell_rows=2)
    assert rows[1][0] == 0x40  # bottom-left dot (dot 7) of the bottom-left cell
    assert rows[0][1] == 0x08  # top-right dot (dot 4) of the top-right cell
    assert rows[0][0] == 0 and rows[1][1] == 0  # not joined: nothing in between


def test_rasterize_joins_columns_without_holes() -> None:
    # A jump from the bottom to the top between adjacent dot columns inks every dot row, the
    # lower half in the first column and the upper half in the second.
    rows = rasterize([(0, 0.0, False), (1, 100.0, True)], 0.0, 100.0, cell_cols=1, cell_rows=2)
    assert [rows[0][0], rows[1][0]] == [
        braille_mask(0b0000, 0b1111),  # top cell: right column only
        braille_mask(0b1111, 0b0000),  # bottom cell: left column only
    ]
    # Not joined: the same two points stay two dots.
    rows = rasterize([(0, 0.0, False), (1, 100.0, False)], 0.0, 100.0, cell_cols=1, cell_rows=2)
    assert [rows[0][0], rows[1][0]] == [braille_mask(0, 0b0001), braille_mask(0b1000, 0)]


def test_column_means_averages_points_sharing_a_column() -> None:
    points = [(0.0, 10.0), (0.4, 30.0), (1.0, 100.0)]
    cols = column_means(points, 0.0, 2.0, ncols=2)
    assert cols == [(0, 20.0, False), (1, 100.0, True)]


def test_gaps_produce_blank_cells() -> None:
    # 100 s on 20 cells (40 dot columns, 2.5 s each); t = 40..59 is a gap.
    points: list[tuple[float, float | None]] = [
        (float(t), None if 40 <= t < 60 else 50.0) for t in range(100)
    ]
    cols = column_means(points, 0.0, 100.0, ncols=40)
    first_after_gap = next(c for c in cols if c[0] == 24)
    assert first_after_gap[2] is False  # not joined across the gap
    rows = rasterize(cols, 0.0, 100.0, cell_cols=20, cell_rows=3)
    for cell in range(20):
        inked = any(row[cell] for row in rows)
        if 8 <= cell <= 11:  # dot columns 16..23 = t 40..59.9
            assert not inked, f"cell {cell} should be blank"
        else:
            assert inked, f"cell {cell} should carry the line"
    text = cells_text(rows[1])
    assert text[8:12] == "    "


def test_non_finite_values_are_gaps_and_out_of_range_points_ignored() -> None:
    points = [(-5.0, 1.0), (0.0, 1.0), (1.0, float("nan")), (2.0, 1.0), (9.0, 1.0)]
    assert column_means(points, 0.0, 4.0, ncols=4) == [(0, 1.0, False), (2, 1.0, False)]


def test_marker_time_maps_to_expected_column() -> None:
    assert time_to_col(30.0, 0.0, 120.0, 40) == 10
    assert time_to_col(0.0, 0.0, 120.0, 40) == 0
    assert time_to_col(120.0, 0.0, 120.0, 40) == 39  # t_end is the last column, not past it
    assert time_to_col(1029.9, 1000.0, 1060.0, 30) == 14
    assert time_to_col(-1.0, 0.0, 120.0, 40) is None
    assert time_to_col(121.0, 0.0, 120.0, 40) is None
    assert time_to_col(5.0, 10.0, 10.0, 40) is None  # empty range


# ---------------------------------------------------------------------------------------------
# Axis numbers
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1234.0, 1500.0),
        (1000.0, 1000.0),
        (1001.0, 1200.0),
        (7.0, 8.0),
        (81.0, 100.0),
        (0.3, 0.3),
        (0.031, 0.04),
        (0.0, 1.0),
        (-3.0, 1.0),
    ],
)
def test_nice_max(value: float, expected: float) -> None:
    assert nice_max(value) == expected


def test_nice_step() -> None:
    assert nice_step(35.0) == 50.0
    assert nice_step(0.2) == 0.2
    assert nice_step(12.5) == 20.0


def test_y_range_starts_at_zero_unless_data_is_far_above_it() -> None:
    assert y_range([0.0, 1234.0]) == (0.0, 1500.0)
    assert y_range([400.0, 1000.0]) == (0.0, 1000.0)  # min below half the max: keep 0
    assert y_range([50.0, 50.0]) == (0.0, 50.0)  # flat line: nothing to zoom into
    assert y_range([]) == (0.0, 1.0)
    lo, hi = y_range([950.0, 1000.0])  # zoomed: step 20
    assert (lo, hi) == (940.0, 1000.0)
    lo, hi = y_range([99.1, 99.9])
    assert lo == pytest.approx(99.0) and hi == pytest.approx(100.0)
    assert y_range([-3.5, -1.0]) == (-4.0, 0.0)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1234.0, "1.23K"),
        (0.5, "0.50"),
        (0.0, "0.00"),
        (5.0, "5.00"),
        (42.0, "42.0"),
        (999.0, "999"),
        (999.6, "1.00K"),
        (12345.0, "12.3K"),
        (123456.0, "123K"),
        (1.5e6, "1.50M"),
        (2.0e9, "2.00G"),
        (-1234.0, "-1.23K"),
        (9.996, "10.0"),
    ],
)
def test_default_fmt(value: float, expected: str) -> None:
    assert default_fmt(value) == expected


def test_axis_label_fits_the_margin() -> None:
    assert axis_label(0.0) == "0"
    assert axis_label(1500.0) == "1.50K"
    assert axis_label(-1234.0) == "-1.2K"  # "-1.23K" is 6 cells: 2 significant digits instead
    assert axis_label(99.5, lambda v: f"{v:.1f} percent") == "99.5"  # custom fmt too long
    assert len(axis_label(-1.0e16)) <= MARGIN - 1


# ---------------------------------------------------------------------------------------------
# Rendered in an app
# ---------------------------------------------------------------------------------------------
class GraphApp(App[None]):
    def compose(self) -> ComposeResult:
        yield MetricGraph("tps", unit="/s")


RAMP: list[tuple[float, float | None]] = [(float(t), 10.0 * t) for t in range(101)]


def rendered_lines(graph: MetricGraph) -> list[str]:
    return [graph.render_line(y).text for y in range(graph.size.height)]


async def test_pilot_ramp_with_marker_at_40x6() -> None:
    app = GraphApp()
    async with app.run_test(size=(40, 6)) as pilot:
        graph = app.query_one(MetricGraph)
        graph.set_data(RAMP, [(50.0, "io_cap=2000")], 0.0, 100.0)
        await pilot.pause()
        assert graph.size == (40, 6)
        lines = rendered_lines(graph)
        title, plot = lines[0], lines[1:]
        assert all(len(line) == 40 for line in lines)

        # The title row: title, latest value with unit, y range; no marker flag (the tag is
        # in the plot, beside its line, so nothing can read as part of the range).
        assert title.startswith("tps 1.00K/s")
        assert title.endswith("0\u20131.00K")
        assert NEWEST_GLYPH not in title and MARKER_GLYPH not in title
        marker_x = MARGIN + 17  # t=50 of [0, 100] on 34 plot cells
        tag_rows = [row for row in plot if "io_cap=2000" in row]
        assert len(tag_rows) == 1
        assert tag_rows[0][marker_x + 1:].startswith("io_cap=2000")  # right of its line

        # The marker: same column in every plot row, under the line (the row where the ramp
        # crosses it shows the ramp's dots), and nowhere else.
        column = [row[marker_x] for row in plot]
        assert all(ch == MARKER_GLYPH or is_braille(ch) for ch in column), column
        assert column.count(MARKER_GLYPH) >= len(plot) - 1
        assert all(row.count(MARKER_GLYPH) == (row[marker_x] == MARKER_GLYPH) for row in plot)

        # Left margin: y max on the top plot row, 0 on the bottom one.
        assert plot[0][:MARGIN].strip() == "1.00K"
        assert plot[-1][:MARGIN].strip() == "0"

        # Rising ramp: last column inked on the top row only, first on the bottom row only.
        last_col = [row[-1] for row in plot]
        first_col = [row[MARGIN] for row in plot]
        assert is_braille(last_col[0]), last_col
        assert all(ch == " " for ch in last_col[1:]), last_col
        assert is_braille(first_col[-1]) and all(ch == " " for ch in first_col[:-1]), first_col
        # The line is continuous, and neither the marker nor its tag hides a dot of it:
        # every plot column carries dots.
        for x in range(MARGIN, 40):
            assert any(is_braille(row[x]) for row in plot), f"column {x} empty"

        # The marker is drawn in the marker component style, not the line style.
        y = 1 + next(r for r, row in enumerate(plot) if row[marker_x] == MARKER_GLYPH
                     and row[marker_x + 1] != "i")
        strip = graph.render_line(y)
        styles = [seg.style for seg in strip for _ in seg.text]
        assert styles[marker_x] == graph.get_component_rich_style("metric-graph--marker")
        assert styles[marker_x + 1] == graph.get_component_rich_style("metric-graph--line")

        # A tag with no room for it whole on either side of its line is left out, not cut.
        graph.set_data(RAMP, [(50.0, "innodb_io_capacity=2000")], 0.0, 100.0)
        await pilot.pause()
        plot = rendered_lines(graph)[1:]
        assert not any("innodb" in row or "…" in row for row in plot), plot


async def test_pilot_narrow_and_short_is_still_readable() -> None:
    app = GraphApp()
    async with app.run_test(size=(38, 3)) as pilot:
        graph = app.query_one(MetricGraph)
        graph.set_data(RAMP, [(50.0, "x")], 0.0, 100.0)
        await pilot.pause()
        lines = rendered_lines(graph)
        assert len(lines) == 3
        assert lines[0].startswith("tps 1.00K/s")
        assert lines[1][:MARGIN].strip() == "1.00K"
        assert lines[2][:MARGIN].strip() == "0"
        # The marker under the line: the ramp's dots where it crosses, the line elsewhere.
        column = lines[1][MARGIN + 16] + lines[2][MARGIN + 16]
        assert MARKER_GLYPH in column and all(
            ch == MARKER_GLYPH or is_braille(ch) for ch in column), column
        assert is_braille(lines[1][-1]) and is_braille(lines[2][MARGIN])


async def test_set_data_repaints_only_when_inputs_change() -> None:
    app = GraphApp()
    async with app.run_test(size=(40, 6)) as pilot:
        graph = app.query_one(MetricGraph)
        calls: list[int] = []
        original = graph.refresh

        def counting_refresh(*args: object, **kwargs: object) -> MetricGraph:
            calls.append(1)
            return original()

        graph.refresh = counting_refresh  # type: ignore[method-assign]
        markers = [(50.0, "x")]
        graph.set_data(RAMP, markers, 0.0, 100.0)
        graph.set_data(list(RAMP), list(markers), 0.0, 100.0)  # equal copies: no repaint
        assert len(calls) == 1
        graph.set_data(RAMP, markers, 0.0, 101.0)  # t range moved
        graph.set_data([*RAMP, (101.0, None)], markers, 0.0, 101.0)  # new (gap) point
        graph.set_data([*RAMP, (101.0, None)], [*markers, (90.0, "y")], 0.0, 101.0)
        assert len(calls) == 4
        await pilot.pause()
        # Latest point is a gap: the title says so instead of repeating an old value.
        assert graph.render_line(0).text.startswith("tps \u2013 ")


async def test_a_new_sample_repaints_every_row_that_changed_and_only_those() -> None:
    """A sample at a time, only the rows that changed are repainted (the terminal keeps
    the others as they were): every row that differs from what was on screen must be in
    a repainted region, and one sample must not repaint the whole graph."""
    series = [(float(t), 50.0 + 40.0 * math.sin(t / 7.0)) for t in range(160)]
    app = GraphApp()
    async with app.run_test(size=(60, 12)) as pilot:
        graph = app.query_one(MetricGraph)
        graph.set_data(series[:2], [], 0.0, 2.0)
        await pilot.pause()
        repainted: list[set[int]] = []
        original = graph.refresh

        def record(*regions: Region, **kwargs: bool) -> MetricGraph:
            rows = {y for r in regions for y in r.line_range} if regions else set(range(12))
            repainted.append(rows)
            return original(*regions, **kwargs)

        graph.refresh = record  # type: ignore[method-assign]
        partial = 0
        for n in range(3, 161):
            on_screen = rendered_lines(graph)
            repainted.clear()
            graph.set_data(series[:n], [(40.0, "x")] if n > 40 else [],
                           max(0.0, n - 120.0), float(n))
            await pilot.pause()
            now = rendered_lines(graph)
            changed = {y for y, (a, b) in enumerate(zip(on_screen, now, strict=True)) if a != b}
            painted = set().union(*repainted)
            assert changed <= painted, f"sample {n}: rows {sorted(changed - painted)} stale"
            partial += bool(repainted) and len(painted) < 12
        assert partial > 75  # most samples (96 of 158 here) repaint a few rows, not all twelve


def test_an_aligned_window_is_as_long_and_ends_on_a_column_edge_within_a_column() -> None:
    rng = random.Random(5)
    for _ in range(2000):
        t_end = rng.uniform(0, 2e9) if rng.random() < 0.8 else float(rng.randrange(1000))
        span, ncols = rng.choice([60.0, 120.0, 300.0, 3600.0, 86400.0]), rng.randrange(1, 200)
        start, end = cell_aligned(t_end - span, t_end, ncols)
        col = span / ncols
        assert end - start == pytest.approx(span)
        assert t_end <= end < t_end + col * (1 + 1e-9)
        assert end / col == pytest.approx(round(end / col), abs=1e-6)
    assert cell_aligned(5.0, 5.0, 10) == (5.0, 5.0) and cell_aligned(0.0, 9.0, 0) == (0.0, 9.0)


class SlidingApp(App[None]):
    def __init__(self, sliding: bool) -> None:
        super().__init__()
        self.sliding = sliding

    def compose(self) -> ComposeResult:
        yield MetricGraph("tps", unit="/s", sliding=self.sliding)


async def changes_between_edges(sliding: bool) -> tuple[int, int, int]:
    """Slide a 120 s window over noisy 1 Hz samples a second at a time (60x12): how many
    steps kept the column edges and y range, how many of those changed a plot cell other than
    the newest two (the line's join into the newest column may touch the cell before it), and
    how many steps crossed a column edge."""
    rng = random.Random(11)
    series = [(float(t), 50.0 + 30.0 * math.sin(t / 9.0) + rng.uniform(-10, 10))
              for t in range(400)]
    app = SlidingApp(sliding)
    kept = elsewhere = crossed = 0
    async with app.run_test(size=(60, 12)) as pilot:
        graph = app.query_one(MetricGraph)
        before: list[str] | None = None
        edge = None
        for n in range(200, 320):
            graph.set_data(series[:n + 1], [], n - 120.0, float(n))
            await pilot.pause()
            now = rendered_lines(graph)
            now_edge = cell_aligned(n - 120.0, float(n), 60 - MARGIN)[1]
            if before is not None:
                same_y = [r[:MARGIN] for r in before[1:]] == [r[:MARGIN] for r in now[1:]]
                if now_edge != edge:
                    crossed += 1
                elif same_y:
                    kept += 1
                    elsewhere += any(a[MARGIN:-2] != b[MARGIN:-2]
                                     for a, b in zip(before[1:], now[1:], strict=True))
            before, edge = now, now_edge
    return kept, elsewhere, crossed


async def test_a_sliding_graph_changes_only_its_newest_columns_until_a_column_passes() -> None:
    """Aligned to its columns, a new sample leaves the graph but its newest cells as it was
    until a column's time has passed; unaligned, the older columns changed with each sample
    (their share of samples moved), and so did most rows."""
    kept, elsewhere, crossed = await changes_between_edges(sliding=True)
    assert kept >= 40 and crossed >= 40 and elsewhere == 0, (kept, elsewhere, crossed)
    kept, elsewhere, _crossed = await changes_between_edges(sliding=False)
    assert kept >= 40 and elsewhere >= kept // 2, (kept, elsewhere)


async def test_theme_change_restyles_the_cached_strips() -> None:
    app = GraphApp()
    async with app.run_test(size=(40, 6)) as pilot:
        app.theme = "textual-dark"
        graph = app.query_one(MetricGraph)
        graph.set_data(RAMP, [(50.0, "x")], 0.0, 100.0)
        await pilot.pause()
        marker_x = MARGIN + 17

        def marker_style() -> object:
            strip = graph.render_line(1)
            return [seg.style for seg in strip for _ in seg.text][marker_x]

        dark = marker_style()
        app.theme = "textual-light"
        await pilot.pause()
        light = marker_style()
        assert light != dark
        assert light == graph.get_component_rich_style("metric-graph--marker")


@pytest.mark.parametrize("size", [(3, 1), (12, 2), (15, 3), (38, 3), (16, 8), (200, 50)])
async def test_every_size_renders_full_width_lines(size: tuple[int, int]) -> None:
    app = GraphApp()
    async with app.run_test(size=size) as pilot:
        graph = app.query_one(MetricGraph)
        for points, t_end in (([], 0.0), ([(0.0, None), (1.0, None)], 1.0), (RAMP, 100.0)):
            graph.set_data(points, [(0.0, "a"), (t_end, "b")], 0.0, t_end)
            await pilot.pause()
            width, height = graph.size  # min-height 3 may add a screen scrollbar
            assert width >= size[0] - 2 and height >= min(size[1], 3)
            for y in range(height):
                assert graph.render_line(y).cell_length == width


def under_the_line(ch: str) -> bool:
    """A marker's cell: its glyph, or the line's dots where the line crosses it."""
    return ch == MARKER_GLYPH or is_braille(ch)


async def test_marker_tags_beside_their_lines_never_overlapping() -> None:
    # Each full-height marker is tagged in the plot: right of its line when there is room
    # before the next line, else left of it, whole or not at all; no tag covers a line,
    # another tag or a dot of the data.
    app = GraphApp()
    async with app.run_test(size=(60, 6)) as pilot:
        graph = app.query_one(MetricGraph)
        graph.set_data(RAMP, [(10.0, "old=1"), (30.0, "io_capacity=2000")], 0.0, 100.0)
        await pilot.pause()
        plot = rendered_lines(graph)[1:]
        first, second = MARGIN + 5, MARGIN + 16  # t=10 and t=30 of [0, 100] on 54 cells
        assert all(under_the_line(row[first]) and under_the_line(row[second]) for row in plot)
        assert any(row[first + 1:].startswith("old=1 ") for row in plot)
        assert any(row[second + 1:].startswith("io_capacity=2000") for row in plot)
        # Two lines 3 cells apart: no room right of the first, and 5 cells left of it for
        # a 25-cell tag: it is left out (it was cut to "flush…" before); b=1 fits.
        graph.set_data(RAMP, [(10.0, "flush_log_at_trx_commit=2"), (15.0, "b=1")], 0.0, 100.0)
        await pilot.pause()
        plot = rendered_lines(graph)[1:]
        a, b = MARGIN + 5, MARGIN + 8
        assert all(under_the_line(row[a]) and under_the_line(row[b]) for row in plot)
        assert not any("…" in row or "fl" in row for row in plot), plot
        assert any(row[b + 1:].startswith("b=1") for row in plot)
        assert all(row.count(MARKER_GLYPH) <= 2 for row in plot)
