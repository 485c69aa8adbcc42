"""The live loop (to be split by job: recorder, sampler, knob applier, load controller)."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import dataclasses
import math
import os
import platform
import socket
import statistics
import threading
import time
from array import array
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import psutil

from knobtop import __version__
from knobtop.errors import KnobtopError
from knobtop.hosts.base import Host, HostError
from knobtop.hosts.local import LocalHost
from knobtop.hosts.procstat import OS_FIELDS
from knobtop.journal.events import (
    FORMAT_VERSION,
    Change,
    End,
    Error,
    Event,
    Header,
    Incident,
    Knobs,
    Load,
    Mark,
    Note,
    Phase,
    Restart,
    Sample,
)
from knobtop.journal.writer import JournalWriter, cannot_create
from knobtop.load.base import LoadDriver, LoadError, LoadExit, LoadSpec, TableDriver
from knobtop.load.builtin import BuiltinDriver
from knobtop.load.multi import ALL, MultiLoad
from knobtop.load.sysbench import Sysbench, missing_tables_hint
from knobtop.load.sysbench_output import IntervalReport, PrepareProgress
from knobtop.metrics.counters import SERVER_COUNTERS
from knobtop.server.catalog import Catalog, datadir_refusal, load_catalog
from knobtop.server.incident import IncidentReader
from knobtop.server.knobs import (
    SEED_KNOBS,
    KnobError,
    KnobFacts,
    SetGlobalApplier,
    load_facts,
    valid_name,
    validate,
)
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink, ServerVersion, Tunnel
from knobtop.server.ndb import HIT_RATIO_SQL, NdbError, NdbRollingRestart, get_ndbd_default
from knobtop.server.ndb import PARAMETER as NDB_PARAMETER
from knobtop.server.static import RestartApplier, ServerNode, StaticChangeError, Step
from knobtop.session.port import Listener, SessionPort, SessionState
from knobtop.sqlquote import is_sysbench_table, quote_ident

MIN_INTERVAL = 0.1
# What NDB's documentation says of DiskPageBufferMemory (REFERENCE.md section 1).
NDB_FACTS = KnobFacts(name="DiskPageBufferMemory", present=True, dynamic=False,
                      type="BIGINT UNSIGNED", minimum=4 << 20, maximum=float(1 << 50),
                      default="64M", note="config.ini [ndbd default]; rolling restart")
KNOB_TIMEOUT = 120.0  # generous: a buffer-pool resize may take a while
INCIDENT_INTERVAL = 2.0  # at most one incident snapshot per this many seconds
T = TypeVar("T")


@dataclass
class SessionConfig:
    profile: str
    connection: ConnectionInfo
    journal_path: Path
    interval: float = 1.0
    load: LoadSpec = field(default_factory=LoadSpec)
    knobs: tuple[str, ...] = SEED_KNOBS
    knob_timeout: float = KNOB_TIMEOUT
    # The servers a static change restarts (one, or several for a rolling restart).
    nodes: tuple[ServerNode, ...] = ()
    # NDB Cluster: how DiskPageBufferMemory reaches the data nodes (config.ini + restarts).
    ndb: NdbRollingRestart | None = None
    cleanup_on_close: bool = False  # drop the sysbench tables when the session ends
    statements: bool = True  # the incident page reads statement texts (--no-statements)

    def check(self) -> None:
        if not MIN_INTERVAL <= self.interval <= 60:
            raise ValueError(
                f"sampling interval {self.interval} s is out of range; use 0.1 to 60 seconds"
            )


async def host_facts(host: Host, role: str) -> dict[str, Any]:
    """What a report needs to know about a host; remote hosts are asked once."""
    from knobtop.hosts.local import LocalHost

    if isinstance(host, LocalHost):
        return {
            "role": role,
            "hostname": socket.gethostname(),
            "cpus": os.cpu_count(),
            "memory": psutil.virtual_memory().total,
            "os": platform.platform(),
        }
    facts: dict[str, Any] = {"role": role, "destination": getattr(host, "destination", "")}
    try:
        result = await host.run(["sh", "-c", "hostname; nproc; uname -srm"], limit=15)
        lines = result.stdout.splitlines()
        if result.returncode == 0 and len(lines) >= 3:
            facts.update(hostname=lines[0], cpus=int(lines[1]), os=lines[2])
    except (HostError, ValueError) as exc:
        facts["error"] = str(exc)
    return facts


class SessionError(KnobtopError, RuntimeError):
    """The session could not start; the message names the thing and the fix."""


class Session:
    """One experiment against one server.

    Two connections: the sampler's (never waits behind a slow SET GLOBAL or a
    buffer-pool resize) and the actions'.  Each event is written to the
    journal before listeners (the screen) see it.
    """

    def __init__(
        self,
        config: SessionConfig,
        host: Host,
        driver: LoadDriver | None,
        *,
        clients: tuple[Host, ...] = (),
        via: Tunnel | None = None,
    ) -> None:
        config.check()
        self.config = config
        self.host = host  # the target server's host
        self.clients = tuple(c for c in clients if c.name != host.name)
        self.driver = driver
        self.listeners: list[Listener] = []
        self._listeners_failed: set[int] = set()  # id() of each listener that raised
        self.journal: JournalWriter | None = None
        self.version: ServerVersion | None = None
        self.knob_facts: dict[str, KnobFacts] = {}
        self.catalog: Catalog | None = None  # every server variable (the knob picker's list)
        self.samples = 0
        self.late_samples = 0
        self.phase = 0
        self.load_spec: LoadSpec | None = None
        self._phase_reports = PhaseNumbers()
        self._host_reports: dict[str, PhaseNumbers] = {}
        self._early_loads: list[Load] | None = None  # while a load is starting
        self.via = via
        self._sampler_link = ServerLink(config.connection, via=via)
        self._action_link = ServerLink(config.connection, via=via)
        self._hosts_down: set[str] = set()
        self.history: list[Change] = []  # applied changes, newest last (for undo)
        # Dynamic values this session set (and still wants): a restart forgets SET GLOBAL.
        self.dynamic_set: dict[str, str] = {}
        self.baseline: dict[str, str | None] = {}
        # The previous session's journal name and starting knobs (the lab sets it): at
        # open, a server that differs from them is said and journaled.
        self.previous_baseline: tuple[str, dict[str, str | None]] | None = None
        self.restarter = (
            RestartApplier(config.nodes, on_step=self._restart_step) if config.nodes else None
        )
        self._sampler: asyncio.Task[None] | None = None
        # Planned restarts (static knobs): counted, so the sampler can tell the server
        # going away for one of them from a crash when it next finds its link dead.
        self._restarting = False
        self._restart_count = 0
        # Set when the journal cannot be written (a full disk): nothing more is recorded.
        self.journal_error: str | None = None
        self._journal_failure: asyncio.Task[None] | None = None
        self._t0 = time.monotonic()
        self._closed = False
        self._action_lock = asyncio.Lock()
        self._load_lock = asyncio.Lock()
        self._incident: asyncio.Task[None] | None = None  # while the incident page is shown

    # -- the port: a snapshot and a subscription ------------------------------

    def state(self) -> SessionState:
        """A frozen copy of what front ends may know (safe to read from any thread)."""
        driver = self.driver
        sources = tuple(d.host_name for d in driver.drivers) if isinstance(
            driver, MultiLoad) else ((driver.host_name,) if driver is not None else ())
        journal = self.journal
        return SessionState(
            profile=self.config.profile,
            journal_path=journal.path if journal is not None else None,
            journal_error=self.journal_error,
            header=journal.header if journal is not None else None,
            catalog=self.catalog,
            history=tuple(self.history),
            load=self.load_spec or self.config.load,
            load_running=driver is not None and driver.running,
            load_sources=sources,
            restart_in_progress=self.restart_in_progress,
        )

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Hand every event, once journaled, to ``listener``; returns the unsubscribe."""
        self.listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self.listeners.remove(listener)

        return unsubscribe

    # -- time and events ------------------------------------------------------

    def now(self) -> float:
        return round(time.monotonic() - self._t0, 4)

    @staticmethod
    def wall() -> float:
        return round(time.time(), 3)

    def emit(self, event: Event) -> None:
        if self.journal is not None and self.journal_error is None:
            try:
                self.journal.append(event)
            except OSError as exc:
                self._journal_failed(exc)
        failed: list[str] = []
        for listener in list(self.listeners):
            try:
                listener(event)
            except Exception as exc:  # one broken view must not stop the others or the run
                key = id(listener)
                if key not in self._listeners_failed:
                    self._listeners_failed.add(key)
                    name = getattr(listener, "__qualname__", type(listener).__name__)
                    failed.append(f"a listener ({name}) failed on a {event.kind} event: "
                                  f"{type(exc).__name__}: {exc}; it was skipped for that "
                                  "event (said once per listener)")
        for message in failed:  # after every listener has this event, in order
            self.emit(Error(t=self.now(), wall=self.wall(), source="listener", message=message))

    def _journal_failed(self, exc: OSError) -> None:
        """The journal cannot be written (full disk, I/O error).  An experiment that is
        not recorded is not worth running: sampling ends, the load stops and knobs are no
        longer changed.  The listeners (screen, headless log) hear it first, then what
        follows (the load stopping), so they never show a stale state; the journal gets
        nothing more (no line may follow a torn one)."""
        self.journal_error = (
            f"cannot write the journal {self.config.journal_path}: {exc.strerror or exc}. "
            "Recording ended, the load is stopped and knobs are no longer changed; free "
            "space on that disk, or start again with another --journal path"
        )
        self.emit(Error(t=self.now(), wall=self.wall(), source="journal",
                        message=self.journal_error, gap=True))
        with contextlib.suppress(RuntimeError):  # no running loop: close() stops the load
            self._journal_failure = asyncio.get_running_loop().create_task(
                self._stop_load_quietly(), name="knobtop-journal-failed")

    async def _stop_load_quietly(self) -> None:
        """Best effort: close() stops the load again if this did not."""
        with contextlib.suppress(Exception):
            async with self._load_lock:
                await self._stop_load()

    # -- open and close -------------------------------------------------------

    async def open(self) -> Header:
        """Connect, write the header and the starting knob values, start sampling.

        Nothing is written if the server cannot be reached: a failed start
        leaves no empty journal behind.
        """
        try:
            self.version = await self._sampler_link.connect()
            await self._action_link.connect()
            self.knob_facts = await load_facts(self._action_link, self.config.knobs)
            self.catalog = await load_catalog(self._action_link)
            # The catalog knows more (flavor notes such as "ignored since 10.5.5").
            self.knob_facts = {k: self.catalog.get(k) for k in self.config.knobs}
            if self._closed:
                raise ServerError("the session was closed while it was opening")
        except BaseException:
            await self._sampler_link.close()
            await self._action_link.close()
            raise
        header = Header(
            format=FORMAT_VERSION,
            knobtop=__version__,
            profile=self.config.profile,
            started_wall=self.wall(),
            interval=self.config.interval,
            server={
                "flavor": self.version.flavor,
                "version": self.version.short,
                "version_text": self.version.text,
                **self.config.connection.describe(),
                **({"via": self.via.name} if self.via is not None else {}),
            },
            hosts={
                h.name: await host_facts(h, "target" if h is self.host else "client")
                for h in self.hosts
            },
            counters=list(SERVER_COUNTERS),
            host_fields=list(OS_FIELDS),
        )
        self._t0 = time.monotonic()
        try:
            self.journal = JournalWriter(
                self.config.journal_path, header, secrets=(self.config.connection.password,)
            )
        except OSError as exc:
            await self._sampler_link.close()
            await self._action_link.close()
            raise SessionError(cannot_create(self.config.journal_path, exc)) from None
        self.baseline = {k: f.value for k, f in self.knob_facts.items()}
        self.emit(
            Knobs(
                t=self.now(),
                wall=self.wall(),
                values={k: f.value for k, f in self.knob_facts.items()},
                facts={k: f.to_json() for k, f in self.knob_facts.items()},
            )
        )
        self._note_previous_baseline()
        for h in self.hosts:
            h.start_os_metrics(self.config.interval)
            if hasattr(h, "on_state"):
                h.on_state = lambda state, reason, name=h.name: self._host_state(
                    name, state, reason
                )
        self._sampler = asyncio.create_task(self._sample_loop(), name="knobtop-sampler")
        return header

    def _note_previous_baseline(self) -> Note | None:
        """Journal (and show) the knobs whose value at this start is not what the previous
        session started from: changes it left behind, or made by someone else since."""
        if self.previous_baseline is None:
            return None
        name, before = self.previous_baseline
        differ = [f"{k} = {self.baseline[k]} (it started from {v})"
                  for k, v in sorted(before.items())
                  if k in self.baseline and self.baseline[k] != v]
        if not differ:
            return None
        return self.note(f"the server differs from the baseline of the previous session "
                         f"({name}): {'; '.join(differ)}. This session's baseline is the "
                         "server as it is now")

    @property
    def _ndb_sql(self) -> bool:
        """An NDB Cluster SQL node: its data nodes' disk page buffer is sampled too."""
        return self.catalog is not None and "ndb_version_string" in self.catalog

    @property
    def hosts(self) -> tuple[Host, ...]:
        return (self.host, *self.clients)

    def _host_state(self, name: str, state: str, reason: str) -> None:
        """SSH to a host went down or came back: the journal (and screen) say so."""
        if state == "down" and name not in self._hosts_down:
            self._hosts_down.add(name)
            self._emit_quietly(Error(t=self.now(), wall=self.wall(), source=f"host {name}",
                                     message=f"SSH to {name} lost ({reason}); retrying",
                                     gap=True))
        elif state == "up" and name in self._hosts_down:
            self._hosts_down.discard(name)
            self._emit_quietly(Error(t=self.now(), wall=self.wall(), source=f"host {name}",
                                     message=f"SSH to {name} is back"))

    async def close(self, reason: str = "quit") -> None:
        """Stop load and sampling, write ``end``, close everything; each step runs
        even if an earlier one failed."""
        if self._closed:
            return
        self._closed = True
        # A static change in flight (restart, rollback) finishes first: tearing the
        # connections down under it could leave the server down.
        async with self._action_lock:
            await self._close(reason)

    async def _close(self, reason: str) -> None:
        try:
            if self._journal_failure is not None:
                await self._journal_failure
            if self.driver is not None and self.driver.running:
                await self.stop_load()
            if self.config.cleanup_on_close and self.driver is not None:
                try:
                    await self.cleanup_load()
                except (LoadError, HostError) as exc:
                    self._emit_quietly(Error(t=self.now(), wall=self.wall(), source="load",
                                             message=f"cleanup failed: {exc}"))
        finally:
            if self._sampler is not None:
                await _stop_task(self._sampler)
            await self.incident_sampling(False)
            try:
                if self.journal is not None:
                    with contextlib.suppress(OSError, ValueError):
                        self.emit(End(t=self.now(), wall=self.wall(), reason=reason,
                                      samples=self.samples))
                    self.journal.close()
            finally:
                await self._sampler_link.close()
                await self._action_link.close()
                extra = [n.host for n in self.config.nodes]
                if self.config.ndb is not None:
                    extra.append(self.config.ndb.host)
                closing = {id(h): h for h in (*self.hosts, *extra)}
                for h in closing.values():
                    with contextlib.suppress(Exception):
                        await h.close()

    # -- the incident page ----------------------------------------------------

    async def incident_sampling(self, on: bool) -> None:
        """Start or stop the incident snapshots (only while that page is shown): on a link
        of their own, so the sampler's poll stays one statement; one snapshot at most
        every INCIDENT_INTERVAL s, the next scheduled when the last one finished."""
        if on and (self._incident is None or self._incident.done()) and not self._closed \
                and self.journal is not None:
            self._incident = asyncio.create_task(self._incident_loop(), name="knobtop-incident")
        elif not on and self._incident is not None:
            task, self._incident = self._incident, None
            await _stop_task(task)

    async def _incident_loop(self) -> None:
        link = ServerLink(self.config.connection, via=self.via)
        conn = self.config.connection
        # Without SSH the server's log can be read only when the server is on this machine.
        local = bool(conn.socket) or conn.host in ("localhost", "::1") \
            or conn.host.startswith("127.")
        log_host = self.host if self.via is not None or not isinstance(self.host, LocalHost) \
            or local else None
        reader = IncidentReader(
            link, log_host, statements=self.config.statements,
            no_host=f"the server ({conn.where}) is not on this machine and is not reached "
            "over SSH; give the profile's [target] an ssh destination to see its error log")
        try:
            while True:
                started = time.monotonic()
                try:
                    snap = await reader.read()
                except ServerError as exc:  # cannot connect: said on the page, tried again
                    snap = reader.empty(str(exc))
                fields = {f.name: getattr(snap, f.name) for f in dataclasses.fields(snap)}
                self._emit_quietly(Incident(t=self.now(), wall=self.wall(), **fields))
                pause = INCIDENT_INTERVAL - (time.monotonic() - started)
                await asyncio.sleep(max(pause, 0.2))
        finally:
            await link.close()

    # -- sampling -------------------------------------------------------------

    async def _sample_loop(self) -> None:
        """Keep the schedule: polls are due on a fixed grid and never overlap.

        A poll that overruns its slot skips the slots it missed instead of
        bunching up; each sample is stamped with the time it was taken.
        """
        from knobtop.server.status import StatusPoller

        interval = self.config.interval
        link = self._sampler_link
        poller = StatusPoller(link, SERVER_COUNTERS)
        next_due = time.monotonic()
        down_since: float | None = None
        backoff = 0.5
        reconnected = False
        restarts_seen = self._restart_count  # as of the last sample taken
        while not self._closed and self.journal_error is None:
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
                    if self._restarting or self._restart_count != restarts_seen:
                        message = "the server is restarting for a static knob change"
                    self._emit_quietly(Error(t=self.now(), wall=self.wall(), source="sampler",
                                             message=f"sampling paused: {message}", gap=True))
                if link.connected and isinstance(exc, TimeoutError):
                    await link.close()
                next_due = time.monotonic() + backoff
                backoff = min(backoff * 2, 5.0)
                continue
            done = time.monotonic()
            stamp = round((sent + done) / 2 - self._t0, 4)
            ndb: dict[str, list[int]] = {}
            if self._ndb_sql:
                with contextlib.suppress(ServerError, TimeoutError):
                    async with asyncio.timeout(interval):
                        rows = await link.query(HIT_RATIO_SQL)
                    ndb = {str(r[0]): [int(r[1] or 0), int(r[2] or 0)] for r in rows}
            try:
                self.emit(Sample(t=stamp, wall=self.wall(), v=values, lat=round(done - sent, 5),
                                 host=self._os_samples(), re=reconnected, ndb=ndb))
            except Exception as exc:  # nothing may silently kill the sampler
                self._emit_quietly(Error(t=self.now(), wall=self.wall(), source="sampler",
                                         message=f"sample not recorded: {exc}", gap=True))
                next_due = time.monotonic() + backoff
                backoff = min(backoff * 2, 5.0)
                continue
            self.samples += 1
            restarts_seen = self._restart_count
            if down_since is not None:
                self.emit(Error(t=self.now(), wall=self.wall(), source="sampler",
                                message=f"sampling resumed after {done - down_since:.1f} s"))
                down_since = None
                backoff = 0.5
            reconnected = False
            next_due += interval
            now = time.monotonic()
            if next_due < now:
                self.late_samples += 1
                skipped = int((now - next_due) / interval) + 1
                next_due += skipped * interval

    def _os_samples(self) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {}
        for h in self.hosts:
            sample = h.os_sample()
            if sample is not None:
                out[h.name] = [round(v, 2) for v in sample]
        return out

    def _emit_quietly(self, event: Event) -> None:
        """Emit an error event; if even that fails (journal unwritable), the
        listeners (the screen) still get it."""
        try:
            self.emit(event)
        except Exception:
            for listener in list(self.listeners):
                with contextlib.suppress(Exception):
                    listener(event)

    # -- knobs ----------------------------------------------------------------

    async def _ensure_action_link(self) -> ServerLink:
        if not self._action_link.connected:
            await self._action_link.connect()
        return self._action_link

    async def set_knob(
        self, name: str, value: str, *, restart_ok: bool = False, reason: str = ""
    ) -> Change:
        """Validate and apply a knob; refusals and failures are journaled like successes.

        Dynamic knobs go through SET GLOBAL.  Static ones need ``restart_ok`` (the
        person confirmed the restart) and server nodes with a restart command: they
        go through the drop-in, a restart, a wait and a check, rolled back on failure.
        """
        async with self._action_lock:
            if self.journal_error is not None:  # a change that cannot be recorded: refused
                refused = Change(t=self.now(), wall=self.wall(), knob=name, requested=value,
                                 old=None, new=None, method="set_global", result="refused",
                                 message=f"{self.journal_error}. Nothing was changed",
                                 reason=reason)
                self.emit(refused)
                return refused
            return await self._set_knob(name, value, restart_ok=restart_ok, reason=reason)

    async def _set_knob(self, name: str, value: str, *, restart_ok: bool, reason: str) -> Change:
        start = self.now()
        name = name.strip().lower()
        try:
            link = await self._ensure_action_link()
            if name == NDB_PARAMETER.lower():
                return await self._set_ndb(value, restart_ok=restart_ok, reason=reason,
                                           start=start)
            facts = (await self._facts(link, [name]))[name] if valid_name(name) else None
            if facts is not None and facts.present and not facts.dynamic:
                return await self._set_static(facts, value, restart_ok=restart_ok,
                                              reason=reason, start=start)
            outcome = await asyncio.wait_for(
                SetGlobalApplier(link, self.config.knobs).apply(name, value),
                self.config.knob_timeout,
            )
        except (ServerError, TimeoutError) as exc:
            if isinstance(exc, TimeoutError):
                await self._action_link.close()
                limit = self.config.knob_timeout
                exc = ServerError(
                    f"the server did not answer within {limit:g} s; the change may or may "
                    "not have been applied: check the knob panel"
                )
            event = Change(t=start, wall=self.wall(), knob=name, requested=value, old=None,
                           new=None, method="set_global", result="failed", message=str(exc),
                           reason=reason)
            self.emit(event)
            return event
        event = Change(
            t=start, wall=self.wall(), knob=outcome.knob, requested=outcome.requested,
            old=outcome.old, new=outcome.new, method=SetGlobalApplier.method,
            result=outcome.result, message=outcome.message, warnings=outcome.warnings,
            duration=round(outcome.duration, 4), side_effects=outcome.side_effects,
            reason=reason,
        )
        self._record(event)
        return event

    async def _facts(self, link: ServerLink, names: list[str]) -> dict[str, KnobFacts]:
        """The server's facts for ``names``, static where the catalog knows better."""
        found = await asyncio.wait_for(load_facts(link, names), self.config.knob_timeout)
        for name, facts in found.items():
            known = self.catalog.get(name) if self.catalog is not None else None
            if facts.present and facts.dynamic and known is not None and known.present \
                    and not known.dynamic and known.mode == "static":
                # MySQL's variable tables do not say; the catalog's flavor table does.
                found[name] = dataclasses.replace(facts, dynamic=False)
        return found

    async def set_knobs(
        self, values: Mapping[str, str], *, restart_ok: bool = False, reason: str = ""
    ) -> list[Change]:
        """Several knobs as one change (a recipe arm), all or nothing.

        Every value is checked first; if one is refused, none is applied. Then the dynamic
        ones go in by SET GLOBAL and all the static ones through a single drop-in rewrite and
        restart (two static knobs cost one restart, not two). A dynamic one that fails puts
        back those already set, and no restart follows.
        """
        if len(values) == 1:
            ((name, value),) = values.items()
            return [await self.set_knob(name, value, restart_ok=restart_ok, reason=reason)]
        names = [n.strip().lower() for n in values]
        wanted = dict(zip(names, values.values(), strict=True))
        async with self._action_lock:
            start = self.now()
            found: dict[str, KnobFacts] = {}
            problems: dict[str, str] = {}
            if self.journal_error is not None:
                problems = dict.fromkeys(names, self.journal_error)
            else:
                try:
                    link = await self._ensure_action_link()
                    found = await self._facts(link, [n for n in names if valid_name(n)])
                except (ServerError, TimeoutError) as exc:
                    await self._action_link.close()
                    problems = dict.fromkeys(
                        names, f"cannot read the knobs' facts from the server: {exc}")
            dynamic: list[str] = []
            static: dict[str, tuple[str | None, str]] = {}
            for name in names if not problems else []:
                facts = found.get(name)
                try:
                    if name == NDB_PARAMETER.lower() or facts is None:
                        raise KnobError(f"{name} cannot be changed together with other knobs "
                                        "(it is not a server variable): change it on its own")
                    if facts.present and not facts.dynamic:
                        static[name] = (facts.value,
                                        self._static_checked(facts, wanted[name],
                                                             restart_ok=restart_ok))
                    else:
                        validate(facts, wanted[name])
                        dynamic.append(name)
                except KnobError as exc:
                    problems[name] = str(exc)
            if problems:
                return [self._refuse_in_group(name, wanted[name], found.get(name), problems,
                                              start, reason) for name in names]
            out: list[Change] = []
            for name in dynamic:
                out.append(await self._set_knob(name, wanted[name], restart_ok=False,
                                                reason=reason))
                if out[-1].result != "ok":
                    for done in reversed(out[:-1]):  # nothing half-applied
                        if done.old is not None:
                            await self._set_knob(done.knob, done.old, restart_ok=False,
                                                 reason="undo")
                    return out
            if static:
                out.extend(await self._restart_with(static, {n: wanted[n] for n in static},
                                                    reason=reason, start=start))
            return out

    def _refuse_in_group(self, name: str, requested: str, facts: KnobFacts | None,
                         problems: dict[str, str], start: float, reason: str) -> Change:
        """The refusal of one knob of a set_knobs call that is not applied."""
        old = facts.value if facts is not None else None
        static = facts is not None and facts.present and not facts.dynamic
        why = problems.get(name) or (
            f"not applied: {', '.join(problems)} in the same change was refused")
        if "nothing was changed" not in why.lower():
            why = f"{why}. Nothing was changed"
        refused = Change(t=start, wall=self.wall(), knob=name, requested=requested, old=old,
                         new=old, method="dropin_restart" if static else "set_global",
                         result="refused", message=why, reason=reason)
        self.emit(refused)
        return refused

    def _record(self, event: Change) -> None:
        if event.result == "ok" and event.knob not in self.baseline:
            # A knob outside the panel's list: its value before the first change is its
            # baseline, so revert-to-baseline brings it back too.
            self.baseline[event.knob] = event.old
        if event.result == "ok":
            changed = {event.knob: event.new}
            changed.update({k: v[1] for k, v in event.side_effects.items()})
            for knob, new in changed.items():
                if knob in self.knob_facts:
                    self.knob_facts[knob] = _with_value(self.knob_facts[knob], new)
            if event.reason not in ("undo", "re-applied after restart"):
                self.history.append(event)
            if event.method == SetGlobalApplier.method:
                for knob, new in changed.items():
                    if new is None or new == self.baseline.get(knob):
                        self.dynamic_set.pop(knob, None)
                    else:
                        self.dynamic_set[knob] = new
        self.emit(event)

    @property
    def restart_in_progress(self) -> bool:
        """A static change's restart (or its rollback) is running now."""
        return self._restarting

    def expected_downtime(self) -> str:
        last = self.restarter.last_downtime if self.restarter else None
        if last is None:
            return "unknown until the first restart (a few seconds for a small server)"
        # Rounded up: a 0.4 s restart is not "about 0 s" of downtime.
        return f"about {math.ceil(last)} s per node (the last restart took {last:.1f} s)"

    def restart_plan(self) -> str:
        """What a static change will do, in words, for the confirmation dialog."""
        if not self.config.nodes:
            return "no restart command is configured"
        names = ", ".join(n.name for n in self.config.nodes)
        how = "one after another, each healthy before the next" if len(
            self.config.nodes) > 1 else "once"
        return (f"restarts {names} {how} with `{self.config.nodes[0].restart_command}`; "
                f"downtime {self.expected_downtime()}")

    async def _set_static(
        self, facts: KnobFacts, raw: str, *, restart_ok: bool, reason: str, start: float
    ) -> Change:
        def refuse(message: str, result: str = "refused") -> Change:
            event = Change(t=start, wall=self.wall(), knob=facts.name, requested=raw,
                           old=facts.value, new=facts.value, method="dropin_restart",
                           result=result, message=message, reason=reason)
            self.emit(event)
            return event

        try:
            value = self._static_checked(facts, raw, restart_ok=restart_ok)
        except KnobError as exc:
            return refuse(str(exc))
        changed = await self._restart_with({facts.name: (facts.value, value)},
                                           {facts.name: raw}, reason=reason, start=start)
        return changed[-1]

    def _static_checked(self, facts: KnobFacts, raw: str, *, restart_ok: bool) -> str:
        """The drop-in value for a static knob, or KnobError saying why it cannot go in."""
        if not self.config.nodes:
            raise KnobError(
                f"{facts.name} is static (read-only at runtime) and this profile has no "
                "restart_command and dropin_path; add them to change static knobs. Nothing "
                "was changed"
            )
        value = static_value(facts, raw)
        pinned = datadir_refusal(facts.name, facts.value, value)
        if pinned is not None:  # a restart would only fail (or lose tables) and roll back
            raise KnobError(pinned)
        if not restart_ok:
            raise KnobError(
                f"{facts.name} is static: changing it {self.restart_plan()}. Confirm to go "
                "ahead; nothing was changed"
            )
        return value

    async def _restart_with(
        self, changes: dict[str, tuple[str | None, str]], requested: Mapping[str, str], *,
        reason: str, start: float,
    ) -> list[Change]:
        """One drop-in rewrite and one restart (per node) for all ``changes`` (knob: old,
        new); ``requested`` is what was typed per knob, where someone typed it."""
        assert self.restarter is not None
        began = time.monotonic()
        result, message = "ok", ""
        # sysbench would die with the server: stop it cleanly and start it again after.
        async with self._load_lock:
            resume = self.load_spec if self.driver is not None and self.driver.running else None
            if resume is not None:
                await self._stop_load()
        self._restarting = True
        self._restart_count += 1
        try:
            await self.restarter.apply({k: new for k, (_old, new) in changes.items()})
        except StaticChangeError as exc:
            result, message = "failed", str(exc)
        finally:
            self._restarting = False
        await self._action_link.close()  # the server restarted under it
        now: dict[str, KnobFacts] = {}
        link: ServerLink | None = None
        try:
            link = await self._ensure_action_link()
            now = await load_facts(link, list(changes))
        except (ServerError, TimeoutError) as exc:
            # Journal what happened even if the server is not back: never lose the story.
            result = "failed"
            message = f"{message}; the server does not answer after it: {exc}".lstrip("; ")
        out: list[Change] = []
        for knob, (old, _new) in changes.items():
            out.append(Change(
                t=start, wall=self.wall(), knob=knob, requested=requested.get(knob) or _new,
                old=old, new=now[knob].value if knob in now else None, method="dropin_restart",
                result=result, message=message, duration=round(time.monotonic() - began, 3),
                reason=reason,
            ))
            self._record(out[-1])
        if link is not None:
            # Dynamic values first, so the resumed load runs with the session's settings.
            with contextlib.suppress(ServerError, TimeoutError):
                await self._reapply_dynamic(link)
                self.catalog = await load_catalog(link)
        if resume is not None:
            async with self._load_lock:
                with contextlib.suppress(LoadError, HostError):
                    await self._start_load(resume.workload, resume.threads)
        return out

    async def _reapply_dynamic(self, link: ServerLink) -> None:
        """After a restart, put back the dynamic values this session had set."""
        if not self.dynamic_set:
            return
        now = await load_facts(link, list(self.dynamic_set))
        for knob, wanted in list(self.dynamic_set.items()):
            if now[knob].present and now[knob].value != wanted:
                await self._set_knob(knob, wanted, restart_ok=False,
                                     reason="re-applied after restart")

    async def _set_ndb(self, raw: str, *, restart_ok: bool, reason: str, start: float) -> Change:
        """DiskPageBufferMemory: config.ini on the management host, then every data node
        restarted one at a time (NDB has no SET GLOBAL for it)."""
        ndb = self.config.ndb

        def event(
            result: str, message: str, old: str | None, new: str | None, took: float = 0.0
        ) -> Change:
            change = Change(t=start, wall=self.wall(), knob=NDB_PARAMETER, requested=raw,
                            old=old, new=new, method="ndb_rolling_restart", result=result,
                            message=message, duration=round(took, 3), reason=reason)
            self._record(change)
            return change

        if ndb is None:
            return event("refused", f"{NDB_PARAMETER} is an NDB data node parameter in "
                         "config.ini: add an [ndb] table (management host, config_ini) to "
                         "the profile. Nothing was changed", None, None)
        try:
            value = validate(NDB_FACTS, raw, static_ok=True)
        except KnobError as exc:
            return event("refused", str(exc), None, None)
        try:
            text = (await ndb.host.read_file(ndb.config_path)).decode(errors="replace")
        except (OSError, HostError) as exc:
            return event("refused", f"cannot read {ndb.config_path} on {ndb.host.name}: "
                         f"{exc}. Nothing was changed", None, None)
        old = get_ndbd_default(text, NDB_PARAMETER)
        if not restart_ok:
            return event("refused", f"{NDB_PARAMETER} needs a rolling restart of every data "
                         "node (each waits for STARTED before the next). Confirm to go "
                         "ahead; nothing was changed", old, old)
        ndb.on_step = self._ndb_step
        began = time.monotonic()
        try:
            await ndb.run(str(value))
        except NdbError as exc:
            return event("failed", str(exc), old, old, time.monotonic() - began)
        return event("ok", "", old, str(value), time.monotonic() - began)

    def _ndb_step(self, step: str, node: int | None, status: str, seconds: float) -> None:
        self._emit_quietly(Restart(t=self.now(), wall=self.wall(),
                                   node="cluster" if node is None else f"ndb node {node}",
                                   step=step, result=status, seconds=round(seconds, 3)))

    def _restart_step(self, step: Step) -> None:
        self._emit_quietly(Restart(t=self.now(), wall=self.wall(), node=step.node,
                                   step=step.step, result=step.result,
                                   seconds=round(step.seconds, 3), message=step.message))

    async def undo(self, expected: Change | None = None) -> Change | None:
        """Put the last change (not itself an undo) back; static ones restart again.

        ``expected`` is the change the person confirmed; if another one landed since,
        nothing is done (they confirmed something else)."""
        async with self._action_lock:
            if not self.history:
                return None
            last = self.history[-1]
            if expected is not None and last is not expected:
                raise LoadError("the last change is not the one you confirmed; press u again")
            if last.old is None:
                return None
            undone = await self._set_knob(last.knob, last.old, restart_ok=True, reason="undo")
            if undone.result == "ok":
                self.history.remove(last)
            # What the server changed along with it (io_capacity_max after io_capacity).
            for knob, (old, _new) in last.side_effects.items():
                if old is not None and undone.result == "ok":
                    await self._set_knob(knob, old, restart_ok=False, reason="undo")
            return undone

    async def _differ(self) -> dict[str, KnobFacts]:
        """The knobs whose value on the server now is not this session's baseline."""
        link = await self._ensure_action_link()
        names = sorted(k for k in self.baseline if self.baseline[k] is not None)
        if not names:
            return {}
        now = await load_facts(link, names)
        return {k: now[k] for k in names if now[k].present and now[k].value != self.baseline[k]}

    async def baseline_diff(self) -> list[BaselineDiff]:
        """What differs from the session's baseline now (for the quit and revert dialogs)."""
        async with self._action_lock:
            differ = await self._differ()
        return [BaselineDiff(k, f.value, self.baseline[k], f.dynamic) for k, f in differ.items()]

    def revert_plan(self, diff: list[BaselineDiff]) -> str:
        """What reverting ``diff`` does, in words: which knobs go back live, which need
        the restart (a restart is promised only when a static knob differs)."""
        live = [d.knob for d in diff if d.dynamic]
        static = [d.knob for d in diff if not d.dynamic]
        parts = []
        if live:
            parts.append(f"Back live with SET GLOBAL, no restart: {', '.join(live)}.")
        if static:
            parts.append(f"Static, back together with one restart: {', '.join(static)}; "
                         f"knobtop {self.restart_plan()}.")
        else:
            parts.append("Nothing restarts.")
        return " ".join(parts)

    def quit_choice(self, choice: str, diff: list[BaselineDiff]) -> Note:
        """Journal what was done at quit about the knobs that differ from the baseline."""
        listed = ", ".join(f"{d.knob}={d.now} (baseline {d.baseline})" for d in diff)
        verb = {"revert": "reverted to the baseline", "keep": "kept on the server"}[choice]
        return self.note(f"quit: {verb}: {listed}" if diff else f"quit: {verb}: nothing differed")

    async def revert_to_baseline(self) -> list[Change]:
        """Every knob this session changed back to its value at the start; all static
        ones together, with a single restart."""
        async with self._action_lock:
            differ = await self._differ()
            if not differ:
                return []
            out: list[Change] = []
            static: dict[str, tuple[str | None, str]] = {}
            for knob, facts in differ.items():
                target = self.baseline[knob]
                assert target is not None
                if facts.dynamic:
                    out.append(await self._set_knob(knob, target, restart_ok=False,
                                                    reason="revert to baseline"))
                else:
                    static[knob] = (facts.value, target)
            if static:
                out.extend(await self._restart_with(static, {}, reason="revert to baseline",
                                                    start=self.now()))
            self.history.clear()
            return out

    # -- notes ----------------------------------------------------------------

    def note(self, text: str) -> Note:
        event = Note(t=self.now(), wall=self.wall(), text=text)
        self.emit(event)
        return event

    def mark(self, label: str) -> Mark:
        event = Mark(t=self.now(), wall=self.wall(), label=label)
        self.emit(event)
        return event

    # -- load -----------------------------------------------------------------

    async def start_load(self, workload: str | None = None, threads: int | None = None) -> Phase:
        """Start (or restart as a new phase) the load; one load change at a time."""
        async with self._load_lock:
            return await self._start_load(workload, threads)

    async def toggle_load(self) -> None:
        async with self._load_lock:
            if self.driver is not None and self.driver.running:
                await self._stop_load()
            else:
                await self._start_load(None, None)

    async def change_load(
        self, workload: str | None = None, threads: int | None = None
    ) -> LoadSpec:
        """Running load restarts with the new setting as a new phase; stopped load
        only remembers it for the next start."""
        async with self._load_lock:
            if self.driver is not None and self.driver.running:
                await self._start_load(workload, threads)
                assert self.load_spec is not None
                return self.load_spec
            return self.plan_load(workload, threads)

    async def _start_load(self, workload: str | None, threads: int | None) -> Phase:
        if self.driver is None:
            raise LoadError("no load driver in this session")
        if self.journal_error is not None:
            raise LoadError(self.journal_error)
        previous = self.load_spec
        spec = self.plan_load(workload, threads)
        self.load_spec = previous
        if self.driver.running:
            await self._stop_load()
        self.phase += 1
        self.load_spec = spec
        self._phase_reports = PhaseNumbers()
        self._host_reports = {}
        phase = self.phase
        # Several clients start one by one (SSH takes a while): the first may report its
        # first seconds before the last has started. Those reports are held back and written
        # after the phase's start event, which is stamped when starting began, so every
        # report of a phase follows its start in the journal and lies within it in time.
        began, began_wall = self.now(), self.wall()
        self._early_loads = []
        try:
            await self.driver.start(spec, self._on_report, lambda ex: self._on_exit(phase, ex))
        except LoadError as exc:
            message = await self._with_tables_hint(str(exc), spec)
            event = Phase(t=self.now(), wall=self.wall(), action="failed", phase=phase,
                          driver=self.driver.name, workload=spec.workload, threads=spec.threads,
                          host=self.driver.host_name, message=message)
            self._emit_phase_start(event)
            raise LoadError(message) from None
        event = Phase(t=began, wall=began_wall, action="start", phase=phase,
                      driver=self.driver.name, workload=spec.workload, threads=spec.threads,
                      host=self.driver.host_name, summary=_options(spec, self.driver))
        self._emit_phase_start(event)
        return event

    def _emit_phase_start(self, event: Phase) -> None:
        """The phase's start (or failure to start), then the reports held back meanwhile."""
        early, self._early_loads = self._early_loads, None
        self.emit(event)
        for load in early or ():
            self.emit(load)

    def plan_load(self, workload: str | None = None, threads: int | None = None) -> LoadSpec:
        """Choose the next load without starting it."""
        base = self.load_spec or self.config.load
        spec = dataclasses.replace(
            base, workload=workload or base.workload, threads=threads or base.threads
        )
        spec.check()
        self.load_spec = spec
        return spec

    async def prepare_load(self, progress: Callable[[PrepareProgress], None] | None = None) -> bool:
        """Create and fill the sysbench tables the load needs (unless already there)."""
        async with self._load_lock:
            if self.driver is not None and self.driver.running:
                raise LoadError("stop the load before preparing its tables")
            spec = self.load_spec or self.config.load
            self.mark(f"prepare {spec.tables} tables x {spec.table_size} rows")
            loaded = await prepare_all(
                lambda: ServerLink(self.config.connection, via=self.via), self.driver, spec,
                progress,
            )
            self.mark("tables ready" if loaded else "tables were already there")
            return loaded

    async def cleanup_load(self) -> None:
        """Drop the sysbench tables (sysbench cleanup on each client's database)."""
        async with self._load_lock:
            if self.driver is not None and self.driver.running:
                await self._stop_load()
            spec = self.load_spec or self.config.load
            seen: set[str] = set()
            for sb in table_drivers(self.driver):
                if sb.database not in seen:
                    seen.add(sb.database)
                    await sb.cleanup(spec)
            self.mark("sysbench tables dropped")

    async def stop_load(self) -> None:
        async with self._load_lock:
            await self._stop_load()

    async def _stop_load(self) -> None:
        if self.driver is not None:
            await self.driver.stop()

    async def set_threads(self, threads: int) -> Phase:
        """A new thread count is a new phase: stop, then start with the same workload."""
        return await self.start_load(threads=threads)

    def _on_report(self, src: str, report: IntervalReport) -> None:
        # With several clients the phase statistics use the per-second sums ("all"), and
        # each client's own numbers are kept for its line of the phase summary.
        multi = isinstance(self.driver, MultiLoad)
        if src == ALL or not multi:
            self._phase_reports.append(report)
        else:
            self._host_reports.setdefault(src, PhaseNumbers()).append(report)
        load = Load(t=self.now(), wall=self.wall(), src=src, **_load_fields(report))
        if self._early_loads is not None:
            self._early_loads.append(load)  # the phase's start event is not out yet
        else:
            self.emit(load)

    async def _on_exit(self, phase: int, exit: LoadExit) -> None:
        spec = self.load_spec or self.config.load
        summary: dict[str, Any] = _phase_stats(self._phase_reports)
        if exit.summary is not None:
            summary["sysbench"] = exit.summary.to_event()
        if isinstance(self.driver, MultiLoad):
            summary["hosts"] = {src: _phase_stats(r) for src, r in self._host_reports.items()}
            if exit.per_host:
                summary["sysbench_per_host"] = {h: s.to_event() for h, s in exit.per_host.items()}
        failed = bool(exit.error) and not exit.stopped
        driver = self.driver
        message = exit.error
        if failed and not self._phase_reports:
            message = await self._with_tables_hint(message, spec)
        self.emit(
            Phase(t=self.now(), wall=self.wall(), action="failed" if failed else "stop",
                  phase=phase, driver=driver.name if driver else "", workload=spec.workload,
                  threads=spec.threads, host=driver.host_name if driver else "",
                  message=message, summary=summary)
        )
        if failed:
            self.emit(Error(t=self.now(), wall=self.wall(), source="load",
                            message=f"load stopped: {message}"))

    async def _with_tables_hint(self, message: str, spec: LoadSpec) -> str:
        """A load that failed before its first second with a statement error: if its
        tables are missing, say so and how to fix it.

        sysbench's threads print their FATAL lines in no fixed order, so the server's
        "doesn't exist" is not always among the lines it reports first; the server itself
        is asked instead, on a link of its own (the action link may be busy with a long
        SET GLOBAL) and for at most a few seconds (the server may be what failed).
        """
        if self._closed or not any(mark in message for mark in TABLE_ERRORS):
            return message
        for sb in table_drivers(self.driver):
            hint = missing_tables_hint(sb.database)
            if hint in message:
                return message
            link = ServerLink(self.config.connection, via=self.via)
            try:
                async with asyncio.timeout(5):
                    await link.connect()
                    rows = await link.query(
                        "SELECT TABLE_NAME FROM information_schema.TABLES "
                        "WHERE TABLE_SCHEMA = %s", (sb.database,))
            except (ServerError, TimeoutError, OSError):
                return message  # the server is gone: the error already says what happened
            finally:
                await link.close()
            present = {str(r[0]) for r in rows}
            if any(f"sbtest{i}" not in present for i in range(1, spec.tables + 1)):
                return f"{message}. {hint}"
        return message


