"""SshHost: the Host protocol over one multiplexed asyncssh connection per destination."""
# Over 500 lines: the SSH host, its key policy, jump hosts and the /proc channel share
# one connection and its reconnect rules.

from __future__ import annotations

import asyncio
import contextlib
import enum
import errno
import getpass
import os
import secrets
import shlex
import shutil
import sys
import tempfile
import time
from collections import deque
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PurePosixPath
from typing import Any, cast

import asyncssh

from knobtop.hosts import execfiles
from knobtop.hosts.base import HOST_CPU_FIELDS, CommandResult, HostError
from knobtop.hosts.base import parse_destination as base_parse_destination
from knobtop.hosts.names import check_resolves, config_line
from knobtop.hosts.procstat import SNAPSHOT_END, USER_HZ, ProcParseError, parse_proc_snapshot

BACKOFF_FIRST = 0.5
BACKOFF_MAX = 5.0
OP_LIMIT = 60.0  # bound for file operations and other short exchanges
CLEANUP_LIMIT = 5.0  # bound for tidying up after a failed, timed-out or cancelled operation
DEFAULT_GRACE_TENTHS = 30  # what the watchdog waits between TERM and KILL if nobody says

# Every remote command runs under this POSIX sh wrapper. OpenSSH starts each session's
# command as a session (and process group) leader, and ``exec`` keeps that pid, so ``$$`` is
# the process group of the command and everything it starts. The wrapper prints that pid as
# the first stdout line, runs the command with stdin from /dev/null, and leaves a watchdog
# reading the channel's stdin: on EOF (stop() sends one; a closed channel or a dropped
# connection gives one) it sends TERM to the whole group, waits up to the grace (tenths of a
# second, an optional first stdin line) while the command lives, then sends KILL, so also
# anything the command left behind in its group dies.
_WRAPPER = (
    'exec 3<&0 </dev/null; echo "$$"; "$@" 3<&- & c=$!; '
    # alive: $c exists and is not a zombie (an unreaped zombie must not hold us up)
    'alive() { kill -0 "$c" && { s=; read -r s <"/proc/$c/stat"; s=${s##*) }; '
    '[ "${s%% *}" != Z ]; }; }; '
    "{ trap '' TERM; n=; read -r n <&3; cat <&3 >/dev/null; "
    f'case "$n" in ""|*[!0-9]*) n={DEFAULT_GRACE_TENTHS};; esac; '
    'kill -TERM -$$; i=0; while [ "$i" -lt "$n" ] && alive; do '
    "sleep 0.1; i=$((i+1)); done; kill -KILL -$$; } >/dev/null 2>&1 & "
    'exec 3<&-; wait "$c"'
)

_METRICS_SCRIPT = (
    'echo "@@hz $(getconf CLK_TCK 2>/dev/null || echo 100)"; '
    "while :; do for f in stat meminfo diskstats loadavg; do "
    'echo "@@$f"; cat "/proc/$f" || exit 1; done; '
    f'echo {SNAPSHOT_END}; sleep "$1" || exit 1; done'
)


def wrap_command(argv: Sequence[str]) -> str:
    """The command line sent to the remote login shell for ``argv``."""
    if not argv:
        raise ValueError("empty argv")
    return f"exec sh -c {shlex.quote(_WRAPPER)} knobtop {shlex.join(argv)}"


class HostKeyError(HostError):
    """The server's host key is unknown or differs from the one in known_hosts."""


class _Default(enum.Enum):
    TOKEN = 0


DEFAULT = _Default.TOKEN


def parse_destination(destination: str) -> tuple[str | None, str, int | None]:
    """``base.parse_destination``, with its complaint as a HostError."""
    try:
        return base_parse_destination(destination)
    except ValueError as exc:
        raise HostError(f"SSH destination: {exc}") from None


def _host_port(host: str, port: int | None) -> str:
    return host if port in (None, 22) else f"[{host}]:{port}"


def _known_hosts_files(text: list[str] | tuple[str, ...] | None) -> list[Path]:
    """The UserKnownHostsFile entries of an ssh config (``none`` dropped), expanded."""
    return [Path(p).expanduser() for p in text or () if p.lower() != "none"]


