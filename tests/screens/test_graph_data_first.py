"""Graphs that show data first (issue 37, item 7): markers drawn under the series, tags
whole or absent, a flat series' range that says something, titles in each metric's unit.
At 80x24 and 160x48, on the widget and on the live screen of a recorded journal."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest
from textual.app import App, ComposeResult

from harness import paths as repo_paths
from harness.ui import until
from knobtop.journal import Change, Event, Header, JournalReader, Note, Sample
from knobtop.journal.events import Knobs
from knobtop.ui.app import KnobtopApp
from knobtop.ui.widgets.graph_grid import GRAPHS
from knobtop.ui.widgets.metric_graph import (
    MARGIN,
    MARKER_GLYPH,
    RANGE_SEP,
    MetricGraph,
    axis_label,
    place_tags,
    y_range,
)
from knobtop.ui.widgets.units import fmt_number, unit_of

JOURNALS = repo_paths.DATA / "journals"
SIZES = [(80, 24), (160, 48)]


def is_braille(ch: str) -> bool:
    return 0x2801 <= ord(ch) <= 0x28FF


def recorded() -> tuple[Header, list[Event]]:
    reader = JournalReader(JOURNALS / "lab-80s.knobtop.jsonl")
    return reader.header, list(reader)


async def graph_lines(app: App[int], size: tuple[int, int]) -> dict[str, list[str]]:
    """Every graph on screen, by id: its rows as text."""
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: getattr(pilot.app, "_painted", 1) > 0)
        await pilot.pause()
        return {g.id or "": [g.render_line(y).text for y in range(g.size.height)]
                for g in app.screen.query(MetricGraph) if g.size.width > 0}


# ---------------------------------------------------------------------------------------------
# 1. Markers never take a data column's place
# ---------------------------------------------------------------------------------------------
class OneGraph(App[None]):
    def compose(self) -> ComposeResult:
        yield MetricGraph("tps", unit="/s", labels=("A", "B", "C"))


def data_columns(lines: list[str]) -> set[int]:
    """The plot columns holding a dot of data (the title row left out)."""
    return {x for row in lines[1:] for x, ch in enumerate(row) if is_braille(ch)}


@pytest.mark.parametrize("size", SIZES)
async def test_a_marker_in_every_column_leaves_every_data_column(size: tuple[int, int]) -> None:
    # N plot columns, a wave with a value in each, a marker in each: all N still show data.
    cols = size[0] - MARGIN
    wave = [(float(t), 50.0 + 40.0 * math.sin(t / 3)) for t in range(cols)]
    markers = [(t + 0.5, f"k{t}=1") for t in range(cols)]
    app = OneGraph()
    async with app.run_test(size=size) as pilot:
        graph = app.query_one(MetricGraph)
        graph.set_data(wave, [], 0.0, float(cols))
        await pilot.pause()
        bare = [graph.render_line(y).text for y in range(graph.size.height)]
        graph.set_data(wave, markers, 0.0, float(cols))
        await pilot.pause()
        lines = [graph.render_line(y).text for y in range(graph.size.height)]
        assert data_columns(bare) == set(range(MARGIN, size[0]))  # every column has data
        assert data_columns(lines) == data_columns(bare), "\n".join(lines)
        # The very same dots, and the markers in every cell the dots leave free.
        for row, plain in zip(lines[1:], bare[1:], strict=True):
            for x in range(MARGIN, size[0]):
                if is_braille(plain[x]):
                    assert row[x] == plain[x]
                else:
                    assert row[x] == MARKER_GLYPH

        # Three series (compare of three journals), each with a marker in every column.
        more = [([(t, v * 0.5) for t, v in wave], markers)]
        graph.set_data(wave, [], 0.0, float(cols), overlay=[(t, v * 2) for t, v in wave],
                       more=more)
        await pilot.pause()
        bare = [graph.render_line(y).text for y in range(graph.size.height)]
        graph.set_data(wave, markers, 0.0, float(cols), overlay=[(t, v * 2) for t, v in wave],
                       overlay_markers=markers, more=more)
        await pilot.pause()
        lines = [graph.render_line(y).text for y in range(graph.size.height)]
        assert data_columns(bare) == set(range(MARGIN, size[0]))
        assert data_columns(lines) == data_columns(bare), "\n".join(lines)


@pytest.mark.parametrize("size", SIZES)
async def test_notes_every_second_hide_no_dot_of_the_live_graphs(size: tuple[int, int]) -> None:
    # The recorded 80 s with a note every second (a full-height marker each): every graph
    # on the live screen shows exactly the dots it shows without them.
    header, events = recorded()
    notes = [Note(t=t + 0.5, wall=header.started_wall + t, text=f"n{t}") for t in range(80)]
    busy = sorted([*events, *notes], key=lambda e: e.t)
    plain = await graph_lines(KnobtopApp(header=header, events=events), size)
    marked = await graph_lines(KnobtopApp(header=header, events=busy), size)
    assert plain.keys() == marked.keys() and len(plain) == 9
    for gid, lines in marked.items():
        dots = {(y, x, ch) for y, row in enumerate(lines[1:-1]) for x, ch in enumerate(row)
                if is_braille(ch)}
        bare = {(y, x, ch) for y, row in enumerate(plain[gid][1:-1])
                for x, ch in enumerate(row) if is_braille(ch)}
        assert dots == bare, (gid, "\n".join(lines))
        # ... and the markers are there: on the time axis, whatever the dots cover.
        assert lines[-1].count(MARKER_GLYPH) >= 10, lines[-1]


# ---------------------------------------------------------------------------------------------
# 2. A tag is whole or absent
# ---------------------------------------------------------------------------------------------
def test_a_tag_that_does_not_fit_is_left_out_never_cut() -> None:
    markers = [(3, "innodb_io_capacity=1000"), (12, "x=1"), (20, "flush_log_at_trx_cmt=2")]
    placed = place_tags(markers, (), 30)
    assert placed == [(13, "x=1")]
    # Room for it whole on the left only: it goes there, not cut on the right.
    assert place_tags([(25, "io_cap=1000")], (), 30) == [(14, "io_cap=1000")]
    # A side refused by ``fits`` (the line's dots are there on every row): the other side.
    assert place_tags([(15, "thr=8")], (), 30, lambda at, end: at < 15) == [(10, "thr=8")]
    assert place_tags([(15, "thr=8")], (), 30, lambda at, end: False) == []


@pytest.mark.parametrize("size", SIZES)
async def test_no_marker_label_on_the_live_screen_is_cut(size: tuple[int, int]) -> None:
    header, events = recorded()
    # A long knob name too: its tag fits whole nowhere at 80x24.
    change = next(e for e in events if isinstance(e, Change))
    extra = dataclasses.replace(change, t=60.0, knob="innodb_adaptive_flushing_lwm",
                                old="10", new="20", requested="20")
    lines = await graph_lines(KnobtopApp(header=header,
                                         events=sorted([*events, extra], key=lambda e: e.t)),
                              size)
    tags = {"io_cap=1000", "flush_log_at_trx_cmt=2", "adapt_flush_lwm=20"}
    for gid, rows in lines.items():
        for row in rows[1:-1]:
            assert "…" not in row, (gid, row)
            for word in re.findall(r"[^\s│╷\u2800-\u28ff]+", row[MARGIN:]):
                assert word in tags, (gid, word, row)


# ---------------------------------------------------------------------------------------------
# 3. A flat series' range; titles in the metric's unit
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("values", [
    [1.0, 1.0004, 1.0, 0.9999], [1.0] * 5, [0.0] * 5, [99.95, 99.99], [5000.0, 5003.0],
    [0.998, 1.0], [1.0, 1.01], [99.1, 99.9], [950.0, 1000.0]])
def test_a_range_never_reads_x_to_x(values: list[float]) -> None:
    lo, hi = y_range(values)
    assert lo <= min(values) and max(values) <= hi
    for fmt in (fmt_number, unit_of("hit_ratio").axis):
        assert axis_label(lo, fmt) != axis_label(hi, fmt), (values, lo, hi)
    if values == [0.0] * 5:
        assert (lo, hi) == (0.0, 1.0)  # all zeros read 0-1


def test_each_metric_reads_in_its_unit() -> None:
    assert fmt_number(0.0) == "0" and fmt_number(1.0) == "1" and fmt_number(1200.0) == "1.2K"
    assert fmt_number(0.5) == "0.5" and fmt_number(1234.0) == "1.23K"
    history, qps = unit_of("history_len"), unit_of("qps")
    assert history.fmt(0.0) + history.suffix == "0"
    assert qps.fmt(1.0) + qps.suffix == "1"
    cpu = unit_of("cpu")
    assert cpu.fmt(12.34) + cpu.suffix == "12.3%" and cpu.axis(100.0) == "100"
    age = unit_of("checkpoint_age")
    assert age.fmt(46_700_000.0) + age.suffix == "46.7MB"
    assert unit_of("load_p95").suffix == " ms" and unit_of("lb_gl_p99").suffix == " ms"
    assert unit_of("lb_gl_ops").suffix == "/s" and unit_of("row_lock_waits").suffix == "/s"
    assert all(spec.metric in ("tps", "qps", "load_tps") or unit_of(spec.metric).kind != "rate"
               or unit_of(spec.metric).suffix for spec in GRAPHS)


def idle(header: Header, events: list[Event], seconds: int = 80) -> list[Event]:
    """``--load none``: the server answers only the sampler (one question a second, some
    intervals a little longer than a second), nothing in its history list."""
    first = next(e for e in events if isinstance(e, Sample))
    knobs = next(e for e in events if isinstance(e, Knobs))
    names = header.counters
    out: list[Event] = [knobs]
    for i in range(seconds):
        t = i * 1.0003 + (0.0004 if i % 7 == 3 else 0.0)
        v = list(first.v)
        v[names.index("Uptime")] = i
        v[names.index("Questions")] = 12 + i
        v[names.index("Queries")] = 12 + i
        v[names.index("Innodb_history_list_length")] = 0
        out.append(dataclasses.replace(first, t=t, wall=header.started_wall + t, v=v))
    return out


def title_range(title: str) -> tuple[str, str] | None:
    m = re.search(rf"(\S+){RANGE_SEP}(\S+)$", title)
    return (m[1], m[2]) if m else None


@pytest.mark.parametrize("size", SIZES)
async def test_load_none_titles_read_in_their_units(size: tuple[int, int]) -> None:
    header, events = recorded()
    lines = await graph_lines(KnobtopApp(header=header, events=idle(header, events)), size)
    qps = lines["graph-qps"][0]
    assert re.match(r"Server QPS 1 ", qps), qps  # a steady 1 question a second reads "1"
    history = lines["graph-history_len"][0]
    assert re.match(r"History length 0 ", history), history  # a count: "0", not "0.00"
    for gid, rows in lines.items():
        title = rows[0]
        ends = title_range(title)
        if ends is not None:
            assert ends[0] != ends[1], (gid, title)  # never "1.00-1.00"
        # the y labels of the plot's top and bottom rows differ too
        top, bottom = rows[1][:MARGIN].strip(), rows[-2][:MARGIN].strip()
        assert top != bottom, (gid, rows)
    if size == (160, 48):
        assert title_range(qps) is not None and title_range(history) == ("0", "1")
