"""A sysbench-like load from Python worker processes, for hosts without sysbench.

This module is the driver the session talks to (tables, checks, start and stop); one run's
parent side is in builtin_run, the worker process in builtin_worker, sysbench's statements
in builtin_statements and the latency histograms and counts in builtin_stats."""

from __future__ import annotations

import asyncio
import importlib.util
import os
import random
import time
from collections.abc import Callable
from dataclasses import replace

from knobtop.load.base import (
    ExitCallback,
    LoadDriver,
    LoadError,
    LoadExit,
    LoadSpec,
    ReportCallback,
    TableDriver,
)
from knobtop.load.builtin_run import Run, only_ops_of
from knobtop.load.builtin_stats import HIST_SIZE, bucket, percentile_ms
from knobtop.load.sysbench_output import PrepareProgress
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink
from knobtop.sqlquote import quote_ident

__all__ = ["HIST_SIZE", "SUPPORTED", "BuiltinDriver", "bucket", "default_processes",
           "percentile_ms"]

SUPPORTED: tuple[str, ...] = ("oltp_point_select", "oltp_read_write", "linkbench")


def default_processes(threads: int, *, local_server: bool = True) -> int:
    """Worker processes for ``threads`` clients: one per 4 clients, at most one per core, and
    half the cores when the server runs on this machine too.

    Measured on a 2-core box with mariadbd beside it (oltp_point_select, median TPS of
    alternating 6 s runs): 8 clients gave ~49k TPS in one process, ~34k in two; 32 clients
    ~45k in one, ~31k in two.  One asyncio process keeps a local server busy; a second only
    takes a core from it.
    """
    cores = os.cpu_count() or 1
    budget = max(1, cores // 2) if local_server else cores
    return max(1, min(budget, threads // 4))


def client_library() -> str:
    """asyncmy when installed (server-side prepared statements, C parser), else aiomysql."""
    return "asyncmy" if importlib.util.find_spec("asyncmy") is not None else "aiomysql"


class BuiltinDriver:
    """sysbench's ``oltp_point_select`` and ``oltp_read_write`` from Python, on this host.

    ``spec.threads`` client connections are spread over ``processes`` worker
    processes (fresh interpreters, never a bare ``fork``), each an asyncio loop.
    They run the statements of sysbench 1.0's oltp_common.lua with uniform ids
    in 1..table_size.  With asyncmy the statements are server-side prepared, as
    sysbench does by default (``spec.prepared=False``, or aiomysql, sends them
    as plain text).  Every second each worker sends its counts and a sysbench-
    style latency histogram over its pipe; the parent merges them into one
    ``IntervalReport`` (latency = the percentile of the merged histogram).

    The password reaches the workers pickled through their pipe, never on a
    command line.  A worker leaves when its pipe to the parent closes (the
    parent died) or its parent pid changes; ``stop()`` asks, then SIGTERMs,
    then SIGKILLs.
    """

    name = "builtin"
    host_name = "local"
    src = "builtin@local"

    def __init__(
        self, info: ConnectionInfo, *, database: str = "sbtest", processes: int | None = None
    ) -> None:
        self.info = info
        self.database = database
        self.processes = processes
        self.library = client_library()
        # importlib.metadata (with email, zipfile, csv: ~1 MB, 20 ms) only where a built-in
        # load is set up, not in every session's process.
        from importlib import metadata

        try:
            self.version = f"{self.library} {metadata.version(self.library)}"
        except metadata.PackageNotFoundError:
            self.version = self.library
        self._run: Run | None = None
        self.worker_pids: list[int] = []

    def parts(self) -> list[LoadDriver]:
        return [self]

    def clone(self, suffix: str) -> BuiltinDriver:
        """This load on database ``sbtest_SUFFIX``: tables of another shape (an engine,
        table options) for a recipe arm, never rebuilding the default ones."""
        return BuiltinDriver(self.info, database=f"{self.database}_{suffix}"[:64],
                             processes=self.processes)

    def table_drivers(self) -> list[TableDriver]:
        return [self]

    @property
    def running(self) -> bool:
        return self._run is not None

    def release(self, run: Run) -> None:
        """``run`` has ended: no longer the one running (a later start's is kept)."""
        if self._run is run:
            self._run = None

    async def prepare(
        self, spec: LoadSpec, progress: Callable[[PrepareProgress], None] | None = None
    ) -> None:
        """Create and fill sbtest1..N as sysbench's oltp_common.lua does (same columns,
        same secondary index on k, c and pad in its digit-group format), for machines
        without sysbench."""
        spec.check_engine()
        rng = random.Random()
        if spec.workload == "linkbench":
            await self._load_graph(spec, rng, progress)
            return

        def digits(groups: int) -> str:
            return "-".join(f"{rng.randrange(10**11):011d}" for _ in range(groups))

        link = ServerLink(replace(self.info, database=self.database))
        try:
            await link.connect()
            for i in range(1, spec.tables + 1):
                table = f"sbtest{i}"
                quoted = quote_ident(table)
                if progress is not None:
                    progress(PrepareProgress(table, "create"))
                await link.query(
                    f"CREATE TABLE {quoted} (id INTEGER NOT NULL AUTO_INCREMENT, "
                    "k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, "
                    "pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id))"
                    + (f" ENGINE={spec.engine}" if spec.engine else "")
                )
                if progress is not None:
                    progress(PrepareProgress(table, "insert", spec.table_size))
                for start in range(0, spec.table_size, 1000):
                    rows = min(1000, spec.table_size - start)
                    values = ", ".join(["(%s, %s, %s)"] * rows)
                    args: list[object] = []
                    for _ in range(rows):
                        args += [rng.randint(1, spec.table_size), digits(10), digits(5)]
                    await link.query(f"INSERT INTO {quoted} (k, c, pad) VALUES {values}", args)
                if progress is not None:
                    progress(PrepareProgress(table, "index"))
                await link.query(f"CREATE INDEX k_{i} ON {quoted} (k)")
        except ServerError as exc:
            raise LoadError(f"preparing the tables in {self.database} failed: {exc}") from None
        finally:
            await link.close()

    async def _load_graph(self, spec: LoadSpec, rng: random.Random,
                          progress: Callable[[PrepareProgress], None] | None) -> None:
        """LinkBench's load phase (issue 20): its three tables, then the graph of
        ``spec.table_size`` (maxid1) nodes, ``spec.threads`` loaders at once, each on its
        own range of ids; ``progress`` hears the rows written so far."""
        from knobtop.load import linkbench

        links = [ServerLink(replace(self.info, database=self.database))
                 for _ in range(max(1, min(spec.loaders or spec.threads, 16)))]
        done = [linkbench.LoadProgress() for _ in links]

        def told() -> None:
            if progress is not None:
                progress(PrepareProgress("linkbench", "insert", sum(d.rows for d in done)))

        try:
            for link in links:
                await link.connect()
            for sql in linkbench.ddl(spec.engine):
                await links[0].query(sql)
            if progress is not None:
                progress(PrepareProgress("linkbench", "create"))
            n, now = spec.table_size, int(time.time())
            share = -(-n // len(links))

            async def loader(i: int) -> None:
                first, last = i * share + 1, min(n, (i + 1) * share)
                if first > last:
                    return

                def step(p: linkbench.LoadProgress) -> None:
                    done[i] = p
                    told()

                await linkbench.load_graph(lambda sql, args: links[i].query(sql, args), n,
                                           random.Random(rng.random()), now, step, first, last)

            await asyncio.gather(*(loader(i) for i in range(len(links))))
            comment = linkbench.LOADED.format(maxid1=n)
            await links[0].query(f"ALTER TABLE nodetable COMMENT = '{comment}'")
        except ServerError as exc:
            raise LoadError(f"loading the LinkBench graph in {self.database} failed: "
                            f"{exc}") from None
        finally:
            for link in links:
                await link.close()

    async def cleanup(self, spec: LoadSpec) -> None:
        link = ServerLink(replace(self.info, database=self.database))
        try:
            await link.connect()
            if spec.workload == "linkbench":
                from knobtop.load.linkbench import TABLES

                for table in TABLES:
                    await link.query(f"DROP TABLE IF EXISTS {quote_ident(table)}")
                return
            for i in range(1, spec.tables + 1):
                await link.query(f"DROP TABLE IF EXISTS {quote_ident(f'sbtest{i}')}")
        except ServerError as exc:
            raise LoadError(f"dropping the tables in {self.database} failed: {exc}") from None
        finally:
            await link.close()

    @staticmethod
    def check(spec: LoadSpec) -> None:
        if spec.workload not in SUPPORTED:
            raise LoadError(
                f"the built-in load runs {' or '.join(SUPPORTED)}, not '{spec.workload}'; "
                "use sysbench for other workloads"
            )
        spec.check()
        if spec.workload == "linkbench":
            only_ops_of(spec)
            if spec.table_size < 100:
                raise LoadError(f"a LinkBench graph of {spec.table_size} nodes is too small: "
                                "give maxid1 (--table-size) of at least 100")
            if any(key != "ops" for key, _ in spec.options):
                raise LoadError("LinkBench on the built-in driver takes one option, "
                                "ops=OP[,OP...] (its operations alone)")
        elif spec.options:
            raise LoadError(
                "the built-in load takes no sysbench options ("
                + ", ".join(f"{k}={v}" for k, v in spec.options)
                + "); use sysbench (--driver sysbench) for them")
        if spec.rand_type != "uniform":
            raise LoadError(
                f"the built-in load draws uniform ids only, not '{spec.rand_type}'; "
                "use sysbench for other distributions"
            )

    async def start(self, spec: LoadSpec, on_report: ReportCallback, on_exit: ExitCallback) -> None:
        self.check(spec)
        if self._run is not None:
            raise LoadError("the built-in load is already running; stop it first")
        run = Run(self, spec, on_report, on_exit)
        self._run = run
        try:
            local = bool(self.info.socket) or self.info.host in ("127.0.0.1", "localhost", "::1")
            await run.launch(self.processes or default_processes(spec.threads, local_server=local))
        except BaseException:
            self.worker_pids = [h.proc.pid for h in run.handles]
            if self._run is run:
                self._run = None
            await asyncio.shield(run.abandon())
            raise
        self.worker_pids = [h.proc.pid for h in run.handles]

    async def stop(self) -> LoadExit | None:
        run = self._run
        if run is None:
            return None
        run.stopping = True
        if run.shutdown_task is None:
            run.shutdown_task = asyncio.create_task(run.shutdown())
        await asyncio.shield(run.shutdown_task)
        if run.finish_task is None:  # the workers could not be reaped: end the run anyway
            run.finish_task = asyncio.create_task(run._finish())
        return await asyncio.shield(run.finish_task)
