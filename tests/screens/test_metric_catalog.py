"""The metric catalog (knobtop.metrics.catalog) is the one list: what derive() computes, what
the board keeps and what the graph pages draw all come from it, and a new graph of a
counter's rate is one row (the redo log's bytes per second is one; a test adds another)."""

from __future__ import annotations

import importlib
import itertools
import json
import subprocess
import sys
import textwrap
from pathlib import Path

from harness import paths as repo_paths
from knobtop.journal import JournalReader, Sample
from knobtop.metrics.catalog import CATALOG, Metric, check, names, page_rows
from knobtop.metrics.derive import Snapshot, derive

JOURNALS = repo_paths.DATA / "journals"
RECORDED = JOURNALS / "lab-80s.knobtop.jsonl"
APP = repo_paths.REPO / "app"

board = importlib.import_module("knobtop.metrics.board")  # the package face names a class


def snapshots() -> list[Snapshot]:
    reader = JournalReader(RECORDED)
    header = reader.header
    return [Snapshot.from_values(e.t, header.counters, e.v, e.host, reconnect=e.re)
            for e in reader if isinstance(e, Sample)]


def test_the_catalog_is_well_formed_and_its_checks_can_fail() -> None:
    assert check(CATALOG) == []
    bad = (Metric("x", "X", "furlongs", "gauge", ("nowhere",), rate_of=("Uptime",)),
           Metric("x", "X", "count", "guess"))
    problems = "\n".join(check(bad))
    for said in ("furlongs", "no graph page 'nowhere'", "rate_of needs source 'interval'",
                 "x: listed twice", "source 'guess'"):
        assert said in problems


def test_derive_computes_exactly_the_catalogued_sample_metrics() -> None:
    """derive()'s own lines and the catalog's rate rows together give every gauge and
    interval row, and nothing derive() gives (but per-host figures) is missing a row."""
    snaps = snapshots()
    values = derive(snaps[0], snaps[1], JournalReader(RECORDED).header.host_fields)
    server = {key for key in values if "@" not in key}
    assert server == set(names("gauge")) | set(names("interval"))
    assert set(board.SAMPLE_METRICS) == server


def test_the_redo_log_graph_is_the_rate_of_innodb_os_log_written() -> None:
    header = JournalReader(RECORDED).header
    at = header.counters.index("Innodb_os_log_written")
    snaps = snapshots()
    seen = []
    for prev, cur in itertools.pairwise(snaps):
        value = derive(prev, cur, header.host_fields)["log_written"]
        written = cur.counters["Innodb_os_log_written"] - prev.counters["Innodb_os_log_written"]
        assert value == written / (cur.t - prev.t)
        seen.append(value)
    assert max(seen) > 0 and at >= 0  # the recorded lab wrote redo: the graph has a line
    innodb = [m.name for m in page_rows()["innodb"][1]]
    assert "log_written" in innodb


#: A row added to the catalog before anything else of knobtop is imported; the live screen
#: on the recorded journal, on its InnoDB page; what its graph shows.
ONE_ROW = textwrap.dedent("""
    import asyncio, json, sys
    from pathlib import Path
    from knobtop.metrics import catalog
    catalog.CATALOG = catalog.CATALOG + (catalog.Metric(
        "data_writes", "Data writes", "per_second", "interval", ("innodb",),
        rate_of=("Innodb_data_writes",)),)
    from knobtop.journal import JournalReader
    from knobtop.ui.app import KnobtopApp
    from knobtop.ui.widgets.metric_graph import MetricGraph

    async def main():
        reader = JournalReader(Path(sys.argv[1]))
        app = KnobtopApp(header=reader.header, events=list(reader))
        async with app.run_test(size=(160, 48)) as pilot:
            for _ in range(400):
                if app._painted > 0:
                    break
                await pilot.pause(0.05)
            await pilot.press("2")
            for _ in range(400):
                if app.live.query("#innodb-data_writes"):
                    break
                await pilot.pause(0.05)
            await pilot.pause(0.3)
            graph = app.live.query_one("#innodb-data_writes", MetricGraph)
            lines = [graph.render_line(y).text for y in range(graph.size.height)]
            points = list(app.board.series["data_writes"].window(0.0))
            print(json.dumps({"lines": lines, "points": points}))

    asyncio.run(main())
""")


def test_a_new_graph_is_one_catalog_row(tmp_path: Path) -> None:
    """Issue 38: add one row (the rate of Innodb_data_writes on the InnoDB page) and the live
    screen derives it, keeps its series (each point the counter's rate up to that sample)
    and draws its graph, titled, with a line."""
    script = tmp_path / "one_row.py"
    script.write_text(ONE_ROW)
    run = subprocess.run([sys.executable, str(script), str(RECORDED)], capture_output=True,
                         text=True, timeout=120, env={"PYTHONPATH": str(APP), "PATH": "/usr/bin"})
    assert run.returncode == 0, run.stderr[-3000:]
    shown = json.loads(run.stdout.strip().splitlines()[-1])
    snaps = snapshots()
    rates = {cur.t: (cur.counters["Innodb_data_writes"] - prev.counters["Innodb_data_writes"])
             / (cur.t - prev.t) for prev, cur in itertools.pairwise(snaps)}
    points = [(t, v) for t, v in shown["points"] if v is not None]
    assert len(points) >= 10 and any(v > 0 for _, v in points)
    for t, v in points:  # each point of its series is the counter's rate up to that sample
        assert v == rates[t]
    assert any("Data writes" in line for line in shown["lines"]), shown["lines"]
    assert any(0x2800 < ord(ch) <= 0x28FF for line in shown["lines"] for ch in line)  # a line
