"""The sandbox server as a process, given its paths (lab.py's Sandbox knows them): a new
datadir made by mariadb-install-db, SQL run as the socket-authenticated admin, the wait for
the server's greeting, a stop by SIGTERM waited out, and the error log knobtop marks and
reads back (appended to across starts, each start's lines behind a line of knobtop's)."""

from __future__ import annotations

import contextlib
import getpass
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from knobtop.labdirs import LabError, find_program, open_append, own_dir
from knobtop.safefile import private_cwd

# The error log is appended to across starts (a failed start keeps its evidence) and
# rotated to error.log.1 once it is this big.
ERROR_LOG_ROTATE = 16 * 1024 * 1024


def install_db(datadir: Path, tmpdir: Path) -> None:
    """A new datadir by mariadb-install-db (removed again when that fails)."""
    install = find_program("mariadb-install-db", "mysql_install_db")
    if install is None:
        raise LabError(
            "mariadb-install-db is not installed: run `sudo apt-get install -y mariadb-server`"
        )
    own_dir(datadir)
    args = [
        install,
        "--no-defaults",
        f"--datadir={datadir}",
        f"--tmpdir={tmpdir}",  # to the bootstrap (made with my.cnf): see Sandbox.tmpdir
        "--auth-root-authentication-method=socket",
        # The OS user running knobtop may log in as root over the socket.
        f"--auth-root-socket-user={getpass.getuser()}",
        "--skip-test-db",
    ]
    if os.geteuid() == 0:
        args.append(f"--user={getpass.getuser()}")
    try:
        proc = subprocess.run(args, capture_output=True, text=True, timeout=300, check=False,
                              cwd=private_cwd())
    except subprocess.TimeoutExpired:
        shutil.rmtree(datadir, ignore_errors=True)
        raise LabError("mariadb-install-db did not finish within 300 s") from None
    if proc.returncode != 0:
        shutil.rmtree(datadir, ignore_errors=True)
        raise LabError(f"mariadb-install-db failed:\n{proc.stdout[-800:]}{proc.stderr[-800:]}")


def admin_client(sock: Path, sql: str) -> subprocess.CompletedProcess[str]:
    """Run SQL as the socket-authenticated admin; the SQL goes on stdin, never argv."""
    client = find_program("mariadb", "mysql")
    if client is None:
        raise LabError("no mariadb client: run `sudo apt-get install -y mariadb-client`")
    try:
        return subprocess.run(
            [client, "--no-defaults", f"--socket={sock}",
             f"--user={getpass.getuser()}", "-N"],
            input=sql,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
            cwd=private_cwd(),
        )
    except subprocess.TimeoutExpired:
        raise LabError(
            "the sandbox server did not answer the set-up client within 60 s"
        ) from None


def wait_ready(sock: Path, timeout: float, proc: subprocess.Popen[bytes] | None,
               log_tail: Callable[[], str]) -> None:
    """Until the server greets on ``sock``; a server ``proc`` that exits first, or no
    greeting within ``timeout``, is an error followed by ``log_tail()``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise LabError(f"the sandbox server exited at start; {log_tail()}")
        if sock.exists():
            with socket.socket(socket.AF_UNIX) as s:
                s.settimeout(1.0)
                try:
                    s.connect(str(sock))
                    if s.recv(1):  # the server greets first: it is ready
                        return
                except OSError:
                    pass
        time.sleep(0.05)
    raise LabError(
        f"the sandbox server did not answer within {timeout:.0f} s; {log_tail()}"
    )


def kill(proc: subprocess.Popen[bytes], targets: list[int]) -> None:
    """End a server this process started (``proc``): SIGTERM to each of ``targets`` (it,
    or the server its strace runs and then the strace), SIGKILL after 30 s."""
    for pid in targets:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        for pid in targets:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait()


def terminate(pid: int, timeout: float) -> None:
    """SIGTERM to the server ``pid`` (which InnoDB treats as a normal shutdown), and wait
    until it is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not Path(f"/proc/{pid}").exists() or _is_zombie(pid):
            break
        time.sleep(0.05)
    else:
        raise LabError(f"the sandbox server (pid {pid}) did not stop within {timeout:.0f} s")
    with contextlib.suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


def _is_zombie(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


def open_error_log(path: Path) -> int:
    """Keep earlier starts' lines (rotating a big log once) and say where this start's
    lines begin, behind a line saying which start they belong to."""
    with contextlib.suppress(FileNotFoundError):
        if os.lstat(path).st_size > ERROR_LOG_ROTATE:
            path.replace(path.with_name(path.name + ".1"))
    return log_line(path, "server start")


def log_line(path: Path, what: str) -> int:
    """A line of knobtop's own in the server's error log (what it did, and when); the
    log's size after it."""
    with open_append(path) as fh:
        fh.write(f"---- knobtop lab: {what} at {time.strftime('%Y-%m-%d %H:%M:%S')} ----\n")
        return fh.tell()


def start_log(path: Path, start: int) -> list[str]:
    """The error log's lines from ``start`` (a start's), as the server wrote them."""
    try:
        with open(path, "rb") as fh:
            fh.seek(start)
            return fh.read().decode(errors="replace").splitlines()
    except FileNotFoundError:
        return []


def log_tail(path: Path, start: int) -> str:
    """The server's own words about the start whose lines begin at ``start``, verbatim:
    its [ERROR] lines (else its last lines), under one line of knobtop's naming the file."""
    lines = start_log(path, start)
    if not lines:
        return f"(nothing in the error log {path} from this start)"
    errors = [line for line in lines if "[ERROR]" in line]
    shown = errors[-15:] if errors else lines[-15:]
    what = "[ERROR] lines" if errors else "last lines"
    return f"its {what} in {path} from this start:\n" + "\n".join(shown)
