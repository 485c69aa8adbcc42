"""LocalHost: commands as child processes of knobtop, OS metrics from psutil."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import os
import resource
import shutil
import signal
import tempfile
from collections import deque
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path, PurePath
from typing import Any

import psutil

from knobtop.hosts.base import HOST_CPU_FIELDS, CommandResult, HostError
from knobtop.hosts.procstat import whole_disks
from knobtop.safefile import private_cwd

_PR_SET_PDEATHSIG = 1


def _find_prctl() -> Any:
    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(None, use_errno=True).prctl
    return None


# Looked up once here: the child between fork and exec must not load libraries
# (other threads may hold locks it would need).
_PRCTL = _find_prctl()


# The scheduling priority this process had before raise_priority(), if it was raised.
_BASE_NICE: int | None = None


def raise_priority(by: int) -> bool:
    """Raise this process's scheduling priority by ``by`` nice steps, where allowed (root
    or CAP_SYS_NICE); False when not.  On Linux it is the calling thread's, inherited by
    threads started after: call it before any.  Programs started here (load generators, a
    server restart) go back to the priority this process had (:func:`as_launched`)."""
    global _BASE_NICE
    base = os.getpriority(os.PRIO_PROCESS, 0)
    try:
        os.setpriority(os.PRIO_PROCESS, 0, base - by)
    except OSError:
        return False
    _BASE_NICE = base
    return True


def as_launched() -> None:
    """Runs in a child before exec: the priority knobtop had before it raised its own."""
    if _BASE_NICE is not None:
        os.setpriority(os.PRIO_PROCESS, 0, _BASE_NICE)


REALTIME_PRIORITY = 1  # the lowest real-time priority: above every normal task, below IRQs
# The session's process goes ahead of the live screen's (samples before paint), and both
# ahead of the load and the server: bench rows 6d/6e (samples) and 2d/2e (the screen's lag).
SESSION_REALTIME = 2
SCREEN_REALTIME = REALTIME_PRIORITY
REALTIME_BURST = 2_000_000  # microseconds a real-time thread may run without blocking


def realtime_threads(on_demoted: Callable[[str], None] | None = None, *,
                     priority: int = REALTIME_PRIORITY, who: str = "the session's process",
                     ) -> bool:
    """Put every thread of this process in the real-time round-robin class (SCHED_RR at
    ``priority``, the lowest by default) where allowed (root, CAP_SYS_NICE, or an
    RLIMIT_RTPRIO that high); False when not, and nothing changed.

    Nice steps are not enough for a sampler on a saturated machine: with autogroup
    scheduling (the default on Debian's kernels) nice orders threads only inside their
    terminal's session, and a normal task woken by its timer waited for seconds behind the
    load's threads, while a real-time one ran on time (bench/live_schedule.py, rows 6d/6e).
    Programs started from here (load generators, a server restart) and threads started
    after do not inherit the class (SCHED_RESET_ON_FORK; a raised nice is reset too).  A
    thread that runs REALTIME_BURST of CPU without blocking gets SIGXCPU: then the whole
    process drops back to the normal class and ``on_demoted`` is told why."""
    if not hasattr(os, "sched_setscheduler"):
        return False
    policy = os.SCHED_RR | getattr(os, "SCHED_RESET_ON_FORK", 0x40000000)
    try:
        tids = [int(t) for t in os.listdir("/proc/self/task")]
        for tid in tids:
            os.sched_setscheduler(tid, policy, os.sched_param(priority))
    except (OSError, ValueError):
        _normal_threads()
        return False

    def demote(_signum: int, _frame: object) -> None:
        _normal_threads()
        signal.signal(signal.SIGXCPU, signal.SIG_IGN)
        if on_demoted is not None:
            on_demoted(f"a thread ran {REALTIME_BURST / 1e6:g} s of CPU without pausing; "
                       f"{who} went back to normal priority")

    try:  # no real time without the catch (signal handlers: the main thread only)
        _soft, hard = resource.getrlimit(resource.RLIMIT_RTTIME)
        signal.signal(signal.SIGXCPU, demote)
        resource.setrlimit(resource.RLIMIT_RTTIME, (REALTIME_BURST, hard))
    except (OSError, ValueError):
        _normal_threads()
        return False
    return True


def _normal_threads() -> None:
    """Every thread of this process back in the normal class."""
    with contextlib.suppress(OSError, ValueError):
        for tid in os.listdir("/proc/self/task"):
            with contextlib.suppress(OSError):
                os.sched_setscheduler(int(tid), os.SCHED_OTHER, os.sched_param(0))



def _die_with_parent() -> None:
    """Runs in the child before exec: if knobtop dies (even by kill -9), the kernel
    sends the child SIGTERM, so no load generator is left behind."""
    as_launched()
    if _PRCTL is not None:
        _PRCTL(_PR_SET_PDEATHSIG, signal.SIGTERM)


class LocalProcess:
    """A child process whose stdout is read as lines; stderr is kept (last lines)."""

    def __init__(self, proc: asyncio.subprocess.Process, argv: Sequence[str]) -> None:
        self._proc = proc
        self.argv = tuple(argv)
        self._stderr: deque[str] = deque(maxlen=40)
        self._stderr_task = asyncio.ensure_future(self._drain_stderr())

    @property
    def pid(self) -> int | None:
        return self._proc.pid

    @property
    def stderr_tail(self) -> str:
        return "".join(self._stderr)

    async def _drain_stderr(self) -> None:
        assert self._proc.stderr is not None
        async for raw in self._proc.stderr:
            self._stderr.append(raw.decode(errors="replace"))

    async def lines(self) -> AsyncIterator[str]:
        assert self._proc.stdout is not None
        async for raw in self._proc.stdout:
            yield raw.decode(errors="replace").rstrip("\r\n")

    async def wait(self) -> int:
        rc = await self._proc.wait()
        with contextlib.suppress(asyncio.CancelledError):
            await self._stderr_task
        return rc

    async def stop(self, grace: float = 3.0) -> int | None:
        """SIGTERM the process group we created, then SIGKILL after ``grace`` seconds."""
        if self._proc.returncode is not None:
            return self._proc.returncode
        pgid = self._proc.pid
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pgid, signal.SIGTERM)
        try:
            return await asyncio.wait_for(self.wait(), grace)
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(pgid, signal.SIGKILL)
            return await self.wait()


class LocalHost:
    """This machine."""

    local = True
    on_state: Callable[[str, str], None] | None = None  # this machine is never out of reach

    def __init__(self, name: str = "local") -> None:
        self.name = name

    async def run(self, argv: Sequence[str], *, limit: float = 60.0) -> CommandResult:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                preexec_fn=as_launched if _BASE_NICE is not None else None,
                cwd=private_cwd(),  # nothing planted where knobtop was started is found
            )
        except FileNotFoundError:
            raise HostError(f"{self.name}: '{argv[0]}' is not installed or not on PATH") from None
        try:
            out, err = await asyncio.wait_for(proc.communicate(), limit)
        except BaseException as exc:
            # Timed out or cancelled: the child does not outlive the call.
            with contextlib.suppress(ProcessLookupError):
                proc.kill()
            await asyncio.shield(proc.wait())
            if not isinstance(exc, TimeoutError):
                raise
            raise HostError(
                f"{self.name}: '{' '.join(argv[:2])}' did not finish within {limit:.0f} s"
            ) from None
        assert proc.returncode is not None
        return CommandResult(
            tuple(argv), proc.returncode, out.decode(errors="replace"), err.decode(errors="replace")
        )

    async def stream(self, argv: Sequence[str]) -> LocalProcess:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                start_new_session=True,
                preexec_fn=_die_with_parent,
                cwd=private_cwd(),  # sysbench looks for its scripts here first
            )
        except FileNotFoundError:
            raise HostError(f"{self.name}: '{argv[0]}' is not installed or not on PATH") from None
        return LocalProcess(proc, argv)

    async def which(self, program: str) -> str | None:
        return shutil.which(program, path=os.environ.get("PATH", "") + ":/usr/sbin:/sbin")

    async def read_file(self, path: PurePath, *, sudo: bool = False) -> bytes:
        self._no_sudo(sudo)
        return await asyncio.to_thread(Path(path).read_bytes)

    async def write_file_atomic(
        self, path: PurePath, data: bytes, mode: int = 0o600, *, sudo: bool = False
    ) -> None:
        self._no_sudo(sudo)
        await asyncio.to_thread(write_atomic, Path(path), data, mode)

    def _no_sudo(self, sudo: bool) -> None:
        if sudo:  # profiles refuse it (tomlcheck names the key); this is the last guard
            raise HostError(f"{self.name}: sudo is for SSH hosts: run knobtop as a user who "
                            "can write the drop-in here, or reach this machine over SSH")

    def cpu_times(self) -> list[float]:
        times = psutil.cpu_times()
        return [round(float(getattr(times, f, 0.0)), 2) for f in HOST_CPU_FIELDS]

    def start_os_metrics(self, interval: float) -> None:
        """Nothing to start: ``os_sample`` reads psutil on demand."""

    def os_sample(self) -> list[float]:
        """Raw OS counters in ``procstat.OS_FIELDS`` order. Disks are summed by the same
        rule as remote hosts (``procstat.whole_disks``), so both count the same I/O."""
        mem = psutil.virtual_memory()
        # nowrap=False: the kernel's counters as they are (psutil would otherwise add what it
        # saw before a device went away; a counter going back is handled where rates are made)
        per_disk = psutil.disk_io_counters(perdisk=True, nowrap=False) or {}
        disks = [per_disk[name] for name in whole_disks(list(per_disk))]
        return [
            *self.cpu_times(),
            float(mem.total),
            float(mem.available),
            float(sum(d.read_bytes for d in disks)),
            float(sum(d.write_bytes for d in disks)),
            float(sum(d.read_count for d in disks)),
            float(sum(d.write_count for d in disks)),
            os.getloadavg()[0],
        ]

    async def close(self) -> None:
        return None


def write_atomic(path: Path, data: bytes, mode: int = 0o600) -> None:
    """Write via a temp file in the same directory and rename, so readers never
    see half a file; the previous version is kept as ``NAME.prev``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        if path.exists():
            # A hard link keeps the old version without a moment where ``path`` is missing.
            prev = path.with_name(path.name + ".prev")
            prev.unlink(missing_ok=True)
            os.link(path, prev)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
