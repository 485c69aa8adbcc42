"""The embedded default: a sandbox MariaDB/MySQL from this machine's binaries, in a private dir."""
# Its base options, my.cnf and plugins are in lab_options.py, its storage emulation in
# lab_storage.py, the server as a process (install, admin client, greeting, stop, error log)
# in lab_process.py, its places on disk and safe writes in labdirs.py.

from __future__ import annotations

import contextlib
import getpass
import hashlib
import os
import secrets
import shlex
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from knobtop.lab_options import (
    Options,
    check_known,
    check_option,
    check_plugin_files,
    configured_options,
    configured_plugins,
    missing_plugin,
    my_cnf,
    options_text,
    parse_option,
    server_plugin_dir,
)
from knobtop.lab_process import (
    admin_client,
    install_db,
    kill,
    log_line,
    log_tail,
    open_error_log,
    start_log,
    terminate,
    wait_ready,
)
from knobtop.lab_storage import (
    Storage,
    join_storage,
    save_storage,
    saved_storage,
    traced_children,
)
from knobtop.labdirs import (
    LABS,
    SESSION_LOCK,
    LabError,
    default_lab_dir,
    find_program,
    lab_dir_for,
    own_dir,
    read_own,
    refuse_link,
    sandbox_dirs,
    session_lock,
    write_atomic,
    write_new,
)
from knobtop.safefile import private_cwd
from knobtop.server.link import ConnectionInfo