# Load errors that a missing table can be behind (sysbench's generic lines, the server's
# own, the built-in driver's); others (access denied, no sysbench) say what they are.
TABLE_ERRORS = ("SQL API error", "mysql_stmt_prepare", "doesn't exist", "1146", "1049",
                "Unknown database", "prepare the sysbench tables")


async def _stop_task(task: asyncio.Task[None]) -> None:
    """Cancel ``task`` and wait for it, re-sending the cancellation if it got lost."""
    while not task.done():
        task.cancel()
        await asyncio.wait({task}, timeout=2.0)
    with contextlib.suppress(asyncio.CancelledError, Exception):
        task.result()


@dataclass(frozen=True)
class BaselineDiff:
    """One knob whose server value is not the session's baseline."""

    knob: str
    now: str | None
    baseline: str | None
    dynamic: bool


def static_value(facts: KnobFacts, raw: str) -> str:
    """``raw`` checked for the drop-in file; raises KnobError with the reason."""
    value = str(validate(facts, raw, static_ok=True))
    if any(ch in value for ch in "\r\n\0#;"):
        # It goes into a config file: one line, no comment characters.
        raise KnobError(f"{facts.name}: a value for the config file must be one line "
                        "without '#' or ';'")
    return value


def _with_value(facts: KnobFacts, value: str | None) -> KnobFacts:
    from dataclasses import replace

    return replace(facts, value=value)


