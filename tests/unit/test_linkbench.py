"""LinkBench in the built-in driver (issue 20): the workload's pieces (skews, mix, sizes,
the out-degree approximation, its statements) and, live, a load phase checked with SQL and
a request phase whose operation shares and per-operation percentiles are checked."""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import EventCollector, show_tables
from harness.served import served_session
from harness.sshd import SshServer
from harness.ui import until
from knobtop.hosts.local import LocalHost
from knobtop.journal import JournalReader, Load, Phase
from knobtop.lab import LAB_DB, Sandbox
from knobtop.load import linkbench as lb
from knobtop.load.base import LoadError, LoadSpec
from knobtop.load.builtin import BuiltinDriver
from knobtop.load.sysbench import Sysbench, refuse_builtin_only
from knobtop.server.link import ServerLink
from knobtop.session.core import Session, SessionConfig
from knobtop.ui.app import KnobtopApp


def test_the_mix_is_linkbenchs_and_sums_to_100() -> None:
    assert math.isclose(sum(lb.MIX.values()), 100.0)
    assert lb.MIX["getlinklist"] == 50.71 and lb.MIX["getlink"] == 0.53
    assert {lb.SHORT[o] for o in ("updatenode", "getnode", "updatelink", "getlinklist")} == \
        {"un", "gn", "ul", "gl"}


def test_requests_draw_the_mix_within_sampling_error() -> None:
    requests = lb.Requests(10_000, random.Random(7))
    n = 200_000
    seen = collections.Counter(requests.op() for _ in range(n))
    for op, pct in lb.MIX.items():
        share = seen[op] / n
        p = pct / 100
        assert abs(share - p) <= 4 * math.sqrt(p * (1 - p) / n), (op, share, p)


@pytest.mark.parametrize("s", [lb.LINK_READ_SKEW, lb.NODE_UPDATE_SKEW])
def test_zipf_ranks_follow_the_shape(s: float) -> None:
    """P(rank k) falls as k^-s: the ratio of the counts of rank bands [1,10) and [100,1000)
    matches the continuous law's."""
    n = 100_000
    z = lb.Zipf(n, s)
    rng = random.Random(3)
    draws = [z.rank(rng) for _ in range(200_000)]
    assert min(draws) >= 1 and max(draws) <= n

    def mass(a: int, b: int) -> float:  # the continuous law's share of ranks [a, b)
        top = (n + 1) ** (1 - s) - 1
        return (b ** (1 - s) - a ** (1 - s)) / top

    low = sum(1 for d in draws if d < 10) / len(draws)
    mid = sum(1 for d in draws if 100 <= d < 1000) / len(draws)
    assert low == pytest.approx(mass(1, 10), rel=0.05)
    assert mid == pytest.approx(mass(100, 1000), rel=0.05)
    # the ids are a permutation of the ranks: every id is reachable, none twice
    ids = {z.id_of(r) for r in range(1, 1001)}
    assert len(ids) == 1000 and all(1 <= i <= n for i in ids)
    with pytest.raises(ValueError):
        lb.Zipf(10, 1.0)


def test_multiget_sizes_are_geometric_on_1_to_128() -> None:
    rng = random.Random(5)
    sizes = [lb.multiget_size(rng) for _ in range(100_000)]
    assert min(sizes) == 1 and max(sizes) <= lb.MULTIGET_MAX
    p = lb.MULTIGET_P
    assert sizes.count(1) / len(sizes) == pytest.approx(p, abs=0.01)
    assert sizes.count(2) / len(sizes) == pytest.approx(p * (1 - p), abs=0.01)
    assert sum(sizes) / len(sizes) == pytest.approx(1 / p, rel=0.03)


def test_out_degree_is_the_documented_power_law_and_fixed_per_node() -> None:
    degrees = [lb.out_degree(i) for i in range(1, 50_001)]
    assert degrees == [lb.out_degree(i) for i in range(1, 50_001)]  # a function of the id
    assert max(degrees) <= lb.MAX_DEGREE
    zero = degrees.count(0) / len(degrees)
    assert zero == pytest.approx(lb.DEGREE_CDF[0], abs=0.01)
    assert sum(degrees) / len(degrees) == pytest.approx(lb.MEAN_DEGREE, rel=0.1)
    nodes, links, counts = lb.expected_rows(1000)
    assert (nodes, links) == (1000, lb.expected_links(1000))
    assert counts == sum(min(lb.out_degree(i), 2) for i in range(1, 1001))


