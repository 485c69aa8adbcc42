"""A server that accepts connections but never answers (a real mariadbd under SIGSTOP)
cannot hold a query, a restart wait or the session's action lock."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import EventCollector, show_global
from knobtop.connect import node_healthy
from knobtop.hosts.local import LocalHost
from knobtop.journal import Change, JournalReader, Restart
from knobtop.lab import Sandbox
from knobtop.server.link import (
    LONG_QUERY_TIMEOUT,
    SET_QUERY_TIMEOUT,
    QueryTimeout,
    ServerError,
    ServerLink,
    default_timeout,
    statement_kind,
)
from knobtop.server.static import RestartApplier, ServerNode, parse_dropin, render_dropin
from knobtop.session.core import Session, SessionConfig

# Its assertions hold the machine's timing (sysbench's per-second lines, the sampler's
# schedule, deadlines): run with no other live test beside it (make test).
pytestmark = [pytest.mark.integration, pytest.mark.serial]


STOPPED: list[int] = []


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    """A server of this test's own: it gets stopped, so it must not be the shared one."""
    box = Sandbox(tmp_path / "lab")
    box.start()
    try:
        yield box
    finally:
        pid = box.running_pid()  # stopped by a restart command, perhaps
        STOPPED.extend([pid] if pid is not None else [])
        while STOPPED:  # never leave a stopped server behind
            with contextlib.suppress(ProcessLookupError):
                os.kill(STOPPED.pop(), signal.SIGCONT)
        box.stop()


def stop(box: Sandbox) -> None:
    """SIGSTOP the server and return once every one of its threads has stopped: kill()
    returns before that, and a thread still running could answer one more statement (on
    a slow stretch of the machine it did, and a health check meant to hang was answered)."""
    pid = box.running_pid()
    assert pid is not None
    STOPPED.append(pid)
    os.kill(pid, signal.SIGSTOP)
    deadline = time.monotonic() + 10.0
    while not all_threads_stopped(pid):
        assert time.monotonic() < deadline, f"mariadbd {pid} not stopped 10 s after SIGSTOP"
        time.sleep(0.005)  # polling the threads' state, not standing in for it


def all_threads_stopped(pid: int) -> bool:
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that just ended
            # The state follows the command name in parentheses, which may hold spaces.
            states.append((task / "stat").read_text().rsplit(")", 1)[1].split()[0])
    return bool(states) and all(state in ("T", "t") for state in states)


def test_statement_kinds_and_default_deadlines() -> None:
    assert statement_kind("SHOW GLOBAL VARIABLES WHERE x IN (%s)") == "SHOW GLOBAL VARIABLES"
    assert statement_kind("SELECT VERSION(), @@version_comment") == "SELECT"
    assert statement_kind("SET GLOBAL innodb_io_capacity = %s") == "SET GLOBAL INNODB_IO_CAPACITY"
    assert statement_kind("  ") == "statement"
    assert default_timeout("SHOW GLOBAL STATUS", 10.0) == 10.0
    assert default_timeout("CREATE INDEX k_1 ON `sbtest1` (k)", 10.0) == LONG_QUERY_TIMEOUT
    assert default_timeout("SET GLOBAL innodb_max_purge_lag_wait = %s", 10.0) == (
        LONG_QUERY_TIMEOUT)
    assert default_timeout("SET GLOBAL innodb_io_capacity = %s", 10.0) == SET_QUERY_TIMEOUT
    assert default_timeout("SELECT 1", 2.5) == 2.5 and default_timeout("", 2.5) == 2.5


@pytest.mark.parametrize(("wait", "query", "connect"), [(300, 10, 5), (2, 30, 20), (1, 1, 1)])
def test_phase_limit_covers_every_step_of_a_phase(wait: float, query: float,
                                                  connect: float) -> None:
    """One node's change may legitimately spend: the drop-in's stat (a query limit), its
    chown (another), the restart and wait (``wait_timeout``), the verify connect and the
    verify query, and the link's check after them. Only a hang may reach ``phase_limit``
    (before: wait + one query + 5 s, which a slow but working stat, chown and verify could
    pass)."""
    applier = RestartApplier(nodes=[], on_step=lambda _step: None, wait_timeout=wait,
                             restart_timeout=wait, query_timeout=query,
                             connect_timeout=connect)
    steps = [query, query, wait, connect, query, query]
    assert applier.phase_limit > sum(steps)
    assert applier.time_limit == applier.phase_limit  # no nodes: one rollback at most


