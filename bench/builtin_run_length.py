"""How long a timed run of knobtop's built-in load lasts against the time it was given.

tests/live/test_builtin_driver.py checks conditions only (the run ends by itself, not before its
deadline, within the time the test saw); the figure lives here. Starts a sandbox mariadbd
in a temporary directory, prepares 1 table x 1000 rows, then makes ``--runs`` (default 5)
oltp_point_select runs of ``--seconds`` (default 3) with 4 threads in 2 worker processes,
as the test does. For each run it prints the driver's own total time, how far past the
deadline that is, and the wall time from ``start()`` to the exit callback (worker start-up
and shutdown included). The goal is the bound the test used to hold: total time within
[S, S + 1.5) s on every run.

Run:  .venv/bin/python bench/builtin_run_length.py [--seconds S] [--runs N]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from knobtop.lab import Sandbox
from knobtop.load.base import LoadExit, LoadSpec
from knobtop.load.builtin import BuiltinDriver
from knobtop.load.prepare import prepare_tables

SPEC = LoadSpec(workload="oltp_point_select", threads=4, tables=1, table_size=1000)
SLACK = 1.5  # seconds past the deadline the goal allows


async def one_run(driver: BuiltinDriver, seconds: int) -> tuple[float, float]:
    """(the driver's total time, wall seconds from start() to the exit callback)."""
    ended = asyncio.Event()
    outcome: list[LoadExit] = []

    async def on_exit(result: LoadExit) -> None:
        outcome.append(result)
        ended.set()

    spec = LoadSpec(workload=SPEC.workload, threads=SPEC.threads, tables=SPEC.tables,
                    table_size=SPEC.table_size, duration=seconds)
    began = time.monotonic()
    await driver.start(spec, lambda _src, _report: None, on_exit)
    try:
        async with asyncio.timeout(seconds + 30):
            await ended.wait()
    finally:
        if driver.running:
            await driver.stop()
    wall = time.monotonic() - began
    if not outcome or outcome[0].error or outcome[0].summary is None:
        raise SystemExit(f"the run failed: {outcome[0].error if outcome else 'no exit'}")
    return outcome[0].summary.total_time_s, wall


async def measure(sandbox: Sandbox, seconds: int, runs: int) -> bool:
    info = sandbox.connection(use_socket=True)
    driver = BuiltinDriver(info, database="sbtest", processes=2)
    await prepare_tables(info, driver, SPEC)
    totals: list[float] = []
    for i in range(runs):
        total, wall = await one_run(driver, seconds)
        totals.append(total)
        print(f"run {i + 1}: total {total:.4f} s, past the deadline {total - seconds:+.4f} s, "
              f"start() to exit {wall:.3f} s", flush=True)
    over = [t - seconds for t in totals]
    ok = all(seconds <= t < seconds + SLACK for t in totals)
    print(f"past the deadline: median {statistics.median(over):+.4f} s, max {max(over):+.4f} s; "
          f"goal every run in [{seconds}, {seconds + SLACK}) s: {'PASS' if ok else 'FAIL'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="knobtop-bench-") as tmp:
        sandbox = Sandbox(Path(tmp) / "lab")
        sandbox.start()
        try:
            ok = asyncio.run(measure(sandbox, args.seconds, args.runs))
        finally:
            sandbox.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
