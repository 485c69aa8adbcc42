"""Issue 17 parts 5-8 in the results table: verdicts on average TPS and on the latency
percentile, the stall share beside the median, steady / off-plateau flags, calibration
steps kept out of the cells, and the detectable effect under the table."""

from __future__ import annotations

import random
import re

import pytest

from knobtop.analysis.results import (
    CSV_FIELDS,
    build,
    calibration_note,
    collect,
    detectable_by_level,
    detectable_note,
    results_csv,
    results_markdown,
    results_table,
    short_note,
)
from knobtop.analysis.stats import HIGHER, LOWER, NOISE
from knobtop.errors import BadValue
from knobtop.journal.events import Event, RecipeRun, StepResult


def step(arm: str, replicate: int, tps: float, *, avg: float | None = None,
         p: float = 2.0, stall: float | None = 0.0, threads: int = 4, pct: int = 99,
         flat: bool | None = True, steady: bool = True,
         calibration: bool = False) -> StepResult:
    return StepResult(t=float(replicate), wall=0.0, recipe="r", index=replicate,
                      replicate=replicate, arm=arm, threads=threads, start=0.0, end=30.0,
                      tps=tps, p95=p,
                      avg_tps=tps if avg is None else avg, stall=stall, pct=pct, flat=flat,
                      steady=steady, calibration=calibration)


BASE = [1000.0, 1010.0, 990.0, 1005.0, 995.0]


def test_a_stalling_arm_loses_on_average_tps_though_its_median_ties() -> None:
    """B runs as fast as A most seconds but stalls for a fifth of each run: its per-second
    median is A's, its average (what the seeds report) is 20% lower, and the verdict is
    on the average."""
    steps = [step("A", i + 1, v) for i, v in enumerate(BASE)]
    steps += [step("B", i + 1, v, avg=v * 0.8, stall=0.2) for i, v in enumerate(BASE)]
    table = build("r", ["A", "B"], [4], steps, "end", replicates=5)
    cell = table.cells[("B", 4)]
    assert cell.verdict is not None and cell.verdict.label == LOWER
    assert cell.per_second == 1000.0 and cell.median == 800.0 and cell.stall == 0.2
    md = results_markdown(table)
    assert "Average TPS (spread over replicates)" in md
    assert "median 1,000, stall 20%" in md


def test_latency_gets_its_own_verdict_labelled_with_the_percentile_asked() -> None:
    steps = [step("A", i + 1, v, p=10.0 + i * 0.1) for i, v in enumerate(BASE)]
    steps += [step("B", i + 1, v, p=15.0 + i * 0.1) for i, v in enumerate(BASE)]
    table = build("r", ["A", "B"], [4], steps, "end", replicates=5)
    cell = table.cells[("B", 4)]
    assert cell.verdict is not None and cell.verdict.label == NOISE  # same TPS
    assert cell.lat_verdict is not None and cell.lat_verdict.label == HIGHER
    assert cell.pct == 99
    md = results_markdown(table)
    assert "p99 latency, ms" in md and "p99 latency vs A" in md and "p95" not in md
    rendered = results_table(table)
    assert rendered.caption is not None


def test_each_verdict_table_is_its_own_holm_family() -> None:
    rng = random.Random(3)
    steps = []
    for level in (1, 2):
        for arm in ("A", "B", "C"):
            for r in range(5):
                steps.append(step(arm, r + 1, rng.gauss(1000, 30), threads=level,
                                  p=rng.gauss(5, 0.2)))
    table = build("r", ["A", "B", "C"], [1, 2], steps, "end", replicates=5)
    md = results_markdown(table)
    assert md.count("Holm correction across the 4 comparisons") == 2
    for cell in table.cells.values():
        if cell.arm != "A":
            assert cell.verdict is not None and cell.verdict.p_holm is not None
            assert cell.lat_verdict is not None and cell.lat_verdict.p_holm is not None


def test_cells_measured_off_the_plateau_are_flagged() -> None:
    steps = [step("A", i + 1, v) for i, v in enumerate(BASE)]
    steps += [step("B", i + 1, v, flat=i != 0, steady=i > 1) for i, v in enumerate(BASE)]
    table = build("r", ["A", "B"], [4], steps, "end", replicates=5, plateau=True)
    cell = table.cells[("B", 4)]
    assert (cell.steady, cell.drifting) == (3, 1)
    md = results_markdown(table)
    assert "not steady 2/5, off plateau 1/5" in md
    assert "| A | steady |" in md  # the baseline: every plateau reached, no window drifted
    text = results_table(table).columns[1]._cells[1]  # B at 4 threads
    assert "off plateau 1/5" in str(text)


