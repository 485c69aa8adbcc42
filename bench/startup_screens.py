"""Start-up of the screens as whole processes (issue 16 goal 3): `knobtop lab --load none` on
a running sandbox until its first sample is on screen, and `knobtop replay` of a 24-hour
journal until its first frame is; each in a fresh 160x48 tmux pane, median of N runs.

Time runs from just before tmux starts the command (tmux's own start-up is measured once
with `true` and subtracted) until `tmux capture-pane` first shows the text: the pane is
polled every 10 ms, so a figure is late by at most that.  The RSS of the live screen (the
screen's process and the session's, together) is read once its first sample is shown.

Run alone (``python bench/startup_screens.py [--runs N] [--json]``) or from run_all.py.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import psutil

from common import KNOBTOP, compile_knobtop
from journal_open_seek import generate
from knobtop.lab import Sandbox

FIRST_SAMPLE = re.compile(r"\b[1-9]\d* samples? every")
def memory(pane_pid: int) -> dict[str, int]:
    """RSS of the screen's process and of the session's, and PSS of the two together
    (PSS shares the pages the fork left in common between them: what they cost)."""
    procs = [psutil.Process(pane_pid), *psutil.Process(pane_pid).children(recursive=True)]
    ours = [p for p in procs if "knobtop" in " ".join(p.cmdline())]
    screen = next(p for p in ours if p.parent() not in ours)
    sessions = [p for p in ours if p.parent() == screen]
    return {"screen_rss": screen.memory_info().rss,
            "session_rss": sum(p.memory_info().rss for p in sessions),
            "pss": sum(p.memory_full_info().pss for p in [screen, *sessions])}


FIRST_FRAME = re.compile(r"Server TPS .*\d")  # a graph title with its figure


def _tmux(socket: str, *args: str) -> str:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True,
                          timeout=30, check=False).stdout


def time_to_text(command: str, pattern: re.Pattern[str], timeout: float = 30.0,
                 on_shown: Callable[[int], None] | None = None) -> float:
    """Seconds from starting ``command`` in a fresh 160x48 pane to ``pattern`` on screen."""
    socket = f"knobtop-startup-{os.getpid()}-{time.monotonic_ns()}"
    start = time.perf_counter()
    subprocess.run(["tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s", "s",
                    "-x", "160", "-y", "48", command], check=True, timeout=30)
    try:
        deadline = start + timeout
        while time.perf_counter() < deadline:
            if pattern.search(_tmux(socket, "capture-pane", "-p", "-t", "s")):
                took = time.perf_counter() - start
                if on_shown is not None:
                    on_shown(int(_tmux(socket, "display", "-p", "-t", "s", "#{pane_pid}")))
                return took
            time.sleep(0.01)
        raise RuntimeError(f"{command!r} did not show {pattern.pattern!r} within {timeout} s:"
                           f"\n{_tmux(socket, 'capture-pane', '-p', '-t', 's')}")
    finally:
        _tmux(socket, "send-keys", "-t", "s", "q")
        for _ in range(300):
            if "s" not in _tmux(socket, "list-sessions", "-F", "#{session_name}").split():
                break
            time.sleep(0.05)
        _tmux(socket, "kill-server")


def tmux_itself(runs: int) -> float:
    """What starting a pane costs before the command runs (subtracted from each figure)."""
    times = []
    for _ in range(runs):
        socket = f"knobtop-startup-{os.getpid()}-{time.monotonic_ns()}"
        start = time.perf_counter()
        subprocess.run(["tmux", "-L", socket, "-f", "/dev/null", "new-session", "-d", "-s",
                        "s", "-x", "160", "-y", "48", "true"], check=True, timeout=30)
        times.append(time.perf_counter() - start)
        _tmux(socket, "kill-server")
    return statistics.median(times)


def measure(runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="knobtop-startup-") as tmp:
        root = Path(tmp)
        sandbox = Sandbox(root / "lab")
        sandbox.start()
        try:
            day = root / "day.knobtop.jsonl"
            generate(day, 86400)
            base = tmux_itself(runs)
            lab = f"{KNOBTOP} lab --dir {sandbox.root} --load none --journal {root}/lab-%d.jsonl"
            mem: list[dict[str, int]] = []
            labs = [time_to_text(lab % i, FIRST_SAMPLE,
                                 on_shown=lambda pid: mem.append(memory(pid))) - base
                    for i in range(runs + 1)][1:]  # the first run warms the page cache
            replays = [time_to_text(f"{KNOBTOP} replay {day}", FIRST_FRAME) - base
                       for _ in range(runs + 1)][1:]
        finally:
            sandbox.stop()
    return {"runs": runs, "tmux": base, "lab_first_sample": statistics.median(labs),
            "lab_all": labs, "replay_first_frame": statistics.median(replays),
            "replay_all": replays,
            "memory": {k: statistics.median(m[k] for m in mem[1:]) for k in mem[0]}}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    compile_knobtop()  # run_all.py does the same before its rows
    out = measure(args.runs)
    if args.json:
        print(json.dumps(out))
    else:
        print(f"lab --load none to first sample: {out['lab_first_sample']:.2f} s (target 1.0)")
        print(f"replay 24 h to first frame: {out['replay_first_frame']:.2f} s (target 1.0)")
        m = out["memory"]
        print(f"live screen at its first sample: screen RSS {m['screen_rss'] / 1e6:.0f} MB, "
              f"session RSS {m['session_rss'] / 1e6:.0f} MB, PSS of both "
              f"{m['pss'] / 1e6:.0f} MB (target 60)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
