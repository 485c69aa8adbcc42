"""MyRocks live: a sandbox with ha_rocksdb, sysbench tables in RocksDB, the MyRocks metrics."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import EventCollector
from harness.binaries import require_binary, require_file
from harness.journals import board_of
from knobtop.hosts.local import LocalHost
from knobtop.journal import JournalReader, Load, Phase, Sample
from knobtop.lab import LabError, Sandbox, missing_plugin, server_plugin_dir
from knobtop.load.base import LoadError, LoadSpec
from knobtop.load.builtin import BuiltinDriver
from knobtop.load.prepare import prepare_tables
from knobtop.load.sysbench import Sysbench
from knobtop.metrics.derive import ROCKS_COUNTERS
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.session.core import Session, SessionConfig

pytestmark = pytest.mark.integration

ROCKS = LoadSpec(workload="oltp_point_select", threads=2, tables=2, table_size=2000,
                 engine="rocksdb")
ROCKS_METRICS = ("rocks_hit_ratio", "rocks_stalls", "rocks_stall_ms")


@pytest.fixture(scope="module")
def rocks_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Sandbox]:
    """A real mariadbd started with --plugin-load-add=ha_rocksdb.so (this module only)."""
    server = require_binary("mariadbd", "mariadb-server")
    require_binary("mariadb-install-db", "mariadb-server")
    require_file(str(server_plugin_dir(server) / "ha_rocksdb.so"), "mariadb-plugin-rocksdb")
    sandbox = Sandbox(tmp_path_factory.mktemp("myrocks"), plugins=("ha_rocksdb",))
    sandbox.start()
    yield sandbox
    sandbox.stop()


async def query(info: ConnectionInfo, sql: str) -> list[tuple[object, ...]]:
    link = ServerLink(info)
    await link.connect()
    try:
        return [tuple(row) for row in await link.query(sql)]
    finally:
        await link.close()


async def engines(info: ConnectionInfo, database: str) -> dict[str, str]:
    rows = await query(info, "SELECT TABLE_NAME, ENGINE FROM information_schema.TABLES "
                             f"WHERE TABLE_SCHEMA = '{database}'")
    return {str(name): str(engine) for name, engine in rows}


def sample_line_sizes(journal: Path) -> list[int]:
    return [len(ln) for ln in journal.read_bytes().splitlines() if b'"ev":"sample"' in ln]


async def test_myrocks_metrics_under_a_real_sysbench_load(
    rocks_lab: Sandbox, sysbench_path: str, tmp_path: Path, collector: EventCollector
) -> None:
    info = rocks_lab.connection()
    driver = Sysbench(LocalHost(), mysql_socket=str(rocks_lab.socket), user=info.user,
                      password=info.password, database="sbtest")
    journal = tmp_path / "rocks.knobtop.jsonl"
    config = SessionConfig(profile="myrocks", connection=info, journal_path=journal,
                           interval=0.5, load=ROCKS)
    session = Session(config, LocalHost(), driver)
    session.listeners.append(collector)
    await session.open()
    try:
        assert await session.prepare_load() is True
        # Fresh rows sit in the memtable; flushed to SST files, reads go through the
        # block cache (what the hit ratio measures).
        await query(info, "SET GLOBAL rocksdb_force_flush_memtable_now = 1")
        await session.start_load()
        await collector.wait_for(lambda ev: sum(isinstance(e, Load) for e in ev) >= 4, 20)
        await session.stop_load()
        await collector.wait_for(
            lambda ev: any(isinstance(e, Phase) and e.action == "stop" for e in ev), 15
        )
    finally:
        await session.close()

    assert set((await engines(info, "sbtest")).values()) == {"ROCKSDB"}
    board, samples, loads, phases = board_of(journal)
    names = board.header.counters
    assert set(ROCKS_COUNTERS) <= set(names)
    for sample in samples:
        assert all(sample.v[names.index(n)] is not None for n in ROCKS_COUNTERS)
    assert board.has_rocksdb is True
    assert phases[0].summary["engine"] == "rocksdb"

    # Intervals that end while the load reports (not before it, not the idle tail).
    first, last = loads[0].t - 1, loads[-1].t
    under_load = [t for t, _ in board.series["tps"].points() if first < t <= last]
    assert len(under_load) >= 4
    for name in ROCKS_METRICS:
        values = [v for t, v in board.series[name].points() if t in under_load]
        assert all(v is not None for v in values), (name, values)
    ratios = [v for t, v in board.series["rocks_hit_ratio"].points() if t in under_load]
    assert all(v is not None and 0.0 <= v <= 100.0 for v in ratios), ratios
    for name in ("rocks_stalls", "rocks_stall_ms"):
        assert all(v is not None and v >= 0 for t, v in board.series[name].points()
                   if t in under_load)
    hit = names.index("Rocksdb_block_cache_hit")
    before, after = samples[0].v[hit], samples[-1].v[hit]
    assert before is not None and after is not None and after > before

    sizes = sample_line_sizes(journal)
    print(f"MyRocks sample lines: max {max(sizes)} bytes")
    assert max(sizes) < 1024

    # The screen's MyRocks page (key 3) draws what this real run recorded.
    from harness.ui import until, widget_text
    from knobtop.ui.app import KnobtopApp
    from knobtop.ui.widgets.metric_graph import MetricGraph

    reader = JournalReader(journal)
    app = KnobtopApp(header=reader.header, events=list(reader))
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app._painted > 0)
        await pilot.press("3")
        graph = app.live.query_one("#myrocks-rocks_hit_ratio", MetricGraph)
        await until(pilot, lambda: bool(widget_text(graph)))
        assert widget_text(graph)[0].startswith("Block cache hit")
        # fed with this run's hit ratios (a few seconds: a sliver at the right edge)
        drawn = [v for _, v in graph._points if v is not None]
        assert drawn and all(0 <= v <= 100 for v in drawn)
        assert not any("no RocksDB" in str(n.message) for n in app._notifications)


async def test_the_builtin_driver_makes_rocksdb_tables_and_remakes_innodb_ones(
    rocks_lab: Sandbox,
) -> None:
    info = rocks_lab.connection()
    driver = BuiltinDriver(info, database="sbtest_builtin")
    innodb = LoadSpec(workload="oltp_point_select", tables=1, table_size=500)
    assert await prepare_tables(info, driver, innodb) is True
    assert await engines(info, "sbtest_builtin") == {"sbtest1": "InnoDB"}
    # Same size, other engine: not "already there"; dropped and made again in RocksDB.
    rocks = LoadSpec(workload="oltp_point_select", tables=1, table_size=500, engine="rocksdb")
    assert await prepare_tables(info, driver, rocks) is True
    assert await engines(info, "sbtest_builtin") == {"sbtest1": "ROCKSDB"}
    assert await prepare_tables(info, driver, rocks) is False
    assert await query(info, "SELECT COUNT(*) FROM sbtest_builtin.sbtest1") == [(500,)]


async def test_the_lab_restart_command_keeps_the_plugin(rocks_lab: Sandbox) -> None:
    """Static knobs restart the lab with ``python -m knobtop.lab restart DIR``."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "knobtop.lab", "restart", str(rocks_lab.root),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(120):
        _, err = await proc.communicate()
    assert proc.returncode == 0, err.decode()
    assert Sandbox.existing(rocks_lab.root).plugins == ("ha_rocksdb",)
    rows = await query(rocks_lab.connection(),
                       "SELECT SUPPORT FROM information_schema.ENGINES WHERE ENGINE = 'ROCKSDB'")
    assert rows == [("YES",)]
    assert await query(rocks_lab.connection(), "SELECT COUNT(*) FROM sbtest.sbtest1") == [(2000,)]