def _options(spec: LoadSpec, driver: LoadDriver) -> dict[str, Any]:
    """What a start phase records of the run's settings (its ``summary`` at start)."""
    versions = {getattr(d, "version", "") for d in getattr(driver, "drivers", [driver])}
    return {
        "version": ",".join(sorted(v for v in versions if v)),
        "tables": spec.tables,
        "table_size": spec.table_size,
        "rate": spec.rate,
        "rand_type": spec.rand_type,
        "percentile": spec.percentile,
        "prepared": spec.prepared,
        "duration": spec.duration,
        **({"engine": spec.engine} if spec.engine else {}),
    }


def _load_fields(report: IntervalReport) -> dict[str, Any]:
    return report.to_event()


class PhaseNumbers:
    """A phase's per-interval TPS and latency as two float arrays (16 bytes a report, not
    a report object each: a phase may run for a day)."""

    __slots__ = ("lat", "tps")

    def __init__(self) -> None:
        self.tps: array[float] = array("d")
        self.lat: array[float] = array("d")

    def append(self, report: IntervalReport) -> None:
        self.tps.append(report.tps)
        self.lat.append(report.latency_ms)

    def __len__(self) -> int:
        return len(self.tps)


def _phase_stats(numbers: PhaseNumbers) -> dict[str, Any]:
    if not numbers:
        return {"intervals": 0}
    return {
        "intervals": len(numbers),
        "tps_median": round(statistics.median(numbers.tps), 2),
        "tps_mean": round(statistics.fmean(numbers.tps), 2),
        "p95_median": round(statistics.median(numbers.lat), 2),
    }


