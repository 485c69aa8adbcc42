"""`knobtop follow DIR` / `--latest`: the newest journal in a folder, then each newer one."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from knobtop.cli import follow_target, main
from knobtop.journal import End, Error, Event, Header, JournalWriter, Mark, Sample
from knobtop.journal.follow_dir import DirectoryFollower, JournalFolder, switched_message


def header(profile: str, started: float) -> Header:
    return Header(format=1, knobtop="test", profile=profile, started_wall=started,
                  interval=1.0, counters=["Questions"], host_fields=["user"])


def sample(i: int) -> Sample:
    return Sample(t=float(i), wall=time.time(), v=[i])


def kinds(events: list[Event]) -> list[str]:
    out = []
    for e in events:
        if isinstance(e, Sample):
            out.append(f"s{e.t:g}")
        elif isinstance(e, Error):
            out.append(f"error:{e.source}")
        else:
            out.append(type(e).__name__)
    return out


def test_the_follower_moves_to_a_newer_journal_after_the_old_ones_last_lines(
    tmp_path: Path,
) -> None:
    t0 = time.time() - 100
    old = JournalWriter(tmp_path / "lab-1.knobtop.jsonl", header("first", t0))
    old.append(sample(0))
    follower = DirectoryFollower(tmp_path, scan_interval=0)
    assert kinds(follower.poll()) == ["s0"]
    assert not follower.waiting
    assert follower.header is not None and follower.header.profile == "first"

    old.append(sample(1))
    old.append(End(t=1.5, wall=time.time(), reason="quit"))
    old.close()
    # The lab starts again: a new file, its name sorting *before* the old one's (a
    # --journal name), but started later: newest is by the header, not by name.
    new = JournalWriter(tmp_path / "again.knobtop.jsonl", header("second", t0 + 50))
    new.append(Mark(t=0.2, wall=time.time(), label="fresh"))
    new.append(sample(7))
    got = follower.poll()
    assert kinds(got) == ["s1", "End", "error:follow", "Mark", "s7"]
    switch = got[2]
    assert isinstance(switch, Error) and switch.gap
    assert switch.message == switched_message(tmp_path / "again.knobtop.jsonl")
    assert follower.path == tmp_path / "again.knobtop.jsonl"
    assert follower.header is not None and follower.header.profile == "second"
    assert follower.switches == 1 and follower.switched_wall is not None

    new.append(sample(8))  # it goes on in the new file
    assert kinds(follower.poll()) == ["s8"]
    new.close()
    follower.close()


def test_older_unreadable_half_written_and_odd_files_are_not_followed(tmp_path: Path) -> None:
    t0 = time.time()
    cur = JournalWriter(tmp_path / "cur.knobtop.jsonl", header("cur", t0))
    follower = DirectoryFollower(tmp_path, scan_interval=0)
    assert follower.poll() == []
    cur.append(sample(0))
    assert kinds(follower.poll()) == ["s0"]

    JournalWriter(tmp_path / "older.knobtop.jsonl", header("older", t0 - 10)).close()
    (tmp_path / "junk.knobtop.jsonl").write_bytes(b"not a journal\n")
    (tmp_path / "binary.knobtop.jsonl").write_bytes(b"\xff\xfe\x00" * 100 + b"\n")
    (tmp_path / "empty.knobtop.jsonl").write_bytes(b"")
    (tmp_path / "dir.knobtop.jsonl").mkdir()
    os.mkfifo(tmp_path / "fifo.knobtop.jsonl")  # opening it for reading would block
    newer = JournalWriter(tmp_path / "z-newer.knobtop.jsonl", header("newer", t0 + 10))
    (tmp_path / "z-newer.txt").write_bytes(b"")  # not *.knobtop.jsonl
    line = (tmp_path / "z-newer.knobtop.jsonl").read_bytes()
    newer.close()
    half = tmp_path / "half.knobtop.jsonl"
    half.write_bytes(line[:-1].replace(b'"newer"', b'"half!"'))  # header without its newline
    (tmp_path / "z-newer.knobtop.jsonl").unlink()

    cur.append(sample(1))
    assert kinds(follower.poll()) == ["s1"]  # still on cur: nothing newer is readable
    assert follower.path.name == "cur.knobtop.jsonl" and follower.switches == 0
    with half.open("ab") as fh:
        fh.write(b"\n")
    got = follower.poll()
    assert kinds(got) == ["error:follow"] and follower.path == half
    assert follower.header is not None and follower.header.profile == "half!"
    cur.close()
    follower.close()


def test_an_empty_folder_waits_for_its_first_journal(tmp_path: Path) -> None:
    follower = DirectoryFollower(tmp_path, scan_interval=0)
    assert follower.waiting and follower.poll() == [] and follower.header is None
    writer = JournalWriter(tmp_path / "lab.knobtop.jsonl", header("lab", time.time()))
    writer.append(sample(3))
    assert kinds(follower.poll()) == ["s3"]  # the first journal is no switch
    assert not follower.waiting and follower.switches == 0
    assert follower.header is not None and follower.header.profile == "lab"
    writer.close()
    follower.close()


def test_the_folder_is_looked_at_once_per_scan_interval(tmp_path: Path) -> None:
    t0 = time.time()
    JournalWriter(tmp_path / "a.knobtop.jsonl", header("a", t0)).close()
    follower = DirectoryFollower(tmp_path, scan_interval=3600)
    follower.poll()
    JournalWriter(tmp_path / "b.knobtop.jsonl", header("b", t0 + 1)).close()
    assert follower.poll() == [] and follower.path.name == "a.knobtop.jsonl"
    follower.scan_interval = 0
    follower._next_scan = 0.0
    assert kinds(follower.poll()) == ["error:follow"] and follower.path.name == "b.knobtop.jsonl"
    follower.close()


def test_newest_is_by_header_start_and_none_for_a_missing_folder(tmp_path: Path) -> None:
    assert JournalFolder(tmp_path / "nope").newest() is None
    assert JournalFolder(tmp_path).newest() is None
    t0 = time.time()
    for name, started in (("b", t0), ("a", t0 + 5), ("c", t0 - 5)):
        JournalWriter(tmp_path / f"{name}.knobtop.jsonl", header(name, started)).close()
    found = JournalFolder(tmp_path).newest()
    assert found == (tmp_path / "a.knobtop.jsonl", t0 + 5)


def test_follow_target_names_the_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    journals = tmp_path / "data" / "knobtop" / "lab" / "journals"
    with pytest.raises(ValueError, match="or --latest for the newest one"):
        follow_target(None, latest=False)
    with pytest.raises(ValueError, match=f"{journals}: no lab journals folder yet"):
        follow_target(None, latest=True)
    journals.mkdir(parents=True)
    assert follow_target(None, latest=True) == journals
    assert follow_target(journals, latest=True) == journals
    assert follow_target(journals, latest=False) == journals
    file = journals / "x.knobtop.jsonl"
    file.write_bytes(b"")
    assert follow_target(file, latest=False) == file
    with pytest.raises(ValueError, match=f"give the folder \\({journals}\\)"):
        follow_target(file, latest=True)
    with pytest.raises(ValueError, match="no such file or folder"):
        follow_target(tmp_path / "missing.knobtop.jsonl", latest=False)


@pytest.mark.parametrize("argv", [["follow"], ["follow", "--latest", "{file}"],
                                  ["follow", "{missing}"]])
def test_follow_refusals_are_messages_not_tracebacks(
    argv: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    file = tmp_path / "x.knobtop.jsonl"
    JournalWriter(file, header("x", time.time())).close()
    args = [a.format(file=file, missing=tmp_path / "missing") for a in argv]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("knobtop: ") and "Traceback" not in err


@pytest.mark.parametrize("command", ["lab", "connect"])
def test_an_existing_journal_path_is_refused_before_anything_starts(
    command: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    journal = tmp_path / "kept.knobtop.jsonl"
    JournalWriter(journal, header("kept", time.time())).close()
    before = journal.read_bytes()
    lab = tmp_path / "lab"
    where = ["--dir", str(lab)] if command == "lab" else ["--target", "127.0.0.1"]
    assert main([command, *where, "--journal", str(journal), "--load", "none",
                 "--driver" if command == "lab" else "--interval",
                 "builtin" if command == "lab" else "1"]) == 2
    err = " ".join(capsys.readouterr().err.split())
    assert f"the journal {journal} already exists" in err
    assert "choose a new --journal path, or leave --journal out" in err
    assert journal.read_bytes() == before  # not appended to, not truncated
    assert not lab.exists()  # no sandbox was created, nothing started