def test_each_operation_is_whole_sql_and_link_writes_are_transactions() -> None:
    requests = lb.Requests(1000, random.Random(1))
    for op in lb.OPS:
        statements = requests.statements(op, 1_700_000_000)
        texts = [lb.sql_of(key, args) for key, args in statements]
        assert all("?" not in t for t in texts), texts
        if op in ("addlink", "updatelink", "deletelink"):
            assert texts[0] == "BEGIN" and texts[-1] == "COMMIT" and len(texts) == 4
            assert "counttable" in texts[2] and "linktable" in texts[1]
        else:
            assert len(texts) == 1
    many = requests.statements("getlink", 1)
    (key, args), = many
    assert lb.sql_of(key, args).count(",", lb.sql_of(key, args).index("IN (")) == len(args) - 3
    with pytest.raises(ValueError, match="quoting"):
        lb.sql_of("getnode", ("1 OR 1=1",))


def test_sysbench_refuses_linkbench_naming_the_fix() -> None:
    with pytest.raises(LoadError, match="built-in driver"):
        refuse_builtin_only(LoadSpec(workload="linkbench"))
    refuse_builtin_only(LoadSpec(workload="oltp_read_write"))


# --------------------------------------------------------------------------- live


def run_lab(tmp_path: Path, *extra: str) -> Path:
    journal = tmp_path / "lb.knobtop.jsonl"
    run = subprocess.run(
        [sys.executable, "-m", "knobtop.cli", "lab", "--dir", str(tmp_path / "lab"),
         "--load", "linkbench", "--table-size", "3000", "--threads", "4", "--headless",
         "--duration", "8", "--journal", str(journal), "--keep-running", *extra],
        capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:] + run.stdout[-2000:]
    assert "Loaded the LinkBench graph: 3,000 nodes" in run.stdout + run.stderr
    return journal


async def rows(root: Path, sql: str) -> list[tuple[object, ...]]:
    """A query on the lab sandbox in ``root`` (still running: --keep-running)."""
    link = ServerLink(Sandbox.existing(root).connection(use_socket=True))
    await link.connect()
    try:
        return [tuple(r) for r in await link.query(sql)]
    finally:
        await link.close()


@pytest.mark.integration
async def test_a_load_phase_and_a_request_phase_on_the_lab(tmp_path: Path) -> None:
    journal = run_lab(tmp_path)
    root = tmp_path / "lab"
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    stop = next(e for e in events if e["ev"] == "phase" and e["action"] == "stop")
    ops = stop["summary"]["sysbench"]["ops"]
    try:
        _, links, counts = lb.expected_rows(3000)
        # The load phase's graph, checked with SQL. Requests never delete a link row
        # (deletelink hides it) and addlink adds at most one per node (its next id2), so
        # every node has exactly its out-degree's rows, or one more.
        per_node = dict(await rows(root, f"SELECT id1, COUNT(*) FROM {LAB_DB}.linktable "
                                         "GROUP BY id1"))
        extra = [int(per_node.get(i, 0)) - lb.out_degree(i) for i in range(1, 3001)]  # type: ignore[call-overload]
        assert set(extra) <= {0, 1}, collections.Counter(extra)
        assert sum(extra) <= ops["addlink"][0]
        assert sum(int(n) for n in per_node.values()) == links + sum(extra)  # type: ignore[call-overload]
        # so the loaded degree shape is out_degree's, whose distribution the unit tests check
        loaded = collections.Counter(int(per_node.get(i, 0)) - e  # type: ignore[call-overload]
                                     for i, e in zip(range(1, 3001), extra, strict=True))
        assert loaded[0] / 3000 == pytest.approx(lb.DEGREE_CDF[0], abs=0.04)
        node_count = (await rows(root, f"SELECT COUNT(*) FROM {LAB_DB}.nodetable "
                                       "WHERE id <= 3000"))[0][0]
        assert 3000 - ops["deletenode"][0] <= node_count <= 3000  # type: ignore[operator]
        count_rows = (await rows(root, f"SELECT COUNT(*) FROM {LAB_DB}.counttable"))[0][0]
        assert counts <= count_rows <= counts + ops["addlink"][0]  # type: ignore[operator]
        comment = (await rows(root, "SELECT TABLE_COMMENT FROM information_schema.TABLES WHERE "
                                    f"TABLE_SCHEMA='{LAB_DB}' AND TABLE_NAME='nodetable'"))[0][0]
        assert comment == lb.LOADED.format(maxid1=3000)
        partitions = (await rows(root, "SELECT COUNT(*) FROM information_schema.PARTITIONS "
                                       f"WHERE TABLE_SCHEMA='{LAB_DB}' AND "
                                       "TABLE_NAME='linktable'"))[0][0]
        assert partitions == lb.PARTITIONS
        # Every request's statement ran server-side prepared (the binary protocol), each
        # shape prepared once per connection: 4 clients, LinkBench's statements and
        # getlink's shapes (1..128 ids) at most. Beyond the requests counted: those that
        # failed (a deadlock: up to two statements each) and the 4 cut off by the run's end.
        status = dict(await rows(root, "SHOW GLOBAL STATUS LIKE 'Com_stmt_%'"))
        summary = stop["summary"]["sysbench"]
        statements = summary["reads"] + summary["writes"]
        assert statements > 2000
        executed = int(status["Com_stmt_execute"])  # type: ignore[call-overload]
        assert statements <= executed <= statements + 2 * summary["ignored_errors"] + 2 * 4
        assert 0 < int(status["Com_stmt_prepare"]) <= 4 * (len(lb.SQL) - 1 + 128)  # type: ignore[call-overload]
    finally:
        Sandbox.existing(root).stop()
    loads = [e for e in events if e["ev"] == "load"]
    assert len(loads) >= 6 and all(e["ops"] for e in loads)
    # the request phase's operation shares match the mix (4 standard errors)
    total = sum(v[0] for v in ops.values())
    assert total > 2000
    for op, pct in lb.MIX.items():
        p = pct / 100
        share = ops.get(op, [0])[0] / total
        assert abs(share - p) <= 4 * math.sqrt(p * (1 - p) / total) + 0.002, (op, share)
    for op, (count, p50, p95, p99, top, mean) in ops.items():
        assert 0 < p50 <= p95 <= p99 <= top * 1.01, op
        assert count > 0 and mean > 0
    # each second: ops/s per operation and ordered percentiles
    for e in loads:
        for op, (rate, p50, p95, p99, top) in e["ops"].items():
            assert rate > 0 and p50 <= p95 <= p99 <= top * 1.01, (op, e["ops"][op])


