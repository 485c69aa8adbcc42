"""Open a 24-hour 1 Hz journal: first frame, full index, random seeks, bytes per sample.

The journal is generated into a temporary directory with ``JournalWriter``: 86,400 Sample
events shaped like the recorded ``tests/data/journals/lab-80s.knobtop.jsonl`` (its 39
counters, each counter growing at the recorded per-second rate so values reach the
magnitudes a day-long run has, gauges drawn from the recorded values, the same OS host
fields), one sysbench-shaped Load event per second, a knob change every 10 minutes, plus the
knobs snapshot, phase start/stop and end events.

What is measured (wall time, ``time.perf_counter``):

* first frame = ``JournalIndex(path)`` (header decoded) + ``build_in_background()`` started
  + ``tail_window(120)`` (the last 2 minutes read backwards from the end of the file, no
  full index yet).  The full index is building on its thread meanwhile and competes for the
  GIL, as it would in the app.  Measured twice: page cache warm (the file was just written)
  and after ``posix_fadvise(DONTNEED)`` dropped this file's cached pages (cold-ish).
* full index = from ``build_in_background()`` to ``ready`` (in the first-frame run).
* also, for comparison, open + full ``build()`` + ``seek(t_end - 120)`` + ``read`` in one go.
* seek = ``seek(t)`` + ``read(i, 120)`` at 200 random times (median and max).

Run:  .venv/bin/python bench/journal_open_seek.py [--seconds 86400] [--seeks 200]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson

from knobtop.journal import (
    Change,
    End,
    Event,
    Header,
    JournalWriter,
    Knobs,
    Load,
    Phase,
    Sample,
)
from knobtop.journal.index import JournalIndex

RECORDED = Path(__file__).resolve().parent.parent / "tests/data/journals/lab-80s.knobtop.jsonl"
WINDOW = 120.0
READ_N = 120


def recorded() -> tuple[Header, list[dict[str, Any]]]:
    lines = [orjson.loads(line) for line in RECORDED.read_bytes().splitlines()]
    head = {k: v for k, v in lines[0].items() if k != "ev"}
    return Header(**head), lines[1:]


def day_events(seconds: int) -> tuple[Header, Iterator[Event]]:
    """The header and events of ``seconds`` of 1 Hz samples shaped like the recorded ones
    (events are made as they are iterated, so a day never sits in memory)."""
    rng = random.Random(7)
    header, rows = recorded()
    samples = [r for r in rows if r["ev"] == "sample"]
    loads = [r for r in rows if r["ev"] == "load"]
    knobs = next(r for r in rows if r["ev"] == "knobs")
    first, last = samples[0]["v"], samples[-1]["v"]
    assert isinstance(first, list) and isinstance(last, list)
    span = len(samples) - 1
    # A counter that never went down is cumulative: grow it at its recorded rate.
    cumulative, rate, gauge_values = [], [], []
    for c in range(len(first)):
        col = [s["v"][c] for s in samples]
        nums = [x for x in col if x is not None]
        grows = bool(nums) and all(b >= a for a, b in itertools.pairwise(nums))
        cumulative.append(grows and nums[-1] > nums[0])
        rate.append((last[c] - first[c]) / span if cumulative[-1] else 0.0)
        gauge_values.append(nums or [None])
    host0 = samples[-1]["host"]["local"]
    host_rate = [(b - a) / span for a, b in zip(samples[0]["host"]["local"], host0, strict=True)]
    started = time.time() - seconds
    header = dataclasses.replace(header, started_wall=started)
    knobs_fields = {k: v for k, v in knobs.items() if k not in ("ev", "t", "wall")}

    def events() -> Iterator[Event]:
        yield Knobs(t=0.0004, wall=started, **knobs_fields)
        yield Phase(
            t=0.0056,
            wall=started,
            action="start",
            phase=1,
            driver="sysbench",
            workload="oltp_read_write",
            threads=4,
        )
        values: list[float | int | None] = list(last)
        host = list(host0)
        io_caps = ["200", "1000", "2000", "4000"]
        for s in range(seconds):
            for c, v in enumerate(values):
                if v is None:
                    continue
                if cumulative[c]:
                    values[c] = int(v + rate[c] * rng.uniform(0.8, 1.2) + 0.5)
                else:
                    values[c] = rng.choice(gauge_values[c])
            host = [round(h + r * rng.uniform(0.7, 1.3), 2)
                    for h, r in zip(host, host_rate, strict=True)]
            t = s + 0.0064 + rng.uniform(0, 0.004)
            yield Sample(
                t=round(t, 4),
                wall=round(started + t, 3),
                v=list(values),
                lat=round(rng.uniform(0.0015, 0.003), 5),
                host={"local": host},
            )
            ld = loads[s % len(loads)]
            tl = s + 1.025 + rng.uniform(0, 0.001)
            j = rng.uniform(0.9, 1.1)
            yield Load(
                t=round(tl, 4),
                wall=round(started + tl, 3),
                src="sysbench@local",
                s=s + 1,
                thds=4,
                tps=round(ld["tps"] * j, 2),
                qps=round(ld["qps"] * j, 2),
                r=round(ld["r"] * j, 2),
                w=round(ld["w"] * j, 2),
                o=round(ld["o"] * j, 2),
                pct=95,
                lat=round(ld["lat"] * j, 2),
                err=0.0,
                reconn=0.0,
            )
            if s % 600 == 599:
                k = s // 600
                old, new = io_caps[k % 4], io_caps[(k + 1) % 4]
                tc = s + 1.0095
                yield Change(
                    t=tc,
                    wall=started + tc,
                    knob="innodb_io_capacity",
                    requested=new,
                    old=old,
                    new=new,
                    method="set_global",
                    result="ok",
                    duration=0.0158,
                )
        yield Phase(
            t=seconds + 0.012,
            wall=started + seconds,
            action="stop",
            phase=1,
            driver="sysbench",
            workload="oltp_read_write",
            threads=4,
        )
        yield End(t=seconds + 0.013, wall=started + seconds, reason="duration reached",
                  samples=seconds)

    return header, events()


def generate(path: Path, seconds: int) -> Header:
    """Write a journal of ``seconds`` 1 Hz samples shaped like the recorded ones."""
    header, events = day_events(seconds)
    writer = JournalWriter(path, header)
    for event in events:
        writer.append(event)
    writer.close()
    return header


def drop_cache(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def first_frame(path: Path) -> tuple[float, float, JournalIndex, int]:
    began = time.perf_counter()
    idx = JournalIndex(path)
    idx.build_in_background()
    frame = idx.tail_window(WINDOW)
    frame_s = time.perf_counter() - began
    idx.ready.wait()
    full_s = time.perf_counter() - began
    return frame_s, full_s, idx, len(frame)


def replay_figures(path: Path, t_end: float, n: int) -> tuple[float, list[float], int]:
    """``knobtop replay``: open to the first full frame (at the start, index still building
    behind it), then seek_to(random t) + frame() once the index is complete."""
    from knobtop.cli import replay_for

    began = time.perf_counter()
    replay = replay_for(path)
    frame = replay.frame()
    first = time.perf_counter() - began
    replay.index.ready.wait()
    rng = random.Random(12)
    times = []
    samples = 0
    for _ in range(n):
        t = rng.uniform(replay.start, t_end)
        s0 = time.perf_counter()
        replay.seek_to(t)
        frame = replay.frame()
        times.append(time.perf_counter() - s0)
        samples = max(samples, frame.board.samples)
    replay.index.close()
    return first, times, samples


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=86_400, help="journal length (1 Hz)")
    ap.add_argument("--seeks", type=int, default=200)
    ap.add_argument("--json", action="store_true", help="also print the figures as one JSON line")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="knobtop-bench-") as tmp:
        path = Path(tmp) / "day.knobtop.jsonl"
        began = time.perf_counter()
        generate(path, args.seconds)
        gen_s = time.perf_counter() - began
        size = path.stat().st_size
        sample_bytes = [
            len(line) + 1
            for line in path.read_bytes().splitlines()
            if line.startswith(b'{"ev":"sample"')
        ]
        print(
            f"generated {args.seconds} s journal in {gen_s:.1f} s: {path.name}, "
            f"{size / 1e6:.1f} MB",
            flush=True,
        )

        warm_frame, warm_full, idx, n_frame = first_frame(path)
        idx.close()
        drop_cache(path)
        cold_frame, cold_full, idx, _ = first_frame(path)

        # the tail window is what the index says the last 2 minutes are
        t_first, t_end = idx.t_range or (0.0, 0.0)
        check = idx.events_between(t_end - WINDOW, t_end)
        assert len(check) == n_frame and check == idx.tail_window(WINDOW), "tail window differs"

        began = time.perf_counter()
        with JournalIndex(path) as again:
            again.build()
            i = again.seek(t_end - WINDOW)
            again.read(i, len(again) - i)
        sequential_s = time.perf_counter() - began

        rng = random.Random(11)
        seeks = []
        for _ in range(args.seeks):
            t = rng.uniform(t_first, t_end)
            s0 = time.perf_counter()
            got = idx.read(idx.seek(t), READ_N)
            seeks.append(time.perf_counter() - s0)
            assert got and got[0].t >= t - 1.0
        index_bytes = idx.nbytes
        events, problems = len(idx), len(idx.problems)
        idx.close()
        drop_cache(path)
        replay_first, replay_seeks, frame_samples = replay_figures(path, t_end, args.seeks)

    per_sample = size / args.seconds
    med, worst = statistics.median(seeks), max(seeks)

    def row(name: str, value: str, target: str = "", ok: bool | None = None) -> None:
        verdict = "" if ok is None else ("PASS" if ok else "FAIL")
        print(f"  {name:<48} {value:>14}  {target:<10} {verdict}")

    print(f"\n{events} events indexed, {problems} problems, index {index_bytes / 1e6:.1f} MB")
    row(
        "first frame, warm (open+header+tail_window 120 s)",
        f"{warm_frame * 1e3:.1f} ms",
        "< 1000 ms",
        warm_frame < 1.0,
    )
    row("first frame, cache dropped", f"{cold_frame * 1e3:.1f} ms", "< 1000 ms", cold_frame < 1.0)
    row(f"  ({n_frame} events in the frame)", "")
    row("full background index, warm", f"{warm_full * 1e3:.0f} ms")
    row("full background index, cache dropped", f"{cold_full * 1e3:.0f} ms")
    row("open + full build + seek + read 120 s (no tail)", f"{sequential_s * 1e3:.0f} ms")
    row(
        f"seek + read {READ_N} events, median of {len(seeks)}",
        f"{med * 1e3:.2f} ms",
        "< 100 ms",
        med < 0.1,
    )
    row("seek + read, max", f"{worst * 1e3:.2f} ms", "< 100 ms", worst < 0.1)
    replay_worst = max(replay_seeks)
    row("replay: open to first frame, cache dropped", f"{replay_first * 1e3:.1f} ms",
        "< 1000 ms", replay_first < 1.0)
    row(f"replay: seek + full frame ({frame_samples} samples), median",
        f"{statistics.median(replay_seeks) * 1e3:.2f} ms", "< 100 ms",
        statistics.median(replay_seeks) < 0.1)
    row("replay: seek + full frame, max", f"{replay_worst * 1e3:.2f} ms", "< 100 ms",
        replay_worst < 0.1)
    row("file size", f"{size / 1e6:.1f} MB")
    row(
        "file bytes per sample second (all events)",
        f"{per_sample:.0f} B",
        "<= 1024 B",
        per_sample <= 1024,
    )
    row(
        "sample line, mean / max",
        f"{statistics.mean(sample_bytes):.0f} / {max(sample_bytes)} B",
        "<= 1024 B",
        max(sample_bytes) <= 1024,
    )
    ok = (warm_frame < 1.0 and cold_frame < 1.0 and worst < 0.1 and per_sample <= 1024
          and replay_first < 1.0 and replay_worst < 0.1)
    if args.json:
        print(orjson.dumps({
            "seconds": args.seconds, "size": size, "events": events, "problems": problems,
            "first_frame_warm": warm_frame, "first_frame_cold": cold_frame,
            "full_index_cold": cold_full, "seek_median": med, "seek_max": worst,
            "replay_first": replay_first, "replay_seek_median": statistics.median(replay_seeks),
            "replay_seek_max": replay_worst, "replay_seeks": len(replay_seeks),
            "frame_samples": frame_samples, "bytes_per_second": per_sample,
            "sample_line_mean": statistics.mean(sample_bytes), "sample_line_max": max(sample_bytes),
            "ok": ok,
        }).decode())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
