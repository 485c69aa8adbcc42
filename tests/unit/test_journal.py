"""Journal: round trip, torn last line, bad lines named, 0600, no secrets, append-only."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from harness import paths as repo_paths
from knobtop.journal import (
    Change,
    End,
    Header,
    JournalFormatError,
    JournalReader,
    JournalWriter,
    Load,
    Mark,
    Note,
    Phase,
    Sample,
    Unknown,
)


def header() -> Header:
    return Header(
        format=1, knobtop="test", profile="unit", started_wall=1700000000.0, interval=1.0,
        server={"flavor": "mariadb", "version": "10.11.19"}, counters=["Questions", "Uptime"],
        host_fields=["user", "idle"],
    )


EVENTS = [
    Sample(t=0.5, wall=1700000000.5, v=[10, 1], lat=0.001, host={"local": [1.0, 2.0]}),
    Load(t=1.0, wall=1700000001.0, src="sysbench@local", s=1, thds=8, tps=2102.99, qps=42094.85,
         r=29470.89, w=8417.97, o=4205.99, pct=95, lat=5.47, err=0.0, reconn=0.0),
    Change(t=1.2, wall=1700000001.2, knob="innodb_io_capacity", requested="5000", old="200",
           new="5000", method="set_global", result="ok", warnings=["Warning 1210: x"],
           side_effects={"innodb_io_capacity_max": ["2000", "10000"]}),
    Phase(t=1.3, wall=1700000001.3, action="start", phase=1, driver="sysbench",
          workload="oltp_read_write", threads=8),
    Note(t=1.4, wall=1700000001.4, text="flush threads doubled — watch dirty %"),
    Mark(t=1.5, wall=1700000001.5, label="A"),
    Sample(t=1.5, wall=1700000001.5, v=[20, None], re=True),
    End(t=2.0, wall=1700000002.0, reason="quit", samples=2),
]


def write(path: Path) -> JournalWriter:
    writer = JournalWriter(path, header())
    for event in EVENTS:
        writer.append(event)
    writer.close()
    return writer


def test_round_trip_keeps_every_event_and_field(tmp_path: Path) -> None:
    path = tmp_path / "a.knobtop.jsonl"
    write(path)
    reader = JournalReader(path)
    assert reader.header == header()
    assert list(reader) == EVENTS
    assert reader.stats.events == len(EVENTS)
    assert not reader.stats.torn_tail


def test_file_is_private_and_never_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "a.knobtop.jsonl"
    write(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    before = path.read_bytes()
    with pytest.raises(FileExistsError):
        JournalWriter(path, header())
    assert path.read_bytes() == before


def test_each_event_is_on_disk_before_append_returns(tmp_path: Path) -> None:
    path = tmp_path / "live.knobtop.jsonl"
    writer = JournalWriter(path, header())
    writer.append(EVENTS[0])
    # A second reader sees it at once, without close(): a kill -9 would keep it.
    assert list(JournalReader(path)) == [EVENTS[0]]
    writer.close()


def test_torn_last_line_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "torn.knobtop.jsonl"
    write(path)
    whole = path.read_bytes()
    path.write_bytes(whole[: len(whole) - 25])  # cut inside the last event
    reader = JournalReader(path)
    assert list(reader) == EVENTS[:-1]
    assert reader.stats.torn_tail


def test_corrupt_middle_line_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.knobtop.jsonl"
    write(path)
    lines = path.read_bytes().splitlines(keepends=True)
    lines[3] = b'{"ev":"load", oops\n'
    path.write_bytes(b"".join(lines))
    with pytest.raises(JournalFormatError) as info:
        list(JournalReader(path))
    assert info.value.line_no == 4
    assert f"{path}:4:" in str(info.value)


def test_not_a_journal_is_refused_on_line_one(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello\n")
    with pytest.raises(JournalFormatError) as info:
        _ = JournalReader(path).header
    assert info.value.line_no == 1
    assert "not a knobtop journal" in str(info.value)


def test_unknown_event_type_is_kept_not_fatal(tmp_path: Path) -> None:
    path = tmp_path / "newer.knobtop.jsonl"
    write(path)
    with path.open("ab") as fh:
        fh.write(b'{"ev":"hologram","t":3.0,"wall":1700000003.0,"x":1}\n')
    reader = JournalReader(path)
    events = list(reader)
    assert isinstance(events[-1], Unknown)
    assert events[-1].type == "hologram" and events[-1].data == {"x": 1}
    assert reader.stats.unknown_types == 1


def test_a_free_text_field_that_is_the_secret_is_redacted(tmp_path: Path) -> None:
    """The writer's safety net replaces whole free-text values only (issue 13 item 6: it
    used to replace substrings, so a password "1" turned "0.1" and "db1" into [redacted]).
    Secrets are kept out of events where they are made; this test changed with that."""
    path = tmp_path / "s.knobtop.jsonl"
    writer = JournalWriter(path, header())
    writer.add_secret("hunter2-s3cret")
    writer.append(Note(t=1.0, wall=1.0, text="hunter2-s3cret"))
    writer.close()
    data = path.read_bytes()
    assert b"hunter2-s3cret" not in data
    assert b"[redacted]" in data


@pytest.mark.parametrize("secret", ["1234", 'quo"te\\back', "ev", "wall"])
def test_a_secret_inside_other_text_and_numbers_is_left_alone(
    tmp_path: Path, secret: str
) -> None:
    path = tmp_path / "r.knobtop.jsonl"
    head = Header(format=1, knobtop="t", profile=f"p-{secret}", started_wall=1.0, interval=1.0)
    writer = JournalWriter(path, head, secrets=(secret,))
    writer.append(Note(t=1.0, wall=81234567.0, text=f"x{secret}y"))
    writer.append(Sample(t=2.0, wall=2.0, v=[1234, 81234567]))
    writer.close()
    reader = JournalReader(path)
    events = list(reader)  # still valid JSON: nothing raised
    assert reader.header.profile == f"p-{secret}"
    assert events[0].text == f"x{secret}y"  # type: ignore[attr-defined]
    assert events[1] == Sample(t=2.0, wall=2.0, v=[1234, 81234567])  # numbers untouched
    assert b"[redacted]" not in path.read_bytes()


def test_samples_stay_under_one_kilobyte() -> None:
    recorded = repo_paths.DATA / "journals" / "lab-read-write.knobtop.jsonl"
    lines = [ln for ln in recorded.read_bytes().splitlines() if b'"ev":"sample"' in ln]
    assert len(lines) >= 5
    assert max(len(ln) for ln in lines) < 1024
