"""A real 3-node MariaDB Galera cluster on loopback in a temporary directory, for tests.

Per REFERENCE.md 0c: one ``--defaults-file`` per node with its own ``conf.d/`` drop-in
directory, ``user=mysql`` (rsync SST fails as root), node 1 bootstrapped with
``--wsrep-new-cluster``, nodes 2 and 3 joined by rsync SST.  Every port (mysql, gmcast,
IST, SST) is a free one picked at start.  The harness only ever signals processes it
started: a node's ``mariadbd`` is found by its pid file or by a ``/proc`` cmdline naming
that node's own defaults file (which lives in this cluster's private temp dir).
"""

from __future__ import annotations

import contextlib
import getpass
import os
import pwd
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Self

from knobtop.server.link import ConnectionInfo

GALERA_PROVIDER = "/usr/lib/galera/libgalera_smm.so"
CLUSTER_USER = "knobtop"
_SOCKET_PATH_MAX = 107  # sun_path is 108 bytes including the NUL


class GaleraError(RuntimeError):
    """The cluster (or one node) did not start, join, sync or stop in time."""


def _find(*names: str) -> str | None:
    path = os.environ.get("PATH", "") + ":/usr/sbin:/sbin:/usr/local/sbin"
    for name in names:
        found = shutil.which(name, path=path)
        if found:
            return os.path.abspath(found)
    return None


