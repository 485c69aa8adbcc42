"""The sampler against a real mariadbd: schedule, raw counters, gaps and reconnects."""

from __future__ import annotations

import itertools
import time
from pathlib import Path

import pytest

from conftest import EventCollector
from knobtop.hosts.local import LocalHost
from knobtop.hosts.procstat import OS_FIELDS
from knobtop.journal import Error, JournalReader, Sample
from knobtop.journal.events import Event
from knobtop.lab import Sandbox
from knobtop.metrics import SERVER_COUNTERS, MetricBoard
from knobtop.server.link import ConnectionInfo, ServerError
from knobtop.session.core import Session, SessionConfig

# Its assertions hold the machine's timing (sysbench's per-second lines, the sampler's
# schedule, deadlines): run with no other live test beside it (make test).
pytestmark = [pytest.mark.integration, pytest.mark.serial]


def make_session(info: ConnectionInfo, tmp_path: Path, interval: float = 1.0) -> Session:
    config = SessionConfig(
        profile="test", connection=info, journal_path=tmp_path / "s.knobtop.jsonl",
        interval=interval,
    )
    return Session(config, LocalHost(), driver=None)


def samples(events: list) -> list[Sample]:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, Sample)]


class ArrivalClock:
    """A listener noting the test's own monotonic time as each event goes out."""

    def __init__(self) -> None:
        self.at: list[tuple[Event, float]] = []

    def __call__(self, event: Event) -> None:
        self.at.append((event, time.monotonic()))


async def test_samples_arrive_on_schedule_with_raw_counters(
    mariadb_info: ConnectionInfo, tmp_path: Path, collector: EventCollector
) -> None:
    interval = 0.2
    session = make_session(mariadb_info, tmp_path, interval=interval)
    session.listeners.append(collector)
    clock = ArrivalClock()
    session.listeners.append(clock)
    opened = time.monotonic()  # the session's clock starts after this
    await session.open()
    try:
        await collector.wait_for(lambda ev: len(samples(ev)) >= 11, timeout=15)
    finally:
        await session.close()
    got = samples(collector.events)
    went_out = [m for e, m in clock.at if isinstance(e, Sample)]
    # The session's time origin, at the latest: the first event (stamped, then handed to
    # the listeners) went out no earlier than its stamp.  (Stamps are rounded to 0.1 ms.)
    first, first_out = clock.at[0]
    origin = first_out - first.t + 1e-4
    # Each sample is stamped when it was taken: after the one before it went out, before
    # itself went out; so stamps strictly increase.
    for i, sample in enumerate(got):
        assert opened + sample.t <= went_out[i], (i, sample.t)
        if i:
            assert origin + sample.t >= went_out[i - 1], (i, sample.t)
    gaps = [b.t - a.t for a, b in itertools.pairwise(got)]
    assert all(g > 0 for g in gaps), gaps
    # Polls are due on a 0.2 s grid and never double up: n samples need (n-1) whole
    # intervals between the session's start and the last one going out.
    assert (len(got) - 1) * interval <= went_out[-1] - opened, (len(got), went_out)
    names = list(SERVER_COUNTERS)
    for name in ("Questions", "Innodb_buffer_pool_read_requests", "Handler_commit"):
        assert got[-1].v[names.index(name)] is not None
    # Every poll is a statement itself: Questions grows from each sample to the next.
    questions = [int(s.v[names.index("Questions")] or 0) for s in got]
    assert all(b > a for a, b in itertools.pairwise(questions)), questions
    assert all(s.lat > 0 for s in got)
    assert len(got[0].host["local"]) == len(OS_FIELDS)


async def test_journal_holds_what_listeners_saw(
    mariadb_info: ConnectionInfo, tmp_path: Path, collector: EventCollector
) -> None:
    session = make_session(mariadb_info, tmp_path, interval=0.1)
    session.listeners.append(collector)
    await session.open()
    await collector.wait_for(lambda ev: len(samples(ev)) >= 5, timeout=10)
    await session.close()
    reader = JournalReader(tmp_path / "s.knobtop.jsonl")
    assert list(reader) == collector.events
    assert reader.header.counters == list(SERVER_COUNTERS)
    assert reader.header.server["flavor"] == "mariadb"
    board = MetricBoard(reader.header)
    for event in JournalReader(tmp_path / "s.knobtop.jsonl"):
        board.apply(event)
    assert board.latest["qps"] is not None and board.latest["qps"] > 0
    assert mariadb_info.password not in (tmp_path / "s.knobtop.jsonl").read_text()


async def test_server_going_away_marks_a_gap_and_sampling_resumes(
    tmp_path: Path, collector: EventCollector
) -> None:
    sandbox = Sandbox(tmp_path / "lab")
    info = sandbox.start()
    session = make_session(info, tmp_path, interval=0.2)
    session.listeners.append(collector)
    await session.open()
    try:
        await collector.wait_for(lambda ev: len(samples(ev)) >= 2, timeout=10)
        sandbox.stop()
        await collector.wait_for(lambda ev: any(getattr(e, "gap", False) for e in ev), 15)
        before = len(samples(collector.events))
        sandbox.start()
        await collector.wait_for(lambda ev: len(samples(ev)) > before + 1, timeout=30)
    finally:
        await session.close()
        sandbox.stop()
    errors = [e for e in collector.events if isinstance(e, Error)]
    assert errors[0].gap and errors[0].source == "sampler"
    assert any("resumed" in e.message for e in errors[1:])
    resumed = samples(collector.events)[before]
    assert resumed.re  # first sample after reconnect: no rate is derived across it
    uptime = SERVER_COUNTERS.index("Uptime")
    assert resumed.v[uptime] is not None


async def test_unreachable_server_names_the_address_and_writes_nothing(tmp_path: Path) -> None:
    from knobtop.lab import free_port

    info = ConnectionInfo(host="127.0.0.1", port=free_port(), user="x", password="y")
    session = make_session(info, tmp_path)
    with pytest.raises(ServerError) as exc:
        await session.open()
    assert f"127.0.0.1:{info.port}" in str(exc.value)
    assert "running" in str(exc.value)
    assert not (tmp_path / "s.knobtop.jsonl").exists()
