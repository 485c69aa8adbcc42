"""The flavor table (REFERENCE.md section 1) and the catalog of a real mariadbd's variables."""

from __future__ import annotations

import asyncio
from itertools import pairwise
from typing import Any

import pytest

from knobtop.server import flavors
from knobtop.server.catalog import Catalog, build_catalog, match_offsets
from knobtop.server.flavors import lookup
from knobtop.server.knobs import SEED_KNOBS, validate
from knobtop.server.link import ConnectionInfo, ServerLink, ServerVersion

MB = 1 << 20

# (flavor, version, knob) -> (mode, a piece of the note or "", default, min, max, choices)
CASES: list[tuple[str, tuple[int, int, int], str, str, str, Any, Any, Any, Any]] = [
    ("mariadb", (10, 11, 19), "innodb_thread_concurrency", "absent",
     "removed in 10.6.0 (ignored since 10.5.5)", None, None, None, ()),
    ("mariadb", (10, 5, 8), "innodb_thread_concurrency", "ignored", "ignored since 10.5.5",
     "0", 0, 1000, ()),
    ("mariadb", (10, 5, 4), "innodb_thread_concurrency", "dynamic", "", "0", 0, 1000, ()),
    ("mariadb", (10, 1, 48), "innodb_thread_concurrency", "dynamic", "", "0", 0, 1000, ()),
    ("mysql", (8, 0, 36), "innodb_thread_concurrency", "dynamic", "", "0", 0, 1000, ()),
    ("mysql", (5, 5, 62), "innodb_thread_concurrency", "dynamic", "", "0", 0, 1000, ()),
    ("mariadb", (10, 6, 16), "innodb_purge_threads", "static", "MDEV-26520", "4", 1, 32, ()),
    ("mariadb", (10, 7, 0), "innodb_purge_threads", "static", "10.7.1", "4", 1, 32, ()),
    ("mariadb", (10, 7, 1), "innodb_purge_threads", "dynamic", "MDEV-26520", "4", 1, 32, ()),
    ("mariadb", (10, 11, 6), "innodb_purge_threads", "dynamic", "MDEV-26520", "4", 1, 32, ()),
    ("mysql", (8, 0, 36), "innodb_purge_threads", "static", "", "4", 1, 32, ()),
    ("mysql", (8, 4, 0), "innodb_purge_threads", "static", "16 CPUs", None, 1, 32, ()),
    ("mysql", (5, 5, 62), "innodb_purge_threads", "static", "(unverified)", "0", 0, 1, ()),
    ("mariadb", (10, 11, 2), "innodb_read_io_threads", "dynamic", "256", "4", 1, 64, ()),
    ("mariadb", (10, 10, 7), "innodb_read_io_threads", "static", "", "4", 1, 64, ()),
    ("mariadb", (10, 6, 16), "innodb_read_io_threads", "static", "(unverified)", "4", 1, 64, ()),
    ("mariadb", (10, 11, 2), "innodb_write_io_threads", "dynamic", "", "4", 2, 64, ()),
    ("mysql", (8, 0, 36), "innodb_read_io_threads", "static", "", "4", 1, 64, ()),
    ("mysql", (8, 4, 2), "innodb_read_io_threads", "static", "CPUs / 2", None, 1, 64, ()),
    ("mysql", (8, 4, 2), "innodb_write_io_threads", "static", "", "4", 1, 64, ()),
    ("mysql", (8, 0, 29), "innodb_doublewrite", "static", "", "ON", None, None, ("OFF", "ON")),
    ("mysql", (8, 0, 30), "innodb_doublewrite", "dynamic", "needs a restart", "ON", None, None,
     ("ON", "OFF", "DETECT_AND_RECOVER", "DETECT_ONLY")),
    ("mysql", (8, 4, 3), "innodb_doublewrite", "dynamic", "", "ON", None, None,
     ("ON", "OFF", "DETECT_AND_RECOVER", "DETECT_ONLY")),
    ("mariadb", (10, 11, 19), "innodb_doublewrite", "static", "", "ON", None, None,
     ("OFF", "ON")),
    ("mariadb", (11, 0, 5), "innodb_doublewrite", "static", "", "ON", None, None, ("OFF", "ON")),
    ("mariadb", (11, 0, 6), "innodb_doublewrite", "dynamic", "MDEV-33545", "ON", None, None,
     ("OFF", "ON", "fast")),
    ("mariadb", (11, 4, 3), "innodb_doublewrite", "dynamic", "(unverified)", "ON", None, None,
     ("OFF", "ON", "fast")),
    ("mysql", (5, 5, 62), "innodb_buffer_pool_size", "static", "", str(128 * MB), None, None,
     ()),
    ("mysql", (5, 6, 51), "innodb_buffer_pool_size", "static", "5.7.5", str(128 * MB), None,
     None, ()),
    ("mysql", (5, 7, 4), "innodb_buffer_pool_size", "static", "", str(128 * MB), None, None, ()),
    ("mysql", (5, 7, 5), "innodb_buffer_pool_size", "dynamic", "chunk", str(128 * MB), None,
     None, ()),
    ("mariadb", (10, 1, 48), "innodb_buffer_pool_size", "static", "10.2.2", str(128 * MB),
     None, None, ()),
    ("mariadb", (10, 2, 2), "innodb_buffer_pool_size", "dynamic", "", str(128 * MB), None,
     None, ()),
    ("mariadb", (10, 11, 12), "innodb_buffer_pool_size", "dynamic",
     "innodb_buffer_pool_size_max", str(128 * MB), None, None, ()),
    ("mariadb", (10, 1, 48), "innodb_mtflush_threads", "static", "", "8", 1, 64, ()),
    ("mariadb", (10, 2, 44), "innodb_use_mtflush", "static", "", "OFF", None, None,
     ("OFF", "ON")),
    ("mariadb", (10, 3, 2), "innodb_mtflush_threads", "absent", "removed in 10.3.2", None, None,
     None, ()),
    ("mariadb", (10, 11, 19), "innodb_use_mtflush", "absent", "removed in 10.3.2", None, None,
     None, ()),
    ("mysql", (8, 0, 36), "innodb_mtflush_threads", "absent", "MariaDB 10.1-10.2 only", None,
     None, None, ()),
    ("mysql", (5, 7, 3), "innodb_page_cleaners", "absent", "5.7.4", None, None, None, ()),
    ("mysql", (5, 7, 4), "innodb_page_cleaners", "static", "", "1", 1, 64, ()),
    ("mysql", (5, 7, 8), "innodb_page_cleaners", "static", "", "4", 1, 64, ()),
    ("mysql", (8, 4, 0), "innodb_page_cleaners", "static", "(unverified)", None, 1, 64, ()),
    ("mariadb", (10, 3, 3), "innodb_page_cleaners", "dynamic", "", None, None, None, ()),
    ("mariadb", (10, 3, 2), "innodb_page_cleaners", "static", "", None, None, None, ()),
    ("mariadb", (10, 5, 9), "innodb_page_cleaners", "ignored", "ignored since 10.5", None, None,
     None, ()),
    ("mariadb", (10, 6, 0), "innodb_page_cleaners", "absent", "removed in 10.6.0", None, None,
     None, ()),
    ("mariadb", (10, 5, 1), "innodb_buffer_pool_instances", "ignored", "10.5.1", None, None,
     None, ()),
    ("mariadb", (10, 4, 30), "innodb_buffer_pool_instances", "static", "", "8", None, None, ()),
    ("mysql", (5, 5, 62), "innodb_buffer_pool_instances", "static", "", "1", 1, 64, ()),
    ("mysql", (8, 0, 36), "innodb_buffer_pool_instances", "static", "1G", "8", 1, 64, ()),
    ("mysql", (8, 0, 36), "innodb_flush_log_at_trx_commit", "dynamic", "", "1", 0, 2,
     ("0", "1", "2")),
    ("mariadb", (10, 11, 19), "innodb_flush_log_at_trx_commit", "dynamic", "", "1", 0, 3,
     ("0", "1", "2", "3")),
    ("mysql", (8, 0, 36), "innodb_io_capacity", "dynamic", "", "200", 100, None, ()),
    ("mysql", (8, 4, 0), "innodb_io_capacity", "dynamic", "", "10000", 100, None, ()),
    ("mariadb", (10, 11, 19), "innodb_io_capacity", "dynamic", "1210", "200", 100,
     float((1 << 32) - 1), ()),
    ("mysql", (5, 5, 62), "innodb_io_capacity_max", "absent", "5.6", None, None, None, ()),
    ("mysql", (5, 6, 51), "innodb_io_capacity_max", "dynamic", "(unverified)", None, None, None,
     ()),
    ("mysql", (5, 7, 44), "innodb_max_dirty_pages_pct", "dynamic", "", "75", None, None, ()),
    ("mysql", (8, 0, 0), "innodb_max_dirty_pages_pct", "dynamic", "", "90", None, None, ()),
    ("mariadb", (10, 5, 6), "innodb_max_dirty_pages_pct", "dynamic", "", "75", 0, 99.999, ()),
    ("mariadb", (10, 5, 7), "innodb_max_dirty_pages_pct", "dynamic", "", "90", 0, 99.999, ()),
    ("mysql", (5, 7, 44), "innodb_max_dirty_pages_pct_lwm", "dynamic", "", "0", None, None, ()),
    ("mysql", (8, 0, 36), "innodb_max_dirty_pages_pct_lwm", "dynamic", "", "10", None, None,
     ()),
    ("mysql", (5, 7, 44), "innodb_flush_neighbors", "dynamic", "", "1", 0, 2, ("0", "1", "2")),
    ("mysql", (8, 0, 36), "innodb_flush_neighbors", "dynamic", "", "0", 0, 2, ("0", "1", "2")),
    ("mysql", (5, 5, 62), "innodb_flush_neighbors", "absent", "5.6", None, None, None, ()),
    ("mariadb", (10, 5, 6), "innodb_lru_scan_depth", "dynamic", "", "1024", None, None, ()),
    ("mariadb", (10, 5, 7), "innodb_lru_scan_depth", "dynamic", "", "1536", None, None, ()),
    ("mysql", (8, 0, 36), "innodb_lru_scan_depth", "dynamic", "", "1024", 100, None, ()),
    ("mysql", (8, 0, 36), "innodb_adaptive_flushing", "dynamic", "", "ON", None, None,
     ("OFF", "ON")),
    ("mysql", (5, 6, 51), "sort_buffer_size", "dynamic", "session", str(256 << 10), None, None,
     ()),
    ("mysql", (5, 5, 62), "sort_buffer_size", "dynamic", "(unverified)", str(2 * MB), None,
     None, ()),
    ("mariadb", (10, 11, 19), "sort_buffer_size", "dynamic", "", str(2 * MB), None, None, ()),
    ("ndb", (8, 0, 35), "DiskPageBufferMemory", "static", "rolling restart", "64M", 4 * MB,
     float(1 << 40), ()),
    ("ndb", (7, 6, 30), "diskpagebuffermemory", "static", "config.ini", "64M", 4 * MB,
     float(1 << 40), ()),
    ("mariadb", (10, 11, 19), "DiskPageBufferMemory", "absent", "NDB", None, None, None, ()),
    ("mariadb", (10, 5, 7), "innodb_max_purge_lag_wait", "dynamic", "blocks", None, None, None,
     ()),
    ("mariadb", (10, 5, 6), "innodb_max_purge_lag_wait", "absent", "10.5.7", None, None, None,
     ()),
    ("mariadb", (10, 4, 16), "innodb_max_purge_lag_wait", "dynamic", "", None, None, None, ()),
    ("mariadb", (10, 4, 15), "innodb_max_purge_lag_wait", "absent", "10.4.16", None, None, None,
     ()),
]


