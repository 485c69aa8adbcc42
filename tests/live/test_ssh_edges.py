"""SSH edge cases against real sshd on loopback: known_hosts as OpenSSH reads it (hints
that work when run), identity files, --accept-new only after a verified handshake,
ProxyJump from ssh config, UserKnownHostsFile, and the private database tunnel."""

from __future__ import annotations

import asyncio
import os
import pty
import re
import select
import stat
import struct
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from pathlib import Path

import asyncssh
import pytest

from harness.sshd import SshServer, make_host
from knobtop.hosts.base import HostError
from knobtop.hosts.ssh import HostKeyError, SshHost, _KeyCheck
from knobtop.lab import Sandbox
from knobtop.server.link import ServerLink

pytestmark = pytest.mark.integration

LIMIT = 20.0


async def run_once(host: SshHost, argv: list[str]) -> str:
    try:
        async with asyncio.timeout(LIMIT):
            return (await host.run(argv)).stdout
    finally:
        await host.close()


async def refused(host: SshHost, kind: type[HostError] = HostError) -> str:
    try:
        async with asyncio.timeout(LIMIT):
            with pytest.raises(kind) as info:
                await host.run(["true"])
    finally:
        await host.close()
    return str(info.value)


def key_blob(srv: SshServer) -> str:
    return " ".join(srv.host_public_key.split()[:2])


def hinted_command(message: str, program: str) -> str:
    found = re.search(rf"`({program} [^`]+)`", message)
    assert found, f"no `{program} ...` hint in: {message}"
    return found.group(1)


def run_tool(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=LIMIT, check=False)


def shell_ok(command: str) -> None:
    done = run_tool("sh", "-c", command)
    assert done.returncode == 0, f"{command}: {done.stderr}"


# -- known_hosts lookup for non-22 ports, and hints that work ------------------------------


async def test_a_bare_host_entry_does_not_vouch_for_another_port(
    ssh_target: SshServer, tmp_path: Path
) -> None:
    """OpenSSH looks port P up as "[host]:P" only; a bare "host" entry is for port 22."""
    known = tmp_path / "known_hosts"
    known.write_text(f"127.0.0.2 {key_blob(ssh_target)}\n")
    message = await refused(make_host(ssh_target, known_hosts=str(known)), HostKeyError)
    assert "unknown host key" in message
    assert ssh_target.host_key_fingerprint in message


