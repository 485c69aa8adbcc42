"""Samples on schedule while a person works the live screen (issue 16 goal 1; rows 6d-6e).

6c's condition (knobtop's live screen, dolphie's TUI beside it, sysbench saturating both
CPUs), made harder: during the window a "person" resizes knobtop's tmux window every
0.7 s (160x48, 80x24, 120x40, ...) and presses scrolling keys (Down, Up, PageDown,
PageUp), so the screen relayouts and repaints all the time.  At 1 Hz and at 10 Hz.  The
samples come from knobtop's journal, which the session's process writes (since issue 16 a
process apart from the screen's): on time = the gap to the previous sample <= 1.5x the
interval; the longest gap is the goal's other half (<= 2x).

Run alone (``python bench/live_schedule.py [--window S]``) or from ``bench/run_all.py``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from common import (
    BenchServer,
    Cleanup,
    Dolphie,
    KnobtopLive,
    end_process,
    in_real_time,
    journal_samples,
    log,
    temp_dir,
    tree_cpu,
)
from watch_cost import schedule

# The reference: a bare Python loop keeping the same grid the same way (a late tick skips
# the slots it missed), in its own process at the default priority.  When it misses too,
# the machine stalled everything; knobtop cannot do better than an empty loop.
PROBE = """
import sys, time
interval = float(sys.argv[1])
due = time.monotonic()
while True:
    delay = due - time.monotonic()
    if delay > 0:
        time.sleep(delay)
    print(f"{time.time():.4f}", flush=True)
    due += interval
    now = time.monotonic()
    if due < now:
        due += (int((now - due) / interval) + 1) * interval
"""

SIZES = ((160, 48), (80, 24), (120, 40), (100, 30))
KEYS = ("Down", "Down", "PageDown", "Up", "PageUp")


def _person(live: KnobtopLive, stop: threading.Event, resize: bool = True) -> int:
    """Resize and scroll until ``stop``; the number of actions taken."""
    in_real_time(0)  # this thread
    actions = 0
    sizes, keys = itertools.cycle(SIZES), itertools.cycle(KEYS)
    while not stop.wait(0.35):
        w, h = next(sizes) if actions % 2 == 0 and resize else (0, 0)
        if w:
            subprocess.run(["tmux", "-L", live.pane.socket, "resize-window", "-t", "bench",
                            "-x", str(w), "-y", str(h)], timeout=10, check=False)
        else:
            live.pane.send_keys(next(keys))
        actions += 1
    # Back to 160x48 for whatever is measured next.
    subprocess.run(["tmux", "-L", live.pane.socket, "resize-window", "-t", "bench", "-x",
                    "160", "-y", "48"], timeout=10, check=False)
    return actions


def one_interval(server: BenchServer, cleanup: Cleanup, tmp: Path, interval: float,
                 window: float, resize: bool = True) -> dict[str, Any]:
    live = KnobtopLive(server, tmp / f"person-{interval:g}.knobtop.jsonl", interval=interval)
    dolphie = Dolphie(server)
    for tool in (live, dolphie):
        tool.start(cleanup)
    for tool in (live, dolphie):
        tool.wait_ready()
    try:
        # The screen's CPU on the idle server (both of knobtop's processes, as in row 2a).
        time.sleep(min(10.0, window / 4))
        idle = min(30.0, window / 2)
        cpu0 = tree_cpu(live.pid)
        time.sleep(idle)
        idle_cpu = (tree_cpu(live.pid) - cpu0) / idle * 60.0
        with server.background_load(int(window + 15), cleanup):
            time.sleep(3.0)
            stop = threading.Event()
            acted: list[int] = []
            person = threading.Thread(target=lambda: acted.append(_person(live, stop, resize)))
            ticks = tmp / f"probe-{interval:g}.txt"
            with ticks.open("w") as sink:
                probe = subprocess.Popen([sys.executable, "-c", PROBE, str(interval)],
                                         stdout=sink, start_new_session=True)
            done = cleanup.add("the probe", lambda: end_process(probe.pid))
            in_real_time(live.pane.server_pid)
            w0 = time.time()
            person.start()
            time.sleep(window)
            stop.set()
            person.join(30)
            w1 = time.time()
            done()
        out = schedule(journal_samples(live.journal), interval, w0 + interval, w1)
        walls = [float(x) for x in ticks.read_text().split()]
        out["probe"] = schedule([(w, w) for w in walls], interval, w0 + interval, w1)
        out["actions"] = acted[0] if acted else 0
        out["window"] = w1 - w0
        out["idle_cpu"] = idle_cpu
        out["alive"] = not live.pane.dead
    finally:
        for tool in (live, dolphie):
            tool.stop()
    out["share"] = out["on_time"] / out["slots"] if out["slots"] else None
    probe = out["probe"]
    log(f"person at the screen, {interval:g} s: {out['on_time']}/{out['slots']} on time, "
        f"max gap {out['max_gap']:.2f} s, {out['actions']} resizes and keys; the probe "
        f"{probe['on_time']}/{probe['slots']}, max gap {probe['max_gap']:.2f} s")
    return out


def live_schedule(server: BenchServer, cleanup: Cleanup, tmp: Path, window: float,
                  intervals: tuple[float, ...] = (1.0, 0.1),
                  resize: bool = True) -> dict[str, Any]:
    return {f"{interval:g}": one_interval(server, cleanup, tmp, interval, window, resize)
            for interval in intervals}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--window", type=float, default=60.0)
    ap.add_argument("--intervals", default="1,0.1", help="sample intervals, comma-separated")
    ap.add_argument("--no-resize", action="store_true", help="the person only scrolls")
    ap.add_argument("--keep", type=Path, help="copy the journals into this directory")
    args = ap.parse_args()
    intervals = tuple(float(x) for x in args.intervals.split(","))
    cleanup = Cleanup()
    try:
        tmp = temp_dir(cleanup)
        server = BenchServer(tmp)
        server.start(cleanup)
        server.prepare()
        print(json.dumps(live_schedule(server, cleanup, tmp, args.window, intervals,
                                       not args.no_resize),
                         indent=2))
        if args.keep:
            args.keep.mkdir(parents=True, exist_ok=True)
            for journal in tmp.glob("person-*.knobtop.jsonl"):
                shutil.copy(journal, args.keep / journal.name)
    finally:
        cleanup.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
