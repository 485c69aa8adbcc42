"""Session edge cases on real parts: secrets off argv, racing load keys, closing early, hangs."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
from pathlib import Path

import pytest

from conftest import EventCollector
from harness.procs import sysbench_processes
from knobtop.hosts.local import LocalHost
from knobtop.journal import JournalReader, Phase
from knobtop.lab import Sandbox
from knobtop.load.base import LoadSpec
from knobtop.load.prepare import prepare_tables
from knobtop.load.sysbench import Sysbench
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink, ServerVersion
from knobtop.session.core import Session, SessionConfig

pytestmark = pytest.mark.integration
SMALL = LoadSpec(workload="oltp_point_select", threads=1, tables=1, table_size=1000)


@pytest.fixture(scope="module")
def driver(mariadb: Sandbox, sysbench_path: str) -> Sysbench:
    info = mariadb.connection()
    sb = Sysbench(LocalHost(), mysql_socket=str(mariadb.socket), user=info.user,
                  password=info.password, database="sbtest")
    asyncio.run(prepare_tables(info, sb, SMALL))
    return sb


def make(info: ConnectionInfo, tmp_path: Path, driver: Sysbench | None = None,
         **kw: float) -> Session:
    config = SessionConfig(profile="test", connection=info,
                           journal_path=tmp_path / "s.knobtop.jsonl", load=SMALL, **kw)
    return Session(config, LocalHost(), driver)


def driver_marker(driver: Sysbench) -> str:
    """What only this test run's sysbench has on its command line: this server's socket."""
    return driver.argv(SMALL, "run")[3]


def sysbench_cmdlines(marker: str) -> list[str]:
    return list(sysbench_processes(marker).values())


async def test_password_never_on_the_command_line(
    mariadb_info: ConnectionInfo, driver: Sysbench, tmp_path: Path, collector: EventCollector
) -> None:
    session = make(mariadb_info, tmp_path, driver)
    session.listeners.append(collector)
    await session.open()
    try:
        await session.start_load()
        await collector.wait_for(lambda ev: any(e.kind == "load" for e in ev), timeout=20)
        mine = sysbench_cmdlines(driver_marker(driver))
        assert mine, "sysbench is running"
        assert all(mariadb_info.password not in c for c in mine)
        config = next(a for a in mine[0].split() if a.startswith("--config-file="))
        path = Path(config.split("=", 1)[1])
        # sysbench read it before its first line: gone already, so no kill -9 leaves it
        assert not path.exists()
    finally:
        await session.close()
    async with driver._secret_config() as made:  # how it is made: 0600, then removed
        assert made is not None and oct(Path(made).stat().st_mode & 0o777) == "0o600"
        assert mariadb_info.password in Path(made).read_text()
    assert not Path(made).exists()


async def test_racing_load_changes_leave_one_sysbench_and_whole_phases(
    mariadb_info: ConnectionInfo, driver: Sysbench, tmp_path: Path
) -> None:
    session = make(mariadb_info, tmp_path, driver)
    await session.open()
    try:
        await session.start_load()
        # Load changes queue up in the order they were asked for: two new thread counts
        # (a new phase each), off, on again.  So four phases, and the load runs at the end.
        await asyncio.gather(session.change_load(threads=2), session.change_load(threads=3),
                             session.toggle_load(), session.toggle_load())
        running = sysbench_cmdlines(driver_marker(driver))
        assert len(running) == 1, running
        assert "--threads=3" in running[0].split()
    finally:
        await session.close()
    assert not sysbench_cmdlines(driver_marker(driver))
    phases = [e for e in JournalReader(tmp_path / "s.knobtop.jsonl") if isinstance(e, Phase)]
    starts = [p.phase for p in phases if p.action == "start"]
    stops = [p.phase for p in phases if p.action == "stop"]
    assert len(starts) == 4, phases
    assert starts == stops  # every phase that started was stopped, in order


async def test_close_while_opening_leaves_nothing_running(
    mariadb_info: ConnectionInfo, tmp_path: Path
) -> None:
    session = make(mariadb_info, tmp_path)
    connecting = asyncio.Event()
    connect = session.sampler.link.connect

    async def connect_seen() -> ServerVersion:
        connecting.set()
        return await connect()

    session.sampler.link.connect = connect_seen  # type: ignore[method-assign]
    opening = asyncio.create_task(session.open())
    await asyncio.wait_for(connecting.wait(), 10)  # open() has started connecting
    await session.close()
    with pytest.raises(ServerError):
        await opening
    assert session.sampler.task is None
    assert not session.sampler.link.connected and not session.knobs.link.connected


async def test_connect_to_a_port_that_never_greets_times_out() -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        link = ServerLink(ConnectionInfo(port=port), connect_timeout=1.0)
        with pytest.raises(ServerError) as exc:
            await link.connect()
    assert "did not answer within 1 s" in str(exc.value)
    assert f"127.0.0.1:{port}" in str(exc.value)


async def test_knob_change_against_a_frozen_server_fails_in_bounded_time(
    tmp_path: Path,
) -> None:
    sandbox = Sandbox(tmp_path / "lab")
    info = sandbox.start()
    session = make(info, tmp_path, knob_timeout=1.5)
    await session.open()
    pid = sandbox.running_pid()
    assert pid is not None
    os.kill(pid, signal.SIGSTOP)
    try:
        change = await asyncio.wait_for(session.set_knob("innodb_io_capacity", "300"), 30)
    finally:
        os.kill(pid, signal.SIGCONT)
        await session.close()
        sandbox.stop()
    assert change.result == "failed"
    assert "did not answer within 1.5 s" in change.message
