"""What watching costs the server: sysbench TPS with no watcher, knobtop at 1 Hz and 10 Hz, and
dolphie at its 1 s refresh; statements and bytes per sample; samples on schedule under load.

Used by ``bench/run_all.py``; the functions take a started :class:`common.BenchServer`.

Server cost: sysbench runs (oltp_point_select, 8 threads, 4 x 10000 rows, over the socket)
with no watcher alternating with one watcher: ``knobtop connect --headless --interval 1``,
the same at ``--interval 0.1``, or dolphie's TUI in a 160x48 tmux pane, the watchers' order
rotating each round (none k1 none k10 none dolphie none k10 none dolphie none k1 ... none).
A watcher is started and seen sampling before its sysbench run starts and stopped after
it.  A run's TPS is the median of sysbench's per-second reports without the first second;
a watcher run's ratio is its TPS / the mean TPS of the two no-watcher runs around it.
mariadbd's own CPU time per transaction is recorded too (less sensitive to other work on
the machine than TPS is).

Schedule: the 1 Hz (and 10 Hz) watchers' journals, samples stamped while sysbench ran (the
first second left out): a sample is on time when it follows the one before within 1.5x the
interval; the share is on-time samples / grid slots in the window (skipped slots count as
misses).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import statistics
import time
from pathlib import Path
from typing import Any

import psutil

from builtin_vs_sysbench import one_run
from common import (
    BenchServer,
    Cleanup,
    Dolphie,
    KnobtopHeadless,
    Watcher,
    journal_samples,
    log,
    tree_cpu,
)
from knobtop.analysis.stats import compare_runs
from knobtop.session.drift import DRIFT_INTERVAL

ARMS = ("none", "k1", "k10", "dolphie")
COUNTERS = ("Questions", "Bytes_sent", "Bytes_received", "Created_tmp_tables")


def make_watcher(arm: str, server: BenchServer, journal: Path) -> Watcher | None:
    if arm == "k1":
        return KnobtopHeadless(server, 1.0, journal)
    if arm == "k10":
        return KnobtopHeadless(server, 0.1, journal)
    if arm == "dolphie":
        return Dolphie(server)
    return None


def schedule(samples: list[tuple[float, float]], interval: float, w0: float,
             w1: float) -> dict[str, float]:
    """On-time samples and grid slots among the samples whose wall time is in [w0, w1]."""
    ts = sorted(t for t, wall in samples if w0 <= wall <= w1)
    gaps = [b - a for a, b in itertools.pairwise(ts)]
    slots = round((ts[-1] - ts[0]) / interval) if len(ts) > 1 else 0
    return {"on_time": sum(g <= 1.5 * interval for g in gaps), "slots": slots,
            "max_gap": max(gaps, default=0.0), "samples": len(ts)}


def busy_since(before: Any) -> float:
    """System-wide CPU busy share since ``before`` (psutil.cpu_times())."""
    total, busy = busy_seconds_since(before)
    return busy / total if total > 0 else 0.0


def busy_seconds_since(before: Any) -> tuple[float, float]:
    """CPU seconds elapsed (all CPUs) and of them busy, since ``before``."""
    after = psutil.cpu_times()
    total = sum(after) - sum(before)
    idle = (after.idle - before.idle) + (after.iowait - before.iowait)
    return total, total - idle


def run_arm(arm: str, server: BenchServer, cleanup: Cleanup, tmp: Path, seconds: int,
            tag: str) -> dict[str, Any]:
    journal = tmp / f"{arm}-{tag}.knobtop.jsonl"
    watcher = make_watcher(arm, server, journal)
    if watcher is not None:
        watcher.start(cleanup)
        watcher.wait_ready()
        time.sleep(1.0)
    mariadbd = server.sandbox.running_pid() or 0
    # Ours: this process's tree (mariadbd, sysbench and a headless knobtop are children)
    # plus a TUI's tmux server tree; the machine's other busy CPU time is someone else's.
    tui = watcher.pane.server_pid if isinstance(watcher, Dolphie) else 0
    try:
        cpu0 = tree_cpu(watcher.pid) if watcher else 0.0
        srv0 = tree_cpu(mariadbd)
        ours0 = tree_cpu(os.getpid()) + (tree_cpu(tui) if tui else 0.0)
        sys0 = psutil.cpu_times()
        w0 = time.time()
        tps = asyncio.run(one_run(server.sysbench(), seconds))
        w1 = time.time()
        total, busy = busy_seconds_since(sys0)
        ours = tree_cpu(os.getpid()) + (tree_cpu(tui) if tui else 0.0) - ours0
        srv = tree_cpu(mariadbd) - srv0
        cpu = (tree_cpu(watcher.pid) - cpu0) / (w1 - w0) if watcher else 0.0
    finally:
        if watcher is not None:
            watcher.stop()
    out: dict[str, Any] = {"arm": arm, "tps": tps, "busy": busy / total if total else 0.0,
                           "others": max(0.0, busy - ours) / total if total else 0.0,
                           "watcher_cpu": cpu,
                           "server_us_per_txn": srv / (tps * (w1 - w0)) * 1e6 if tps else 0.0}
    if isinstance(watcher, KnobtopHeadless):
        out["schedule"] = schedule(journal_samples(journal), watcher.interval, w0 + 1.0, w1)
        out["journal"] = str(journal)
    return out


def sequence(rounds: int) -> list[str]:
    """none, W1, none, W2, none, W3, none, ...: every watcher run sits between two
    no-watcher runs; the watchers' order rotates each round."""
    watchers = ARMS[1:]
    out: list[str] = []
    for r in range(rounds):
        for arm in watchers[r % len(watchers):] + watchers[:r % len(watchers)]:
            out += ["none", arm]
    return [*out, "none"]


