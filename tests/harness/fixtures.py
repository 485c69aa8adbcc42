"""Session fixtures: two real sshd "hosts" on 127.0.0.2 (target) and 127.0.0.3 (client)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.binaries import require_binary
from harness.live import live_part
from harness.sshd import SshServer


def _server(listen: str) -> Iterator[SshServer]:
    sshd = require_binary("sshd", "openssh-server")
    with SshServer(sshd, listen=listen) as server:
        yield server


@pytest.fixture(scope="session")
@live_part
def ssh_target() -> Iterator[SshServer]:
    """A real sshd on 127.0.0.2 (the database host), with its own host key."""
    yield from _server("127.0.0.2")


@pytest.fixture(scope="session")
@live_part
def ssh_client() -> Iterator[SshServer]:
    """A real sshd on 127.0.0.3 (the load-client host), with its own host key."""
    yield from _server("127.0.0.3")
