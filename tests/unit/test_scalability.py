"""Seed 003 (issue 39 item 4): InnoDB scalability per query type as four recipes whose arms
are servers, and its table (shape E: servers x thread counts of average TPS, one table
per query type)."""

from __future__ import annotations

import re

from harness.cli import knobtop
from knobtop.analysis.results import NONE, collect
from knobtop.analysis.seedtables import TABLES, seed_table
from knobtop.journal.events import Event, RecipeRun, StepResult
from knobtop.recipes.checks import offline_warnings
from knobtop.recipes.reader import load_recipe
from knobtop.recipes.runner import short_duration

QUERY_TYPES = {
    "scalability-pk-point": "oltp_point_select",
    "scalability-pk-range": "oltp_read_only",
    "scalability-key-range": "/usr/share/sysbench/select_random_ranges.lua",
    "scalability-scan": "oltp_read_only",
}
ALL_OFF = {"point_selects": "0", "simple_ranges": "0", "sum_ranges": "0",
           "order_ranges": "0", "distinct_ranges": "0"}


def test_each_query_type_is_a_recipe_whose_arms_are_the_servers() -> None:
    for name, workload in QUERY_TYPES.items():
        recipe = load_recipe(name)
        assert recipe.load.workload == workload
        assert recipe.threads == (1, 4, 16) and recipe.load.tables == 1
        assert [a.name for a in recipe.arms] == ["conn", "pool8"]
        assert [a.target for a in recipe.arms] == ["", "pool8"]
        assert all(not a.knobs and not a.load for a in recipe.arms)  # the servers differ
        (target,) = recipe.targets
        assert target.name == "pool8" and not target.profile
        assert dict(target.options) == {"thread_handling": "pool-of-threads",
                                        "thread_pool_size": "8"}
        assert recipe.planned_seconds == 2 * 3 * 2 * (3 + 10 + 1) - 1
    options = {name: dict(load_recipe(name).load.options) for name in QUERY_TYPES}
    assert options["scalability-pk-point"] == {}
    # one statement type per event: the simple range alone, or the SUM range alone
    assert options["scalability-pk-range"] == {**ALL_OFF, "simple_ranges": "1",
                                               "range_size": "100", "skip_trx": "on"}
    scan = load_recipe("scalability-scan")
    assert options["scalability-scan"] == {**ALL_OFF, "sum_ranges": "1",
                                           "range_size": str(scan.load.table_size),
                                           "skip_trx": "on"}
    assert options["scalability-key-range"] == {"number_of_ranges": "1", "delta": "100"}


def test_the_plan_lists_each_server_at_each_thread_count() -> None:
    recipe = load_recipe("scalability-pk-range")
    steps = recipe.schedule()
    done = knobtop("run", "scalability-pk-range", "--plan", "--lab")
    assert done.returncode == 0, done.stderr
    numbered = [x for x in done.stdout.splitlines() if re.match(r"\s+\d+\.\s", x)]
    assert len(numbered) == len(steps) == 12
    for line, step in zip(numbered, steps, strict=True):
        assert f"arm {step.arm.name} " in line and f" {step.threads} threads" in line
    assert sum("arm pool8 on pool8 " in x for x in numbered) == 6
    assert f"12 steps, about {short_duration(recipe.planned_seconds)}" in done.stdout
    assert "arms on pool8 too" in done.stdout
    for warning in offline_warnings(recipe):
        assert f"  - {warning}" in done.stdout


def step(arm: str, replicate: int, threads: int, avg: float) -> StepResult:
    return StepResult(t=float(replicate), wall=0.0, recipe="scalability-scan",
                      index=replicate, replicate=replicate, arm=arm, threads=threads,
                      start=0.0, end=10.0, tps=avg, p95=2.0, avg_tps=avg)


def test_the_scalability_table_from_a_journals_events() -> None:
    plan = {"arms": {"conn": {}, "pool8": {}}, "threads": [1, 4, 16], "steps": 10,
            "replicates": 2}
    events: list[Event] = [RecipeRun(t=0.0, wall=0.0, action="start",
                                     name="scalability-scan", plan=plan)]
    for rep, scale in ((1, 1.0), (2, 1.1)):
        for threads, conn, pool in ((1, 100.0, 90.0), (4, 350.0, 300.0)):
            events.append(step("conn", rep, threads, conn * scale))
            events.append(step("pool8", rep, threads, pool * scale))
    events.append(step("conn", 1, 16, 1234.5))  # 16 threads: pool8 not measured yet
    (results,) = collect(events)
    assert "scalability" in TABLES

    table = seed_table("scalability", results)
    md = table.markdown()
    assert md.startswith("**scalability-scan: average TPS by server and client threads**")
    assert "| server | 1 | 4 | 16 |" in md
    assert "| conn | 105 | 368 | 1,234 |" in md  # medians over the two replicates
    assert f"| pool8 | 94 | 315 | {NONE} |" in md
    assert "one table per query type" in md
    rows = table.csv().splitlines()
    assert rows[0] == "recipe,arm,threads,avg_tps,runs"
    assert "scalability-scan,conn,1,105,2" in rows
    assert "scalability-scan,pool8,4,315,2" in rows
    assert "scalability-scan,conn,16,1234.5,1" in rows
    assert len(rows) == 6  # the header and the five measured cells
