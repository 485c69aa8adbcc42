"""Session edge cases on real parts: secrets off argv, racing load keys, closing early, hangs."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
import socket
from pathlib import Path

import pytest

from conftest import EventCollector
from harness.freeze_proxy import FreezeProxy
from harness.procs import sysbench_processes
from knobtop.hosts.local import LocalHost
from knobtop.journal import Error, JournalReader, Phase
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


async def test_a_kept_link_gone_silent_is_replaced_before_a_change(
    mariadb: Sandbox, tmp_path: Path
) -> None:
    """The actions' link opened at the start goes silent (a relay stops passing its bytes,
    both ways, sockets open): the next change's read of the knob's facts gets no answer
    on it, a new link reads them, the change is made and the journal says what happened."""
    info = mariadb.connection()
    proxy = FreezeProxy(info.host, info.port)
    port = await proxy.start()
    via_proxy = dataclasses.replace(info, socket=None, host="127.0.0.1", port=port)
    session = make(via_proxy, tmp_path, knob_timeout=1.5)
    await session.open()
    try:
        before = (await session.global_values(["sort_buffer_size"]))["sort_buffer_size"]
        # The drift watch reads on the same link every 5 s and would replace a silent link
        # itself (3 s deadline): it is stopped, so the change is the one that meets it.
        await session.drift.stop()
        if not session.knobs.link.connected:  # a round cut off by the stop closes it
            await session.knobs.link.connect()
        assert proxy.freeze_open_connections() >= 1  # the actions' link among them
        change = await asyncio.wait_for(session.set_knob("sort_buffer_size", "1M"), 30)
        assert change.result == "ok" and change.old == before and change.new == "1048576"
        back = await asyncio.wait_for(session.set_knob("sort_buffer_size", str(before)), 30)
        assert back.result == "ok"
    finally:
        await session.close()
        await proxy.close()
    errors = [e for e in JournalReader(tmp_path / "s.knobtop.jsonl")
              if isinstance(e, Error) and e.source == "server"]
    assert len(errors) == 1
    assert "kept from earlier failed reading sort_buffer_size" in errors[0].message
    assert "a new link read them" in errors[0].message


async def test_a_closing_session_keeps_its_journals_report_fold(
    mariadb_info: ConnectionInfo, tmp_path: Path, collector: EventCollector,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """As it closes, the session starts the keeper of its journal's report fold (issue 41:
    the first report of a long recording reads it); here with a floor of 0 bytes, so a few
    seconds' journal is kept. The next report reads the kept fold and gives what the
    journal gives."""
    from knobtop.analysis.journaldata import load_journal
    from knobtop.analysis.reportcache import ReportCache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("KNOBTOP_REPORT_CACHE", raising=False)
    config = SessionConfig(profile="test", connection=mariadb_info,
                           journal_path=tmp_path / "s.knobtop.jsonl", load=SMALL,
                           keep_fold_bytes=0)
    session = Session(config, LocalHost(), None)
    session.listeners.append(collector)
    await session.open()
    try:
        await collector.wait_for(lambda ev: sum(e.kind == "sample" for e in ev) >= 3,
                                 timeout=20)
    finally:
        await session.close()
    assert session.fold_keeper is not None
    keeper = session.fold_keeper.proc
    assert keeper is not None
    assert await asyncio.to_thread(keeper.wait, 60) == 0
    path = config.journal_path
    cache = ReportCache(tmp_path / "xdg" / "knobtop" / "reports", min_bytes=0)
    kept = cache.open(path, path.stat().st_size)
    assert kept is not None
    kept.close()
    via_kept, fresh = load_journal(path, cache=cache), load_journal(path, cache=None)
    assert len(fresh.rows) >= 2 and repr(via_kept.rows) == repr(fresh.rows)
    assert repr(via_kept.knobs_end) == repr(fresh.knobs_end)


async def test_a_recording_session_keeps_its_fold_now_and_then(
    mariadb_info: ConnectionInfo, tmp_path: Path, collector: EventCollector,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """While it records, the session keeps its journal's fold every ``keep_fold_every``
    seconds (here 1): a report of the journal as it grows (a soak, or what a killed session
    leaves) reads the kept fold and folds only the lines after it, and gives what reading
    every line gives."""
    from knobtop.analysis.journaldata import load_journal
    from knobtop.analysis.reportcache import ReportCache

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("KNOBTOP_REPORT_CACHE", raising=False)
    config = SessionConfig(profile="test", connection=mariadb_info,
                           journal_path=tmp_path / "s.knobtop.jsonl", load=SMALL,
                           keep_fold_bytes=0, keep_fold_every=1.0)
    path = config.journal_path
    cache = ReportCache(tmp_path / "xdg" / "knobtop" / "reports", min_bytes=0)
    session = Session(config, LocalHost(), None)
    session.listeners.append(collector)
    await session.open()
    try:
        sizes = []
        keeping = session.fold_keeper
        assert keeping is not None
        for _ in range(2):  # the first keeping, then the next one, the journal grown
            before = keeping.proc
            await collector.wait_for(
                lambda ev, b=before: keeping.proc not in (None, b), timeout=20)
            keeper = keeping.proc
            assert keeper is not None
            assert await asyncio.to_thread(keeper.wait, 60) == 0
            kept = cache.open(path, path.stat().st_size)
            assert kept is not None
            kept.close()
            sizes.append(kept.size)
        assert 0 < sizes[0] < sizes[1]
        samples = sum(e.kind == "sample" for e in collector.events)
        via_kept = load_journal(path, cache=cache)  # the kept fold, then the lines after
        fresh = load_journal(path, cache=None)  # (written on since: a row or two more)
    finally:
        await session.close()
    assert len(via_kept.rows) >= samples  # a row per sample
    assert repr(fresh.rows[:len(via_kept.rows)]) == repr(via_kept.rows)
    assert repr(via_kept.knobs_end) == repr(fresh.knobs_end)