@dataclass
class _KeyCheck:
    """Host-key verdict for one connection attempt, filled by asyncssh's callbacks.

    ``files[0]`` is where ``--accept-new`` records; every file is searched, as OpenSSH
    searches every UserKnownHostsFile."""

    files: list[Path]
    accept_new: bool
    host: str = ""
    port: int | None = None
    had_keys: bool = False
    verdict: str = ""  # "unknown" | "changed" | "pending" | "accepted"
    server_key: asyncssh.SSHKey | None = None

    @property
    def known_hosts(self) -> Path:
        return self.files[0]

    def lookup(self, host: str, addr: str, port: int | None) -> Any:
        # OpenSSH looks a non-22 port up as "[host]:port" only; asyncssh would fall back to
        # the bare host, trusting a key recorded for another service on the same machine.
        # Asking asyncssh about the bracketed name (and address) with no port gives
        # OpenSSH's lookup (hashed entries hash that same string).
        self.host, self.port = host, port
        files = [str(p) for p in self.files if p.exists()]
        if not files:
            return ((), (), ())
        names = dict.fromkeys(_host_port(n, port) for n in (host, addr) if n)
        try:
            parts = [asyncssh.match_known_hosts(files, name, "", None) for name in names]
        except (OSError, ValueError) as exc:
            raise HostError(
                f"cannot read known_hosts file {', '.join(files)}: {exc}"
            ) from exc
        result = tuple([item for part in parts for item in part[i]] for i in range(7))
        self.had_keys = bool(result[0]) or bool(result[1])
        return result

    def validate(self, host: str, port: int, key: asyncssh.SSHKey) -> bool:
        """Called only for a key known_hosts does not vouch for."""
        self.server_key = key
        if self.had_keys:
            self.verdict = "changed"
            return False
        if not self.accept_new:
            self.verdict = "unknown"
            return False
        # asyncssh asks this before it checks the server's signature over the key
        # exchange: the server has not yet proved it holds this key, so nothing is written
        # here. ``record`` runs once the connection is up (exchange verified, login done):
        # a handshake that dies, and a login that fails, leave known_hosts untouched.
        self.verdict = "pending"
        return True

    def record(self) -> None:
        """Append the key accepted by ``validate`` (call after the handshake succeeded)."""
        if self.verdict != "pending" or self.server_key is None:
            return
        key = self.server_key.export_public_key("openssh").decode().strip()
        line = f"{_host_port(self.host, self.port)} {key}\n"
        self.known_hosts.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(self.known_hosts, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        with os.fdopen(fd, "a") as fh:
            fh.write(line)
        self.verdict = "accepted"

    def error(self, label: str) -> HostKeyError:
        where = f"{self.host}:{self.port or 22}"
        if self.server_key is None:
            return HostKeyError(f"{label}: the server's host key was refused (revoked?)")
        fp = self.server_key.get_fingerprint("sha256")
        kind = self.server_key.get_algorithm()
        known = shlex.quote(str(self.known_hosts))
        if self.verdict == "changed":
            return HostKeyError(
                f"{where}: host key CHANGED: the server now offers {kind} {fp}, but "
                f"{self.known_hosts} holds a different key for it. This is a possible "
                "man-in-the-middle attack (or the host was reinstalled). Verify the new "
                "fingerprint out of band; only then remove the old entry with "
                f"`ssh-keygen -R {shlex.quote(_host_port(self.host, self.port))} -f {known}` "
                "and connect again. --accept-new does not override a changed key."
            )
        port_opt = f"-p {self.port} " if self.port not in (None, 22) else ""
        return HostKeyError(
            f"{where}: unknown host key {kind} {fp}. Verify that fingerprint on the server "
            "(ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub), then trust it with "
            f"`ssh-keyscan {port_opt}{shlex.quote(self.host)} >> {known}`, "
            "or rerun with --accept-new."
        )


def _connect_error(
    exc: BaseException,
    check: _KeyCheck,
    label: str,
    where: str,
    resolved: asyncssh.SSHClientConnectionOptions,
    timeout: float,
    step: str = "connecting",
) -> BaseException:
    """What a failed ``create_connection`` means, as a HostError naming the fix."""
    if isinstance(exc, asyncssh.HostKeyNotVerifiable):
        return check.error(label)
    if isinstance(exc, asyncssh.KeyExchangeFailed) and check.server_key is not None:
        return HostKeyError(
            f"{label}: the key exchange failed after the server offered host key "
            f"{check.server_key.get_fingerprint('sha256')} ({exc.reason}): it did not prove "
            "it holds that key (a man-in-the-middle, or a broken server). Nothing was "
            "recorded in known_hosts."
        )
    if isinstance(exc, asyncssh.PermissionDenied):
        port_opt = f"-p {resolved.port} " if resolved.port != 22 else ""
        return HostError(
            f"{label}: authentication failed, the server accepted none of the offered keys. "
            f"Install your public key there (ssh-copy-id {port_opt}{resolved.username}@"
            f"{resolved.host}), pass the right identity file, or add it to ssh-agent "
            "(ssh-add)."
        )
    if isinstance(exc, TimeoutError):
        return HostError(
            f"{where}: no SSH answer within {timeout:g} s (host down, firewall, or wrong port?)"
        )
    if isinstance(exc, HostError):
        return exc
    if isinstance(exc, asyncssh.Error):
        return HostError(f"{label}: SSH connection failed while {step}: {exc.reason}"
                         + _LOST_FIX.get(step, ""))
    if isinstance(exc, ConnectionRefusedError):
        return HostError(
            f"{where}: connection refused: the host answered, but nothing listens on port "
            f"{resolved.port}. Check that sshd runs there (systemctl status ssh) and on that "
            "port (Port in its sshd_config; the port in the profile's ssh = \"user@host:port\""
            " or your ssh config)"
        )
    if isinstance(exc, OSError) and exc.errno in (errno.EHOSTUNREACH, errno.ENETUNREACH):
        return HostError(
            f"{where}: unreachable ({exc.strerror}): no route from this machine to that "
            "address. Check the address, this machine's network or VPN (ip route get "
            f"{resolved.host}), or reach it through a jump host (jump = ... in the profile)"
        )
    if isinstance(exc, OSError) and step != "connecting":
        return HostError(f"{label}: SSH connection failed while {step}: "
                         f"{exc.strerror or exc}" + _LOST_FIX.get(step, ""))
    if isinstance(exc, OSError):
        return HostError(
            f"{where}: cannot connect ({exc.strerror or exc}); is sshd running there "
            "and the port open?"
        )
    return exc


# What to check when the connection dropped at each step of opening it.
_LOST_FIX = {
    "exchanging keys": " (the server closed it before its host key: sshd's MaxStartups, "
    "a firewall or a tcp wrapper refusing this address; see the server's sshd log)",
    "authenticating": " (the server closed it during login: too many keys offered "
    "(MaxAuthTries; pass -i FILE), or a login it refuses; see the server's sshd log)",
    "opening the session": " (after login: the account's shell or a ForceCommand ended "
    "it; see the server's sshd log)",
}


_KEYS_LOADED: dict[str, list[asyncssh.SSHKeyPair]] = {}


def _load_key_file(path: Path) -> list[asyncssh.SSHKeyPair]:
    """One ``-i`` identity file (and its ``-cert.pub``), asking for a passphrase on a
    terminal; raises HostError naming the file and the fix.  Blocking: run in a thread."""
    path = path.expanduser()
    if not path.is_file():
        raise HostError(f"no such key file {path} (check the -i / --identity path)")
    try:
        return list(asyncssh.load_keypairs([str(path)]))
    except OSError as exc:
        raise HostError(f"cannot read key file {path}: {exc.strerror or exc}") from None
    except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError) as exc:
        if "assphrase" not in str(exc):
            raise HostError(f"key file {path}: not a private key knobtop can read: {exc}") from None
    if not sys.stdin.isatty():
        raise HostError(
            f"key file {path} is encrypted and there is no terminal to ask for its "
            f"passphrase: load it into ssh-agent (ssh-add {shlex.quote(str(path))}) and run "
            "again without -i for it, or run knobtop from a terminal"
        )
    passphrase = getpass.getpass(f"Passphrase for key {path}: ")
    try:
        return list(asyncssh.load_keypairs([str(path)], passphrase))
    except (asyncssh.KeyImportError, asyncssh.KeyEncryptionError) as exc:
        hint = (
            "knobtop cannot decrypt OpenSSH-format keys here (the Python package bcrypt "
            "is missing)" if "bcrypt" in str(exc) else f"wrong passphrase? ({exc})"
        )
        raise HostError(
            f"key file {path}: {hint}; load it into ssh-agent "
            f"(ssh-add {shlex.quote(str(path))}) and run again without -i for it"
        ) from None


