"""Table preparation: sysbench's tables (or the built-in driver's) created at the asked size
once, on every client's database, before a load runs on them."""

from __future__ import annotations

import contextlib
from collections.abc import Callable

from knobtop.load.base import LoadDriver, LoadError, LoadSpec, TableDriver
from knobtop.load.linkbench import LOADED
from knobtop.load.linkbench import TABLES as LINKBENCH_TABLES
from knobtop.load.multi import shaped
from knobtop.load.sysbench_output import PrepareProgress
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink
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
    """Prepare the tables of every client's database once (shared tables only once):
    the databases ``spec`` runs on, which are its own for other table shapes and for
    instances (load.multi.shaped; ``driver`` is the clients' own)."""
    loaded = False
    seen: set[str] = set()
    for sb in table_drivers(None if driver is None else shaped(driver, spec)):
        if sb.database in seen:
            continue
        seen.add(sb.database)
        loaded = await prepare_tables(make_link(), sb, spec, progress) or loaded
    return loaded


def _has_options(create_options: str, spec: LoadSpec) -> bool:
    """information_schema's CREATE_OPTIONS (``row_format=COMPRESSED key_block_size=8``,
    ```PAGE_COMPRESSED`='1'``) holds every one of the spec's table options."""
    text = create_options.lower().replace("`", "").replace("'", "")
    return all(f"{key.lower()}={value.lower()}" in text or
               (f"{key.lower()}=" in text and value.lower() in ("1", "on", "yes"))
               for key, value in spec.table_options)


async def tables_ready(link: ServerLink, database: str, spec: LoadSpec) -> bool:
    """True when sbtest1..N exist with exactly ``table_size`` rows (ids are 1..N),
    in the storage engine ``spec.engine`` names (any engine when it names none) and with
    its table options.  LinkBench's: its three tables, and nodetable's comment saying a
    load phase of this maxid1 (``table_size``) finished (requests change the rows)."""
    rows = await link.query(
        "SELECT TABLE_NAME, ENGINE, CREATE_OPTIONS, TABLE_COMMENT FROM "
        "information_schema.TABLES WHERE TABLE_SCHEMA = %s", (database,),
    )
    present = {str(r[0]): (str(r[1] or ""), str(r[2] or "")) for r in rows}
    if spec.workload == "linkbench":
        comments = {str(r[0]): str(r[3] or "") for r in rows}
        return all(t in present and (not spec.engine or present[t][0].lower()
                                     == spec.engine.lower()) for t in LINKBENCH_TABLES) and \
            comments.get("nodetable") == LOADED.format(maxid1=spec.table_size)
    for i in range(1, spec.tables + 1):
        name = f"sbtest{i}"
        if name not in present:
            return False
        engine, options = present[name]
        if spec.engine and engine.lower() != spec.engine.lower():
            return False
        if not _has_options(options, spec):
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
        await check_table_shape(link, driver.database, spec)
        rows = await link.query(
            "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = %s",
            (driver.database,),
        )
        # Only sysbench's own names (sbtest + digits; LIKE 'sbtest%' would take
        # sbtest_results too), each quoted: a name is data, never SQL.
        own = ((lambda name: name in LINKBENCH_TABLES) if spec.workload == "linkbench"
               else is_sysbench_table)  # each workload's own tables, never the other's
        for name in sorted(str(r[0]) for r in rows if own(str(r[0]))):
            await link.query(f"DROP TABLE {database}.{quote_ident(name)}")
    finally:
        await link.close()
    await driver.prepare(spec, progress)
    if spec.table_options:
        await apply_table_options(server, driver.database, spec)
    return True


SCRATCH = "knobtop_shape_check"


async def check_table_shape(link: ServerLink, database: str, spec: LoadSpec) -> None:
    """The engine and table options work on this server, tried on an empty scratch table
    before anything is loaded: a server that refuses them, or takes them with a warning
    (InnoDB ignores KEY_BLOCK_SIZE without file-per-table, ...), would run the arm on
    tables that are not what it says. Raises LoadError with the server's own words."""
    if not spec.engine and not spec.table_options:
        return
    table = f"{quote_ident(database)}.{quote_ident(SCRATCH)}"
    engine = f" ENGINE={spec.engine}" if spec.engine else ""
    what = " ".join(p for p in (f"engine {spec.engine}" if spec.engine else "",
                                f"table options {spec.table_options_sql()}"
                                if spec.table_options else "") if p)
    try:
        await link.query(f"DROP TABLE IF EXISTS {table}")
        await link.query(f"CREATE TABLE {table} (id INT PRIMARY KEY){engine} "
                         f"{spec.table_options_sql()}")
        warnings = await link.query("SHOW WARNINGS")
    except ServerError as exc:
        raise LoadError(f"this server refuses tables with {what}: {exc}. "
                        f"{ENGINE_HINT if spec.engine else OPTIONS_HINT}") from None
    finally:
        with contextlib.suppress(ServerError):
            await link.query(f"DROP TABLE IF EXISTS {table}")
    said = "; ".join(str(w[2]) for w in warnings if str(w[0]) != "Note")
    if said:
        raise LoadError(f"this server takes tables with {what} only with warnings: {said}. "
                        f"{OPTIONS_HINT}")


ENGINE_HINT = ("Is the engine installed (SHOW ENGINES)? MyRocks: install "
               "mariadb-plugin-rocksdb and INSTALL SONAME 'ha_rocksdb' (knobtop run --lab "
               "starts its sandbox with it when a recipe asks for RocksDB)")
OPTIONS_HINT = "Correct table_options in the recipe, or the server setting they need"


async def apply_table_options(server: ConnectionInfo | ServerLink, database: str,
                              spec: LoadSpec) -> None:
    """ALTER TABLE each freshly loaded sbtest table to the spec's options (a rebuild:
    sysbench 1.0 has no way to create them so)."""
    link = server if isinstance(server, ServerLink) else ServerLink(server)
    await link.connect()
    try:
        options = spec.table_options_sql()
        for i in range(1, spec.tables + 1):
            await link.query(f"ALTER TABLE {quote_ident(database)}.{quote_ident(f'sbtest{i}')} "
                             f"{options}")
    finally:
        await link.close()


__all__ = ["prepare_all", "prepare_tables", "table_drivers", "tables_ready"]
