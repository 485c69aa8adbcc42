"""Load on several client hosts at once: one driver each, per-host reports plus a sum."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from knobtop.load.base import (
    ExitCallback,
    LoadDriver,
    LoadError,
    LoadExit,
    LoadSpec,
    ReportCallback,
    TableDriver,
)
from knobtop.load.sysbench import Sysbench
from knobtop.load.sysbench_output import IntervalReport, seconds_covered

ALL = "all"


def aggregate(second: int, reports: Sequence[IntervalReport]) -> IntervalReport:
    """The clients' reports for one second, summed.  Latency is the worst client's
    percentile: the percentile of the union cannot be rebuilt from per-client
    percentiles, and the highest is the honest bound a person should see."""
    return IntervalReport(
        second=second,
        threads=sum(r.threads for r in reports),
        tps=round(sum(r.tps for r in reports), 2),
        qps=round(sum(r.qps for r in reports), 2),
        reads=round(sum(r.reads for r in reports), 2),
        writes=round(sum(r.writes for r in reports), 2),
        other=round(sum(r.other for r in reports), 2),
        latency_percentile=reports[0].latency_percentile,
        latency_ms=max(r.latency_ms for r in reports),
        errors_per_s=round(sum(r.errors_per_s for r in reports), 2),
        reconnects_per_s=round(sum(r.reconnects_per_s for r in reports), 2),
        db=all(r.db for r in reports),
    )


# How many seconds one client may be behind another before a sum goes out without it. A
# client started over SSH on a busy machine begins a second or two after a local one; a sum
# that leaves a running client out shows a false drop in TPS.
LAG_LIMIT = 3


@dataclass
class _Run:
    on_report: ReportCallback
    on_exit: ExitCallback
    live: set[str]
    pending: dict[int, dict[str, IntervalReport]] = field(default_factory=dict)
    exits: dict[str, LoadExit] = field(default_factory=dict)
    stopping: bool = False
    user_stop: bool = False  # stop() was called (not: another client failed)
    summed_upto: int = 0  # seconds up to this one have had their sum reported
    last_second: dict[str, int] = field(default_factory=dict)  # each client's last report


class MultiLoad:
    """Drives the same workload on every client at once (threads are per client).

    Each client's report is passed on as it comes (source ``sysbench@HOST``); once
    every client still running has reported second ``s``, their sum follows with
    source ``all``.  A client that dies stops counting; the others go on.
    """

    name = "sysbench"

    def __init__(self, drivers: Sequence[LoadDriver]) -> None:
        if len(drivers) < 2:
            raise ValueError("MultiLoad needs two or more drivers")
        self.drivers = list(drivers)
        self.host_name = ",".join(d.host_name for d in drivers)
        self._run: _Run | None = None

    @property
    def version(self) -> str:
        return ",".join(sorted({d.version for d in self.drivers if d.version}))

    def parts(self) -> list[LoadDriver]:
        return list(self.drivers)

    def table_drivers(self) -> list[TableDriver]:
        return [t for d in self.drivers for t in d.table_drivers()]

    @property
    def running(self) -> bool:
        return any(d.running for d in self.drivers)

    async def start(self, spec: LoadSpec, on_report: ReportCallback, on_exit: ExitCallback) -> None:
        run = _Run(on_report, on_exit, {d.host_name for d in self.drivers})
        self._run = run
        # All at once: their "second N" lines then line up (a start over SSH takes a while).
        specs = self.part_specs(spec)
        results = await asyncio.gather(
            *(d.start(s, *self._callbacks(run, d.host_name))
              for d, s in zip(self.drivers, specs, strict=True)),
            return_exceptions=True,
        )
        errors = [r for r in results if isinstance(r, BaseException)]
        if errors:
            run.stopping = True
            for driver in self.drivers:
                if driver.running:
                    with contextlib.suppress(LoadError):
                        await driver.stop()
            first = errors[0]
            if not isinstance(first, LoadError):
                raise first
            raise LoadError(f"{first} (no client was left running)") from None

    def part_specs(self, spec: LoadSpec) -> list[LoadSpec]:
        """What each driver runs: the same load on every client."""
        return [spec] * len(self.drivers)

    def _callbacks(self, run: _Run, host: str) -> tuple[ReportCallback, ExitCallback]:
        def report(src: str, item: IntervalReport) -> None:
            self._report(run, host, src, item)

        async def exited(exit: LoadExit) -> None:
            await self._exit(run, host, exit)

        return report, exited

    def _report(self, run: _Run, host: str, src: str, report: IntervalReport) -> None:
        run.on_report(src, report)
        # A line after a skipped tick stands for each second it covers in the sums too
        # (else the skipped second's sum lacks this client).
        first = report.second - seconds_covered(run.last_second.get(host, 0), report.second) + 1
        run.last_second[host] = report.second
        for second in range(max(first, run.summed_upto + 1), report.second + 1):
            run.pending.setdefault(second, {})[host] = (
                report if second == report.second else replace(report, second=second))
        if report.second <= run.summed_upto:
            return  # that second's sum went out without this (late) client
        for second in sorted(run.pending):
            got = run.pending[second]
            # Complete, or another client is LAG_LIMIT seconds further on: the lagging one
            # is left out of this second's sum.
            if run.live <= set(got) or second <= report.second - LAG_LIMIT:
                del run.pending[second]
                run.summed_upto = second
                run.on_report(ALL, aggregate(second, list(got.values())))
            else:
                break

    async def _exit(self, run: _Run, host: str, exit: LoadExit) -> None:
        run.exits[host] = exit
        run.live.discard(host)
        if run.live and not run.stopping and exit.error:
            # One client failed: say so and stop the others, so the phase ends cleanly.
            run.stopping = True
            for driver in self.drivers:
                if driver.host_name != host and driver.running:
                    asyncio.get_running_loop().create_task(driver.stop())
        if run.live:
            return
        errors = [f"{h}: {e.error}" for h, e in run.exits.items() if e.error]
        summaries = [e.summary for e in run.exits.values() if e.summary is not None]
        await run.on_exit(
            LoadExit(
                returncode=max((e.returncode or 0) for e in run.exits.values()),
                summary=summaries[0] if len(summaries) == 1 else None,
                error="; ".join(errors),
                stopped=run.user_stop,
                per_host={h: e.summary for h, e in run.exits.items() if e.summary is not None},
            )
        )

    async def stop(self) -> LoadExit | None:
        run = self._run
        if run is None:
            return None
        run.stopping = True
        run.user_stop = True
        await asyncio.gather(*(d.stop() for d in self.drivers if d.running))
        return None


class Instances(MultiLoad):
    """``instances = N``: N sysbench processes at once on each client, each on its own
    database (``sbtest_i1`` ...), reporting per instance (``sysbench@HOST#2``) and summed
    per second like several clients. A client's threads and rate are shared out among its
    instances (LoadSpec.split)."""

    def __init__(self, driver: LoadDriver, instances: int, shape: str = "") -> None:
        self.instances = instances
        super().__init__([c.clone(shape, i) for c in _sysbench_clients(driver, instances)
                          for i in range(1, instances + 1)])

    def part_specs(self, spec: LoadSpec) -> list[LoadSpec]:
        shares = spec.split()
        return [shares[i % self.instances] for i in range(len(self.drivers))]


def _sysbench_clients(driver: LoadDriver, instances: int) -> list[Sysbench]:
    clients = driver.parts()
    if not all(isinstance(c, Sysbench) for c in clients):
        what = (f"instances = {instances}" if instances > 1 else
                "tables of their own (another engine or table options)")
        raise LoadError(f"{what} needs the sysbench driver: the {driver.name} driver runs "
                        "one load on one database (use --driver sysbench)")
    return [c for c in clients if isinstance(c, Sysbench)]


def shaped(driver: LoadDriver, spec: LoadSpec) -> LoadDriver:
    """The driver that runs ``spec``: ``driver`` itself for the default tables and one
    instance; else clones of its clients on the spec's own database(s) (LoadSpec.schema)
    and, with instances, N of each."""
    if spec.instances > 1:
        return Instances(driver, spec.instances, spec.schema)
    if not spec.schema:
        return driver
    parts = driver.parts()
    own = getattr(parts[0], "clone", None) if len(parts) == 1 else None
    if own is not None and not isinstance(parts[0], Sysbench):
        cloned: LoadDriver = own(spec.schema)  # the built-in driver on a database of its own
        return cloned
    clones = [c.clone(spec.schema) for c in _sysbench_clients(driver, 1)]
    return clones[0] if len(clones) == 1 else MultiLoad(clones)
