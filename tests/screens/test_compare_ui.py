"""`knobtop compare` on screen: overlaid graphs (pure helpers and widget), CompareApp on the
recorded journals, snapshots at two sizes, and the text output when stdout is not a terminal."""

from __future__ import annotations

import io
import statistics
import sys
from pathlib import Path

import pytest
from rich.style import Style
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widgets import DataTable

from harness import paths as repo_paths
from knobtop.analysis.compare import RATIO_METRICS, Comparison, compare, compare_ranges, fmt_ratio
from knobtop.analysis.journaldata import load_journal
from knobtop.analysis.report import fmt_num
from knobtop.ui.compare_app import COMPARE_GRAPHS, CompareApp, CompareScreen
from knobtop.ui.compare_sides import side_view, window_points
from knobtop.ui.compare_widgets import CompareHeader, KnobDiffTable, PhasePairTable
from knobtop.ui.widgets.metric_graph import (
    EMPTY,
    MARGIN,
    MARKER_GLYPH,
    OVERLAY_MARKER_GLYPH,
    OWNER_A,
    OWNER_B,
    OWNER_BOTH,
    SHARED_MARKER_GLYPH,
    MetricGraph,
    cells_text,
    column_means,
    merge_masks,
    overlay_owners,
    owner_runs,
    rasterize,
    shared_y_range,
    y_range,
)

JOURNALS = repo_paths.DATA / "journals"
READ_WRITE = JOURNALS / "lab-read-write.knobtop.jsonl"
POINT_SELECT = JOURNALS / "lab-point-select.knobtop.jsonl"
LAB_80S = JOURNALS / "lab-80s.knobtop.jsonl"

Points = list[tuple[float, float | None]]


def is_braille(ch: str) -> bool:
    return 0x2801 <= ord(ch) <= 0x28FF


# ---------------------------------------------------------------------------------------------
# Pure helpers
# ---------------------------------------------------------------------------------------------
def test_shared_y_range_covers_both_maxima() -> None:
    low = column_means([(float(t), 100.0 + t) for t in range(10)], 0.0, 10.0, 20)
    high = column_means([(float(t), 900.0 + 10 * t) for t in range(10)], 0.0, 10.0, 20)
    lo, hi = shared_y_range(low, high)
    assert hi >= 990.0 and lo <= 100.0
    assert y_range([v for _, v, _ in low])[1] < 990.0  # alone, A's axis would cut B off
    assert shared_y_range(low, []) == y_range([v for _, v, _ in low])


def test_overlay_rasterizing_keeps_both_series_dots() -> None:
    # A flat at the bottom of a 0..1000 axis, B ramping up from the middle to the top.
    a: Points = [(float(t), 0.0) for t in range(21)]
    b: Points = [(float(t), 500.0 + 25.0 * t) for t in range(21)]
    cols, rows = 10, 3
    columns_a = column_means(a, 0.0, 20.0, cols * 2)
    columns_b = column_means(b, 0.0, 20.0, cols * 2)
    lo, hi = shared_y_range(columns_a, columns_b)
    assert (lo, hi) == (0.0, 1000.0)
    masks_a = rasterize(columns_a, lo, hi, cols, rows)
    masks_b = rasterize(columns_b, lo, hi, cols, rows)
    owners = [overlay_owners(ma, mb) for ma, mb in zip(masks_a, masks_b, strict=True)]
    merged = [merge_masks(ma, mb) for ma, mb in zip(masks_a, masks_b, strict=True)]
    # A's line is the bottom row, B's is above it: every column holds both, in their rows.
    assert all(owner == OWNER_A for owner in owners[-1])
    assert all(owner in (OWNER_B, EMPTY) for row in owners[:-1] for owner in row)
    assert any(owner == OWNER_B for owner in owners[0])  # B reaches the top row
    assert all(is_braille(ch) for ch in cells_text(merged[-1]))
    # Merging keeps every dot of both.
    for ma, mb, mm in zip(masks_a, masks_b, merged, strict=True):
        assert all(m == x | y for x, y, m in zip(ma, mb, mm, strict=True))