class _Client(asyncssh.SSHClient):
    def __init__(self, check: _KeyCheck, on_lost: Callable[[object, Exception | None], None]):
        self._check = check
        self._on_lost = on_lost
        self._conn: object = None
        self.step = "connecting"  # how far opening the connection got, for its errors

    def connection_made(self, conn: asyncssh.SSHClientConnection) -> None:
        self._conn = conn
        self.step = "exchanging keys"

    def begin_auth(self, username: str) -> None:
        self.step = "authenticating"

    def auth_completed(self) -> None:
        self.step = "opening the session"

    def connection_lost(self, exc: Exception | None) -> None:
        self._on_lost(self._conn, exc)

    def validate_host_public_key(
        self, host: str, addr: str, port: int, key: asyncssh.SSHKey
    ) -> bool:
        return self._check.validate(host, port, key)


_CONN_ERRORS = (asyncssh.Error, OSError, EOFError)


class SshProcess:
    """A remote command whose stdout is read as lines; stderr is kept (last lines)."""

    def __init__(
        self,
        host: SshHost,
        proc: asyncssh.SSHClientProcess[bytes],
        argv: Sequence[str],
        pid: int | None,
    ) -> None:
        self._host = host
        self._proc = proc
        self.argv = tuple(argv)
        self._pid = pid
        # What reading its output is, as a lost link names it ("streaming 'sysbench'")
        self.label = f"streaming '{self.argv[0]}'"
        self._stderr: deque[str] = deque(maxlen=40)
        self._stderr_task = asyncio.ensure_future(self._drain_stderr())

    @property
    def pid(self) -> int | None:
        """The remote pid of the wrapper shell: the process group of the command."""
        return self._pid

    @property
    def stderr_tail(self) -> str:
        return "".join(self._stderr)

    @property
    def returncode(self) -> int | None:
        return self._proc.returncode

    async def _drain_stderr(self) -> None:
        with contextlib.suppress(*_CONN_ERRORS):
            async for raw in self._proc.stderr:
                self._stderr.append(raw.decode(errors="replace"))

    async def lines(self) -> AsyncIterator[str]:
        try:
            with self._host.in_flight(self.label):
                async for raw in self._proc.stdout:
                    yield raw.decode(errors="replace").rstrip("\r\n")
        except _CONN_ERRORS as exc:
            raise HostError(f"{self._host.name}: lost output of '{self.argv[0]}': {exc}") from exc

    async def wait(self) -> int:
        try:
            await self._proc.wait()
        except _CONN_ERRORS as exc:
            raise HostError(f"{self._host.name}: lost '{self.argv[0]}': {exc}") from exc
        with contextlib.suppress(asyncio.CancelledError):
            await self._stderr_task
        rc = self._proc.returncode
        if rc is None:
            raise HostError(
                f"{self._host.name}: connection lost while '{self.argv[0]}' ran; "
                "its remote watchdog ends it"
            )
        return rc

    async def stop(self, grace: float = 3.0) -> int | None:
        """TERM the remote process group, KILL it after ``grace`` seconds."""
        if self._proc.returncode is not None:
            return self._proc.returncode
        with contextlib.suppress(*_CONN_ERRORS):
            self._proc.stdin.write(f"{max(1, round(grace * 10))}\n".encode())
            self._proc.stdin.write_eof()
        try:
            async with asyncio.timeout(grace + 2.0):
                return await self.wait()
        except TimeoutError:
            pass
        except HostError:
            return None
        if self._pid is not None:
            with contextlib.suppress(HostError):
                await self._host.run(["sh", "-c", f"kill -KILL -{self._pid}"], limit=5.0)
        self._proc.close()
        try:
            async with asyncio.timeout(2.0):
                return await self.wait()
        except (TimeoutError, HostError):
            return self._proc.returncode