async def test_no_myrocks_panel_on_an_innodb_server(
    mariadb: Sandbox, tmp_path: Path, collector: EventCollector
) -> None:
    journal = tmp_path / "innodb.knobtop.jsonl"
    config = SessionConfig(profile="innodb", connection=mariadb.connection(),
                           journal_path=journal, interval=0.2)
    session = Session(config, LocalHost(), None)
    session.listeners.append(collector)
    await session.open()
    try:
        await collector.wait_for(lambda ev: sum(isinstance(e, Sample) for e in ev) >= 4, 10)
    finally:
        await session.close()
    board, samples, _, _ = board_of(journal)
    names = board.header.counters
    assert all(s.v[names.index(n)] is None for s in samples for n in ROCKS_COUNTERS)
    assert board.has_rocksdb is False
    assert all(board.latest[name] is None for name in ROCKS_METRICS)
    assert board.latest["qps"] is not None
    sizes = sample_line_sizes(journal)
    print(f"InnoDB sample lines: max {max(sizes)} bytes")
    assert max(sizes) < 1024


def test_a_missing_plugin_names_the_package_and_starts_nothing(tmp_path: Path) -> None:
    server = require_binary("mariadbd", "mariadb-server")
    plugin_dir = server_plugin_dir(server)
    message = missing_plugin("ha_rocksdb", plugin_dir)
    assert "mariadb-plugin-rocksdb" in message
    assert "apt-get install -y mariadb-plugin-rocksdb" in message
    sandbox = Sandbox(tmp_path / "lab", plugins=("ha_nosuchengine",))
    with pytest.raises(LabError, match=f"ha_nosuchengine.so is not in {plugin_dir}"):
        sandbox.start()
    assert not sandbox.datadir.exists() and sandbox.running_pid() is None