def server_cost(server: BenchServer, cleanup: Cleanup, tmp: Path, rounds: int,
                seconds: int) -> dict[str, Any]:
    order = sequence(rounds)
    done: list[dict[str, Any]] = []
    for i, arm in enumerate(order):
        run = run_arm(arm, server, cleanup, tmp, seconds, f"{i + 1}")
        done.append(run)
        log(f"run {i + 1:2}/{len(order)} {arm:8} {run['tps']:9.0f} tps  cpu busy "
            f"{run['busy']:.0%} (others {run['others']:.0%})  mariadbd "
            f"{run['server_us_per_txn']:.0f} us/txn  watcher cpu {run['watcher_cpu']:.1%}"
            + (f"  on time {run['schedule']['on_time']}/{run['schedule']['slots']}"
               if "schedule" in run else ""))
    for i, run in enumerate(done):
        if run["arm"] != "none":
            run["ratio"] = run["tps"] / statistics.fmean((done[i - 1]["tps"],
                                                          done[i + 1]["tps"]))
    runs = {arm: [r for r in done if r["arm"] == arm] for arm in ARMS}
    none = [x["tps"] for x in runs["none"]]
    out: dict[str, Any] = {"rounds": rounds, "seconds": seconds, "order": done, "runs": runs}
    for arm in ARMS:
        out.setdefault("server_us_per_txn", {})[arm] = statistics.median(
            x["server_us_per_txn"] for x in runs[arm])
    for arm in ARMS[1:]:
        tps = [x["tps"] for x in runs[arm]]
        ratios = [x["ratio"] for x in runs[arm]]
        verdict = compare_runs(none, tps)
        out[arm] = {
            "ratio": statistics.median(ratios),
            "ratios": ratios,
            "lo": min(ratios),
            "hi": max(ratios),
            "verdict": verdict.label,
            "ci": (verdict.lo, verdict.hi),
            "p": verdict.p,
            "watcher_cpu": statistics.median(x["watcher_cpu"] for x in runs[arm]),
        }
    k1_vs_d = compare_runs([x["tps"] for x in runs["dolphie"]], [x["tps"] for x in runs["k1"]])
    out["k1_vs_dolphie"] = {"ratio": k1_vs_d.ratio, "verdict": k1_vs_d.label,
                            "ci": (k1_vs_d.lo, k1_vs_d.hi), "p": k1_vs_d.p}
    out["none_cv"] = statistics.pstdev(none) / statistics.fmean(none) if none else 0.0
    out["busy"] = statistics.median(x["busy"] for x in done)
    out["others"] = statistics.median(x["others"] for x in done)
    for arm in ("k1", "k10"):
        scheds = [x["schedule"] for x in runs[arm]]
        on = sum(s["on_time"] for s in scheds)
        slots = sum(s["slots"] for s in scheds)
        out[f"schedule_{arm}"] = {"on_time": on, "slots": slots,
                                  "share": on / slots if slots else None,
                                  "max_gap": max(s["max_gap"] for s in scheds)}
    return out


def per_sample_cost(server: BenchServer, cleanup: Cleanup, tmp: Path,
                    seconds: float) -> dict[str, Any]:
    """Statements, bytes and temporary tables each watcher costs the idle server: the
    deltas of global status over ``seconds`` minus those of the same window with no watcher
    (the probe's own statement included in both). ``seconds`` should be a whole number of
    knobtop's DRIFT_INTERVAL, so its drift reads count in the average as they come."""
    deltas: dict[str, dict[str, float]] = {}
    for arm in ARMS:
        journal = tmp / f"{arm}-probe.knobtop.jsonl"
        watcher = make_watcher(arm, server, journal)
        if watcher is not None:
            watcher.start(cleanup)
            watcher.wait_ready()
            time.sleep(1.5)
        try:
            s0, w0 = server.status(COUNTERS), time.time()
            time.sleep(seconds)
            s1, w1 = server.status(COUNTERS), time.time()
        finally:
            if watcher is not None:
                watcher.stop()
        d: dict[str, float] = {k: (s1[k] - s0[k]) / (w1 - w0) for k in COUNTERS}
        if isinstance(watcher, KnobtopHeadless):
            n = sum(1 for _t, wall in journal_samples(journal) if w0 <= wall <= w1)
            d["per_second"] = n / (w1 - w0)
        elif isinstance(watcher, Dolphie):
            d["per_second"] = 1.0  # its refresh interval; per refresh = per second here
        deltas[arm] = d
    out: dict[str, Any] = {"seconds": seconds}
    for arm in ARMS[1:]:
        per = deltas[arm]["per_second"] or 1.0
        out[arm] = {
            k: max(0.0, deltas[arm][k] - deltas["none"][k]) / per for k in COUNTERS
        } | {"samples_per_second": deltas[arm]["per_second"]}
        if arm != "dolphie":
            # Of the statements, the session's read of its watched knobs (changes made
            # outside knobtop): one every DRIFT_INTERVAL s (or per sample when samples are
            # further apart), counted in Questions like every other, averaged per sample.
            every = max(DRIFT_INTERVAL, 1 / per)
            out[arm]["drift_reads"] = 1 / every / per
        log(f"per sample {arm:8} {out[arm]['Questions']:.1f} statements, "
            f"{out[arm]['Bytes_sent'] / 1024:.1f} KB sent, "
            f"{out[arm]['Created_tmp_tables']:.1f} tmp tables "
            f"({deltas[arm]['per_second']:.2f} samples/s)")
    return out
