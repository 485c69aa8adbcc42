"""`knobtop replay`: the virtual clock, frames as of the cursor, the screen and its keys."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from harness import paths as repo_paths
from harness.ui import until, widget_text
from knobtop.analysis.replay import Replay, clock_text, notes_path_for
from knobtop.cli import replay_for
from knobtop.journal import Change, JournalReader, JournalWriter, Phase, Sample
from knobtop.journal.index import JournalIndex
from knobtop.metrics.board import MetricBoard
from knobtop.ui.app import KnobtopApp
from knobtop.ui.replay_app import ReplayApp
from knobtop.ui.widgets.host_panel import HostPanel
from knobtop.ui.widgets.journal_pane import JournalPane
from knobtop.ui.widgets.knob_panel import KnobPanel
from knobtop.ui.widgets.metric_graph import MetricGraph
from knobtop.ui.widgets.status_bar import StatusBar

RECORDED = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"
EVENTS = list(JournalReader(RECORDED))
HEADER = JournalReader(RECORDED).header
CHANGES = [e for e in EVENTS if isinstance(e, Change)]


def copy_journal(tmp_path: Path, lines: list[bytes] | None = None) -> Path:
    path = tmp_path / "run.knobtop.jsonl"
    path.write_bytes(b"".join(lines) if lines is not None else RECORDED.read_bytes())
    return path


@pytest.fixture
def replay(tmp_path: Path) -> Replay:
    index = JournalIndex(copy_journal(tmp_path))
    index.build()
    r = Replay(index)
    yield r
    index.close()


def live_board_until(t: float) -> MetricBoard:
    """What the live screen's board held once every event up to ``t`` had arrived."""
    board = MetricBoard(HEADER)
    for event in EVENTS:
        if event.t <= t:
            board.apply(event)
    return board


# -- the clock -----------------------------------------------------------------------------


def test_clock_moves_only_when_playing_at_the_chosen_speed(replay: Replay) -> None:
    start = replay.cursor
    assert start == EVENTS[0].t
    assert replay.tick(1.0) is False and replay.cursor == start
    replay.toggle()
    replay.speed = 10
    assert replay.tick(0.5)
    assert replay.cursor == pytest.approx(start + 5.0)
    assert replay.faster() == 20 and replay.faster(-2) == 5
    assert replay.faster(99) == 100 and replay.faster(-99) == 1


def test_playing_stops_at_the_end_and_starts_over_from_there(replay: Replay) -> None:
    replay.toggle()
    replay.speed = 100
    replay.tick(10.0)
    assert replay.cursor == replay.indexed_to == max(e.t for e in EVENTS)
    assert not replay.playing and replay.at_end
    replay.toggle()
    assert replay.playing and replay.cursor == replay.start


def test_seek_clamps_to_the_journal(replay: Replay) -> None:
    assert replay.seek_by(30) == pytest.approx(EVENTS[0].t + 30)
    assert replay.seek_by(-1000) == replay.start
    assert replay.seek_to(10_000) == replay.indexed_to


def test_jumps_land_on_each_change_in_turn_and_back(replay: Replay) -> None:
    assert [replay.jump(["change"], True) for _ in CHANGES] == [c.t for c in CHANGES]
    assert replay.jump(["change"], True) is None
    assert replay.cursor == CHANGES[-1].t
    assert replay.jump(["change"], False) == CHANGES[0].t
    assert replay.jump(["change"], False) is None
    phases = [e.t for e in EVENTS if isinstance(e, Phase)]
    replay.seek_to(replay.start)
    stops = [replay.jump(["phase", "change"], True) for _ in range(len(phases) + len(CHANGES))]
    assert stops == sorted(phases + [c.t for c in CHANGES])


# -- frames ----------------------------------------------------------------------------------


@pytest.mark.parametrize("at", [CHANGES[0].t, CHANGES[1].t + 7.3, EVENTS[-1].t])
def test_frame_matches_the_live_board_at_that_moment(replay: Replay, at: float) -> None:
    frame = replay.frame(at)
    live = live_board_until(at)
    since = live.now - replay.window
    assert frame.board.now == live.now
    for name, series in live.series.items():
        assert frame.board.series[name].points(since) == series.points(since), name
    assert frame.board.knob_values == live.knob_values
    assert frame.board.load_running == live.load_running
    assert frame.board.load_label == live.load_label
    assert [m for m in frame.board.markers if m.t >= since] == [
        m for m in live.markers if m.t >= since]


def test_header_sample_count_is_the_journals_not_the_windows(replay: Replay) -> None:
    """The status line's "N samples" counts every sample up to the cursor, as the live screen
    does, even when the graphs' window holds only the last few."""
    replay.window = 20.0
    counts = []
    for at in (15.0, 40.0, 79.0):
        expected = sum(1 for e in EVENTS if isinstance(e, Sample) and e.t <= at)
        frame = replay.frame(at)
        assert frame.board.samples == expected == live_board_until(at).samples
        counts.append(frame.board.samples)
    assert counts == sorted(set(counts))  # it grows as the cursor moves


