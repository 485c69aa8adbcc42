"""SSH errors that say the fix, fast (issue 40): a name that does not resolve, a refused
port, an unreachable address, a connection dropped while it opens.

No test sends a packet off loopback. This machine's resolver is a network DNS server
(/etc/resolv.conf), so the name lookups run in a network and mount namespace of their own
(`unshare -n -m`, as root: `make test` runs as root) with only `lo` up and a resolv.conf
naming 127.0.0.1, where a small real DNS server of the test answers NXDOMAIN (or says
nothing, for the resolver-timeout case); glibc's getaddrinfo does the real lookup.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness import paths as repo_paths
from harness.sshd import SshServer, make_host
from knobtop.hosts.base import HostError
from knobtop.hosts.names import RESOLVE_LIMIT
from knobtop.hosts.ssh import SshHost

# serial: "under 3 s" is a timing assertion, which a saturating sysbench beside it bends
pytestmark = [pytest.mark.integration, pytest.mark.serial]
APP = repo_paths.REPO / "app"

# Run inside the namespace: a DNS server on 127.0.0.1:53 (NXDOMAIN for every question, or
# silent), then one SshHost.connect() timed, its error printed as JSON.
SCRIPT = r"""
import asyncio, json, socket, sys, threading, time
from knobtop.hosts.ssh import SshHost
mode, dest = sys.argv[1], sys.argv[2]
dns = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
dns.bind(("127.0.0.1", 53))
def serve():
    while True:
        query, peer = dns.recvfrom(512)
        if mode == "nxdomain" and len(query) > 12:
            # the same id and question; QR, RD, RA, RCODE 3 (NXDOMAIN); no answers
            flags = bytes([0x81 | (query[2] & 0x01), 0x83])
            dns.sendto(query[:2] + flags + query[4:6] + bytes(6) + query[12:], peer)
threading.Thread(target=serve, daemon=True).start()
async def main():
    host = SshHost(dest, origin="profile /x/p.toml line 3", config_paths=[],
                   known_hosts="/dev/null", agent_path=None, connect_timeout=20)
    start = time.monotonic()
    try:
        await host.connect()
        said = ""
    except Exception as exc:
        said = f"{type(exc).__name__}: {exc}"
    print(json.dumps({"elapsed": time.monotonic() - start, "error": said}))
