"""Table preparation: sysbench's tables (or the built-in driver's) created at the asked size
once, on every client's database, before a load runs on them."""

from __future__ import annotations

from collections.abc import Callable

from knobtop.load.base import LoadDriver, LoadSpec, TableDriver
from knobtop.load.sysbench_output import PrepareProgress
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.sqlquote import is_sysbench_table, quote_ident


def table_drivers(driver: LoadDriver | None) -> list[TableDriver]:
    """The drivers behind ``driver`` that own tables (one, or each client of a MultiLoad)."""
    return driver.table_drivers() if driver is not None else []


async def prepare_all(
    make_link: Callable[[], ServerLink],
    driver: LoadDriver | None,
    spec: LoadSpec,
    progress: Callable[[PrepareProgress], None] | None = None,
) -> bool:
    """Prepare the tables of every client's database once (shared tables only once)."""
    loaded = False
    seen: set[str] = set()
    for sb in table_drivers(driver):
        if sb.database in seen:
            continue
        seen.add(sb.database)
        loaded = await prepare_tables(make_link(), sb, spec, progress) or loaded
    return loaded


async def tables_ready(link: ServerLink, database: str, spec: LoadSpec) -> bool:
    """True when sbtest1..N exist with exactly ``table_size`` rows (ids are 1..N),
    in the storage engine ``spec.engine`` names (any engine when it names none)."""
    rows = await link.query(
        "SELECT TABLE_NAME, ENGINE FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s",
        (database,),
    )
    present = {str(r[0]): str(r[1] or "") for r in rows}
    for i in range(1, spec.tables + 1):
        name = f"sbtest{i}"
        if name not in present:
            return False
        if spec.engine and present[name].lower() != spec.engine.lower():
            return False
        top = await link.query(
            f"SELECT COUNT(*), MAX(id) FROM {quote_ident(database)}.{quote_ident(name)}")
        if top[0][0] != spec.table_size or top[0][1] != spec.table_size:
            return False
    return True


async def prepare_tables(
    server: ConnectionInfo | ServerLink,
    driver: TableDriver,
    spec: LoadSpec,
    progress: Callable[[PrepareProgress], None] | None = None,
) -> bool:
    """Load sysbench's tables unless they are already there at the asked size.

    Returns True when it loaded them.  Tables of another size are dropped first.
    """
    link = server if isinstance(server, ServerLink) else ServerLink(server)
    await link.connect()
    try:
        database = quote_ident(driver.database)
        await link.query(f"CREATE DATABASE IF NOT EXISTS {database}")
        if await tables_ready(link, driver.database, spec):
            return False
        rows = await link.query(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s",
            (driver.database,),
        )
        # Only sysbench's own names (sbtest + digits; LIKE 'sbtest%' would take
        # sbtest_results too), each quoted: a name is data, never SQL.
        for name in sorted(str(r[0]) for r in rows if is_sysbench_table(str(r[0]))):
            await link.query(f"DROP TABLE {database}.{quote_ident(name)}")
    finally:
        await link.close()
    await driver.prepare(spec, progress)
    return True


__all__ = ["prepare_all", "prepare_tables", "table_drivers", "tables_ready"]
