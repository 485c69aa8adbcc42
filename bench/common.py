"""Shared pieces of the side-by-side benchmarks: the sandbox server, watchers, tmux, CPU/RSS.

Every process and tmux server started here is tracked by :class:`Cleanup` and ended by
its own pid (or, for tmux, by the private ``-L`` socket name this module made up), never
by a name pattern.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
import psutil
import pymysql

from knobtop.hosts.local import LocalHost
from knobtop.lab import Sandbox
from knobtop.load.base import LoadSpec
from knobtop.load.prepare import prepare_tables
from knobtop.load.sysbench import Sysbench

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
KNOBTOP = Path(sys.executable).parent / "knobtop"
DOLPHIE_VENV = BENCH / ".dolphie-venv"
DOLPHIE_VERSION = "6.18.0"
PANE = (160, 48)
# The server cost runs: oltp_point_select, 8 threads, 4 small tables (all in the buffer pool).
LOAD = LoadSpec(workload="oltp_point_select", threads=8, tables=4, table_size=10000)


def log(text: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


# ---------------------------------------------------------------------------------------------
# Process tree accounting
# ---------------------------------------------------------------------------------------------


def tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and its live and reaped children."""
    total = 0.0
    for i, proc in enumerate(tree(pid)):
        with contextlib.suppress(psutil.NoSuchProcess):
            t = proc.cpu_times()
            total += t.user + t.system
            if i == 0:
                total += t.children_user + t.children_system
    return total


def proc_cpu(pid: int) -> float:
    """CPU seconds (user + system) of ``pid`` alone, its children left out."""
    try:
        t = psutil.Process(pid).cpu_times()
    except psutil.NoSuchProcess:
        return 0.0
    return t.user + t.system


def in_real_time(tid: int) -> None:
    """Put ``tid`` (0: the calling thread) in the real-time class (SCHED_FIFO, lowest
    priority): on this machine a saturating load starved normal processes outside its own
    session for up to 30 s, and whatever acts on or watches the screen from outside (a
    person, the tmux server they type into, a poller) must not be the thing measured.
    Children (tmux clients) inherit it.  Needs root; without it they run as the machine
    lets them."""
    with contextlib.suppress(OSError, AttributeError):
        os.sched_setscheduler(tid, os.SCHED_FIFO, os.sched_param(1))


def tree_rss(pid: int) -> int:
    total = 0
    for proc in tree(pid):
        with contextlib.suppress(psutil.NoSuchProcess):
            total += proc.memory_info().rss
    return total


