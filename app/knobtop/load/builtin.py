"""A sysbench-like load from Python worker processes, for hosts without sysbench."""
# Over 500 lines: the built-in driver and its worker processes speak one pipe protocol
# (counts and histograms each second); apart, each side would need the other's internals.

from __future__ import annotations

import asyncio
import contextlib
import importlib
import importlib.util
import math
import multiprocessing
import os
import pickle
import random
import signal
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field, replace
from math import ceil, floor, log
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from knobtop.load.base import (
    TIME_CAP,
    ExitCallback,
    LoadDriver,
    LoadError,
    LoadExit,
    LoadSpec,
    ReportCallback,
    TableDriver,
)
from knobtop.load.latencies import KEY_PER_LN, LN_ZERO, OpLatencies
from knobtop.load.sysbench_output import IntervalReport, PrepareProgress, RunSummary
from knobtop.safefile import private_cwd
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink, describe_error
from knobtop.sqlquote import quote_ident

__all__ = ["SUPPORTED", "BuiltinDriver", "default_processes", "percentile_ms"]

SUPPORTED: tuple[str, ...] = ("oltp_point_select", "oltp_read_write", "linkbench")

# The statements of sysbench 1.0's oltp_common.lua, with its defaults: 10 point selects,
# one of each range query over range_size=100 rows, one of each update, one delete+insert.
_SQL: dict[str, str] = {
    "begin": "BEGIN",
    "commit": "COMMIT",
    "point_selects": "SELECT c FROM sbtest{t} WHERE id=?",
    "simple_ranges": "SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ?",
    "sum_ranges": "SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN ? AND ?",
    "order_ranges": "SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c",
    "distinct_ranges": "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c",
    "index_updates": "UPDATE sbtest{t} SET k=k+1 WHERE id=?",
    "non_index_updates": "UPDATE sbtest{t} SET c=? WHERE id=?",
    "deletes": "DELETE FROM sbtest{t} WHERE id=?",
    "inserts": "INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?, ?, ?, ?)",
}
_RANGES = ("simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges")
RANGE_SIZE = 100
# Queries per event, as sysbench counts them (reads, writes, other).
_RWO: dict[str, tuple[int, int, int]] = {
    "oltp_point_select": (1, 0, 0),
    "oltp_read_write": (14, 4, 2),
    "linkbench": (0, 0, 0),  # counted per operation (_linkbench)
}
# sysbench's default --mysql-ignore-errors: roll back, count in err/s, run a new event.
IGNORED_ERRORS = frozenset({1213, 1020, 1205})
# How long a client keeps reconnecting to a server that went away (a restart), and how
# often it tries.
RECONNECT_FOR = 60.0
RECONNECT_PAUSE = 0.25

# sysbench's latency histogram: 1024 log-spaced buckets from 0.001 ms to 100 s.
HIST_SIZE = 1024
_DEDUCT = math.log(0.001)
_MULT = (HIST_SIZE - 1) / (math.log(100_000.0) - _DEDUCT)

CONNECT_TIMEOUT = 10.0
START_TIMEOUT = 45.0  # spawn the interpreters, connect every client, prepare
STOP_GRACE = 5.0  # after "stop", before SIGTERM; then as long again before SIGKILL
# asyncmy's statements cached per connection (LRU): LinkBench's 12 statements and getlink's
# 128 shapes (1..128 ids), with room; 8 connections hold ~1,100 of the server's 16,382
STMT_CACHE = 256
FLUSH_GRACE = 0.8  # how long past a second's end a slow worker's tick is awaited


def bucket(ms: float) -> int:
    """The histogram bucket of a latency, as sysbench's sb_histogram_update computes it."""
    if ms <= 0.0:
        return 0
    i = math.floor((math.log(ms) - _DEDUCT) * _MULT + 0.5)
    return 0 if i < 0 else min(i, HIST_SIZE - 1)


def percentile_ms(hist: dict[int, int], percentile: int) -> float:
    """The percentile of a sparse {bucket: count} histogram, as sysbench reports it."""
    total = sum(hist.values())
    limit = math.floor(total * percentile / 100 + 0.5)
    if limit == 0:
        return 0.0
    seen = 0
    for i in sorted(hist):
        seen += hist[i]
        if seen >= limit:
            return round(math.exp(i / _MULT + _DEDUCT), 2)
    return 0.0  # not reached


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


# -- worker side --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _WorkerConfig:
    """What one worker process needs: the first message on its pipe, never in argv."""

    index: int
    clients: int
    info: ConnectionInfo  # its password is not in repr and never in argv
    database: str
    library: str
    workload: str
    tables: int
    table_size: int
    duration: float
    rate_per_client: float
    prepared: bool
    parent_pid: int
    # Tests only (KNOBTOP_LATENCY_LOG): each LinkBench latency, raw, to this file + index
    latency_log: str = ""
    only: tuple[str, ...] = ()  # LinkBench: these operations alone (ops=...)