def test_overlay_owners_and_style_runs() -> None:
    a = bytes([1, 0, 0, 4, 0, 0])
    b = bytes([0, 0, 2, 4, 0, 0])
    assert overlay_owners(a, b) == bytes([OWNER_A, EMPTY, OWNER_B, OWNER_BOTH, EMPTY, EMPTY])
    assert merge_masks(a, b) == bytes([1, 0, 2, 4, 0, 0])
    owners = overlay_owners(a, b)
    # Empty cells join the run before them; runs cover the span exactly.
    assert owner_runs(owners, 0, 6) == [(0, 2, OWNER_A), (2, 3, OWNER_B), (3, 6, OWNER_BOTH)]
    assert owner_runs(owners, 1, 3) == [(1, 3, OWNER_B)]  # a leading gap takes the first owner
    assert owner_runs(owners, 4, 6) == [(4, 6, OWNER_A)]  # nothing drawn: one plain run
    assert owner_runs(owners, 2, 2) == []


def test_side_view_is_relative_to_each_sides_start() -> None:
    c = compare_ranges(LAB_80S, (None, 50), (50, None))
    a, b = side_view("A", c.a), side_view("B", c.b)
    assert a.origin == 0.0 and b.origin == 50.0
    assert b.span == pytest.approx(c.b.last_t - 50.0)
    assert all(t >= 0.0 for t, _ in b.series["tps"])
    assert len(b.series["tps"]) == len(c.b.rows)
    # The flush_log change at 00:50 is B's time 0; io_capacity at 00:25 is A's.
    assert [(round(t), label) for t, label in a.markers] == [(25, "A: innodb_io_capacity=1000")]
    assert [(round(t), label) for t, label in b.markers] == [
        (0, "B: innodb_flush_log_at_trx_commit=2")
    ]
    # Load points come from the load driver's reports; the stop at the end leaves a gap.
    assert [v for _, v in b.series["load_tps"] if v is not None] == [p.tps for p in c.b.loads]
    assert b.series["load_tps"][-1][1] is None
    assert window_points(b.series["load_tps"], 0.0, 60.0)[-1][1] == c.b.loads[-1].tps


# ---------------------------------------------------------------------------------------------
# The overlay drawn by the widget
# ---------------------------------------------------------------------------------------------
class OverlayApp(App[None]):
    def compose(self) -> ComposeResult:
        yield MetricGraph("tps", unit="/s")


def glyph_styles(graph: MetricGraph) -> dict[str, set[Style]]:
    """Every style a braille / marker glyph is drawn in, over the plot rows."""
    out: dict[str, set[Style]] = {"braille": set(), "marker": set()}
    for y in range(1, graph.size.height):
        for seg in graph.render_line(y):
            for ch in seg.text:
                if is_braille(ch):
                    out["braille"].add(seg.style or Style())
                elif ch in (MARKER_GLYPH, OVERLAY_MARKER_GLYPH, SHARED_MARKER_GLYPH):
                    out["marker"].add(seg.style or Style())
    return out


def marker_column(plot: list[str], x: int, glyph: str) -> bool:
    """Column ``x`` is a marker drawn under the series: ``glyph`` in every plot row but
    those where a series' dots are (they win the cell)."""
    return glyph in (row[x] for row in plot) and all(
        row[x] == glyph or is_braille(row[x]) for row in plot)


async def test_overlay_widget_draws_both_series_with_a_legend() -> None:
    app = OverlayApp()
    async with app.run_test(size=(46, 8)) as pilot:
        graph = app.query_one(MetricGraph)
        a: Points = [(float(t), 100.0) for t in range(101)]
        b: Points = [(float(t), 1000.0) for t in range(101)]
        graph.set_data(
            a,
            [(20.0, "A: x=1"), (50.0, "A: y=2")],
            0.0,
            100.0,
            overlay=b,
            overlay_markers=[(50.0, "B: y=2"), (80.0, "B: z=3")],
        )
        await pilot.pause()
        lines = [graph.render_line(y).text for y in range(graph.size.height)]
        assert lines[0].startswith("tps A 100/s  B 1.00K/s")
        assert lines[0].endswith("0\u20131.00K")  # one y range over both
        plot = lines[1:]
        cols = 46 - MARGIN
        at = {t: MARGIN + int(t / 100.0 * cols) for t in (20.0, 50.0, 80.0)}
        assert marker_column(plot, at[20.0], MARKER_GLYPH)
        assert marker_column(plot, at[50.0], SHARED_MARKER_GLYPH)
        assert marker_column(plot, at[80.0], OVERLAY_MARKER_GLYPH)
        assert is_braille(plot[0][MARGIN]) and is_braille(plot[-1][MARGIN])  # B top, A bottom
        line = graph.get_component_rich_style("metric-graph--line")
        overlay = graph.get_component_rich_style("metric-graph--overlay")
        assert glyph_styles(graph)["braille"] == {line, overlay}

        graph.show_series(a=False, b=True)  # B alone, on the same axis
        await pilot.pause()
        lines = [graph.render_line(y).text for y in range(graph.size.height)]
        assert lines[0].endswith("0\u20131.00K")
        assert not any(is_braille(ch) for ch in lines[-1])
        assert glyph_styles(graph)["braille"] == {overlay}
        assert all(row[at[20.0]] != MARKER_GLYPH for row in lines[1:])  # A's markers hidden
        assert marker_column(lines[1:], at[50.0], OVERLAY_MARKER_GLYPH)