asyncio.run(main())
"""


def in_namespace(tmp_path: Path, mode: str, dest: str) -> dict[str, object]:
    unshare = shutil.which("unshare")
    assert unshare, "unshare (util-linux) is needed"
    assert os.geteuid() == 0, "the namespace tests run as root, as make test does"
    conf = tmp_path / "resolv.conf"
    conf.write_text("nameserver 127.0.0.1\n")  # glibc waits 5 s x 2 tries on silence
    script = tmp_path / "connect_in_ns.py"
    script.write_text(SCRIPT)
    shell = (f"ip link set lo up && mount --bind {conf} /etc/resolv.conf && "
             f"exec {sys.executable} {script} {mode} {dest}")
    done = subprocess.run([unshare, "--net", "--mount", "sh", "-c", shell],
                          capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(APP)})
    assert done.returncode == 0, done.stderr
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_unknown_name_fails_fast_naming_it_and_the_profile_line(tmp_path: Path) -> None:
    result = in_namespace(tmp_path, "nxdomain", "knobtop@no-such-db.invalid")
    error = str(result["error"])
    assert error.startswith("HostError: host name 'no-such-db.invalid'"), error
    assert "(profile /x/p.toml line 3)" in error
    assert "does not resolve" in error and "getent hosts no-such-db.invalid" in error
    assert float(str(result["elapsed"])) < 3.0


def test_silent_resolver_is_bounded_and_named(tmp_path: Path) -> None:
    result = in_namespace(tmp_path, "silent", "knobtop@slow-db.invalid:2222")
    error = str(result["error"])
    assert f"no answer from the resolver within {RESOLVE_LIMIT:g} s" in error, error
    assert "127.0.0.1" in error  # the DNS server it asked, from resolv.conf
    assert RESOLVE_LIMIT <= float(str(result["elapsed"])) < 3.0


def test_unreachable_address_says_no_route(tmp_path: Path) -> None:
    # 192.0.2.0/24 is TEST-NET-1; the namespace has no route at all, so nothing is sent
    result = in_namespace(tmp_path, "nxdomain", "knobtop@192.0.2.7")
    error = str(result["error"])
    assert "192.0.2.7:22: unreachable" in error, error
    assert "ip route get 192.0.2.7" in error
    assert float(str(result["elapsed"])) < 3.0


def test_the_profile_line_comes_from_the_file(tmp_path: Path) -> None:
    """build_hosts gives each SSH host the file and line its destination is written on."""
    from knobtop.connect import SshOptions, build_hosts
    from knobtop.profiles import load_profile

    path = tmp_path / "far.toml"
    path.write_text('# far away\n\n[target]\nssh = "knobtop@db-far.invalid"\n'
                    '[target.mysql]\nhost = "127.0.0.1"\nuser = "root"\n\n'
                    '[[client]]\nssh = "bench@app-far.invalid"\n')
    hosts = build_hosts(load_profile(str(path)), SshOptions())
    target = hosts.target
    assert isinstance(target, SshHost)
    assert target.origin == f"profile {path} line 4"
    client = hosts.clients[0][1]
    assert isinstance(client, SshHost) and client.origin == f"profile {path} line 10"


def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port: int = sock.getsockname()[1]
    sock.close()
    return port


async def error_of(host: SshHost) -> str:
    start = time.monotonic()
    with pytest.raises(HostError) as caught:
        await host.connect()
    assert time.monotonic() - start < 3.0
    return str(caught.value)


def plain(dest: str, **kw: object) -> SshHost:
    return SshHost(dest, config_paths=[], known_hosts="/dev/null", agent_path=None,
                   connect_timeout=1.0, **kw)  # type: ignore[arg-type]


async def test_refused_port_names_the_port_and_the_check() -> None:
    port = closed_port()
    error = await error_of(plain(f"knobtop@127.0.0.1:{port}"))
    assert f"127.0.0.1:{port}: connection refused" in error
    assert f"nothing listens on port {port}" in error and "systemctl status ssh" in error


async def test_connection_lost_says_the_step() -> None:
    """A server that accepts and hangs up at once: lost while exchanging keys."""
    server = await asyncio.start_server(lambda _r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        error = await error_of(plain(f"knobtop@127.0.0.1:{port}"))
    finally:
        server.close()
        await server.wait_closed()
    assert f"knobtop@127.0.0.1:{port}: SSH connection failed while exchanging keys" in error, \
        error
    assert "sshd log" in error


async def test_silent_port_is_bounded() -> None:
    """Accepts but never speaks SSH: no answer within the connect timeout."""
    held: list[asyncio.StreamWriter] = []
    server = await asyncio.start_server(lambda _r, w: held.append(w), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        error = await error_of(plain(f"knobtop@127.0.0.1:{port}"))
    finally:
        for w in held:
            w.close()
        server.close()
        await server.wait_closed()
    assert f"127.0.0.1:{port}: no SSH answer within 1 s" in error, error


async def test_a_login_the_server_ends_says_authenticating(sshd_server: SshServer,
                                                           tmp_path: Path) -> None:
    """Seven keys the real sshd does not know: it hangs up after MaxAuthTries (6)."""
    import asyncssh

    keys = []
    for i in range(7):
        path = tmp_path / f"id_wrong{i}"
        asyncssh.generate_private_key("ssh-ed25519").write_private_key(str(path))
        keys.append(str(path))
    host = make_host(sshd_server, client_keys=keys)
    try:
        with pytest.raises(HostError) as caught:
            async with asyncio.timeout(30):
                await host.connect()
    finally:
        await host.close()
    message = str(caught.value)
    assert "while authenticating" in message, message
    assert "MaxAuthTries" in message