async def test_hashed_port_entry_is_found(ssh_target: SshServer, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(f"[127.0.0.2]:{ssh_target.port} {key_blob(ssh_target)}\n")
    shell_ok(f"ssh-keygen -H -f {known}")
    assert "127.0.0.2" not in known.read_text()  # hashed now
    out = await run_once(make_host(ssh_target, known_hosts=str(known)), ["echo", "ok"])
    assert out == "ok\n"


async def test_unknown_key_hint_run_as_given_then_trusts_it(
    ssh_target: SshServer, tmp_path: Path
) -> None:
    known = tmp_path / "dir with space" / "known_hosts"
    known.parent.mkdir()
    known.write_text("")
    message = await refused(make_host(ssh_target, known_hosts=str(known)), HostKeyError)
    shell_ok(hinted_command(message, "ssh-keyscan"))
    assert key_blob(ssh_target) in known.read_text()
    out = await run_once(make_host(ssh_target, known_hosts=str(known)), ["echo", "ok"])
    assert out == "ok\n"


async def test_changed_key_hint_removes_exactly_that_entry(
    ssh_target: SshServer, tmp_path: Path
) -> None:
    """The hinted `ssh-keygen -R` removes the port's stale entry (and only it); then
    --accept-new records the server's key."""
    known = tmp_path / "known hosts"  # a space: the hint must quote the file
    stale = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    port22 = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    known.write_text(f"[127.0.0.2]:{ssh_target.port} {stale}\n127.0.0.2 {port22}\n")
    message = await refused(
        make_host(ssh_target, known_hosts=str(known), accept_new=True), HostKeyError
    )
    assert "CHANGED" in message
    shell_ok(hinted_command(message, "ssh-keygen"))
    assert stale not in known.read_text()
    assert f"127.0.0.2 {port22}" in known.read_text()  # the port-22 entry is someone else's
    host = make_host(ssh_target, known_hosts=str(known), accept_new=True)
    assert await run_once(host, ["echo", "ok"]) == "ok\n"
    lines = known.read_text().splitlines()
    assert any(line.startswith(f"[127.0.0.2]:{ssh_target.port} {key_blob(ssh_target)}")
               for line in lines)


def test_changed_key_hint_for_port_22_names_the_plain_host(tmp_path: Path) -> None:
    """No sshd on port 22 here: the hint's text is built the same way; run it on a file."""
    known = tmp_path / "known_hosts"
    old = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    known.write_text(f"db.example {old}\n[db.example]:2222 {other}\n")
    check = _KeyCheck([known], accept_new=False)
    check.lookup("db.example", "", None)
    assert check.had_keys
    new_key = asyncssh.generate_private_key("ssh-ed25519")
    assert not check.validate("db.example", 22, new_key)
    message = str(check.error("me@db.example:22"))
    command = hinted_command(message, "ssh-keygen")
    assert "[" not in command
    shell_ok(command)
    assert known.read_text() == f"[db.example]:2222 {other}\n"


# -- identity files -------------------------------------------------------------------------


async def test_missing_identity_file_is_named(ssh_target: SshServer, tmp_path: Path) -> None:
    missing = tmp_path / "id_nope"
    message = await refused(make_host(ssh_target, client_keys=[str(missing)]))
    assert f"no such key file {missing}" in message
    assert "unreachable" not in message


async def test_encrypted_key_without_a_terminal_points_at_the_agent(
    ssh_target: SshServer, tmp_path: Path
) -> None:
    key = tmp_path / "id_locked"
    made = run_tool("ssh-keygen", "-q", "-t", "ed25519", "-N", "correct horse", "-f", str(key))
    assert made.returncode == 0, made.stderr
    # The file really is passphrase-protected: no empty passphrase opens it.
    opened = run_tool("ssh-keygen", "-y", "-P", "", "-f", str(key))
    assert opened.returncode != 0
    assert not sys.stdin.isatty()
    message = await refused(make_host(ssh_target, client_keys=[str(key)]))
    assert f"key file {key} is encrypted" in message
    assert f"ssh-add {key}" in message
    assert "authentication failed" not in message and "unreachable" not in message


# -- --accept-new records only after a verified handshake ----------------------------------


class _SignatureBreaker:
    """A TCP relay to a real sshd that flips the last byte of the server's key-exchange
    reply (its signature over the exchange hash): the host key is offered, but the
    server no longer proves it holds it."""

    def __init__(self, upstream: tuple[str, int]) -> None:
        self.upstream = upstream
        self.flipped = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()

    async def __aenter__(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        return int(self._server.sockets[0].getsockname()[1])

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.ensure_future(self._relay(reader, writer))
        self._tasks.add(task)

    async def _relay(self, c_reader: asyncio.StreamReader, c_writer: asyncio.StreamWriter) -> None:
        s_reader, s_writer = await asyncio.open_connection(*self.upstream)

        async def upward() -> None:
            while data := await c_reader.read(65536):
                s_writer.write(data)
                await s_writer.drain()

        async def downward() -> None:
            # Plain text before NEWKEYS: the version line, then binary packets
            # (uint32 length, byte padding length, payload, padding; no MAC yet).
            line = await s_reader.readline()
            c_writer.write(line)
            while True:
                head = await s_reader.readexactly(5)
                length, pad = struct.unpack(">IB", head)
                body = bytearray(await s_reader.readexactly(length - 1))
                if body[0] == 31:  # KEX_ECDH_REPLY: K_S, Q_S, signature last
                    body[length - 1 - pad - 1] ^= 0x01
                    self.flipped += 1
                c_writer.write(head + bytes(body))
                await c_writer.drain()
                if body[0] == 21:  # NEWKEYS: encrypted from here on, just copy
                    break
            while data := await s_reader.read(65536):
                c_writer.write(data)
                await c_writer.drain()

        try:
            await asyncio.gather(upward(), downward())
        except (OSError, asyncio.IncompleteReadError):
            pass
        finally:
            for w in (c_writer, s_writer):
                w.close()


async def test_accept_new_records_nothing_when_the_key_is_not_proven(
    ssh_target: SshServer, tmp_path: Path
) -> None:
    known = tmp_path / "ssh" / "known_hosts"
    breaker = _SignatureBreaker((ssh_target.host, ssh_target.port))
    async with breaker as port:
        host = SshHost(
            f"{ssh_target.user}@127.0.0.1:{port}", client_keys=[str(ssh_target.client_key_path)],
            known_hosts=str(known), config_paths=[], agent_path=None, connect_timeout=5.0,
            accept_new=True,
        )
        message = await refused(host, HostKeyError)
    assert breaker.flipped == 1
    assert "did not prove" in message and ssh_target.host_key_fingerprint in message
    assert not known.exists()


async def test_accept_new_records_nothing_when_login_fails_then_records_on_success(
    ssh_target: SshServer, tmp_path: Path
) -> None:
    """Decision (see _KeyCheck.validate): the key is written once the connection is up."""
    known = tmp_path / "known_hosts"
    stranger = tmp_path / "id_stranger"
    stranger.write_bytes(asyncssh.generate_private_key("ssh-ed25519").export_private_key())
    stranger.chmod(0o600)
    message = await refused(make_host(ssh_target, known_hosts=str(known), accept_new=True,
                                      client_keys=[str(stranger)]))
    assert "authentication failed" in message
    assert not known.exists()
    host = make_host(ssh_target, known_hosts=str(known), accept_new=True)
    assert await run_once(host, ["echo", "ok"]) == "ok\n"
    assert known.read_text() == f"[127.0.0.2]:{ssh_target.port} {key_blob(ssh_target)}\n"


# -- ProxyJump from ssh config, UserKnownHostsFile -----------------------------------------


def jump_config(tmp_path: Path, target: SshServer, jump: SshServer, extra: str = "") -> Path:
    config = tmp_path / "ssh_config"
    config.write_text(
        "Host knobtop-app\n"
        f"  HostName {target.host}\n  Port {target.port}\n  User {target.user}\n"
        f"  ProxyJump {jump.user}@{jump.host}:{jump.port}\n" + extra
    )
    return config


def via_jump(config: Path, known: Path, *servers: SshServer, accept_new: bool = False) -> SshHost:
    return SshHost(
        "knobtop-app", config_paths=[str(config)], known_hosts=str(known),
        client_keys=[str(s.client_key_path) for s in servers], agent_path=None,
        connect_timeout=5.0, accept_new=accept_new,
    )


async def test_proxyjump_from_config_checks_the_jump_hosts_key(
    ssh_target: SshServer, ssh_client: SshServer, tmp_path: Path
) -> None:
    """Through 127.0.0.2 (jump) to 127.0.0.3: unknown jump key refused, naming the jump;
    with --accept-new both keys recorded, and the login really went through the jump."""
    config = jump_config(tmp_path, ssh_client, ssh_target)
    known = tmp_path / "known_hosts"
    known.write_text(ssh_client.known_hosts_path.read_text())  # the final host only
    message = await refused(via_jump(config, known, ssh_target, ssh_client), HostKeyError)
    assert f"jump host {ssh_target.user}@127.0.0.2:{ssh_target.port}" in message
    assert ssh_target.host_key_fingerprint in message
    assert "--accept-new" in message

    known.write_text("")
    logins = ssh_target.log().count("Accepted publickey")
    host = via_jump(config, known, ssh_target, ssh_client, accept_new=True)
    out = await run_once(host, ["sh", "-c", 'echo "$SSH_CONNECTION"'])
    assert out.split()[2:] == ["127.0.0.3", str(ssh_client.port)]
    assert ssh_target.log().count("Accepted publickey") == logins + 1
    assert sorted(known.read_text().splitlines()) == sorted([
        f"[127.0.0.2]:{ssh_target.port} {key_blob(ssh_target)}",
        f"[127.0.0.3]:{ssh_client.port} {key_blob(ssh_client)}",
    ])


async def test_proxyjump_errors_name_the_jump_host(
    ssh_target: SshServer, ssh_client: SshServer, tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(ssh_target.known_hosts_path.read_text()
                     + ssh_client.known_hosts_path.read_text())
    # The jump accepts only its own key: leave it out.
    message = await refused(via_jump(jump_config(tmp_path, ssh_client, ssh_target), known,
                                     ssh_client))
    assert f"jump host {ssh_target.user}@127.0.0.2:{ssh_target.port}" in message
    assert "authentication failed" in message


async def test_user_known_hosts_file_from_ssh_config(
    ssh_target: SshServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))  # ~/.ssh/known_hosts must stay unused
    mine = tmp_path / "mine_known_hosts"
    config = tmp_path / "ssh_config"
    config.write_text(f"Host 127.0.0.2\n  UserKnownHostsFile {mine} /nonexistent/second\n")
    host = make_host(ssh_target, known_hosts=None, config_paths=[str(config)], accept_new=True)
    assert await run_once(host, ["echo", "ok"]) == "ok\n"
    assert mine.read_text() == f"[127.0.0.2]:{ssh_target.port} {key_blob(ssh_target)}\n"
    assert not (tmp_path / "home").exists()
    # And it is read, not only written: a wrong key there is a changed key.
    other = asyncssh.generate_private_key("ssh-ed25519").export_public_key().decode().strip()
    mine.write_text(f"[127.0.0.2]:{ssh_target.port} {other}\n")
    message = await refused(make_host(ssh_target, known_hosts=None,
                                      config_paths=[str(config)]), HostKeyError)
    assert "CHANGED" in message and str(mine) in message


# -- the database tunnel is a private unix socket ------------------------------------------


@pytest.fixture
async def target(ssh_target: SshServer) -> AsyncIterator[SshHost]:
    host = make_host(ssh_target)
    yield host
    await host.close()


def other_user_can_connect(path: str) -> str:
    """Try the socket as user nobody (this test runs as root): 'ok' or the error."""
    code = (
        "import socket,sys\n"
        "s=socket.socket(socket.AF_UNIX)\n"
        "try:\n s.connect(sys.argv[1]); print('ok')\n"
        "except OSError as e: print(type(e).__name__)\n"
    )
    # The venv's python lives under /root; the system one is readable by nobody.
    done = subprocess.run(["/usr/bin/python3", "-c", code, path], user="nobody",
                          capture_output=True, text=True, timeout=LIMIT, check=False)
    return done.stdout.strip() or done.stderr


@pytest.mark.parametrize("use_socket", [False, True], ids=["tcp", "socket"])
async def test_database_tunnel_is_a_private_unix_socket(
    target: SshHost, mariadb: Sandbox, use_socket: bool
) -> None:
    info = mariadb.connection(use_socket=use_socket)
    link = ServerLink(info, via=target)
    try:
        async with asyncio.timeout(LIMIT):
            await link.connect()
            rows = await link.query("SELECT @@port, @@socket, CONNECTION_ID()")
            path = await target.forward(path=info.socket) if use_socket else \
                await target.forward(host=info.host, port=info.port)
    finally:
        await link.close()
    assert (rows[0][0], rows[0][1]) == (mariadb.port, str(mariadb.socket))
    directory = os.path.dirname(path)
    mode = os.stat(directory)
    assert stat.S_IMODE(mode.st_mode) == 0o700 and mode.st_uid == os.getuid()
    assert stat.S_ISSOCK(os.stat(path).st_mode)
    assert os.getuid() == 0  # so the next check is a real second user
    assert other_user_can_connect(path) == "PermissionError"
    # The socket does reach the server for us (a second, raw connection: a greeting).
    async with asyncio.timeout(LIMIT):
        reader, writer = await asyncio.open_unix_connection(path)
        greeting = await reader.read(4096)
        writer.close()
    assert b"mariadb" in greeting.lower()
    await target.close()
    assert not os.path.exists(directory)


_ASK_SCRIPT = """
import asyncio, sys
from knobtop.hosts.base import HostError
from knobtop.hosts.ssh import SshHost

async def main() -> None:
    host = SshHost(sys.argv[1], client_keys=[sys.argv[2]], known_hosts=sys.argv[3],
                   config_paths=[], agent_path=None, connect_timeout=5.0)
    try:
        print("RESULT", (await host.run(["echo", "ok"])).stdout.strip())
    except HostError as exc:
        print("ERROR", exc)
    finally:
        await host.close()

asyncio.run(main())
"""


def test_encrypted_key_on_a_terminal_asks_for_the_passphrase(
    ssh_target: SshServer, tmp_path: Path
) -> None:
    """On a terminal the passphrase is asked for (and not echoed back)."""
    key = tmp_path / "id_locked"
    made = run_tool("ssh-keygen", "-q", "-t", "ed25519", "-N", "correct horse", "-f", str(key))
    assert made.returncode == 0, made.stderr
    primary, secondary = pty.openpty()
    dest = f"{ssh_target.user}@{ssh_target.host}:{ssh_target.port}"
    proc = subprocess.Popen(
        [sys.executable, "-c", _ASK_SCRIPT, dest, str(key), str(ssh_target.known_hosts_path)],
        stdin=secondary, stdout=secondary, stderr=secondary, start_new_session=True,
    )
    os.close(secondary)
    seen = b""

    def read_until(needle: bytes | None) -> None:
        """Read the terminal until ``needle`` shows, or (None) until the program closes it."""
        nonlocal seen
        deadline = time.monotonic() + LIMIT
        while needle is None or needle not in seen:
            left = deadline - time.monotonic()
            assert left > 0, f"no {needle!r} on the terminal; got {seen!r}"
            ready, _, _ = select.select([primary], [], [], left)
            if ready:
                try:
                    chunk = os.read(primary, 4096)
                except OSError:  # EIO: the other side closed
                    chunk = b""
                if not chunk and needle is None:
                    return
                assert chunk, f"terminal closed before {needle!r}; got {seen!r}"
                seen += chunk

    try:
        read_until(f"Passphrase for key {key}: ".encode())
        seen = b""
        os.write(primary, b"correct horse\n")
        read_until(None)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=LIMIT)
        os.close(primary)
    text = seen.decode(errors="replace")
    assert "correct horse" not in text  # not echoed
    assert "Traceback" not in text and "ERROR " in text
    # Decrypted (bcrypt is a dependency): it got as far as the login, where this key is
    # not authorized.
    assert "authentication failed" in text


async def test_accept_new_into_an_unwritable_place_names_the_file(
    ssh_target: SshServer, tmp_path: Path
) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("")
    known = blocker / "known_hosts"  # its "directory" is a file: root cannot write it either
    host = make_host(ssh_target, known_hosts=str(known), accept_new=True)
    message = await refused(host)
    assert f"cannot record its host key in {known}" in message
    assert "unreachable" not in message
    assert not host.connected