def test_calibration_steps_stay_out_of_the_cells_and_set_the_detectable_effect() -> None:
    rng = random.Random(12)
    cal = [step("A", r + 1, rng.gauss(1000, 50), calibration=True) for r in range(8)]
    steps = cal + [step("A", i + 1, v) for i, v in enumerate(BASE)]
    steps += [step("B", i + 1, v * 1.01) for i, v in enumerate(BASE)]
    table = build("r", ["A", "B"], [4], steps, "end", replicates=5)
    assert len(table.cells[("A", 4)].runs) == 5  # not 13
    assert len(table.calibration[4]) == 8
    note = detectable_note(table)
    assert "from the calibration runs" in note and "4 threads: +" in note
    line = calibration_note(table)
    ladder = line.removeprefix(note)
    assert line.startswith(note) and "8 runs per arm: +" in ladder
    assert "5 runs per arm" not in ladder  # only more than the 5 planned
    # the ladder stops at the first count that finds +10% (this noise: CV about 5%)
    last = ladder.rstrip(".").split("; ")[-1]
    assert int(last.split("+")[1].rstrip("%")) <= 10 and "30 runs" not in ladder
    # the CSV keeps every step, calibration marked
    rows = results_csv(table).splitlines()
    assert rows[0].split(",") == list(CSV_FIELDS)
    col = list(CSV_FIELDS).index("calibration")
    assert len(rows) == 1 + 18 and sum(r.split(",")[col] == "1" for r in rows[1:]) == 8


def test_without_calibration_the_baseline_spread_says_what_could_be_seen() -> None:
    steps = [step("A", i + 1, v) for i, v in enumerate(BASE)]
    steps += [step("B", i + 1, v) for i, v in enumerate(BASE)]
    note = detectable_note(build("r", ["A", "B"], [4], steps, "end", replicates=5))
    assert "the spread of the baseline's own runs (A)" in note
    three = build("r", ["A", "B"], [4], [s for s in steps if s.replicate <= 3], "end",
                  replicates=3)
    assert "4 threads: more than +100%" in detectable_note(three)
    # the line under the table on screen, in words a DBA reads at a glance
    assert short_note(three).endswith("; smallest change this design can detect: more than "
                                      "+100% at some thread counts (too noisy for these "
                                      "replicates)")
    five = build("r", ["A", "B"], [4], steps, "end", replicates=5)
    effect = detectable_by_level(five)[4].effect
    assert effect is not None
    assert short_note(five).endswith(f"; smallest change this design can detect: "
                                     f"+{effect:.0%} (caught 8 times in 10, 80% power)")


def test_a_journal_carries_the_plan_into_the_table() -> None:
    plan = {"arms": {"A": {}, "B": {}}, "threads": [4], "steps": 10, "replicates": 5,
            "plateau": True}
    events: list[Event] = [RecipeRun(t=0.0, wall=0.0, action="start", name="r", plan=plan)]
    events += [step("A", i + 1, v) for i, v in enumerate(BASE)]
    events += [step("B", i + 1, v, steady=False) for i, v in enumerate(BASE)]
    (table,) = collect(events)
    assert table.replicates == 5 and table.plateau
    assert "not steady 5/5" in results_markdown(table)


def test_older_journals_without_averages_use_the_median() -> None:
    old = [StepResult(t=0.0, wall=0.0, recipe="r", index=i, replicate=i + 1, arm=arm,
                      threads=4, start=0.0, end=1.0, tps=v, p95=2.0)
           for arm in ("A", "B") for i, v in enumerate(BASE)]
    table = build("r", ["A", "B"], [4], old, "end")
    cell = table.cells[("A", 4)]
    assert cell.runs == tuple(BASE) and cell.stall is None and cell.pct == 95
    assert "Median of per-second TPS" not in results_markdown(table)


