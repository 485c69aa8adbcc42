"""The built-in load's parent side of one run: it starts the worker processes, merges their
counts each second into one report, and stops them."""

from __future__ import annotations

import asyncio
import contextlib
import multiprocessing
import os
import sys
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Protocol

from knobtop.load.base import TIME_CAP, ExitCallback, LoadError, LoadExit, LoadSpec, ReportCallback
from knobtop.load.builtin_stats import Interval, percentile_ms, run_summary
from knobtop.load.builtin_worker import WorkerConfig
from knobtop.load.latencies import OpLatencies
from knobtop.load.sysbench_output import IntervalReport
from knobtop.safefile import private_cwd
from knobtop.server.link import ConnectionInfo

START_TIMEOUT = 45.0  # spawn the interpreters, connect every client, prepare
STOP_GRACE = 5.0  # after "stop", before SIGTERM; then as long again before SIGKILL
FLUSH_GRACE = 0.8  # how long past a second's end a slow worker's tick is awaited


class Owner(Protocol):
    """What a run needs of the driver that starts it (BuiltinDriver)."""

    info: ConnectionInfo
    database: str
    library: str
    src: str

    def release(self, run: Run) -> None:
        """The run has ended: the driver no longer holds it as running."""


def only_ops_of(spec: LoadSpec) -> tuple[str, ...]:
    """A LinkBench load's ``ops=`` option, checked (LoadError naming the operations)."""
    if spec.workload != "linkbench":
        return ()
    from knobtop.load.linkbench import only_ops

    try:
        return only_ops(spec.options)
    except ValueError as exc:
        raise LoadError(str(exc)) from None


def _worker_argv(fd: int) -> list[str]:
    # A fresh interpreter (fork+exec, like multiprocessing's "spawn", never a bare fork of
    # a process with threads), but without spawn's re-run of the caller's __main__ module,
    # which breaks scripts without a main guard and imports the whole UI into each worker.
    # The command line holds only the pipe's fd number: the config (and the password)
    # arrive pickled as the first message on that pipe.
    code = f"from knobtop.load.builtin_worker import worker_entry; worker_entry({fd})"
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


class Run:
    """One run: its worker processes, the per-second merge, and how it ends."""

    def __init__(
        self,
        driver: Owner,
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
        self.pending: dict[int, Interval] = {}
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
            cfg = WorkerConfig(
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
                only=only_ops_of(spec),
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
        self.pending.setdefault(max(k, self.next_k), Interval()).add(
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
            interval = self.pending.pop(k, None) or Interval()
            self.next_k += 1
            self.on_report(self.driver.src, self._report(k, interval))

    def _report(self, k: int, interval: Interval) -> IntervalReport:
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
    async def _finish(self) -> LoadExit:
        if self.flush_timer is not None:
            self.flush_timer.cancel()
        if not self.stopping:
            self._emit()  # seconds every worker reported before it ended
        failed = bool(self.error)
        summary = run_summary([h.done for h in self.handles], self.spec.percentile)
        result = LoadExit(1 if failed else 0, summary, self.error, self.stopping)
        self.driver.release(self)
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
