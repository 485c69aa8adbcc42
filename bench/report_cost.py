"""Reports and comparisons of long journals as whole processes (issue 41): `knobtop report`
of a 1-, 6- and 24-hour journal (time and peak RSS), `report --format csv` of the 24-hour one
(time to its first line and first row, peak RSS beside the 1-hour one's), `compare A B
--format text` of two 24-hour journals and `compare A B C --merge` of three recipe journals.

The journals are bench/journal_open_seek.py's (the recorded lab-80s pattern repeated: one
sample and one sysbench report a second, a change every 10 minutes, one load phase); the
second 24-hour journal is the same day started at another time.  A recipe journal is
15 minutes of those events with a recipe run of 5 replicates x 2 thread counts in it.
Each figure: the median of ``--runs`` runs after one that warms the page cache and, for a
journal of 1 MiB or more, keeps its fold (knobtop.analysis.reportcache: the first report of
a journal reads every line; the next ones read what was kept): that first run's figures are
given too, as ``cold``: the first report of a journal never folded (copied from another
machine, or its session killed).  A journal a session recorded has its fold kept as the
session closes (knobtop.analysis.keepfold): ``recorded`` times that keeper (run in the
background) and the first report after it.  A session keeps it every 10 minutes while it
records, too: ``killed`` is the first report of a journal whose session was killed 10
minutes after its last keeping (the report folds those minutes itself).  Peak RSS is the
kernel's (``wait4``) for the process itself, forked by a bare interpreter.  Every process
starts as an installed knobtop does (bytecode compiled first, bench/common.py
compile_knobtop).

Run:  .venv/bin/python bench/report_cost.py [--runs 5] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import compile_knobtop
from journal_open_seek import day_events, generate
from knobtop.journal import JournalWriter, RecipeRun, StepResult

HOURS = (1, 6, 24)
PLAN = {"workload": "oltp_read_write", "threads": [8, 32], "duration": 20, "warmup": 5,
        "replicates": 5, "arms": {"base": {}}}


def recipe_journal(path: Path, scale: float) -> Path:
    """15 minutes of recorded-shaped events with a recipe run in it: 5 replicates at 8 and
    32 client threads, average TPS ``scale`` x a fixed pattern."""
    header, events = day_events(900)
    writer = JournalWriter(path, header)
    writer.append(RecipeRun(t=0.001, wall=header.started_wall, action="start", name="sweep",
                            plan=PLAN))
    steps, index = [], 0
    for rep in range(1, 6):
        for threads in (8, 32):
            start = 10.0 + 85 * index
            tps = (1000.0 + 7 * rep) * scale * (1 if threads == 8 else 2)
            steps.append(StepResult(t=start + 80, wall=header.started_wall + start + 80,
                                    recipe="sweep", index=index, replicate=rep, arm="base",
                                    threads=threads, start=start, end=start + 80, tps=tps,
                                    p95=2.0, avg_tps=tps, intervals=80))
            index += 1
    for event in events:
        while steps and steps[0].t <= event.t:
            writer.append(steps.pop(0))
        writer.append(event)
    for step in steps:
        writer.append(step)
    writer.append(RecipeRun(t=900.5, wall=header.started_wall + 900.5, action="end",
                            name="sweep"))
    writer.close()
    return path


def knobtop(*argv: str) -> list[str]:
    return [sys.executable, "-m", "knobtop", *argv]


# A child's peak RSS (getrusage) counts the memory of the process it was forked from until
# its exec: forked from this script (tens of MB of journals made) it would read as at least
# that.  So each command is forked by a bare interpreter (-S -I: about 9 MB), which reports
# its child's peak on its own last line of stderr.
FORKER = """import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stderr.write(f"\\nmaxrss {usage.ru_maxrss}\\n")
sys.exit(os.waitstatus_to_exitcode(status))
"""


def one_run(argv: list[str]) -> tuple[float, int, float | None, float | None]:
    """(seconds to exit, peak RSS in bytes, seconds to the first line out, to the second)."""
    began = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-S", "-I", "-c", FORKER, *argv],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    first = second = None
    if proc.stdout.readline():
        first = time.perf_counter() - began
        if proc.stdout.readline():
            second = time.perf_counter() - began
    while proc.stdout.read(1 << 16):
        pass
    err = proc.stderr.read().decode(errors="replace")
    proc.wait()
    took = time.perf_counter() - began
    if proc.returncode != 0 or "maxrss " not in err:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {err[-1000:]}")
    return took, int(err.rsplit("maxrss ", 1)[1]) * 1024, first, second


def measure(argv: list[str], runs: int) -> dict[str, Any]:
    cold = one_run(argv)  # warms the page cache and keeps the fold (reportcache); reported
    got = [one_run(argv) for _ in range(runs)]
    out: dict[str, Any] = {
        "cold": cold[0], "cold_rss": cold[1],
        "seconds": statistics.median(g[0] for g in got),
        "spread": [min(g[0] for g in got), max(g[0] for g in got)],
        "rss": max(g[1] for g in got),
    }
    if all(g[2] is not None for g in got):
        out["first_line"] = statistics.median(g[2] for g in got)  # type: ignore[misc]
    if all(g[3] is not None for g in got):
        out["first_row"] = statistics.median(g[3] for g in got)  # type: ignore[misc]
    return out


def recorded_first_report(journal: Path, tmp: Path) -> dict[str, Any]:
    """The first report of a journal as a session leaves it: its fold kept by the keeper
    the session starts as it closes (knobtop.analysis.keepfold, the very call), timed
    itself (it runs in the background, at the lowest priority), then the first report."""
    from knobtop.analysis.keepfold import spawn

    for kept in (tmp / "cache" / "knobtop" / "reports").glob("*.json"):
        kept.unlink()  # what measure() kept: gone, as before the session ended
    began = time.perf_counter()
    keeper = spawn(journal)
    assert keeper is not None
    if keeper.wait(timeout=600) != 0:
        raise RuntimeError(f"the fold keeper of {journal} exited {keeper.returncode}")
    took = time.perf_counter() - began
    first = one_run(knobtop("report", str(journal)))
    return {"keeper": took, "first": first[0], "first_rss": first[1]}


def killed_first_report(journal: Path, tmp: Path) -> dict[str, Any]:
    """The first report of a journal as a killed session leaves it: its fold kept by the
    session's last keeping while it recorded (knobtop.analysis.keepfold, the very call, on
    the journal as it was then: ``keep_fold_every`` seconds before its end), and the lines
    written after that, which the report folds itself."""
    from knobtop.analysis.keepfold import spawn
    from knobtop.session.core import SessionConfig

    every = SessionConfig.keep_fold_every
    data = journal.read_bytes()
    cut = len(data)
    for _ in range(int(2 * every)):  # a sample and a load report a second
        cut = data.rindex(b"\n", 0, cut - 1) + 1
    killed = tmp / "killed.knobtop.jsonl"
    killed.write_bytes(data[:cut])
    keeper = spawn(killed)
    assert keeper is not None
    if keeper.wait(timeout=600) != 0:
        raise RuntimeError(f"the fold keeper of {killed} exited {keeper.returncode}")
    with killed.open("ab") as fh:
        fh.write(data[cut:])
    first = one_run(knobtop("report", str(killed)))
    return {"first": first[0], "first_rss": first[1], "after": every}


def run(runs: int, tmp: Path) -> dict[str, Any]:
    journals = {h: tmp / f"{h}h.knobtop.jsonl" for h in HOURS}
    for h, path in journals.items():
        generate(path, h * 3600)
    other = tmp / "24h-b.knobtop.jsonl"
    generate(other, 24 * 3600)
    recipes = [recipe_journal(tmp / f"recipe-{n}.knobtop.jsonl", scale)
               for n, scale in enumerate((1.0, 1.1, 0.95))]
    os.sync()  # the 120 MB just written go to disk now, not while the first rows are timed
    res: dict[str, Any] = {"runs": runs, "sizes": {str(h): journals[h].stat().st_size
                                                    for h in HOURS}}
    # JSON keys are strings: the hours as text
    res["report"] = {str(h): measure(knobtop("report", str(journals[h])), runs) for h in HOURS}
    res["recorded"] = recorded_first_report(journals[24], tmp)
    res["killed"] = killed_first_report(journals[24], tmp)
    res["csv"] = {str(h): measure(knobtop("report", "--format", "csv", str(journals[h])), runs)
                  for h in (1, 24)}
    res["compare"] = measure(knobtop("compare", str(journals[24]), str(other), "--format",
                                     "text"), runs)
    res["merge"] = measure(knobtop("compare", *map(str, recipes), "--merge"), runs)
    return res


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--json", action="store_true", help="the figures as JSON (run_all.py)")
    args = ap.parse_args()
    compile_knobtop()
    with tempfile.TemporaryDirectory(prefix="knobtop-bench-") as tmp:
        os.environ["XDG_CACHE_HOME"] = str(Path(tmp) / "cache")  # the report cache's, gone after
        res = run(args.runs, Path(tmp))
    if args.json:
        print(json.dumps(res))
        return 0
    for h in HOURS:
        r = res["report"][str(h)]
        print(f"report {h:>2} h: {r['seconds']:.3f} s ({r['spread'][0]:.3f}-"
              f"{r['spread'][1]:.3f}), {r['rss'] / 1e6:.0f} MB; first report "
              f"{r['cold']:.3f} s, {r['cold_rss'] / 1e6:.0f} MB")
    for h in (1, 24):
        c = res["csv"][str(h)]
        print(f"csv {h:>2} h: first line {c['first_line']:.3f} s, first row "
              f"{c['first_row']:.3f} s, all {c['seconds']:.3f} s, {c['rss'] / 1e6:.0f} MB")
    rec = res["recorded"]
    print(f"report 24 h recorded by a session (its fold kept as it closed, in "
          f"{rec['keeper']:.2f} s in the background): first report {rec['first']:.3f} s")
    killed = res["killed"]
    print(f"report 24 h of a session killed {killed['after'] / 60:.0f} min after it last kept "
          f"its fold: first report {killed['first']:.3f} s")
    print(f"compare two 24 h: {res['compare']['seconds']:.3f} s, "
          f"{res['compare']['rss'] / 1e6:.0f} MB; first {res['compare']['cold']:.3f} s")
    print(f"compare --merge of three recipe journals: {res['merge']['seconds']:.3f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
