"""The Session: one experiment against one server, coordinating the parts that run it.

A recorder (stamping, building and journaling every event), a sampler (the schedule that
must hold), a knob applier (every change, with baseline, undo and revert), the drift watch
(changes made outside knobtop) and a load controller (phases).  The session opens and
closes them in order and offers front ends the ``SessionPort``: the commands, a frozen
``SessionState`` and ``subscribe``.
"""
# Just over 500 lines: the session's one coordinating class (its port's every command) and
# its config; each job it coordinates lives in a module of its own beside it.

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate

from knobtop import __version__
from knobtop.conditions import Conditions
from knobtop.errors import BadValue, KnobtopError
from knobtop.hosts.base import Host, HostError
from knobtop.hosts.procstat import OS_FIELDS
from knobtop.journal.events import (
    FORMAT_VERSION,
    Change,
    End,
    Event,
    Header,
    Knobs,
    Mark,
    Note,
    Phase,
    Progress,
)
from knobtop.journal.writer import JournalWriter, cannot_create
from knobtop.lab_storage import Storage
from knobtop.load.base import LoadDriver, LoadError, LoadSpec
from knobtop.load.sysbench_output import PrepareProgress
from knobtop.metrics.counters import SERVER_COUNTERS
from knobtop.metrics.footprint import Footprint
from knobtop.server.appliers.base import Plan
from knobtop.server.knobs import SEED_KNOBS
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink, ServerVersion, Tunnel
from knobtop.server.ndb import NdbRollingRestart
from knobtop.server.probes import ProbeReading, run_probe
from knobtop.server.static import RestartApplier, ServerNode
from knobtop.server.variables import PurgeWait, global_values, purge_wait
from knobtop.session.baseline import previous_baseline_note
from knobtop.session.conditions import session_conditions
from knobtop.session.drift import DRIFT_INTERVAL, DriftWatch
from knobtop.session.footprint import FootprintProbe
from knobtop.session.knobs import KNOB_TIMEOUT, KnobApplier
from knobtop.session.loadctl import LoadController
from knobtop.session.port import (
    BaselineDiff,
    Fields,
    Listener,
    Recorded,
    Report,
    RunOrder,
    SessionPort,
    SessionState,
    check_recorded,
)
from knobtop.session.recorder import Recorder
from knobtop.session.runs import RunSlot, told
from knobtop.session.sampler import RestartState, Sampler, host_facts

if TYPE_CHECKING:
    from knobtop.analysis.keepfold import FoldKeeper

