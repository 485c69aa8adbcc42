"""A real OpenSSH ``sshd`` on a loopback address in a temporary directory, for tests."""

from __future__ import annotations

import contextlib
import os
import pwd
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import asyncssh

from knobtop.hosts.ssh import SshHost

_PRIVSEP_DIR = "/run/sshd"


class SshServerError(RuntimeError):
    """sshd could not be started (or did not become ready in time)."""


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        port: int = sock.getsockname()[1]
        return port


def _write_private(path: Path, data: bytes) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


class SshServer:
    """Start a throwaway sshd accepting one generated ed25519 client key.

    Use as ``with SshServer("/usr/sbin/sshd") as srv: ...`` or call ``start()``/``stop()``.
    """

    def __init__(
        self,
        sshd_path: str = "/usr/sbin/sshd",
        *,
        startup_timeout: float = 10.0,
        log_level: str = "VERBOSE",
        start_attempts: int = 3,
        listen: str = "127.0.0.1",
        sftp: bool = True,
        login_users: tuple[str, ...] = (),
        force_command: str | None = None,
    ) -> None:
        self.host = listen
        # sshd's ForceCommand: every login runs this program instead, the client's command
        # in $SSH_ORIGINAL_COMMAND (a test's wrapper that acts at an exact command)
        self.force_command = force_command
        # False: no ``Subsystem sftp`` line, as on hardened hosts (knobtop falls back to exec)
        self.sftp = sftp
        # Other local users who may log in with the client key (see ``system_user``): the
        # key files' directory is opened for them to read (sshd reads them as that user).
        self.login_users = login_users
        self.sshd_path = sshd_path
        self.startup_timeout = startup_timeout
        self.log_level = log_level
        self.start_attempts = start_attempts
        self.user = pwd.getpwuid(os.getuid()).pw_name
        self.port = 0
        self._tmp: tempfile.TemporaryDirectory[str] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self.dir = Path()
        self.host_key_path = Path()
        self.client_key_path = Path()
        self.authorized_keys_path = Path()
        self.known_hosts_path = Path()
        self.config_path = Path()
        self.log_path = Path()
        self.host_public_key = ""
        self.host_key_fingerprint = ""

    # -- lifecycle ---------------------------------------------------------------

    def start(self) -> Self:
        if self._proc is not None:
            raise SshServerError("SshServer already started")
        self._tmp = tempfile.TemporaryDirectory(prefix="knobtop-sshd-")
        try:
            self.dir = Path(self._tmp.name)
            self._write_keys()
            if self.login_users:
                self.dir.chmod(0o711)
                self.authorized_keys_path.chmod(0o644)
            if os.geteuid() == 0:
                # sshd refuses to start as root without its privilege-separation dir.
                os.makedirs(_PRIVSEP_DIR, mode=0o755, exist_ok=True)
            for attempt in range(1, self.start_attempts + 1):
                self.port = _free_port(self.host)
                self._write_config_and_known_hosts()
                try:
                    self._spawn_and_wait()
                    return self
                except SshServerError:
                    if attempt < self.start_attempts and "Address already in use" in self.log():
                        continue
                    raise
            raise SshServerError("unreachable")  # pragma: no cover
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        tmp, self._tmp = self._tmp, None
        if tmp is not None:
            tmp.cleanup()

    def kill(self) -> None:
        """Crash the server: SIGKILL the listener and every per-connection sshd it forked,
        so clients see their connections drop. Port, keys and files are kept for
        ``restart()``."""
        proc, self._proc = self._proc, None
        if proc is None:
            return
        victims = [proc.pid, *self._session_pids(proc.pid)]
        for pid in victims:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        proc.wait(timeout=5)

    def restart(self) -> Self:
        """Start sshd again on the same address, port and host key (after ``kill()``)."""
        if self._tmp is None:
            raise SshServerError("restart() needs a started (then killed) SshServer")
        if self._proc is not None:
            self.kill()
        self._spawn_and_wait()
        return self

    @staticmethod
    def _session_pids(listener: int) -> list[int]:
        """Descendants of the listener that are sshd processes (not the users' commands)."""
        import psutil

        try:
            children = psutil.Process(listener).children(recursive=True)
        except psutil.NoSuchProcess:
            return []
        pids = []
        for child in children:
            with contextlib.suppress(psutil.Error):
                if child.name().startswith("sshd"):
                    pids.append(child.pid)
        return pids

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    def log(self) -> str:
        """sshd's stderr (``-e``) so far."""
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def client_options(self, **overrides: Any) -> dict[str, Any]:
        """Keyword arguments for ``asyncssh.connect(srv.host, **srv.client_options())``.

        Hermetic: no ssh-agent and no ~/.ssh/config. ``overrides`` replace/add keys.
        """
        options: dict[str, Any] = {
            "port": self.port,
            "username": self.user,
            "client_keys": [str(self.client_key_path)],
            "known_hosts": str(self.known_hosts_path),
            "agent_path": None,
            "config": [],
        }
        options.update(overrides)
        return options

    # -- internals ---------------------------------------------------------------

    def _write_keys(self) -> None:
        host_key = asyncssh.generate_private_key("ssh-ed25519", comment="knobtop-test-host")
        client_key = asyncssh.generate_private_key("ssh-ed25519", comment="knobtop-test-client")
        self.host_key_path = self.dir / "ssh_host_ed25519_key"
        self.client_key_path = self.dir / "id_ed25519"
        self.authorized_keys_path = self.dir / "authorized_keys"
        self.known_hosts_path = self.dir / "known_hosts"
        self.config_path = self.dir / "sshd_config"
        self.log_path = self.dir / "sshd.log"
        _write_private(self.host_key_path, host_key.export_private_key("openssh"))
        _write_private(self.client_key_path, client_key.export_private_key("openssh"))
        host_pub = host_key.export_public_key("openssh").decode().strip()
        client_pub = client_key.export_public_key("openssh").decode().strip()
        (self.dir / "ssh_host_ed25519_key.pub").write_text(host_pub + "\n")
        (self.dir / "id_ed25519.pub").write_text(client_pub + "\n")
        self.authorized_keys_path.write_text(client_pub + "\n")
        self.host_public_key = host_pub
        self.host_key_fingerprint = host_key.get_fingerprint("sha256")

    def _write_config_and_known_hosts(self) -> None:
        key_type_and_blob = " ".join(self.host_public_key.split()[:2])
        self.known_hosts_path.write_text(f"[{self.host}]:{self.port} {key_type_and_blob}\n")
        self.config_path.write_text(
            "\n".join(
                [
                    f"Port {self.port}",
                    f"ListenAddress {self.host}",
                    f"HostKey {self.host_key_path}",
                    f"PidFile {self.dir / 'sshd.pid'}",
                    f"AuthorizedKeysFile {self.authorized_keys_path}",
                    "StrictModes no",
                    "UsePAM no",
                    "PasswordAuthentication no",
                    "KbdInteractiveAuthentication no",
                    "PubkeyAuthentication yes",
                    "PermitRootLogin prohibit-password",
                    "PrintMotd no",
                    *(["Subsystem sftp internal-sftp"] if self.sftp else []),
                    *([f"ForceCommand {self.force_command}"] if self.force_command else []),
                    f"LogLevel {self.log_level}",
                    "",
                ]
            )
        )

    def _spawn_and_wait(self) -> None:
        with open(self.log_path, "wb") as log:
            self._proc = subprocess.Popen(
                [self.sshd_path, "-D", "-e", "-f", str(self.config_path)],
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
            )
        proc = self._proc
        deadline = time.monotonic() + self.startup_timeout
        last_error = "no attempt made"
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                self._proc = None
                raise SshServerError(
                    f"sshd exited with status {proc.returncode} before becoming ready.\n"
                    f"--- sshd stderr ---\n{self.log()}"
                )
            try:
                banner = self._read_banner()
            except OSError as exc:
                last_error = repr(exc)
            else:
                if banner.startswith(b"SSH-2.0-"):
                    return
                last_error = f"unexpected banner {banner!r}"
            # Poll interval doubles as exit detection: returns early if sshd dies.
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=0.05)
        proc.kill()
        proc.wait(timeout=5)
        self._proc = None
        raise SshServerError(
            f"sshd on {self.host}:{self.port} not ready after {self.startup_timeout}s "
            f"(last error: {last_error}).\n--- sshd stderr ---\n{self.log()}"
        )

    def _read_banner(self) -> bytes:
        with socket.create_connection((self.host, self.port), timeout=1.0) as sock:
            data = b""
            while b"\n" not in data and len(data) < 256:
                chunk = sock.recv(256)
                if not chunk:
                    break
                data += chunk
            return data


