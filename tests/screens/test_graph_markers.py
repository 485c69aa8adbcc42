"""Graphs you can read (issue 14 items 3 and 4): connected lines, a y range that holds the
value shown, and markers that do not bury the line (person's changes full height and tagged,
load phases as ticks, a stop+start pair as one, re-applied values after a restart as none)."""

from __future__ import annotations

import dataclasses
import re

import pytest
from textual.app import App, ComposeResult
from textual.pilot import Pilot

from harness import paths as repo_paths
from harness.ui import until
from knobtop.journal import Change, Event, Header, JournalReader, Mark, Note, Phase, Restart
from knobtop.metrics import MetricBoard
from knobtop.metrics.board import short_knob
from knobtop.ui.app import KnobtopApp
from knobtop.ui.widgets.metric_graph import (
    MARKER_GLYPH,
    NEWEST_GLYPH,
    TICK_GLYPH,
    MetricGraph,
    column_bitmaps,
    default_fmt,
    place_tags,
    value_range,
    y_range,
)

JOURNAL = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"
SIZES = [(80, 24), (160, 48)]


# ---------------------------------------------------------------------------------------------
# Rasterizer and range
# ---------------------------------------------------------------------------------------------
def test_far_apart_points_are_joined_by_a_continuous_vertical_run() -> None:
    # Bottom at dot column 0, top at dot column 2, nothing in column 1: every dot row from the
    # bottom to the top is inked in columns 0..2 with no hole.
    bitmaps = column_bitmaps([(0, 0.0, False), (2, 100.0, True)], 0.0, 100.0, 3, 16)
    inked = bitmaps[0] | bitmaps[1] | bitmaps[2]
    assert inked == (1 << 16) - 1, f"{inked:016b}"
    assert bitmaps[1] != 0  # the empty column between them carries part of the run
    # Not joined (a gap before the second point): two lone dots.
    bitmaps = column_bitmaps([(0, 0.0, False), (2, 100.0, False)], 0.0, 100.0, 3, 16)
    assert bitmaps == [1 << 15, 0, 1 << 0]


def test_latest_value_outside_the_averaged_range_widens_it() -> None:
    columns = [(0, 660.0, False), (1, 700.0, True), (2, 690.0, True)]
    lo, hi = y_range([v for _, v, _ in columns])
    assert hi < 821  # the bug: "Server TPS 821 660-710"
    lo, hi = value_range(columns, 821.0)
    assert lo <= 821.0 <= hi and lo <= 660.0
    lo, hi = value_range([(0, 150.0, False), (1, 190.0, True)], 338.0)
    assert lo <= 338.0 <= hi  # "History length 338 0-200"
    assert value_range(columns, None) == y_range([660.0, 700.0, 690.0])


class OneGraph(App[None]):
    def compose(self) -> ComposeResult:
        yield MetricGraph("Server TPS", time_axis=True)


@pytest.mark.parametrize(("latest", "size"), [(821.0, (40, 8)), (338.0, (80, 24)),
                                               (5.0, (160, 48))])
async def test_title_range_holds_the_value_beside_it(latest: float, size: tuple[int, int]) -> None:
    # 100 s at 660-710 ten times a second, then one point far off sharing the last dot
    # column, whose mean flattens it: the range must still reach it, in the title and on
    # the axis.
    points: list[tuple[float, float | None]] = [
        (t / 10, 660.0 + (t * 7) % 50) for t in range(999)]
    points.append((99.95, latest))
    app = OneGraph()
    async with app.run_test(size=size) as pilot:
        graph = app.query_one(MetricGraph)
        graph.set_data(points, [], 0.0, 100.0)
        await pilot.pause()
        lines = [graph.render_line(y).text for y in range(graph.size.height)]
        assert lines[0].startswith(f"Server TPS {default_fmt(latest)} ")
        check_graph(graph, lines)


