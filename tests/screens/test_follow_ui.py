"""`knobtop follow`: the live screen over a journal another process is writing."""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest

from harness import paths as repo_paths
from harness.ui import until, widget_text
from knobtop.cli import folder_following_app, following_app
from knobtop.journal import Change, JournalReader, JournalWriter, Knobs, Sample
from knobtop.journal.follow_dir import switched_message
from knobtop.ui.widgets.journal_pane import JournalPane
from knobtop.ui.widgets.knob_panel import KnobPanel
from knobtop.ui.widgets.status_bar import StatusBar

RECORDED = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"



async def test_follow_shows_history_then_appended_events(tmp_path: Path) -> None:
    reader = JournalReader(RECORDED)
    events = list(reader)
    cut = next(i for i, e in enumerate(events) if isinstance(e, Change)) + 5
    path = tmp_path / "live.knobtop.jsonl"
    writer = JournalWriter(path, reader.header)  # a second "knobtop" writing as we watch
    for event in events[:cut]:
        writer.append(event)
    app = following_app(path, history=900)
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, lambda: app.board is not None and app._live_ready)
            before = app.board.samples
            assert before == sum(isinstance(e, Sample) for e in events[:cut])
            panel = app.live.query_one(KnobPanel)
            assert panel.values["innodb_io_capacity"] == "1000"  # the change, as of now
            await until(pilot, lambda: "following" in app._state)
            for event in events[cut:]:
                writer.append(event)
            total = sum(isinstance(e, Sample) for e in events)
            await until(pilot, lambda: app.board.samples == total)
            assert app.board.knob_values["innodb_flush_log_at_trx_commit"] == "2"
            # the recorded session ends with its `end` event: the view says the writer ended
            await until(pilot, lambda: app._state.startswith("ended"))
            await pilot.press("q")
    finally:
        writer.close()


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_following_a_folder_moves_to_the_next_session(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    """The lab quit (its journal ends) and started again (a new file): the follower of the
    folder takes the new session, says so, and graphs it on a fresh board."""
    reader = JournalReader(RECORDED)
    events = list(reader)
    first = tmp_path / "lab-1.knobtop.jsonl"
    shutil.copyfile(RECORDED, first)  # the recorded session, ending with its `end`
    app = folder_following_app(tmp_path, history=900)
    second = tmp_path / "lab-2.knobtop.jsonl"
    writer: JournalWriter | None = None
    try:
        async with app.run_test(size=size) as pilot:
            await until(pilot, lambda: app.board is not None and app._live_ready)
            assert app._journal_name == first.name
            old_total = sum(isinstance(e, Sample) for e in events)
            await until(pilot, lambda: app.board.samples == old_total)
            await until(pilot, lambda: "waiting for a newer journal" in app._state)
            old_board = app.board
            # the lab starts again: a new journal, started after the first
            writer = JournalWriter(second, dataclasses.replace(
                reader.header, started_wall=reader.header.started_wall + 3600))
            knobs = next(e for e in events if isinstance(e, Knobs))
            writer.append(dataclasses.replace(knobs, values={**knobs.values,
                                                            "innodb_io_capacity": "777"}))
            samples = [e for e in events if isinstance(e, Sample)][:3]
            for s in samples:
                writer.append(s)
            await until(pilot, lambda: app._journal_name.endswith(second.name))
            # a notification names the new file at any size (looked at as it comes: it goes
            # after its 10 s, which a loaded machine can spend on the waits below)
            await until(pilot, lambda: [n.message for n in app._notifications
                                        if n.title == "following a newer journal"]
                        == [switched_message(second)])
            await until(pilot, lambda: app.board is not old_board and app.board.samples == 3)
            assert app.live.query_one(KnobPanel).values["innodb_io_capacity"] == "777"
            assert app._state.startswith("following")
            # The pane lists the switch at the new session's 00:00 (at 80x24 it cuts the line
            # where the pane ends: the file's name is in the status bar).
            said = switched_message(second)[:len("a newer journal")]
            assert said == "a newer journal"
            await until(pilot, lambda: any(
                line.startswith(f"00:00 ! follow: {said}")
                for line in widget_text(app.live.query_one(JournalPane))))
            # the status bar has room for the file's name at 160
            if size[0] >= 160:
                await until(pilot, lambda: second.name in "".join(
                    widget_text(app.live.query_one(StatusBar))))
            await pilot.press("q")
    finally:
        if writer is not None:
            writer.close()


async def test_an_empty_folder_shows_that_it_waits(tmp_path: Path) -> None:
    app = folder_following_app(tmp_path, history=900)
    writer: JournalWriter | None = None
    try:
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: app._live_ready)
            assert app._state == f"waiting for a journal in {tmp_path}"
            assert app.board is None
            reader = JournalReader(RECORDED)
            writer = JournalWriter(tmp_path / "lab.knobtop.jsonl", reader.header)
            samples = [e for e in reader if isinstance(e, Sample)][:2]
            for s in samples:
                writer.append(s)
            await until(pilot, lambda: app.board is not None and app.board.samples == 2)
            assert app._journal_name == "lab.knobtop.jsonl"
            await pilot.press("q")
    finally:
        if writer is not None:
            writer.close()
