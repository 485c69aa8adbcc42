"""JournalFollower: tails another process's writes, waits for torn lines, survives rotation."""

from __future__ import annotations

import asyncio
import os
import sys
import time
from collections.abc import AsyncGenerator
from pathlib import Path

import orjson

from knobtop.journal import Error, Event, Header, JournalWriter, Mark, Sample
from knobtop.journal.events import to_dict
from knobtop.journal.follow import ROTATED_MESSAGE, JournalFollower
from knobtop.journal.index import JournalIndex

WAIT = 15.0  # upper bound for any condition below; a passing run takes milliseconds

# Appends a first batch, then waits for "more" on stdin and appends a second batch; every
# event is fsynced (the writer's per-second policy, done at once).  ``wall`` is set ``lag``
# seconds in the past so the follower's lag can be checked.
WRITER = """
import sys, time
from pathlib import Path
from knobtop.journal import Header, JournalWriter, Sample

path, n, lag = Path(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3])
header = Header(format=1, knobtop="test", profile="child", started_wall=time.time(),
                interval=1.0, counters=["Questions"], host_fields=["user"])
w = JournalWriter(path, header)
def batch(start):
    for i in range(start, start + n):
        w.append(Sample(t=float(i), wall=time.time() - lag, v=[i], host={"local": [1.0]}))
        w.sync()
batch(0)
print("first", flush=True)
sys.stdin.readline()
batch(n)
w.close()
print("done", flush=True)
"""


def header(profile: str) -> Header:
    return Header(
        format=1, knobtop="test", profile=profile, started_wall=time.time(), interval=1.0,
        counters=["Questions"], host_fields=["user"],
    )


def profile(follower: JournalFollower) -> str | None:
    return None if follower.header is None else follower.header.profile


def sample(i: int, wall: float | None = None) -> Sample:
    return Sample(t=float(i), wall=time.time() if wall is None else wall, v=[i])


async def take(stream: AsyncGenerator[Event, None], n: int) -> list[Event]:
    """The next ``n`` events of ``stream``, failing after WAIT seconds."""
    out: list[Event] = []

    async def run() -> None:
        async for event in stream:
            out.append(event)
            if len(out) >= n:
                return

    await asyncio.wait_for(run(), WAIT)
    return out


async def test_follower_sees_events_appended_by_another_process(tmp_path: Path) -> None:
    path = tmp_path / "child.knobtop.jsonl"
    follower = JournalFollower(path)
    stream = follower.events(poll=0.02)
    assert follower.poll() == [] and profile(follower) is None  # no file yet: wait for it
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", WRITER, str(path), "40", "30",
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        first = await take(stream, 40)
        assert profile(follower) == "child"
        proc.stdin.write(b"more\n")
        await proc.stdin.drain()
        second = await take(stream, 40)
        assert await asyncio.wait_for(proc.stdout.read(), WAIT) == b"first\ndone\n"
        assert await asyncio.wait_for(proc.wait(), WAIT) == 0
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    events = first + second
    assert [e.v for e in events if isinstance(e, Sample)] == [[i] for i in range(80)]
    lag = follower.lag
    assert lag is not None and 29.0 < lag < 30.0 + WAIT
    assert follower.problems == []
    await stream.aclose()


async def test_follower_survives_the_file_being_replaced(tmp_path: Path) -> None:
    path = tmp_path / "live.knobtop.jsonl"
    old = JournalWriter(path, header("old"))
    for i in range(3):
        old.append(sample(i))
    follower = JournalFollower(path)
    stream = follower.events(poll=0.02)
    assert [e.t for e in await take(stream, 3)] == [0.0, 1.0, 2.0]
    assert profile(follower) == "old"

    new_path = tmp_path / "next.knobtop.jsonl"
    new = JournalWriter(new_path, header("new"))
    new.append(Mark(t=0.1, wall=time.time(), label="fresh"))
    new.append(sample(100))
    old.append(sample(3))  # the old file's last words, written just before the rename
    os.replace(new_path, path)
    got = await take(stream, 4)
    assert isinstance(got[0], Sample) and got[0].t == 3.0
    gap = got[1]
    assert isinstance(gap, Error)
    assert (gap.source, gap.message, gap.gap) == ("follow", ROTATED_MESSAGE, True)
    assert isinstance(got[2], Mark) and got[2].label == "fresh"
    assert isinstance(got[3], Sample) and got[3].t == 100.0
    assert profile(follower) == "new"
    assert follower.rotations == 1

    new.append(sample(101))  # the writer goes on in the file now at ``path``
    assert [e.t for e in await take(stream, 1)] == [101.0]
    old.close()
    new.close()
    await stream.aclose()