def test_tags_never_cover_a_line_or_each_other() -> None:
    markers = [(5, "io_cap=1000"), (9, "thr=8"), (30, "note")]
    tags = place_tags(markers, (), 40)
    taken: set[int] = set()
    for at, text in tags:
        span = set(range(at, at + len(text)))
        assert not span & taken and not span & {5, 9, 30}
        assert at >= 0 and at + len(text) <= 40
        taken |= span | {at + len(text)}
    # io_cap=1000 has 3 cells right of its line and 5 left: no room for it whole, so it
    # is left out (it was cut to "io_…" before: a tag is whole or absent now).
    assert {text for _, text in tags} == {"thr=8", "note"}
    assert place_tags([(0, "x=1"), (2, "y=2")], (), 4) == []  # no room anywhere: none


def test_a_tag_whole_on_one_side_is_not_cut_on_the_other() -> None:
    # Four cells right of the line (before an obstacle), fifteen left of it: the tag goes
    # left, whole; with room for neither whole, it is left out (never cut).
    assert place_tags([(15, "io_cap=1000")], (21,), 30) == [(4, "io_cap=1000")]
    assert place_tags([(8, "io_cap=1000")], (14,), 30) == []  # 4 right, 8 left
    assert place_tags([(25, "io_cap=1000")], (), 30) == [(14, "io_cap=1000")]
    assert place_tags([(25, "thr=8")], (), 31) == [(26, "thr=8")]


def test_the_newest_tag_is_placed_first() -> None:
    # A change just made sits at "now" with no room on its right: it gets the cells left of
    # its line, and the older note moves to its own left instead of taking them.
    tags = place_tags([(10, "note"), (19, "flush=2")], (), 22)
    assert tags == [(6, "note"), (12, "flush=2")]


# ---------------------------------------------------------------------------------------------
# Marker rules on the board
# ---------------------------------------------------------------------------------------------
def recorded() -> tuple[Header, list[Event]]:
    reader = JournalReader(JOURNAL)
    return reader.header, list(reader)


def with_person_and_session_events() -> tuple[Header, list[Event]]:
    """The recorded 80 s plus: a thread change (stop at 40, start at 40.4), a note at 58, a
    mark at 68, a static change at 74 (restart step at 74.3, journaled before the change)
    and the session re-applying io_capacity after that restart."""
    header, events = recorded()

    def wall(t: float) -> float:
        return header.started_wall + t

    start = next(e for e in events if isinstance(e, Phase))
    extra: list[tuple[float, Event]] = [
        (40.0, dataclasses.replace(start, t=40.0, wall=wall(40.0), action="stop")),
        (40.4, dataclasses.replace(start, t=40.4, wall=wall(40.4), phase=2, threads=8)),
        (58.0, Note(t=58.0, wall=wall(58.0), text="checkpoint storm?")),
        (68.0, Mark(t=68.0, wall=wall(68.0), label="B")),
        (74.3, Restart(t=74.3, wall=wall(74.3), node="local", step="restart", result="ok",
                       seconds=1.2)),
        (75.6, Change(t=74.0, wall=wall(74.0), knob="innodb_buffer_pool_size", requested="256M",
                      old="134217728", new="268435456", method="dropin_restart",
                      result="ok", duration=1.5)),
        (75.7, Change(t=75.7, wall=wall(75.7), knob="innodb_io_capacity", requested="1000",
                      old="200", new="1000", method="set_global", result="ok",
                      reason="re-applied after restart")),
    ]
    merged = [(e.t, 0, e) for e in events] + [(pos, 1, e) for pos, e in extra]
    return header, [e for _, _, e in sorted(merged, key=lambda x: (x[0], x[1]))]


def board(events: list[Event], header: Header) -> MetricBoard:
    b = MetricBoard(header)
    for event in events:
        b.apply(event)
    return b


