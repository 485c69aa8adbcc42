"""The load controller: one load at a time, each start a numbered phase with its statistics.

It starts, stops and changes the load driver (one change at a time), journals each phase's
start and end with its summary (per-second TPS and latency medians, sysbench's own totals,
each client's numbers), passes the driver's per-second reports on as ``load`` events, and
says when a failed load's tables are missing.  Knob changes that restart the server pause
it and resume it (``paused``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import statistics
import sys
from array import array
from collections.abc import AsyncIterator, Callable
from typing import Any

from knobtop.hosts.base import HostError
from knobtop.journal.events import Load, Phase
from knobtop.journal.sanitize import printable_record
from knobtop.load.base import BUILTIN_ONLY, LoadDriver, LoadError, LoadExit, LoadSpec
from knobtop.load.builtin import BuiltinDriver
from knobtop.load.multi import ALL, shaped
from knobtop.load.prepare import prepare_all, table_drivers
from knobtop.load.sysbench import missing_tables_hint
from knobtop.load.sysbench_output import IntervalReport, PrepareProgress
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink, Tunnel
from knobtop.session.recorder import Recorder

# Load errors that a missing table can be behind (sysbench's generic lines, the server's
# own, the built-in driver's); others (access denied, no sysbench) say what they are.
TABLE_ERRORS = ("SQL API error", "mysql_stmt_prepare", "doesn't exist", "1146", "1049",
                "Unknown database", "prepare the sysbench tables")


class Hundredths:
    """One column of a phase's numbers: hundredths in 4-byte ints while every value has at
    most two decimals and fits (sysbench prints two; the built-in driver rounds to two),
    8-byte floats from the first value that does not.  Either way ``values()`` gives back
    what was appended: a two-decimal float is the one nearest its hundredths / 100."""

    __slots__ = ("_floats", "_ints")
    _LIMIT = 2**31

    def __init__(self) -> None:
        self._ints: array[int] | None = array("i")  # None once the floats took over
        self._floats: array[float] = array("d")

    def append(self, value: float) -> None:
        ints = self._ints
        if ints is not None:
            scaled = value * 100
            whole = round(scaled)
            # Float noise only (a sum of two-decimal figures, the product by 100): under
            # 2**31 it stays below 1e-6 of a hundredth, where a third decimal is >= 0.1.
            if -self._LIMIT <= whole < self._LIMIT and abs(scaled - whole) <= 1e-6:
                ints.append(whole)
                return
            self._floats = array("d", (v / 100 for v in ints))
            self._ints = None
        self._floats.append(value)

    def values(self) -> list[float]:
        ints = self._ints
        return [v / 100 for v in ints] if ints is not None else list(self._floats)

    def nbytes(self) -> int:
        return sys.getsizeof(self._ints) + sys.getsizeof(self._floats)

    def __len__(self) -> int:
        return len(self._ints) if self._ints is not None else len(self._floats)


class PhaseNumbers:
    """A phase's per-interval TPS and latency as two compact columns (8 bytes a report,
    not a report object each: a phase may run for a day)."""

    __slots__ = ("lat", "tps")

    def __init__(self) -> None:
        self.tps = Hundredths()
        self.lat = Hundredths()

    def append(self, report: IntervalReport) -> None:
        self.tps.append(report.tps)
        self.lat.append(report.latency_ms)

    def __len__(self) -> int:
        return len(self.tps)


def phase_stats(numbers: PhaseNumbers) -> dict[str, Any]:
    if not numbers:
        return {"intervals": 0}
    return {
        "intervals": len(numbers),
        "tps_median": round(statistics.median(tps := numbers.tps.values()), 2),
        "tps_mean": round(statistics.fmean(tps), 2),
        "p95_median": round(statistics.median(numbers.lat.values()), 2),
    }


def run_options(spec: LoadSpec, driver: LoadDriver) -> dict[str, Any]:
    """What a start phase records of the run's settings (its ``summary`` at start)."""
    return {
        "version": driver.version,
        "tables": spec.tables,
        "table_size": spec.table_size,
        "rate": spec.rate,
        "rand_type": spec.rand_type,
        "percentile": spec.percentile,
        "prepared": spec.prepared,
        "duration": spec.duration,
        **({"engine": spec.engine} if spec.engine else {}),
        **({"options": dict(spec.options)} if spec.options else {}),
        **({"instances": spec.instances} if spec.instances > 1 else {}),
        **({"table_options": dict(spec.table_options)} if spec.table_options else {}),
    }


