"""Table preparation on a real mariadbd, as an admin user, among hostile table names.

knobtop drops stale sysbench tables before it loads new ones. It must drop sysbench's
own (``sbtest`` + digits) and nothing else, whatever the other tables are called.
"""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest

from knobtop.hosts.local import LocalHost
from knobtop.lab import Sandbox
from knobtop.load.base import LoadSpec
from knobtop.load.builtin import BuiltinDriver
from knobtop.load.prepare import prepare_tables, tables_ready
from knobtop.load.sysbench import Sysbench
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.sqlquote import is_sysbench_table, quote_ident

pytestmark = pytest.mark.integration

SPEC = LoadSpec(workload="oltp_point_select", threads=1, tables=1, table_size=10)
VICTIM_DB = "kt_victim"
# Names that start like sysbench's but are not sysbench's: each must survive.
HOSTILE = (
    "sbtest1`, `mysql`.`user",  # the reported one: mysql.user is a view on MariaDB 10.4+
    "sbtest1`, `mysql`.`global_priv",  # the real account table behind it
    f"sbtest1`, `{VICTIM_DB}`.`precious",  # a plain table with rows
    "sbtest_results",
    "sbtestx",
    "sbtest",
    "sbtest2x",
    "sbtest3 4",
    "SBTEST5",
    "sbtest\u0661",  # ARABIC-INDIC DIGIT ONE: a digit to \d, not to sysbench
)
STALE = ("sbtest1", "sbtest2", "sbtest17")  # sysbench's, of the wrong size: dropped


def q(name: str) -> str:
    """The test's own identifier quoting (not the code's under test)."""
    return "`" + name.replace("`", "``") + "`"


async def query(info: ConnectionInfo, sql: str, args: tuple[object, ...] = ()) -> list[tuple]:  # type: ignore[type-arg]
    link = ServerLink(info)
    await link.connect()
    try:
        async with asyncio.timeout(30):
            return list(await link.query(sql, args))
    finally:
        await link.close()


async def tables_in(info: ConnectionInfo, database: str) -> set[str]:
    rows = await query(info, "SELECT TABLE_NAME FROM information_schema.TABLES "
                             "WHERE TABLE_SCHEMA = %s", (database,))
    return {str(r[0]) for r in rows}


async def accounts(info: ConnectionInfo) -> list[tuple]:  # type: ignore[type-arg]
    return sorted(await query(info, "SELECT User, Host FROM mysql.user"))


async def set_up(info: ConnectionInfo, database: str) -> None:
    for db in (database, VICTIM_DB):
        await query(info, f"DROP DATABASE IF EXISTS {q(db)}")
        await query(info, f"CREATE DATABASE {q(db)}")
    await query(info, f"CREATE TABLE {q(VICTIM_DB)}.precious (id INT PRIMARY KEY)")
    await query(info, f"INSERT INTO {q(VICTIM_DB)}.precious VALUES (1), (2), (3)")
    for name in HOSTILE + STALE:
        await query(info, f"CREATE TABLE {q(database)}.{q(name)} (id INT PRIMARY KEY)")
        await query(info, f"INSERT INTO {q(database)}.{q(name)} VALUES (7)")


def make_driver(kind: str, mariadb: Sandbox, database: str) -> Sysbench | BuiltinDriver:
    info = mariadb.connection()
    if kind == "sysbench":
        return Sysbench(LocalHost(), mysql_socket=str(mariadb.socket), user=info.user,
                        password=info.password, database=database)
    return BuiltinDriver(info, database=database)


@pytest.mark.parametrize("kind", ["sysbench", "builtin"])
@pytest.mark.parametrize("database", ["kt_hostile", "kt`hostile db"])
async def test_prepare_and_cleanup_drop_only_sysbench_tables(
    mariadb: Sandbox, sysbench_path: str, kind: str, database: str
) -> None:
    info = mariadb.connection()
    await set_up(info, database)
    users_before = await accounts(info)
    assert (info.user, "localhost") in users_before  # the admin running knobtop
    driver = make_driver(kind, mariadb, database)

    loaded = await prepare_tables(info, driver, SPEC)

    assert loaded is True
    left = await tables_in(info, database)
    # Every stale sysbench table went and sbtest1 came back at the asked size ...
    assert left == set(HOSTILE) | {"sbtest1"}
    link = ServerLink(info)
    await link.connect()
    try:
        assert await tables_ready(link, database, SPEC)
    finally:
        await link.close()
    # ... and nothing else was touched, here or elsewhere.
    for name in HOSTILE:
        assert await query(info, f"SELECT id FROM {q(database)}.{q(name)}") == [(7,)], name
    assert await query(info, f"SELECT id FROM {q(VICTIM_DB)}.precious ORDER BY id") == [
        (1,), (2,), (3,)]
    assert await accounts(info) == users_before
    assert await query(info, "SELECT COUNT(*) FROM mysql.global_priv") == [
        (len(users_before),)]

    await driver.cleanup(SPEC)
    assert await tables_in(info, database) == set(HOSTILE)
    assert await accounts(info) == users_before
    await query(info, f"DROP DATABASE {q(database)}")
    await query(info, f"DROP DATABASE {q(VICTIM_DB)}")


async def test_tables_already_there_are_kept_with_a_hostile_database_name(
    mariadb: Sandbox,
) -> None:
    info = mariadb.connection()
    database = "kt`ready"
    await set_up(info, database)
    driver = BuiltinDriver(info, database=database)
    assert await prepare_tables(info, driver, SPEC) is True
    assert await prepare_tables(info, driver, SPEC) is False  # already there at that size
    assert await prepare_tables(info, driver, replace(SPEC, table_size=11)) is True
    assert await tables_in(info, database) == set(HOSTILE) | {"sbtest1"}
    await query(info, f"DROP DATABASE {q(database)}")
    await query(info, f"DROP DATABASE {q(VICTIM_DB)}")


@pytest.mark.parametrize("name", ["sbtest1", "sbtest10", "sbtest007"])
def test_sysbench_names_are_sbtest_and_digits(name: str) -> None:
    assert is_sysbench_table(name)


@pytest.mark.parametrize("name", (*HOSTILE, "sbtest1\n", "xsbtest1", "sbtest-1", ""))
def test_other_names_are_not_sysbench_tables(name: str) -> None:
    assert not is_sysbench_table(name)


@pytest.mark.parametrize(("name", "quoted"), [
    ("sbtest1", "`sbtest1`"),
    ("a`b", "`a``b`"),
    ("sbtest1`, `mysql`.`user", "`sbtest1``, ``mysql``.``user`"),
    ("``", "``````"),
])
def test_identifiers_double_their_backticks(name: str, quoted: str) -> None:
    assert quote_ident(name) == quoted