@dataclass
class _Metrics:
    interval: float
    task: asyncio.Task[None] | None = None
    sample: list[float] | None = None
    seq: int = 0
    event: asyncio.Event = field(default_factory=asyncio.Event)


class SshHost:
    """A remote machine reached over SSH: one connection, many channels."""

    local = False

    def __init__(
        self,
        destination: str,
        *,
        name: str | None = None,
        port: int | None = None,
        username: str | None = None,
        client_keys: list[str] | None = None,
        known_hosts: str | None = None,
        accept_new: bool = False,
        jump: str | None = None,
        config_paths: list[str] | None = None,
        agent_path: str | _Default | None = DEFAULT,
        connect_timeout: float = 10.0,
        on_state: Callable[[str, str], None] | None = None,
        origin: str = "",
    ) -> None:
        user, host, dest_port = parse_destination(destination)
        self.destination = destination
        self.name = name or destination
        self._host = host
        self._port = port if port is not None else dest_port
        self._username = username if username is not None else user
        self._client_keys = client_keys
        # None: the ssh config's UserKnownHostsFile for each host, else ~/.ssh/known_hosts
        self._known_hosts_arg = Path(known_hosts).expanduser() if known_hosts else None
        self.known_hosts = self._known_hosts_arg or Path("~/.ssh/known_hosts").expanduser()
        self.accept_new = accept_new
        self.jump = jump
        self._config = config_paths
        self._agent_path = agent_path
        self.connect_timeout = connect_timeout
        self.on_state = on_state
        self.origin = origin  # where the destination was written, for errors
        self._conn: asyncssh.SSHClientConnection | None = None
        self._jump_conn: asyncssh.SSHClientConnection | None = None
        self._sftp: tuple[asyncssh.SSHClientConnection, asyncssh.SFTPClient] | None = None
        # How files are read and written: "sftp", or "exec" (cat, and a write to a temporary
        # name then mv) when the sshd has no SFTP subsystem; tried once, at the first connect.
        self.files: str | None = None
        self.sudo = False  # a profile's restart or drop-in on this host goes through sudo -n
        self.user = ""  # the remote login, once connected
        self.drops = 0  # connections lost (not closed by knobtop): a static change checks it
        self._lock = asyncio.Lock()
        self._state = "new"
        self._down_reason = ""
        self._doing: dict[int, str] = {}  # in_flight: what each operation under way is
        self._doing_seq = 0
        self._next_try = 0.0
        self._backoff = BACKOFF_FIRST
        self._closed = False
        self._metrics: _Metrics | None = None
        self._forwards: dict[tuple[int, str | None, int | None, str | None], str] = {}
        self._tunnel_dir: str | None = None
        self._tunnel_seq = 0
        self._keypairs: list[asyncssh.SSHKeyPair] | None = None

    # -- connection --------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._conn is not None

    def _set_state(self, state: str, reason: str) -> None:
        if state == self._state:
            return
        self._state = state
        self._down_reason = reason
        if self.on_state is not None:
            self.on_state(state, reason)

    def _lost(self, conn: object, exc: Exception | None) -> None:
        if conn is None or conn is not self._conn:
            return
        self._conn = None
        self._sftp = None
        self.drops += 1
        if self._jump_conn is not None:
            self._jump_conn.close()
            self._jump_conn = None
        self._next_try = 0.0  # the first reconnect attempt may happen at once
        self._backoff = BACKOFF_FIRST
        cause = str(exc) if exc else "connection closed by the server"
        doing = list(dict.fromkeys(self._doing.values()))  # what the link was lost during
        self._set_state("down", f"{cause} while {', '.join(doing)}" if doing else cause)

    @contextlib.contextmanager
    def in_flight(self, label: str) -> Iterator[None]:
        """``label`` ("running 'sysbench'", "writing /etc/...") is what this host is doing
        until the block ends: a link lost meanwhile says so in its reason."""
        self._doing_seq += 1
        token = self._doing_seq
        self._doing[token] = label
        try:
            yield
        finally:
            self._doing.pop(token, None)

    def _options(self, host: str, port: int | None, username: str | None) -> dict[str, Any]:
        opts: dict[str, Any] = {
            "config": self._config if self._config is not None else (),
            "connect_timeout": self.connect_timeout,
            "keepalive_interval": 10,
            "keepalive_count_max": 3,
        }
        if port is not None:
            opts["port"] = port
        if username is not None:
            opts["username"] = username
        if self._agent_path is not DEFAULT:
            opts["agent_path"] = self._agent_path
        return opts

    async def _identities(self) -> list[asyncssh.SSHKeyPair] | None:
        """The ``-i`` keys, loaded once; a missing or encrypted file is named here rather
        than surfacing as an unreachable host or a failed login."""
        if self._client_keys is None:
            return None
        if self._keypairs is None:
            pairs: list[asyncssh.SSHKeyPair] = []
            for path in self._client_keys:
                # Process-wide: `connect` checks with one set of hosts and then runs the
                # session with fresh ones; the passphrase is asked for once, before any UI.
                loaded = _KEYS_LOADED.get(path)
                if loaded is None:
                    loaded = await asyncio.to_thread(_load_key_file, Path(path))
                    _KEYS_LOADED[path] = loaded
                pairs.extend(loaded)
            self._keypairs = pairs
        return self._keypairs

    def _key_files(self, resolved: asyncssh.SSHClientConnectionOptions) -> list[Path]:
        if self._known_hosts_arg is not None:
            return [self._known_hosts_arg]
        config = getattr(resolved, "config", None)
        files = _known_hosts_files(config.get("UserKnownHostsFile", None) if config else None)
        return files or [self.known_hosts]

    async def _open(
        self,
        host: str,
        port: int | None,
        username: str | None,
        on_lost: Callable[[object, Exception | None], None],
        *,
        jump: str | None = None,
        tunnel: asyncssh.SSHClientConnection | None = None,
        depth: int = 0,
    ) -> tuple[asyncssh.SSHClientConnection, asyncssh.SSHClientConnection | None]:
        """Connect to ``host`` over ``tunnel``, else through ``jump`` or the ProxyJump the
        ssh config gives it; return the connection and the jump connection it runs over
        (closing that closes the whole chain)."""
        opts = self._options(host, port, username)
        try:
            resolved = asyncssh.SSHClientConnectionOptions(
                host=host,
                **{**opts, "client_keys": None, "agent_path": None, "known_hosts": None},
            )
            where = f"{resolved.host}:{resolved.port}"
            label = f"{resolved.username}@{where}"
        except (asyncssh.Error, OSError, ValueError) as exc:
            raise HostError(f"{host}: bad SSH options or ~/.ssh/config: {exc}") from exc
        configured = resolved.tunnel
        if jump is None and isinstance(configured, str) and configured.lower() != "none":
            jump = configured  # ProxyJump from ssh config: opened here, under our policy
        keys = await self._identities()
        if keys is not None:
            opts["client_keys"] = keys
        if tunnel is None and jump:
            tunnel = await self._open_jumps(jump, depth)
        # Always say which tunnel (None: direct), so asyncssh never opens a ProxyJump of
        # its own with its own host-key policy.
        opts["tunnel"] = tunnel
        if jump and tunnel is not None:
            label += f" (via jump host {jump})"
        check = _KeyCheck(self._key_files(resolved), self.accept_new)
        clients: list[_Client] = []

        def client() -> _Client:
            clients.append(_Client(check, on_lost))
            return clients[-1]

        try:
            if tunnel is None:  # over a jump host, the jump host resolves the name
                await check_resolves(resolved.host, resolved.port, self._origin_of(host, resolved))
            async with asyncio.timeout(self.connect_timeout + 5.0):
                conn, _ = await asyncssh.create_connection(
                    client, host, known_hosts=check.lookup, **opts
                )
        except BaseException as exc:
            if tunnel is not None:
                tunnel.close()
            step = clients[-1].step if clients else "connecting"
            raise _connect_error(exc, check, label, where, resolved, self.connect_timeout,
                                 step) from None
        try:
            check.record()
        except OSError as exc:
            conn.close()
            if tunnel is not None:
                tunnel.close()
            raise HostError(
                f"{label}: cannot record its host key in {check.known_hosts}: "
                f"{exc.strerror or exc}; fix that file's directory or pass --known-hosts FILE"
            ) from None
        return conn, tunnel

    def _origin_of(self, host: str, resolved: asyncssh.SSHClientConnectionOptions) -> str:
        """Where ``resolved.host`` came from: the ssh config's HostName for ``host``, the
        profile (``origin``), or a jump host's name."""
        said = [self.origin] if host == self._host and self.origin else []
        if host != self._host:
            said.append(f"jump host {host}")
        if resolved.host != host:
            files = [Path(p) for p in self._config] if self._config is not None else \
                [Path("~/.ssh/config")]
            said.append(config_line(files, host, resolved.host)
                        or f"HostName of Host {host} in the ssh config")
        return "; ".join(said)

    async def _open_jumps(self, jumps: str, depth: int) -> asyncssh.SSHClientConnection:
        """Open the ``ProxyJump`` chain ``a,b,...``; errors name the jump host."""
        if depth > 4:
            raise HostError(f"jump host {jumps}: ProxyJump chain too deep (a loop in ssh config?)")
        conn: asyncssh.SSHClientConnection | None = None
        for hop in jumps.split(","):
            hop = hop.strip()
            try:
                juser, jhost, jport = parse_destination(hop)
                prev = conn
                conn, _ = await self._open(
                    jhost, jport, juser, lambda _c, _e: None, tunnel=prev, depth=depth + 1
                )
                if prev is not None:
                    conn.set_tunnel(prev)  # closing the last hop closes the chain
            except HostError as exc:
                if conn is not None:
                    conn.close()
                raise type(exc)(f"jump host {hop}: {exc}") from None
        assert conn is not None
        return conn

    async def _connect(self) -> asyncssh.SSHClientConnection:
        conn, tunnel = await self._open(
            self._host, self._port, self._username, self._lost, jump=self.jump
        )
        self._jump_conn = tunnel
        return conn

    async def _ensure(self) -> asyncssh.SSHClientConnection:
        async with self._lock:
            if self._closed:
                raise HostError(f"{self.name}: host is closed")
            if self._conn is not None:
                return self._conn
            wait = self._next_try - time.monotonic()
            if wait > 0:
                raise HostError(
                    f"{self.name}: SSH connection down ({self._down_reason}); "
                    f"next reconnect attempt in {wait:.1f} s"
                )
            try:
                conn = await self._connect()
            except HostError as exc:
                self._next_try = time.monotonic() + self._backoff
                self._backoff = min(self._backoff * 2, BACKOFF_MAX)
                self._set_state("down", str(exc))
                self._down_reason = str(exc)
                raise
            self._conn = conn
            self._backoff = BACKOFF_FIRST
            self._next_try = 0.0
            self.user = str(conn.get_extra_info("username") or "")
            if self.files is None:
                self.files = await self._probe_sftp(conn)
            self._set_state("up", "")
            return conn

    async def _probe_sftp(self, conn: asyncssh.SSHClientConnection) -> str | None:
        """Whether the host's sshd has the SFTP subsystem ("sftp"), else "exec"; None when
        the connection went meanwhile (the next connect asks again)."""
        try:
            async with asyncio.timeout(OP_LIMIT):
                sftp = await conn.start_sftp_client()
        except TimeoutError:
            return "exec"  # a hung SFTP start would hang every write; commands work anyway
        except (asyncssh.DisconnectError, OSError, EOFError):
            return None
        except asyncssh.Error:
            return "exec"  # "subsystem request failed": no Subsystem sftp in sshd_config
        sftp.exit()
        return "sftp"

    async def connect(self) -> None:
        """Connect now (otherwise the first call does); raises HostError with the fix."""
        await self._ensure()

    @contextlib.contextmanager
    def _errors(self, what: str) -> Iterator[None]:
        try:
            yield
        except HostError:
            raise
        except asyncssh.SFTPNoSuchFile as exc:
            raise FileNotFoundError(errno.ENOENT, f"{self.name}: {what}: {exc.reason}") from exc
        except asyncssh.SFTPPermissionDenied as exc:
            raise PermissionError(errno.EACCES, f"{self.name}: {what}: {exc.reason}") from exc
        except asyncssh.SFTPError as exc:
            raise HostError(f"{self.name}: {what}: {exc.reason}") from exc
        except _CONN_ERRORS as exc:
            raise HostError(f"{self.name}: {what}: {exc}") from exc

    # -- tunnels -----------------------------------------------------------------

    async def forward(
        self, *, host: str | None = None, port: int | None = None, path: str | None = None
    ) -> str:
        """A unix socket here that reaches ``host:port`` (or the unix socket ``path``) as
        seen from this host.  The socket sits in a private 0700 directory of this user,
        so other local users cannot ride the tunnel (a 127.0.0.1 port would let them).
        Listeners die with their connection, so after a reconnect the next call makes
        a new one."""
        if path is None and (host is None or port is None):
            raise ValueError("forward needs host and port, or path")
        conn = await self._ensure()
        key = (id(conn), host, port, path)
        known = self._forwards.get(key)
        if known is not None:
            return known
        if self._tunnel_dir is None:
            # mode 0700; a unix socket path must stay under ~108 bytes, so a long $TMPDIR
            # gives way to /tmp
            base = tempfile.gettempdir()
            self._tunnel_dir = tempfile.mkdtemp(
                prefix="knobtop-ssh-", dir=base if len(base) <= 64 else "/tmp"
            )
        self._tunnel_seq += 1
        local = os.path.join(self._tunnel_dir, f"tunnel-{self._tunnel_seq}.sock")
        what = f"tunnel to {path or f'{host}:{port}'}"
        with self._errors(what), self.in_flight(f"opening a {what}"):
            if path is not None:
                await conn.forward_local_path(local, path)
            else:
                assert host is not None and port is not None
                await conn.forward_local_path_to_port(local, host, port)
        for old_key, old in list(self._forwards.items()):
            if old_key[0] != id(conn):  # its connection (and listener) is gone
                del self._forwards[old_key]
                with contextlib.suppress(OSError):
                    os.unlink(old)
        self._forwards[key] = local
        return local

    # -- commands ----------------------------------------------------------------

    async def _start(self, argv: Sequence[str]) -> tuple[asyncssh.SSHClientProcess[bytes], int]:
        conn = await self._ensure()
        with self._errors(f"cannot start '{argv[0]}'"):
            proc: asyncssh.SSHClientProcess[bytes] = await conn.create_process(
                wrap_command(argv), encoding=None
            )
            try:
                async with asyncio.timeout(OP_LIMIT):
                    first = await proc.stdout.readline()
            except BaseException:
                proc.close()  # timed out or cancelled: no channel left open behind it
                raise
        try:
            pid = int(first)
        except ValueError:
            proc.close()
            raise HostError(
                f"{self.name}: remote command wrapper did not start (need a POSIX sh): {first!r}"
            ) from None
        return proc, pid

    async def run(self, argv: Sequence[str], *, limit: float = 60.0) -> CommandResult:
        """Run ``argv`` to its end; ``limit`` bounds the whole call: (re)connecting and
        opening the channel too, which a hung connection would otherwise hold until
        keepalive gives up on it."""
        proc: asyncssh.SSHClientProcess[bytes] | None = None
        try:
            async with asyncio.timeout(limit):
                with self.in_flight(f"running '{argv[0]}'"):
                    proc, _ = await self._start(argv)
                    with self._errors(f"'{argv[0]}' failed"):
                        out, err = await proc.communicate()
        except TimeoutError:
            if proc is not None:
                proc.close()  # the watchdog sees EOF and ends the remote process group
            raise HostError(
                f"{self.name}: '{' '.join(argv[:2])}' did not finish within {limit:.0f} s"
            ) from None
        rc = proc.returncode
        if rc is None:
            raise HostError(f"{self.name}: connection lost while '{argv[0]}' ran")
        stdout = (out or b"").decode(errors="replace")
        stderr = (err or b"").decode(errors="replace")
        if rc == 127 and stderr.rstrip().endswith("not found"):
            raise HostError(f"{self.name}: '{argv[0]}' is not installed or not on PATH")
        return CommandResult(tuple(argv), rc, stdout, stderr)

    async def stream(self, argv: Sequence[str]) -> SshProcess:
        proc, pid = await self._start(argv)
        return SshProcess(self, proc, argv, pid)

    async def which(self, program: str) -> str | None:
        result = await self.run(
            ["sh", "-c", 'PATH="$PATH:/usr/sbin:/sbin"; command -v "$1"', "sh", program],
            limit=OP_LIMIT,
        )
        found = result.stdout.strip()
        return found if result.returncode == 0 and found.startswith("/") else None

    # -- files -------------------------------------------------------------------

    async def _sftp_client(self) -> asyncssh.SFTPClient:
        conn = await self._ensure()
        if self._sftp is not None and self._sftp[0] is conn:
            return self._sftp[1]
        try:
            async with asyncio.timeout(OP_LIMIT):
                with self._errors("cannot start SFTP (is the sftp subsystem enabled?)"):
                    sftp = await conn.start_sftp_client()
        except TimeoutError:
            raise HostError(
                f"{self.name}: SFTP did not start within {OP_LIMIT:g} s (connection hung?)"
            ) from None
        self._sftp = (conn, sftp)
        return sftp

    async def read_file(self, path: PurePath, *, sudo: bool = False) -> bytes:
        """The file's bytes: over SFTP, or ``cat`` where there is none (or with ``sudo``)."""
        await self._ensure()
        if sudo or self.files == "exec":
            return await self._exec_file(execfiles.read_command(str(path), sudo=sudo), None,
                                         f"cannot read {path}")
        sftp = await self._sftp_client()
        with self._errors(f"cannot read {path}"), self.in_flight(f"reading {path}"):
            async with asyncio.timeout(OP_LIMIT), sftp.open(str(path), "rb", encoding=None) as fh:
                data = await fh.read()
        return cast(bytes, data)

    async def _exec_file(self, command: str, data: bytes | None, what: str) -> bytes:
        """Run one file script on the exec channel, ``data`` as its stdin, within OP_LIMIT;
        its stdout, or the OSError/HostError its failure means."""
        conn = await self._ensure()
        proc: asyncssh.SSHClientProcess[bytes] | None = None
        try:
            async with asyncio.timeout(OP_LIMIT):
                doing = what.replace("cannot read", "reading", 1).replace(
                    "cannot write", "writing", 1)
                with self._errors(what), self.in_flight(doing):
                    proc = await conn.create_process(command, encoding=None)
                    out, err = await proc.communicate(data if data is not None else b"")
        except TimeoutError:
            raise HostError(f"{self.name}: {what}: no answer within {OP_LIMIT:g} s") from None
        finally:
            if proc is not None:
                proc.close()
        result = execfiles.ExecResult(proc.returncode, out or b"",
                                      (err or b"").decode(errors="replace"))
        if result.returncode == 0:
            return result.stdout
        if result.returncode is None:
            raise HostError(f"{self.name}: {what}: the connection was lost")
        if execfiles.wants_password(result.stderr):
            raise HostError(execfiles.sudo_fix(self.user or "this user", self.name,
                                               ["sh -c (knobtop's file scripts)"]))
        problem = execfiles.file_error(self.name, what, result)
        if problem is not None:
            raise problem
        raise HostError(f"{self.name}: {what}: {result.stderr.strip()[-300:] or 'failed'} "
                        f"(exit {result.returncode})")

    async def write_file_atomic(
        self, path: PurePath, data: bytes, mode: int = 0o600, *, sudo: bool = False
    ) -> None:
        """Write a temp file in the same directory, chmod, keep the old one as NAME.prev
        (hard link), then rename over: readers never see half a file.  Over SFTP, or by
        the exec channel's write script where there is none (or with ``sudo``)."""
        target = PurePosixPath(path)
        tmp = str(target.parent / f".{target.name}.{secrets.token_hex(4)}")
        prev = str(target.parent / f"{target.name}.prev")
        await self._ensure()
        if sudo or self.files == "exec":
            await self._exec_file(
                execfiles.write_command(str(target), tmp, prev, mode, sudo=sudo), data,
                f"cannot write {path}")
            return
        sftp = await self._sftp_client()
        with self._errors(f"cannot write {path}"), self.in_flight(f"writing {path}"):
            async with asyncio.timeout(OP_LIMIT):
                await sftp.makedirs(str(target.parent), exist_ok=True)
                fh: asyncssh.SFTPClientFile | None = None
                try:
                    attrs = asyncssh.SFTPAttrs(permissions=mode)
                    fh = await sftp.open(tmp, "wb", attrs, encoding=None)
                    await fh.write(data)
                    with contextlib.suppress(asyncssh.SFTPOpUnsupported):
                        await fh.fsync()
                    await fh.close()
                    await sftp.chmod(tmp, mode)
                    if await sftp.exists(str(target)):
                        with contextlib.suppress(asyncssh.SFTPNoSuchFile):
                            await sftp.remove(prev)
                        await sftp.link(str(target), prev)
                    await sftp.posix_rename(tmp, str(target))
                except BaseException:
                    # timed out, cancelled or failed: tidy up, but on a hung connection
                    # not for longer than CLEANUP_LIMIT (the caller's deadline has passed)
                    with contextlib.suppress(*_CONN_ERRORS):
                        async with asyncio.timeout(CLEANUP_LIMIT):
                            if fh is not None:
                                await fh.close()  # a no-op once closed
                            await sftp.remove(tmp)
                    raise

    # -- OS metrics --------------------------------------------------------------

    def start_os_metrics(self, interval: float) -> None:
        """Keep one remote channel printing /proc snapshots every ``interval`` seconds
        (restarted after reconnects); read the latest with ``os_sample``."""
        if self._metrics is not None and self._metrics.task is not None:
            if self._metrics.interval == interval:
                return
            self._metrics.task.cancel()
        self._metrics = _Metrics(interval)
        self._metrics.task = asyncio.get_running_loop().create_task(
            self._metrics_loop(self._metrics), name=f"os-metrics {self.name}"
        )

    def os_sample(self) -> list[float] | None:
        """The latest raw counters (``procstat.OS_FIELDS`` order), None while not flowing."""
        return self._metrics.sample if self._metrics is not None else None

    @property
    def os_sample_seq(self) -> int:
        """How many samples have arrived so far."""
        return self._metrics.seq if self._metrics is not None else 0

    async def next_os_sample(self) -> list[float]:
        """Wait for the next sample (bound it with ``asyncio.timeout``)."""
        metrics = self._metrics
        if metrics is None:
            raise HostError(f"{self.name}: start_os_metrics() was not called")
        while True:
            event = metrics.event
            await event.wait()
            if metrics.sample is not None:
                return metrics.sample

    def cpu_times(self) -> list[float]:
        sample = self.os_sample()
        if sample is None:
            raise HostError(f"{self.name}: no OS sample yet (start_os_metrics first)")
        return sample[: len(HOST_CPU_FIELDS)]

    def _publish(self, metrics: _Metrics, sample: list[float] | None) -> None:
        metrics.sample = sample
        if sample is not None:
            metrics.seq += 1
        event, metrics.event = metrics.event, asyncio.Event()
        event.set()

    async def _metrics_loop(self, metrics: _Metrics) -> None:
        backoff = BACKOFF_FIRST
        # The remote loop (cat, then sleep) runs a little slower than its sleep, while the
        # sampler ticks on an exact grid: at the interval itself, now and then a tick found
        # no new reading and journaled the previous one again. Twice as often, every tick
        # has a reading at most half an interval old.
        argv = ["sh", "-c", _METRICS_SCRIPT, "sh", f"{metrics.interval / 2:g}"]
        while not self._closed:
            proc: SshProcess | None = None
            try:
                proc = await self.stream(argv)
                proc.label = "reading the OS counters"
                user_hz = USER_HZ
                chunk: list[str] = []
                async for line in proc.lines():
                    if line == SNAPSHOT_END:
                        with contextlib.suppress(ProcParseError, ValueError):
                            self._publish(metrics, parse_proc_snapshot("\n".join(chunk), user_hz))
                            backoff = BACKOFF_FIRST
                        chunk = []
                    elif line.startswith("@@hz "):
                        with contextlib.suppress(ValueError):
                            user_hz = float(line[5:]) or USER_HZ
                    else:
                        chunk.append(line)
            except HostError:
                pass
            finally:
                if proc is not None and proc.returncode is None:
                    with contextlib.suppress(HostError):
                        await proc.stop(1.0)
            self._publish(metrics, None)
            if self._conn is None:
                # Down: retry when the connection's own backoff allows the next attempt.
                delay = max(self._next_try - time.monotonic(), 0.0)
            else:
                # The remote loop ended with the connection up: back off on our own.
                delay, backoff = backoff, min(backoff * 2, BACKOFF_MAX)
            await asyncio.sleep(delay)

    # -- lifecycle ---------------------------------------------------------------

    async def close(self) -> None:
        self._closed = True
        if self._metrics is not None and self._metrics.task is not None:
            task = self._metrics.task
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
        conn, self._conn = self._conn, None
        jump, self._jump_conn = self._jump_conn, None
        self._sftp = None
        for c in (conn, jump):
            if c is not None:
                c.close()
                with contextlib.suppress(*_CONN_ERRORS):
                    await c.wait_closed()
        self._forwards.clear()
        tunnel_dir, self._tunnel_dir = self._tunnel_dir, None
        if tunnel_dir is not None:
            shutil.rmtree(tunnel_dir, ignore_errors=True)