@pytest.mark.parametrize(
    ("flavor", "version", "knob", "mode", "note", "default", "lo", "hi", "choices"),
    CASES,
    ids=[f"{c[0]}-{'.'.join(map(str, c[1]))}-{c[2]}" for c in CASES],
)
def test_flavor_table_lookup(
    flavor: str, version: tuple[int, int, int], knob: str, mode: str, note: str,
    default: Any, lo: Any, hi: Any, choices: Any,
) -> None:
    fact = lookup(flavor, version, knob)
    assert fact is not None
    assert fact.mode == mode
    assert note in fact.note
    assert fact.default == default
    assert (fact.minimum, fact.maximum) == (lo, hi)
    assert fact.choices == choices
    assert fact.present == (mode != "absent")
    assert fact.dynamic == (mode == "dynamic")


def test_flavor_table_outside_its_rows() -> None:
    assert lookup("mariadb", (10, 11, 19), "no_such_knob") is None
    assert lookup("ndb", (8, 0, 35), "innodb_io_capacity") is None  # no NDB rows for InnoDB
    old = lookup("mysql", (5, 1, 73), "innodb_buffer_pool_size")
    assert old is not None and old.mode == "static"
    assert "unverified before mysql 5.5.0" in old.note
    fresh = lookup("mysql", (5, 5, 0), "innodb_buffer_pool_size")
    assert fresh is not None and "unverified" not in fresh.note


