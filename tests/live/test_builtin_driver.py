"""The built-in load on a real mariadbd: reports like sysbench's, clean stops, clear errors."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from harness import paths as repo_paths
from knobtop.hosts.local import LocalHost
from knobtop.lab import Sandbox
from knobtop.load.base import LoadError, LoadExit, LoadSpec
from knobtop.load.builtin import BuiltinDriver, bucket, percentile_ms
from knobtop.load.prepare import prepare_tables
from knobtop.load.sysbench import Sysbench
from knobtop.load.sysbench_output import IntervalReport, parse_interval
from knobtop.server.link import ConnectionInfo, ServerLink

pytestmark = pytest.mark.integration
# The same tables as tests/live/test_session.py, so the two modules share one prepared set.
SMALL = LoadSpec(workload="oltp_point_select", threads=1, tables=1, table_size=1000)
REAL_LINE = repo_paths.DATA / "sysbench" / "oltp_point_select.8.txt"


@pytest.fixture(scope="module")
def tables(mariadb: Sandbox, sysbench_path: str) -> ConnectionInfo:
    info = mariadb.connection()
    sb = Sysbench(LocalHost(), mysql_socket=str(mariadb.socket), user=info.user,
                  password=info.password, database="sbtest")
    asyncio.run(prepare_tables(info, sb, SMALL))
    return info


class Recorder:
    """Collects reports and the exit; waits (bounded) for a condition on them."""

    def __init__(self) -> None:
        self.reports: list[IntervalReport] = []
        self.sources: set[str] = set()
        self.exits: list[LoadExit] = []
        self._changed = asyncio.Event()

    def report(self, src: str, report: IntervalReport) -> None:
        self.sources.add(src)
        self.reports.append(report)
        self._changed.set()

    async def exit(self, result: LoadExit) -> None:
        self.exits.append(result)
        self._changed.set()

    async def wait_for(self, predicate: Callable[[], bool], timeout: float) -> None:
        async with asyncio.timeout(timeout):
            while not predicate():
                self._changed.clear()
                await self._changed.wait()


def alive(pid: int) -> bool:
    """True while the process exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


async def wait_exited(pid: int, timeout: float) -> None:
    """Wait on the pid's pidfd (readable once it has exited); bounded."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    loop = asyncio.get_running_loop()
    gone = loop.create_future()
    loop.add_reader(fd, lambda: gone.done() or gone.set_result(None))
    try:
        async with asyncio.timeout(timeout):
            await gone
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def sysbench_keys() -> set[str]:
    line = next(x for x in REAL_LINE.read_text().splitlines() if x.startswith("[ "))
    parsed = parse_interval(line)
    assert parsed is not None
    return set(parsed.to_event())


async def com_select(link: ServerLink) -> int:
    """The server's own count of SELECT statements (SHOW is not one of them)."""
    rows = await link.query("SHOW GLOBAL STATUS LIKE 'Com_select'")
    return int(rows[0][1])


async def test_point_select_reports_every_second_like_sysbench(tables: ConnectionInfo) -> None:
    driver = BuiltinDriver(tables, processes=2)
    rec = Recorder()
    spec = replace(SMALL, threads=4, duration=3)
    link = ServerLink(tables)  # the test's own link: what the server counted
    await link.connect()
    try:
        async with asyncio.timeout(10):
            before = await com_select(link)
        began = time.monotonic()
        await driver.start(spec, rec.report, rec.exit)
        assert driver.running
        await rec.wait_for(lambda: bool(rec.exits), timeout=30)  # the run ends by itself
        took = time.monotonic() - began
        async with asyncio.timeout(10):
            selects = await com_select(link) - before
    finally:
        await link.close()
    assert not driver.running
    assert rec.sources == {"builtin@local"}
    assert len(rec.reports) >= 2
    assert [r.second for r in rec.reports] == list(range(1, len(rec.reports) + 1))
    for r in rec.reports:
        assert set(r.to_event()) == sysbench_keys()
        assert r.tps > 0 and r.qps == r.tps == r.reads
        assert r.writes == r.other == 0
        assert r.threads == 4 and r.latency_percentile == 95 and r.latency_ms > 0
        assert r.errors_per_s == r.reconnects_per_s == 0
    (result,) = rec.exits
    assert result.error == "" and not result.stopped and result.returncode == 0
    assert result.summary is not None
    summary = result.summary
    assert summary.transactions == summary.reads > 0
    # Checked against the server's count. This module's server is this test run's private
    # sandbox and tests run one at a time, so the only other SELECTs are the driver's own
    # uncounted ones: each worker checks each table once before the clock starts, and each
    # client may have one statement in flight when the deadline cancels it (executed, not
    # finished, so not counted). Hence 0 <= server - driver <= workers*tables + threads.
    assert 0 <= selects - summary.reads <= len(driver.worker_pids) * spec.tables + spec.threads
    # Each per-second TPS is that second's count over its length, 1 s plus the worker's
    # tick lateness (tens of ms at worst on a loaded 2-core box): their sum is the count of
    # the reported seconds within 10%. One worker's lost second is 1/6 of it here.
    assert sum(r.tps for r in rec.reports) == pytest.approx(selects, rel=0.10)
    # The run ended at its own deadline, not early (rounding and clock resolution aside),
    # and within the time the test saw it run. How far past the deadline it ends is a
    # figure, not a condition: bench/builtin_run_length.py measures it.
    assert spec.duration - 0.01 <= summary.total_time_s <= took
    assert await driver.stop() is None  # nothing left to stop


