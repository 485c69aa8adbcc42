"""knobtop's LinkBench (built-in driver) against sysbench, one PK lookup each, in one run.

Issue 20's performance row: a GetNode-only LinkBench mix (``ops=getnode``: one primary-key
lookup on nodetable per request) against sysbench ``oltp_point_select`` (one primary-key
lookup on sbtest per transaction), both with 8 client threads on one private sandbox,
alternated ABAB for ``--seconds`` each. Per driver: requests/s (median per-second, the
first second left out, median over rounds) and the client CPU per request (user + system
CPU of the driver's own processes, from RUSAGE_CHILDREN around each run, over its
requests). Prints the ratio LinkBench/sysbench of requests/s (goal >= 0.5, as for the
built-in point select) and the cost of recording one latency in the per-operation
histogram (DDSketch, 1% relative accuracy) next to sysbench's own log histogram.

Run:  .venv/bin/python bench/linkbench_driver.py [--seconds S] [--rounds R] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from builtin_vs_sysbench import timed_run
from knobtop.hosts.local import LocalHost
from knobtop.lab import Sandbox
from knobtop.load.base import LoadDriver, LoadSpec
from knobtop.load.builtin import SKETCH_ACCURACY, BuiltinDriver, bucket
from knobtop.load.prepare import prepare_tables
from knobtop.load.sysbench import Sysbench

THREADS = 8
POINT = LoadSpec(workload="oltp_point_select", threads=THREADS, tables=4, table_size=10000)
GETNODE = LoadSpec(workload="linkbench", threads=THREADS, table_size=10000, loaders=2,
                   options=(("ops", "getnode"),))


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


async def one_run(driver: LoadDriver, spec: LoadSpec, seconds: int) -> tuple[float, float]:
    """(median requests/s without the first second, CPU seconds per request) of one run."""
    cpu = children_cpu()
    reports = await timed_run(driver, spec, seconds)
    await asyncio.sleep(0.2)  # the driver's processes reaped: their CPU is counted
    used = children_cpu() - cpu
    steady = [r.tps for r in reports if r.second > 1] or [r.tps for r in reports]
    if not steady:
        raise SystemExit(f"{driver.name} gave no interval reports")
    requests = sum(r.tps for r in reports)
    return statistics.median(steady), used / max(requests, 1.0)


def sketch_cost(n: int = 200_000) -> dict[str, float]:
    """Nanoseconds to record one latency: DDSketch.add and sysbench's bucket index."""
    from ddsketch import DDSketch

    rng = random.Random(1)
    values = [rng.lognormvariate(0.0, 1.0) for _ in range(n)]
    sketch = DDSketch(relative_accuracy=SKETCH_ACCURACY)
    began = time.perf_counter()
    for v in values:
        sketch.add(v)
    dd = (time.perf_counter() - began) / n * 1e9
    hist = [0] * 1024
    began = time.perf_counter()
    for v in values:
        hist[bucket(v)] += 1
    own = (time.perf_counter() - began) / n * 1e9
    exact = sorted(values)[int(0.99 * (n - 1))]
    return {"ddsketch_ns": round(dd), "bucket_ns": round(own),
            "p99_error": abs((sketch.get_quantile_value(0.99) or 0.0) - exact) / exact}


async def measure(sandbox: Sandbox, seconds: int, rounds: int) -> dict[str, Any]:
    info = sandbox.connection(use_socket=True)
    sysbench = Sysbench(LocalHost(), mysql_socket=str(sandbox.socket), user=info.user,
                        password=info.password, database="sbtest")
    builtin = BuiltinDriver(info, database="sbtest")
    await prepare_tables(info, sysbench, POINT)
    await prepare_tables(info, builtin, GETNODE)
    runs: dict[str, list[tuple[float, float]]] = {"sysbench": [], "linkbench": []}
    for i in range(rounds):
        for name, driver, spec in (("sysbench", sysbench, POINT),
                                   ("linkbench", builtin, GETNODE)):
            got = await one_run(driver, spec, seconds)
            runs[name].append(got)
            print(f"round {i + 1} {name:9} {got[0]:10.0f} requests/s, "
                  f"{got[1] * 1e6:6.1f} us client CPU per request", flush=True)
    out: dict[str, Any] = {"threads": THREADS, "seconds": seconds, "rounds": rounds}
    for name, values in runs.items():
        out[name] = statistics.median(v[0] for v in values)
        out[f"{name}_cpu_us"] = statistics.median(v[1] for v in values) * 1e6
    out["ratio"] = out["linkbench"] / out["sysbench"]
    out["cpu_ratio"] = out["linkbench_cpu_us"] / out["sysbench_cpu_us"]
    out.update(sketch_cost())
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--json", action="store_true", help="also print one JSON line")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="knobtop-bench-") as tmp:
        sandbox = Sandbox(Path(tmp) / "lab")
        sandbox.start()
        try:
            got = asyncio.run(measure(sandbox, args.seconds, args.rounds))
        finally:
            sandbox.stop()
    print(f"sysbench oltp_point_select x{THREADS}: {got['sysbench']:.0f} requests/s, "
          f"{got['sysbench_cpu_us']:.1f} us client CPU per request")
    print(f"LinkBench GetNode-only x{THREADS}:   {got['linkbench']:.0f} requests/s, "
          f"{got['linkbench_cpu_us']:.1f} us client CPU per request")
    print(f"ratio LinkBench/sysbench: {got['ratio']:.2f} requests/s (goal >= 0.5), "
          f"{got['cpu_ratio']:.1f}x the client CPU per request")
    print(f"recording one latency: DDSketch {got['ddsketch_ns']} ns, sysbench-style "
          f"bucket {got['bucket_ns']} ns; DDSketch p99 error "
          f"{got['p99_error'] * 100:.2f}% (bound {SKETCH_ACCURACY * 100:g}%)")
    if args.json:
        print(json.dumps(got))
    return 0 if math.isfinite(got["ratio"]) else 1


if __name__ == "__main__":
    sys.exit(main())
