"""The sampler against a real mariadbd: schedule, raw counters, gaps and reconnects."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from conftest import EventCollector
from knobtop.hosts.local import LocalHost
from knobtop.hosts.procstat import OS_FIELDS
from knobtop.journal import Error, JournalReader, Sample
from knobtop.lab import Sandbox
from knobtop.metrics import SERVER_COUNTERS, MetricBoard
from knobtop.server.link import ConnectionInfo, ServerError
from knobtop.session import Session, SessionConfig

pytestmark = pytest.mark.integration


def make_session(info: ConnectionInfo, tmp_path: Path, interval: float = 1.0) -> Session:
    config = SessionConfig(
        profile="test", connection=info, journal_path=tmp_path / "s.knobtop.jsonl",
        interval=interval,
    )
    return Session(config, LocalHost(), driver=None)


def samples(events: list) -> list[Sample]:  # type: ignore[type-arg]
    return [e for e in events if isinstance(e, Sample)]


async def test_samples_arrive_on_schedule_with_raw_counters(
    mariadb_info: ConnectionInfo, tmp_path: Path, collector: EventCollector
) -> None:
    session = make_session(mariadb_info, tmp_path, interval=0.2)
    session.listeners.append(collector)
    await session.open()
    try:
        await collector.wait_for(lambda ev: len(samples(ev)) >= 11, timeout=15)
    finally:
        await session.close()
    got = samples(collector.events)
    gaps = [b.t - a.t for a, b in itertools.pairwise(got)]
    # Polls are due on a 0.2 s grid: spacing stays near it, never doubles up.
    assert all(0.1 < g < 0.4 for g in gaps), gaps
    assert 0.17 < sum(gaps) / len(gaps) < 0.23
    names = list(SERVER_COUNTERS)
    for name in ("Questions", "Innodb_buffer_pool_read_requests", "Handler_commit"):
        assert got[-1].v[names.index(name)] is not None
    questions = [s.v[names.index("Questions")] for s in got]
    assert questions == sorted(questions) and questions[-1] > questions[0]
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