async def test_overlay_cells_holding_both_get_the_shared_style() -> None:
    app = OverlayApp()
    async with app.run_test(size=(30, 5)) as pilot:
        graph = app.query_one(MetricGraph)
        same: Points = [(float(t), 50.0) for t in range(11)]
        graph.set_data(same, [], 0.0, 10.0, overlay=list(same))
        await pilot.pause()
        both = graph.get_component_rich_style("metric-graph--both")
        assert glyph_styles(graph)["braille"] == {both}


# ---------------------------------------------------------------------------------------------
# CompareApp on the recorded journals
# ---------------------------------------------------------------------------------------------
LABELS = {label for _name, label, _digits, _better in RATIO_METRICS}


def two_journals() -> Comparison:
    return compare(load_journal(READ_WRITE), load_journal(POINT_SELECT))


def two_ranges() -> Comparison:
    return compare_ranges(LAB_80S, (None, 50), (50, None))


def cell_texts(table: DataTable[object]) -> list[list[str]]:
    return [[str(cell).strip() for cell in table.get_row_at(i)] for i in range(table.row_count)]


def expected_phase_rows(c: Comparison) -> list[list[str]]:
    """metric, A, B, B/A of every pair, straight from compare.py's PhasePairs."""
    rows = []
    for pair in c.pairs:
        for name, label, digits, _better in RATIO_METRICS:
            rows.append(
                [
                    label,
                    fmt_num(getattr(pair.a, name) if pair.a else None, digits),
                    fmt_num(getattr(pair.b, name) if pair.b else None, digits),
                    fmt_ratio(pair.ratios.get(name)),
                ]
            )
    return rows


def graph_has_both_series(graph: MetricGraph) -> bool:
    styles = glyph_styles(graph)["braille"]
    line = graph.get_component_rich_style("metric-graph--line")
    overlay = graph.get_component_rich_style("metric-graph--overlay")
    both = graph.get_component_rich_style("metric-graph--both")
    return (line in styles or both in styles) and (overlay in styles or both in styles)


async def test_two_journals_table_matches_compare_and_graphs_overlay() -> None:
    c = two_journals()
    app = CompareApp(c)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        rows = cell_texts(screen.query_one(PhasePairTable))
        shown = [[m, a, b, ratio.rstrip(" ✓✗")] for _, m, a, b, ratio in rows if m in LABELS]
        assert shown == expected_phase_rows(c)
        [pair] = c.pairs
        assert pair.ratios["load_tps"] is not None
        expected = statistics.median(p.tps for p in c.b.loads) / statistics.median(
            p.tps for p in c.a.loads
        )
        assert pair.ratios["load_tps"] == pytest.approx(expected)
        assert rows[0][0] == "A #1 oltp_read_write" and rows[2][0] == "B #1 oltp_point_select"
        assert rows[0][4].endswith("✓")  # 65x the TPS: better
        assert rows[2][4].endswith("✓")  # p95 down to 2 %: better (lower is better)

        knobs = cell_texts(screen.query_one(KnobDiffTable))
        assert ["at end", "innodb_flush_log_at_trx_commit", "2", "1"] in knobs
        assert ["A 00:04", "innodb_flush_log_at_trx_commit", "1 → 2", ""] in knobs
        assert ["A 00:05", "innodb_doublewrite", "ON → 0 (refused)", ""] in knobs

        graphs = {g.id: g for g in screen.query(MetricGraph)}
        assert set(graphs) == {f"graph-{spec.metric}" for spec in COMPARE_GRAPHS}
        for graph_id in ("graph-load_tps", "graph-tps", "graph-hit_ratio", "graph-dirty_pct"):
            assert graph_has_both_series(graphs[graph_id]), graph_id
        # The common axis runs to the longer side (A: 8 s); both titles carry a value.
        assert screen.x_range == pytest.approx((0.0, c.a.last_t))
        title = graphs["graph-load_tps"].render_line(0).text
        assert "A 1.29K" in title and "B 52.9K" in title  # last reports before the stops
        header = [screen.query_one(CompareHeader).render_line(y).text for y in range(3)]
        assert "lab-read-write.knobtop.jsonl" in header[0]
        assert "lab-point-select.knobtop.jsonl" in header[1]
        assert "differ" not in header[2]
        # A new theme recolours the better/worse ratios; the rows stay as they were.
        app.theme = "textual-light"
        await pilot.pause()
        assert cell_texts(screen.query_one(PhasePairTable)) == rows
        await pilot.press("q")
    assert app.return_code == 0