ENGINE_ARMS = """
name = "engines"
description = "InnoDB vs InnoDB compressed vs MyRocks on one server (issue 18 part 3)"
[load]
workload = "oltp_point_select"
threads = [2]
duration = 5
tables = 1
table_size = 2000
[run]
replicates = 1
[[arm]]
name = "innodb"
knobs = {}
load = { engine = "InnoDB" }
[[arm]]
name = "kbs8"
knobs = {}
load = { engine = "InnoDB", table_options = { KEY_BLOCK_SIZE = 8 } }
[[arm]]
name = "rocksdb"
knobs = {}
load = { engine = "RocksDB" }
"""


async def test_arms_on_innodb_compressed_and_rocksdb_tables_each_get_their_own(
    rocks_lab: Sandbox, sysbench_path: str, tmp_path: Path
) -> None:
    """Issue 18: arms that differ in engine and table options prepare each their own
    tables (in a database per shape, checked on the server first) and report a row each."""

    from knobtop.analysis.results import build, results_markdown
    from knobtop.recipes.reader import load_recipe
    from knobtop.recipes.runner import RecipeRunner

    path = tmp_path / "engines.toml"
    path.write_text(ENGINE_ARMS)
    recipe = load_recipe(path).changed(duration=2, warmup=1, pause=0.0)
    info = rocks_lab.connection()
    driver = Sysbench(LocalHost(), mysql_socket=str(rocks_lab.socket), user=info.user,
                      password=info.password, database="sbtest")
    journal = tmp_path / "engines.knobtop.jsonl"
    session = Session(SessionConfig(profile="engines", connection=info, journal_path=journal,
                                    interval=0.5), LocalHost(), driver)
    await session.open()
    try:
        steps = (await RecipeRunner(session, recipe).run()).steps
    finally:
        await session.close()
    assert await engines(info, "sbtest_innodb") == {"sbtest1": "InnoDB"}
    assert await engines(info, "sbtest_innodb_kbs8") == {"sbtest1": "InnoDB"}
    assert await engines(info, "sbtest_rocksdb") == {"sbtest1": "ROCKSDB"}
    options = await query(info, "SELECT CREATE_OPTIONS FROM information_schema.TABLES WHERE "
                                "TABLE_SCHEMA = 'sbtest_innodb_kbs8'")
    assert "key_block_size=8" in str(options[0][0]).lower()
    assert sorted(s.arm for s in steps) == ["innodb", "kbs8", "rocksdb"]
    assert all(s.avg_tps and s.avg_tps > 0 for s in steps)
    # Each arm's size is its own database's (not every arm's together).
    size = {s.arm: s.db_mb for s in steps}
    assert all(v is not None for v in size.values()) and size["rocksdb"] != size["innodb"]
    # Each step ran on its arm's database: its phase start says the engine.
    starts = [e for e in JournalReader(journal) if isinstance(e, Phase) and e.action == "start"]
    assert [s.summary.get("engine") for s in starts] == [
        {"innodb": "InnoDB", "kbs8": "InnoDB", "rocksdb": "RocksDB"}[s.arm] for s in steps]
    assert starts[[s.arm for s in steps].index("kbs8")].summary["table_options"] == {
        "KEY_BLOCK_SIZE": "8"}
    marks = [e.label for e in JournalReader(journal) if e.kind == "mark"]
    assert any("arm rocksdb: tables of their own (RocksDB" in m for m in marks)
    md = results_markdown(build(recipe.name, ["innodb", "kbs8", "rocksdb"], [2], steps))
    for arm in ("innodb", "kbs8", "rocksdb"):
        assert f"| {arm} |" in md


async def test_table_options_the_server_refuses_are_said_before_anything_loads(
    rocks_lab: Sandbox, sysbench_path: str
) -> None:
    info = rocks_lab.connection()
    driver = Sysbench(LocalHost(), mysql_socket=str(rocks_lab.socket), user=info.user,
                      password=info.password, database="sbtest_badshape")
    spec = LoadSpec(workload="oltp_point_select", tables=1, table_size=100, engine="InnoDB",
                    table_options=(("KEY_BLOCK_SIZE", "3"),))
    with pytest.raises(LoadError, match="KEY_BLOCK_SIZE=3") as raised:
        await prepare_tables(info, driver, spec)
    assert "table options KEY_BLOCK_SIZE=3" in str(raised.value)
    assert await engines(info, "sbtest_badshape") == {}  # nothing loaded, no scratch left