def test_history_and_cost_per_transaction_tables() -> None:
    """Issue 18 part 2's per-step measures in the report: the purge backlog at the end of
    each step (the seed's purge table) and the server host's cost per transaction."""
    import dataclasses

    steps = []
    for i, v in enumerate(BASE):
        for arm, hist, cpu in (("A", 100.0, 50.0), ("B", 9000.0 + i, 80.0 + i)):
            steps.append(dataclasses.replace(
                step(arm, i + 1, v), history_start=10.0, history_end=hist, cpu_us_txn=cpu,
                reads_txn=0.01, rkb_txn=0.16, wkb_txn=2.5, r_s=10.0, rmb_s=0.16, wmb_s=2.5))
    table = build("r", ["A", "B"], [4], steps, "end", replicates=5)
    assert table.cells[("B", 4)].history_end == 9002.0
    assert table.cells[("B", 4)].cost["cpu_us_txn"] == 82.0
    md = results_markdown(table)
    assert "History list length at the end of each step" in md and "| B | 9,002 |" in md
    assert "| B | CPU 82 us, r 0.010, rKB 0.16, wKB 2.50 |" in md
    assert "| A | r/s 10.0, rMB/s 0.16, wMB/s 2.50 |" in md
    header, first = results_csv(table).splitlines()[:2]
    row = dict(zip(header.split(","), first.split(","), strict=True))
    assert row["history_end"] == "100" and row["cpu_us_txn"] == "50"


def test_the_servers_own_footprint_and_the_datadir_device_in_the_report() -> None:
    """Issue 18 part 2: mysqld's own CPU per transaction, its RSS, the databases' and the
    datadir's size get their table; the disk tables say they are the datadir's device."""
    import dataclasses

    steps = [dataclasses.replace(step(arm, i + 1, v), cpu_us_txn=90.0, reads_txn=0.5,
                                 rkb_txn=8.0, wkb_txn=3.0, r_s=500.0, rmb_s=8.0, wmb_s=3.0,
                                 mysqld_us_txn=70.0 + i, rss_mb=310.0, db_mb=24.0 + i,
                                 datadir_mb=180.0, disk="vda")
             for i, v in enumerate(BASE) for arm in ("A", "B")]
    table = build("r", ["A", "B"], [4], steps, "end", replicates=5)
    md = results_markdown(table)
    assert "reads, KB read, KB written on the datadir's device (vda)" in md
    assert "Disk rates on the datadir's device (vda)" in md
    assert "| A | mysqld CPU 72 us, RSS 310 MB, db 26 MB, datadir 180 MB |" in md
    header, first = results_csv(table).splitlines()[:2]
    row = dict(zip(header.split(","), first.split(","), strict=True))
    assert row["mysqld_us_txn"] == "70" and row["disk"] == "vda" and row["db_mb"] == "24"
    # Without the device (an older journal, a tmpfs datadir): the host's disks, no table.
    plain = [dataclasses.replace(s, disk="", mysqld_us_txn=None, rss_mb=None, db_mb=None,
                                 datadir_mb=None) for s in steps]
    md = results_markdown(build("r", ["A", "B"], [4], plain, "end", replicates=5))
    assert "on the server host's disks" in md and "mysqld alone" not in md