async def test_follower_notices_truncation_and_a_rewrite_in_place(tmp_path: Path) -> None:
    path = tmp_path / "trunc.knobtop.jsonl"

    def lines(profile: str, ts: range) -> bytes:
        out = [orjson.dumps(to_dict(header(profile)))]
        out += [orjson.dumps(to_dict(sample(i))) for i in ts]
        return b"\n".join(out) + b"\n"

    path.write_bytes(lines("one", range(5)))
    follower = JournalFollower(path)
    assert [e.t for e in follower.poll()] == [0.0, 1.0, 2.0, 3.0, 4.0]
    with path.open("r+b") as fh:  # same inode, shorter
        fh.truncate(0)
    got = follower.poll()
    assert len(got) == 1 and isinstance(got[0], Error) and got[0].gap
    assert follower.poll() == []  # no header yet: wait for one
    path.write_bytes(lines("two", range(10, 12)))
    assert [e.t for e in follower.poll()] == [10.0, 11.0]
    assert profile(follower) == "two"

    # rewritten in place to a longer file before the follower looked: the header differs
    path.write_bytes(lines("three", range(20, 30)))
    got = follower.poll()
    assert isinstance(got[0], Error) and [e.t for e in got[1:]] == [float(t) for t in range(20, 30)]
    assert profile(follower) == "three"
    assert follower.rotations == 2
    follower.close()


def test_a_line_without_its_newline_waits_for_the_rest(tmp_path: Path) -> None:
    path = tmp_path / "torn.knobtop.jsonl"
    line = orjson.dumps(to_dict(sample(7)))
    path.write_bytes(orjson.dumps(to_dict(header("x"))) + b"\n" + line[:20])
    follower = JournalFollower(path)
    assert follower.poll() == []
    with path.open("ab") as fh:
        fh.write(line[20:])
    assert follower.poll() == []  # complete JSON, but no newline yet
    with path.open("ab") as fh:
        fh.write(b"\nnot json\n")
    got = follower.poll()
    assert [e.t for e in got] == [7.0, 7.0]  # the sample, then what was wrong with line 3
    assert isinstance(got[1], Error) and got[1].source == "journal" and not got[1].gap
    assert got[1].message.startswith(f"{path}:3: not valid JSON")
    assert follower.problems and follower.problems[0][0] == 3
    follower.close()


def test_lag_is_seconds_since_the_newest_events_wall(tmp_path: Path) -> None:
    path = tmp_path / "lag.knobtop.jsonl"
    writer = JournalWriter(path, header("lag"))
    follower = JournalFollower(path)
    assert follower.poll() == []
    assert [follower.lag] == [None]
    writer.append(sample(1, wall=time.time() - 120))
    writer.append(sample(2, wall=time.time() - 60))
    assert len(follower.poll()) == 2
    lag = follower.lag
    assert lag is not None and 60.0 <= lag < 60.0 + WAIT
    writer.append(sample(3))
    follower.poll()
    lag = follower.lag
    assert lag is not None and 0.0 <= lag < WAIT
    writer.close()
    follower.close()


def test_follower_picks_up_where_an_index_stopped(tmp_path: Path) -> None:
    path = tmp_path / "handoff.knobtop.jsonl"
    writer = JournalWriter(path, header("h"))
    for i in range(50):
        writer.append(sample(i))
    idx = JournalIndex(path)
    idx.build()
    follower = JournalFollower.after(idx)
    assert follower.poll() == []
    writer.append(sample(50))
    writer.append(Mark(t=50.5, wall=time.time(), label="m"))
    got = follower.poll()
    assert [e.t for e in got] == [50.0, 50.5]
    with path.open("ab") as fh:
        fh.write(b"oops\n")
    follower.poll()
    assert follower.problems[0][0] == 1 + 52 + 1  # header, 52 events, then the bad line
    writer.close()
    follower.close()
    idx.close()