LAB_USER = "knobtop"
LAB_DB = "sbtest"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket() as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass
class Sandbox:
    """A private server: ``datadir``, ``my.cnf``, a ``conf.d/`` drop-in dir owned by
    knobtop (for static knobs), a unix socket and a free port on 127.0.0.1.

    The password of the lab user lives in ``client.cnf`` (mode 0600) and in
    memory; it is handed to the journal writer as a secret.
    """

    root: Path
    port: int = 0
    started_here: bool = False
    # Server plugins to load at start, by library name ("ha_rocksdb" for MyRocks).
    plugins: tuple[str, ...] = ()
    # The sandbox's own base settings (my.cnf [mysqld] lines, e.g. a second sandbox with
    # innodb_flush_log_at_trx_commit=2), each exactly a performance variable of the
    # server's (lab_options). Empty asks for none: a start keeps those its my.cnf has, and
    # sets this to them.
    options: Options = ()
    # The base options a start replaced with others (None: it replaced none).
    replaced: Options | None = None
    # Where this start's lines begin in error.log (it is appended to, never deleted).
    log_start: int = 0
    # Its storage emulation (lab_storage; --storage): None keeps what a running server
    # has, else none; a start sets it to what the server runs with.
    storage: Storage | None = None

    def __post_init__(self) -> None:
        self.plugins = tuple(p.removesuffix(".so") for p in self.plugins)
        for name in self.plugins:
            if not name.replace("_", "").isalnum():
                raise LabError(f"not a plugin library name: {name!r} (e.g. ha_rocksdb)")
        for key, value in self.options:
            check_option(key, value)

    @classmethod
    def existing(cls, root: Path) -> Sandbox:
        """The sandbox in ``root`` with the plugins and base options its my.cnf has (for
        restarts and --stop; a start checks the options as a file's)."""
        box = cls(root, plugins=configured_plugins(root / "my.cnf"))
        box.options = configured_options(box.config)
        box.storage = saved_storage(root)
        return box

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
    def config(self) -> Path:
        return self.root / "my.cnf"

    @property
    def dropin_dir(self) -> Path:
        return self.root / "conf.d"

    @property
    def error_log(self) -> Path:
        return self.root / "error.log"

    @property
    def tmpdir(self) -> Path:
        """The server's own temporary directory. Not /tmp: a mariadbd starting (and
        mariadb-install-db's bootstrap) deletes every ``#sql*`` file in its tmpdir, so with
        a shared one it would delete the on-disk temporary tables of every other server on
        the machine that uses it, queries running on them included."""
        return self.root / "tmp"

    @property
    def secret_file(self) -> Path:
        return self.root / "client.cnf"

    @property
    def ready_marker(self) -> Path:
        """Written once the datadir has the lab user: a half-made datadir is redone."""
        return self.root / "data" / ".knobtop-ready"

    @property
    def port_file(self) -> Path:
        return self.root / "port"

    # -- set-up ---------------------------------------------------------------

    def wipe(self) -> None:
        """``--fresh``: everything of this sandbox's goes, but not the named sandboxes
        inside it (``labs/``) nor the lock of the session that asked."""
        if self.running_pid() is not None:
            raise LabError(f"the sandbox in {self.root} is running; stop it before --fresh")
        sandbox_dirs(self.root)  # never through a link: what goes is the sandbox's own
        with contextlib.suppress(FileNotFoundError, NotADirectoryError):
            for entry in os.scandir(self.root):
                if entry.name in (LABS, SESSION_LOCK):  # named sandboxes; this session's hold
                    continue
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path, ignore_errors=True)
                else:
                    os.unlink(entry.path)

    def password(self) -> str:
        text = read_own(self.secret_file)
        if text is None:
            sandbox_dirs(self.root)
            pw = secrets.token_urlsafe(18)
            write_new(self.secret_file, f"[client]\nuser={LAB_USER}\npassword={pw}\n")
            return pw
        for line in text.splitlines():
            if line.startswith("password="):
                return line.split("=", 1)[1]
        raise LabError(f"{self.secret_file} has no password= line; remove the lab with --fresh")

    def connection(self, *, use_socket: bool = False) -> ConnectionInfo:
        return ConnectionInfo(
            host="127.0.0.1",
            port=self.port,
            user=LAB_USER,
            password=self.password(),
            socket=str(self.socket) if use_socket else None,
        )

    def _write_config(self) -> None:
        sandbox_dirs(self.root)
        own_dir(self.dropin_dir)
        own_dir(self.tmpdir)
        write_atomic(self.config, my_cnf(self.options, self.plugins, self.dropin_dir))

    def fixed_settings(self, plugin_dir: Path) -> list[str]:
        """mariadbd's command line after ``--defaults-file``: the lab's own settings, which
        no option file can then move (the command line is read after them)."""
        args = [
            f"--datadir={self.datadir}",
            f"--socket={self.socket}",
            f"--pid-file={self.pid_file}",
            f"--log-error={self.error_log}",
            f"--tmpdir={self.tmpdir}",  # not a shared one: see tmpdir
            "--bind-address=127.0.0.1",
            f"--port={self.port}",
            f"--plugin-dir={plugin_dir}",  # the server's own: plugin-load-add loads from it
            "--skip-name-resolve",
            "--skip-grant-tables=0",  # every login needs its password, whatever conf.d says
        ]
        if os.geteuid() == 0:
            args.append(f"--user={getpass.getuser()}")
        return args

    # -- run ------------------------------------------------------------------

    def running_pid(self) -> int | None:
        """The pid of a server already running on this datadir, if any."""
        try:
            pid = int((read_own(self.pid_file) or "").strip())
        except (ValueError, LabError):  # not a pid; a link, which start refuses
            return None
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
        except OSError:
            return None
        return pid if str(self.config) in cmdline else None

    def start(self, *, timeout: float = 60.0) -> ConnectionInfo:
        """Start (or join) the sandbox server and return how to reach it.

        Without base options asked for, it keeps those its my.cnf has; asked-for ones that
        differ replace them when the server is stopped (``replaced`` says which it had)
        and are refused when it runs."""
        server = find_program("mariadbd", "mysqld")
        if server is None:
            raise LabError(
                "no mariadbd on this machine: run `sudo apt-get install -y mariadb-server`"
            )
        check_plugin_files(server, self.plugins)
        running = configured_options(self.config)
        if self.options != running:  # asked-for ones: checked before anything is written
            check_known(self.options, server, self.plugins, "base option")
        sandbox_dirs(self.root)
        for path in (self.config, self.secret_file, self.error_log, self.pid_file,
                     self.port_file, self.socket):
            if path.is_symlink():  # planted: knobtop would write (or read) through it
                raise refuse_link(path)
        pid = self.running_pid()
        if pid is not None:
            if self.options and running != self.options:
                raise LabError(
                    f"the sandbox in {self.root} runs with other base options "
                    f"({options_text(running) or 'none'}, not {options_text(self.options)}):"
                    f" stop it (knobtop lab --stop --dir {self.root}) or use another --name")
            self.options = running
            self.storage = join_storage(self.root, self.storage, pid)
            self.port = self._port_of_running()
            wait_ready(self.socket, timeout, None, self._log_tail)
            self._check_plugins_active()
            return self.connection()
        if not self.options:
            self.options = running
        elif running and running != self.options:
            self.replaced = running
        if self.options == running:  # kept from my.cnf: a file's, checked as the others
            try:
                check_known(running, server, self.plugins, f"{self.config}: base option")
            except LabError as exc:
                raise LabError(f"{exc}; give the sandbox other base options (--option "
                               "KEY=VALUE replaces them all), or remove the line") from None
        wrapper = self._own_storage()  # strace missing: refused before anything is made
        own_dir(self.datadir)
        fresh = not os.path.lexists(self.ready_marker)
        self._write_config()
        if fresh:
            shutil.rmtree(self.datadir, ignore_errors=True)
            install_db(self.datadir, self.tmpdir)
        self.port = self.port or free_port()
        plugin_dir = server_plugin_dir(server)
        self.log_start = open_error_log(self.error_log)
        save_storage(self.root, self.storage or Storage())
        from knobtop.hosts.local import as_launched  # psutil: only where a server starts

        with open(os.devnull, "wb") as devnull:
            proc = subprocess.Popen(
                [*wrapper, server, f"--defaults-file={self.config}",
                 *self.fixed_settings(plugin_dir)],
                stdin=subprocess.DEVNULL,
                stdout=devnull,
                stderr=devnull,
                start_new_session=True,
                preexec_fn=as_launched,  # not a session process's raised priority
                cwd=private_cwd(),
            )
        self.started_here = True
        try:
            write_atomic(self.port_file, str(self.port))
            wait_ready(self.socket, timeout, proc, self._log_tail)
            if fresh:
                self._create_lab_user()
                write_new(self.ready_marker, "")
            self._check_plugins_active()
        except BaseException:
            # Never leave a half-started server behind for the next run to trip over.
            self._kill(proc)
            raise
        return self.connection()

    def _check_plugins_active(self) -> None:
        """Every asked-for plugin library loaded (a running sandbox may lack one)."""
        if not self.plugins:
            return
        result = self._client(
            "SELECT DISTINCT PLUGIN_LIBRARY FROM information_schema.PLUGINS "
            "WHERE PLUGIN_STATUS = 'ACTIVE' AND PLUGIN_LIBRARY IS NOT NULL"
        )
        if result.returncode != 0:
            raise LabError(f"could not list the server's plugins: {result.stderr.strip()}")
        active = {line.strip().removesuffix(".so") for line in result.stdout.splitlines()}
        missing = [name for name in self.plugins if name not in active]
        if missing:
            raise LabError(
                f"the sandbox server in {self.root} runs without {', '.join(missing)}: "
                f"stop it (kill $(cat {self.pid_file})) and start again; its error log "
                f"says:\n{self._log_tail()}"
            )

    def _own_storage(self) -> list[str]:
        """A start's emulation: the one asked for, else none; the command it runs under."""
        self.storage = self.storage or Storage()
        return self.storage.wrapper()

    def _kill(self, proc: subprocess.Popen[bytes]) -> None:
        # Under an emulation proc is the strace: the server it runs goes first (a strace
        # stopped alone would leave the server running, no longer traced).
        kill(proc, [*traced_children(proc.pid), proc.pid] if self.storage else [proc.pid])
        self.started_here = False

    def _port_of_running(self) -> int:
        try:
            return int(read_own(self.port_file) or "")
        except ValueError:
            raise LabError(
                f"a sandbox server runs in {self.root} but its port is unknown; stop it "
                f"(kill $(cat {self.pid_file})) and start again"
            ) from None

    def _client(self, sql: str) -> subprocess.CompletedProcess[str]:
        """Run SQL as the socket-authenticated admin; the SQL goes on stdin, never argv."""
        return admin_client(self.socket, sql)

    def start_log(self) -> list[str]:
        """The error log's lines from this start, as the server wrote them."""
        return start_log(self.error_log, self.log_start)

    def _log_tail(self) -> str:
        """The server's own words about this start (lab_process.log_tail)."""
        return log_tail(self.error_log, self.log_start)

    def _create_lab_user(self) -> None:
        # The password's hash, not the password: a server error quoting the statement
        # (and the message that repeats it) can never show the password itself.
        pw = native_password_hash(self.password())
        sql = (
            f"CREATE USER IF NOT EXISTS '{LAB_USER}'@'localhost' IDENTIFIED BY PASSWORD '{pw}';"
            f"CREATE USER IF NOT EXISTS '{LAB_USER}'@'127.0.0.1' IDENTIFIED BY PASSWORD '{pw}';"
            f"GRANT ALL PRIVILEGES ON *.* TO '{LAB_USER}'@'localhost' WITH GRANT OPTION;"
            f"GRANT ALL PRIVILEGES ON *.* TO '{LAB_USER}'@'127.0.0.1' WITH GRANT OPTION;"
            f"CREATE DATABASE IF NOT EXISTS {LAB_DB};"
        )
        result = self._client(sql)
        if result.returncode != 0:
            raise LabError(f"could not create the lab user: {result.stderr.strip()}")

    def restart(self, *, timeout: float = 120.0) -> ConnectionInfo:
        """Stop and start again on the same port, picking up conf.d/ changes.

        This is the lab profile's restart command (``python -m knobtop.lab restart
        DIR``); it fails, with the error log's tail, if the server will not start.
        """
        if self.running_pid() is not None:
            self.port = self._port_of_running()
            self.stop(timeout=timeout)
        elif not self.port:
            with contextlib.suppress(LabError):
                self.port = self._port_of_running()
        return self.start(timeout=timeout)

    def restart_command(self) -> str:
        # -P: the directory the restart runs in is not searched for a module named knobtop
        return (f"{shlex.quote(sys.executable)} -P -m knobtop.lab restart "
                f"{shlex.quote(str(self.root))}")

    @property
    def dropin_file(self) -> Path:
        """knobtop's own drop-in for static knob changes."""
        return self.dropin_dir / "knobtop.cnf"

    def stop(self, *, timeout: float = 60.0) -> None:
        """Stop the server cleanly (SIGTERM, which InnoDB treats as a normal shutdown)."""
        pid = self.running_pid()
        if pid is None:
            return
        with contextlib.suppress(OSError, LabError):  # who stopped it, beside "Normal shutdown"
            log_line(self.error_log, f"server stop (SIGTERM to pid {pid})")
        terminate(pid, timeout)
        self.started_here = False