async def test_a_query_to_a_stopped_server_times_out_and_drops_the_connection(
    sandbox: Sandbox,
) -> None:
    link = ServerLink(sandbox.connection(), query_timeout=30.0)
    await link.connect()
    try:
        assert await link.query("SELECT 1") == [(1,)]
        stop(sandbox)
        limit = 1.5
        # The product's contract: the call ends by its own deadline (plus scheduling).
        async with asyncio.timeout(limit + 1.0):
            with pytest.raises(QueryTimeout) as caught:
                await link.query("SHOW GLOBAL STATUS", timeout=limit)
        assert "SHOW GLOBAL STATUS" in str(caught.value) and "1.5 s" in str(caught.value)
        assert caught.value.kind == "SHOW GLOBAL STATUS" and caught.value.limit == limit
        assert not link.connected  # a half-read result is never read again
    finally:
        await link.close()
    # A new connection to the stopped server is cut off by the connect deadline.
    fresh = ServerLink(sandbox.connection(), connect_timeout=1.0)
    async with asyncio.timeout(3.0):
        with pytest.raises(ServerError) as refused:
            await fresh.connect()
    assert "did not answer within 1 s" in str(refused.value)


@pytest.mark.parametrize("when", ["by the restart command", "after greeting the health check"])
async def test_a_stopped_server_is_rolled_back_within_the_limit_and_frees_the_lock(
    sandbox: Sandbox, tmp_path: Path, collector: EventCollector, when: str
) -> None:
    info = sandbox.connection()
    before = render_dropin({"innodb_autoinc_lock_mode": "1"}) + "# the old drop-in\n"
    sandbox.dropin_file.write_text(before)
    # Every restart first wakes a stopped server (SIGTERM waits while it is stopped).
    pid_file = shlex.quote(str(sandbox.pid_file))
    wake = f"kill -CONT $(cat {pid_file}) 2>/dev/null; "
    once = tmp_path / "stopped-once"
    restart = wake + sandbox.restart_command()
    if when == "by the restart command":
        # The new server is stopped before anyone connects: it accepts TCP connections
        # (the kernel's backlog) and never greets.
        marker = shlex.quote(str(once))
        restart = (f"{wake}{sandbox.restart_command()} && if [ ! -e {marker} ]; then "
                   f"touch {marker}; kill -STOP $(cat {pid_file}); fi")

    async def stop_after_greeting(link: ServerLink) -> tuple[bool, str]:
        # The restarted server has greeted this connection; stopped now, it keeps the
        # connection open and answers nothing: the health query gets no reply.
        if not once.exists():
            once.touch()
            stop(sandbox)
        return await node_healthy(link)

    node = ServerNode(name="lab", host=LocalHost(), link=lambda: ServerLink(info),
                      restart_command=restart, dropin_path=sandbox.dropin_file,
                      healthy=stop_after_greeting if when.startswith("after") else node_healthy)
    config = SessionConfig(profile="lab", connection=info, interval=0.25, nodes=(node,),
                           journal_path=tmp_path / "h.knobtop.jsonl")
    session = Session(config, LocalHost(), None)
    assert session.restarter is not None
    session.restarter.wait_timeout = 20.0  # room for the lab's restart command itself
    bound = session.restarter.time_limit
    session.listeners.append(collector)
    await session.open()
    try:
        async with asyncio.timeout(bound):
            change = await session.set_knob("innodb_doublewrite", "OFF", restart_ok=True)
        # The action lock is free again: the next change runs.
        async with asyncio.timeout(bound):
            after = await session.set_knob("innodb_io_capacity", "345")
    finally:
        await session.close()
    assert once.exists()  # the server really was stopped mid-check
    assert change.result == "failed"
    assert "not back within 20 s" in change.message and "rolled back" in change.message
    assert after.result == "ok"
    assert sandbox.dropin_file.read_text() == before
    assert parse_dropin(sandbox.dropin_file.read_text()) == {"innodb_autoinc_lock_mode": "1"}
    assert await show_global(info, "innodb_doublewrite") == "ON"
    steps = [(e.step, e.result) for e in collector.events if isinstance(e, Restart)]
    assert steps == [("write_dropin", "ok"), ("restart", "ok"), ("wait", "failed"),
                     ("rollback", "ok")]
    journal = list(JournalReader(tmp_path / "h.knobtop.jsonl"))
    assert [(e.step, e.result) for e in journal if isinstance(e, Restart)] == steps
    changes = [(e.knob, e.result) for e in journal if isinstance(e, Change)]
    assert changes == [("innodb_doublewrite", "failed"), ("innodb_io_capacity", "ok")]