async def test_two_ranges_of_one_journal_and_keys() -> None:
    c = two_ranges()
    app = CompareApp(c)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, CompareScreen)
        rows = cell_texts(screen.query_one(PhasePairTable))
        assert [[m, a, b, r.rstrip(" ✓✗")] for _, m, a, b, r in rows if m in LABELS] == (
            expected_phase_rows(c)
        )
        # Phase times are since each side's start, like the graphs' axis and the events.
        assert [row[0] for row in rows[:5]] == [
            "A #1 oltp_read_write",
            "x4 00:00-00:50",
            "B #1 oltp_read_write",
            "x4 00:00-00:30",
            "by workload+threads",
        ]
        knobs = cell_texts(screen.query_one(KnobDiffTable))
        assert ["at start", "innodb_io_capacity", "200", "1000"] in knobs
        assert ["at end", "innodb_flush_log_at_trx_commit", "1", "2"] in knobs
        assert ["B 00:00", "innodb_flush_log_at_trx_commit", "", "1 → 2"] in knobs

        # Relative time: 0..49 s (A, the longer side); A's marker at 25 s, B's at 0.
        t0, t1 = screen.x_range
        assert t0 == 0.0 and t1 == pytest.approx(c.a.last_t)
        graph = screen.query_one("#graph-tps", MetricGraph)
        cols = graph.size.width - MARGIN
        plot = [graph.render_line(y).text for y in range(1, graph.size.height)]
        assert marker_column(plot, MARGIN + int(25.0088 / t1 * cols), MARKER_GLYPH)
        assert marker_column(plot, MARGIN, OVERLAY_MARKER_GLYPH)
        assert graph_has_both_series(graph)

        # s cycles A+B -> A only -> B only -> A+B on every graph.
        for expected in ((True, False), (False, True), (True, True)):
            await pilot.press("s")
            assert all(g.shown == expected for g in screen.query(MetricGraph))
        # Zoom keys change the window; on a short comparison it is the whole span anyway.
        await pilot.press("1")
        assert screen.zoom == "1m" and screen.x_range == (t0, t1)
        await pilot.press("0")
        assert screen.zoom == "all"
        # Wide screen: the tables are always on screen, so t is not offered.
        assert screen.check_action("toggle_tables", ()) is False


async def test_narrow_screen_takes_turns_between_graphs_and_tables() -> None:
    app = CompareApp(two_ranges())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        screen = app.screen
        phases = screen.query_one(PhasePairTable)
        graph = screen.query_one("#graph-load_tps", MetricGraph)
        assert screen.has_class("-narrow")
        assert graph.display and not phases.is_on_screen
        assert not screen.query_one("#graph-cpu", MetricGraph).is_on_screen  # 6 graphs here
        await pilot.press("t")
        await pilot.pause()
        assert phases.is_on_screen and screen.focused is phases
        assert not graph.is_on_screen
        await pilot.press("t")
        await pilot.pause()
        assert graph.is_on_screen


