"""`make bench`: knobtop's performance goals measured side by side with dolphie, in one run.

Starts one sandbox mariadbd (knobtop.lab.Sandbox in a temporary directory), loads 4 x 10000
sysbench rows, and measures, in this order:

1. server cost of watching (``watch_cost.py``): sysbench TPS with no watcher, knobtop
   sampling at 1 Hz and at 10 Hz, dolphie at its 1 s refresh, rounds interleaved; plus the
   statements and bytes each watcher costs per sample on the idle server;
6. sampling schedule under saturation, from the 1 Hz watcher's journals of (1);
7. knobtop's built-in load against sysbench (``builtin_vs_sysbench.py``);
2. client cost (``client_cost.py``): CPU seconds per minute of knobtop's live screen and
   dolphie's TUI, each in a 160x48 tmux pane, idle and under load; both then keep running;
3. replay first frame and seek on a 24-hour journal (``journal_open_seek.py``);
4. journal cost per event and bytes per sample (``journal_cost.py``);
5. RSS growth over a simulated day (``memory_growth.py``); and the RSS the two TUIs of (2)
   gained over the minutes they ran;
3h-3m. reports and comparisons of long journals (``report_cost.py``);
6d-6e. a person resizing and scrolling the live screen under load (``live_schedule.py``);
2d-2e. in (2)'s loaded condition, how far the live screen runs behind its journal and how
   soon a key acts on it, watched from outside (``screen_lag.py``).

Rows 3-5 run as separate interpreters (fresh memory, fresh imports).  Prints one table and
writes ``bench/RESULTS.md`` (``--results``; ``--quick`` writes nothing unless asked).
dolphie 6.18.0 is installed from PyPI into ``bench/.dolphie-venv`` on first use.

Run:  .venv/bin/python bench/run_all.py [--quick] [--results PATH]
      .venv/bin/python bench/run_all.py --rows 3g,3h,3i  (just those rows; no RESULTS.md)
"""
# Over 500 lines: the one table of every row with its goal, and the text RESULTS.md explains
# the rows with; each measurement lives in a script of its own.

from __future__ import annotations

import argparse
import asyncio
import os
import platform
import signal
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil

from builtin_vs_sysbench import measure as builtin_measure
from builtin_vs_sysbench import one_run
from client_cost import Pair, client_cost
from common import (
    BENCH,
    BenchServer,
    Cleanup,
    compile_knobtop,
    dolphie_version,
    ensure_dolphie,
    log,
    run_json,
    run_json_many,
    server_versions,
    temp_dir,
)
from knobtop.analysis.stats import NOISE
from live_schedule import live_schedule
from screen_lag import lag_details, lag_rows, screen_lag
from stats_power import markdown as stats_markdown
from stats_power import tolerance as stats_tolerance
from watch_cost import busy_since, per_sample_cost, server_cost

ARM_NAMES = {"none": "none", "k1": "knobtop 1 Hz", "k10": "knobtop 10 Hz",
             "dolphie": "dolphie 1 s"}
REFERENCE_DOLPHIE_RSS = "88 MB at start, 102 MB after 12 minutes (REFERENCE.md 0b, quoted)"


@dataclass(frozen=True)
class Plan:
    rounds: int = 5  # server-cost rounds (each: none, k1, k10, dolphie)
    seconds: int = 16  # per sysbench run (the first second is left out)
    probe: float = 15.0  # per watcher, statements/bytes on the idle server (3 drift reads)
    tui_warm: float = 40.0
    tui_window: float = 60.0
    builtin_rounds: int = 3
    builtin_seconds: int = 15
    journal_seconds: int = 86_400
    seeks: int = 200
    cost_seconds: int = 3600
    cost_repeats: int = 3
    memory_seconds: int = 86_400
    paint_every: int = 300
    person_window: float = 60.0  # rows 6d-6e: a person at the screen, per interval
    startup_runs: int = 5  # rows 3c-3g: whole-process start-ups
    report_runs: int = 5  # rows 3h-3m: whole-process reports and comparisons of long journals
    stats_sims: int = 3000  # rows 8a-8b: one-cell tables per figure (8-cell: a fifth)
    lag_window: float = 120.0  # row 2d: seconds of samples (p99: the second-latest of ~120)
    lag_presses: int = 60  # row 2e: note dialogs opened and closed (120 keys)


QUICK = Plan(rounds=2, seconds=4, probe=5.0, tui_warm=2.0, tui_window=6.0, builtin_rounds=1,
             builtin_seconds=4, journal_seconds=3600, seeks=20, cost_seconds=600,
             cost_repeats=1, memory_seconds=1800, paint_every=300, person_window=8.0,
             startup_runs=1, report_runs=1, stats_sims=300, lag_window=10.0,
             lag_presses=5)


# ---------------------------------------------------------------------------------------------
# The machine
# ---------------------------------------------------------------------------------------------


def machine() -> dict[str, str]:
    model = "?"
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    versions = server_versions()
    return {
        "CPUs (nproc)": str(os.cpu_count()),
        "CPU model": model,
        "RAM": f"{psutil.virtual_memory().total / 2**30:.1f} GiB",
        "kernel": f"{platform.system()} {platform.release()}",
        "OS": _os_release(),
        "Python": sys.version.split()[0],
        "MariaDB": versions["mariadb"].replace("/usr/sbin/mariadbd  ", ""),
        "sysbench": versions["sysbench"],
        "dolphie": dolphie_version(),
        "tmux": versions["tmux"],
    }


def _os_release() -> str:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return platform.platform()


def background_busy(seconds: float) -> float:
    """System-wide CPU busy share while this benchmark does nothing (others' work)."""
    before = psutil.cpu_times()
    time.sleep(seconds)
    return busy_since(before)


# ---------------------------------------------------------------------------------------------
# The run
# ---------------------------------------------------------------------------------------------