@pytest.mark.integration
def test_per_operation_percentiles_agree_with_the_raw_latencies(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch
                                                                ) -> None:
    """The run's per-operation p50/p95/p99 (one DDSketch per operation, 1% relative
    accuracy) against the exact quantiles of every latency the workers timed (written raw
    under KNOBTOP_LATENCY_LOG, a test-only switch)."""
    raw = tmp_path / "raw"
    monkeypatch.setenv("KNOBTOP_LATENCY_LOG", str(raw))
    journal = run_lab(tmp_path)
    Sandbox.existing(tmp_path / "lab").stop()
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    stop = next(e for e in events if e["ev"] == "phase" and e["action"] == "stop")
    ops = stop["summary"]["sysbench"]["ops"]
    timed: dict[str, list[float]] = collections.defaultdict(list)
    files = sorted(tmp_path.glob("raw.*"))
    assert files
    for path in files:
        for line in path.read_text().splitlines():
            op, ms = line.split()
            timed[op].append(float(ms))
    assert {op: len(v) for op, v in timed.items()} == {op: int(v[0]) for op, v in ops.items()}
    for op, values in timed.items():
        values.sort()
        _, p50, p95, p99, top, mean = ops[op]
        for q, got in ((0.5, p50), (0.95, p95), (0.99, p99)):
            exact = values[int(q * (len(values) - 1))]
            assert got == pytest.approx(exact, rel=0.021, abs=0.002), (op, q, got, exact)
        assert top == pytest.approx(values[-1], abs=0.002)
        assert mean == pytest.approx(sum(values) / len(values), rel=1e-3, abs=0.002)


# --------------------------------------------------------------------------- recipes

LB = """\
name = "lb"
description = "LinkBench on the lab"
[load]
workload = "linkbench"
maxid1 = 3000
requesters = [4, 8]
loaders = 2
duration = 5
[run]
replicates = 2
[[arm]]
name = "innodb"
load = { engine = "InnoDB" }
[[arm]]
name = "myrocks"
load = { engine = "RocksDB" }
"""


def test_a_linkbench_recipe_takes_maxid1_requesters_loaders_and_times_its_windows(
    tmp_path: Path,
) -> None:
    from knobtop.recipes.reader import load_recipe

    path = tmp_path / "lb.toml"
    path.write_text(LB)
    recipe = load_recipe(path)
    assert (recipe.load.workload, recipe.load.table_size, recipe.threads, recipe.load.loaders) == (
        "linkbench", 3000, (4, 8), 2)
    assert recipe.timed  # per-operation percentiles over whole windows
    spec = recipe.load_spec(8, 5, recipe.arms[1])
    assert (spec.table_size, spec.threads, spec.loaders, spec.engine) == (3000, 8, 2,
                                                                          "RocksDB")