def test_the_seed_table_shapes_from_one_run() -> None:
    """Issue 18 part 4: sweep, efficiency, overhead and purge, in Markdown and CSV."""
    import dataclasses

    from knobtop.analysis.seedtables import seed_table

    steps = []
    for i, v in enumerate(BASE):
        for threads, scale in ((8, 1.0), (256, 0.5)):
            steps.append(dataclasses.replace(
                step("0", i + 1, v * scale, threads=threads), history_end=300.0 * scale,
                cpu_us_txn=100.0, mysqld_us_txn=80.0, rss_mb=300.0, disk="vda"))
            steps.append(dataclasses.replace(
                step("32", i + 1, v * scale * (1.0 if threads == 8 else 6.0),
                     threads=threads), history_end=15000.0 * scale, cpu_us_txn=90.0,
                mysqld_us_txn=70.0, rss_mb=310.0, disk="vda"))
    table = build("tc", ["0", "32"], [8, 256], steps, "end", replicates=5)

    sweep = seed_table("sweep", table)
    md = sweep.markdown()
    assert "| configuration | 8 | 256 |" in md
    assert "| 0 | 1,000 (base) | 500 (base) |" in md
    assert "| 32 | 1,000 (1.00x noise) | 3,000 (6.00x higher) |" in md
    rows = sweep.csv().splitlines()
    assert rows[0] == "arm,threads,avg_tps,runs,ratio,ci_lo,ci_hi,p,p_holm,verdict"
    assert rows[-1].startswith("32,256,3000,5,6,") and rows[-1].endswith(",higher")

    eff = seed_table("efficiency", table).markdown()
    assert "| configuration | threads | tps | p99 ms | CPU us/t | mysqld us/t |" in eff
    assert "| 32 | 256 | 3,000 | 2.0 | 90 | 70 |" in eff and "the datadir's device (vda)" in eff

    over = seed_table("overhead", table)
    assert "| threads | 0 | 32 |" in over.markdown()
    assert "| 256 | 500 | 3,000 (-500.0%, higher) |" in over.markdown()
    assert "256,32,3000,500,-500,higher" in over.csv()

    purge = seed_table("purge", table).markdown()
    assert "| 32 | 15,000 | 7,500 |" in purge
    # the CSV's whole numbers keep their zeros (they read 15 and 75 before)
    assert "32,8,15000" in seed_table("purge", table).csv().splitlines()
    with pytest.raises(BadValue, match="unknown table"):
        seed_table("nope", table)


def test_ndb_steps_report_each_data_nodes_disk_page_buffer_ratio() -> None:
    """Issue 18 part 2: on NDB the hit ratio that matters is each data node's disk page
    buffer's, not the SQL node's InnoDB buffer pool's."""
    import dataclasses

    steps = [dataclasses.replace(step(arm, i + 1, v), hit_ratio=100.0,
                                 ndb_hit={"2": base + i * 0.1, "3": base - 1.0})
             for i, v in enumerate(BASE) for arm, base in (("64M", 97.0), ("512M", 99.5))]
    table = build("ndb", ["64M", "512M"], [4], steps, "end", replicates=5)
    assert table.cells[("512M", 4)].ndb_hit == {"2": 99.7, "3": 98.5}
    md = results_markdown(table)
    assert "NDB disk page buffer hit ratio per data node" in md
    assert "| 512M | node 2 99.70, node 3 98.50 |" in md


def test_a_timed_windows_summary_is_combined_over_instances() -> None:
    """[run] timed: the window's own run summaries, one per instance, make one figure:
    transactions summed, the worst percentile and maximum, the mean over all."""
    from knobtop.recipes.window import window_summary

    one = {"transactions": 1000, "latency_pct_ms": 2.0, "latency_max_ms": 9.0,
           "latency_sum_ms": 1500.0, "total_time_s": 20.01}
    two = {"transactions": 3000, "latency_pct_ms": 3.5, "latency_max_ms": 7.0,
           "latency_sum_ms": 2500.0, "total_time_s": 20.03}
    got = window_summary({"sysbench_per_host": {"local#1": one, "local#2": two}})
    assert got == {"window_txn": 4000, "window_pct_ms": 3.5, "window_avg_ms": 1.0,
                   "window_max_ms": 9.0, "window_s": 20.03}
    assert window_summary({"sysbench": one})["window_avg_ms"] == 1.5
    assert window_summary(None) == {} and window_summary({"intervals": 3}) == {}


def test_the_calibration_line_gives_the_effect_with_its_interval_and_asks_for_runs() -> None:
    """Issue 39 item 10: 8 calibration runs know the CV within a chi-square interval wider
    than 1.5x: the line gives the detectable effect at both ends and asks for 18 runs;
    18 runs are within the rule and are not asked for more."""
    for count, asks in ((8, True), (18, False)):
        rng = random.Random(count)
        cal = [step("A", r + 1, rng.gauss(1000, 50), calibration=True) for r in range(count)]
        steps = cal + [step("A", i + 1, v) for i, v in enumerate(BASE)]
        steps += [step("B", i + 1, v * 1.01) for i, v in enumerate(BASE)]
        table = build("r", ["A", "B"], [4], steps, "end", replicates=5)
        line = calibration_note(table)
        assert f"{count} calibration runs know the noise only roughly (4 threads: CV " in line
        assert re.search(r"can detect there is between \d+% and \d+% up\.", line), line
        assert ("calibrate with 18 runs or more (--calibrate 18)" in line) is asks, line
