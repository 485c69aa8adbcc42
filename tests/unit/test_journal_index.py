"""JournalIndex on a recorded journal: counts, seek/read, jumps, tail window, bad/torn lines."""

from __future__ import annotations

import shutil
from pathlib import Path

import orjson
import pytest

from harness import paths as repo_paths
from knobtop.journal import Event, JournalReader, Unknown
from knobtop.journal.index import JournalIndex

RECORDED = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"


def scan(path: Path) -> list[Event]:
    return list(JournalReader(path).events())


@pytest.fixture(params=[1 << 22, 97], ids=["big-chunks", "tiny-chunks"])
def index(request: pytest.FixtureRequest) -> JournalIndex:
    idx = JournalIndex(RECORDED, chunk_size=request.param)
    idx.build()
    return idx


def test_counts_equal_the_recorded_line_count(index: JournalIndex) -> None:
    lines = RECORDED.read_bytes().count(b"\n")
    assert len(index) == lines - 1  # every line but the header
    assert len(index) == len(scan(RECORDED))
    assert index.header == JournalReader(RECORDED).header
    assert index.problems == []
    assert index.line_no(0) == 2 and index.line_no(len(index) - 1) == lines
    assert index.end_offset == RECORDED.stat().st_size


def test_seek_and_read_around_the_middle_match_a_scan(index: JournalIndex) -> None:
    events = scan(RECORDED)
    first, last = index.t_range or (0.0, 0.0)
    assert (first, last) == (events[0].t, max(e.t for e in events))
    mid = (first + last) / 2
    i = index.seek(mid)
    # the first line at which the journal reached ``mid``
    expect = next(k for k, e in enumerate(events) if e.t >= mid)
    assert i == expect
    assert index.read(i - 10, 25) == events[i - 10 : i + 15]
    assert [index.t_at(k) for k in range(i, i + 5)] == [e.t for e in events[i : i + 5]]
    assert [index.kind_at(k) for k in range(i, i + 5)] == [e.kind for e in events[i : i + 5]]
    assert index.read(len(index) - 3, 10) == events[-3:]
    assert index.read(len(index), 5) == []
    assert index.seek(last + 1) == len(index)


@pytest.mark.parametrize(("t0", "t1"), [(20.0, 30.0), (25.0, 25.01), (49.99, 50.02), (-1, 1e9)])
def test_events_between_matches_a_scan_even_where_t_is_out_of_order(
    index: JournalIndex, t0: float, t1: float
) -> None:
    events = scan(RECORDED)
    assert index.events_between(t0, t1) == [e for e in events if t0 <= e.t <= t1]


def test_next_and_prev_of_change_and_phase(index: JournalIndex) -> None:
    events = scan(RECORDED)
    changes = [k for k, e in enumerate(events) if e.kind == "change"]
    phases = [k for k, e in enumerate(events) if e.kind == "phase"]
    assert len(changes) == 2 and len(phases) == 2
    assert index.lines_of("change") == changes
    assert index.next_of("change", 0) == changes[0]
    assert index.next_of("change", changes[0]) == changes[1]
    assert index.next_of("change", changes[1]) is None
    assert index.prev_of("change", changes[1]) == changes[0]
    assert index.prev_of("change", changes[0]) is None
    assert index.next_of(["change", "phase"], phases[0]) == changes[0]
    assert index.prev_of(["change", "phase"], len(index)) == phases[1]
    assert index.next_of("phase", -1) == phases[0]
    assert index.next_of("mark", 0) is None
    # kinds without a jump list go through the per-line kind codes
    ends = [k for k, e in enumerate(events) if e.kind == "end"]
    assert index.next_of("end", 0) == ends[0]
    loads = [k for k, e in enumerate(events[:10]) if e.kind == "load"]
    assert index.prev_of("load", 10) == loads[-1]
    assert index.prev_of("knobs", 10) == 0 and index.prev_of("knobs", 0) is None
    assert index.next_of("no-such-kind", 0) is None
    i = index.next_of("change", 0)
    assert i is not None and index.read(i, 1)[0].kind == "change"


@pytest.mark.parametrize("chunk", [1 << 22, 97, 5000])
@pytest.mark.parametrize("seconds", [0.5, 10.0, 30.0, 1e6])
def test_tail_window_matches_the_last_seconds_of_a_scan(chunk: int, seconds: float) -> None:
    events = scan(RECORDED)
    idx = JournalIndex(RECORDED, chunk_size=chunk)  # no build: the first frame comes first
    cutoff = max(e.t for e in events) - seconds
    assert idx.tail_window(seconds) == [e for e in events if e.t >= cutoff]
    assert len(idx) == 0


def test_background_build_reports_progress_and_ready() -> None:
    idx = JournalIndex(RECORDED, chunk_size=1000)
    idx.build_in_background()
    assert idx.ready.wait(10)
    assert idx.progress == 1.0
    assert len(idx) == len(scan(RECORDED))
    idx.close()