def stop_lab(root: Path, *, timeout: float = 60.0) -> str:
    """``knobtop lab --stop``: stop the sandbox server in ``root`` cleanly, and say what
    was done (also when none was running)."""
    sandbox = Sandbox.existing(root)
    pid = sandbox.running_pid()
    if pid is None:
        return f"no sandbox server is running in {root}"
    sandbox.stop(timeout=timeout)
    return f"stopped the sandbox server in {root} (pid {pid}); its data stays for the next start"


def previous_baseline(
    journals: Path, exclude: Path | None = None
) -> tuple[str, dict[str, str | None]] | None:
    """The newest journal in ``journals`` (not ``exclude``) and the knob values it
    started from (its first ``knobs`` event), or None when there is none to read."""
    from knobtop.journal.events import Knobs
    from knobtop.journal.reader import JournalReader

    try:
        found = [p for p in journals.glob("*.knobtop.jsonl") if p != exclude]
        newest = sorted(found, key=lambda p: p.stat().st_mtime)
    except OSError:
        return None
    for path in reversed(newest):
        try:
            for event in JournalReader(path).events():
                if isinstance(event, Knobs):
                    return path.name, dict(event.values)
        except (OSError, ValueError):
            continue  # unreadable or not a journal: try the one before
    return None


def native_password_hash(password: str) -> str:
    """The mysql_native_password hash of ``password`` (what ``PASSWORD()`` returns):
    ``*`` and SHA1(SHA1(password)) in upper-case hex, only [*0-9A-F]: safe in a literal."""
    inner = hashlib.sha1(password.encode()).digest()
    return "*" + hashlib.sha1(inner).hexdigest().upper()


def main(argv: list[str] | None = None) -> int:
    """``python -m knobtop.lab restart DIR``: the lab's restart command for static knobs."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] != "restart":
        print("usage: python -m knobtop.lab restart DIR", file=sys.stderr)
        return 2
    try:
        sandbox = Sandbox.existing(Path(args[1]))
        sandbox.restart()
    except LabError as exc:
        print(f"knobtop lab: {exc}", file=sys.stderr)
        return 1
    return 0


# What other modules take from here (some defined beside it, in lab_options and labdirs).
__all__ = ["LABS", "LAB_DB", "LAB_USER", "LabError", "Sandbox", "check_option",
           "configured_options", "configured_plugins", "default_lab_dir", "find_program",
           "free_port", "lab_dir_for", "missing_plugin", "native_password_hash",
           "parse_option", "previous_baseline", "server_plugin_dir", "session_lock", "stop_lab"]

if __name__ == "__main__":
    sys.exit(main())