def test_flavor_table_covers_every_seed_knob_on_both_flavors() -> None:
    for knob in (*SEED_KNOBS, "innodb_adaptive_flushing", "DiskPageBufferMemory"):
        for flavor, version in (("mysql", (5, 5, 0)), ("mysql", (8, 4, 5)),
                                ("mariadb", (10, 1, 0)), ("mariadb", (11, 8, 3))):
            assert lookup(flavor, version, knob) is not None, (knob, flavor, version)
    assert lookup("ndb", (8, 4, 0), "DiskPageBufferMemory") is not None


def test_flavor_spans_are_contiguous_and_end_open() -> None:
    for knob, spans in flavors.TABLE.items():
        for flavor in {s.flavor for s in spans}:
            mine = sorted((s for s in spans if s.flavor == flavor), key=lambda s: s.since)
            for a, b in pairwise(mine):
                assert a.until == b.since, (knob, flavor, a, b)
            assert mine[-1].until is None, (knob, flavor)
            for span in mine:
                assert span.until is None or span.since < span.until, (knob, span)
                if span.mode == "absent":
                    assert span.note, (knob, span)  # an absent knob always says why


# -- the catalog of a real server ------------------------------------------------------------


async def show_global(info: ConnectionInfo) -> dict[str, str]:
    link = ServerLink(info)
    await link.connect()
    try:
        rows = await link.query("SHOW GLOBAL VARIABLES")
        return {str(n).lower(): str(v) for n, v in rows}
    finally:
        await link.close()


