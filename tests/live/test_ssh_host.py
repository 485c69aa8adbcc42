"""SshHost against two real sshd "hosts" (127.0.0.2 and 127.0.0.3) on this machine."""

from __future__ import annotations

import asyncio
import os
import subprocess
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import asyncssh
import psutil
import pytest

from harness.binaries import require_binary
from harness.sshd import SshServer, _free_port, kill_session, make_host
from knobtop.hosts import ssh as ssh_module
from knobtop.hosts.base import HOST_CPU_FIELDS, HostError
from knobtop.hosts.procstat import OS_FIELDS
from knobtop.hosts.ssh import HostKeyError, SshHost, parse_destination

pytestmark = pytest.mark.integration

LIMIT = 20.0  # upper bound for any single wait in these tests


@pytest.fixture
async def target(ssh_target: SshServer) -> AsyncIterator[SshHost]:
    host = make_host(ssh_target)
    yield host
    await host.close()


def marker() -> str:
    return f"knobtop-test-{uuid.uuid4().hex}"


def pgrep(mark: str) -> list[int]:
    """Pids on this machine whose command line contains ``mark`` (pgrep -f)."""
    out = subprocess.run(["pgrep", "-f", mark], capture_output=True, text=True, check=False)
    return [int(p) for p in out.stdout.split()]


async def wait_gone(pids: list[int], timeout: float = LIMIT) -> None:
    """Wait (event-driven, via pidfd) until every pid has exited."""
    loop = asyncio.get_running_loop()
    async with asyncio.timeout(timeout):
        for pid in pids:
            try:
                fd = os.pidfd_open(pid)
            except ProcessLookupError:
                continue
            try:
                done = loop.create_future()
                loop.add_reader(fd, lambda f=done: f.done() or f.set_result(None))
                try:
                    await done
                finally:
                    loop.remove_reader(fd)
            finally:
                os.close(fd)


async def wait_marker_gone(mark: str) -> None:
    """Until no process carrying ``mark`` is left (children may appear late; loop on pgrep)."""
    async with asyncio.timeout(LIMIT):
        while pids := pgrep(mark):
            await wait_gone(pids)


# -- destination parsing ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("dest", "expected"),
    [
        ("db1", (None, "db1", None)),
        ("alice@db1", ("alice", "db1", None)),
        ("alice@db1:2222", ("alice", "db1", 2222)),
        ("10.0.0.5:22", (None, "10.0.0.5", 22)),
        ("ssh://bob@[fe80::1]:2200", ("bob", "fe80::1", 2200)),
        ("fe80::1", (None, "fe80::1", None)),
    ],
)
def test_parse_destination(dest: str, expected: tuple[str | None, str, int | None]) -> None:
    assert parse_destination(dest) == expected


def test_parse_destination_rejects_bad_port() -> None:
    with pytest.raises(HostError, match="is not a number"):
        parse_destination("db1:http")


# -- commands ---------------------------------------------------------------------------


async def test_run_echo_and_exit_codes(target: SshHost) -> None:
    async with asyncio.timeout(LIMIT):
        result = await target.run(["echo", "hello world", "it's", "$HOME"])
        failed = await target.run(["sh", "-c", "echo oops >&2; exit 3"])
        with pytest.raises(HostError, match="not installed"):
            await target.run(["no-such-program-knobtop"])
    assert result.returncode == 0
    assert result.stdout == "hello world it's $HOME\n"
    assert (failed.returncode, failed.stderr) == (3, "oops\n")
    assert target.connected


async def test_two_hosts_are_two_connections(
    ssh_target: SshServer,
    ssh_client: SshServer,
) -> None:
    hosts = [make_host(ssh_target), make_host(ssh_client)]
    try:
        async with asyncio.timeout(LIMIT):
            results = await asyncio.gather(
                *(h.run(["sh", "-c", 'echo "$SSH_CONNECTION"']) for h in hosts)
            )
    finally:
        for h in hosts:
            await h.close()
    target_side = results[0].stdout.split()[2:]
    client_side = results[1].stdout.split()[2:]
    assert target_side == ["127.0.0.2", str(ssh_target.port)]
    assert client_side == ["127.0.0.3", str(ssh_client.port)]


async def test_stream_lines_then_stop_ends_remote_process(target: SshHost) -> None:
    mark = marker()
    script = 'i=0; while :; do echo "line $i"; i=$((i+1)); sleep 0.05; done'
    async with asyncio.timeout(LIMIT):
        proc = await target.stream(["sh", "-c", script, mark])
        lines = []
        async for line in proc.lines():
            lines.append(line)
            if len(lines) == 3:
                break
        remote = pgrep(mark)
        assert remote, "the remote command should be running"
        # The wrapper's pid is the process group of everything the command started.
        assert proc.pid is not None
        assert {os.getpgid(p) for p in remote} == {proc.pid}
        rc = await proc.stop(grace=2.0)
        await wait_marker_gone(mark)
    assert lines == ["line 0", "line 1", "line 2"]
    assert rc == -15