@pytest.mark.parametrize(("old", "new", "key", "says"), [
    ("maxid1 = 3000", "table_size = 3000", "load.table_size", "maxid1"),
    ("requesters = [4, 8]", "requesters = [4, 8]\nthreads = 4", "load.requesters",
     "the same thing"),
    ("maxid1 = 3000", "maxid1 = 10", "load.maxid1", "out of range"),
    ('workload = "linkbench"', 'workload = "oltp_read_write"\nthreads = 4', "load.maxid1",
     "LinkBench's"),
])
def test_linkbench_keys_are_checked(tmp_path: Path, old: str, new: str, key: str,
                                    says: str) -> None:
    from knobtop.recipes.model import RecipeError
    from knobtop.recipes.reader import load_recipe

    path = tmp_path / "lb.toml"
    path.write_text(LB.replace(old, new, 1))
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    assert info.value.key == key and says in str(info.value), str(info.value)


def test_the_linkbench_table_has_the_posts_load_and_request_phases() -> None:
    """Issue 39 item 6: the load part from the steps' load_phase readings (KB of 1024,
    mysqld CPU microseconds per insert, GB at the end of the load), the request part from
    the cells' medians converted to the post's 1024s, both in Markdown, one CSV."""
    from knobtop.analysis.results import build
    from knobtop.analysis.seedtables import seed_table
    from knobtop.journal import StepResult

    phase = {"rows": 100_000.0, "seconds": 5.0, "cpu_s": 4.0, "written_bytes": 102_400_000.0,
             "db_bytes": 2.0 * 1024 ** 3, "rss_bytes": 0.5 * 1024 ** 3}

    def step(arm: str, rep: int, tps: float, gl: float) -> StepResult:
        ops = {op: [100.0, 1.0, 2.0, p99, p99 * 2, 1.2] for op, p99 in
               (("updatenode", 5.0), ("getnode", 2.0), ("updatelink", 9.0),
                ("getlinklist", gl))}
        innodb = arm == "innodb"
        return StepResult(t=0.0, wall=0.0, recipe="lb", index=rep, replicate=rep, arm=arm,
                          threads=4, start=0.0, end=5.0, tps=tps, p95=1.0, avg_tps=tps,
                          ops=ops, load_ips=20_000.0 if innodb else None,
                          load_phase=phase if innodb else {},
                          mysqld_us_txn=500.0, r_s=10.0, rmb_s=1.048576, wmb_s=2.097152,
                          reads_txn=0.5, rkb_txn=2.048, wkb_txn=4.096,
                          db_mb=1073.741824, rss_mb=536.870912)

    steps = [step("innodb", 1, 3000, 4.0), step("innodb", 2, 3400, 6.0),
             step("myrocks", 1, 2400, 8.0), step("myrocks", 2, 2500, 9.0)]
    table = seed_table("linkbench", build("lb", ["innodb", "myrocks"], [4], steps, "end"))
    load, request = table.parts
    assert load.header == ["configuration", "ips", "wKB/i", "Mcpu/i", "size GB", "RSS GB",
                           "wMB/s", "cpu%"]
    # 100k rows in 5 s; 100,000 KiB written; 4 CPU s = 40 us per insert; 2 and 0.5 GiB
    assert load.rows == [["innodb", "20,000", "1.000", "40.0", "2.000", "0.500", "19.53",
                          "80.0"]]  # myrocks: no load phase recorded, no row
    assert request.header == ["configuration", "tps", "r/s", "rMB/s", "wMB/s", "cpu%",
                              "un p99", "gn p99", "ul p99", "gl p99", "Mcpu/t", "r/t",
                              "rKB/t", "wKB/t", "size GB", "RSS GB"]
    # 500 us/t x 3200 t/s = 1.6 CPU s/s; KB and MB of 1000 shown in the post's 1024s
    assert request.rows[0] == ["innodb", "3,200", "10.0", "1.00", "2.00", "160.0", "5.0",
                               "2.0", "9.0", "5.0", "500.0", "0.500", "2.000", "4.000",
                               "1.000", "0.500"]
    assert request.rows[1][0] == "myrocks" and request.rows[1][9] == "8.5"
    md = table.markdown()
    assert md.index("**load phase**") < md.index("**request phase**")
    assert "Mcpu/i = mysqld's user + system CPU microseconds per insert" in md
    lines = table.csv().splitlines()
    assert lines[0].startswith("arm,threads,phase,load_ips,load_wkb_i,load_mcpu_i,")
    assert lines[1].startswith("innodb,,load,20000,1,40,2,0.5,19.53125,80,,")
    assert lines[2].startswith("innodb,4,request,,,,,,,,3200,10,1,2,160,500,")
    assert lines[2].endswith(",5,2,9,5") and len(lines) == 4


