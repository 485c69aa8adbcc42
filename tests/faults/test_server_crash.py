"""kill -9 of mariadbd under sysbench load: a gap, a failed phase, a reconnect, a live session."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from conftest import EventCollector
from faults.helpers import in_thread, lab_session, served_lab_session
from harness.procs import sysbench_processes
from harness.ui import until
from knobtop.journal import End, Error, JournalReader, Load, Phase, Sample
from knobtop.journal.events import Event
from knobtop.lab import Sandbox
from knobtop.metrics import SERVER_COUNTERS
from knobtop.server.link import ServerLink
from knobtop.ui.app import KnobtopApp
from knobtop.ui.widgets.journal_pane import JournalPane

# Its assertions hold the machine's timing (sysbench's per-second lines, the sampler's
# schedule, deadlines): run with no other live test beside it (make test).
pytestmark = [pytest.mark.integration, pytest.mark.serial]
UPTIME = SERVER_COUNTERS.index("Uptime")


async def server_uptime(sandbox: Sandbox) -> int:
    """The server's Uptime as the test reads it, on a link of its own."""
    link = ServerLink(sandbox.connection())
    await link.connect()
    try:
        rows = await link.query("SHOW GLOBAL STATUS LIKE 'Uptime'")
    finally:
        await link.close()
    return int(rows[0][1])


def crash(sandbox: Sandbox) -> None:
    """SIGKILL the sandbox's mariadbd: no shutdown, InnoDB recovers on the next start."""
    pid = sandbox.running_pid()
    assert pid is not None
    os.kill(pid, signal.SIGKILL)


def sampler_gap(events: list[Event]) -> bool:
    return any(isinstance(e, Error) and e.gap and e.source == "sampler" for e in events)


def load_failed(events: list[Event]) -> bool:
    """The load phase said it ended badly: a failed phase, or an error from the load."""
    return any((isinstance(e, Phase) and e.action == "failed")
               or (isinstance(e, Error) and e.source == "load") for e in events)


def samples_after_reconnect(events: list[Event]) -> list[Sample]:
    samples = [e for e in events if isinstance(e, Sample)]
    first = next((i for i, s in enumerate(samples) if s.re), None)
    return [] if first is None else samples[first:]


async def test_kill_9_of_the_server_under_load(
    sandbox: Sandbox, tmp_path: Path, collector: EventCollector
) -> None:
    journal = tmp_path / "crash.knobtop.jsonl"
    session = lab_session(sandbox, journal)
    session.listeners.append(collector)
    marker = f"--mysql-socket={sandbox.socket}"
    await session.open()
    try:
        await session.start_load()
        await collector.wait_for(lambda ev: sum(isinstance(e, Load) for e in ev) >= 2, 60)
        crash(sandbox)
        await collector.wait_for(sampler_gap, timeout=30)
        await collector.wait_for(load_failed, timeout=60)
        assert not session.driver or not session.driver.running
        restarting = time.monotonic()
        await in_thread(sandbox.start)  # the same datadir and port, after crash recovery
        await collector.wait_for(lambda ev: len(samples_after_reconnect(ev)) >= 3, timeout=60)
        seen = time.monotonic()  # the third sample from the new server just went out
        third = samples_after_reconnect(collector.events)[2]
        own_uptime = await server_uptime(sandbox)
        read_at = time.monotonic()
        since_restart = read_at - restarting
    finally:
        await session.close()
    events = collector.events
    gap = next(e for e in events if isinstance(e, Error) and e.gap)
    assert gap.source == "sampler" and "sampling paused" in gap.message
    assert any(isinstance(e, Error) and "sampling resumed" in e.message for e in events)
    phases = [e for e in events if isinstance(e, Phase)]
    assert phases[0].action == "start"
    assert phases[-1].action == "failed" and phases[-1].message
    assert any(isinstance(e, Error) and e.source == "load" and "load stopped" in e.message
               for e in events)
    # The session kept going: samples after the reconnect carry counters from the new server.
    resumed = samples_after_reconnect(events)
    assert resumed[0].t > gap.t and resumed[-1].t > resumed[0].t
    assert all(v is not None for v in resumed[-1].v[:3])
    # ... and they are the new server's: its Uptime began again.  No more seconds than the
    # test has seen pass since it started the server (Uptime counts whole seconds), fewer
    # than the old server's last Uptime plus the time since that sample, and what the test
    # read from the server itself just after (give or take the seconds in between).
    before = [e for e in events if isinstance(e, Sample) and e.t < gap.t][-1]
    old_uptime = before.v[UPTIME]
    raw = [s.v[UPTIME] for s in resumed]
    assert old_uptime is not None and None not in raw
    uptimes = [float(u or 0) for u in raw]
    assert all(u <= since_restart + 1 for u in uptimes), (uptimes, since_restart)
    assert uptimes[0] < old_uptime + (resumed[0].t - before.t) - 1, (old_uptime, uptimes)
    assert uptimes == sorted(uptimes)
    sampled = third.v[UPTIME]
    assert sampled is not None
    assert own_uptime - 1 - (read_at - seen) <= sampled <= own_uptime, (
        sampled, own_uptime, read_at - seen)
    # close() was clean: the journal ends with `end` and reads without a problem.
    reader = JournalReader(journal)
    on_disk = list(reader)
    assert on_disk == events and isinstance(on_disk[-1], End)
    assert not reader.stats.torn_tail
    assert sysbench_processes(marker) == {}


async def test_kill_9_of_the_server_in_the_live_screen(sandbox: Sandbox, tmp_path: Path) -> None:
    journal = tmp_path / "screen.knobtop.jsonl"
    with served_lab_session(sandbox, journal) as session:
        app = KnobtopApp(session, start_load=True)
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, lambda: app.board is not None
                        and app.board.series["load_tps"].last is not None, timeout=60)
            crash(sandbox)
            await until(pilot, lambda: any(m.kind == "gap" for m in app.board.markers), timeout=30)
            await until(pilot, lambda: not app.board.load_running, timeout=60)
            seen = app.board.samples
            await in_thread(sandbox.start)
            await until(pilot, lambda: app.board.samples >= seen + 3, timeout=60)
            # Still running, and the journal pane lists the gap and the failed load.
            assert app.is_running and app.return_code is None
            pane = app.live.query_one(JournalPane)
            text = "\n".join(line.text for line in pane.lines)
            assert "sampler: sampling paused" in text and "sampling resumed" in text
            assert "load failed" in text
            await pilot.press("q")
        assert app.return_code == 0
        events = list(JournalReader(journal))
        assert any(isinstance(e, Error) and e.gap for e in events)
        assert isinstance(events[-1], End)
