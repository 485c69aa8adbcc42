"""Shared pieces of the fault tests: a lab session on a sandbox, waits, global variables,
a disk that can be filled."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import resource
import subprocess
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path

from harness import cli
from harness.binaries import require_binary
from harness.procs import sysbench_processes
from harness.served import served_session
from knobtop.hosts.local import LocalHost
from knobtop.lab import Sandbox
from knobtop.load.base import LoadSpec
from knobtop.load.sysbench import Sysbench
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.session.core import Session, SessionConfig
from knobtop.session.remote import RemoteSession

SMALL = LoadSpec(workload="oltp_point_select", threads=2, tables=1, table_size=1000)


def sysbench_on(sandbox: Sandbox) -> Sysbench:
    """sysbench on this machine against the sandbox, over its unix socket."""
    info = sandbox.connection()
    return Sysbench(LocalHost(), mysql_socket=str(sandbox.socket), user=info.user,
                    password=info.password, database="sbtest")


def lab_session(sandbox: Sandbox, journal: Path, interval: float = 0.25) -> Session:
    """A live session on the sandbox with sysbench as its load (as knobtop lab builds one)."""
    config = SessionConfig(profile="fault", connection=sandbox.connection(),
                           journal_path=journal, interval=interval, load=SMALL)
    return Session(config, LocalHost(), sysbench_on(sandbox))


def served_lab_session(sandbox: Sandbox, journal: Path, interval: float = 0.25
                       ) -> contextlib.AbstractContextManager[RemoteSession]:
    """The same session in a process of its own, as the live screen holds one."""
    config = SessionConfig(profile="fault", connection=sandbox.connection(),
                           journal_path=journal, interval=interval, load=SMALL)
    return served_session(config, sysbench=sysbench_on(sandbox))


async def global_variables(info: ConnectionInfo) -> dict[str, str]:
    """Every SHOW GLOBAL VARIABLES row, read on a link of its own."""
    link = ServerLink(info)
    await link.connect()
    try:
        rows = await link.query("SHOW GLOBAL VARIABLES")
    finally:
        await link.close()
    return {str(name): str(value) for name, value in rows}


def wait_until(predicate: Callable[[], bool], timeout: float, what: str,
               proc: subprocess.Popen[str] | None = None) -> None:
    """Poll ``predicate`` (bounded); fail naming ``what`` (and a dead process's stderr)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if proc is not None and proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"knobtop exited ({proc.returncode}) before {what}: {err}")
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {timeout} s")
        time.sleep(0.05)


# ``python -m knobtop ARGS`` without the ssh agent: in the background, output captured; or
# to the end (bounded), ``preexec`` run in the child.
knobtop_process = partial(cli.knobtop_process, drop=("SSH_AUTH_SOCK",))
knobtop_run = partial(cli.knobtop, timeout=240, drop=("SSH_AUTH_SOCK",), stdin=subprocess.DEVNULL)


async def in_thread(fn: Callable[[], object]) -> None:
    """A blocking call (starting a server) without stalling the test's event loop."""
    await asyncio.to_thread(fn)


def wait_sysbench_gone(marker: str, grace: float = 10) -> dict[int, str]:
    """Bounded wait until no sysbench with ``marker`` runs; what is left after ``grace``."""
    deadline = time.monotonic() + grace
    while (left := sysbench_processes(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return left


def mount_tmpfs(where: Path, options: str) -> bool:
    """Mount a tmpfs at ``where``; False when this user may not mount (not root, or a
    container without CAP_SYS_ADMIN)."""
    mount = require_binary("mount", "mount")
    where.mkdir(parents=True, exist_ok=True)
    result = subprocess.run([mount, "-t", "tmpfs", "-o", options, "tmpfs", str(where)],
                            capture_output=True, text=True, timeout=30, check=False)
    return result.returncode == 0


def unmount(where: Path) -> None:
    umount = require_binary("umount", "mount")
    subprocess.run([umount, "-l", str(where)], capture_output=True, timeout=30, check=False)


class SmallDisk:
    """A directory whose disk the test can fill up at a moment of its choosing.

    On a 64 KiB tmpfs ``fill`` writes a filler file until ENOSPC.  Where mounting is not
    allowed, ``fill`` lowers RLIMIT_FSIZE of the writing process to the journal's size, so
    its next append fails (EFBIG) just as a full disk's would.
    """

    def __init__(self, path: Path, mounted: bool) -> None:
        self.path = path
        self.mounted = mounted
        self._limited = False
        self._saved = resource.getrlimit(resource.RLIMIT_FSIZE)

    def fill(self, pid: int = 0) -> None:
        """Leave no room for another journal page (``pid``: the writer, 0 = this process)."""
        if self.mounted:
            with (self.path / "filler").open("ab", buffering=0) as fh:
                block = b"\0" * 4096
                try:
                    while True:
                        fh.write(block)
                except OSError as exc:
                    assert exc.errno == errno.ENOSPC, exc
            return
        largest = max((p.stat().st_size for p in self.path.iterdir()), default=0)
        resource.prlimit(pid, resource.RLIMIT_FSIZE, (largest, self._saved[1]))
        self._limited = pid == 0

    def full_from_start(self) -> Callable[[], None] | None:
        """Full before a knobtop process starts: filled now, or (where mounting is not
        allowed) a ``preexec_fn`` that lets the child grow no file past 512 bytes (a
        journal header is larger; Python's own start-up needs a few bytes)."""
        if self.mounted:
            self.fill()
            return None
        hard = self._saved[1]
        return lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (512, hard))

    def restore(self) -> None:
        if self._limited:
            resource.setrlimit(resource.RLIMIT_FSIZE, self._saved)
            self._limited = False
