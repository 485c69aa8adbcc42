"""`knobtop follow`: the live screen over a journal another process is writing."""

from __future__ import annotations

from pathlib import Path

from harness.ui import until
from knobtop.cli import following_app
from knobtop.journal import Change, JournalReader, JournalWriter, Sample
from knobtop.ui.widgets.knob_panel import KnobPanel

RECORDED = Path(__file__).parent / "data" / "journals" / "lab-80s.knobtop.jsonl"



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