def gone(pid: int) -> bool:
    """Exited (a zombie counts: its parent, maybe a tmux server, reaps it when it will)."""
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def wait_gone(pid: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while not gone(pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def end_process(pid: int, timeout: float = 10.0) -> None:
    """TERM, then KILL after ``timeout``: this one pid (it is ours)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if gone(pid):
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)
        if wait_gone(pid, timeout if sig == signal.SIGTERM else 5.0):
            return
    log(f"process {pid} did not end after SIGKILL")


class Cleanup:
    """What this run started, ended in reverse order however the run ends."""

    def __init__(self) -> None:
        self._undo: list[tuple[str, Callable[[], None]]] = []

    def add(self, what: str, undo: Callable[[], None]) -> Callable[[], None]:
        entry = (what, undo)
        self._undo.append(entry)

        def done() -> None:
            if entry in self._undo:
                self._undo.remove(entry)
            undo()

        return done

    def run(self) -> None:
        while self._undo:
            what, undo = self._undo.pop()
            try:
                undo()
            except Exception as exc:  # keep cleaning up the rest
                log(f"cleanup of {what} failed: {exc}")


# ---------------------------------------------------------------------------------------------
# tmux: one private server (-L NAME) per pane, so its own CPU can be told apart too
# ---------------------------------------------------------------------------------------------

_tmux_serial = 0


@dataclass
class TmuxPane:
    command: str
    env: dict[str, str]
    size: tuple[int, int] = PANE
    socket: str = ""
    pid: int = 0

    def start(self, cleanup: Cleanup) -> None:
        global _tmux_serial
        _tmux_serial += 1
        self.socket = f"knobtop-bench-{os.getpid()}-{_tmux_serial}"
        w, h = self.size
        argv = ["tmux", "-L", self.socket, "-f", "/dev/null", "new-session", "-d", "-s", "bench",
                "-x", str(w), "-y", str(h)]
        for k, v in self.env.items():
            argv += ["-e", f"{k}={v}"]
        argv += [f"exec {self.command}", ";", "set-option", "-t", "bench", "remain-on-exit", "on"]
        subprocess.run(argv, check=True, timeout=30)
        self._done = cleanup.add(f"tmux -L {self.socket}", self._kill)
        self.pid = int(self._display("#{pane_pid}"))

    def _display(self, fmt: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, "display", "-p", "-t", "bench", fmt],
                              capture_output=True, text=True, timeout=30, check=True).stdout.strip()

    @property
    def server_pid(self) -> int:
        return int(self._display("#{pid}"))

    @property
    def dead(self) -> bool:
        try:
            return self._display("#{pane_dead}") == "1"
        except subprocess.CalledProcessError:
            return True

    def capture(self) -> str:
        proc = subprocess.run(["tmux", "-L", self.socket, "capture-pane", "-p", "-t", "bench"],
                              capture_output=True, text=True, timeout=30, check=False)
        return proc.stdout

    def send_keys(self, *keys: str) -> None:
        subprocess.run(["tmux", "-L", self.socket, "send-keys", "-t", "bench", *keys],
                       timeout=30, check=False)

    def stop(self, quit_key: str | None = "q", grace: float = 15.0) -> None:
        """Ask the program to quit with its key, then end the pane and the tmux server."""
        if quit_key and self.pid and not self.dead:
            self.send_keys(quit_key)
            wait_gone(self.pid, grace)
        self._done()

    def _kill(self) -> None:
        try:
            if self.pid:
                end_process(self.pid)
        finally:
            subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True,
                           timeout=30, check=False)
            base = Path(os.environ.get("TMUX_TMPDIR") or "/tmp") / f"tmux-{os.getuid()}"
            (base / self.socket).unlink(missing_ok=True)


# ---------------------------------------------------------------------------------------------
# The sandbox server
# ---------------------------------------------------------------------------------------------


@dataclass
class BenchServer:
    """A private mariadbd in a temporary directory, with a knobtop profile pointing at it."""

    tmp: Path
    sandbox: Sandbox = field(init=False)
    profile: Path = field(init=False)
    password: str = ""
    port: int = 0

    def __post_init__(self) -> None:
        self.sandbox = Sandbox(self.tmp / "lab")
        self.profile = self.tmp / "bench.toml"
        self.home = self.tmp / "home"  # HOME of the watchers: no one's real config is read
        self.home.mkdir(parents=True, exist_ok=True)

    def start(self, cleanup: Cleanup) -> None:
        info = self.sandbox.start()
        cleanup.add("sandbox server", self.sandbox.stop)
        self.password, self.port = info.password, info.port
        self.profile.write_text(
            "# knobtop connect profile for the benchmark's sandbox (this machine)\n"
            "[target.mysql]\n"
            f'socket = "{self.sandbox.socket}"\n'
            f"port = {info.port}\n"
            f'user = "{info.user}"\n'
            'password = { env = "KNOBTOP_BENCH_PASSWORD" }\n'
        )

    @property
    def socket(self) -> Path:
        return self.sandbox.socket

    @property
    def user(self) -> str:
        return self.sandbox.connection().user

    def env(self) -> dict[str, str]:
        return {"HOME": str(self.home), "KNOBTOP_BENCH_PASSWORD": self.password,
                "DOLPHIE_PASSWORD": self.password}

    def sysbench(self) -> Sysbench:
        return Sysbench(LocalHost(), mysql_socket=str(self.socket), user=self.user,
                        password=self.password, database="sbtest")

    def prepare(self) -> None:
        asyncio.run(prepare_tables(self.sandbox.connection(use_socket=True), self.sysbench(),
                                   LOAD))

    def sysbench_argv(self, seconds: int) -> list[str]:
        """A plain sysbench run of LOAD (for background load while something is measured)."""
        return ["sysbench", LOAD.workload, f"--threads={LOAD.threads}",
                f"--tables={LOAD.tables}", f"--table-size={LOAD.table_size}",
                f"--mysql-socket={self.socket}", f"--mysql-user={self.user}",
                f"--mysql-password={self.password}", "--mysql-db=sbtest",
                f"--time={seconds}", "--report-interval=0", "run"]

    @contextlib.contextmanager
    def background_load(self, seconds: int, cleanup: Cleanup) -> Iterator[subprocess.Popen[str]]:
        proc = subprocess.Popen(self.sysbench_argv(seconds), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
        done = cleanup.add("background sysbench", lambda: end_process(proc.pid))
        try:
            yield proc
        finally:
            done()

    def status(self, names: tuple[str, ...]) -> dict[str, int]:
        """Global status counters, read over one connection with one statement."""
        conn = pymysql.connect(unix_socket=str(self.socket), user=self.user,
                               password=self.password)
        try:
            with conn.cursor() as cur:
                marks = ",".join(["%s"] * len(names))
                cur.execute(f"SHOW GLOBAL STATUS WHERE Variable_name IN ({marks})", names)
                return {str(k): int(v) for k, v in cur.fetchall()}
        finally:
            conn.close()


def server_versions() -> dict[str, str]:
    out: dict[str, str] = {}
    for key, argv in (("mariadb", ["/usr/sbin/mariadbd", "--version"]),
                      ("sysbench", ["sysbench", "--version"]),
                      ("tmux", ["tmux", "-V"])):
        try:
            out[key] = subprocess.run(argv, capture_output=True, text=True, timeout=30,
                                      check=False).stdout.strip()
        except OSError:
            out[key] = "(not installed)"
    return out


# ---------------------------------------------------------------------------------------------
# Watchers: knobtop (headless or live screen) and dolphie (its TUI in a tmux pane)
# ---------------------------------------------------------------------------------------------


@functools.cache
def compile_knobtop() -> None:
    """Write the bytecode of knobtop's modules, as pip does for every package it installs
    (dolphie's, Textual's): the processes measured then start as an installed knobtop does.

    A checkout's modules get theirs on first import, unless PYTHONDONTWRITEBYTECODE is set
    (as on the machine these figures come from): then each start compiled every knobtop
    module from source again, about 0.1 s and 2.5 MB of the live screen's PSS at its first
    sample (``startup_screens.py``, 2026-11-27: 61.0 against 58.5 MB)."""
    import compileall

    import knobtop

    if not compileall.compile_dir(Path(knobtop.__file__).parent, quiet=1):
        raise RuntimeError("knobtop's modules did not compile (see above)")


def ensure_dolphie() -> Path:
    """dolphie==6.18.0 in its own venv (bench/.dolphie-venv), installed on first use."""
    exe = DOLPHIE_VENV / "bin" / "dolphie"
    if exe.exists():
        version = subprocess.run([str(exe), "--version"], capture_output=True, text=True,
                                 timeout=60, check=False).stdout.strip()
        if version.endswith(DOLPHIE_VERSION):
            return exe
    log(f"installing dolphie=={DOLPHIE_VERSION} into {DOLPHIE_VENV} (PyPI) ...")
    shutil.rmtree(DOLPHIE_VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(DOLPHIE_VENV)], check=True, timeout=300)
    pip = [str(DOLPHIE_VENV / "bin" / "python"), "-m", "pip", "install", "--quiet"]
    subprocess.run([*pip, "--upgrade", "pip"], check=True, timeout=600)
    subprocess.run([*pip, f"dolphie=={DOLPHIE_VERSION}"], check=True, timeout=900)
    return exe


def journal_samples(path: Path) -> list[tuple[float, float]]:
    """(t, wall) of every sample event in a journal (a torn last line is skipped)."""
    out: list[tuple[float, float]] = []
    with contextlib.suppress(FileNotFoundError):
        for line in path.read_bytes().splitlines():
            if line.startswith(b'{"ev":"sample"'):
                with contextlib.suppress(orjson.JSONDecodeError):
                    ev = orjson.loads(line)
                    out.append((float(ev["t"]), float(ev["wall"])))
    return out


class Watcher:
    name = ""
    pid = 0

    def start(self, cleanup: Cleanup) -> None:
        raise NotImplementedError

    def wait_ready(self, timeout: float = 60.0) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError


class KnobtopHeadless(Watcher):
    """``knobtop connect PROFILE --headless --interval I --load none --journal J``."""

    def __init__(self, server: BenchServer, interval: float, journal: Path) -> None:
        self.server, self.interval, self.journal = server, interval, journal
        self.name = f"knobtop {1 / interval:g} Hz"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self, cleanup: Cleanup) -> None:
        argv = [str(KNOBTOP), "connect", str(self.server.profile), "--headless",
                "--duration", "86400", "--interval", f"{self.interval:g}", "--load", "none",
                "--journal", str(self.journal)]
        self._log = open(self.journal.with_suffix(".log"), "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(argv, env={**os.environ, **self.server.env()},
                                     stdin=subprocess.DEVNULL, stdout=self._log,
                                     stderr=subprocess.STDOUT, start_new_session=True)
        self.pid = self.proc.pid
        self._done = cleanup.add(self.name, self._end)

    def wait_ready(self, timeout: float = 60.0) -> None:
        assert self.proc is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name} exited: "
                                   f"{self.journal.with_suffix('.log').read_text()[-800:]}")
            if len(journal_samples(self.journal)) >= 2:
                return
            time.sleep(0.1)
        raise RuntimeError(f"{self.name} took no samples within {timeout:.0f} s")

    def stop(self) -> None:
        self._done()

    def _end(self) -> None:
        """SIGTERM is the headless run's own 'interrupted' path: it closes the journal."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)
        self._log.close()


class TuiWatcher(Watcher):
    """A TUI in its own tmux pane (160x48)."""

    pane: TmuxPane

    def start(self, cleanup: Cleanup) -> None:
        self.pane.start(cleanup)
        self.pid = self.pane.pid

    def stop(self) -> None:
        self.pane.stop()

    def _wait_text(self, pattern: str, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            if self.pane.dead:
                raise RuntimeError(f"{self.name} exited:\n{self.pane.capture()[-1500:]}")
            screen = self.pane.capture()
            if re.search(pattern, screen):
                return
            time.sleep(0.25)
        raise RuntimeError(f"{self.name} did not show {pattern!r} within {timeout:.0f} s:\n"
                           f"{screen[-1500:]}")


class KnobtopLive(TuiWatcher):
    """``knobtop connect PROFILE --interval 1 --load none`` with its live screen."""

    def __init__(self, server: BenchServer, journal: Path, interval: float = 1.0) -> None:
        self.journal = journal
        self.name = "knobtop live screen"
        self.pane = TmuxPane(
            f"{KNOBTOP} connect {server.profile} --interval {interval:g} --load none "
            f"--journal {journal}", server.env())

    def wait_ready(self, timeout: float = 60.0) -> None:
        self._wait_text(r"\d+ samples", timeout)
        while len(journal_samples(self.journal)) < 2:
            time.sleep(0.1)


class Dolphie(TuiWatcher):
    """dolphie's TUI at its default 1 s refresh, on the sandbox's socket."""

    def __init__(self, server: BenchServer, refresh: float = 1.0) -> None:
        self.name = "dolphie"
        exe = ensure_dolphie()
        # --pypi-repo: its new-version check would otherwise leave the machine; this one
        # fails at once (and dolphie ignores the failure).
        self.pane = TmuxPane(
            f"{exe} -S {server.socket} -u {server.user} -r {refresh:g} "
            "--pypi-repo http://127.0.0.1:9/", server.env())

    def wait_ready(self, timeout: float = 60.0) -> None:
        self._wait_text(r"Latency \d", timeout)

    def latency(self) -> float | None:
        """The 'Latency N.NNs' dolphie shows: how long its last refresh took."""
        m = re.search(r"Latency ([\d.]+)s", self.pane.capture())
        return float(m.group(1)) if m else None


def dolphie_version() -> str:
    exe = DOLPHIE_VENV / "bin" / "dolphie"
    if not exe.exists():
        return "(not installed)"
    return subprocess.run([str(exe), "--version"], capture_output=True, text=True, timeout=60,
                          check=False).stdout.strip()


def temp_dir(cleanup: Cleanup) -> Path:
    tmp = Path(tempfile.mkdtemp(prefix="knobtop-bench-"))
    cleanup.add(f"temporary directory {tmp}", lambda: shutil.rmtree(tmp, ignore_errors=True))
    return tmp


def run_json(argv: list[str], timeout: float) -> dict[str, Any]:
    """Run a bench script in a fresh interpreter (clean RSS, clean imports); its last stdout
    line is a JSON object."""
    return run_json_many([argv], timeout)[0]


def run_json_many(argvs: list[list[str]], timeout: float) -> list[dict[str, Any]]:
    """Several bench scripts at once, each in its own interpreter; their JSON results."""
    procs = [subprocess.Popen([sys.executable, *argv], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, cwd=ROOT)
             for argv in argvs]
    out: list[dict[str, Any]] = []
    try:
        for argv, proc in zip(argvs, procs, strict=True):
            stdout, stderr = proc.communicate(timeout=timeout)
            if proc.returncode not in (0, 1):
                raise RuntimeError(f"{argv[0]} failed ({proc.returncode}):\n{stderr[-2000:]}")
            lines = [x for x in stdout.splitlines() if x.startswith("{")]
            if not lines:
                raise RuntimeError(f"{argv[0]} printed no JSON:\n{stdout[-1000:]}"
                                   f"{stderr[-1000:]}")
            out.append(orjson.loads(lines[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                end_process(proc.pid)
                proc.wait()
    return out
