"""The status query's flavor branches run on a real server where their SQL is shared."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from conftest import status_numbers
from knobtop.lab import Sandbox
from knobtop.metrics import SERVER_COUNTERS
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink, ServerVersion
from knobtop.server.status import METRIC_PREFIX, StatusPoller, status_queries, status_query

pytestmark = pytest.mark.integration

STATUS = [c for c in SERVER_COUNTERS if not c.startswith(METRIC_PREFIX)]
MONOTONIC = ("Uptime", "Questions", "Queries", "Com_select", "Com_commit", "Handler_commit",
             "Innodb_buffer_pool_read_requests", "Innodb_data_writes", "Innodb_os_log_written")
MYSQL_8 = ServerVersion.parse("8.0.36")
MYSQL_56 = ServerVersion.parse("5.6.51")
MARIADB = ServerVersion.parse("10.11.19-MariaDB")


@pytest.fixture(scope="module")
def ps_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectionInfo]:
    """A sandbox of this module's own with performance_schema=ON (the shared one has it
    OFF), so performance_schema.global_status is populated as on a default MySQL."""
    root = tmp_path_factory.mktemp("ps") / "lab"
    (root / "conf.d").mkdir(parents=True)
    (root / "conf.d" / "performance_schema.cnf").write_text("[mysqld]\nperformance_schema=ON\n")
    sandbox = Sandbox(root)
    info = sandbox.start()
    try:
        yield info
    finally:
        sandbox.stop()


async def test_performance_schema_global_status_has_no_com_counters(
    ps_server: ConnectionInfo,
) -> None:
    """Why MySQL 5.7+ is sampled with SHOW GLOBAL STATUS: the performance_schema table
    leaves out Com_xxx (both vendors document it; this server shows it)."""
    link = ServerLink(ps_server)
    await link.connect()
    try:
        assert (await link.query("SELECT @@performance_schema"))[0][0] == 1
        rows = await link.query(
            "SELECT VARIABLE_NAME FROM performance_schema.global_status "
            "WHERE VARIABLE_NAME IN ('Com_select', 'Questions')")
        shown = await status_numbers(link)
    finally:
        await link.close()
    assert [str(r[0]) for r in rows] == ["Questions"]
    assert "com_select" in shown


@pytest.mark.parametrize("version", [MYSQL_8, MYSQL_56, MARIADB],
                         ids=lambda v: f"{v.flavor}-{v.short}")
async def test_each_branchs_status_statement_reads_the_servers_counters(
    ps_server: ConnectionInfo, version: ServerVersion
) -> None:
    """The status statement each branch builds runs on MariaDB (the syntax is shared) and
    returns every counter SHOW GLOBAL STATUS has, each between the test's own reads."""
    statement = status_queries(version, STATUS)[0]
    link = ServerLink(ps_server)
    await link.connect()
    try:
        before = await status_numbers(link)
        rows = await link.query(statement)
        after = await status_numbers(link)
    finally:
        await link.close()
    got = {str(name).lower(): int(value) for name, value in rows}
    wanted = {c.lower() for c in STATUS} & set(after)
    assert set(got) == wanted
    assert {"com_select", "com_commit", "questions"} <= set(got)
    for name in MONOTONIC:
        assert before[name.lower()] <= got[name.lower()] <= after[name.lower()], name


async def test_a_poller_for_mysql_8_samples_com_counters(ps_server: ConnectionInfo) -> None:
    """StatusPoller built for MySQL 8.0 (its SQL, its round trips) against the real server:
    Com_select and the rest come back, between the test's own SHOW GLOBAL STATUS reads."""
    link = ServerLink(ps_server)
    await link.connect()
    probe = ServerLink(ps_server)
    await probe.connect()
    try:
        link.version = MYSQL_8  # the MySQL branch; its status statement is shared SQL
        poller = StatusPoller(link, STATUS)
        before = await status_numbers(probe)
        values = await poller.poll()
        after = await status_numbers(probe)
    finally:
        await link.close()
        await probe.close()
    by_name = dict(zip(STATUS, values, strict=True))
    for name in MONOTONIC:
        value = by_name[name]
        assert value is not None, name
        assert before[name.lower()] <= value <= after[name.lower()], name
    for name in STATUS:
        assert (by_name[name] is None) == (name.lower() not in after), name


async def test_mysqls_metrics_statement_is_the_part_mariadb_cannot_run(
    ps_server: ConnectionInfo,
) -> None:
    """Not covered here: MySQL's INNODB_METRICS has STATUS where MariaDB has ENABLED, so the
    MySQL metrics SELECT is refused by MariaDB (checked, so the gap stays visible)."""
    queries = status_queries(MYSQL_8, SERVER_COUNTERS)
    assert len(queries) == 2 and queries[0].startswith("SHOW GLOBAL STATUS WHERE")
    assert "STATUS = 'enabled'" in queries[1]
    with pytest.raises(ValueError, match="use status_queries"):
        status_query(MYSQL_8, SERVER_COUNTERS)
    link = ServerLink(ps_server)
    await link.connect()
    try:
        with pytest.raises(ServerError) as refused:
            await link.query(queries[1])
        rows = await link.query(status_query(MARIADB, SERVER_COUNTERS))
    finally:
        await link.close()
    assert refused.value.code == 1054  # unknown column STATUS
    assert any(str(name).startswith(METRIC_PREFIX) for name, _ in rows)