def run(plan: Plan, cleanup: Cleanup) -> dict[str, Any]:
    res: dict[str, Any] = {"plan": plan.__dict__, "machine": machine()}
    res["load_before"] = os.getloadavg()
    res["busy_before"] = background_busy(3.0 if plan is QUICK else 10.0)
    log(f"others' CPU use before the run: {res['busy_before']:.0%} of the machine, "
        f"load average {res['load_before'][0]:.2f}")
    ensure_dolphie()
    res["machine"]["dolphie"] = dolphie_version()
    compile_knobtop()  # as pip leaves an installed package (and dolphie's venv)
    tmp = temp_dir(cleanup)
    server = BenchServer(tmp)
    server.start(cleanup)
    log(f"sandbox server up on {server.socket}; loading 4 x 10000 rows")
    server.prepare()
    asyncio.run(one_run(server.sysbench(), 6 if plan is QUICK else 10))  # warm the pool

    log("server cost per sample (idle server)")
    res["per_sample"] = per_sample_cost(server, cleanup, tmp, plan.probe)
    log(f"server cost of watching: {plan.rounds} rounds x 4 runs of {plan.seconds} s")
    res["server"] = server_cost(server, cleanup, tmp, plan.rounds, plan.seconds)
    res["real_journal"] = real_journal_bytes(res["server"])

    log(f"built-in driver vs sysbench: {plan.builtin_rounds} rounds x {plan.builtin_seconds} s")
    res["builtin"] = asyncio.run(builtin_measure(server.sandbox, plan.builtin_seconds,
                                                 plan.builtin_rounds, None, prepare=False))
    log(f"LinkBench GetNode-only vs sysbench point select: {plan.builtin_rounds} rounds")
    res["linkbench"] = run_json(["bench/linkbench_driver.py", "--seconds",
                                 str(plan.builtin_seconds), "--rounds",
                                 str(plan.builtin_rounds), "--json"], timeout=900)

    log("client cost: knobtop live screen and dolphie, 160x48 tmux panes")
    res["client"], pair = client_cost(server, cleanup, tmp, plan.tui_warm, plan.tui_window)

    log(f"replay of a {plan.journal_seconds} s journal (the TUIs idle meanwhile)")
    res["replay"] = run_json(["bench/journal_open_seek.py", "--seconds",
                              str(plan.journal_seconds), "--seeks", str(plan.seeks), "--json"],
                             timeout=1200)
    log("journal cost per event")
    res["journal"] = run_json(["bench/journal_cost.py", "--seconds", str(plan.cost_seconds),
                               "--repeats", str(plan.cost_repeats), "--json"], timeout=1200)
    log(f"memory over {plan.memory_seconds} simulated seconds")
    memory = ["bench/memory_growth.py", "--seconds", str(plan.memory_seconds),
              "--paint-every", str(plan.paint_every), "--json"]
    # Two interpreters side by side (RSS does not care; the wall clock does).
    res["memory"], res["memory_bare"], res["memory_screen"], res["memory_session"] = (
        run_json_many([memory, [*memory, "--no-phase-reports"], [*memory, "--part", "screen"],
                       [*memory, "--part", "session"]], timeout=1800))
    res["tui_rss"] = finish(pair)
    log(f"a person at the live screen (resizing, scrolling), {plan.person_window:g} s at "
        "1 Hz and at 10 Hz, beside dolphie and saturating sysbench")
    res["person"] = live_schedule(server, cleanup, tmp, plan.person_window)
    log(f"the live screen's lag behind its journal ({plan.lag_window:g} s) and "
        f"{2 * plan.lag_presses} keys, beside dolphie and saturating sysbench")
    res["lag"] = screen_lag(server, cleanup, tmp, plan.lag_window, plan.lag_presses)
    log("start-up of whole processes: --version, --help, report, lab, replay")
    res["startup"] = measure_startup(plan)
    res["screens"] = run_json(["bench/startup_screens.py", "--runs", str(plan.startup_runs),
                               "--json"], timeout=900)
    log("reports and comparisons of 1-, 6- and 24-hour journals (whole processes)")
    res["report"] = measure_reports(plan)
    log(f"verdicts by simulation: {plan.stats_sims} one-cell and {plan.stats_sims // 5} "
        "8-cell tables per figure")
    res["stats"] = run_json(["bench/stats_power.py", "--sims", str(plan.stats_sims),
                             "--tables", str(plan.stats_sims // 5), "--json"], timeout=1800)
    res["load_after"] = os.getloadavg()
    return res


def finish(pair: Pair) -> dict[str, Any]:
    got = pair.finish()
    log(f"TUIs ran {got['minutes']:.1f} min: knobtop RSS {got['knobtop']['start'] / 1e6:.0f}"
        f" -> {got['knobtop']['end'] / 1e6:.0f} MB, dolphie {got['dolphie']['start'] / 1e6:.0f}"
        f" -> {got['dolphie']['end'] / 1e6:.0f} MB")
    return got


def real_journal_bytes(server: dict[str, Any]) -> dict[str, float]:
    """Bytes per sample line in the 1 Hz watchers' real journals (samples only: --load none)."""
    sizes: list[int] = []
    for run_ in server["runs"]["k1"]:
        for line in Path(run_["journal"]).read_bytes().splitlines():
            if line.startswith(b'{"ev":"sample"'):
                sizes.append(len(line) + 1)
    return {"lines": len(sizes), "mean": statistics.fmean(sizes) if sizes else 0.0}


# ---------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------


@dataclass
class Row:
    key: str
    what: str
    measured: str
    goal: str
    verdict: str


def verdict(ok: bool | None) -> str:
    return "info" if ok is None else ("PASS" if ok else "FAIL")


def ratio_row(key: str, what: str, cell: dict[str, Any], goal: float | None) -> Row:
    lo, hi = cell["ci"]
    ci = f", 95% CI {lo:.3f}-{hi:.3f}" if lo is not None else ""
    measured = (f"{cell['ratio']:.3f} (runs {cell['lo']:.3f}-{cell['hi']:.3f}{ci}; "
                f"{cell['verdict']})")
    if goal is None:
        return Row(key, what, measured, "reference", "info")
    if cell["ratio"] >= goal:
        v = "PASS"
    elif cell["verdict"] == NOISE:
        v = "PASS (noise)"
    else:
        v = "FAIL"
    return Row(key, what, measured, f">= {goal:g} (or noise)", v)


def rows(res: dict[str, Any]) -> list[Row]:
    out: list[Row] = []
    srv = res["server"]
    n = srv["rounds"]
    out.append(ratio_row("1a", f"server TPS, knobtop 1 Hz / no watcher ({n} runs)", srv["k1"],
                         0.99))
    out.append(ratio_row("1b", f"server TPS, knobtop 10 Hz / no watcher ({n} runs)",
                         srv["k10"], 0.97))
    out.append(ratio_row("1c", f"server TPS, dolphie 1 s / no watcher ({n} runs)",
                         srv["dolphie"], None))
    kd = srv["k1_vs_dolphie"]
    k1, d = srv["k1"]["ratio"], srv["dolphie"]["ratio"]
    if kd["verdict"] == NOISE or kd["ratio"] is None:
        v = "PASS" if k1 >= d else "NOISE"
    else:
        v = "PASS" if kd["verdict"] == "higher" else "FAIL"
    out.append(Row("1d", "knobtop 1 Hz cheaper for the server than dolphie",
                   f"TPS ratio {k1:.3f} vs {d:.3f}; k1/dolphie {kd['ratio']:.3f} "
                   f"({kd['verdict']})", "knobtop >= dolphie", v))
    ps = res["per_sample"]
    k, dd = ps["k1"], ps["dolphie"]
    out.append(Row("1e", "statements / bytes sent per sample, idle server",
                   f"knobtop {k['Questions']:.1f} (the drift read {k['drift_reads']:.1f} of "
                   f"it) / {k['Bytes_sent'] / 1024:.1f} KB; "
                   f"dolphie {dd['Questions']:.1f} / {dd['Bytes_sent'] / 1024:.1f} KB",
                   "<= 2 / <= 8 KB", verdict(k["Questions"] <= 2.05
                                            and k["Bytes_sent"] <= 8192)))
    cl = res["client"]
    for key, phase in (("2a", "idle"), ("2b", "load")):
        c = cl[phase]
        r = c["knobtop"] / c["dolphie"] if c["dolphie"] else float("inf")
        label = "idle server" if phase == "idle" else "sysbench saturating the CPUs"
        measured = (f"knobtop {c['knobtop']:.2f} s/min, dolphie {c['dolphie']:.2f} s/min: "
                    f"{r:.2f}x")
        if phase == "idle":  # issue 16's goal
            out.append(Row(key, f"client CPU, live screen 160x48 at 1 s, {label}", measured,
                           "<= 1.5 s/min and <= 0.12x dolphie",
                           verdict(c["knobtop"] <= 1.5 and r <= 0.12)))
        else:
            out.append(Row(key, f"client CPU, live screen 160x48 at 1 s, {label}", measured,
                           "<= 0.5x dolphie", verdict(r <= 0.5)))
    ten = res["person"]["0.1"]["idle_cpu"]
    out.append(Row("2c", "client CPU, live screen 160x48 at 10 Hz, idle server",
                   f"knobtop {ten:.2f} s/min", "<= 6 s/min", verdict(ten <= 6.0)))
    out += [Row(*row) for row in lag_rows(res["lag"])]
    rp = res["replay"]
    hours = rp["seconds"] / 3600
    out.append(Row("3a", f"replay: open to first frame, {hours:g} h journal, cache dropped",
                   f"{rp['replay_first'] * 1e3:.0f} ms", "< 1 s",
                   verdict(rp["replay_first"] < 1.0)))
    out.append(Row("3b", f"replay: seek + full frame, {rp['replay_seeks']} random times",
                   f"median {rp['replay_seek_median'] * 1e3:.1f} ms, "
                   f"max {rp['replay_seek_max'] * 1e3:.1f} ms", "< 100 ms (max)",
                   verdict(rp["replay_seek_max"] < 0.1)))
    sc, st = res["screens"], res["startup"]
    out.append(Row("3c", "`lab --load none` on a running sandbox to its first sample on "
                   "screen (whole process, median)", f"{sc['lab_first_sample']:.2f} s",
                   "<= 1.0 s", verdict(sc["lab_first_sample"] <= 1.0)))
    out.append(Row("3d", "`replay` of a 24 h journal to its first frame (whole process, "
                   "median)", f"{sc['replay_first_frame']:.2f} s", "<= 1.0 s",
                   verdict(sc["replay_first_frame"] <= 1.0)))
    out += startup_rows(st)
    out += report_rows(res["report"])
    jc = res["journal"]
    out.append(Row("4a", "JournalWriter.append per event (secret redaction on)",
                   f"mean {jc['mean_us']:.1f} us (median {jc['median_us']:.1f}, "
                   f"p99 {jc['p99_us']:.0f})", "< 100 us", verdict(jc["mean_us"] < 100)))
    real = res["real_journal"]
    out.append(Row("4b", "journal bytes per 1 Hz sample (all events of a second)",
                   f"{jc['bytes_per_sample']:.0f} B ({jc['kb_per_hour'] / 1024:.1f} MB/h); "
                   f"real sample line {real['mean']:.0f} B", "<= 1024 B",
                   verdict(jc["bytes_per_sample"] <= 1024)))
    mem = res["memory"]
    growth = (mem["rss_end"] - mem["rss_start"]) / 1e6
    hours = mem["seconds"] / 3600
    out.append(Row("5a", f"RSS growth, {hours:g} h of 1 Hz samples + load, live app path",
                   f"{growth:+.1f} MB ({mem['rss_start'] / 1e6:.0f} -> "
                   f"{mem['rss_end'] / 1e6:.0f} MB; after 1 h "
                   f"{(mem['rss_end'] - mem['rss_1h']) / 1e6:+.1f} MB)",
                   "< 5 MB (issue 16; was < 20 MB)", verdict(growth < 5)))
    bare = res["memory_bare"]
    growth = (bare["rss_end"] - bare["rss_start"]) / 1e6
    out.append(Row("5b", "same, load events not kept in Session._phase_reports",
                   f"{growth:+.1f} MB ({bare['rss_start'] / 1e6:.0f} -> "
                   f"{bare['rss_end'] / 1e6:.0f} MB; after 1 h "
                   f"{(bare['rss_end'] - bare['rss_1h']) / 1e6:+.1f} MB)", "< 20 MB",
                   verdict(growth < 20)))
    for key, part, goal in (("5e", "screen", 5.0), ("5f", "session", None)):
        got = res[f"memory_{part}"]
        growth = (got["rss_end"] - got["rss_start"]) / 1e6
        out.append(Row(key, f"same as 5a, what the {part}'s process alone holds",
                       f"{growth:+.1f} MB ({got['rss_start'] / 1e6:.0f} -> "
                       f"{got['rss_end'] / 1e6:.0f} MB; after 1 h "
                       f"{(got['rss_end'] - got['rss_1h']) / 1e6:+.1f} MB)",
                       "reference" if goal is None else f"< {goal:g} MB (issue 16)",
                       "info" if goal is None else verdict(growth < goal)))
    m = res["screens"]["memory"]
    out.append(Row("5d", "memory of the live screen at its first sample (screen + session "
                   "process)", f"screen RSS {m['screen_rss'] / 1e6:.0f} MB, session RSS "
                   f"{m['session_rss'] / 1e6:.0f} MB; PSS of both {m['pss'] / 1e6:.0f} MB",
                   "<= 60 MB (PSS of both)", verdict(m["pss"] <= 60e6)))
    tr = res["tui_rss"]
    out.append(Row("5c", f"RSS of the two TUIs over {tr['minutes']:.1f} min (measured)",
                   f"knobtop {tr['knobtop']['start'] / 1e6:.0f} -> "
                   f"{tr['knobtop']['end'] / 1e6:.0f} MB; dolphie "
                   f"{tr['dolphie']['start'] / 1e6:.0f} -> {tr['dolphie']['end'] / 1e6:.0f} MB",
                   "reference", "info"))
    s1 = srv["schedule_k1"]
    out.append(Row("6a", "samples on schedule (<= 1.5x interval) under saturation, 1 Hz",
                   f"{_pct(s1['share'])} ({s1['on_time']}/{s1['slots']}, max gap "
                   f"{s1['max_gap']:.2f} s; CPU busy {srv['busy']:.0%})", ">= 95%",
                   verdict(s1["share"] is not None and s1["share"] >= 0.95)))
    s10 = srv["schedule_k10"]
    out.append(Row("6b", "same, knobtop at 10 Hz", f"{_pct(s10['share'])} ({s10['on_time']}/"
                   f"{s10['slots']}, max gap {s10['max_gap']:.2f} s)", ">= 95%",
                   verdict(s10["share"] is not None and s10["share"] >= 0.95)))
    live = cl["live_schedule"]
    share = live["on_time"] / live["slots"] if live["slots"] else None
    lat = cl["load"]["dolphie_latency"]
    out.append(Row("6c", "same, knobtop live screen at 1 Hz (dolphie: refresh latency)",
                   f"{_pct(share)} ({live['on_time']}/{live['slots']}, max gap "
                   f"{live['max_gap']:.2f} s); dolphie latency median "
                   f"{statistics.median(lat) if lat else float('nan'):.2f} s, max "
                   f"{max(lat, default=float('nan')):.2f} s", ">= 95%",
                   verdict(share is not None and share >= 0.95)))
    for key, interval in (("6d", "1"), ("6e", "0.1")):
        p = res["person"][interval]
        share = p["share"]
        probe = p["probe"]
        pshare = probe["on_time"] / probe["slots"] if probe["slots"] else None
        iv = float(interval)
        # The person must have acted (one resize or key per 2 s at least), or the row
        # measured an idle screen.
        acted = p["actions"] >= p.get("window", 0.0) / 2
        ok = share is not None and share >= 0.99 and p["max_gap"] <= 2 * iv and acted
        out.append(Row(key, f"same as 6c at {1 / iv:g} Hz while a person resizes and scrolls "
                       "the screen (a bare loop beside it: the machine's own schedule)",
                       f"{_pct(share)} ({p['on_time']}/{p['slots']}, max gap "
                       f"{p['max_gap']:.2f} s, {p['actions']} resizes and keys"
                       f"{'' if acted else ': too few, the screen was not worked'}); bare loop "
                       f"{_pct(pshare)}, max gap {probe['max_gap']:.2f} s",
                       f">= 99%, max gap <= {2 * iv:g} s, a resize or key per 2 s",
                       verdict(ok)))
    bi = res["builtin"]
    out.append(Row("7", "built-in load TPS / sysbench TPS (oltp_point_select x8)",
                   f"{bi['ratio']:.2f} ({bi['builtin']:.0f} vs {bi['sysbench']:.0f} tps)",
                   ">= 0.5", verdict(bi["ratio"] >= 0.5)))
    lb = res["linkbench"]
    out.append(Row("7b", "LinkBench GetNode-only requests/s / sysbench oltp_point_select x8 "
                   "(`bench/linkbench_driver.py`)",
                   f"{lb['ratio']:.2f} ({lb['linkbench']:.0f} vs {lb['sysbench']:.0f}/s; "
                   f"client CPU {lb['linkbench_cpu_us']:.1f} vs {lb['sysbench_cpu_us']:.1f} us "
                   f"per request; recording a latency: {lb.get('recorded_ns', '?')} ns, with "
                   f"DDSketch.add {lb['ddsketch_ns']} ns; sysbench running GetNode's own "
                   f"statement {lb['sysbench_getnode']:.0f}/s, the built-in driver at "
                   f"{lb['same_statement_ratio']:.2f} of it)",
                   ">= 0.5", verdict(lb["ratio"] >= 0.5)))
    st = res["stats"]
    ok = all(r["false_one"] <= stats_tolerance(st["sims"])
             and r["false_table"] <= stats_tolerance(st["tables"]) for r in st["rows"])
    out.append(Row("8a", "A/A false verdicts, 10% noise, seeded simulation: one cell / an "
                   "8-cell table (Holm)", "; ".join(
                       f"n={r['n']} {r['design'].split(' (')[0]}: {r['false_one']:.1%} / "
                       f"{r['false_table']:.1%}" for r in st["rows"]),
                   f"<= 5% (+3 SE: {stats_tolerance(st['sims']):.1%} / "
                   f"{stats_tolerance(st['tables']):.1%})", verdict(ok)))
    out.append(Row("8b", "power at +10% / +20%: one cell (each of 8 cells, Holm)", "; ".join(
        f"n={r['n']} {r['design'].split(' (')[0]}: {r['power_one_0.10']:.0%} / "
        f"{r['power_one_0.20']:.0%} ({r['power_table_0.10']:.0%} / "
        f"{r['power_table_0.20']:.0%})" for r in st["rows"]),
        "reference (before issue 17, n=5: 25% / 70%, no Holm)", "info"))
    return out


def measure_startup(plan: Plan) -> dict[str, Any]:
    return run_json(["bench/startup.py", "--runs", str(plan.startup_runs), "--json"],
                    timeout=600)


def startup_rows(st: dict[str, Any]) -> list[Row]:
    """Rows 3e-3g: start-up of whole processes (``bench/startup.py``)."""
    return [Row(key, f"`knobtop {name}` start to exit (whole process, median)",
                f"{st[name]:.3f} s", f"<= {goal:g} s{why}", verdict(st[name] <= goal))
            for key, name, goal, why in (
                ("3e", "--version", 0.1, ""), ("3f", "--help", 0.1, ""),
                ("3g", "report, 1-hour journal", 0.15, " (issue 41; was 0.3)"))]


def measure_reports(plan: Plan) -> dict[str, Any]:
    return run_json(["bench/report_cost.py", "--runs", str(plan.report_runs), "--json"],
                    timeout=1800)


def report_rows(rc: dict[str, Any]) -> list[Row]:
    """Rows 3h-3m: reports and comparisons of long journals (``bench/report_cost.py``,
    issue 41), all measured in the same run."""
    rep = rc["report"]
    secs = {h: rep[h]["seconds"] for h in ("1", "6", "24")}
    per_hour = {h: secs[h] / int(h) for h in secs}

    def spread(cell: dict[str, Any]) -> str:
        return f"{cell['spread'][0]:.2f}-{cell['spread'][1]:.2f}"

    rec, killed = rc["recorded"], rc["killed"]
    out = [Row("3h", "`knobtop report` of a 1 / 6 / 24 h journal (whole process, median; "
               "its fold kept: by the session as it closed, or by the first report)",
               f"{secs['1']:.3f} / {secs['6']:.3f} / {secs['24']:.3f} s (runs "
               f"{spread(rep['1'])} / {spread(rep['6'])} / {spread(rep['24'])}); first "
               f"report of the 24 h journal as its session left it {rec['first']:.2f} s "
               f"(the session's fold keeper: {rec['keeper']:.1f} s in the background), as "
               f"a session killed {killed['after'] / 60:.0f} min after it last kept its fold "
               f"left it {killed['first']:.2f} s; of a journal never folded "
               f"{rep['1']['cold']:.2f} / {rep['6']['cold']:.2f} / {rep['24']['cold']:.2f} s",
               "<= 0.15 s (1 h), <= 1.0 s (24 h)",
               verdict(secs["1"] <= 0.15 and secs["24"] <= 1.0 and rec["first"] <= 1.0
                       and killed["first"] <= 1.0))]
    rss = rep["24"]["rss"]
    cold_rss = rep["24"]["cold_rss"]
    out.append(Row("3i", "`knobtop report` of a 24 h journal: peak RSS",
                   f"{rss / 1e6:.0f} MB; first report {cold_rss / 1e6:.0f} MB "
                   f"({rc['sizes']['24'] / 1e6:.1f} MB journal)",
                   "<= 100 MB", verdict(max(rss, cold_rss) <= 100e6)))
    growth = per_hour["24"] / per_hour["6"]
    out.append(Row("3j", "report's cost per hour of journal at 1 / 6 / 24 h (3h / hours)",
                   f"{per_hour['1']:.3f} / {per_hour['6']:.3f} / {per_hour['24']:.4f} s; "
                   f"24 h against 6 h: {growth:.2f}x",
                   "24 h <= 1.1x 6 h (no faster than the journal)", verdict(growth <= 1.1)))
    c24, c1 = rc["csv"]["24"], rc["csv"]["1"]
    out.append(Row("3k", "`report --format csv` of a 24 h journal: first line out, first "
                   "row, peak RSS (the 1 h one's beside it)",
                   f"{c24['first_line']:.3f} s, first row {c24['first_row']:.3f} s, all "
                   f"{c24['seconds']:.2f} s; {c24['rss'] / 1e6:.0f} MB (1 h: "
                   f"{c1['rss'] / 1e6:.0f} MB)",
                   "<= 0.2 s; RSS within 10 MB of 1 h's",
                   verdict(c24["first_line"] <= 0.2 and c24["rss"] <= c1["rss"] + 10e6)))
    cmp_, merge = rc["compare"], rc["merge"]
    out.append(Row("3l", "`knobtop compare A B --format text` of two 24 h journals (whole "
                   "process, median)", f"{cmp_['seconds']:.3f} s (runs {spread(cmp_)}); "
                   f"{cmp_['rss'] / 1e6:.0f} MB; first {cmp_['cold']:.2f} s", "<= 2.0 s",
                   verdict(cmp_["seconds"] <= 2.0)))
    out.append(Row("3m", "`knobtop compare A B C --merge` of three recipe journals (whole "
                   "process, median)", f"{merge['seconds']:.3f} s (runs {spread(merge)})",
                   "<= 0.5 s", verdict(merge["seconds"] <= 0.5)))
    return out


# Rows measured without a server, each group by one script: `run_all.py --rows 3g,3h` runs
# only the scripts of the rows asked for and prints them (RESULTS.md is left as it is).
STANDALONE: dict[str, tuple[tuple[str, ...], Any, Any]] = {
    "startup": (("3e", "3f", "3g"), measure_startup, startup_rows),
    "report": (("3h", "3i", "3j", "3k", "3l", "3m"), measure_reports, report_rows),
}


def chosen_rows(plan: Plan, keys: list[str]) -> list[Row]:
    """The rows ``keys`` asked for, measured now (only their groups' scripts run)."""
    known = {k: group for group, (ks, _m, _r) in STANDALONE.items() for k in ks}
    unknown = [k for k in keys if k not in known]
    if unknown:
        raise SystemExit(f"--rows {','.join(unknown)}: not a row that runs without the full "
                         f"run's server; choose among {', '.join(known)}")
    compile_knobtop()  # as the full run does: the processes start as an installed knobtop
    out: list[Row] = []
    for group, (ks, measure, build) in STANDALONE.items():
        if any(k in keys for k in ks):
            log(f"rows {', '.join(k for k in ks if k in keys)} ({group})")
            out += [r for r in build(measure(plan)) if r.key in keys]
    return out


def _pct(share: float | None) -> str:
    return "n/a" if share is None else f"{share:.1%}"


def print_table(table: list[Row]) -> None:
    w_what = max(len(r.what) for r in table)
    w_meas = max(len(r.measured) for r in table)
    w_goal = max(len(r.goal) for r in table)
    head = f"{'#':<3} {'measure':<{w_what}}  {'measured':<{w_meas}}  {'goal':<{w_goal}}  verdict"
    print()
    print(head)
    print("-" * len(head))
    for r in table:
        print(f"{r.key:<3} {r.what:<{w_what}}  {r.measured:<{w_meas}}  {r.goal:<{w_goal}}  "
              f"{r.verdict}")


# ---------------------------------------------------------------------------------------------
# RESULTS.md
# ---------------------------------------------------------------------------------------------


def busy_notes(res: dict[str, Any]) -> list[str]:
    notes = []
    srv = res["server"]
    if res["busy_before"] > 0.10 or res["load_before"][0] > 1.0:
        notes.append(
            f"Before the run, other work used {res['busy_before']:.0%} of the machine's CPU "
            f"(load average {res['load_before'][0]:.2f}): the machine was shared, so "
            "absolute figures (TPS, CPU seconds) are lower and noisier than on an idle box; "
            "the side-by-side ratios were measured under the same conditions.")
    if srv["others"] > 0.05:
        notes.append(
            f"While sysbench ran, processes outside this benchmark (its own: mariadbd, "
            f"sysbench, the watchers, their tmux) used a median {srv['others']:.0%} of the "
            "machine's CPU time (per-run figures in the details): they competed with the "
            "runs being compared.")
    if srv["none_cv"] > 0.05:
        notes.append(
            f"No-watcher TPS varied by {srv['none_cv']:.1%} (coefficient of variation) "
            "across rounds: more than the 1-3% effects rows 1a-1d look for, so those rows "
            "rest on the rank test's verdict more than on the medians.")
    if not notes:
        notes.append(
            f"The machine looked quiet (others' CPU use {res['busy_before']:.0%} before the "
            f"run; no-watcher TPS varied by {srv['none_cv']:.1%} across rounds).")
    return notes


def details(res: dict[str, Any]) -> list[str]:
    srv, cl, ps = res["server"], res["client"], res["per_sample"]
    lines = ["## Details", "", "### Row 1: the sysbench runs in the order they ran", "",
             "| run | watcher | TPS | ratio to the no-watcher runs around it | CPU busy | "
             "of it others' work | mariadbd CPU us/txn | watcher CPU (share of a core) |",
             "|---|---|---|---|---|---|---|---|"]
    for i, run_ in enumerate(srv["order"]):
        ratio = f"{run_['ratio']:.3f}" if "ratio" in run_ else ""
        cpu = f"{run_['watcher_cpu']:.1%}" if run_["arm"] != "none" else ""
        lines.append(f"| {i + 1} | {ARM_NAMES[run_['arm']]} | {run_['tps']:.0f} | {ratio} | "
                     f"{run_['busy']:.0%} | {run_['others']:.0%} | "
                     f"{run_['server_us_per_txn']:.0f} | {cpu} |")
    us = srv["server_us_per_txn"]
    lines += ["", "mariadbd CPU per transaction, median: " + ", ".join(
        f"{ARM_NAMES[a]} {us[a]:.0f} us" for a in ("none", "k1", "k10", "dolphie")) + "."]
    lines += ["", "Watcher's own CPU while sysbench ran (median share of one core): "
              f"knobtop 1 Hz {srv['k1']['watcher_cpu']:.1%}, 10 Hz "
              f"{srv['k10']['watcher_cpu']:.1%} (headless), dolphie "
              f"{srv['dolphie']['watcher_cpu']:.1%} (TUI).", "",
              "Per sample on the idle server (global status deltas, no-watcher window "
              "subtracted):", "",
              "| watcher | samples/s | statements | KB sent | KB received | tmp tables |",
              "|---|---|---|---|---|---|"]
    for arm, name in (("k1", "knobtop 1 Hz"), ("k10", "knobtop 10 Hz"),
                      ("dolphie", "dolphie 1 s (per refresh)")):
        c = ps[arm]
        lines.append(f"| {name} | {c['samples_per_second']:.2f} | {c['Questions']:.1f} | "
                     f"{c['Bytes_sent'] / 1024:.1f} | {c['Bytes_received'] / 1024:.2f} | "
                     f"{c['Created_tmp_tables']:.1f} |")
    lines += ["", "### Row 2: CPU seconds per minute of each process tree", "",
              "| | knobtop | dolphie | tmux server (knobtop's pane) | tmux server (dolphie's) "
              "| machine busy | of it others' work |",
              "|---|---|---|---|---|---|---|"]
    for phase in ("idle", "load"):
        c = cl[phase]
        lines.append(f"| {phase} ({c['seconds']:.0f} s) | {c['knobtop']:.2f} | "
                     f"{c['dolphie']:.2f} | {c['tmux (knobtop)']:.2f} | "
                     f"{c['tmux (dolphie)']:.2f} | {c['busy']:.0%} | {c['others']:.0%} |")
    lines += ["", f"Measured after both showed data plus {cl['warm']:g} s of warm-up. "
              "REFERENCE.md 0b measured dolphie at 9.5% of a core idle (5.7 s/min) once past "
              "its first minute. Under load, dolphie's on-screen latency read every ~5 s: "
              + ", ".join(f"{x:.2f}" for x in cl["load"]["dolphie_latency"]) + " s.", "",
              *lag_details(res["lag"], cl["load"]), "", "### Rows 3-5", ""]
    rp, jc, mem = res["replay"], res["journal"], res["memory"]
    lines += [
        f"* Replay journal: {rp['size'] / 1e6:.1f} MB, {rp['events']} events; first frame "
        f"(tail window, index still building) warm {rp['first_frame_warm'] * 1e3:.0f} ms, "
        f"cache dropped {rp['first_frame_cold'] * 1e3:.0f} ms; full index "
        f"{rp['full_index_cold'] * 1e3:.0f} ms; raw seek + read 120 events median "
        f"{rp['seek_median'] * 1e3:.2f} ms, max {rp['seek_max'] * 1e3:.2f} ms.",
        f"* Journal: {jc['events']} events appended, {jc['sample_mean_us']:.1f} us per "
        f"sample event; sample line {jc['sample_line']:.0f} B; real 1 Hz watcher journals "
        f"of row 1: {res['real_journal']['lines']} sample lines of "
        f"{res['real_journal']['mean']:.0f} B on average.",
        f"* Memory: RSS {mem['rss_start'] / 1e6:.1f} MB with the app up, "
        f"{mem['rss_1h'] / 1e6:.1f} MB after the first simulated hour, "
        f"{mem['rss_end'] / 1e6:.1f} MB at the end ({mem['wall_seconds']:.0f} s of wall "
        f"time). Session._phase_reports then held {mem['phase_reports']} sysbench interval "
        f"reports, about {mem['phase_reports'] * mem['phase_report_bytes'] / 1e6:.1f} MB.",
        f"* dolphie's RSS from REFERENCE.md: {REFERENCE_DOLPHIE_RSS}.",
    ]
    return lines


def previous_results(path: Path) -> list[str]:
    """The run line and results table of the file about to be replaced (kept under the new
    figures for comparison: issue 16 asks for the before and after side by side)."""
    try:
        old = path.read_text().splitlines()
    except OSError:
        return []
    run_line = next((line for line in old if line.startswith("Run: ")), "")
    try:
        start = old.index("## Results") + 1
    except ValueError:
        return []
    table = []
    for line in old[start:]:
        if line.startswith("## "):
            break
        table.append(line)
    while table and not table[-1].strip():
        table.pop()
    return ["## Previous run", "", f"The figures this run replaced ({run_line[5:]})", *table,
            ""]


def write_results(path: Path, res: dict[str, Any], table: list[Row], took: float,
                  argv: list[str]) -> None:
    previous = previous_results(path)
    lines = ["# knobtop benchmark results", "",
             f"Run: {time.strftime('%Y-%m-%d %H:%M %Z')}, `make bench` "
             f"(`{' '.join(['bench/run_all.py', *argv])}`), {took / 60:.1f} minutes.", "",
             "## Machine", "", "| | |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in res["machine"].items()]
    lines += ["", *busy_notes(res), "", "## Results", "",
              "| # | measure | measured | goal | verdict |", "|---|---|---|---|---|"]
    lines += [f"| {r.key} | {r.what} | {r.measured} | {r.goal} | {r.verdict} |" for r in table]
    st = res["stats"]
    lines += ["", "## Verdicts by simulation (rows 8a-8b, `bench/stats_power.py`)", "",
              *stats_markdown(st["rows"], st["sims"], st["tables"])]
    lines += ["", *previous, WHAT, "", *details(res), ""]
    path.write_text("\n".join(lines))


WHAT = """## What each row measures

All on one private mariadbd (knobtop.lab.Sandbox, 128 MB buffer pool) with sysbench's
oltp_point_select, 8 threads, 4 tables x 10000 rows, over the unix socket.

* **1a-1c** Server cost of watching. sysbench runs of 16 s (a run's TPS is the median of
  its per-second reports without the first) alternate between no watcher and one watcher:
  `knobtop connect PROFILE --headless --interval 1 --load none` (a profile naming the
  sandbox's socket), the same at `--interval 0.1`, or dolphie 6.18.0's TUI at its default
  1 s refresh in a 160x48 tmux pane; the watchers' order rotates each round (none k1 none
  k10 none dolphie none k10 ... none). A watcher is seen sampling before its run starts.
  Ratio = watcher run's TPS / mean TPS of the two no-watcher runs around it: median over
  the rounds and the range; `knobtop.analysis.stats.compare_runs` (bootstrap CI of the
  ratio of medians + Mann-Whitney, watcher runs against all no-watcher runs) gives the
  verdict: "noise" means indistinguishable from no watcher. The details also give
  mariadbd's own CPU time per transaction for each kind of run.
* **1d** knobtop 1 Hz runs' TPS against dolphie's runs' TPS (compare_runs): PASS when
  knobtop's is higher beyond noise, or knobtop's median ratio is at least dolphie's while
  the two are within noise; NOISE when it is lower but within noise; FAIL when lower.
* **1e** On the idle server, the global `Questions`, `Bytes_sent`, `Created_tmp_tables`
  deltas over 15 s with each watcher running alone, minus the same window with none, per
  sample (knobtop: samples in its journal; dolphie: per 1 s refresh). knobtop's include its
  read of the watched knobs (changes made outside knobtop: one statement every 5 s), whose
  share per sample the row names; 15 s holds three of them.
* **2a/2b** knobtop's live screen (`knobtop connect PROFILE --interval 1 --load none`) and
  dolphie, each in its own 160x48 tmux pane (own tmux server), started together; user +
  system CPU seconds of each process tree (psutil) over a 60 s window after 40 s of
  warm-up, on the idle server and then with sysbench saturating both cores.
* **2d/2e** `bench/screen_lag.py`: row 2b's condition (knobtop's live screen at 1 Hz and
  dolphie, each in a 160x48 tmux pane, sysbench saturating both cores), in a run of its
  own, watched from outside both of knobtop's processes as a person sees it. 2d: each
  sample line's arrival in knobtop's journal (inotify on the file) against the first look
  at the pane whose status bar counts that many samples ("N samples every 1s"), over 120 s;
  p50/p99 by nearest rank (the p99 of 120 is the second-latest; a sample not shown within
  15 s counts as later than all). 2e: then `n` (the note dialog) and Escape sent to the
  pane 60 times each, 0.3-0.9 s apart at random, each timed from the key sent to the first
  look showing "Note for the journal" (or no longer showing it). The looking: a tmux
  control-mode client on the pane's private server, which says whenever the program writes
  to the pane; the client then asks for the pane's text over the same pipe (and every
  0.25 s while something is awaited), so nothing is forked per look. The watcher thread
  and the pane's tmux server run in the real-time class so that their own delays are not
  counted as the screen's; the details give their CPU time, how long the screen's threads
  ran and waited for a CPU over the latest samples and slowest keys (/proc schedstat), how
  long the pane's tmux server was blocked in the kernel meanwhile (what a program writes to
  a pty, and the keys sent to it, wait for a kernel worker thread, `__flush_work`, which a
  saturated machine starves too: no program in a terminal can go around it), and how late
  a bare Python loop beside them woke: what the machine gives any normal process.
* **3a/3b** `bench/journal_open_seek.py` on a generated 24-hour 1 Hz journal: `knobtop
  replay`'s open to first frame with the file's page cache dropped, then seek + full frame
  at 200 random times.
* **4a/4b** `bench/journal_cost.py`: an hour of recorded-shaped events (1 sample + 1 load
  report a second, a change every 10 min) appended to a JournalWriter with a secret to
  redact; mean microseconds per append and file bytes per sampled second. The 100 us goal
  is set here (0.1% of a 10 Hz interval); the 1 KB goal is REFERENCE.md's.
* **5a** `bench/memory_growth.py`: 86,400 seconds of those events on a fast clock through
  Session.emit / Session._on_report (as the sysbench driver calls it) -> JournalWriter ->
  the KnobtopApp listener -> JournalEvent messages -> MetricBoard, knob panel, journal pane,
  graphs painted every 5 simulated minutes, under App.run_test at 160x48; RSS after
  gc.collect() once the app is up, after 1 h and at the end.
* **5b** The same with load events handed to `Session.emit` directly, so that
  `Session._phase_reports` (every sysbench report of the running phase, kept for the
  phase's summary) stays empty: the difference from 5a is that list's share.
* **5e/5f** The same day split as the live screen runs since issue 16: the screen's
  process alone (the app fed the session's events as its RemoteSession hands them on; no
  Session, no journal writer) and the session's process alone (Session, JournalWriter, the
  phase's reports; no app). `memory_growth.py --part screen|session`.
* **5c** RSS of the two TUIs of row 2 from when both showed data until they were stopped
  (they idle while rows 3-5 run).
* **6a/6b** From the journals of the headless watchers of row 1, the samples stamped while
  sysbench ran: on time = within 1.5x the interval of the previous sample; share = on-time
  samples / grid slots (a skipped slot is a miss). **6c** the same for the live screen's
  journal during row 2's loaded window, next to dolphie's own "Latency" figure.
* **6d/6e** `bench/live_schedule.py`: 6c's condition at 1 Hz and at 10 Hz (the live screen
  via `knobtop connect PROFILE --load none --interval I`, dolphie beside it, sysbench
  saturating), while a "person" resizes knobtop's tmux window (160x48, 80x24, 120x40,
  100x30) and presses Down/Up/PageDown/PageUp, one action every ~0.35 s. Beside it a bare
  Python loop keeps the same grid the same way: where it misses too, the machine stalled
  every process, which no design of knobtop's can beat. Before the load, the same run
  measures the screen's CPU on the idle server: **2c** at 10 Hz.
* **3c/3d** `bench/startup_screens.py`: a fresh 160x48 tmux pane running `knobtop lab
  --load none` on a running sandbox, timed until the status bar counts a sample, and
  `knobtop replay` of a generated 24-hour journal, timed until a graph shows its figure;
  tmux's own start is subtracted; median of 5 runs after one to warm the cache. **5d** the
  memory of that live screen when its first sample shows: RSS of each process, and the PSS
  (proportional set size) of both, which counts the pages they share after the fork once.
  **3e-3g** `bench/startup.py`: `python -m knobtop --version`, `--help` and `report` of a
  1-hour journal, start to exit, median of 5.
* **3h-3m** `bench/report_cost.py` (issue 41): journals made as 3a's (1, 6 and 24 hours;
  a second 24-hour one started at another time; three recipe journals of 15 minutes with a
  recipe run of 5 replicates x 2 thread counts), each command a whole process, median of 5
  after one that warms the page cache, peak RSS the kernel's for the process (`wait4`).
  That first run of a report or comparison reads every line and keeps the journal's fold
  (`knobtop.analysis.reportcache`, journals of 1 MiB and more); the runs counted read the
  fold back (checked against the journal's size and SHA-256) and the other lines: the
  rows give the first run's figures beside them.  3h also gives the first report of the
  24-hour journal as a killed session leaves it: its fold kept by the session's last
  keeping while it recorded, 10 minutes before its end (the report folds those minutes).
  3h: `knobtop report` of each; 3i: its peak RSS on the 24-hour one; 3j: 3h's seconds per
  hour of journal, the 24-hour one's against the 6-hour one's (a report costs no more per
  hour of a longer journal); 3k: `report --format csv` of the 24-hour journal, time to its
  first line (the column names) and first row, and its peak RSS against the 1-hour one's
  (it streams: constant memory); 3l: `compare A B --format text` of the two 24-hour
  journals; 3m: `compare A B C --merge` of the three recipe journals.
  `run_all.py --rows 3g,3h,...` measures just the rows named (3e-3m) and prints them.
* **7** `bench/builtin_vs_sysbench.py`: sysbench and knobtop's built-in driver alternated
  (3 rounds x 15 s), ratio of median TPS.
* **7b** `bench/linkbench_driver.py`: LinkBench on the built-in driver with only GetNode
  (one PK lookup a request) against sysbench oltp_point_select (one PK lookup a
  transaction), 8 threads each, alternated (3 rounds x 15 s) on a sandbox of its own:
  ratio of median requests/s, client CPU per request (RUSAGE_CHILDREN around each run), and
  the cost of recording one latency as the workers do (sysbench's bucket and DDSketch's key
  from one logarithm) against the bucket with `DDSketch.add`. A third run each round is
  sysbench itself running LinkBench's GetNode statement on the same nodetable
  (`bench/getnode.lua`): the server does more for GetNode (five columns, a MEDIUMTEXT) than
  for the point select, so the built-in driver's rate against it is the client's share
  alone; the verdict stays on the ratio against oltp_point_select.
* **8a/8b** `bench/stats_power.py`: results tables simulated with runs drawn from a normal
  distribution of 10% run-to-run noise, judged as `knobtop.analysis.results.build` judges
  them (bootstrap CI and exact rank test, Holm across an 8-cell table; paired by round
  where the design pairs). 8a: the share of A/A tables with any "higher" or "lower"; 8b:
  the share of cells reading "higher" when B is 10% / 20% faster. Machine-independent:
  the same seeds give the same figures anywhere."""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="tiny durations, for development")
    ap.add_argument("--results", type=Path, default=None,
                    help="write the results here (default: bench/RESULTS.md for a full run, "
                    "nothing for --quick)")
    ap.add_argument("--rows", default=None,
                    help="only these rows, comma-separated (3e-3m: no server needed); prints "
                    "them and writes no RESULTS.md")
    args = ap.parse_args()
    plan = QUICK if args.quick else Plan()
    if args.rows:
        if args.results:
            raise SystemExit("--rows prints the rows asked for: drop --results")
        table = chosen_rows(plan, [k.strip() for k in args.rows.split(",") if k.strip()])
        print_table(table)
        return 1 if any(r.verdict == "FAIL" for r in table) else 0
    results = args.results or (None if args.quick else BENCH / "RESULTS.md")
    cleanup = Cleanup()

    def stop(signum: int, _frame: Any) -> None:
        raise SystemExit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    began = time.monotonic()
    try:
        res = run(plan, cleanup)
    finally:
        cleanup.run()
    took = time.monotonic() - began
    table = rows(res)
    print_table(table)
    print(f"\n(total {took / 60:.1f} min; " + " ".join(busy_notes(res)) + ")")
    if results is not None:
        write_results(results, res, table, took, sys.argv[1:])
        print(f"wrote {results}")
    return 1 if any(r.verdict == "FAIL" for r in table) else 0


if __name__ == "__main__":
    sys.exit(main())
