"""Real parts for every test: a sandbox mariadbd, sshd on loopback, sysbench."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
# A test module imports another by its name (`from test_reach import first_hit`) from any
# of the folders (pytest puts only the importing file's own folder on the path).
sys.path.extend(str(Path(__file__).parent / folder) for folder in ("unit", "live", "screens"))

from harness.binaries import require_binary
from harness.live import live_part, mark_live
from harness.sshd import SshServer
from knobtop.journal.events import Event
from knobtop.lab import Sandbox
from knobtop.server.catalog import Catalog, load_catalog
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.sqlquote import quote_ident

DATA = Path(__file__).parent / "data"
pytest_plugins = [
    "harness.fixtures",  # ssh_target (127.0.0.2), ssh_client (127.0.0.3)
    "harness.galera_fixture",  # galera_cluster: 3 MariaDB Galera nodes on loopback
    "harness.tmux_fixture",  # tmux: a tmux server of the test's own for its panes
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


@pytest.fixture(scope="module")
def lab_sandbox(tmp_path_factory: pytest.TempPathFactory
                ) -> Iterator[tuple[Sandbox, ConnectionInfo]]:
    """A running sandbox this module's sessions, `knobtop` commands and screens join (and
    leave running): one per module, stopped after it."""
    require_binary("mariadbd", "mariadb-server")
    sandbox = Sandbox(tmp_path_factory.mktemp("lab") / "lab")
    info = sandbox.start()
    yield sandbox, info
    sandbox.stop()


@pytest.fixture(scope="module")
def lab(lab_sandbox: tuple[Sandbox, ConnectionInfo]) -> tuple[Path, ConnectionInfo]:
    """The module's sandbox as its directory (for ``--dir``) and connection. A module with
    a fixture of the same name uses its own."""
    sandbox, info = lab_sandbox
    return sandbox.root, info


@pytest.fixture(scope="session")
def mariadb_info(mariadb: Sandbox) -> ConnectionInfo:
    return mariadb.connection()


@pytest.fixture(scope="session")
@live_part
def sysbench_path() -> str:
    return require_binary("sysbench", "sysbench")


@pytest.fixture(scope="session")
def sshd_server() -> Iterator[SshServer]:
    """A real sshd on 127.0.0.1 with its own host key, client key and known_hosts."""
    sshd = require_binary("sshd", "openssh-server")
    with SshServer(sshd) as server:
        yield server


async def show_global(info: ConnectionInfo, name: str, what: str = "VARIABLES") -> str:
    """A global variable's value as SHOW GLOBAL VARIABLES gives it (read on its own link);
    ``what="STATUS"``: a status counter's."""
    assert what in ("VARIABLES", "STATUS")
    link = ServerLink(info)
    await link.connect()
    try:
        rows = await link.query(f"SHOW GLOBAL {what} LIKE %s", (name,))
        return str(rows[0][1])
    finally:
        await link.close()


async def show_tables(info: ConnectionInfo, database: str) -> list[str]:
    """The tables of ``database``, sorted (read on a link of its own)."""
    link = ServerLink(info)
    await link.connect()
    try:
        rows = await link.query("SELECT TABLE_NAME FROM information_schema.TABLES "
                                "WHERE TABLE_SCHEMA = %s ORDER BY TABLE_NAME", (database,))
        return [str(r[0]) for r in rows]
    finally:
        await link.close()


async def status_numbers(link: ServerLink) -> dict[str, int]:
    """SHOW GLOBAL STATUS as the test reads it: lower-case names, numeric values only."""
    out: dict[str, int] = {}
    for name, value in await link.query("SHOW GLOBAL STATUS"):
        try:
            out[str(name).lower()] = int(value)
        except (TypeError, ValueError):
            continue  # text-valued status (e.g. Innodb_buffer_pool_dump_status)
    return out


def _typed(value: str) -> int | float | str:
    """A SHOW value as SET GLOBAL takes it back: MariaDB refuses '200' for a number."""
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            continue
    return value


@contextlib.asynccontextmanager
async def kept_globals(info: ConnectionInfo, *names: str) -> AsyncIterator[dict[str, str]]:
    """Read dynamic globals of the shared server before the test; afterwards, whatever
    happened, set back (in the order given) those that changed, and check they are back."""
    before = {name: await show_global(info, name) for name in names}
    try:
        yield before
    finally:
        link = ServerLink(info)
        await link.connect()
        try:
            after: dict[str, str] = {}
            for name in names:
                rows = await link.query("SHOW GLOBAL VARIABLES LIKE %s", (name,))
                if str(rows[0][1]) != before[name]:
                    await link.query(f"SET GLOBAL {quote_ident(name)} = %s",
                                     (_typed(before[name]),))
            for name in names:
                rows = await link.query("SHOW GLOBAL VARIABLES LIKE %s", (name,))
                after[name] = str(rows[0][1])
        finally:
            await link.close()
        assert after == before, f"shared server globals not restored: {after} != {before}"


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


@pytest.hookimpl(tryfirst=True)  # before -m selects by the markers
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """A live test carries the integration marker (``make test`` runs the others in two
    workers first, then these): the tests of tests/live/ and those with a live fixture get
    it here (harness.live); one that builds a real part in its own body without it fails
    collection."""
    unmarked = mark_live(items)
    if unmarked:
        raise pytest.UsageError(
            f"{len(unmarked)} live test(s) lack @pytest.mark.integration (add "
            "`pytestmark = pytest.mark.integration` or the decorator):\n  "
            + "\n  ".join(unmarked)
        )


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """In CI nothing may skip: a skipped test turns the run red."""
    from harness.binaries import in_ci

    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter is not None else []
    if in_ci() and skipped:
        reporter.write_line(f"CI: {len(skipped)} test(s) skipped; in CI every test must run.")
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