def test_a_held_build_stops_after_its_first_chunk_until_told_to_go_ahead() -> None:
    """replay holds the index after the first chunk (all its first frame needs) until the
    frame is painted, so the scan does not share the interpreter with the screen's start."""
    idx = JournalIndex(RECORDED, chunk_size=1000)
    thread = idx.build_in_background(hold=True)
    while idx.t_range is None:
        assert thread.is_alive() or idx.ready.is_set()
    assert not idx.ready.wait(0.3), "a held build went on before go_ahead"
    held = len(idx)
    assert 0 < held < sum(1 for _ in JournalReader(RECORDED))
    idx.go_ahead()
    assert idx.ready.wait(30)
    assert len(idx) == sum(1 for _ in JournalReader(RECORDED))
    idx.close()


def test_corrupt_middle_lines_are_skipped_and_named(tmp_path: Path) -> None:
    path = tmp_path / "bad.knobtop.jsonl"
    lines = RECORDED.read_bytes().splitlines(keepends=True)
    good = lines[49]
    lines[49] = good[: len(good) // 2] + b"\n"  # line 50: a write cut off mid-line
    lines[79] = b"garbage that is not json\n"  # line 80
    lines[99] = b'{"ev":"sample","wall":1.0}\n'  # line 100: no t
    lines[119] = b"\n"  # line 120: blank lines are not problems
    path.write_bytes(b"".join(lines))
    idx = JournalIndex(path, chunk_size=333)
    idx.build()
    assert [n for n, _ in idx.problems] == [50, 80, 100]
    assert "cut off" in idx.problems[0][1] and "'t'" in idx.problems[2][1]
    assert len(idx) == len(lines) - 1 - 4
    expected = [
        e for n, e in enumerate(scan(RECORDED), start=2) if n not in (50, 80, 100, 120)
    ]
    assert idx.read(0, len(idx)) == expected
    assert [idx.line_no(k) for k in (47, 48, 49)] == [49, 51, 52]


def test_a_line_that_looks_right_but_does_not_decode_is_reported_on_read(tmp_path: Path) -> None:
    path = tmp_path / "sly.knobtop.jsonl"
    lines = RECORDED.read_bytes().splitlines(keepends=True)
    lines[9] = b'{"ev":"sample","t":8.5,"wall":1.0,"v":[1,,2]}\n'  # line 10
    path.write_bytes(b"".join(lines))
    idx = JournalIndex(path)
    idx.build()
    got = idx.read(5, 6)
    assert len(got) == 5
    assert [n for n, _ in idx.problems] == [10]


def test_torn_last_line_is_indexed_once_complete(tmp_path: Path) -> None:
    path = tmp_path / "torn.knobtop.jsonl"
    data = RECORDED.read_bytes()
    last_start = data.rindex(b"\n", 0, len(data) - 1) + 1
    cut = last_start + (len(data) - last_start) // 2
    path.write_bytes(data[:cut])
    events = scan(RECORDED)
    idx = JournalIndex(path, chunk_size=512)
    idx.build()
    assert len(idx) == len(events) - 1
    assert idx.problems == []
    assert idx.tail_window(5.0) == [e for e in events[:-1] if e.t >= events[-2].t - 5.0]
    assert idx.extend() == 0  # still torn
    with path.open("ab") as fh:
        fh.write(data[cut:])
    assert idx.extend() == 1
    assert len(idx) == len(events)
    assert idx.read(len(idx) - 1, 1) == events[-1:]
    assert idx.lines_of("end") == [len(events) - 1]


def test_extend_picks_up_appended_lines_and_new_jump_targets(tmp_path: Path) -> None:
    path = tmp_path / "grow.knobtop.jsonl"
    shutil.copy(RECORDED, path)
    idx = JournalIndex(path)
    idx.build()
    n = len(idx)
    with path.open("ab") as fh:
        fh.write(b'{"ev":"mark","t":90.0,"wall":1795307657.0,"label":"B"}\n')
        fh.write(b'{"ev":"future_thing","t":91.0,"wall":1795307658.0,"x":1}\n')
    assert idx.extend() == 2
    assert idx.next_of("mark", 0) == n
    unknown = idx.read(n + 1, 1)[0]
    assert isinstance(unknown, Unknown) and unknown.type == "future_thing"
    assert unknown.data == {"x": 1}
    assert idx.next_of("future_thing", 0) == n + 1
    assert idx.t_range == (scan(RECORDED)[0].t, 91.0)


def test_extend_after_the_file_shrank_indexes_it_again(tmp_path: Path) -> None:
    path = tmp_path / "shrink.knobtop.jsonl"
    shutil.copy(RECORDED, path)
    idx = JournalIndex(path)
    idx.build()
    head = RECORDED.read_bytes().splitlines(keepends=True)
    with path.open("r+b") as fh:
        fh.truncate(0)
        fh.write(b"".join(head[:11]))
    idx.extend()
    assert len(idx) == 10
    assert idx.read(0, 100) == scan(RECORDED)[:10]


def test_not_a_journal_is_refused_on_line_one(tmp_path: Path) -> None:
    from knobtop.journal import JournalFormatError

    path = tmp_path / "x.knobtop.jsonl"
    path.write_bytes(orjson.dumps({"hello": 1}) + b"\n")
    with pytest.raises(JournalFormatError) as err:
        JournalIndex(path)
    assert err.value.line_no == 1
    path.write_bytes(b"")
    with pytest.raises(JournalFormatError):
        JournalIndex(path)