class LoadController:
    def __init__(self, recorder: Recorder, driver: LoadDriver | None, default: LoadSpec,
                 connection: ConnectionInfo, via: Tunnel | None,
                 closed: Callable[[], bool]) -> None:
        self.recorder = recorder
        self.driver = driver  # the clients' drivers (one instance each)
        self.active = driver  # the one the current or last phase runs (see driver_for)
        self._shaped: dict[tuple[bool, int, str], LoadDriver] = {}
        self._builtin: BuiltinDriver | None = None  # LinkBench's stand-in (_base_for)
        self.default = default  # the profile's (or the command line's) load
        self.spec: LoadSpec | None = None  # the load running or planned
        self.phase = 0
        self.phase_reports = PhaseNumbers()
        self._host_reports: dict[str, PhaseNumbers] = {}
        self._early_loads: list[Load] | None = None  # while a load is starting
        self._connection = connection
        self._via = via
        self._closed = closed
        self.lock = asyncio.Lock()

    @property
    def current(self) -> LoadSpec:
        """The load P/L/T act on: the one running or planned, else the default."""
        return self.spec or self.default

    @property
    def running(self) -> bool:
        return self.active is not None and self.active.running

    def sources(self) -> tuple[str, ...]:
        return tuple(d.host_name for d in self.active.parts()) if self.active else ()

    def databases(self) -> list[str]:
        """The databases the current (or planned) load runs on."""
        return sorted({t.database for t in table_drivers(self.driver_for(self.current))})

    def _base_for(self, spec: LoadSpec) -> LoadDriver | None:
        """The clients' driver, or for a workload only the built-in driver runs (LinkBench)
        in a session driven by sysbench, a built-in driver from this machine on the same
        database. A server reached only through its host's SSH keeps the clients' driver,
        which refuses the workload naming the fix."""
        driver = self.driver
        if (driver is None or spec.workload not in BUILTIN_ONLY or self._via is not None
                or isinstance(driver, BuiltinDriver)):
            return driver
        if self._builtin is None:
            tables = table_drivers(driver)
            self._builtin = (BuiltinDriver(self._connection, database=tables[0].database)
                             if tables else BuiltinDriver(self._connection))
        return self._builtin

    def driver_for(self, spec: LoadSpec) -> LoadDriver | None:
        """The driver that runs ``spec``: the clients' own (or the built-in stand-in,
        ``_base_for``), or clones of it on the spec's own tables and instances
        (load.multi.shaped), made once per shape."""
        base = self._base_for(spec)
        if base is None or (spec.instances == 1 and not spec.schema):
            return base
        key = (base is self._builtin, spec.instances, spec.schema)
        if key not in self._shaped:
            self._shaped[key] = shaped(base, spec)
        return self._shaped[key]

    def _link(self) -> ServerLink:
        return ServerLink(self._connection, via=self._via)

    # -- commands (one load change at a time)

    async def start(self, workload: str | None = None, threads: int | None = None) -> Phase:
        """Start (or restart as a new phase) the load."""
        async with self.lock:
            return await self._start(workload, threads)

    async def toggle(self) -> None:
        async with self.lock:
            if self.running:
                await self._stop()
            else:
                await self._start(None, None)

    async def change(self, workload: str | None = None, threads: int | None = None) -> LoadSpec:
        """Running load restarts with the new setting as a new phase; stopped load
        only remembers it for the next start."""
        async with self.lock:
            if self.running:
                await self._start(workload, threads)
                assert self.spec is not None
                return self.spec
            return self.plan(workload, threads)

    def plan(self, workload: str | None = None, threads: int | None = None) -> LoadSpec:
        """Choose the next load without starting it."""
        base = self.current
        spec = dataclasses.replace(
            base, workload=workload or base.workload, threads=threads or base.threads
        )
        spec.check()
        self.spec = spec
        return spec

    def use(self, spec: LoadSpec) -> LoadSpec:
        """Make ``spec`` (checked) the next load, whole (a recipe step's)."""
        spec.check()
        self.spec = spec
        return spec

    async def prepare(self, progress: Callable[[PrepareProgress], None] | None = None) -> bool:
        """Create and fill the sysbench tables the load needs (unless already there)."""
        async with self.lock:
            if self.running:
                raise LoadError("stop the load before preparing its tables")
            spec = self.current
            self.recorder.mark(f"prepare {spec.tables_text}")
            loaded = await prepare_all(self._link, self._base_for(spec), spec, progress)
            self.recorder.mark("tables ready" if loaded else "tables were already there")
            return loaded

    async def cleanup(self) -> None:
        """Drop the sysbench tables (sysbench cleanup on each client's database)."""
        async with self.lock:
            if self.running:
                await self._stop()
            spec = self.current
            seen: set[str] = set()
            for sb in table_drivers(self.driver_for(spec)):
                if sb.database not in seen:
                    seen.add(sb.database)
                    await sb.cleanup(spec)
            self.recorder.mark("LinkBench tables dropped" if spec.workload == "linkbench"
                               else "sysbench tables dropped")

    async def stop(self) -> None:
        async with self.lock:
            await self._stop()

    async def stop_quietly(self) -> None:
        """Best effort (the journal failed): close() stops the load again if this did not."""
        with contextlib.suppress(Exception):
            await self.stop()

    @contextlib.asynccontextmanager
    async def paused(self) -> AsyncIterator[None]:
        """sysbench would die with the server: a restart stops it cleanly first and starts
        it again after (as a new phase)."""
        async with self.lock:
            resume = self.spec if self.running else None
            if resume is not None:
                await self._stop()
        try:
            yield
        finally:
            if resume is not None:
                async with self.lock:
                    with contextlib.suppress(LoadError, HostError):
                        await self._start(resume.workload, resume.threads)

    # -- inside the lock

    async def _stop(self) -> None:
        if self.active is not None:
            await self.active.stop()

    async def _start(self, workload: str | None, threads: int | None) -> Phase:
        rec = self.recorder
        if self.driver is None:
            raise LoadError("no load driver in this session")
        if rec.journal_error is not None:
            raise LoadError(rec.journal_error)
        previous = self.spec
        spec = self.plan(workload, threads)
        self.spec = previous
        driver = self.driver_for(spec)
        assert driver is not None
        if self.running:
            await self._stop()
        self.active = driver
        self.phase += 1
        self.spec = spec
        self.phase_reports = PhaseNumbers()
        self._host_reports = {}
        phase = self.phase
        # Several clients start one by one (SSH takes a while): the first may report its
        # first seconds before the last has started. Those reports are held back and written
        # after the phase's start event, which is stamped when starting began, so every
        # report of a phase follows its start in the journal and lies within it in time.
        began, began_wall = rec.now(), rec.wall()
        self._early_loads = []
        try:
            await driver.start(spec, self.on_report, lambda ex: self._on_exit(phase, ex))
        except LoadError as exc:
            message = await self._with_tables_hint(str(exc), spec)
            self._emit_phase_start(Phase(
                t=rec.now(), wall=rec.wall(), action="failed", phase=phase,
                driver=driver.name, workload=spec.workload, threads=spec.threads,
                host=driver.host_name, message=message))
            raise LoadError(message) from None
        event = printable_record(Phase(
            t=began, wall=began_wall, action="start", phase=phase, driver=driver.name,
            workload=spec.workload, threads=spec.threads, host=driver.host_name,
            summary=run_options(spec, driver)))
        self._emit_phase_start(event)
        return event

    def _emit_phase_start(self, event: Phase) -> None:
        """The phase's start (or failure to start), then the reports held back meanwhile."""
        early, self._early_loads = self._early_loads, None
        self.recorder.emit(event)
        for load in early or ():
            self.recorder.emit(load)

    # -- what the driver reports

    def on_report(self, src: str, report: IntervalReport) -> None:
        # With several clients the phase statistics use the per-second sums ("all"), and
        # each client's own numbers are kept for its line of the phase summary.
        if src == ALL or len(self.sources()) < 2:
            self.phase_reports.append(report)
        else:
            self._host_reports.setdefault(src, PhaseNumbers()).append(report)
        rec = self.recorder
        fields: dict[str, Any] = report.to_event()
        load = Load(t=rec.now(), wall=rec.wall(), src=src, **fields)
        if self._early_loads is not None:
            self._early_loads.append(load)  # the phase's start event is not out yet
        else:
            rec.emit(load)

    async def _on_exit(self, phase: int, exit: LoadExit) -> None:
        rec, spec, driver = self.recorder, self.current, self.active
        summary: dict[str, Any] = phase_stats(self.phase_reports)
        if exit.summary is not None:
            summary["sysbench"] = exit.summary.to_event()
        if len(self.sources()) > 1:
            summary["hosts"] = {src: phase_stats(r) for src, r in self._host_reports.items()}
            if exit.per_host:
                summary["sysbench_per_host"] = {h: s.to_event() for h, s in exit.per_host.items()}
        failed = bool(exit.error) and not exit.stopped
        message = exit.error
        if failed and not self.phase_reports:
            message = await self._with_tables_hint(message, spec)
        rec.emit(Phase(t=rec.now(), wall=rec.wall(), action="failed" if failed else "stop",
                       phase=phase, driver=driver.name if driver else "",
                       workload=spec.workload, threads=spec.threads,
                       host=driver.host_name if driver else "", message=message,
                       summary=summary))
        if failed:
            rec.error("load", f"load stopped: {message}", quietly=False)

    async def _with_tables_hint(self, message: str, spec: LoadSpec) -> str:
        """A load that failed before its first second with a statement error: if its
        tables are missing, say so and how to fix it.

        sysbench's threads print their FATAL lines in no fixed order, so the server's
        "doesn't exist" is not always among the lines it reports first; the server itself
        is asked instead, on a link of its own (the action link may be busy with a long
        SET GLOBAL) and for at most a few seconds (the server may be what failed).
        """
        if self._closed() or not any(mark in message for mark in TABLE_ERRORS):
            return message
        for sb in table_drivers(self.driver_for(spec)):
            hint = missing_tables_hint(sb.database)
            if hint in message:
                return message
            link = self._link()
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


__all__ = ["TABLE_ERRORS", "Hundredths", "LoadController", "PhaseNumbers", "phase_stats",
           "run_options"]
