"""Sampled counters against the server's own SHOW GLOBAL STATUS, read by the test around them."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import pytest

from conftest import EventCollector, status_numbers
from knobtop.hosts.local import LocalHost
from knobtop.journal import Sample
from knobtop.metrics import SERVER_COUNTERS
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.server.status import METRIC_PREFIX
from knobtop.session.core import Session, SessionConfig

pytestmark = pytest.mark.integration

# Counters that only ever grow while the server runs (gauges such as Threads_running or
# Innodb_buffer_pool_pages_dirty are left out: they may go either way between reads).
MONOTONIC = (
    "Uptime", "Questions", "Queries", "Com_commit", "Com_rollback", "Handler_commit",
    "Handler_rollback", "Com_select", "Com_insert", "Com_update", "Com_delete",
    "Innodb_buffer_pool_read_requests", "Innodb_buffer_pool_reads",
    "Innodb_buffer_pool_pages_flushed", "Innodb_buffer_pool_wait_free",
    "Innodb_row_lock_waits", "Innodb_row_lock_time", "Innodb_rows_read",
    "Innodb_rows_inserted", "Innodb_rows_updated", "Innodb_rows_deleted",
    "Innodb_data_reads", "Innodb_data_writes", "Innodb_data_fsyncs",
    "Innodb_os_log_written", "Innodb_log_waits",
)
# Each poll is one client SELECT, so these grow between any two samples by the poll itself.
MOVED_BY_EVERY_POLL = ("Questions", "Queries", "Com_select")
# The test's own traffic between samples: an InnoDB table read and written each round.
MOVED_BY_THE_TEST = ("Innodb_buffer_pool_read_requests", "Com_insert", "Handler_commit")
DATABASE = "knobtop_sampler_values"
ROUNDS = 5


def sent_at(sample: Sample) -> float:
    """When the sample's poll was sent, on the session clock (t is the poll's midpoint)."""
    return sample.t - sample.lat / 2


async def test_every_sampled_counter_lies_between_the_tests_own_reads(
    mariadb_info: ConnectionInfo, tmp_path: Path, collector: EventCollector
) -> None:
    """Each round: the test reads SHOW GLOBAL STATUS, waits for a sample whose poll was sent
    after that read, then reads again; every monotonic counter of that sample lies between
    the two reads, and the counters the polls and the test's traffic move really moved."""
    config = SessionConfig(profile="test", connection=mariadb_info, interval=0.2,
                           journal_path=tmp_path / "v.knobtop.jsonl")
    session = Session(config, LocalHost(), driver=None)
    session.listeners.append(collector)
    index = {name: i for i, name in enumerate(SERVER_COUNTERS)}
    link = ServerLink(mariadb_info)
    await link.connect()
    bracketed: list[tuple[dict[str, int], Sample, dict[str, int]]] = []
    try:
        await link.query(f"CREATE DATABASE IF NOT EXISTS `{DATABASE}`")
        await link.query(f"CREATE TABLE IF NOT EXISTS `{DATABASE}`.`t` "
                         "(id INT AUTO_INCREMENT PRIMARY KEY, v INT) ENGINE=InnoDB")
        await session.open()
        try:
            for round_no in range(ROUNDS):
                await link.query(f"INSERT INTO `{DATABASE}`.`t` (v) VALUES (%s)", (round_no,))
                await link.query(f"SELECT COUNT(*), SUM(v) FROM `{DATABASE}`.`t`")
                before = await status_numbers(link)
                mark = session.now() + 0.001  # rounding of t and lat stays far below this

                def fresh(events: list[object], mark: float = mark) -> bool:
                    return any(isinstance(e, Sample) and sent_at(e) >= mark for e in events)

                await collector.wait_for(fresh, timeout=10)
                sample = next(e for e in collector.events
                              if isinstance(e, Sample) and sent_at(e) >= mark)
                after = await status_numbers(link)
                bracketed.append((before, sample, after))
        finally:
            await session.close()
    finally:
        try:
            await link.query(f"DROP DATABASE IF EXISTS `{DATABASE}`")
        finally:
            await link.close()

    assert len(bracketed) == ROUNDS
    for before, sample, after in bracketed:
        assert len(sample.v) == len(SERVER_COUNTERS)
        present = [name for name in MONOTONIC if name.lower() in after]
        # Innodb_rows_* are gone from MariaDB 10.6+; the rest must all be there.
        assert len(present) >= len(MONOTONIC) - 4, present
        assert {*MOVED_BY_EVERY_POLL, *MOVED_BY_THE_TEST} <= set(present)
        for name in present:
            value = sample.v[index[name]]
            low, high = before[name.lower()], after[name.lower()]
            assert value is not None, name
            assert low <= value <= high, (name, low, value, high)
        # None exactly where the server has no such status variable (MyRocks is not loaded).
        for name in SERVER_COUNTERS:
            if not name.startswith(METRIC_PREFIX):
                assert (sample.v[index[name]] is None) == (name.lower() not in after), name
    samples = [s for _, s, _ in bracketed]
    for earlier, later in pairwise(samples):
        for name in MOVED_BY_EVERY_POLL:
            assert earlier.v[index[name]] < later.v[index[name]], name  # type: ignore[operator]
        for name in MOVED_BY_THE_TEST:  # an INSERT and a read of the table came in between
            assert earlier.v[index[name]] < later.v[index[name]], name  # type: ignore[operator]


async def test_innodb_metrics_are_read_only_where_the_server_enables_them(
    mariadb_info: ConnectionInfo, tmp_path: Path, collector: EventCollector
) -> None:
    """The im: counters: a number where INNODB_METRICS has the row enabled, None otherwise."""
    link = ServerLink(mariadb_info)
    await link.connect()
    try:
        rows = await link.query("SELECT NAME, ENABLED FROM information_schema.INNODB_METRICS")
    finally:
        await link.close()
    enabled = {str(name): int(flag) == 1 for name, flag in rows}
    ours = [n[len(METRIC_PREFIX):] for n in SERVER_COUNTERS if n.startswith(METRIC_PREFIX)]
    # Both branches are exercised: MariaDB enables history length and not checkpoint age.
    assert {enabled[m] for m in ours} == {True, False}
    config = SessionConfig(profile="test", connection=mariadb_info, interval=0.2,
                           journal_path=tmp_path / "m.knobtop.jsonl")
    session = Session(config, LocalHost(), driver=None)
    session.listeners.append(collector)
    await session.open()
    try:
        await collector.wait_for(
            lambda ev: sum(isinstance(e, Sample) for e in ev) >= 2, timeout=10)
    finally:
        await session.close()
    sample = next(e for e in collector.events if isinstance(e, Sample))
    for i, name in enumerate(SERVER_COUNTERS):
        if name.startswith(METRIC_PREFIX):
            metric = name[len(METRIC_PREFIX):]
            assert (sample.v[i] is not None) == enabled.get(metric, False), name