@pytest.mark.integration
def test_catalog_reads_every_variable(catalog: Catalog, mariadb_info: ConnectionInfo) -> None:
    assert catalog.version.flavor == "mariadb"
    present = catalog.present()
    assert len(present) > 400
    shown = asyncio.run(show_global(mariadb_info))
    names = {f.name for f in present}
    # Every global variable SHOW lists is in the catalog (SYSTEM_VARIABLES has the same set).
    assert set(shown) - names == set()
    for name in ("innodb_flush_log_at_trx_commit", "innodb_doublewrite", "sort_buffer_size",
                 "innodb_buffer_pool_size", "max_connections"):
        assert catalog.get(name).value == shown[name]


@pytest.mark.integration
def test_catalog_merges_server_and_flavor_facts(catalog: Catalog) -> None:
    doublewrite = catalog.get("innodb_doublewrite")
    assert doublewrite.present and doublewrite.mode == "static" and not doublewrite.dynamic
    assert doublewrite.status == "static"
    assert doublewrite.type == "BOOLEAN"

    io = catalog.get("innodb_io_capacity")
    assert io.mode == "dynamic" and io.dynamic
    assert io.minimum == 100
    assert io.maximum == float((1 << 32) - 1)
    assert "1210" in io.note  # the flavor table's note rides along with the server's facts
    assert io.source == "server+flavor"
    assert validate(io, "400") == 400

    purge = catalog.get("innodb_purge_threads")
    assert purge.dynamic and "MDEV-26520" in purge.note

    gone = catalog.get("innodb_thread_concurrency")
    assert not gone.present and gone.mode == "absent"
    assert "removed in 10.6.0" in gone.note
    assert catalog.get("INNODB_THREAD_CONCURRENCY") == gone

    ndb = catalog.get("DiskPageBufferMemory")
    assert not ndb.present and "NDB" in ndb.note

    unknown = catalog.get("no_such_variable_here")
    assert not unknown.present and unknown.note == "not a variable on this mariadb " + (
        catalog.version.short
    )
    assert "no_such_variable_here" not in catalog