def test_events_in_one_second_are_one_stop(tmp_path: Path) -> None:
    """`.` goes to the next second holding an event, landing on that second's last one (so
    the pane lists them all); `,` goes back a whole second the same way."""
    at = CHANGES[0].t
    extra = [
        b'{"ev":"note","t":%.4f,"wall":%.3f,"text":"n%d"}\n' % (at + d, HEADER.started_wall + at
                                                              + d, k)
        for k, d in enumerate((0.2, 0.45))
    ]
    lines = RECORDED.read_bytes().splitlines(keepends=True)
    where = next(i for i, line in enumerate(lines) if b'"ev":"change"' in line) + 1
    index = JournalIndex(copy_journal(tmp_path, [*lines[:where], *extra, *lines[where:]]))
    index.build()
    r = Replay(index)
    kinds = ["change", "note"]
    r.seek_to(at - 3)
    assert r.jump(kinds, True) == pytest.approx(at + 0.45)  # one press: the second's last
    assert [e.t for e in r.frame().listed][-3:] == pytest.approx([at, at + 0.2, at + 0.45])
    second = r.jump(kinds, True)
    assert second == CHANGES[1].t
    assert r.jump(kinds, False) == pytest.approx(at + 0.45)
    r.seek_to(at + 0.3)  # inside the second, before its last event: back a whole second
    assert r.jump(kinds, False) is None
    r.seek_to(at + 0.3)
    assert r.jump(kinds, True) == pytest.approx(at + 0.45)
    index.close()


def test_knob_values_are_as_of_the_cursor(replay: Replay) -> None:
    first = CHANGES[0]
    before = replay.frame(first.t - 0.5).knobs
    after = replay.frame(first.t).knobs
    assert before[first.knob] == first.old and after[first.knob] == first.new
    assert replay.frame(EVENTS[-1].t).knobs[CHANGES[1].knob] == CHANGES[1].new


def test_pane_lists_events_up_to_the_cursor_newest_current(replay: Replay) -> None:
    frame = replay.frame(CHANGES[1].t - 1)
    assert CHANGES[0] in frame.listed and CHANGES[1] not in frame.listed
    assert frame.current == len(frame.listed) - 1
    assert frame.listed[frame.current] == CHANGES[0]


# -- notes on the side -----------------------------------------------------------------------


def test_notes_go_to_a_side_file_and_the_journal_is_untouched(replay: Replay) -> None:
    path = replay.index.path
    digest = hashlib.sha256(path.read_bytes()).hexdigest()
    replay.seek_to(42.0)
    note = replay.add_note("  flush spike here  ")
    assert note.text == "flush spike here" and note.t == 42.0
    side = notes_path_for(path)
    assert side.name == "run.knobtop.notes.jsonl"
    assert stat.S_IMODE(side.stat().st_mode) == 0o600
    assert hashlib.sha256(path.read_bytes()).hexdigest() == digest
    with pytest.raises(ValueError, match="empty note"):
        replay.add_note("   ")
    again = Replay(replay.index)  # a later replay sees the note, lists it, jumps to it
    assert again.side_notes == [note]
    assert note in again.frame(50.0).listed and note not in again.frame(40.0).listed
    assert again.jump(["note"], True) == 42.0


def test_a_bad_line_in_the_side_file_is_skipped_and_named(replay: Replay) -> None:
    replay.add_note("good")
    with notes_path_for(replay.index.path).open("ab") as f:
        f.write(b"{not json\n")
    again = Replay(replay.index)
    assert [n.text for n in again.side_notes] == ["good"]
    assert again.note_problems[0][0] == 2


# -- bad journals ------------------------------------------------------------------------------


def test_corrupt_line_in_the_middle_is_skipped_with_its_line_number(tmp_path: Path) -> None:
    lines = RECORDED.read_bytes().splitlines(keepends=True)
    lines[40] = b'{"ev":"sample","t":39.0,"wall":1,"v":[1,2\n'  # cut off mid-line
    lines.insert(60, b'{"ev":"hologram","t":58.5,"wall":1,"x":1}\n')  # from a newer knobtop
    path = copy_journal(tmp_path, lines)
    replay = replay_for(path)
    replay.index.ready.wait()
    assert [n for n, _ in replay.index.problems] == [41]
    assert replay.index.kind_counts()["hologram"] == 1
    frame = replay.frame(EVENTS[-1].t)  # the rest of the journal still plays
    assert frame.board.samples > 0 and frame.knobs[CHANGES[1].knob] == CHANGES[1].new
    replay.index.close()


