"""A change made outside knobtop as a journal event (issue 37, item 5): its line is typed
and checked like every other; the board marks it apart from knobtop's changes; replay,
follow's pane, headless and the report show it; a journal without one reads as before."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from harness import paths as repo_paths
from harness.ui import until
from knobtop.analysis.journaldata import load_journal
from knobtop.analysis.replay import MARKER_KINDS, Replay
from knobtop.analysis.report import markdown_report, report_warnings
from knobtop.cli import following_app
from knobtop.headless import describe as headless_line
from knobtop.journal import JournalFormatError, JournalReader, OutsideChange
from knobtop.journal.events import to_dict
from knobtop.journal.index import JournalIndex
from knobtop.metrics.board import MetricBoard
from knobtop.ui.widgets.journal_pane import JournalPane
from knobtop.ui.widgets.journal_pane import describe as pane_line
from knobtop.ui.widgets.knob_panel import KnobPanel

RECORDED = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"
# innodb_io_capacity is 1000 from 00:25 (knobtop's change); someone sets 300 at about 00:38
OUTSIDE = OutsideChange(t=40.02, wall=1795307607.6, knob="innodb_io_capacity", old="1000",
                        new="300", since=35.01)


def with_outside(tmp_path: Path, event: dict[str, object] | None = None) -> Path:
    """The recorded journal with a change made outside knobtop after its sample at 00:40."""
    lines = RECORDED.read_bytes().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if line.startswith(b'{"ev":"sample","t":40.'))
    lines.insert(at + 1, orjson.dumps(event or to_dict(OUTSIDE)) + b"\n")
    path = tmp_path / "o.knobtop.jsonl"
    path.write_bytes(b"".join(lines))
    return path


def test_the_line_reads_back_as_it_was_written(tmp_path: Path) -> None:
    line = to_dict(OUTSIDE)
    assert line == {"ev": "outside", "t": 40.02, "wall": 1795307607.6,
                    "knob": "innodb_io_capacity", "old": "1000", "new": "300", "since": 35.01}
    found = [e for e in JournalReader(with_outside(tmp_path)) if isinstance(e, OutsideChange)]
    assert found == [OUTSIDE]
    assert OUTSIDE.text == "changed outside knobtop: innodb_io_capacity 1000 -> 300"


@pytest.mark.parametrize(("field", "value", "says"), [
    ("since", "35", 'field since should be a number (an outside event has "35")'),
    ("new", 300, "field new should be a string or null (an outside event has 300)"),
    ("knob", None, "field knob should be a string"),
])
def test_a_wrong_field_is_named_with_its_line(tmp_path: Path, field: str, value: object,
                                              says: str) -> None:
    bad = {**to_dict(OUTSIDE), field: value}
    with pytest.raises(JournalFormatError, match=r"o\.knobtop\.jsonl:\d+: " + says[:30]):
        list(JournalReader(with_outside(tmp_path, bad)))


def test_the_board_marks_it_apart_from_knobtops_changes(tmp_path: Path) -> None:
    reader = JournalReader(with_outside(tmp_path))
    board = MetricBoard(reader.header)
    for event in reader:
        board.apply(event)
    assert board.knob_values["innodb_io_capacity"] == "300"
    marks = [(m.kind, m.tag, m.full) for m in board.markers if m.kind in ("change", "outside")]
    assert marks == [("change", "io_cap=1000", True), ("outside", "⚠io_cap=300", True),
                     ("change", "flush_log_at_trx_cmt=2", True)]


def test_replay_and_follow_show_it(tmp_path: Path) -> None:
    index = JournalIndex(with_outside(tmp_path))
    index.build()
    try:
        replay = Replay(index)
        assert replay.knobs_at(39.0)[0]["innodb_io_capacity"] == "1000"
        assert replay.knobs_at(41.0)[0]["innodb_io_capacity"] == "300"
        assert replay.knobs_at(60.0)[0]["innodb_io_capacity"] == "300"
        assert "outside" in MARKER_KINDS
        assert OUTSIDE in replay.frame(41.0).listed  # the pane, as of the cursor
    finally:
        index.close()
    # the journal pane (live, follow and replay) and headless's log
    line = pane_line(OUTSIDE)
    assert line is not None
    assert line.plain == ("00:40 ⚠ innodb_io_capacity=300 changed outside knobtop (was 1000; "
                          "after 00:35)")
    assert headless_line(OUTSIDE) == ("changed outside knobtop: innodb_io_capacity 1000 -> 300 "
                                      "(between 35.01s and 40.02s)")


def test_report_lists_changes_made_outside_knobtop(tmp_path: Path) -> None:
    data = load_journal(with_outside(tmp_path))
    md = markdown_report(data)
    section = md.split("## Changed outside knobtop")[1].split("## Timeline")[0]
    assert "| 00:35 | 00:40 |" in section and "| innodb_io_capacity | 1000 | 300 |" in section
    timeline = md.split("## Timeline")[1].split("## Load phases")[0]
    row = next(r for r in timeline.splitlines() if "| outside |" in r)
    assert "changed outside knobtop: innodb_io_capacity 1000 -> 300 (between 00:35 and " \
        "00:40)" in row and row.endswith("| not knobtop |")
    assert data.knobs_end["innodb_io_capacity"] == "300"
    assert any("changed outside knobtop during this session (innodb_io_capacity)" in w
               for w in report_warnings(data))


def test_a_journal_without_one_reads_and_reports_as_before() -> None:
    data = load_journal(RECORDED)
    assert data.outside == []
    md = markdown_report(data)
    assert "outside knobtop" not in md and "Warning" not in md


async def test_follow_shows_one_before_its_window_and_one_appended(tmp_path: Path) -> None:
    """Follow's knob panel starts from every knob value of the journal (an outside change
    before the history window included), and a change made outside knobtop appended later
    reaches the panel and the pane."""
    path = with_outside(tmp_path)
    app = following_app(path, history=5)  # the outside change at 00:40 is before the window
    async with app.run_test(size=(160, 48)) as pilot:
        panel = app.live.query_one(KnobPanel)
        await until(pilot, lambda: app._live_ready)
        await until(pilot, lambda: panel.values.get("innodb_io_capacity") == "300")
        later = OutsideChange(t=81.0, wall=1795307648.6, knob="sort_buffer_size",
                              old="2097152", new="4194304", since=76.0)
        with path.open("ab") as fh:  # the writer goes on
            fh.write(orjson.dumps(to_dict(later)) + b"\n")
        await until(pilot, lambda: panel.values.get("sort_buffer_size") == "4194304")
        pane = app.live.query_one(JournalPane)
        await until(pilot, lambda: any("sort_buffer_size=4194304 changed outside knobtop"
                                       in line.plain for line in pane.entries))
        await pilot.press("q")
    assert app.return_code == 0