def _free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` distinct free ports (all sockets held open together, so no repeats)."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            s = socket.socket()
            socks.append(s)
            s.bind((host, 0))
        return [int(s.getsockname()[1]) for s in socks]
    finally:
        for s in socks:
            s.close()


def _alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie (orphans may never be reaped here)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[-1].split()[0] != "Z"


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0") if part]


_RESTART_SCRIPT = """\
#!/bin/sh
# Restart galera node {name}: SIGTERM its mariadbd (by pid), wait for it to exit, then start
# it again detached, joining the running cluster.  Returns once the new process has started
# (its "as process PID" log line), not once it is Synced.  Written by tests/harness/galera.py.
set -u
SERVER={server}
DEFAULTS={defaults}
PIDFILE={pid_file}
ERRLOG={error_log}
STOP_TIMEOUT={stop_timeout}

alive() {{
    [ -r "/proc/$1/stat" ] || return 1
    state=$(sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f1)
    [ -n "$state" ] && [ "$state" != Z ]
}}
ours() {{
    # Only a mariadbd whose argv carries this node's defaults file.
    [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$(basename "$SERVER" | cut -c1-15)" ] || return 1
    tr '\\0' '\\n' < "/proc/$1/cmdline" 2>/dev/null | grep -qxF -e "--defaults-file=$DEFAULTS"
}}
node_pids() {{
    pid=$(cat "$PIDFILE" 2>/dev/null || true)
    if [ -n "$pid" ] && ours "$pid" && alive "$pid"; then echo "$pid"; return; fi
    for d in /proc/[0-9]*; do
        p=${{d#/proc/}}
        if ours "$p" && alive "$p"; then echo "$p"; fi
    done
}}

for pid in $(node_pids); do
    kill -TERM "$pid" 2>/dev/null || true
    ticks=0
    while alive "$pid"; do
        ticks=$((ticks + 1))
        if [ "$ticks" -gt $((STOP_TIMEOUT * 10)) ]; then
            echo "{name}: mariadbd pid $pid did not stop within $STOP_TIMEOUT s" >&2
            tail -n 20 "$ERRLOG" >&2
            exit 1
        fi
        sleep 0.1
    done
done

setsid "$SERVER" "--defaults-file=$DEFAULTS" </dev/null >/dev/null 2>&1 &
new=$!
ticks=0
until grep -q "as process $new\\$" "$ERRLOG" 2>/dev/null; do
    if ! alive "$new"; then
        echo "{name}: mariadbd exited at start; tail of $ERRLOG:" >&2
        tail -n 20 "$ERRLOG" >&2
        exit 1
    fi
    ticks=$((ticks + 1))
    if [ "$ticks" -gt 600 ]; then
        echo "{name}: mariadbd pid $new wrote no start line within 60 s" >&2
        exit 1
    fi
    sleep 0.1
done
echo "{name}: started mariadbd pid $new"
"""


class GaleraNode:
    """One node: its directory, ports, config, and process control."""

    def __init__(
        self,
        *,
        name: str,
        root: Path,
        port: int,
        gmcast_port: int,
        ist_port: int,
        sst_port: int,
        server: str,
        client: str,
    ) -> None:
        self.name = name
        self.root = root
        self.port = port
        self.gmcast_port = gmcast_port
        self.ist_port = ist_port
        self.sst_port = sst_port
        self.server = server
        self.client = client
        self._procs: list[subprocess.Popen[bytes]] = []

    # -- paths ------------------------------------------------------------------

    @property
    def datadir(self) -> Path:
        return self.root / "data"

    @property
    def socket(self) -> Path:
        return self.root / "mysqld.sock"

    @property
    def pid_file(self) -> Path:
        return self.root / "mysqld.pid"

    @property
    def error_log(self) -> Path:
        return self.root / "error.log"

    @property
    def defaults_file(self) -> Path:
        return self.root / "my.cnf"

    @property
    def tmpdir(self) -> Path:
        return self.root / "tmp"

    @property
    def dropin_dir(self) -> Path:
        return self.root / "conf.d"

    @property
    def restart_script(self) -> Path:
        return self.root / "restart.sh"

    @property
    def restart_command(self) -> str:
        """A shell command that restarts this node (stop by pid, start detached, no wait
        for Synced); it exits non-zero with the error log tail when either step fails."""
        return shlex.quote(str(self.restart_script))

    @property
    def gmcast_address(self) -> str:
        return f"127.0.0.1:{self.gmcast_port}"

    def __repr__(self) -> str:
        return f"GaleraNode({self.name}, port={self.port}, root={self.root})"

    # -- set-up -----------------------------------------------------------------

    def write_files(self, *, cluster_name: str, cluster_address: str, run_as: str | None) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        self.dropin_dir.mkdir(exist_ok=True)
        self.tmpdir.mkdir(exist_ok=True)
        if run_as:
            shutil.chown(self.tmpdir, run_as)
        user = f"user={run_as}\n" if run_as else ""
        provider_options = (
            f"gmcast.listen_addr=tcp://127.0.0.1:{self.gmcast_port};"
            f"ist.recv_addr=127.0.0.1:{self.ist_port};gcache.size=64M"
        )
        self.defaults_file.write_text(
            f"# Galera test node {self.name}, written by tests/harness/galera.py.\n"
            "[mysqld]\n"
            f"{user}"
            f"datadir={self.datadir}\n"
            f"socket={self.socket}\n"
            f"pid-file={self.pid_file}\n"
            f"log-error={self.error_log}\n"
            # Its own: a starting mariadbd deletes every #sql* file in its tmpdir, another
            # server's temporary tables in a shared /tmp included.
            f"tmpdir={self.tmpdir}\n"
            f"port={self.port}\n"
            "bind-address=127.0.0.1\n"
            "skip-name-resolve\n"
            "innodb_buffer_pool_size=64M\n"
            "innodb_log_file_size=48M\n"
            "binlog_format=ROW\n"
            "default_storage_engine=InnoDB\n"
            "innodb_autoinc_lock_mode=2\n"
            "wsrep_on=ON\n"
            f"wsrep_provider={GALERA_PROVIDER}\n"
            f"wsrep_cluster_name={cluster_name}\n"
            f"wsrep_cluster_address=gcomm://{cluster_address}\n"
            f"wsrep_node_name={self.name}\n"
            f"wsrep_node_address={self.gmcast_address}\n"
            f'wsrep_provider_options="{provider_options}"\n'
            "wsrep_sst_method=rsync\n"
            f"wsrep_sst_receive_address=127.0.0.1:{self.sst_port}\n"
            f"!includedir {self.dropin_dir}\n"
        )
        self.defaults_file.chmod(0o644)
        self.restart_script.write_text(
            _RESTART_SCRIPT.format(
                name=self.name,
                server=shlex.quote(self.server),
                defaults=shlex.quote(str(self.defaults_file)),
                pid_file=shlex.quote(str(self.pid_file)),
                error_log=shlex.quote(str(self.error_log)),
                stop_timeout=60,
            )
        )
        self.restart_script.chmod(0o755)

    def install_db(self, install: str, *, run_as: str | None, timeout: float = 300.0) -> None:
        self.datadir.mkdir(parents=True, exist_ok=True)
        me = getpass.getuser()
        args = [
            install,
            "--no-defaults",
            f"--datadir={self.datadir}",
            f"--tmpdir={self.tmpdir}",
            "--auth-root-authentication-method=socket",
            f"--auth-root-socket-user={me}",
            "--skip-test-db",
        ]
        if run_as:
            args.append(f"--user={run_as}")
        try:
            proc = subprocess.run(
                args, capture_output=True, text=True, timeout=timeout, check=False
            )
        except subprocess.TimeoutExpired:
            raise GaleraError(
                f"{self.name}: mariadb-install-db did not finish within {timeout:.0f} s"
            ) from None
        if proc.returncode != 0:
            raise GaleraError(
                f"{self.name}: mariadb-install-db failed (exit {proc.returncode}):\n"
                f"{proc.stdout[-1500:]}{proc.stderr[-1500:]}"
            )

    # -- processes --------------------------------------------------------------

    def _ours(self, pid: int) -> bool:
        return f"--defaults-file={self.defaults_file}" in _cmdline(pid)

    def pid(self) -> int | None:
        """The pid of this node's running mariadbd, or None."""
        self._reap()
        with contextlib.suppress(FileNotFoundError, ValueError):
            pid = int(self.pid_file.read_text().strip())
            if self._ours(pid) and _alive(pid):
                return pid
        # The pid file is written late (after an SST); fall back to our own children, then
        # to any process whose argv names this node's (private) defaults file.
        for proc in self._procs:
            if proc.poll() is None and _alive(proc.pid):
                return proc.pid
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                pid = int(entry.name)
                if pid != os.getpid() and self._ours(pid) and _alive(pid):
                    return pid
        return None

    def running(self) -> bool:
        return self.pid() is not None

    def _reap(self) -> None:
        self._procs = [p for p in self._procs if p.poll() is None]

    def launch(self, *, bootstrap: bool = False) -> int:
        """Start mariadbd in the background (its own session); return its pid."""
        if self.running():
            raise GaleraError(f"{self.name} is already running (pid {self.pid()})")
        args = [self.server, f"--defaults-file={self.defaults_file}"]
        if bootstrap:
            args.append("--wsrep-new-cluster")
        proc = subprocess.Popen(
            args,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        self._procs.append(proc)
        return proc.pid

    def start(self, *, wait_synced: bool = False, timeout: float = 180.0) -> None:
        """Start this node again, joining the running cluster (never ``--wsrep-new-cluster``).

        Returns once the process runs; with ``wait_synced`` once it is Synced.
        """
        pid = self.launch()
        self._wait_started(pid, timeout=60.0)
        if wait_synced:
            self.wait_synced(timeout=timeout)

    def _wait_started(self, pid: int, *, timeout: float) -> None:
        line = f"as process {pid}"
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with contextlib.suppress(FileNotFoundError):
                text = self.error_log.read_text(errors="replace")
                if any(ln.rstrip().endswith(line) for ln in text.splitlines()):
                    return
            if not _alive(pid):
                self._reap()
                raise GaleraError(f"{self.name}: mariadbd exited at start\n{self.log_tail()}")
            time.sleep(0.05)
        raise GaleraError(f"{self.name}: mariadbd (pid {pid}) logged no start line\n"
                          f"{self.log_tail()}")

    def stop(self, *, timeout: float = 60.0) -> None:
        """Clean shutdown: SIGTERM to this node's pid, wait up to ``timeout`` s for exit."""
        pid = self.pid()
        if pid is None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._reap()
            if not _alive(pid):
                self._reap()
                return
            time.sleep(0.05)
        raise GaleraError(
            f"{self.name}: mariadbd (pid {pid}) did not stop within {timeout:.0f} s\n"
            f"{self.log_tail()}"
        )

    def kill(self) -> None:
        """SIGKILL this node's mariadbd (last resort in tear-down)."""
        pid = self.pid()
        if pid is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            deadline = time.monotonic() + 10
            while _alive(pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            self._reap()

    # -- talking to it as root over the socket ----------------------------------

    def sql(self, sql: str, *, timeout: float = 30.0) -> subprocess.CompletedProcess[str]:
        """Run SQL (on stdin, never argv) as the socket-authenticated root; no check."""
        return subprocess.run(
            [self.client, "--no-defaults", f"--socket={self.socket}",
             f"--user={getpass.getuser()}", "--connect-timeout=5", "-N", "-B"],
            input=sql,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )

    def status(self) -> dict[str, str]:
        """``wsrep_%`` status as a dict; empty while the node does not answer."""
        if not self.socket.exists():
            return {}
        try:
            result = self.sql("SHOW GLOBAL STATUS LIKE 'wsrep\\_%';", timeout=15.0)
        except subprocess.TimeoutExpired:
            return {}
        if result.returncode != 0:
            return {}
        pairs = (line.split("\t", 1) for line in result.stdout.splitlines() if "\t" in line)
        return {k: v for k, v in pairs}

    def wait_synced(self, *, timeout: float = 180.0, cluster_size: int | None = None) -> float:
        """Poll until Synced, ready and Primary (and the given cluster size); return seconds."""
        start = time.monotonic()
        deadline = start + timeout
        status: dict[str, str] = {}
        while True:
            if not self.running():
                raise GaleraError(
                    f"{self.name}: mariadbd is not running (it exited while joining?)\n"
                    f"{self.log_tail()}"
                )
            status = self.status()
            if (
                status.get("wsrep_local_state_comment") == "Synced"
                and status.get("wsrep_ready") == "ON"
                and status.get("wsrep_cluster_status") == "Primary"
                and (cluster_size is None or status.get("wsrep_cluster_size") == str(cluster_size))
            ):
                return time.monotonic() - start
            if time.monotonic() >= deadline:
                break
            time.sleep(0.2)
        seen = {
            k: status.get(k)
            for k in ("wsrep_local_state_comment", "wsrep_ready", "wsrep_cluster_status",
                      "wsrep_cluster_size")
        } if status else "no answer on the socket"
        want = f" with cluster size {cluster_size}" if cluster_size else ""
        raise GaleraError(
            f"{self.name}: not Synced{want} within {timeout:.0f} s (last status: {seen})\n"
            f"{self.log_tail()}"
        )

    def log_tail(self, lines: int = 25) -> str:
        try:
            text = self.error_log.read_text(errors="replace").splitlines()[-lines:]
        except FileNotFoundError:
            return f"--- (no error log at {self.error_log})"
        return f"--- last {len(text)} lines of {self.error_log}:\n" + "\n".join(text)


class GaleraCluster:
    """Start a real ``size``-node Galera cluster; ``with GaleraCluster() as c: ...``.

    After ``start()``: every node Synced in a Primary component of ``size`` nodes, and a
    user ``knobtop`` (``%``, ``127.0.0.1``, ``localhost``) with ALL privileges and a random
    password; ``connection(node)`` reaches it over TCP.
    """

    def __init__(
        self,
        root: Path | None = None,
        *,
        size: int = 3,
        server: str | None = None,
        install_db: str | None = None,
        client: str | None = None,
        bootstrap_timeout: float = 120.0,
        join_timeout: float = 240.0,
        keep_dir: bool = False,
    ) -> None:
        self._given_root = root
        self.root: Path | None = root
        self.size = size
        self.server = server or _find("mariadbd", "mysqld") or "mariadbd"
        self.install_db = install_db or _find("mariadb-install-db", "mysql_install_db") or ""
        self.client = client or _find("mariadb", "mysql") or "mariadb"
        self.bootstrap_timeout = bootstrap_timeout
        self.join_timeout = join_timeout
        self.keep_dir = keep_dir
        self.password = secrets.token_urlsafe(18)
        self.cluster_name = f"knobtop_{secrets.token_hex(4)}"
        self.nodes: list[GaleraNode] = []
        self.timings: dict[str, float] = {}

    # -- life cycle -------------------------------------------------------------

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop_all()

    def start(self) -> None:
        for program, what in ((self.server, "mariadbd"), (self.install_db, "mariadb-install-db"),
                              (self.client, "mariadb")):
            if not program or not Path(program).exists():
                raise GaleraError(f"{what} not found: apt-get install -y mariadb-server")
        if not Path(GALERA_PROVIDER).exists():
            raise GaleraError(f"{GALERA_PROVIDER} is missing: apt-get install -y galera-4")
        if _find("rsync") is None:
            raise GaleraError("rsync (for SST) is missing: apt-get install -y rsync")
        t0 = time.monotonic()
        try:
            self._start()
        except BaseException:
            self.stop_all()
            raise
        self.timings["cluster_start"] = time.monotonic() - t0

    def _start(self) -> None:
        if self.root is None:
            self.root = Path(tempfile.mkdtemp(prefix="knobtop-galera-"))
        self.root.mkdir(parents=True, exist_ok=True)
        run_as: str | None = None
        if os.geteuid() == 0:
            # mariadbd drops to mysql; it must be able to traverse into its node dir.
            run_as = "mysql"
            pwd.getpwnam(run_as)  # KeyError here means: no mysql user (install mariadb-server)
            self.root.chmod(0o755)
        ports = _free_ports(4 * self.size)
        self.nodes = [
            GaleraNode(
                name=f"n{i + 1}",
                root=self.root / f"n{i + 1}",
                port=ports[4 * i],
                gmcast_port=ports[4 * i + 1],
                ist_port=ports[4 * i + 2],
                sst_port=ports[4 * i + 3],
                server=self.server,
                client=self.client,
            )
            for i in range(self.size)
        ]
        if len(str(self.nodes[-1].socket)) > _SOCKET_PATH_MAX:
            raise GaleraError(
                f"socket path {self.nodes[-1].socket} is too long for a unix socket; "
                "use a shorter root dir (TMPDIR)"
            )
        address = ",".join(n.gmcast_address for n in self.nodes)
        for node in self.nodes:
            node.write_files(cluster_name=self.cluster_name, cluster_address=address,
                             run_as=run_as)
            node.install_db(self.install_db, run_as=run_as)
            if run_as:
                _chown_tree(node.root, run_as)
        first, *others = self.nodes
        t = time.monotonic()
        pid = first.launch(bootstrap=True)
        first._wait_started(pid, timeout=60.0)
        first.wait_synced(timeout=self.bootstrap_timeout, cluster_size=1)
        self.timings[f"{first.name}_bootstrap"] = time.monotonic() - t
        for i, node in enumerate(others, start=2):
            # One at a time: a donor serves one SST at a time.
            t = time.monotonic()
            node.start()
            node.wait_synced(timeout=self.join_timeout, cluster_size=i)
            self.timings[f"{node.name}_join"] = time.monotonic() - t
        self.wait_all_synced(timeout=self.join_timeout)
        self._create_user(first)

    def _create_user(self, node: GaleraNode) -> None:
        pw = self.password.replace("'", "''")
        hosts = ("%", "127.0.0.1", "localhost")
        sql = "".join(
            f"CREATE USER IF NOT EXISTS '{CLUSTER_USER}'@'{h}' IDENTIFIED BY '{pw}';"
            f"GRANT ALL PRIVILEGES ON *.* TO '{CLUSTER_USER}'@'{h}' WITH GRANT OPTION;"
            for h in hosts
        )
        result = node.sql(sql)
        if result.returncode != 0:
            raise GaleraError(
                f"{node.name}: could not create user {CLUSTER_USER}: {result.stderr.strip()}\n"
                f"{node.log_tail()}"
            )
        # DDL replicates in total order; wait until every node has the accounts.
        check = (
            f"SELECT COUNT(*) FROM mysql.global_priv WHERE User='{CLUSTER_USER}';"
        )
        deadline = time.monotonic() + 60
        for other in self.nodes:
            while True:
                out = other.sql(check)
                if out.returncode == 0 and out.stdout.strip() == str(len(hosts)):
                    break
                if time.monotonic() > deadline:
                    raise GaleraError(
                        f"{other.name}: user {CLUSTER_USER} not replicated within 60 s "
                        f"({out.stdout.strip() or out.stderr.strip()})"
                    )
                time.sleep(0.1)

    def wait_all_synced(self, *, timeout: float = 120.0) -> None:
        """Every node Synced in one Primary component of ``size`` nodes."""
        deadline = time.monotonic() + timeout
        for node in self.nodes:
            node.wait_synced(timeout=max(deadline - time.monotonic(), 1.0),
                             cluster_size=self.size)

    def stop_all(self, *, timeout: float = 60.0) -> None:
        """Shut down n3, n2, then n1 (SIGTERM by pid; SIGKILL only after ``timeout``)."""
        errors: list[str] = []
        for node in reversed(self.nodes):
            try:
                node.stop(timeout=timeout)
            except GaleraError as exc:
                errors.append(str(exc))
                node.kill()
        if self.root is not None and self._given_root is None and not self.keep_dir:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None
        if errors:
            raise GaleraError("\n".join(errors))

    # -- for tests ----------------------------------------------------------------

    def connection(self, node: GaleraNode | int) -> ConnectionInfo:
        """The knobtop user over TCP to ``node`` (a node or its 0-based index)."""
        if isinstance(node, int):
            node = self.nodes[node]
        return ConnectionInfo(host="127.0.0.1", port=node.port, user=CLUSTER_USER,
                              password=self.password)


def _chown_tree(root: Path, user: str) -> None:
    entry = pwd.getpwnam(user)
    uid, gid = entry.pw_uid, entry.pw_gid
    os.chown(root, uid, gid)
    for dirpath, dirnames, filenames in os.walk(root):
        for name in (*dirnames, *filenames):
            os.lchown(os.path.join(dirpath, name), uid, gid)