def test_a_journal_from_before_the_load_readings_shows_its_inserts_per_second() -> None:
    from knobtop.analysis.results import build
    from knobtop.analysis.seedtables import seed_table
    from knobtop.journal import StepResult

    steps = [StepResult(t=0.0, wall=0.0, recipe="lb", index=1, replicate=1, arm="innodb",
                        threads=4, start=0.0, end=5.0, tps=900.0, p95=1.0, avg_tps=900.0,
                        load_ips=20_000.0)]
    load, request = seed_table("linkbench", build("lb", ["innodb"], [4], steps)).parts
    assert load.rows == [["innodb", "20,000", *["\u2013"] * 6]]
    assert request.rows[0][:2] == ["innodb", "900"]


def test_the_load_phase_readings_are_the_footprints_deltas() -> None:
    from knobtop.metrics.footprint import Footprint, load_phase

    first = Footprint(t=0.0, pid=7, cpu=1.0, rss=1e8, disk="sda", io=(1, 10, 2, 20))
    last = Footprint(t=9.0, pid=7, cpu=3.5, rss=2e8, disk="sda", io=(4, 70, 12, 4116),
                     db_bytes=5e7, datadir_bytes=9e7)
    assert load_phase(first, last, 1000, 4.0) == {
        "rows": 1000.0, "seconds": 4.0, "cpu_s": 2.5, "reads": 3, "read_bytes": 60,
        "writes": 10, "written_bytes": 4096, "db_bytes": 5e7, "datadir_bytes": 9e7,
        "rss_bytes": 2e8}
    restarted = Footprint(t=9.0, pid=8, cpu=0.5, disk="sdb", io=(0, 0, 0, 0))
    assert load_phase(first, restarted, 1000, 4.0) == {"rows": 1000.0, "seconds": 4.0}