def table_drivers(driver: LoadDriver | None) -> list[Sysbench | BuiltinDriver]:
    """The drivers behind ``driver`` that own tables (one, or each client of a MultiLoad)."""
    inner = driver.drivers if isinstance(driver, MultiLoad) else [driver]
    return [d for d in inner if isinstance(d, Sysbench | BuiltinDriver)]


async def prepare_all(
    make_link: Callable[[], ServerLink],
    driver: LoadDriver | None,
    spec: LoadSpec,
    progress: Callable[[PrepareProgress], None] | None = None,
) -> bool:
    """Prepare the tables of every client's database once (shared tables only once)."""
    loaded = False
    seen: set[str] = set()
    for sb in table_drivers(driver):
        if sb.database in seen:
            continue
        seen.add(sb.database)
        loaded = await prepare_tables(make_link(), sb, spec, progress) or loaded
    return loaded


async def tables_ready(link: ServerLink, database: str, spec: LoadSpec) -> bool:
    """True when sbtest1..N exist with exactly ``table_size`` rows (ids are 1..N),
    in the storage engine ``spec.engine`` names (any engine when it names none)."""
    rows = await link.query(
        "SELECT TABLE_NAME, ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s",
        (database,),
    )
    present = {str(r[0]): str(r[1] or "") for r in rows}
    for i in range(1, spec.tables + 1):
        name = f"sbtest{i}"
        if name not in present:
            return False
        if spec.engine and present[name].lower() != spec.engine.lower():
            return False
        top = await link.query(
            f"SELECT COUNT(*), MAX(id) FROM {quote_ident(database)}.{quote_ident(name)}")
        if top[0][0] != spec.table_size or top[0][1] != spec.table_size:
            return False
    return True