def test_marker_rules_merge_phase_pairs_and_skip_session_reapplies() -> None:
    header, events = with_person_and_session_events()
    b = board(events, header)
    full = [(m.kind, m.tag) for m in b.markers if m.full]
    light = [(m.kind, m.tag) for m in b.markers if not m.full]
    assert full == [
        ("change", "io_cap=1000"),
        ("change", "flush_log_at_trx_cmt=2"),
        ("note", "note"),
        ("mark", "mark"),
        ("change", "buf_pool_sz=268435456 ⟳"),  # the restart it caused is this marker
    ]
    # Load start, the 40 s thread change as ONE tick named after the new phase, load stop.
    assert light == [("load", "x4"), ("load", "x8"), ("load", "stop")]
    # The re-applied value still updates the knob panel's value.
    assert b.knob_values["innodb_io_capacity"] == "1000"


def test_a_stop_long_before_the_next_start_stays_two_ticks() -> None:
    header, events = recorded()
    start = next(e for e in events if isinstance(e, Phase))
    b = board([*events, dataclasses.replace(start, t=100.0, wall=start.wall + 100)], header)
    assert [m.tag for m in b.markers if m.kind == "load"] == ["x4", "stop", "x4"]


def test_a_restart_pause_is_one_tick_however_long_the_restart_took() -> None:
    # A static change stops the load, restarts the server (8 s here), journals the change
    # and resumes the load: the pause is one tick, the change one tagged line.
    header, events = recorded()
    start = next(e for e in events if isinstance(e, Phase))
    t = 90.0
    tail: list[Event] = [
        dataclasses.replace(start, t=t + 0.1, wall=start.wall + t, action="stop"),
        Restart(t=t + 0.2, wall=start.wall + t, node="local", step="restart", result="ok",
                seconds=7.5),
        Change(t=t, wall=start.wall + t + 8, knob="innodb_doublewrite", requested="OFF",
               old="ON", new="OFF", method="dropin_restart", result="ok", duration=8.0),
        dataclasses.replace(start, t=t + 8.1, wall=start.wall + t + 8.1, phase=2),
    ]
    b = board([*events, *tail], header)
    after = [(m.kind, m.tag) for m in b.markers if m.t >= t]
    assert after == [("change", "doublewrite=OFF ⟳"), ("load", "x4")]


def test_short_knob_names() -> None:
    assert short_knob("innodb_io_capacity") == "io_cap"
    assert short_knob("innodb_flush_log_at_trx_commit") == "flush_log_at_trx_cmt"
    assert short_knob("sort_buffer_size") == "sort_buf_sz"
    assert short_knob("innodb_") == "innodb_"


# ---------------------------------------------------------------------------------------------
# The live screen on a recorded journal
# ---------------------------------------------------------------------------------------------
_SI = {"": 1.0, "K": 1e3, "M": 1e6, "G": 1e9, "T": 1e12}


def si(text: str) -> float:
    match = re.fullmatch(r"(-?[0-9.]+)([KMGT]?)", text)
    assert match, f"not a number: {text!r}"
    return float(match[1]) * _SI[match[2]]


def check_graph(graph: MetricGraph, lines: list[str]) -> None:
    title, plot = lines[0], lines[1:-1]  # the last row is the time axis
    assert not set(title) & {MARKER_GLYPH, TICK_GLYPH, NEWEST_GLYPH}, title
    value_text = title[len(graph._graph_title) + 1:].split(" ")[0]
    if graph._unit:
        value_text = value_text.removesuffix(graph._unit.strip())
    if value_text == "\u2013":
        return  # a gap: no value to contain
    value = si(value_text)
    hi, lo = si(plot[0][:5].strip()), si(plot[-1][:5].strip())
    slack = 0.006 * max(abs(hi), abs(lo), abs(value))  # 3 significant digits on screen
    assert lo - slack <= value <= hi + slack, (title, plot[0][:5], plot[-1][:5])
    right = title.split(" ")[-1]
    if "\u2013" in right:  # the title's "lo-hi" (or just "hi" when narrow)
        r_lo, r_hi = (si(x) for x in right.split("\u2013"))
        assert r_lo - slack <= value <= r_hi + slack, title
    elif right and right != title.split(" ")[1]:
        assert value <= si(right) + slack, title


