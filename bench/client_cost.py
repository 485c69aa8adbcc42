"""What watching costs the watcher: CPU seconds per minute and RSS of knobtop's live screen and
of dolphie's TUI, each in its own 160x48 tmux pane, both at a 1 s refresh, side by side.

Used by ``bench/run_all.py``.  Both start together on the idle sandbox; once each shows
data, a warm-up, then one window idle and one window while sysbench (oltp_point_select,
8 threads) saturates the machine.  CPU = user + system time of each program's process tree
(psutil ``cpu_times``, reaped children included) over the window; the tmux server of each
pane is measured apart (it parses what the program draws).  Under load, dolphie's own
"Latency" figure (how long its last refresh took) is read off its screen every few seconds,
and knobtop's samples are checked against its schedule from its journal.  The two programs
then stay up (idle) while the offline benchmarks run, so their RSS can be compared over
several minutes.
"""

from __future__ import annotations

import os
import statistics
import time
from pathlib import Path
from typing import Any

import psutil

from common import (
    BenchServer,
    Cleanup,
    Dolphie,
    KnobtopLive,
    journal_samples,
    log,
    proc_cpu,
    tree_cpu,
)
from common import tree_rss as rss
from watch_cost import busy_seconds_since, schedule


class Pair:
    """The two TUIs, running."""

    def __init__(self, server: BenchServer, tmp: Path) -> None:
        self.knobtop = KnobtopLive(server, tmp / "live.knobtop.jsonl")
        self.dolphie = Dolphie(server)
        self.started = 0.0
        self.rss_start: dict[str, int] = {}

    @property
    def tools(self) -> dict[str, KnobtopLive | Dolphie]:
        return {"knobtop": self.knobtop, "dolphie": self.dolphie}

    def start(self, cleanup: Cleanup) -> None:
        for tool in self.tools.values():
            tool.start(cleanup)
        for tool in self.tools.values():
            tool.wait_ready()
        self.started = time.monotonic()
        self.rss_start = {name: rss(tool.pid) for name, tool in self.tools.items()}

    def window(self, seconds: float, poll_latency: bool = False) -> dict[str, Any]:
        tools = {name: tool.pid for name, tool in self.tools.items()}
        panes = {f"tmux ({name})": tool.pane.server_pid for name, tool in self.tools.items()}
        cpu0 = {name: tree_cpu(pid) for name, pid in tools.items()}
        cpu0 |= {name: proc_cpu(pid) for name, pid in panes.items()}
        ours0 = tree_cpu(os.getpid())  # mariadbd and a background sysbench are children
        sys0 = psutil.cpu_times()
        began = time.monotonic()
        latencies: list[float] = []
        while (left := began + seconds - time.monotonic()) > 0:
            time.sleep(min(5.0, left))
            if poll_latency and left > 1.0:
                lat = self.dolphie.latency()
                if lat is not None:
                    latencies.append(lat)
        took = time.monotonic() - began
        total, busy = busy_seconds_since(sys0)
        used = {name: tree_cpu(pid) - cpu0[name] for name, pid in tools.items()}
        used |= {name: proc_cpu(pid) - cpu0[name] for name, pid in panes.items()}
        ours = tree_cpu(os.getpid()) - ours0 + sum(used.values())
        out: dict[str, Any] = {name: cpu / took * 60.0 for name, cpu in used.items()}
        out["seconds"] = took
        out["busy"] = busy / total if total else 0.0
        out["others"] = max(0.0, busy - ours) / total if total else 0.0
        if poll_latency:
            out["dolphie_latency"] = latencies
        return out

    def finish(self) -> dict[str, Any]:
        minutes = (time.monotonic() - self.started) / 60.0
        out = {"minutes": minutes}
        for name, tool in self.tools.items():
            out[name] = {"start": self.rss_start[name], "end": rss(tool.pid)}
        for tool in self.tools.values():
            tool.stop()
        return out


def client_cost(server: BenchServer, cleanup: Cleanup, tmp: Path, warm: float,
                window: float) -> tuple[dict[str, Any], Pair]:
    pair = Pair(server, tmp)
    pair.start(cleanup)
    log(f"both TUIs up: RSS knobtop {pair.rss_start['knobtop'] / 1e6:.0f} MB, "
        f"dolphie {pair.rss_start['dolphie'] / 1e6:.0f} MB; warm-up {warm:g} s")
    time.sleep(warm)
    idle = pair.window(window)
    log(f"idle: knobtop {idle['knobtop']:.2f} s/min, dolphie {idle['dolphie']:.2f} s/min "
        f"(others' work: {idle['others']:.0%} of the machine)")
    with server.background_load(int(window + 10), cleanup):
        time.sleep(3.0)
        w0 = time.time()
        load = pair.window(window, poll_latency=True)
        w1 = time.time()
    lat = load["dolphie_latency"]
    log(f"load: knobtop {load['knobtop']:.2f} s/min, dolphie {load['dolphie']:.2f} s/min; "
        f"dolphie latency median {statistics.median(lat) if lat else float('nan'):.2f} s")
    live = schedule(journal_samples(pair.knobtop.journal), 1.0, w0 + 1.0, w1)
    return {"warm": warm, "window": window, "idle": idle, "load": load,
            "live_schedule": live}, pair