class _Fatal(Exception):
    """The run cannot go on; the message is for the engineer."""


class _Counts:
    __slots__ = ("errors", "hist", "ops", "other", "reads", "reconnects", "tx", "writes")

    def __init__(self) -> None:
        self.tx = self.reads = self.writes = self.other = self.errors = self.reconnects = 0
        self.hist = [0] * HIST_SIZE
        self.ops: dict[str, OpLatencies] = {}  # LinkBench: each operation's latencies

    def record(self, op: str | None, ms: float) -> None:
        """One request's latency: in sysbench's histogram and (LinkBench) its operation's.
        Once a request: bucket(ms) and key_of(ms) inline, from one logarithm (row 7b of
        bench/ weighs every microsecond here)."""
        lg = log(ms) if ms > 0.0 else LN_ZERO
        i = floor((lg - _DEDUCT) * _MULT + 0.5)
        self.hist[0 if i < 0 else i if i < HIST_SIZE else HIST_SIZE - 1] += 1
        if op is not None:
            lat = self.ops.get(op)
            if lat is None:
                lat = self.ops[op] = OpLatencies()
            lat.add(ceil(lg * KEY_PER_LN), ms)

    def add(self, other: _Counts) -> None:
        for op, lat in other.ops.items():
            mine = self.ops.get(op)
            if mine is None:
                mine = self.ops[op] = OpLatencies()  # a copy: never the other's to change
            mine.merge(lat)
        self.tx += other.tx
        self.reads += other.reads
        self.writes += other.writes
        self.other += other.other
        self.errors += other.errors
        self.reconnects += other.reconnects
        for i, n in enumerate(other.hist):
            if n:
                self.hist[i] += n

    def sparse(self) -> dict[int, int]:
        return {i: n for i, n in enumerate(self.hist) if n}

    def numbers(self) -> tuple[int, int, int, int, int, int]:
        return (self.tx, self.reads, self.writes, self.other, self.errors, self.reconnects)


def _literal(value: object) -> str:
    # Only ints and sysbench's digit-and-dash strings are ever bound.
    return str(value) if isinstance(value, int) else f"'{value}'"


class _Client:
    """One connection; runs statements prepared (binary protocol) or as plain text."""

    __slots__ = ("busy_s", "conn", "cursor", "events", "stmts")

    def __init__(self, conn: Any, cursor: Any = None) -> None:
        self.conn = conn
        self.cursor = cursor  # LinkBench, prepared: asyncmy's cursor over its statement cache
        # sysbench-like: (key, table) -> PreparedStatement; LinkBench: (key, values) -> the
        # query asyncmy has prepared on this connection (_check_prepared)
        self.stmts: dict[tuple[str, int], Any] = {}
        self.events = 0
        self.busy_s = 0.0


