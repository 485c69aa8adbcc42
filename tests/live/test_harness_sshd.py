"""Integration tests for the real-sshd harness (tests/harness/sshd.py)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import asyncssh
import pytest

from harness.sshd import SshServer

pytestmark = pytest.mark.integration


async def test_connect_and_run_echo(sshd_server: SshServer) -> None:
    async with asyncio.timeout(30):
        async with asyncssh.connect(sshd_server.host, **sshd_server.client_options()) as conn:
            server_key = conn.get_server_host_key()
            assert server_key is not None
            assert server_key.get_fingerprint("sha256") == sshd_server.host_key_fingerprint
            result = await conn.run("echo hello", check=True)
    assert result.exit_status == 0
    assert result.stdout == "hello\n"


async def test_unknown_host_key_is_refused(sshd_server: SshServer, tmp_path: Path) -> None:
    empty = tmp_path / "known_hosts"
    empty.write_text("")
    options = sshd_server.client_options(known_hosts=str(empty))
    async with asyncio.timeout(30):
        with pytest.raises(asyncssh.HostKeyNotVerifiable):
            async with asyncssh.connect(sshd_server.host, **options):
                pass


async def test_mismatched_host_key_is_refused(sshd_server: SshServer, tmp_path: Path) -> None:
    other = asyncssh.generate_private_key("ssh-ed25519")
    assert other.get_fingerprint("sha256") != sshd_server.host_key_fingerprint
    other_pub = other.export_public_key("openssh").decode().split()[:2]
    wrong = tmp_path / "known_hosts"
    wrong.write_text(f"[{sshd_server.host}]:{sshd_server.port} {' '.join(other_pub)}\n")
    options = sshd_server.client_options(known_hosts=str(wrong))
    async with asyncio.timeout(30):
        with pytest.raises(asyncssh.HostKeyNotVerifiable):
            async with asyncssh.connect(sshd_server.host, **options):
                pass
