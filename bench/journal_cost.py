"""What the journal costs: microseconds per ``JournalWriter.append`` and bytes per 1 Hz sample.

Takes ``--seconds`` (default 3600: one hour) of recorded-shaped events from
``journal_open_seek.day_events`` (per second: one sample with the recorded 42 counters and
the OS fields, one sysbench load report; a knob change every 10 minutes), builds them all
first, then appends them to a fresh ``JournalWriter`` with a secret to redact (as a live
session's writer has the server password) and its background fsync thread running, timing
each ``append`` with ``time.perf_counter``.  Done ``--repeats`` times; the figures are the
median repeat's.  Bytes per sample = the file's size / the number of samples (all events of
a sampled second counted), and the mean sample line alone.

Run:  .venv/bin/python bench/journal_cost.py [--seconds 3600] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from journal_open_seek import day_events
from knobtop.journal import JournalWriter, Sample

SECRET = "not-a-real-password-but-redacted-like-one"


def one_pass(seconds: int, path: Path) -> dict[str, Any]:
    header, events = day_events(seconds)
    batch = list(events)
    writer = JournalWriter(path, header, secrets=(SECRET,))
    times: list[float] = []
    kinds: list[bool] = []
    clock = time.perf_counter
    for event in batch:
        t0 = clock()
        writer.append(event)
        times.append(clock() - t0)
        kinds.append(isinstance(event, Sample))
    writer.close()
    size = path.stat().st_size
    sample_lines = [len(x) + 1 for x in path.read_bytes().splitlines()
                    if x.startswith(b'{"ev":"sample"')]
    return {
        "events": len(batch),
        "mean_us": statistics.fmean(times) * 1e6,
        "median_us": statistics.median(times) * 1e6,
        "p99_us": sorted(times)[int(0.99 * (len(times) - 1))] * 1e6,
        "sample_mean_us": statistics.fmean(t for t, s in zip(times, kinds, strict=True) if s)
        * 1e6,
        "bytes": size,
        "bytes_per_sample": size / seconds,
        "sample_line": statistics.fmean(sample_lines),
        "kb_per_hour": size / seconds * 3600 / 1024,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=3600)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", action="store_true", help="also print one JSON line")
    args = ap.parse_args()
    passes = []
    with tempfile.TemporaryDirectory(prefix="knobtop-bench-") as tmp:
        for i in range(args.repeats):
            passes.append(one_pass(args.seconds, Path(tmp) / f"hour-{i}.knobtop.jsonl"))
    got = sorted(passes, key=lambda p: p["mean_us"])[len(passes) // 2]
    got["repeats_mean_us"] = [p["mean_us"] for p in passes]
    print(f"{got['events']} events ({args.seconds} s of 1 Hz samples + load reports), "
          f"median of {args.repeats} passes")
    print(f"  append: mean {got['mean_us']:.1f} us, median {got['median_us']:.1f} us, "
          f"p99 {got['p99_us']:.1f} us; sample events mean {got['sample_mean_us']:.1f} us")
    print(f"  {got['bytes_per_sample']:.0f} B per sample-second ({got['kb_per_hour']:.0f} KB "
          f"per hour), sample line {got['sample_line']:.0f} B  (goal <= 1024 B per sample)")
    if args.json:
        print(orjson.dumps(got).decode())
    return 0 if got["bytes_per_sample"] <= 1024 else 1


if __name__ == "__main__":
    sys.exit(main())