@pytest.mark.integration
def test_catalog_seed_and_names(catalog: Catalog) -> None:
    assert [f.name for f in catalog.seed()] == list(SEED_KNOBS)
    assert catalog.get("innodb_io_capacity").name in catalog.names
    assert "innodb_thread_concurrency" in catalog.names  # absent, but known with its note
    for name in catalog.names:
        assert catalog.get(name).name == name
    assert catalog.get("innodb_io_capacity").to_json()["mode"] == "dynamic"


@pytest.mark.integration
@pytest.mark.parametrize(
    ("query", "first"),
    [
        ("bpsize", "innodb_buffer_pool_size"),
        ("flush log", "innodb_flush_log_at_trx_commit"),
        ("flush_log_at_trx", "innodb_flush_log_at_trx_commit"),
        ("io cap", "innodb_io_capacity"),
        ("iocapmax", "innodb_io_capacity_max"),
        ("dirty lwm", "innodb_max_dirty_pages_pct_lwm"),
        ("DoubleWrite", "innodb_doublewrite"),
        ("sort buffer", "sort_buffer_size"),
        ("thread conc", "innodb_thread_concurrency"),
        ("max_connections", "max_connections"),
    ],
)
def test_search_finds_the_knob_first(catalog: Catalog, query: str, first: str) -> None:
    hits = catalog.search(query)
    assert hits, query
    assert hits[0].name == first


@pytest.mark.integration
def test_search_edges(catalog: Catalog) -> None:
    assert catalog.search("") == []
    assert catalog.search("   ") == []
    assert catalog.search("zqzqzq") == []
    assert len(catalog.search("innodb", limit=7)) == 7
    assert catalog.search("innodb", limit=0) == []
    scored = catalog.scored("bpsize")
    assert [s for s, _f in scored] == sorted((s for s, _f in scored), reverse=True)
    assert all(0 < s <= 1 for s, _f in scored)
    names = [f.name for _s, f in scored]
    assert "innodb_buffer_pool_chunk_size" in names  # fuzzy, so the relatives come too
    assert "innodb_io_capacity" not in names
    # Every variable is found first by its own full name: the search spans the whole catalog.
    for name in catalog.names:
        assert catalog.search(name, limit=1)[0].name == name


def test_match_offsets_for_highlighting() -> None:
    def marked(name: str, query: str) -> str:
        at = set(match_offsets(name, query))
        return "".join(c.upper() if i in at else c for i, c in enumerate(name))

    assert marked("innodb_buffer_pool_size", "bpsize") == "innodb_Buffer_Pool_SIZE"
    assert marked("innodb_flush_log_at_trx_commit", "flush log") == (
        "innodb_FLUSH_LOG_at_trx_commit"
    )
    assert marked("innodb_io_capacity_max", "iocapmax") == "innodb_IO_CAPacity_MAX"
    assert marked("innodb_max_dirty_pages_pct_lwm", "lwm dirty") == (
        "innodb_max_DIRTY_pages_pct_LWM"
    )
    assert match_offsets("sort_buffer_size", "zz") == []


# -- MySQL paths, from rows shaped like each query's result (no MySQL server here) -------------