async def test_stop_escalates_to_kill_when_term_is_ignored(
    target: SshHost, tmp_path: Path
) -> None:
    """The command traps (logs and survives) every catchable signal and logs its EXIT;
    it ends with only TERM logged: TERM came first, then something uncatchable (KILL)."""
    mark = marker()
    log = tmp_path / "signals"
    script = (
        "for s in TERM HUP INT QUIT USR1 USR2 ALRM PIPE EXIT; do "
        'trap "echo $s >> \\"\\$1\\"" "$s"; done; echo ready; while :; do sleep 0.05; done'
    )
    async with asyncio.timeout(LIMIT):
        proc = await target.stream(["sh", "-c", script, mark, str(log)])
        async for line in proc.lines():
            assert line == "ready"
            break
        rc = await proc.stop(grace=1.0)
        await wait_marker_gone(mark)
    assert log.read_text().splitlines() == ["TERM"]
    assert rc == -15  # the wrapper itself goes with the TERM; the watchdog KILLs the rest


async def test_closing_the_host_ends_remote_processes(ssh_target: SshServer) -> None:
    host = make_host(ssh_target)
    mark = marker()
    async with asyncio.timeout(LIMIT):
        proc = await host.stream(["sh", "-c", "echo up; sleep 300", mark])
        async for _ in proc.lines():
            break
        assert pgrep(mark)
        await host.close()
        await wait_marker_gone(mark)


async def test_run_limit_ends_remote_process(target: SshHost) -> None:
    mark = marker()
    async with asyncio.timeout(LIMIT):
        with pytest.raises(HostError, match="did not finish within"):
            await target.run(["sh", "-c", "sleep 300", mark], limit=0.5)
        await wait_marker_gone(mark)


def hang_sessions(srv: SshServer, stopped: list[psutil.Process]) -> None:
    """Stop (SIGSTOP) the sshd processes serving ``srv``'s open connections: they keep
    the TCP connection but never answer, like a hung host. Each stopped process goes into
    ``stopped``; the caller resumes them in ``finally``."""
    assert srv.pid is not None
    sessions = [p for p in psutil.Process(srv.pid).children(recursive=True)
                if p.name().startswith("sshd")]
    assert sessions  # the connection's own sshd process(es)
    for proc in sessions:
        proc.suspend()
        stopped.append(proc)


async def test_run_limit_covers_starting_the_command_on_a_hung_connection(
    tmp_path: Path,
) -> None:
    """The connection is up but its sshd is stopped (kill -STOP: it accepts, never
    answers): opening the command's channel gets no reply, and ``limit`` still holds
    (before, only the command's output was under it: the call waited for the channel
    until keepalive gave up on the connection, ~30 s)."""
    with SshServer(require_binary("sshd", "openssh-server"), listen="127.0.0.7") as srv:
        host = make_host(srv)
        stopped: list[psutil.Process] = []
        try:
            async with asyncio.timeout(LIMIT):
                assert (await host.run(["echo", "up"])).stdout == "up\n"
            hang_sessions(srv, stopped)
            async with asyncio.timeout(LIMIT):
                with pytest.raises(HostError, match=r"'true' did not finish within 1 s"):
                    await host.run(["true"], limit=1.0)
        finally:
            for proc in stopped:
                proc.resume()
            await host.close()


async def test_which(target: SshHost) -> None:
    sshd = require_binary("sshd", "openssh-server")
    async with asyncio.timeout(LIMIT):
        assert await target.which("sh") in ("/usr/bin/sh", "/bin/sh")
        assert await target.which("sshd") == sshd  # found via the added /usr/sbin
        assert await target.which("no-such-program-knobtop") is None
        assert await target.which("echo") in (None, "/usr/bin/echo", "/bin/echo")


# -- files ------------------------------------------------------------------------------


async def test_write_file_atomic_keeps_prev(target: SshHost, tmp_path: Path) -> None:
    path = tmp_path / "conf.d" / "knobtop.cnf"
    async with asyncio.timeout(LIMIT):
        await target.write_file_atomic(path, b"first\n", mode=0o640)
        assert await target.read_file(path) == b"first\n"
        assert not path.with_name("knobtop.cnf.prev").exists()
        await target.write_file_atomic(path, b"second\n\x00\xff", mode=0o640)
        assert await target.read_file(path) == b"second\n\x00\xff"
        with pytest.raises(FileNotFoundError):
            await target.read_file(tmp_path / "missing")
    assert path.with_name("knobtop.cnf.prev").read_bytes() == b"first\n"
    assert path.stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in path.parent.iterdir()) == ["knobtop.cnf", "knobtop.cnf.prev"]