class _Worker:
    def __init__(self, pipe: Connection, cfg: _WorkerConfig) -> None:
        self.pipe = pipe
        self.cfg = cfg
        self.where = cfg.info.where
        self.cur = _Counts()
        self.total = _Counts()
        self.lat_min = math.inf
        self.lat_max = 0.0
        self.lat_sum = 0.0
        self.clients: list[_Client] = []
        self.t0 = 0.0
        self.go = asyncio.Event()
        self.stopping = asyncio.Event()
        self.rng = random.Random()
        library: Any = importlib.import_module(cfg.library)
        # asyncmy before 0.2.18 has no server-side prepared statements: plain text then.
        self.prepared = cfg.prepared and hasattr(getattr(library, "Connection", None), "prepare")
        self.run = self._query_prepared if self.prepared else self._query_text
        self.text = {key: sql.split("?") for key, sql in _SQL.items()}
        self.event: Callable[[_Client], Awaitable[str | None]] = (
            self._point_select if cfg.workload == "oltp_point_select" else
            self._linkbench if cfg.workload == "linkbench" else self._read_write
        )
        self.requests: Any = None
        self.now = int(time.time())  # LinkBench's row times, to the second (the ticker's)
        self.raw: list[tuple[str, float]] | None = [] if cfg.latency_log else None
        if cfg.workload == "linkbench":
            from knobtop.load.linkbench import (
                MULTIGET_MAX,
                READ_OPS,
                SQL,
                Requests,
                sql_of,
                template,
            )

            self.requests = Requests(cfg.table_size, self.rng, cfg.only)
            self.lb_reads, self.lb_sql, self.lb_template = READ_OPS, sql_of, template
            self.lb_queries: dict[tuple[str, int], str] = {}
            self.lb_shapes = len(SQL) - 1 + MULTIGET_MAX  # getlink: one shape per size

    # messages ------------------------------------------------------------------
    def send(self, *msg: object) -> None:
        with contextlib.suppress(OSError):
            self.pipe.send(msg)

    def _on_control(self) -> None:
        try:
            while self.pipe.poll():
                msg = self.pipe.recv()
                if msg[0] == "go":
                    self.t0 = float(msg[1])
                    self.go.set()
                elif msg[0] == "stop":
                    self.stopping.set()
        except (EOFError, OSError):
            os._exit(0)  # the parent is gone: leave at once, never run unattended

    async def _watch_parent(self) -> None:
        while True:  # the pipe's EOF covers this too, unless a stray fork holds the pipe
            await asyncio.sleep(1.0)
            if os.getppid() != self.cfg.parent_pid:
                os._exit(0)

    # connections -------------------------------------------------------------------
    async def connect(self) -> Any:
        info, cfg = self.cfg.info, self.cfg
        target: dict[str, Any] = (
            {"unix_socket": info.socket} if info.socket else {"host": info.host, "port": info.port}
        )
        module: Any = importlib.import_module(cfg.library)
        db: dict[str, Any] = (
            {"database": cfg.database} if cfg.library == "asyncmy" else {"db": cfg.database})
        if self._cached:
            db["stmt_cache_size"] = STMT_CACHE
        async with asyncio.timeout(CONNECT_TIMEOUT + 2):
            return await module.connect(
                user=info.user, password=info.password, autocommit=True,
                connect_timeout=CONNECT_TIMEOUT, **db, **target,
            )

    @property
    def _cached(self) -> bool:
        """LinkBench's statements go through asyncmy's statement cache: a cursor's execute
        of a cached statement writes and parses in one step, where PreparedStatement's
        execute builds a result object over several awaits (less client CPU a request:
        row 7b of bench/). asyncmy runs a statement the server will not prepare as text,
        silently; _check_prepared makes that an error."""
        return self.prepared and self.requests is not None

    def _cursor_of(self, conn: Any) -> Any:
        return conn.cursor() if self._cached else None

    def _describe(self, exc: BaseException) -> str:
        message = str(describe_error(exc, self.cfg.info))
        if self.where not in message:
            message = f"{message} (server at {self.where})"
        return f"built-in load: {message}"

    async def _connect_all(self) -> None:
        tasks = [asyncio.ensure_future(self.connect()) for _ in range(self.cfg.clients)]
        try:
            for conn in await asyncio.gather(*tasks):
                self.clients.append(_Client(conn, self._cursor_of(conn)))
        except Exception as exc:
            for task in tasks:
                task.cancel()  # the process exits right after: the others need no closing
            raise _Fatal(self._describe(exc)) from None
        # Fail now, not in the first second, if a table is missing.
        client = self.clients[0]
        try:
            if self.requests is not None:
                for name in ("nodetable", "linktable", "counttable"):
                    await client.conn.query(f"SELECT 1 FROM {name} LIMIT 1")
                return
            for table in range(1, self.cfg.tables + 1):
                await self.run(client, "point_selects", table, (1,))
        except Exception as exc:
            code = exc.args[0] if exc.args else None
            hint = (("; load the LinkBench graph first (P, or run's preparation)"
                     if self.requests is not None else "; prepare the sysbench tables first")
                    if code in (1146, 1049) else "")
            raise _Fatal(self._describe(exc) + hint) from None

    # statements ------------------------------------------------------------------
    async def _query_prepared(
        self, c: _Client, key: str, table: int, args: tuple[Any, ...]
    ) -> None:
        stmt = c.stmts.get((key, table))
        if stmt is None:
            stmt = c.stmts[key, table] = await c.conn.prepare(_SQL[key].format(t=table))
        await stmt.execute(args)

    async def _query_text(self, c: _Client, key: str, table: int, args: tuple[Any, ...]) -> None:
        parts = self.text[key]
        sql = parts[0] + "".join(_literal(a) + p for a, p in zip(args, parts[1:], strict=True))
        await c.conn.query(sql.format(t=table))

    def _table(self) -> int:
        return self.rng.randint(1, self.cfg.tables)

    def _id(self) -> int:
        return self.rng.randint(1, self.cfg.table_size)

    def _digits(self, groups: int) -> str:
        return "-".join(f"{self.rng.randrange(10**11):011d}" for _ in range(groups))

    async def _point_select(self, c: _Client) -> None:
        await self.run(c, "point_selects", self._table(), (self._id(),))
        return None

    async def _linkbench(self, c: _Client) -> str:
        """One LinkBench request; returns its operation."""
        requests = self.requests
        op: str = requests.op()
        statements = requests.statements(op, self.now)
        # Counted once done, in the second it ends in: self.cur after the awaits (the
        # ticker may have handed the one before it on meanwhile), as _client counts it.
        if len(statements) == 1:  # a read, or a node write: one statement
            key, args = statements[0]
            query = c.stmts.get((key, len(args)))  # prepared on this connection already
            if query is not None:  # _lb_statement's, one coroutine fewer on each resume
                await c.cursor.execute(query, args)
            else:
                await self._lb_statement(c, key, args)
            if op in self.lb_reads:
                self.cur.reads += 1
            else:
                self.cur.writes += 1
            return op
        for key, args in statements:  # a link write and its count, in a transaction
            if key == "begin" or key == "commit":
                await c.conn.query(key.upper())
            else:
                await self._lb_statement(c, key, args)
        cur = self.cur
        cur.writes += len(statements) - 2
        cur.other += 2
        return op

    async def _lb_statement(self, c: _Client, key: str, args: tuple[Any, ...]) -> None:
        if c.cursor is None:
            await c.conn.query(self.lb_sql(key, args))
            return
        # server-side prepared by asyncmy's cache, once per connection and shape
        shape = (key, len(args))
        query = c.stmts.get(shape)
        if query is not None:
            await c.cursor.execute(query, args)
            return
        query = self.lb_queries.get(shape) or self._lb_query(key, len(args))
        await c.cursor.execute(query, args)
        self._check_prepared(c, shape, query)

    def _lb_query(self, key: str, values: int) -> str:
        """The statement of ``key`` with ``values`` placeholders as asyncmy's cache takes
        it (``%s``; a ``%`` of its own would send it to the text protocol)."""
        template = self.lb_template(key, values)
        assert "%" not in template, template
        query = self.lb_queries[key, values] = template.replace("?", "%s")
        return query

    def _check_prepared(self, c: _Client, shape: tuple[str, int], query: str) -> None:
        """After a shape's first run on a connection: asyncmy prepared it (the connection
        then runs it by ``c.stmts``), or the server refused (max_prepared_stmt_count
        reached, most likely) and asyncmy ran it as text, which it keeps doing without a
        word; a run that says "prepared" stops instead."""
        if query not in getattr(c.conn, "_stmt_cache", {query: None}):
            raise _Fatal(
                f"built-in load: the server did not prepare LinkBench's {shape[0]} statement "
                f"(server at {self.where}); max_prepared_stmt_count is the likely limit "
                f"({self.cfg.clients} connections here, up to {self.lb_shapes} statements "
                "each): raise it, or run with prepared = false")
        c.stmts[shape] = query

    async def _read_write(self, c: _Client) -> None:
        run, table, ident = self.run, self._table, self._id
        await run(c, "begin", 0, ())
        t = table()
        for _ in range(10):
            await run(c, "point_selects", t, (ident(),))
        for key in _RANGES:
            i = ident()
            await run(c, key, table(), (i, i + RANGE_SIZE - 1))
        await run(c, "index_updates", table(), (ident(),))
        await run(c, "non_index_updates", table(), (self._digits(10), ident()))
        t, i, k = table(), ident(), ident()
        await run(c, "deletes", t, (i,))
        await run(c, "inserts", t, (i, k, self._digits(10), self._digits(5)))
        await run(c, "commit", 0, ())
        return None

    # the run -----------------------------------------------------------------------
    async def _recover(self, c: _Client, exc: Exception) -> None:
        code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
        if code in IGNORED_ERRORS:
            self.cur.errors += 1
            with contextlib.suppress(Exception):
                await c.conn.query("ROLLBACK")
            return
        if code is not None and 0 < code < 2000:
            raise _Fatal(self._describe(exc)) from None
        # A client-side error (lost connection, reset): reconnect, as sysbench does for
        # 2006/2013 when told to ignore them, and keep trying while the server restarts
        # (a timeline keeps this load running through a restart); a server that does not
        # answer for RECONNECT_FOR seconds ends the run.
        with contextlib.suppress(Exception):
            c.conn.close()
        c.stmts.clear()
        deadline = time.monotonic() + RECONNECT_FOR
        while True:
            try:
                c.conn = await self.connect()
                c.cursor = self._cursor_of(c.conn)
                break
            except Exception as again:
                code = again.args[0] if again.args and isinstance(again.args[0], int) else 0
                if 0 < code < 2000 or time.monotonic() >= deadline:  # refused, or gone for good
                    raise _Fatal(f"{self._describe(again)} (connection lost; reconnecting "
                                 "failed)") from None
                self.cur.errors += 1
                await asyncio.sleep(RECONNECT_PAUSE)
        self.cur.reconnects += 1

    async def _client(self, c: _Client, t0: float) -> None:
        event = self.event
        reads, writes, other = _RWO[self.cfg.workload]
        rate = self.cfg.rate_per_client
        clock = time.monotonic
        scheduled = t0
        while True:
            if rate:
                scheduled += self.rng.expovariate(rate)
                delay = scheduled - clock()
                if delay > 0:
                    await asyncio.sleep(delay)
                # latency counts the wait when the server falls behind; never from before
                # the request began (uvloop runs a timer under 0.5 ms early)
                start = min(scheduled, clock())
            else:
                start = clock()
            try:
                op = await event(c)
            except _Fatal:
                raise
            except Exception as exc:
                await self._recover(c, exc)
                continue
            end = clock()
            took = end - start
            ms = took * 1000.0
            cur = self.cur
            cur.record(op, ms)
            if op is not None and self.raw is not None:
                self.raw.append((op, ms))
            cur.tx += 1
            cur.reads += reads
            cur.writes += writes
            cur.other += other
            c.events += 1
            c.busy_s += took
            self.lat_sum += ms
            if ms < self.lat_min:
                self.lat_min = ms
            if ms > self.lat_max:
                self.lat_max = ms

    def _rotate(self) -> _Counts:
        done, self.cur = self.cur, _Counts()
        self.total.add(done)
        return done

    async def _ticker(self, t0: float) -> None:
        loop = asyncio.get_running_loop()
        last, k = t0, 0
        while k < self.cfg.duration:
            k += 1
            await asyncio.sleep(max(0.0, t0 + k - loop.time()))
            self.now = int(time.time())
            now = loop.time()
            done = self._rotate()
            self.send("tick", k, now - last, *done.numbers(), done.sparse(), done.ops)
            last = now

    async def main(self) -> int:
        loop = asyncio.get_running_loop()
        loop.add_reader(self.pipe.fileno(), self._on_control)
        watchdog = asyncio.create_task(self._watch_parent())
        try:
            try:
                await self._connect_all()
            except _Fatal as exc:
                self.send("fatal", str(exc))
                return 1
            self.send("ready", len(self.clients))
            stop_wait = asyncio.create_task(self.stopping.wait())
            go_wait = asyncio.create_task(self.go.wait())
            await asyncio.wait({go_wait, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
            go_wait.cancel()
            if self.stopping.is_set():
                return 0
            t0 = self.t0
            tasks = {asyncio.create_task(self._client(c, t0)) for c in self.clients}
            ticker = asyncio.create_task(self._ticker(t0))
            await asyncio.wait({*tasks, ticker, stop_wait}, return_when=asyncio.FIRST_COMPLETED)
            for task in (*tasks, ticker, stop_wait):
                task.cancel()
            results = await asyncio.gather(*tasks, ticker, stop_wait, return_exceptions=True)
            end = loop.time()
            failed = [r for r in results if isinstance(r, BaseException)
                      and not isinstance(r, asyncio.CancelledError)]
            if failed:
                first = failed[0]
                message = str(first) if isinstance(first, _Fatal) else (
                    f"built-in load worker failed: {type(first).__name__}: {first}")
                self.send("fatal", message)
            self._rotate()
            if self.raw is not None:  # tests only: written after the run, off the loop
                text = "".join(f"{op} {ms!r}\n" for op, ms in self.raw)
                await asyncio.to_thread(
                    Path(f"{self.cfg.latency_log}.{self.cfg.index}").write_text, text)
            self.send(
                "done", end - t0, *self.total.numbers(), self.total.sparse(),
                self.lat_min if self.total.tx else 0.0, self.lat_max, self.lat_sum,
                [(c.events, c.busy_s) for c in self.clients], self.total.ops,
            )
            return 1 if failed else 0
        finally:
            watchdog.cancel()
            loop.remove_reader(self.pipe.fileno())
            for c in self.clients:
                with contextlib.suppress(Exception):
                    c.conn.close()


def _loop_runner() -> Callable[[Coroutine[Any, Any, int]], int]:
    """uvloop's run where it is installed (Linux, macOS), else asyncio's. A worker spends
    most of its CPU in the event loop's socket round trips: with uvloop a LinkBench GetNode
    costs about 15.5 us of client CPU instead of 28.7, and the 2-core lab serves 53-56k of
    them a second instead of 28k (bench/linkbench_driver.py; bench/RESULTS.md, row 7b)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run
    return uvloop.run


def _worker_entry(fd: int) -> None:
    """Entry point of a worker process: its first message on the pipe is its config."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    pipe: Connection = Connection(fd)
    try:
        cfg = pipe.recv()
    except (EOFError, OSError, pickle.UnpicklingError):
        os._exit(0)
    if not isinstance(cfg, _WorkerConfig) or os.getppid() != cfg.parent_pid:
        os._exit(0)
    worker = _Worker(pipe, cfg)
    try:
        code = _loop_runner()(worker.main())
    except BaseException as exc:
        worker.send("fatal", f"built-in load worker crashed: {type(exc).__name__}: {exc}")
        code = 1
    pipe.close()
    sys.exit(code)


# -- parent side -------------------------------------------------------------------------


def _worker_argv(fd: int) -> list[str]:
    # A fresh interpreter (fork+exec, like multiprocessing's "spawn", never a bare fork of
    # a process with threads), but without spawn's re-run of the caller's __main__ module,
    # which breaks scripts without a main guard and imports the whole UI into each worker.
    # The command line holds only the pipe's fd number: the config (and the password)
    # arrive pickled as the first message on that pipe.
    code = f"from knobtop.load.builtin import _worker_entry; _worker_entry({fd})"
    # -P: the working directory (where anyone may have planted a module) is not on the path
    return [sys.executable, "-P", "-c", code]


def _worker_env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the directory holding knobtop/
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


@dataclass
class _Handle:
    index: int
    clients: int
    proc: asyncio.subprocess.Process
    pipe: Connection
    state: str = "starting"  # starting, ready, running, finished
    pipe_open: bool = True
    reaped: bool = False
    stderr: str = ""
    done: tuple[Any, ...] | None = None
    waiter: asyncio.Task[None] | None = None


@dataclass
class _Interval:
    seen: set[int] = field(default_factory=set)
    rates: list[float] = field(default_factory=lambda: [0.0] * 6)
    hist: dict[int, int] = field(default_factory=dict)
    ops: dict[str, list[Any]] = field(default_factory=dict)  # op -> [ops/s, OpLatencies]

    def add(
        self, index: int, elapsed: float, numbers: tuple[int, ...], hist: dict[int, int],
        ops: dict[str, OpLatencies] | None = None,
    ) -> None:
        self.seen.add(index)
        span = max(elapsed, 1e-3)
        for i, n in enumerate(numbers):
            self.rates[i] += n / span
        for b, n in hist.items():
            self.hist[b] = self.hist.get(b, 0) + n
        for op, lat in (ops or {}).items():
            have = self.ops.get(op)
            if have is None:
                have = self.ops[op] = [0.0, OpLatencies()]
            have[0] += lat.count / span
            have[1].merge(lat)


class _Run:
    """One run: its worker processes, the per-second merge, and how it ends."""

    def __init__(
        self,
        driver: BuiltinDriver,
        spec: LoadSpec,
        on_report: ReportCallback,
        on_exit: ExitCallback,
    ) -> None:
        self.driver = driver
        self.spec = spec
        self.on_report = on_report
        self.on_exit = on_exit
        self.loop = asyncio.get_running_loop()
        self.handles: list[_Handle] = []
        self.changed = asyncio.Event()
        self.started = False
        self.stopping = False
        self.error = ""
        self.t0 = 0.0
        self.next_k = 1
        self.pending: dict[int, _Interval] = {}
        self.flush_timer: asyncio.TimerHandle | None = None
        self.finish_task: asyncio.Task[LoadExit] | None = None
        self.shutdown_task: asyncio.Task[None] | None = None

    # start -----------------------------------------------------------------------
    async def launch(self, processes: int) -> None:
        spec, driver = self.spec, self.driver
        count = max(1, min(processes, spec.threads))
        shares = [spec.threads // count + (1 if i < spec.threads % count else 0)
                  for i in range(count)]
        for index, clients in enumerate(shares):
            cfg = _WorkerConfig(
                index=index,
                clients=clients,
                info=driver.info,
                database=driver.database,
                library=driver.library,
                workload=spec.workload,
                tables=spec.tables,
                table_size=spec.table_size,
                duration=spec.duration or TIME_CAP,
                rate_per_client=spec.rate / spec.threads if spec.rate else 0.0,
                prepared=spec.prepared,
                parent_pid=os.getpid(),
                latency_log=os.environ.get("KNOBTOP_LATENCY_LOG", ""),
                only=_only(spec),
            )
            ours, theirs = multiprocessing.Pipe(duplex=True)
            from knobtop.hosts.local import as_launched  # not in the workers' imports

            try:
                proc = await asyncio.create_subprocess_exec(
                    *_worker_argv(theirs.fileno()),
                    pass_fds=(theirs.fileno(),),
                    stdin=asyncio.subprocess.DEVNULL,
                    stdout=asyncio.subprocess.DEVNULL,
                    stderr=asyncio.subprocess.PIPE,  # kept for the message if it dies
                    env=_worker_env(),
                    preexec_fn=as_launched,  # not the sampler's raised priority
                    cwd=private_cwd(),
                )
            except BaseException:
                ours.close()
                raise
            finally:
                theirs.close()
            handle = _Handle(index, clients, proc, ours)
            self.handles.append(handle)
            self._send(handle, cfg)  # the first message; it holds the password
            self.loop.add_reader(ours.fileno(), self._on_pipe, handle)
            handle.waiter = self.loop.create_task(self._wait_exit(handle))
        try:
            async with asyncio.timeout(START_TIMEOUT):
                while not self.error and not all(h.state == "ready" for h in self.handles):
                    if any(h.state == "finished" for h in self.handles):
                        break
                    self.changed.clear()
                    await self.changed.wait()
        except TimeoutError:
            self.error = (
                f"built-in load: the workers did not connect to {driver.info.where} "
                f"within {START_TIMEOUT:.0f} s"
            )
        if self.error or not all(h.state == "ready" for h in self.handles):
            raise LoadError(self.error or "built-in load: a worker process exited while starting")
        self.t0 = self.loop.time()  # asyncio's clock is CLOCK_MONOTONIC, shared by processes
        for h in self.handles:
            h.state = "running"
            self._send(h, ("go", self.t0))
        self.started = True
        self._arm_flush()

    # messages ----------------------------------------------------------------------
    def _send(self, h: _Handle, msg: object) -> None:
        if h.pipe_open:
            with contextlib.suppress(OSError):
                h.pipe.send(msg)

    def _on_pipe(self, h: _Handle) -> None:
        try:
            while h.pipe.poll():
                self._handle(h, h.pipe.recv())
        except (EOFError, OSError):
            self.loop.remove_reader(h.pipe.fileno())
            h.pipe.close()
            h.pipe_open = False
            self._check_gone(h)
        self.changed.set()

    async def _wait_exit(self, h: _Handle) -> None:
        assert h.proc.stderr is not None
        tail = b""
        while chunk := await h.proc.stderr.read(1 << 16):  # ends at exit
            tail = (tail + chunk)[-4096:]
        await h.proc.wait()
        lines = tail.decode(errors="replace").strip().splitlines()
        h.stderr = lines[-1][-300:] if lines else ""
        h.reaped = True
        self._check_gone(h)
        self.changed.set()

    def _handle(self, h: _Handle, msg: tuple[Any, ...]) -> None:
        kind = msg[0]
        if kind == "tick":
            self._on_tick(h, msg[1], msg[2], tuple(msg[3:9]), msg[9],
                          msg[10] if len(msg) > 10 else None)
        elif kind == "ready":
            h.state = "ready"
        elif kind == "fatal":
            self._fail(str(msg[1]))
        elif kind == "done":
            h.done = msg[1:]
            h.state = "finished"
            self._emit()

    def _fail(self, message: str) -> None:
        if not self.error:
            self.error = message
        if self.started and self.shutdown_task is None:
            self.shutdown_task = self.loop.create_task(self.shutdown())

    def _check_gone(self, h: _Handle) -> None:
        if h.pipe_open or not h.reaped:
            return
        if h.done is None and not self.stopping and not self.error:
            self._fail(
                f"built-in load worker {h.proc.pid} died (exit code {h.proc.returncode})"
                + (f": {h.stderr}" if h.stderr else "")
            )
        h.state = "finished"
        if self.started and self.finish_task is None and all(
            not x.pipe_open and x.reaped for x in self.handles
        ):
            self.finish_task = self.loop.create_task(self._finish())
        else:
            self._emit()

    # the per-second merge -------------------------------------------------------------
    def _on_tick(
        self, h: _Handle, k: int, elapsed: float, numbers: tuple[int, ...], hist: dict[int, int],
        ops: dict[str, OpLatencies] | None = None,
    ) -> None:
        # A tick that comes after its second was given out counts in the next one.
        self.pending.setdefault(max(k, self.next_k), _Interval()).add(
            h.index if k >= self.next_k else -1, elapsed, numbers, hist, ops
        )
        self._emit()

    def _arm_flush(self) -> None:
        at = max(self.t0 + self.next_k + FLUSH_GRACE, self.loop.time() + 0.25)
        self.flush_timer = self.loop.call_at(at, self._flush_due)

    def _flush_due(self) -> None:
        self._emit(force_to=int(self.loop.time() - self.t0 - FLUSH_GRACE))
        if self.started and not self.stopping and self.finish_task is None:
            self._arm_flush()

    def _emit(self, force_to: int = 0) -> None:
        if not self.started or self.stopping:
            return
        while True:
            k = self.next_k
            running = {h.index for h in self.handles if h.state == "running"}
            interval = self.pending.get(k)
            complete = interval is not None and running <= interval.seen
            if not complete and not (k <= force_to and running):
                return
            interval = self.pending.pop(k, None) or _Interval()
            self.next_k += 1
            self.on_report(self.driver.src, self._report(k, interval))

    def _report(self, k: int, interval: _Interval) -> IntervalReport:
        tx, reads, writes, other, errors, reconnects = (round(r, 2) for r in interval.rates)
        return IntervalReport(
            second=k,
            threads=self.spec.threads,
            tps=tx,
            qps=round(reads + writes + other, 2),
            reads=reads,
            writes=writes,
            other=other,
            latency_percentile=self.spec.percentile,
            latency_ms=percentile_ms(interval.hist, self.spec.percentile),
            errors_per_s=errors,
            reconnects_per_s=reconnects,
            ops={op: lat.numbers(rate) for op, (rate, lat) in sorted(interval.ops.items())},
        )

    # the end ---------------------------------------------------------------------------
    def _summary(self) -> RunSummary | None:
        dones = [h.done for h in self.handles]
        if not dones or any(d is None for d in dones):
            return None
        elapsed = max(float(d[0]) for d in dones if d is not None)
        sums = [sum(int(d[i]) for d in dones if d is not None) for i in range(1, 7)]
        tx, reads, writes, other, errors, reconnects = sums
        hist: dict[int, int] = {}
        per_client: list[tuple[int, float]] = []
        mins: list[float] = []
        maxes: list[float] = []
        lat_sum = 0.0
        ops: dict[str, OpLatencies] = {}
        for d in dones:
            assert d is not None
            for b, n in d[7].items():
                hist[b] = hist.get(b, 0) + n
            for op, lat in (d[12] if len(d) > 12 else {}).items():
                ops.setdefault(op, OpLatencies()).merge(lat)
            if int(d[1]):
                mins.append(float(d[8]))
            maxes.append(float(d[9]))
            lat_sum += float(d[10])
            per_client.extend(d[11])
        events = [float(e) for e, _ in per_client] or [0.0]
        busy = [float(b) for _, b in per_client] or [0.0]
        span = max(elapsed, 1e-9)
        queries = reads + writes + other
        return RunSummary(
            reads=reads,
            writes=writes,
            other=other,
            total_queries=queries,
            transactions=tx,
            tps=round(tx / span, 2),
            queries=queries,
            qps=round(queries / span, 2),
            ignored_errors=errors,
            reconnects=reconnects,
            total_time_s=round(elapsed, 4),
            events=tx,
            latency_min_ms=round(min(mins), 2) if mins else 0.0,
            latency_avg_ms=round(lat_sum / tx, 2) if tx else 0.0,
            latency_max_ms=round(max(maxes), 2),
            latency_percentile=self.spec.percentile,
            latency_pct_ms=percentile_ms(hist, self.spec.percentile),
            latency_sum_ms=round(lat_sum, 2),
            events_avg=round(statistics.fmean(events), 4),
            events_stddev=round(statistics.pstdev(events), 2),
            exec_time_avg=round(statistics.fmean(busy), 4),
            exec_time_stddev=round(statistics.pstdev(busy), 2),
            ops={op: lat.numbers() for op, lat in sorted(ops.items())},
        )

    async def _finish(self) -> LoadExit:
        if self.flush_timer is not None:
            self.flush_timer.cancel()
        if not self.stopping:
            self._emit()  # seconds every worker reported before it ended
        failed = bool(self.error)
        result = LoadExit(1 if failed else 0, self._summary(), self.error, self.stopping)
        if self.driver._run is self:
            self.driver._run = None
        await self.on_exit(result)
        return result

    async def _wait_gone(self, timeout: float) -> bool:
        try:
            async with asyncio.timeout(timeout):
                while not all(not h.pipe_open and h.reaped for h in self.handles):
                    self.changed.clear()
                    await self.changed.wait()
        except TimeoutError:
            return False
        return True

    async def shutdown(self) -> None:
        """Ask every worker to stop; SIGTERM, then SIGKILL, those that do not."""
        for h in self.handles:
            self._send(h, ("stop",))
        if await self._wait_gone(STOP_GRACE):
            return
        for h in self.handles:
            if h.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    h.proc.terminate()
        if await self._wait_gone(STOP_GRACE):
            return
        for h in self.handles:
            if h.proc.returncode is None:
                with contextlib.suppress(ProcessLookupError):
                    h.proc.kill()
        await self._wait_gone(STOP_GRACE)

    async def abandon(self) -> None:
        """A start that failed: no report, no on_exit, no process left behind."""
        self.stopping = True
        await self.shutdown()
        for h in self.handles:
            if h.pipe_open:
                with contextlib.suppress(Exception):
                    self.loop.remove_reader(h.pipe.fileno())
                h.pipe.close()
                h.pipe_open = False


def _only(spec: LoadSpec) -> tuple[str, ...]:
    """A LinkBench load's ``ops=`` option, checked (LoadError naming the operations)."""
    if spec.workload != "linkbench":
        return ()
    from knobtop.load.linkbench import only_ops

    try:
        return only_ops(spec.options)
    except ValueError as exc:
        raise LoadError(str(exc)) from None


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
        self._run: _Run | None = None
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
            _only(spec)
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
        run = _Run(self, spec, on_report, on_exit)
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