def test_mysql_8_rows_use_the_flavor_table_for_static_ness() -> None:
    version = ServerVersion("mysql", (8, 0, 36), "8.0.36")
    rows = [
        ("innodb_io_capacity", "200", "100", "18446744073709551615", None, None),
        ("innodb_doublewrite", "ON", "0", "0", None, None),
        ("innodb_page_cleaners", "4", "1", "64", None, None),
        ("innodb_buffer_pool_size", "134217728", "5242880", "18446744073709551615", None, None),
        ("some_plugin_knob", "17", "1", "100", None, None),
        ("some_plugin_switch", "OFF", "0", "0", None, None),
        ("ndb_version_string", "ndb-8.0.36", "0", "0", None, None),
    ]
    catalog = build_catalog(version, "mysql", rows)
    io = catalog.get("innodb_io_capacity")
    assert io.mode == "dynamic" and io.minimum == 100 and io.default == "200"
    doublewrite = catalog.get("innodb_doublewrite")
    assert doublewrite.mode == "dynamic" and "restart" in doublewrite.note
    assert doublewrite.type == "ENUM" and "DETECT_ONLY" in doublewrite.choices
    assert (doublewrite.minimum, doublewrite.maximum) == (None, None)  # 0/0 means "no range"
    cleaners = catalog.get("innodb_page_cleaners")
    assert cleaners.mode == "static" and not cleaners.dynamic
    assert catalog.get("innodb_buffer_pool_size").mode == "dynamic"
    plugin = catalog.get("some_plugin_knob")
    assert plugin.mode == "unknown" and not plugin.dynamic and plugin.status == "unknown"
    assert plugin.type == "INTEGER" and (plugin.minimum, plugin.maximum) == (1, 100)
    assert catalog.get("some_plugin_switch").type == "BOOLEAN"
    mt = catalog.get("innodb_mtflush_threads")
    assert not mt.present and mt.note == "MariaDB 10.1-10.2 only"
    dpbm = catalog.get("DiskPageBufferMemory")  # an SQL node of an NDB cluster
    assert dpbm.present and dpbm.mode == "static" and "rolling restart" in dpbm.note
    assert [f.name for f in catalog.seed()] == [*SEED_KNOBS, "DiskPageBufferMemory"]


def test_mysql_8_4_metadata_rows_carry_types() -> None:
    version = ServerVersion("mysql", (8, 4, 2), "8.4.2")
    rows = [
        ("innodb_io_capacity", "10000", "100", "18446744073709551615", "Integer", "GLOBAL"),
        ("innodb_adaptive_flushing", "ON", "", "", "Boolean", "GLOBAL"),
        ("innodb_max_dirty_pages_pct", "90.000000", "0", "99.999", "Numeric", "GLOBAL"),
    ]
    catalog = build_catalog(version, "mysql", rows)
    assert catalog.get("innodb_io_capacity").type == "INTEGER"
    assert catalog.get("innodb_io_capacity").default == "10000"
    assert catalog.get("innodb_adaptive_flushing").type == "BOOLEAN"
    pct = catalog.get("innodb_max_dirty_pages_pct")
    assert pct.type == "DOUBLE" and pct.maximum == 99.999 and pct.scope == "GLOBAL"


def test_mysql_5_show_rows_come_from_the_flavor_table() -> None:
    version = ServerVersion("mysql", (5, 6, 51), "5.6.51-log")
    rows = [
        ("innodb_buffer_pool_size", "134217728"),
        ("innodb_flush_log_at_trx_commit", "1"),
        ("innodb_thread_concurrency", "0"),
        ("innodb_io_capacity_max", "2000"),
    ]
    catalog = build_catalog(version, "show", rows)
    bp = catalog.get("innodb_buffer_pool_size")
    assert bp.mode == "static" and "5.7.5" in bp.note and bp.value == "134217728"
    flush = catalog.get("innodb_flush_log_at_trx_commit")
    assert flush.dynamic and flush.choices == ("0", "1", "2")
    assert validate(flush, "2") == 2
    assert catalog.get("innodb_thread_concurrency").maximum == 1000
    assert "(unverified)" in catalog.get("innodb_io_capacity_max").note
    cleaners = catalog.get("innodb_page_cleaners")
    assert not cleaners.present and "5.7.4" in cleaners.note


# -- the flavor table against the server's own metadata ----------------------------------------