async def test_sftp_start_is_bounded_on_a_hung_connection(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Starting the SFTP session on a connection whose sshd stopped answering ends at
    OP_LIMIT (made 1 s here) with a HostError; before, it waited for keepalive (~30 s)."""
    monkeypatch.setattr(ssh_module, "OP_LIMIT", 1.0)
    with SshServer(require_binary("sshd", "openssh-server"), listen="127.0.0.8") as srv:
        host = make_host(srv)
        stopped: list[psutil.Process] = []
        try:
            async with asyncio.timeout(LIMIT):
                assert (await host.run(["echo", "up"])).stdout == "up\n"
            hang_sessions(srv, stopped)
            async with asyncio.timeout(LIMIT):
                with pytest.raises(HostError, match=r"SFTP did not start within 1 s"):
                    await host.read_file(tmp_path / "any")
        finally:
            for proc in stopped:
                proc.resume()
            await host.close()


async def test_write_file_atomic_cleanup_is_bounded_on_a_hung_connection(
    tmp_path: Path,
) -> None:
    """A write cancelled while the connection hangs (its sshd stopped mid-transfer) gives
    up tidying (closing and removing the temp file) after CLEANUP_LIMIT; before, the
    close and remove waited for keepalive (~30 s)."""
    path = tmp_path / "conf.d" / "knobtop.cnf"
    data = b"\0" * (256 << 20)  # long enough a transfer to stop the server in the middle
    with SshServer(require_binary("sshd", "openssh-server"), listen="127.0.0.8") as srv:
        host = make_host(srv)
        stopped: list[psutil.Process] = []
        task: asyncio.Task[None] | None = None
        try:
            async with asyncio.timeout(LIMIT):
                await host.write_file_atomic(path, b"first\n")  # SFTP session is up
                task = asyncio.create_task(host.write_file_atomic(path, data))
                while not [p for p in path.parent.iterdir() if p.name.startswith(".knobtop")]:
                    assert not task.done()
                    await asyncio.sleep(0.005)  # poll for the temp file (the transfer began)
            hang_sessions(srv, stopped)
            assert task.cancel(), "the transfer ended before the server was stopped"
            started = asyncio.get_running_loop().time()
            await asyncio.wait({task}, timeout=LIMIT)
            took = asyncio.get_running_loop().time() - started
            assert task.done(), f"the cancelled write still tidies up after {LIMIT:g} s"
            assert task.cancelled()
            assert took < ssh_module.CLEANUP_LIMIT + 3.0
        finally:
            for proc in stopped:
                proc.resume()
            if task is not None and not task.done():
                task.cancel()
                await asyncio.wait({task}, timeout=LIMIT)
            await host.close()
        assert path.read_bytes() == b"first\n"


# -- host keys, auth, reachability -------------------------------------------------------


async def test_unknown_host_key_is_refused(ssh_target: SshServer, tmp_path: Path) -> None:
    known = tmp_path / "known_hosts"
    known.write_text("")
    host = make_host(ssh_target, known_hosts=str(known))
    try:
        async with asyncio.timeout(LIMIT):
            with pytest.raises(HostKeyError) as info:
                await host.run(["true"])
    finally:
        await host.close()
    message = str(info.value)
    assert f"127.0.0.2:{ssh_target.port}" in message
    assert ssh_target.host_key_fingerprint in message
    assert f"ssh-keyscan -p {ssh_target.port} 127.0.0.2 >> {known}" in message
    assert "--accept-new" in message
    assert known.read_text() == ""
    assert not host.connected


@pytest.mark.parametrize("accept_new", [False, True])
async def test_changed_host_key_is_refused(
    ssh_target: SshServer,
    tmp_path: Path,
    accept_new: bool,
) -> None:
    other = asyncssh.generate_private_key("ssh-ed25519")
    known = tmp_path / "known_hosts"
    entry = f"[127.0.0.2]:{ssh_target.port} {other.export_public_key().decode().strip()}\n"
    known.write_text(entry)
    host = make_host(ssh_target, known_hosts=str(known), accept_new=accept_new)
    try:
        async with asyncio.timeout(LIMIT):
            with pytest.raises(HostKeyError) as info:
                await host.run(["true"])
    finally:
        await host.close()
    message = str(info.value)
    assert "CHANGED" in message
    assert "man-in-the-middle" in message
    assert ssh_target.host_key_fingerprint in message
    assert f"127.0.0.2:{ssh_target.port}" in message
    assert known.read_text() == entry


async def test_accept_new_trusts_and_records_unknown_key(
    ssh_target: SshServer,
    tmp_path: Path,
) -> None:
    known = tmp_path / "ssh" / "known_hosts"  # neither file nor directory exists yet
    first = make_host(ssh_target, known_hosts=str(known), accept_new=True)
    strict = make_host(ssh_target, known_hosts=str(known))
    try:
        async with asyncio.timeout(LIMIT):
            assert (await first.run(["echo", "ok"])).stdout == "ok\n"
            lines = known.read_text().splitlines()
            # Now a strict host trusts it, from the recorded line alone.
            assert (await strict.run(["echo", "ok"])).stdout == "ok\n"
    finally:
        await first.close()
        await strict.close()
    key_blob = " ".join(ssh_target.host_public_key.split()[:2])
    assert len(lines) == 1
    assert lines[0].startswith(f"[127.0.0.2]:{ssh_target.port} {key_blob}")


async def test_wrong_client_key_is_refused(ssh_target: SshServer, tmp_path: Path) -> None:
    stranger = tmp_path / "id_stranger"
    stranger.write_bytes(asyncssh.generate_private_key("ssh-ed25519").export_private_key())
    stranger.chmod(0o600)
    host = make_host(ssh_target, client_keys=[str(stranger)])
    try:
        async with asyncio.timeout(LIMIT):
            with pytest.raises(HostError) as info:
                await host.run(["true"])
    finally:
        await host.close()
    message = str(info.value)
    assert f"{ssh_target.user}@127.0.0.2:{ssh_target.port}" in message
    assert "authentication failed" in message
    assert "ssh-copy-id" in message


async def test_unreachable_port(ssh_target: SshServer) -> None:
    port = _free_port("127.0.0.2")
    states: list[tuple[str, str]] = []
    host = SshHost(
        f"127.0.0.2:{port}",
        client_keys=[str(ssh_target.client_key_path)],
        known_hosts=str(ssh_target.known_hosts_path),
        config_paths=[],
        agent_path=None,
        on_state=lambda s, r: states.append((s, r)),
    )
    try:
        async with asyncio.timeout(LIMIT):
            with pytest.raises(HostError, match=f"127.0.0.2:{port}: connection refused"):
                await host.run(["true"])
            # Within the backoff window the next call fails fast without dialling.
            with pytest.raises(HostError, match="next reconnect attempt in"):
                await host.run(["true"])
    finally:
        await host.close()
    assert [s for s, _ in states] == ["down"]


async def test_jump_host(
    ssh_target: SshServer,
    ssh_client: SshServer,
    tmp_path: Path,
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(
        ssh_target.known_hosts_path.read_text() + ssh_client.known_hosts_path.read_text()
    )
    host = SshHost(
        f"{ssh_client.user}@127.0.0.3:{ssh_client.port}",
        jump=f"{ssh_target.user}@127.0.0.2:{ssh_target.port}",
        client_keys=[str(ssh_target.client_key_path), str(ssh_client.client_key_path)],
        known_hosts=str(known),
        config_paths=[],
        agent_path=None,
    )
    logins_before = ssh_target.log().count("Accepted publickey")
    try:
        async with asyncio.timeout(LIMIT):
            result = await host.run(["sh", "-c", 'echo "$SSH_CONNECTION"'])
    finally:
        await host.close()
    assert result.stdout.split()[2:] == ["127.0.0.3", str(ssh_client.port)]
    assert ssh_target.log().count("Accepted publickey") == logins_before + 1  # the jump


async def test_ssh_config_alias(ssh_target: SshServer, tmp_path: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text(
        "Host knobtop-db\n"
        f"  HostName 127.0.0.2\n  Port {ssh_target.port}\n  User {ssh_target.user}\n"
        f"  IdentityFile {ssh_target.client_key_path}\n"
    )
    host = SshHost(
        "knobtop-db",
        known_hosts=str(ssh_target.known_hosts_path),
        config_paths=[str(config)],
        agent_path=None,
    )
    try:
        async with asyncio.timeout(LIMIT):
            result = await host.run(["sh", "-c", 'echo "$SSH_CONNECTION"'])
    finally:
        await host.close()
    assert host.name == "knobtop-db"
    assert result.stdout.split()[2:] == ["127.0.0.2", str(ssh_target.port)]


# -- OS metrics -------------------------------------------------------------------------


async def test_remote_os_metrics(target: SshHost) -> None:
    target.start_os_metrics(0.2)
    async with asyncio.timeout(LIMIT):
        first = await target.next_os_sample()
        second = await target.next_os_sample()
    local_cpu = psutil.cpu_times()
    local_total = sum(getattr(local_cpu, f) for f in HOST_CPU_FIELDS)
    values = dict(zip(OS_FIELDS, second, strict=True))
    assert len(first) == len(second) == len(OS_FIELDS)
    remote_total = sum(values[f] for f in HOST_CPU_FIELDS)
    assert remote_total == pytest.approx(local_total, rel=0.03)
    assert values["mem_total"] == pytest.approx(psutil.virtual_memory().total, rel=0.01)
    assert 0 < values["mem_available"] <= values["mem_total"]
    assert values["load1"] >= 0
    for name in ("disk_read_bytes", "disk_write_bytes", "disk_reads", "disk_writes"):
        i = OS_FIELDS.index(name)
        assert second[i] >= first[i] >= 0, name
    assert target.cpu_times() == target.os_sample()[: len(HOST_CPU_FIELDS)]  # type: ignore[index]
    assert target.os_sample_seq >= 2


# -- sshd crash and restart ----------------------------------------------------------------


class StateLog:
    """A host's ``on_state`` calls, in order; ``wait(state)`` returns at the next ``state``
    after the one the previous wait returned at (bounded)."""

    def __init__(self) -> None:
        self.states: list[tuple[str, str]] = []
        self._changed = asyncio.Event()
        self._seen = 0

    def __call__(self, state: str, reason: str) -> None:
        self.states.append((state, reason))
        self._changed.set()

    async def wait(self, state: str) -> str:
        """The reason given with it."""
        async with asyncio.timeout(LIMIT):
            while True:
                for i in range(self._seen, len(self.states)):
                    if self.states[i][0] == state:
                        self._seen = i + 1
                        return self.states[i][1]
                self._changed.clear()
                await self._changed.wait()


async def test_sshd_crash_then_restart_reconnects(tmp_path: Path) -> None:
    sshd = require_binary("sshd", "openssh-server")
    log = StateLog()
    states = log.states
    wait_state = log.wait

    with SshServer(sshd, listen="127.0.0.4") as srv:
        host = make_host(srv, on_state=log)
        try:
            host.start_os_metrics(0.2)
            mark = marker()
            async with asyncio.timeout(LIMIT):
                await host.next_os_sample()
                proc = await host.stream(["sh", "-c", "echo up; sleep 300", mark])
                async for _ in proc.lines():
                    break
            assert pgrep(mark)
            await wait_state("up")

            srv.kill()
            await wait_state("down")
            assert not host.connected
            with pytest.raises(HostError):
                await host.run(["true"])
            # The dropped channel's watchdog ended the remote command.
            await wait_marker_gone(mark)

            srv.restart()
            await wait_state("up")  # the metrics loop reconnects on its own
            async with asyncio.timeout(LIMIT):
                assert (await host.run(["echo", "back"])).stdout == "back\n"
                seen = host.os_sample_seq
                sample = await host.next_os_sample()
            assert host.os_sample_seq > seen
            assert len(sample) == len(OS_FIELDS)
        finally:
            await host.close()
    assert [s for s, _ in states] == ["up", "down", "up"]
    assert states[1][1]  # a reason is given


async def test_a_lost_link_says_what_it_was_lost_during(tmp_path: Path) -> None:
    """Issue 40: every "Connection lost" carries the step it happened in. The link is
    dropped (its per-connection sshd killed) while a command runs and the OS counters
    stream: the host's down reason names both; the command's own error names it too."""
    sshd = require_binary("sshd", "openssh-server")
    log = StateLog()
    with SshServer(sshd, listen="127.0.0.15") as srv:
        host = make_host(srv, on_state=log)
        try:
            host.start_os_metrics(0.2)
            mark = marker()
            async with asyncio.timeout(LIMIT):
                await host.next_os_sample()
                running = asyncio.ensure_future(host.run(["sh", "-c", "sleep 300", mark],
                                                         limit=LIMIT * 3))
                # (no event announces a process starting on this machine: pgrep, bounded)
                while not pgrep(mark):  # noqa: ASYNC110
                    await asyncio.sleep(0.05)
                assert kill_session(srv)
                with pytest.raises(HostError) as lost:
                    await running
                reason = await log.wait("down")
        finally:
            await host.close()
    assert " while " in reason, reason
    assert "running 'sh'" in reason and "reading the OS counters" in reason, reason
    assert "'sh'" in str(lost.value)
