"""The built-in load's worker process: its clients' connections, the statements they run
(sysbench's oltp_common.lua, LinkBench's requests), and the counts it sends each second."""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import math
import os
import pickle
import random
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from knobtop.load.builtin_statements import RANGE_SIZE, RANGES, RWO, SYSBENCH_SQL, literal
from knobtop.load.builtin_stats import Counts
from knobtop.server.link import ConnectionInfo, describe_error

# sysbench's default --mysql-ignore-errors: roll back, count in err/s, run a new event.
IGNORED_ERRORS = frozenset({1213, 1020, 1205})
# How long a client keeps reconnecting to a server that went away (a restart), and how
# often it tries.
RECONNECT_FOR = 60.0
RECONNECT_PAUSE = 0.25

CONNECT_TIMEOUT = 10.0
# asyncmy's statements cached per connection (LRU): LinkBench's 12 statements and getlink's
# 128 shapes (1..128 ids), with room; 8 connections hold ~1,100 of the server's 16,382
STMT_CACHE = 256


@dataclass(frozen=True, slots=True)
class WorkerConfig:
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
    def __init__(self, pipe: Connection, cfg: WorkerConfig) -> None:
        self.pipe = pipe
        self.cfg = cfg
        self.where = cfg.info.where
        self.cur = Counts()
        self.total = Counts()
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
        self.text = {key: sql.split("?") for key, sql in SYSBENCH_SQL.items()}
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
            stmt = c.stmts[key, table] = await c.conn.prepare(SYSBENCH_SQL[key].format(t=table))
        await stmt.execute(args)

    async def _query_text(self, c: _Client, key: str, table: int, args: tuple[Any, ...]) -> None:
        parts = self.text[key]
        sql = parts[0] + "".join(literal(a) + p for a, p in zip(args, parts[1:], strict=True))
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
        for key in RANGES:
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
        reads, writes, other = RWO[self.cfg.workload]
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

    def _rotate(self) -> Counts:
        done, self.cur = self.cur, Counts()
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


def worker_entry(fd: int) -> None:
    """Entry point of a worker process: its first message on the pipe is its config."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when to stop
    pipe: Connection = Connection(fd)
    try:
        cfg = pipe.recv()
    except (EOFError, OSError, pickle.UnpicklingError):
        os._exit(0)
    if not isinstance(cfg, WorkerConfig) or os.getppid() != cfg.parent_pid:
        os._exit(0)
    worker = _Worker(pipe, cfg)
    try:
        code = _loop_runner()(worker.main())
    except BaseException as exc:
        worker.send("fatal", f"built-in load worker crashed: {type(exc).__name__}: {exc}")
        code = 1
    pipe.close()
    sys.exit(code)