MIN_INTERVAL = 0.1


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
    # A journal this long or longer gets its report fold kept as the session ends
    # (analysis/keepfold.py), and every ``keep_fold_every`` seconds while it records (a
    # report of it then, or of what a killed session left, folds only the lines after);
    # None: never.
    keep_fold_bytes: int | None = 1 << 20
    keep_fold_every: float = 600.0
    # A lab sandbox's storage emulation (lab_storage): said in the journal's header, and the
    # conditions probe runs under it too (it measures what the server's calls meet).
    storage: Storage | None = None

    def check(self) -> None:
        if not MIN_INTERVAL <= self.interval <= 60:
            raise BadValue(
                f"sampling interval {self.interval} s is out of range; use 0.1 to 60 seconds"
            )


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
        # A client host that is the target's own (the lab): the load shares its CPUs.
        self._client_on_target = len(self.clients) < len(clients)
        self.via = via
        self.version: ServerVersion | None = None
        self.fold_keeper: FoldKeeper | None = None  # keeps the report's fold (begin)
        # The previous session's journal name and starting knobs (the lab sets it): at
        # open, a server that differs from them is said and journaled.
        self.previous_baseline: tuple[str, dict[str, str | None]] | None = None
        # The server stops when this session ends (the lab sets it for a sandbox it started
        # and does not keep running): quit's "keep" says what is lost with it.
        self.server_stops = False
        self._closed = False
        self._footprint: FootprintProbe | None = None
        self._journal_failure: asyncio.Task[None] | None = None
        self.recorder = Recorder(config.journal_path)
        self.recorder.on_failure = self._journal_failed
        self.restarts = RestartState()
        self.loads = LoadController(self.recorder, driver, config.load, config.connection,
                                    via, closed=lambda: self._closed)
        self.knobs = KnobApplier(self.recorder, config.connection, via=via, knobs=config.knobs,
                                 timeout=config.knob_timeout, nodes=config.nodes,
                                 ndb=config.ndb, loads=self.loads, restarts=self.restarts)
        self.sampler = Sampler(self.recorder, config.connection, config.interval, self.hosts,
                               via=via, restarts=self.restarts, ndb_sql=self._ndb_sql,
                               closed=lambda: self._closed, statements=config.statements)
        # Changes made outside knobtop: the watched knobs read on a slow schedule of their
        # own (never more often than the samples are taken), off the sampler's link.
        self.drift = DriftWatch(self.recorder, self.knobs.watch_round,
                                max(DRIFT_INTERVAL, config.interval), closed=lambda: self._closed)
        self.runs = RunSlot()  # the recipe or tune under way (run_recipe)

    # -- what the parts hold, by name

    @property
    def hosts(self) -> tuple[Host, ...]:
        return (self.host, *self.clients)

    @property
    def journal(self) -> JournalWriter | None:
        return self.recorder.journal

    @journal.setter
    def journal(self, writer: JournalWriter | None) -> None:
        self.recorder.journal = writer

    @property
    def listeners(self) -> list[Listener]:
        return self.recorder.listeners

    @listeners.setter
    def listeners(self, listeners: list[Listener]) -> None:  # ``session.listeners += [f]``
        self.recorder.listeners = listeners

    @property
    def driver(self) -> LoadDriver | None:
        return self.loads.driver

    @property
    def load_spec(self) -> LoadSpec | None:
        return self.loads.spec

    @property
    def restarter(self) -> RestartApplier | None:
        return self.knobs.restarter

    def _ndb_sql(self) -> bool:
        """An NDB Cluster SQL node: its data nodes' disk page buffer is sampled too."""
        catalog = self.knobs.catalog
        return catalog is not None and "ndb_version_string" in catalog

    # -- the port: a snapshot and a subscription

    def state(self) -> SessionState:
        """A frozen copy of what front ends may know (safe to read from any thread)."""
        recorder = self.recorder
        return SessionState(
            profile=self.config.profile,
            journal_path=recorder.journal_path if recorder.header is not None else None,
            journal_error=recorder.failure,
            header=recorder.header,
            catalog=self.knobs.catalog,
            history=tuple(self.knobs.history),
            load=self.loads.current,
            load_running=self.loads.running,
            load_sources=self.loads.sources(),
            restart_in_progress=self.knobs.restart_in_progress,
            server_stops=self.server_stops,
        )

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        return self.recorder.subscribe(listener)

    def now(self) -> float:
        return self.recorder.now()

    @staticmethod
    def wall() -> float:
        return Recorder.wall()

    def emit(self, event: Event) -> None:
        self.recorder.emit(event)

    def _journal_failed(self) -> None:
        """Recording ended: stop the load (close() stops it again if this did not)."""
        with contextlib.suppress(RuntimeError):  # no running loop: close() stops the load
            self._journal_failure = asyncio.get_running_loop().create_task(
                self.loads.stop_quietly(), name="knobtop-journal-failed")

    # -- open and close

    async def open(self) -> Header:
        """Connect, write the header and the starting knob values, start sampling.

        Nothing is written if the server cannot be reached: a failed start
        leaves no empty journal behind.
        """
        return await self.begin(await self.connect())

    async def connect(self) -> Header:
        """Connect and read the server: the header this session's journal starts with
        (nothing written yet; ``begin`` writes it)."""
        try:
            self.version = await self.sampler.link.connect()
            await self.knobs.load()
            if self._closed:
                raise ServerError("the session was closed while it was opening")
        except BaseException:
            await self.sampler.link.close()
            await self.knobs.link.close()
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
                **({"storage": self.config.storage.describe()} if self.config.storage else {}),
            },
            hosts={
                h.name: await host_facts(h, "target" if h is self.host else "client")
                for h in self.hosts
            },
            counters=list(SERVER_COUNTERS),
            host_fields=list(OS_FIELDS),
        )
        return header

    async def begin(self, header: Header) -> Header:
        """Write the header and the starting knob values, start sampling."""
        try:
            self.recorder.start(header, secrets=(self.config.connection.password,))
        except OSError as exc:
            await self.sampler.link.close()
            await self.knobs.link.close()
            raise SessionError(cannot_create(self.config.journal_path, exc)) from None
        facts = self.knobs.knob_facts
        self.knobs.start_baseline()
        self.emit(Knobs(t=self.now(), wall=self.wall(),
                        values={k: f.value for k, f in facts.items()},
                        facts={k: f.to_json() for k, f in facts.items()}))
        if self.previous_baseline is not None:
            said = previous_baseline_note(*self.previous_baseline, self.knobs.baseline)
            if said:
                self.note(said)
        if self.config.keep_fold_bytes is not None:
            from knobtop.analysis.keepfold import FoldKeeper

            self.fold_keeper = FoldKeeper(self.config.journal_path,
                                          self.config.keep_fold_bytes,
                                          self.config.keep_fold_every)
            self.recorder.subscribe(self.fold_keeper.on_event)
        self.sampler.start()
        self.drift.start()
        return header

    async def close(self, reason: str = "quit") -> None:
        """Stop load and sampling, write ``end``, close everything; each step runs
        even if an earlier one failed."""
        if self._closed:
            return
        self._closed = True
        # A static change in flight (restart, rollback) finishes first: tearing the
        # connections down under it could leave the server down.
        async with self.knobs.lock:
            await self._close(reason)

    async def _close(self, reason: str) -> None:
        try:
            if self._journal_failure is not None:
                await self._journal_failure
            if self.loads.running:
                await self.loads.stop()
            if self.config.cleanup_on_close and self.loads.driver is not None:
                try:
                    await self.loads.cleanup()
                except (LoadError, HostError) as exc:
                    self.recorder.error("load", f"cleanup failed: {exc}")
        finally:
            await self.drift.stop()
            await self.sampler.stop()
            try:
                if self.recorder.journal is not None:
                    with contextlib.suppress(OSError, ValueError):
                        self.emit(End(t=self.now(), wall=self.wall(), reason=reason,
                                      samples=self.sampler.samples))
                    self.recorder.close()
                    if self.fold_keeper is not None and self.recorder.failure is None:
                        self.fold_keeper.keep_now()  # to the end, in the background
            finally:
                await self.sampler.link.close()
                await self.knobs.link.close()
                extra = [n.host for n in self.config.nodes]
                if self.config.ndb is not None:
                    extra.append(self.config.ndb.host)
                closing = {id(h): h for h in (*self.hosts, *extra)}
                for h in closing.values():
                    with contextlib.suppress(Exception):
                        await h.close()

    # -- commands: the incident page, notes

    async def incident_sampling(self, on: bool) -> None:
        await self.sampler.incident_sampling(on)

    def note(self, text: str) -> Note:
        return self.recorder.note(text)

    def mark(self, label: str) -> Mark:
        return self.recorder.mark(label)

    def rebase_knobs(self, values: Mapping[str, str], why: str) -> Note:
        """Take ``values`` as these knobs' baseline (revert-to-baseline and a recipe's end
        bring them back), not the server's values at this start: a resumed tune's (the
        killed one left a trial's values on the server). Journaled as a note."""
        for knob, value in values.items():
            self.knobs.baseline[knob] = value
        listed = ", ".join(f"{k} = {v}" for k, v in sorted(values.items()))
        return self.note(f"baseline of {listed}: {why}")

    # -- commands: knobs

    async def set_knob(self, name: str, value: str, *, restart_ok: bool = False,
                       reason: str = "", reach: Collection[str] = ()) -> Change:
        return await self.knobs.set_knob(name, value, restart_ok=restart_ok, reason=reason,
                                         reach=reach)

    async def set_knobs(self, values: Mapping[str, str], *, restart_ok: bool = False,
                        reason: str = "", keep_load: bool = False,
                        reach: Collection[str] = ()) -> list[Change]:
        return await self.knobs.set_knobs(values, restart_ok=restart_ok, reason=reason,
                                          keep_load=keep_load, reach=reach)

    async def undo(self, expected: Change | None = None) -> Change | None:
        return await self.knobs.undo(expected)

    async def baseline_diff(self) -> list[BaselineDiff]:
        return await self.knobs.baseline_diff()

    async def revert_to_baseline(self, outside: bool = False) -> list[Change]:
        return await self.knobs.revert_to_baseline(outside)

    def expected_downtime(self) -> str:
        return self.knobs.expected_downtime()

    async def preview_change(self, knob: str, value: str) -> Plan:
        return await self.knobs.preview(knob, value)

    def revert_plan(self, diff: list[BaselineDiff]) -> str:
        return self.knobs.revert_plan(diff)

    def quit_choice(self, choice: str, diff: list[BaselineDiff]) -> Note:
        return self.knobs.quit_choice(choice, diff)

    # -- commands: load

    async def start_load(self, workload: str | None = None, threads: int | None = None) -> Phase:
        return await self.loads.start(workload, threads)

    async def stop_load(self) -> None:
        await self.loads.stop()

    async def toggle_load(self) -> None:
        await self.loads.toggle()

    async def change_load(self, workload: str | None = None,
                          threads: int | None = None) -> LoadSpec:
        return await self.loads.change(workload, threads)

    def plan_load(self, workload: str | None = None, threads: int | None = None) -> LoadSpec:
        return self.loads.plan(workload, threads)

    def use_load(self, spec: LoadSpec) -> LoadSpec:
        return self.loads.use(spec)

    async def prepare_load(self, progress: Callable[[PrepareProgress], None] | None = None) -> bool:
        return await self.loads.prepare(progress)

    async def cleanup_load(self) -> None:
        await self.loads.cleanup()

    def server_link(self) -> ServerLink:
        """A new link to the server (not connected) for a command of its own."""
        return ServerLink(self.config.connection, via=self.via)

    # -- commands: what a recipe run needs

    async def global_values(self, names: Sequence[str]) -> dict[str, str | None]:
        """The server's global values of ``names`` now (None: no such variable), read on a
        link of its own (the actions' link may be busy with a long SET GLOBAL)."""
        link = self.server_link()
        await link.connect()
        try:
            return await global_values(link, names)
        finally:
            await link.close()

    async def wait_for_purge(self, below: int, timeout: float,
                             stopped: Callable[[], bool]) -> PurgeWait:
        """MariaDB's innodb_max_purge_lag_wait: wait until the history list is below
        ``below`` (killed on the server at the timeout or when ``stopped()``)."""
        return await purge_wait(self.server_link, below, timeout, stopped)

    def record(self, kind: Callable[Concatenate[float, float, Fields], Recorded], /,
               *args: Fields.args, **fields: Fields.kwargs) -> Recorded:
        """One of a recipe run's events (port.RECORDED; any other kind is refused), stamped
        and journaled here: the caller gives its fields but its times."""
        check_recorded(kind)
        return self.recorder.record(kind, *args, **fields)

    def tell(self, kind: Callable[Concatenate[float, float, Fields], Progress], /,
             *args: Fields.args, **fields: Fields.kwargs) -> Progress:
        return told(self.recorder, kind, *args, **fields)

    async def run_recipe(self, order: RunOrder[Report]) -> Report:
        return await self.runs.run(self, order)

    def abort_recipe(self) -> None:
        self.runs.abort()

    async def probe(self, name: str, phase: str, params: Mapping[str, int],
                    counters: Sequence[str] = ()) -> ProbeReading:
        """One phase of a curve recipe's probe (server.probes), on a new link: its session
        variables are the server's global values now."""
        link = self.server_link()
        await link.connect()
        try:
            return await run_probe(link, name, phase, dict(params), tuple(counters))
        finally:
            await link.close()

    async def conditions(self) -> Conditions:
        """The conditions probe of this server (session.conditions), on a new link."""
        clients = (self.host, *self.clients) if self._client_on_target else self.clients
        return await session_conditions(
            self.host, clients, self.server_link, storage=self.config.storage,
            load_here=not clients and self.loads.driver is not None)

    async def footprint(self, sizes: bool = False) -> Footprint:
        """The server's own footprint now, read on its host (``sizes``: with the datadir's
        and the size of the databases the load runs on)."""
        if self._footprint is None:
            self._footprint = FootprintProbe(self.host, self.server_link, self.now)
        return await self._footprint.read(sizes, self.loads.databases())


def as_port(session: Session) -> SessionPort:
    """``session`` as the port front ends use (mypy checks that Session implements it)."""
    return session


__all__ = ["MIN_INTERVAL", "Session", "SessionConfig", "SessionError", "as_port"]