def test_truncated_journal_replays_to_its_last_whole_line(tmp_path: Path) -> None:
    data = RECORDED.read_bytes()
    path = copy_journal(tmp_path, [data[: len(data) // 2 + 17]])
    replay = replay_for(path, at="end")
    whole = [e for e in EVENTS if e.t <= replay.indexed_to]
    assert 0 < len(whole) < len(EVENTS)
    assert replay.frame().board.samples > 0
    replay.index.close()


@pytest.mark.parametrize(
    ("content", "message"),
    [(b"", "empty"), (b"hello, I am a shopping list\n", "not a knobtop journal"),
     (b'{"ev":"sample","t":1}\n', "header")],
)
def test_not_a_journal_is_refused_with_the_line_and_no_traceback(
    tmp_path: Path, content: bytes, message: str
) -> None:
    path = tmp_path / "x.jsonl"
    path.write_bytes(content)
    run = subprocess.run([sys.executable, "-m", "knobtop.cli", "replay", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert f"{path}:1:" in run.stderr and message in run.stderr
    assert "Traceback" not in run.stderr


def test_bad_speed_and_time_are_named(tmp_path: Path) -> None:
    path = copy_journal(tmp_path)
    with pytest.raises(ValueError, match="--speed 3"):
        replay_for(path, speed=3)
    with pytest.raises(ValueError, match="not a time"):
        replay_for(path, at="soon")


# -- the screen ------------------------------------------------------------------------------


def screen_text(app: KnobtopApp | ReplayApp) -> dict[str, list[str]]:
    screen = app.live
    out = {f"graph {g.id}": widget_text(g) for g in screen.query(MetricGraph)}
    out["hosts"] = widget_text(screen.query_one(HostPanel))
    out["knobs"] = [" ".join(str(cell) for cell in row) for row in (
        screen.query_one(KnobPanel).get_row_at(i)
        for i in range(screen.query_one(KnobPanel).row_count))]
    out["journal"] = widget_text(screen.query_one(JournalPane))
    # The header's sample count (the rest of the status line differs: live vs replay clock).
    # (Read whole: at 80 columns the replay's clock pushes it past the edge.)
    out["samples"] = re.findall(r"\d+ samples every", str(screen.query_one(StatusBar).content))
    return out


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_replay_reproduces_the_live_screen_at_the_same_moment(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """The live screen after the events up to the second change, next to the replay with
    its cursor on that change: every graph, the hosts, the knobs and the journal agree."""
    at = CHANGES[1].t + 5
    live = KnobtopApp(header=HEADER, events=[e for e in EVENTS if e.t <= at])
    async with live.run_test(size=size) as pilot:
        await until(pilot, lambda: live._painted > 0)
        await pilot.pause()
        expected = screen_text(live)
    replay = replay_for(copy_journal(tmp_path))
    app = ReplayApp(replay)
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.frame is not None)
        replay.seek_to(at)
        app.paint()
        await pilot.pause()
        got = screen_text(app)
    replay.index.close()
    assert any("│" in line for line in expected["graph graph-load_tps"])  # markers drawn
    assert got == expected


async def test_a_tick_that_lands_while_the_screen_goes_paints_nothing(tmp_path: Path) -> None:
    """The replay's clock ticks on a timer of its own, which may land while the app takes
    its screen down on exit, widget by widget (CI once saw the status bar gone and the
    graphs not yet, and the replay crashed on the way out). A tick with a widget gone
    paints nothing and the replay goes on; once the app is closing, it paints nothing
    either."""
    replay = replay_for(copy_journal(tmp_path))
    app = ReplayApp(replay)
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: app.frame is not None)
            await app.live.query_one(StatusBar).remove()
            replay.playing = True  # each tick moves the cursor: each one paints
            cursor = replay.cursor
            await until(pilot, lambda: replay.cursor > cursor + 1)  # ticks came and went
            assert app.is_running
            shown = app._shown
            app._running = False  # as the app's shutdown sets it, before screens go
            replay.seek_to(replay.cursor + 5)
            app.paint(force=True)
            assert app._shown == shown  # nothing painted
            app._running = True
    finally:
        replay.index.close()


async def test_keys_play_seek_jump_and_note(tmp_path: Path) -> None:
    replay = replay_for(copy_journal(tmp_path))
    app = ReplayApp(replay)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.frame is not None)
        status = app.live.query_one(StatusBar)
        assert "replay ⏸" in widget_text(status)[0]
        await pilot.press("right", "right", "right_square_bracket")
        assert replay.cursor == pytest.approx(replay.start + 80)
        await pilot.press("home", "full_stop")  # the first event worth a line: load start
        first_phase = next(e for e in EVENTS if isinstance(e, Phase))
        assert replay.cursor == first_phase.t
        await pilot.press("c")
        assert replay.cursor == CHANGES[0].t
        await until(pilot, lambda: app.frame is not None and app.frame.t == CHANGES[0].t)
        panel = app.live.query_one(KnobPanel)
        assert panel.values[CHANGES[0].knob] == CHANGES[0].new
        assert panel.values[CHANGES[1].knob] == CHANGES[1].old
        pane = widget_text(app.live.query_one(JournalPane))
        assert any(CHANGES[0].knob in line for line in pane)
        assert f"{clock_text(CHANGES[0].t - replay.start)} /" in widget_text(status)[0]
        await pilot.press("C")  # no change before the first
        assert replay.cursor == CHANGES[0].t
        await pilot.press("plus", "plus", "space")
        assert replay.playing and replay.speed == 5
        await until(pilot, lambda: replay.cursor >= CHANGES[0].t + 2)
        await pilot.press("space")
        assert not replay.playing
        here = replay.cursor
        await pilot.press("n")
        await pilot.press(*"spike", "enter")
        await until(pilot, lambda: bool(replay.side_notes))
        assert replay.side_notes[0].text == "spike" and replay.side_notes[0].t == here
        await until(pilot, lambda: any("✎ spike" in line for line in widget_text(
            app.live.query_one(JournalPane))))
        await pilot.press("q")
    replay.index.close()


async def test_nothing_takes_the_arrow_keys_from_the_clock(tmp_path: Path) -> None:
    replay = replay_for(copy_journal(tmp_path))
    app = ReplayApp(replay)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.frame is not None)
        await pilot.press("tab", "right", "end", "left")
        assert app.focused is None
        assert replay.cursor == pytest.approx(replay.indexed_to - 10)
    replay.index.close()


def test_a_journal_being_written_replays_what_is_there(tmp_path: Path) -> None:
    """Replay opens a journal another knobtop still writes (its index keeps what it read)."""
    path = tmp_path / "w.knobtop.jsonl"
    writer = JournalWriter(path, HEADER)
    try:
        for event in EVENTS[:50]:
            writer.append(event)
        replay = replay_for(path, at="end")
        assert replay.cursor == max(e.t for e in EVENTS[:50])
        assert replay.frame().board.samples == sum(
            isinstance(e, Sample) and e.t >= replay.cursor - replay.window - 10
            for e in EVENTS[:50])
        replay.index.close()
    finally:
        writer.close()
    assert os.path.getsize(path) > 0


def test_jumps_follow_time_even_when_lines_are_out_of_order(tmp_path: Path) -> None:
    """A static change is stamped when it began but written after its restart steps."""
    from knobtop.journal import Restart

    path = tmp_path / "static.knobtop.jsonl"
    writer = JournalWriter(path, HEADER)
    samples = [e for e in EVENTS if isinstance(e, Sample)]
    change = dataclasses.replace(CHANGES[0], t=50.0)
    for event in [dataclasses.replace(samples[0], t=1.0), dataclasses.replace(samples[1], t=20.0),
                  Restart(t=55.0, wall=1.0, node="lab", step="restart", result="ok", seconds=1),
                  change,
                  Restart(t=80.0, wall=1.0, node="lab", step="verify", result="ok", seconds=0),
                  dataclasses.replace(samples[2], t=90.0)]:
        writer.append(event)
    writer.close()
    replay = replay_for(path)
    replay.index.ready.wait()
    replay.seek_to(20.0)
    kinds = ["change", "restart"]
    assert [replay.jump(kinds, True) for _ in range(4)] == [50.0, 55.0, 80.0, None]
    replay.seek_to(90.0)
    assert [replay.jump(kinds, False) for _ in range(4)] == [80.0, 55.0, 50.0, None]
    assert replay.frame(52.0).knobs[change.knob] == change.new  # the change, as of 52 s
    replay.index.close()


async def test_palette_save_screenshot_saves_next_to_the_journal(tmp_path: Path) -> None:
    """Textual's own "Save screenshot" (palette) wrote to ~/Downloads and failed where there
    was none; on knobtop's screens it saves where S does: the journal's folder."""
    replay = replay_for(copy_journal(tmp_path))
    app = ReplayApp(replay)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.frame is not None)
        await pilot.press("ctrl+p")
        await pilot.pause()
        await pilot.press(*"screenshot")
        for attempt in range(60):
            await pilot.pause(0.05)
            if list(tmp_path.glob("knobtop-*.svg")):
                break
            if attempt == 20:
                await pilot.press("enter")
        [saved] = tmp_path.glob("knobtop-*.svg")
        assert "run.knobtop.jsonl" in saved.read_text()
        assert not [n for n in app._notifications if n.severity == "error"]
        await pilot.press("escape", "q")
    replay.index.close()