async def prepare_tables(
    server: ConnectionInfo | ServerLink,
    driver: TableDriver,
    spec: LoadSpec,
    progress: Callable[[PrepareProgress], None] | None = None,
) -> bool:
    """Load sysbench's tables unless they are already there at the asked size.

    Returns True when it loaded them.  Tables of another size are dropped first.
    """
    link = server if isinstance(server, ServerLink) else ServerLink(server)
    await link.connect()
    try:
        database = quote_ident(driver.database)
        await link.query(f"CREATE DATABASE IF NOT EXISTS {database}")
        if await tables_ready(link, driver.database, spec):
            return False
        rows = await link.query(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s",
            (driver.database,),
        )
        # Only sysbench's own names (sbtest + digits; LIKE 'sbtest%' would take
        # sbtest_results too), each quoted: a name is data, never SQL.
        for name in sorted(str(r[0]) for r in rows if is_sysbench_table(str(r[0]))):
            await link.query(f"DROP TABLE {database}.{quote_ident(name)}")
    finally:
        await link.close()
    await driver.prepare(spec, progress)
    return True


class SessionThread:
    """Runs a Session on its own event loop in its own thread.

    The screen's loop can be busy painting while load saturates the box; the
    sampler must not wait for it.  Calls cross over with ``submit``; events
    come back through the session's listeners (called on this thread).
    """

    def __init__(self, session: Session) -> None:
        self.session = session
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="knobtop-session", daemon=True)
        self._started = False

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def start(self) -> None:
        if not self._started:
            self._thread.start()
            self._started = True

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def call(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        async def wrapper() -> T:
            return fn()

        return self.submit(wrapper())

    def stop(self, reason: str = "quit", timeout: float = 900.0) -> None:
        """Close the session (waiting for a knob change in flight) and end the thread."""
        if not self._started:
            return
        try:
            self.submit(self.session.close(reason)).result(timeout)
        except Exception:
            pass
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._started = False
            if not self._thread.is_alive():
                self._loop.close()


def as_port(session: Session) -> SessionPort:
    """``session`` as the port front ends use (mypy checks that Session implements it)."""
    return session