async def system_variables(info: ConnectionInfo) -> tuple[ServerVersion, dict[str, dict[str, Any]]]:
    """information_schema.SYSTEM_VARIABLES of the real server, by lower-case name."""
    link = ServerLink(info)
    version = await link.connect()
    try:
        rows = await link.query(
            "SELECT VARIABLE_NAME, READ_ONLY, VARIABLE_TYPE, NUMERIC_MIN_VALUE, "
            "NUMERIC_MAX_VALUE, ENUM_VALUE_LIST, DEFAULT_VALUE "
            "FROM information_schema.SYSTEM_VARIABLES"
        )
    finally:
        await link.close()
    keys = ("read_only", "type", "min", "max", "enum", "default")
    return version, {
        str(row[0]).lower(): dict(zip(keys, (None if v is None else str(v) for v in row[1:]),
                                      strict=True))
        for row in rows
    }


def _same_number(a: str, b: str) -> bool:
    try:
        return float(a) == float(b)
    except ValueError:
        return a == b


def flavor_disagreements(
    version: ServerVersion, server: dict[str, dict[str, Any]]
) -> list[str]:
    """Every way the flavor table's facts for ``version`` differ from SYSTEM_VARIABLES."""
    wrong: list[str] = []
    for knob in flavors.knobs(version.flavor):
        fact = lookup(version.flavor, version.version, knob)
        assert fact is not None, knob
        row = server.get(knob.lower())
        if fact.mode == "absent":
            if row is not None:
                wrong.append(f"{knob}: table says absent, the server has it")
            continue
        if row is None:
            wrong.append(f"{knob}: table says {fact.mode}, the server has no such variable")
            continue
        if fact.mode in ("dynamic", "static"):
            server_mode = "static" if row["read_only"] == "YES" else "dynamic"
            if fact.mode != server_mode:
                wrong.append(f"{knob}: table says {fact.mode}, READ_ONLY={row['read_only']}")
        if fact.type and fact.type != row["type"]:
            wrong.append(f"{knob}: table type {fact.type}, server {row['type']}")
        for label, mine, theirs in (("minimum", fact.minimum, row["min"]),
                                    ("maximum", fact.maximum, row["max"])):
            if mine is not None and (theirs is None or float(theirs) != float(mine)):
                wrong.append(f"{knob}: table {label} {mine}, server {theirs}")
        if fact.choices:
            if row["enum"] is not None:
                allowed = tuple(row["enum"].split(","))
            elif row["min"] is not None and row["max"] is not None:  # a small numeric range
                allowed = tuple(str(n) for n in range(int(row["min"]), int(row["max"]) + 1))
            else:
                allowed = ()
            if fact.choices != allowed:
                wrong.append(f"{knob}: table choices {fact.choices}, server {allowed}")
        if fact.default is not None and (
            row["default"] is None or not _same_number(fact.default, row["default"])
        ):
            wrong.append(f"{knob}: table default {fact.default}, server {row['default']}")
    return wrong


@pytest.mark.integration
def test_flavor_table_agrees_with_the_servers_system_variables(
    mariadb_info: ConnectionInfo,
) -> None:
    """Every fact the table states for this server's version, against SYSTEM_VARIABLES."""
    version, server = asyncio.run(system_variables(mariadb_info))
    assert version.flavor == "mariadb" and len(server) > 400
    described = [k for k in flavors.knobs("mariadb")
                 if (f := lookup("mariadb", version.version, k)) is not None and f.present]
    assert len(described) >= 15  # the comparison below covers the seed knobs, not a few
    assert flavor_disagreements(version, server) == []


@pytest.mark.integration
def test_the_search_index_is_built_by_the_first_search_not_carried_before(
    catalog: Catalog,
) -> None:
    """The live screen gets the catalog pickled from the session's process; neither needs
    the search index (~1 KB a name) until someone searches (issue 16 row 5d)."""
    import pickle

    built = Catalog(catalog.version, catalog.present())  # the fixture's may have searched
    fresh = pickle.loads(pickle.dumps(built))
    copy = pickle.loads(pickle.dumps(built))
    assert fresh._index is None
    bare = len(pickle.dumps(fresh))
    hits = [f.name for f in fresh.search("buffer pool", limit=20)]
    assert fresh._index is not None and len(fresh._index) == len(fresh)
    assert len(pickle.dumps(fresh)) > bare * 1.5  # what the index would have added
    assert hits == [f.name for f in copy.search("buffer pool", limit=20)]
    assert hits[0].startswith("innodb_buffer_pool")