def test_server_versions_that_differ_are_flagged() -> None:
    c = two_ranges()
    c.server_b = "mysql 8.0.36"
    header = CompareHeader()
    sides = [side_view("A", c.a), side_view("B", c.b)]
    header.show(c, sides, 0.0, 49.0, "all", (True, True))
    text = str(header.content)
    assert "≠ server versions differ" in text and "mysql 8.0.36" in text


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_snapshot(snap_compare, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    async def settle(pilot: Pilot[int]) -> None:
        await pilot.pause()

    assert snap_compare(CompareApp(two_ranges()), terminal_size=size, run_before=settle)


# ---------------------------------------------------------------------------------------------
# The command line
# ---------------------------------------------------------------------------------------------
def test_compare_prints_text_when_stdout_is_not_a_terminal(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from knobtop.cli import main

    assert main(["compare", str(READ_WRITE), str(POINT_SELECT)]) == 0
    out = capsys.readouterr().out
    assert "Setup" in out and "TPS (load)" in out and "innodb_flush_log_at_trx_commit" in out
    assert "\x1b[" not in out  # no terminal codes in a pipe


def test_compare_opens_the_screen_on_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    from knobtop import cli

    opened: list[Comparison] = []

    def fake_run(self: CompareApp, *args: object, **kwargs: object) -> None:
        opened.append(self.comparison)

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(CompareApp, "run", fake_run)
    monkeypatch.setattr(sys, "stdout", Terminal())
    assert cli.main(["compare", str(LAB_80S), "--range-a", "0-50", "--range-b", "50-"]) == 0
    [c] = opened
    assert c.same_journal and c.a.t_to == 50 and c.b.t_from == 50
    # An explicit format still prints, terminal or not.
    monkeypatch.setattr(CompareApp, "run", lambda *a, **k: pytest.fail("no screen for md"))
    assert cli.main(["compare", str(READ_WRITE), str(POINT_SELECT), "--format", "md"]) == 0


# ---------------------------------------------------------------------------------------------
# Issue 14 item 10: the knobs in force, a legend for the marks, a screenshot that saves
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_phase_table_shows_the_knobs_in_force_that_differ(size: tuple[int, int]) -> None:
    c = two_ranges()
    [pair] = c.pairs
    assert pair.knobs  # io_capacity changed within A, flush_log within B
    app = CompareApp(c)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        if app.screen.has_class("-narrow"):
            await pilot.press("t")
            await pilot.pause()
        table = app.screen.query_one(PhasePairTable)
        rows = cell_texts(table)
        knob_rows = [[d, a, b] for d, m, a, b, _r in rows if m == "in force"]
        assert knob_rows == [
            [d.knob.removeprefix("innodb_"), d.a, d.b] for d in pair.knobs
        ]
        assert ["io_capacity", "200 → 1000", "1000"] in knob_rows
        assert table.is_on_screen
        assert "✓ B better" in str(table.border_subtitle)


async def test_header_has_a_legend_for_the_marks() -> None:
    app = CompareApp(two_journals())
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        header = app.screen.query_one(CompareHeader)
        line = header.render_line(2).text
        assert (f"marks {MARKER_GLYPH}A {OVERLAY_MARKER_GLYPH}B {SHARED_MARKER_GLYPH}both"
                in line)  # whole at 80 columns
        # And the glyphs it explains are the ones drawn: A's change is a MARKER_GLYPH column.
        graph = app.screen.query_one("#graph-tps", MetricGraph)
        plot = [graph.render_line(y).text for y in range(1, graph.size.height)]
        assert any(MARKER_GLYPH in row for row in plot)


async def test_screenshot_key_and_palette_save_next_to_journal_a(tmp_path: Path) -> None:
    a, b = tmp_path / "a.knobtop.jsonl", tmp_path / "b.knobtop.jsonl"
    a.write_bytes(READ_WRITE.read_bytes())
    b.write_bytes(POINT_SELECT.read_bytes())
    app = CompareApp(compare(load_journal(a), load_journal(b)))
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("S")
        await pilot.pause()
        [saved] = tmp_path.glob("knobtop-compare-*.svg")
        assert "lab-read-write" not in saved.name and "<svg" in saved.read_text()
        assert "a.knobtop.jsonl" in saved.read_text()  # the header was captured
        saved.unlink()
        # Textual's own "Save screenshot" in the palette (it wrote to ~/Downloads and
        # failed where there was none) saves the same way.
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"screenshot")
        found = False
        for _ in range(50):
            await pilot.pause(0.05)
            if list(tmp_path.glob("knobtop-compare-*.svg")):
                found = True
                break
            if not found and _ == 20:
                await pilot.press("enter")
        assert found, "the palette's Save screenshot wrote nothing next to journal A"
        assert not [n for n in app._notifications if n.severity == "error"]
        # A folder that cannot take the file: named, with the fix, no traceback.
        app.screenshot_dir = a  # a file, not a folder
        await pilot.press("escape", "S")
        await pilot.pause()
        errors = [n.message for n in app._notifications if n.severity == "error"]
        assert errors and str(a) in errors[-1] and "Fix:" in errors[-1]