@pytest.mark.integration
def test_both_engines_run_linkbench_in_a_recipe(tmp_path: Path) -> None:
    """InnoDB and MyRocks arms on the lab: each loads its own graph (its own database),
    each step has per-operation figures over its timed window, and the report prints the
    seed's LinkBench table."""
    path = tmp_path / "lb.toml"
    path.write_text(LB.replace("requesters = [4, 8]", "requesters = 4"))
    journal = tmp_path / "lb.knobtop.jsonl"
    run = subprocess.run(
        [sys.executable, "-m", "knobtop.cli", "run", str(path), "--lab", "--dir",
         str(tmp_path / "lab"), "--journal", str(journal), "--duration", "3", "--warmup", "1",
         "--pause", "0"], capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    events = [json.loads(line) for line in journal.read_text().splitlines()]
    steps = [e for e in events if e["ev"] == "step"]
    assert sorted(s["arm"] for s in steps) == ["innodb", "innodb", "myrocks", "myrocks"]
    for s in steps:
        assert set(s["ops"]) >= {"getlinklist", "getnode", "updatenode", "updatelink"}
        assert s["load_ips"] is not None and s["load_ips"] > 0
        assert s["window_txn"] == pytest.approx(sum(v[0] for v in s["ops"].values()))
    marks = [e["label"] for e in events if e["ev"] == "mark"]
    assert sum("LinkBench load phase" in m for m in marks) == 2  # one graph per engine
    report = subprocess.run([sys.executable, "-m", "knobtop.cli", "report", str(journal),
                             "--table", "linkbench", "--format", "md"],
                            capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    lines = [line for line in report.stdout.splitlines() if line.startswith("| ")]
    assert lines[0].startswith("| configuration | ips | wKB/i | Mcpu/i | size GB")
    head = lines.index(next(line for line in lines if line.startswith("| configuration | tps")))
    assert {line.split(" | ")[0] for line in lines[2:head]} == {"| innodb", "| myrocks"}
    assert {line.split(" | ")[0] for line in lines[head + 2:]} == {"| innodb", "| myrocks"}
    for s in steps:  # the load phase's own readings, for the table's load part
        assert s["load_phase"]["rows"] > 0 and s["load_phase"]["cpu_s"] > 0


def test_the_live_screen_graphs_each_operations_rate_and_p99() -> None:
    """The board keeps lb_SHORT_ops / lb_SHORT_p99 from the load events' ops; the
    LinkBench page (key 5) draws the post's operations from them."""
    from knobtop.journal import Load
    from knobtop.journal.events import Header
    from knobtop.metrics.board import MetricBoard
    from knobtop.ui.widgets.graph_grid import PAGES

    board = MetricBoard(Header(format=1, knobtop="t", profile="lab", started_wall=0.0,
                               interval=1.0))
    for s in range(1, 4):
        board.apply(Load(t=float(s), wall=float(s), src="builtin@local", s=s, thds=4,
                         tps=3000.0, qps=3000.0, r=0, w=0, o=0, pct=95, lat=2.0, err=0,
                         reconn=0, ops={"getlinklist": [1500.0, 0.5, 2.0, 4.0 + s, 9.0],
                                        "updatenode": [220.0, 1.0, 3.0, 6.0, 12.0]}))
    assert board.series["lb_gl_p99"].points() == [(1.0, 5.0), (2.0, 6.0), (3.0, 7.0)]
    assert board.latest["lb_un_ops"] == 220.0
    title, specs = PAGES["linkbench"]
    assert title == "LinkBench"
    metrics = {spec.metric for spec in specs}
    assert {"lb_gl_p99", "lb_gn_p99", "lb_ul_p99", "lb_un_p99", "lb_gl_ops"} <= metrics
    assert all(m in lb.SHORT.values() for m in
               {name.split("_")[1] for name in metrics if name.startswith("lb_")})


def test_the_ops_option_runs_some_operations_alone() -> None:
    from knobtop.load.builtin import BuiltinDriver
    from knobtop.server.link import ConnectionInfo

    requests = lb.Requests(1000, random.Random(2), lb.only_ops((("ops", "getnode"),)))
    assert {requests.op() for _ in range(1000)} == {"getnode"}
    both = lb.Requests(1000, random.Random(2), ("getnode", "getlinklist"))
    seen = collections.Counter(both.op() for _ in range(20_000))
    expected = lb.MIX["getnode"] / (lb.MIX["getnode"] + lb.MIX["getlinklist"])
    assert seen["getnode"] / 20_000 == pytest.approx(expected, abs=0.02)
    for bad in ((("ops", "getnodes"),), (("ops", ""),), (("mix", "x"),)):
        with pytest.raises(LoadError):
            BuiltinDriver.check(LoadSpec(workload="linkbench", options=bad))
    BuiltinDriver(ConnectionInfo()).check(LoadSpec(workload="linkbench",
                                                   options=(("ops", "getnode"),)))


@pytest.mark.integration
async def test_preparing_one_workload_keeps_the_others_tables(tmp_path: Path) -> None:
    """sysbench's tables and LinkBench's live side by side in one database: preparing
    either never drops the other's (it did: LinkBench's preparation dropped sbtest1)."""
    from knobtop.load.builtin import BuiltinDriver
    from knobtop.load.prepare import prepare_tables

    sandbox = Sandbox(tmp_path / "lab")
    info = sandbox.start()
    try:
        conn = sandbox.connection(use_socket=True)
        driver = BuiltinDriver(conn, database=LAB_DB)
        point = LoadSpec(workload="oltp_point_select", tables=1, table_size=200)
        graph = LoadSpec(workload="linkbench", table_size=200)
        assert await prepare_tables(conn, driver, point)
        assert await prepare_tables(conn, driver, graph)
        assert not await prepare_tables(conn, driver, point)  # still there, not reloaded
        assert not await prepare_tables(conn, driver, graph)
        names = {r[0] for r in await rows(tmp_path / "lab", "SELECT TABLE_NAME FROM "
                                          "information_schema.TABLES WHERE TABLE_SCHEMA = "
                                          f"'{LAB_DB}'")}
        assert names == {"sbtest1", "linktable", "counttable", "nodetable"}
        assert info.port > 0
    finally:
        sandbox.stop()


def lab_with_cleanup(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "knobtop.cli", "lab", "--dir", str(tmp_path / "lab"),
         "--load", "linkbench", "--table-size", "500", "--threads", "2", "--headless",
         "--duration", "2", "--journal", str(tmp_path / "c.knobtop.jsonl"), "--cleanup",
         "--keep-running"], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-2000:]


@pytest.mark.integration
async def test_cleanup_drops_the_linkbench_tables(tmp_path: Path) -> None:
    await asyncio.to_thread(lab_with_cleanup, tmp_path)
    try:
        names = {r[0] for r in await rows(tmp_path / "lab", "SELECT TABLE_NAME FROM "
                                          "information_schema.TABLES WHERE TABLE_SCHEMA = "
                                          f"'{LAB_DB}'")}
        assert not names & set(lb.TABLES)
    finally:
        Sandbox.existing(tmp_path / "lab").stop()
    marks = [json.loads(line).get("label") for line in
             (tmp_path / "c.knobtop.jsonl").read_text().splitlines()]
    assert "LinkBench tables dropped" in marks


# --------------------------------------------------------------------------- connect


def connect_linkbench(tmp_path: Path, profile_text: str, password: str,
                      *extra: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / "lb.toml"
    profile.write_text(profile_text)
    profile.chmod(0o600)
    env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
    env["KT_PW"] = password
    return subprocess.run(
        [sys.executable, "-m", "knobtop", "connect", str(profile), "--headless",
         "--load", "linkbench", "--table-size", "500", "--threads", "2", *extra],
        capture_output=True, text=True, timeout=300, env=env, stdin=subprocess.DEVNULL)


@pytest.mark.integration
async def test_connect_runs_linkbench_on_a_server_and_cleanup_drops_it(
        tmp_path: Path, mariadb: Sandbox) -> None:
    """`connect --load linkbench` on a server this machine reaches over TCP (the shared
    test server, a profile without SSH): the graph loaded, requests of every kind timed
    each second, and --cleanup leaves none of the three tables behind."""
    info = mariadb.connection()
    journal = tmp_path / "c.knobtop.jsonl"
    run = await asyncio.to_thread(
        connect_linkbench, tmp_path,
        f'[target]\n[target.mysql]\nhost = "127.0.0.1"\nport = {info.port}\n'
        f'user = "{info.user}"\npassword = {{ env = "KT_PW" }}\n',
        info.password, "--duration", "3", "--journal", str(journal), "--cleanup")
    assert run.returncode == 0, run.stderr[-3000:] + run.stdout[-2000:]
    assert "Loaded the LinkBench graph: 500 nodes" in run.stdout + run.stderr
    events = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    loads = [e for e in events if e["ev"] == "load"]
    assert loads and all(e["ops"] for e in loads)
    stop = next(e for e in events if e["ev"] == "phase" and e["action"] == "stop")
    ops = stop["summary"]["sysbench"]["ops"]
    assert {"getlinklist", "getnode"} <= set(ops) and all(v[0] > 0 for v in ops.values())
    assert "LinkBench tables dropped" in [e.get("label") for e in events]
    assert not set(await show_tables(info, "sbtest")) & set(lb.TABLES)


@pytest.mark.integration
def test_connect_refuses_linkbench_when_the_server_is_reached_through_its_host(
        tmp_path: Path, ssh_target: SshServer, mariadb: Sandbox) -> None:
    """The built-in driver runs here: a server behind the target's SSH (its socket) is
    refused before anything is loaded, naming the way out."""
    info = mariadb.connection()
    known = tmp_path / "known_hosts"
    known.write_text(ssh_target.known_hosts_path.read_text())
    run = connect_linkbench(
        tmp_path,
        f'[target]\nssh = "{ssh_target.user}@{ssh_target.host}:{ssh_target.port}"\n'
        f'[target.mysql]\nsocket = "{mariadb.socket}"\nuser = "{info.user}"\n'
        'password = { env = "KT_PW" }\n',
        info.password, "--duration", "3", "--journal", str(tmp_path / "r.knobtop.jsonl"),
        "--known-hosts", str(known), "--ssh-config", "none", "-i",
        str(ssh_target.client_key_path))
    assert run.returncode != 0
    assert "reached only through its host" in run.stderr
    assert "run knobtop on a client host that reaches the server over TCP" in run.stderr
    assert not (tmp_path / "r.knobtop.jsonl").exists()


# --------------------------------------------------------------------------- the screen's P


@pytest.mark.integration
async def test_p_on_the_screen_loads_the_linkbench_graph(tmp_path: Path,
                                                         mariadb: Sandbox) -> None:
    """A LinkBench load whose tables are missing fails naming P; P loads the graph (said
    in LinkBench's words, not sysbench's) and the load then runs."""
    info = mariadb.connection()
    spec = LoadSpec(workload="linkbench", threads=2, table_size=300)
    journal = tmp_path / "p.knobtop.jsonl"
    config = SessionConfig(profile="test", connection=info, journal_path=journal, load=spec)
    link = ServerLink(info)
    await link.connect()
    try:
        await link.query("DROP DATABASE IF EXISTS lb_keys")
        await link.query("CREATE DATABASE lb_keys")
        with served_session(config, BuiltinDriver(info, database="lb_keys")) as session:
            app = KnobtopApp(session)

            def said(text: str) -> bool:
                return any(text in str(n.message) for n in app._notifications)

            async with app.run_test(size=(80, 24)) as pilot:
                await until(pilot, lambda: app.board is not None)
                await pilot.press("l")
                await until(pilot, lambda: any(isinstance(e, Phase) and e.action == "failed"
                                               for e in JournalReader(journal)), timeout=30)
                await pilot.press("P")
                await until(pilot, lambda: said("the LinkBench graph of 300 nodes: ready"),
                            timeout=60)
                assert said("preparing the LinkBench graph of 300 nodes ...")
                await pilot.press("l")
                await until(pilot, lambda: app.board.series["load_tps"].last is not None,
                            timeout=30)
                await pilot.press("l")
                await until(pilot, lambda: not app.board.load_running, timeout=30)
                await pilot.press("q")
            # the graph P loaded (requests add nodes and links, never delete a link row)
            comment = (await link.query("SELECT TABLE_COMMENT FROM information_schema.TABLES "
                                        "WHERE TABLE_SCHEMA='lb_keys' AND "
                                        "TABLE_NAME='nodetable'"))[0][0]
            assert comment == lb.LOADED.format(maxid1=300)
            links = (await link.query("SELECT COUNT(*) FROM lb_keys.linktable"))[0][0]
            assert int(links) >= lb.expected_links(300)
    finally:
        await link.query("DROP DATABASE IF EXISTS lb_keys")
        await link.close()
    phases = [e for e in JournalReader(journal) if isinstance(e, Phase)]
    assert [p.action for p in phases] == ["failed", "start", "stop"]
    assert "P" in phases[0].message and "LinkBench graph" in phases[0].message


@pytest.mark.integration
async def test_a_sysbench_session_runs_linkbench_on_the_builtin_driver(
        tmp_path: Path, mariadb: Sandbox, sysbench_path: str) -> None:
    """LinkBench picked in a session whose load is sysbench's (the lab's with sysbench
    installed, or the clients'): the built-in driver runs it from this machine, on the
    same database; P loads its graph and cleanup drops its tables, not sysbench's."""
    info = mariadb.connection()
    sysbench = Sysbench(LocalHost(), mysql_socket=str(mariadb.socket), user=info.user,
                        password=info.password, database="lb_sysbench")
    journal = tmp_path / "s.knobtop.jsonl"
    session = Session(SessionConfig(profile="test", connection=info, journal_path=journal,
                                    load=LoadSpec(workload="oltp_point_select", threads=2,
                                                  tables=1, table_size=500)),
                      LocalHost(), sysbench)
    collector = EventCollector()
    session.listeners.append(collector)
    link = ServerLink(info)
    await link.connect()
    try:
        await link.query("DROP DATABASE IF EXISTS lb_sysbench")
        await link.query("CREATE DATABASE lb_sysbench")
        await session.open()
        try:
            assert await session.prepare_load() is True  # sysbench's table first
            await session.change_load(workload="linkbench")
            assert await session.prepare_load() is True  # then the graph
            await session.start_load(threads=2)
            await collector.wait_for(lambda ev: any(isinstance(e, Load) and e.ops
                                                    for e in ev), timeout=60)
            await session.stop_load()
            await session.cleanup_load()
        finally:
            await session.close()
        names = {r[0] for r in await link.query(
            "SELECT TABLE_NAME FROM information_schema.TABLES "
            "WHERE TABLE_SCHEMA = 'lb_sysbench'")}
        assert names == {"sbtest1"}  # the graph's tables dropped, sysbench's kept
    finally:
        await link.query("DROP DATABASE IF EXISTS lb_sysbench")
        await link.close()
    events = [json.loads(line) for line in journal.read_text().splitlines()[1:]]
    start = next(e for e in events if e["ev"] == "phase" and e["action"] == "start")
    assert start["workload"] == "linkbench"
    labels = [e.get("label") for e in events if e["ev"] == "mark"]
    assert "prepare the LinkBench graph of 500 nodes" in labels
    assert "LinkBench tables dropped" in labels


@pytest.mark.integration
async def test_a_statement_the_server_will_not_prepare_ends_the_run_naming_the_limit(
    tmp_path: Path,
) -> None:
    """asyncmy runs a statement the server refuses to prepare as text, without a word (its
    statement cache's fallback); a LinkBench run that says it is prepared stops instead,
    naming max_prepared_stmt_count and prepared = false, with which the same server runs."""
    from knobtop.load.prepare import prepare_tables
    from test_builtin_driver import Recorder

    sandbox = Sandbox(tmp_path / "lab")
    sandbox.start()
    try:
        conn = sandbox.connection(use_socket=True)
        driver = BuiltinDriver(conn, database=LAB_DB)
        spec = LoadSpec(workload="linkbench", table_size=200, threads=2, duration=3)
        assert await prepare_tables(conn, driver, spec)
        await rows(tmp_path / "lab", "SET GLOBAL max_prepared_stmt_count = 0")
        refused = Recorder()
        await driver.start(spec, refused.report, refused.exit)
        await refused.wait_for(lambda: bool(refused.exits), timeout=60)
        error = refused.exits[0].error
        assert "did not prepare LinkBench's" in error and "max_prepared_stmt_count" in error
        assert "prepared = false" in error and f"{conn.socket}" in error
        assert not any(r.tps for r in refused.reports)  # it stopped at its first request
        text = Recorder()
        await driver.start(dataclasses.replace(spec, prepared=False), text.report, text.exit)
        await text.wait_for(lambda: bool(text.exits), timeout=60)
        ran = text.exits[0]
        assert not ran.error and ran.summary is not None and ran.summary.transactions > 100
    finally:
        sandbox.stop()
