"""The sampler: the server's counters and each host's OS counters on a fixed schedule.

It keeps its schedule whatever else happens: its own server link (never behind a slow
SET GLOBAL), polls due on a fixed grid (a poll that overruns skips the slots it missed
instead of bunching up), each sample stamped when it was taken, one statement per poll.
It pauses with a gap when the server goes away (saying so when a static change restarted
it) and resumes on its own.  It also runs the incident page's snapshots while that page is
shown.  It needs only its link, the hosts and the recorder: nothing of the screen.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import platform
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import psutil

from knobtop.hosts.base import Host, HostError
from knobtop.journal.events import Incident, Sample
from knobtop.metrics.counters import SERVER_COUNTERS
from knobtop.server.incident import IncidentReader
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink, Tunnel
from knobtop.server.ndb import HIT_RATIO_SQL
from knobtop.session.recorder import Recorder

INCIDENT_INTERVAL = 2.0  # at most one incident snapshot per this many seconds


@dataclass
class RestartState:
    """Planned restarts (static knobs), counted, so the sampler can tell the server going
    away for one of them from a crash when it next finds its link dead."""

    restarting: bool = False
    count: int = 0


async def host_facts(host: Host, role: str) -> dict[str, Any]:
    """What a report needs to know about a host; remote hosts are asked once."""
    if host.local:
        return {
            "role": role,
            "hostname": socket.gethostname(),
            "cpus": os.cpu_count(),
            "memory": psutil.virtual_memory().total,
            "os": platform.platform(),
        }
    facts: dict[str, Any] = {"role": role, "destination": getattr(host, "destination", "")}
    try:
        result = await host.run(["sh", "-c", "hostname; nproc; uname -srm; id -un"], limit=15)
        lines = result.stdout.splitlines()
        if result.returncode == 0 and len(lines) >= 4:
            facts.update(hostname=lines[0], cpus=int(lines[1]), os=lines[2], user=lines[3])
    except (HostError, ValueError) as exc:
        facts["error"] = str(exc)
    # How files travel ("sftp", or "exec": cat and mv, the sshd has no SFTP subsystem) and
    # whether the profile's restart and drop-in go through sudo -n there.
    files = getattr(host, "files", None)
    if files is not None:
        facts["files"] = files
    facts["sudo"] = bool(getattr(host, "sudo", False))
    return facts


async def stop_task(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait for it, re-sending the cancellation if it got lost."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=2.0)
    with contextlib.suppress(asyncio.CancelledError, Exception):
        task.result()


class Sampler:
    def __init__(self, recorder: Recorder, connection: ConnectionInfo, interval: float,
                 hosts: tuple[Host, ...], *, via: Tunnel | None, restarts: RestartState,
                 ndb_sql: Callable[[], bool], closed: Callable[[], bool],
                 statements: bool = True) -> None:
        self.recorder = recorder
        self.connection = connection
        self.interval = interval
        self.hosts = hosts  # the target's first
        self.via = via
        self.link = ServerLink(connection, via=via)
        self.restarts = restarts
        self.statements = statements
        self.samples = 0
        self.late_samples = 0
        self.task: asyncio.Task[None] | None = None
        self._ndb_sql = ndb_sql  # an NDB SQL node: its data nodes' page buffers too
        self._closed = closed
        self._hosts_down: set[str] = set()
        self._incident: asyncio.Task[None] | None = None  # while the incident page is shown

    def start(self) -> None:
        for h in self.hosts:
            h.start_os_metrics(self.interval)
            h.on_state = lambda state, reason, name=h.name: self.host_state(name, state, reason)
        self.task = asyncio.create_task(self._loop(), name="knobtop-sampler")

    async def stop(self) -> None:
        if self.task is not None:
            await stop_task(self.task)
        await self.incident_sampling(False)

    def host_state(self, name: str, state: str, reason: str) -> None:
        """SSH to a host went down or came back: the journal (and screen) say so."""
        if state == "down" and name not in self._hosts_down:
            self._hosts_down.add(name)
            self.recorder.error(f"host {name}", f"SSH to {name} lost ({reason}); retrying",
                                gap=True)
        elif state == "up" and name in self._hosts_down:
            self._hosts_down.discard(name)
            self.recorder.error(f"host {name}", f"SSH to {name} is back")

    def _os_samples(self) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for h in self.hosts:
            sample = h.os_sample()
            if sample is not None:
                out[h.name] = [round(v, 2) for v in sample]
        return out

    async def _loop(self) -> None:
        """Keep the schedule: polls are due on a fixed grid and never overlap.

        A poll that overruns its slot skips the slots it missed instead of
        bunching up; each sample is stamped with the time it was taken.
        """
        from knobtop.server.status import StatusPoller

        rec, interval, link = self.recorder, self.interval, self.link
        poller = StatusPoller(link, SERVER_COUNTERS)
        next_due = time.monotonic()
        down_since: float | None = None
        backoff = 0.5
        reconnected = False
        restarts_seen = self.restarts.count  # as of the last sample taken
        while not self._closed() and rec.journal_error is None:
            delay = next_due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            sent = time.monotonic()
            try:
                if not link.connected:
                    await link.connect()
                    poller = StatusPoller(link, SERVER_COUNTERS)
                    reconnected = True
                # asyncio.timeout, not wait_for: on 3.11 wait_for can swallow the
                # cancellation close() sends, and the sampler would never stop.
                async with asyncio.timeout(max(5.0, 3 * interval)):
                    values = await poller.poll()
            except (ServerError, TimeoutError) as exc:
                if down_since is None:
                    down_since = sent
                    message = str(exc) or "the status poll timed out"
                    if self.restarts.restarting or self.restarts.count != restarts_seen:
                        message = "the server is restarting for a static knob change"
                    rec.error("sampler", f"sampling paused: {message}", gap=True)
                if link.connected and isinstance(exc, TimeoutError):
                    await link.close()
                next_due = time.monotonic() + backoff
                backoff = min(backoff * 2, 5.0)
                continue
            done = time.monotonic()
            stamp = rec.since_start((sent + done) / 2)
            ndb: dict[str, list[int]] = {}
            if self._ndb_sql():
                with contextlib.suppress(ServerError, TimeoutError):
                    async with asyncio.timeout(interval):
                        rows = await link.query(HIT_RATIO_SQL)
                    ndb = {str(r[0]): [int(r[1] or 0), int(r[2] or 0)] for r in rows}
            try:
                rec.emit(Sample(t=stamp, wall=rec.wall(), v=values, lat=round(done - sent, 5),
                                host=self._os_samples(), re=reconnected, ndb=ndb))
            except Exception as exc:  # nothing may silently kill the sampler
                rec.error("sampler", f"sample not recorded: {exc}", gap=True)
                next_due = time.monotonic() + backoff
                backoff = min(backoff * 2, 5.0)
                continue
            self.samples += 1
            restarts_seen = self.restarts.count
            if down_since is not None:
                rec.error("sampler", f"sampling resumed after {done - down_since:.1f} s",
                          quietly=False)
                down_since = None
                backoff = 0.5
            reconnected = False
            next_due += interval
            now = time.monotonic()
            if next_due < now:
                self.late_samples += 1
                skipped = int((now - next_due) / interval) + 1
                next_due += skipped * interval

    # -- the incident page

    async def incident_sampling(self, on: bool) -> None:
        """Start or stop the incident snapshots (only while that page is shown): on a link
        of their own, so the sampler's poll stays one statement; one snapshot at most
        every INCIDENT_INTERVAL s, the next scheduled when the last one finished."""
        if on and (self._incident is None or self._incident.done()) and not self._closed() \
                and self.recorder.journal is not None:
            self._incident = asyncio.create_task(self._incident_loop(), name="knobtop-incident")
        elif not on and self._incident is not None:
            task, self._incident = self._incident, None
            await stop_task(task)

    async def _incident_loop(self) -> None:
        link = ServerLink(self.connection, via=self.via)
        conn = self.connection
        target = self.hosts[0]
        # Without SSH the server's log can be read only when the server is on this machine.
        local = bool(conn.socket) or conn.host in ("localhost", "::1") \
            or conn.host.startswith("127.")
        log_host = target if self.via is not None or not target.local or local else None
        reader = IncidentReader(
            link, log_host, statements=self.statements,
            no_host=f"the server ({conn.where}) is not on this machine and is not reached "
            "over SSH; give the profile's [target] an ssh destination to see its error log")
        rec = self.recorder
        try:
            while True:
                started = time.monotonic()
                try:
                    snap = await reader.read()
                except ServerError as exc:  # cannot connect: said on the page, tried again
                    snap = reader.empty(str(exc))
                fields = {f.name: getattr(snap, f.name) for f in dataclasses.fields(snap)}
                rec.emit_quietly(Incident(t=rec.now(), wall=rec.wall(), **fields))
                pause = INCIDENT_INTERVAL - (time.monotonic() - started)
                await asyncio.sleep(max(pause, 0.2))
        finally:
            await link.close()


__all__ = ["INCIDENT_INTERVAL", "RestartState", "Sampler", "host_facts", "stop_task"]