async def shown_graphs(app: KnobtopApp, size: tuple[int, int]) -> list[tuple[MetricGraph,
                                                                           list[str]]]:
    graphs = [g for g in app.screen.query(MetricGraph) if g.size.width > 0]
    return [(g, [g.render_line(y).text for y in range(g.size.height)]) for g in graphs]


def is_braille(ch: str) -> bool:
    return 0x2801 <= ord(ch) <= 0x28FF


def full_height_columns(lines: list[str]) -> list[int]:
    """The columns of full-height markers: a marker is drawn under the line (each plot row
    of its column shows the marker or the line's dots) and again on the time axis."""
    plot, axis = lines[1:-1], lines[-1]
    columns = [x for x, ch in enumerate(axis) if ch == MARKER_GLYPH]
    for x in columns:
        assert all(row[x] == MARKER_GLYPH or is_braille(row[x]) for row in plot), (x, lines)
    assert {x for row in plot for x, ch in enumerate(row) if ch == MARKER_GLYPH} <= set(
        columns), lines
    return columns


async def settle(pilot: Pilot[int]) -> None:
    await until(pilot, lambda: pilot.app._painted > 0)  # type: ignore[attr-defined]
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
async def test_recorded_lab_graphs_hold_their_values_and_tag_the_changes(
    size: tuple[int, int]
) -> None:
    header, events = recorded()
    app = KnobtopApp(header=header, events=events)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        graphs = await shown_graphs(app, size)
        assert len(graphs) == 9
        tags_seen = 0
        for graph, lines in graphs:
            check_graph(graph, lines)
            # Two person changes (io_capacity at 25 s, flush_log at 50 s); the load start
            # and stop are ticks, not lines.
            assert len(full_height_columns(lines)) == 2, lines
            plot_text = "\n".join(lines[1:-1])
            assert "…" not in plot_text  # a tag is whole or absent
            # flush_log_at_trx_cmt=2 (22 cells) fits whole on neither side of its line (it
            # was cut to "flush_log_at_trx_c…" before): left out.
            assert "flush_log" not in plot_text
            tags_seen += "io_cap=1000" in plot_text
        if size == (160, 48):
            assert tags_seen == len(graphs)  # io_cap=1000 whole on every graph
        else:
            # 20 plot columns: where io_cap=1000 would hide the line's dots it is left out.
            assert tags_seen < len(graphs)


@pytest.mark.parametrize("size", SIZES)
async def test_person_markers_full_height_session_markers_not(size: tuple[int, int]) -> None:
    header, events = with_person_and_session_events()
    app = KnobtopApp(header=header, events=events)
    async with app.run_test(size=size) as pilot:
        await settle(pilot)
        for graph, lines in await shown_graphs(app, size):
            check_graph(graph, lines)
            # io_capacity, flush_log, the note, the mark, the static change (its restart is
            # the same line; the re-apply and the thread change draw no line).
            assert len(full_height_columns(lines)) == 5, "\n".join(lines)
            # Tags only where there is room: every tag drawn is one of these, whole.
            expected = ("io_cap=1000", "flush_log_at_trx_cmt=2", "note", "mark",
                        "buf_pool_sz=268435456", "⟳")
            for row in lines[1:-1]:
                for word in re.findall(r"[^\s│╷\u2800-\u28ff]+", row[6:]):
                    assert word in expected, (word, row)
            if size == (160, 48):
                assert "io_cap=1000" in "\n".join(lines[1:-1])


async def test_a_paint_while_the_screen_closes_does_nothing() -> None:
    """The paint timer can tick once more while the app tears its screen down (the status
    bar already gone, the graphs not yet): that paint is skipped, not an exception (a CI
    run failed on it: NoMatches for StatusBar in paint)."""
    from knobtop.ui.widgets.status_bar import StatusBar

    header, events = recorded()
    app = KnobtopApp(header=header, events=events)
    async with app.run_test(size=(160, 48)) as pilot:
        await settle(pilot)
        await app.live.query_one(StatusBar).remove()
        painted = app._painted
        app.paint(force=True)  # raised NoMatches before
        assert app._painted >= painted