def kill_session(srv: SshServer) -> list[int]:
    """Drop every SSH connection to ``srv`` (SIGKILL its per-connection sshd processes),
    leaving the listener up: a link that drops, and may be made again at once."""
    assert srv.pid is not None
    victims = srv._session_pids(srv.pid)
    for pid in victims:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return victims


SUDOERS = Path("/etc/sudoers.d/knobtop-test")


def _shadow_field(name: str) -> str:
    for line in Path("/etc/shadow").read_text().splitlines():
        user, _, rest = line.partition(":")
        if user == name:
            return rest.partition(":")[0]
    return ""


def system_user(name: str, *, sudo: bool) -> str:
    """A system user ``name`` for the tests (created once, kept: the machine is a
    throwaway CI one), with passwordless sudo for ``sh`` and ``true`` only when ``sudo``
    (a NOPASSWD line in /etc/sudoers.d/knobtop-test). Needs root."""
    if os.geteuid() != 0:
        raise SshServerError(f"creating the test user {name} needs root")
    try:
        pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "--system", "--shell", "/bin/sh", "--create-home",
                        "--home-dir", f"/var/lib/{name}", name], check=True,
                       capture_output=True)
    # "*": no password to log in with, but not locked ("!"), which sshd without PAM refuses
    if not _shadow_field(name).startswith("*"):
        subprocess.run(["usermod", "-p", "*", name], check=True, capture_output=True)
    if sudo:
        line = (f"{name} ALL=(root) NOPASSWD: /usr/bin/sh, /bin/sh, /usr/bin/true, "
                "/bin/true\n")
        lines = SUDOERS.read_text().splitlines(keepends=True) if SUDOERS.exists() else []
        if line not in lines:
            SUDOERS.parent.mkdir(mode=0o750, exist_ok=True)
            tmp = SUDOERS.with_name(".knobtop-test.tmp")
            _write_private(tmp, "".join([*lines, line]).encode())
            tmp.chmod(0o440)
            subprocess.run(["visudo", "-cf", str(tmp)], check=True, capture_output=True)
            tmp.replace(SUDOERS)
    return name


def make_host(srv: SshServer, **overrides: Any) -> SshHost:
    """An SshHost for ``srv``: its client key and known_hosts, no agent, no ssh config."""
    options: dict[str, Any] = {
        "client_keys": [str(srv.client_key_path)],
        "known_hosts": str(srv.known_hosts_path),
        "config_paths": [],
        "agent_path": None,
        "connect_timeout": 5.0,
    }
    user = overrides.pop("user", srv.user)  # another local user (see ``system_user``)
    options.update(overrides)
    return SshHost(f"{user}@{srv.host}:{srv.port}", **options)
