"""Real parts for every test: a sandbox mariadbd, sshd on loopback, sysbench."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from harness.binaries import require_binary
from harness.sshd import SshServer
from knobtop.journal.events import Event
from knobtop.lab import Sandbox
from knobtop.server.catalog import Catalog, load_catalog
from knobtop.server.link import ConnectionInfo, ServerLink

DATA = Path(__file__).parent / "data"
pytest_plugins = [
    "harness.fixtures",  # ssh_target (127.0.0.2), ssh_client (127.0.0.3)
    "harness.galera_fixture",  # galera_cluster: 3 MariaDB Galera nodes on loopback
]


@pytest.fixture(scope="session")
def mariadb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """A real mariadbd in a temporary datadir on a free loopback port (whole test run)."""
    require_binary("mariadbd", "mariadb-server")
    require_binary("mariadb-install-db", "mariadb-server")
    sandbox = Sandbox(tmp_path_factory.mktemp("mariadb"))
    sandbox.start()
    yield sandbox
    sandbox.stop()


@pytest.fixture(scope="session")
def mariadb_info(mariadb: Sandbox) -> ConnectionInfo:
    return mariadb.connection()


@pytest.fixture(scope="session")
def sysbench_path() -> str:
    return require_binary("sysbench", "sysbench")


@pytest.fixture(scope="session")
def sshd_server() -> Iterator[SshServer]:
    """A real sshd on 127.0.0.1 with its own host key, client key and known_hosts."""
    sshd = require_binary("sshd", "openssh-server")
    with SshServer(sshd) as server:
        yield server


async def show_global(info: ConnectionInfo, name: str) -> str:
    """A global variable's value as SHOW GLOBAL VARIABLES gives it (read on its own link)."""
    link = ServerLink(info)
    await link.connect()
    try:
        rows = await link.query("SHOW GLOBAL VARIABLES LIKE %s", (name,))
        return str(rows[0][1])
    finally:
        await link.close()


@pytest.fixture(scope="session")
def catalog(mariadb_info: ConnectionInfo) -> Catalog:
    """The knob catalog of the test server (every variable, merged with the flavor table)."""

    async def load() -> Catalog:
        link = ServerLink(mariadb_info)
        await link.connect()
        try:
            return await load_catalog(link)
        finally:
            await link.close()

    return asyncio.run(load())


class EventCollector:
    """A session listener that lets a test wait for a condition on the events so far."""

    def __init__(self) -> None:
        self.events: list[Event] = []
        self._changed = asyncio.Event()

    def __call__(self, event: Event) -> None:
        self.events.append(event)
        self._changed.set()

    def of(self, kind: str) -> list[Event]:
        return [e for e in self.events if e.kind == kind]

    async def wait_for(self, predicate: Callable[[list[Event]], bool], timeout: float) -> None:
        async with asyncio.timeout(timeout):
            while not predicate(self.events):
                self._changed.clear()
                await self._changed.wait()


@pytest.fixture
def collector() -> EventCollector:
    return EventCollector()


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI nothing may skip: a skipped test turns the run red."""
    from harness.binaries import in_ci

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if in_ci() and skipped:
        reporter.write_line(f"CI: {len(skipped)} test(s) skipped; in CI every test must run.")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
