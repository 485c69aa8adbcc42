"""Throughput of knobtop's built-in load against sysbench, on one private server in one run.

Starts a sandbox mariadbd in a temporary directory, prepares 4 tables x 10000 rows with
sysbench, then runs oltp_point_select with 8 threads for ``--seconds`` (default 15) each,
alternating sysbench / built-in / sysbench / built-in (ABAB), both over the unix socket and
both with server-side prepared statements.  Each run's TPS is the median of its per-second
reports without the first second (warm-up); a driver's TPS is the median over its rounds.
Prints both and the ratio built-in/sysbench (the goal is >= 0.5), then stops the sandbox.

Run:  .venv/bin/python bench/builtin_vs_sysbench.py [--seconds S] [--rounds R] [--processes P]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from knobtop.hosts.local import LocalHost
from knobtop.lab import Sandbox
from knobtop.load.base import LoadDriver, LoadExit, LoadSpec
from knobtop.load.builtin import BuiltinDriver
from knobtop.load.prepare import prepare_tables
from knobtop.load.sysbench import Sysbench
from knobtop.load.sysbench_output import IntervalReport

TABLES = LoadSpec(workload="oltp_point_select", threads=8, tables=4, table_size=10000)


async def one_run(driver: LoadDriver, seconds: int) -> float:
    """Median per-second TPS of one timed run (the first second left out)."""
    spec = LoadSpec(workload=TABLES.workload, threads=TABLES.threads, tables=TABLES.tables,
                    table_size=TABLES.table_size, duration=seconds)
    reports = await timed_run(driver, spec, seconds)
    steady = [r.tps for r in reports if r.second > 1] or [r.tps for r in reports]
    if not steady:
        raise SystemExit(f"{driver.name} gave no interval reports")
    return statistics.median(steady)


async def timed_run(driver: LoadDriver, spec: LoadSpec, seconds: int) -> list[IntervalReport]:
    """Every per-second report of one run of ``spec`` for ``seconds`` (SystemExit if the
    driver failed)."""
    reports: list[IntervalReport] = []
    ended = asyncio.Event()
    outcome: list[LoadExit] = []

    async def on_exit(result: LoadExit) -> None:
        outcome.append(result)
        ended.set()

    await driver.start(replace(spec, duration=seconds),
                       lambda _src, report: reports.append(report), on_exit)
    try:
        async with asyncio.timeout(seconds + 30):
            await ended.wait()
    finally:
        if driver.running:
            await driver.stop()
    if outcome and outcome[0].error:
        raise SystemExit(f"{driver.name} failed: {outcome[0].error}")
    return reports


async def measure(
    sandbox: Sandbox, seconds: int, rounds: int, processes: int | None, *, prepare: bool = True
) -> dict[str, Any]:
    """Alternate sysbench and the built-in driver ``rounds`` times; per-run and median TPS."""
    info = sandbox.connection(use_socket=True)
    sysbench = Sysbench(LocalHost(), mysql_socket=str(sandbox.socket), user=info.user,
                        password=info.password, database="sbtest")
    if prepare:
        began = time.monotonic()
        await prepare_tables(info, sysbench, TABLES)
        print(f"prepared {TABLES.tables} x {TABLES.table_size} rows in "
              f"{time.monotonic() - began:.1f} s", flush=True)
    builtin = BuiltinDriver(info, database="sbtest", processes=processes)
    results: dict[str, list[float]] = {"sysbench": [], "builtin": []}
    for i in range(rounds):
        for name, driver in (("sysbench", sysbench), ("builtin", builtin)):
            tps = await one_run(driver, seconds)
            results[name].append(tps)
            print(f"round {i + 1} {name:8} {tps:10.0f} tps", flush=True)
    sb = statistics.median(results["sysbench"])
    bi = statistics.median(results["builtin"])
    return {"runs": results, "sysbench": sb, "builtin": bi, "ratio": bi / sb,
            "version": builtin.version, "workers": len(builtin.worker_pids)}


async def compare(sandbox: Sandbox, seconds: int, rounds: int, processes: int | None) -> None:
    got = await measure(sandbox, seconds, rounds, processes)
    print(f"sysbench median TPS: {got['sysbench']:.0f}")
    print(f"builtin  median TPS: {got['builtin']:.0f}  ({got['version']}, "
          f"{got['workers']} worker process(es))")
    print(f"ratio builtin/sysbench: {got['ratio']:.2f} (goal >= 0.5)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--processes", type=int, default=None)
    args = parser.parse_args()
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="knobtop-bench-") as tmp:
        sandbox = Sandbox(Path(tmp) / "lab")
        sandbox.start()
        try:
            asyncio.run(compare(sandbox, args.seconds, args.rounds, args.processes))
        finally:
            sandbox.stop()
    print(f"total {time.monotonic() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