async def test_read_write_queries_per_transaction_are_14_4_2(tables: ConnectionInfo) -> None:
    driver = BuiltinDriver(tables)
    rec = Recorder()
    await driver.start(replace(SMALL, workload="oltp_read_write", threads=4), rec.report, rec.exit)
    try:
        await rec.wait_for(lambda: len(rec.reports) >= 2, timeout=30)
    finally:
        result = await driver.stop()
    assert result is not None and result.stopped and result.error == ""
    assert rec.exits == [result]
    for r in rec.reports[:2]:
        assert set(r.to_event()) == sysbench_keys()
        assert r.tps > 0
        assert r.reads / r.tps == pytest.approx(14, rel=0.01)
        assert r.writes / r.tps == pytest.approx(4, rel=0.01)
        assert r.other / r.tps == pytest.approx(2, rel=0.01)
        assert r.qps == pytest.approx(20 * r.tps, rel=0.01)
    summary = result.summary
    assert summary is not None and summary.transactions > 0
    assert (summary.reads, summary.writes, summary.other) == (
        14 * summary.transactions, 4 * summary.transactions, 2 * summary.transactions)


async def test_stop_leaves_no_worker_and_no_password_in_argv(tables: ConnectionInfo) -> None:
    driver = BuiltinDriver(tables, processes=2)
    rec = Recorder()
    await driver.start(replace(SMALL, threads=4), rec.report, rec.exit)
    pids = list(driver.worker_pids)
    try:
        assert len(pids) == 2 and all(alive(p) for p in pids)
        for pid in pids:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            environ = Path(f"/proc/{pid}/environ").read_bytes().decode(errors="replace")
            assert tables.password not in argv and tables.password not in environ
        await rec.wait_for(lambda: len(rec.reports) >= 1, timeout=30)
    finally:
        await driver.stop()
    assert not driver.running
    assert not [p for p in pids if alive(p)]
    assert len(rec.exits) == 1 and rec.exits[0].stopped


async def test_workers_exit_when_the_parent_dies(tables: ConnectionInfo) -> None:
    """SIGKILL the process that owns the driver: its workers must not run on."""
    code = (
        "import asyncio, json, sys\n"
        "from knobtop.load.base import LoadSpec\n"
        "from knobtop.load.builtin import BuiltinDriver\n"
        "from knobtop.server.link import ConnectionInfo\n"
        "async def main():\n"
        "    info = ConnectionInfo(**json.loads(sys.stdin.readline()))\n"
        "    d = BuiltinDriver(info, processes=2)\n"
        "    async def on_exit(e): pass\n"
        "    spec = LoadSpec(workload='oltp_point_select', threads=2, tables=1, table_size=1000)\n"
        "    await d.start(spec, lambda s, r: None, on_exit)\n"
        "    print(json.dumps(d.worker_pids), flush=True)\n"
        "    await asyncio.sleep(120)\n"
        "asyncio.run(main())\n"
    )
    parent = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )
    assert parent.stdin is not None and parent.stdout is not None
    fields = {"host": tables.host, "port": tables.port, "user": tables.user,
              "password": tables.password, "socket": tables.socket}
    parent.stdin.write(json.dumps(fields).encode() + b"\n")  # the password goes on stdin
    await parent.stdin.drain()
    try:
        async with asyncio.timeout(30):
            pids = json.loads(await parent.stdout.readline())
    finally:
        parent.send_signal(signal.SIGKILL)
        await parent.wait()
    assert len(pids) == 2
    for pid in pids:
        await wait_exited(pid, timeout=10)
        assert not alive(pid)


async def test_unknown_workload_names_the_two_supported(tables: ConnectionInfo) -> None:
    driver = BuiltinDriver(tables)
    rec = Recorder()
    for workload in ("oltp_insert", "no_such_workload"):
        with pytest.raises(LoadError) as err:
            await driver.start(replace(SMALL, workload=workload), rec.report, rec.exit)
        message = str(err.value)
        assert workload in message
        assert "oltp_point_select" in message and "oltp_read_write" in message
    assert not driver.running and driver.worker_pids == []


async def test_wrong_password_is_a_clear_load_error(tables: ConnectionInfo) -> None:
    bad = replace(tables, password="not-the-password")
    driver = BuiltinDriver(bad, processes=2)
    rec = Recorder()
    async with asyncio.timeout(30):
        with pytest.raises(LoadError) as err:
            await driver.start(replace(SMALL, threads=2), rec.report, rec.exit)
    message = str(err.value)
    assert bad.where in message and "refused user" in message and "not-the-password" not in message
    assert not driver.running and rec.reports == [] and rec.exits == []
    assert driver.worker_pids and not [p for p in driver.worker_pids if alive(p)]


async def test_missing_database_and_unreachable_server_name_the_server(
    tables: ConnectionInfo,
) -> None:
    rec = Recorder()
    async with asyncio.timeout(30):
        with pytest.raises(LoadError) as err:
            await BuiltinDriver(tables, database="no_such_db").start(SMALL, rec.report, rec.exit)
    assert tables.where in str(err.value) and "no_such_db" in str(err.value)
    closed = replace(tables, socket=None, host="127.0.0.1", port=1)
    async with asyncio.timeout(30):
        with pytest.raises(LoadError) as err:
            await BuiltinDriver(closed).start(SMALL, rec.report, rec.exit)
    assert "127.0.0.1:1" in str(err.value) and "cannot reach" in str(err.value)


def test_latency_percentile_follows_sysbench_histogram() -> None:
    assert percentile_ms({}, 95) == 0.0
    hist = {bucket(0.1): 95, bucket(10.0): 5}
    assert percentile_ms(hist, 95) == pytest.approx(0.1, rel=0.02)
    assert percentile_ms(hist, 99) == pytest.approx(10.0, rel=0.02)
    assert bucket(0.0) == 0 and bucket(1e9) == 1023
