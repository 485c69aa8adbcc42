"""Start-up of the command line as whole processes (issue 16 goal 3): `knobtop --version`,
`knobtop --help` and `knobtop report` of a 1-hour journal, start to exit, median of N runs.

The 1-hour journal is built with bench/journal_open_seek.py's generator (the recorded
lab-80s pattern repeated). Prints the targets and the figures before this work side by side.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from journal_open_seek import generate

ROWS = [  # name, argv after `python -m knobtop`, target s, previous figure
    ("--version", ["--version"], 0.1, "0.57 s (0.46 s idle)"),
    ("--help", ["--help"], 0.1, "0.77 s"),
    ("report, 1-hour journal", ["report", "{journal}"], 0.15, "0.47 s (80-second journal)"),
]


def whole_process(argv: list[str], runs: int) -> float:
    """The median seconds from start to exit of ``python -m knobtop ARGV``.

    The exit is waited for in one blocking waitpid, bounded by a timer that kills the
    process after 60 s. (``subprocess.run(timeout=...)`` polls for the exit instead, 0.5 ms
    doubling up to every 50 ms: each figure read up to 50 ms late, 0.066 s as 0.115 s.)"""
    times = []
    for _ in range(runs + 1):  # the first run warms the page cache and is not counted
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "knobtop", *argv],
                                stdout=subprocess.DEVNULL)
        killer = threading.Timer(60.0, proc.kill)
        killer.start()
        try:
            code = proc.wait()
        finally:
            killer.cancel()
        times.append(time.perf_counter() - start)
        if code != 0:
            raise subprocess.CalledProcessError(code, proc.args)
    return statistics.median(times[1:])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--json", action="store_true", help="the figures as JSON (run_all.py)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")  # the report cache's
        journal = Path(tmp) / "hour.knobtop.jsonl"
        generate(journal, 3600)
        # PYTHONDONTWRITEBYTECODE=1 (as on the farm) compiles every module on each start;
        # an installed wheel has its .pyc files. Say which this run measured.
        cached = "no .pyc cache" if sys.flags.dont_write_bytecode else ".pyc cached"
        if args.json:
            print(json.dumps({name: whole_process([a.format(journal=journal) for a in argv],
                                                  args.runs)
                              for name, argv, _target, _before in ROWS}))
            return 0
        print(f"start-up of `python -m knobtop`, {cached}, median of {args.runs} runs")
        print("| start-up (whole process, median) | seconds | target | before |")
        print("| --- | --- | --- | --- |")
        for name, argv, target, before in ROWS:
            real = [a.format(journal=journal) for a in argv]
            took = whole_process(real, args.runs)
            print(f"| {name} | {took:.3f} | <= {target} | {before} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
