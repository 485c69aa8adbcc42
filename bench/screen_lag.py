"""How far the live screen runs behind its journal, and how soon a key acts (rows 2d-2e).

Issue 37's finding 9: on a saturated machine one ``-`` took ~13 s to act and the screen ran
~8 s behind the journal.  Measured here as a person sees it, from outside both processes,
in row 2b's condition: knobtop's live screen (``knobtop connect PROFILE --interval 1
--load none``) and dolphie's TUI each in a 160x48 tmux pane, sysbench saturating the CPUs.

* **Lag** (2d): each sample line's arrival in the journal (inotify on the file, which the
  session's process writes a line at a time, flushed per event) against the first moment
  the pane shows it: the status bar's "N samples" counts the samples the screen has
  applied, so the pane shows sample N once it reads N or more.
* **Keys** (2e): ``n`` (the note dialog) sent to the pane, timed until "Note for the
  journal" is on it, then ``Escape``, timed until it is gone; a pause of 0.3-0.9 s before
  each key, so that keys fall anywhere in the screen's paint cycle.

The pane is watched by one tmux control-mode client (``tmux -C``) on the pane's private
server: every time the program writes to the pane tmux says so (``%output``), and the
client then asks for the pane's text (``capture-pane``) over the same pipe, so nothing is
forked per look and nothing is looked at while nothing is drawn (a look every 0.25 s stands
in for a missed notice while something is awaited).  The watcher thread and the tmux server
run in the real-time class (``common.in_real_time``), so that their own delays are not
counted as the screen's; their CPU time is reported beside the figures.

Where a late screen's time went, for the latest samples and the slowest keys: the CPU time
of the screen's and the session's processes and their time runnable but waiting for a CPU
(``/proc/PID/task/*/schedstat``), and how long the pane's tmux server was blocked in the
kernel (state D; on this machine in ``__flush_work``: a pty's data waits for a kernel worker
thread, which a saturated machine starves too).  Beside them a bare Python loop at normal
priority shows what the machine gave any process.  ``--screen-realtime`` (a diagnosis, not
used by ``run_all.py``) puts the screen's threads in the real-time class from outside, as
the session's process puts its own.

Run alone (``python bench/screen_lag.py [--window S] [--presses N]``) or from
``bench/run_all.py``.
"""
# Over 500 lines: the watching (journal, pane, processes), the measurement, and its rows and
# details for RESULTS.md, kept together so one file says how the figures are made.

from __future__ import annotations

import argparse
import contextlib
import ctypes
import itertools
import json
import math
import os
import random
import re
import select
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import psutil

from common import (
    BenchServer,
    Cleanup,
    Dolphie,
    KnobtopLive,
    TmuxPane,
    end_process,
    in_real_time,
    log,
    proc_cpu,
    temp_dir,
    tree_cpu,
)

SAMPLES = re.compile(r"(\d+) samples every")
NOTE_DIALOG = "Note for the journal"
WAIT = 15.0  # the longest wait for anything to show; longer counts as never
LOOK_EVERY = 0.25  # a look while something is awaited, in case a %output notice was missed
IN_MODIFY = 0x2
# Beside the screen, a bare Python loop at normal priority in a session of its own (as a
# tmux pane's program is) wakes every 50 ms and writes how late it woke: the machine's own
# delay for any such process, which no design of the screen's can beat.
PROBE = """
import sys, time
step = float(sys.argv[1])
while True:
    due = time.monotonic() + step
    time.sleep(step)
    print(f"{time.monotonic() - due:.4f}", flush=True)
"""
PROBE_STEP = 0.05


def schedstat(pid: int) -> tuple[float, float]:
    """Seconds ``pid``'s threads have run on a CPU, and waited for one while runnable
    (/proc/PID/task/*/schedstat): where a late screen's time went."""
    run = wait = 0
    with contextlib.suppress(OSError):
        for task in os.scandir(f"/proc/{pid}/task"):
            with contextlib.suppress(OSError, ValueError):
                r, w, _ = Path(task.path, "schedstat").read_text().split()
                run, wait = run + int(r), wait + int(w)
    return run / 1e9, wait / 1e9


class JournalLines:
    """New complete lines of a file another process appends to, as they appear (inotify)."""

    def __init__(self, path: Path) -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        self.fd = libc.inotify_init1(os.O_NONBLOCK | os.O_CLOEXEC)
        if self.fd < 0 or libc.inotify_add_watch(self.fd, os.fsencode(path), IN_MODIFY) < 0:
            raise OSError(ctypes.get_errno(), f"inotify on {path}")
        self.file = path.open("rb")
        self.rest = b""

    def read(self) -> list[bytes]:
        """The lines completed since the last read (drains the inotify queue first)."""
        with contextlib.suppress(BlockingIOError):
            while os.read(self.fd, 65536):
                pass
        data = self.rest + self.file.read()
        *lines, self.rest = data.split(b"\n")
        return lines

    def close(self) -> None:
        os.close(self.fd)
        self.file.close()


class PaneClient:
    """A tmux control-mode client on a pane's server: commands in, their output and the
    server's notices out, one pipe each way."""

    def __init__(self, pane: TmuxPane) -> None:
        self.proc = subprocess.Popen(["tmux", "-L", pane.socket, "-C", "attach", "-t", "bench"],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin, self.fd = self.proc.stdin, self.proc.stdout.fileno()
        os.set_blocking(self.fd, False)
        self.buf = b""
        self.block: list[bytes] | None = None  # the lines of the reply being read
        self.waiting: list[Callable[[str], None] | None] = [None]  # attach's own reply first
        self.output_at = 0.0  # when the program last wrote to the pane

    def command(self, line: str, reply: Callable[[str], None] | None = None) -> None:
        self.waiting.append(reply)
        self.stdin.write(line.encode() + b"\n")

    @property
    def busy(self) -> bool:
        return bool(self.waiting)

    def pump(self) -> bool:
        """Read what the server sent; False when the client is gone."""
        try:
            data = os.read(self.fd, 1 << 16)
        except BlockingIOError:
            return True
        if not data:
            return False
        now = time.monotonic()
        self.buf += data
        *lines, self.buf = self.buf.split(b"\n")
        for line in lines:
            if self.block is not None:
                if line.startswith((b"%end ", b"%error ")):
                    reply = self.waiting.pop(0) if self.waiting else None
                    if reply is not None:
                        reply(b"\n".join(self.block).decode(errors="replace"))
                    self.block = None
                else:
                    self.block.append(line)
            elif line.startswith(b"%begin "):
                self.block = []
            elif line.startswith(b"%output "):
                self.output_at = now
            elif line.startswith(b"%exit"):
                return False
        return True

    def close(self) -> float:
        """End the client; the CPU seconds it used."""
        cpu = proc_cpu(self.proc.pid)
        with contextlib.suppress(BrokenPipeError):
            self.stdin.close()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            end_process(self.proc.pid)
            self.proc.wait(5)
        return cpu


@dataclass
class Watch:
    """The journal and the pane, watched from one thread (select on both)."""

    journal: JournalLines
    pane: PaneClient
    samples: int = 0  # sample lines in the journal so far
    appeared: dict[int, float] = field(default_factory=dict)  # sample n -> its line's arrival
    delay: dict[int, float] = field(default_factory=dict)  # sample n -> arrival - its stamp
    shown: int = 0  # the newest sample count the pane showed
    shown_at: dict[int, float] = field(default_factory=dict)  # sample n -> first shown
    screen: str = ""
    looked_at: float = 0.0  # when the last capture was asked for
    looks: int = 0
    seen_output: float = 0.0  # the pane.output_at the last capture followed
    # The live screen's process and the session's: their CPU and run-queue times are kept,
    # (t, (screen's run, screen's wait, session's run, session's wait)) at each news.
    pids: tuple[int, ...] = ()
    sched: list[tuple[float, tuple[float, ...]]] = field(default_factory=list)
    # The pane's tmux server at each news: (t, blocked in the kernel), and where it was
    # blocked (its wchan: "__flush_work" when a pty's data waits for a kernel worker).
    tmux_pid: int = 0
    tmux: list[tuple[float, bool]] = field(default_factory=list)
    tmux_wchans: dict[str, int] = field(default_factory=dict)

    def start(self) -> None:
        self.samples = sum(line.startswith(b'{"ev":"sample"') for line in self.journal.read())

    def step(self, awaiting: bool, timeout: float) -> None:
        """Wait up to ``timeout`` for news; look at the pane when it changed (or every
        LOOK_EVERY while ``awaiting``)."""
        ready, _, _ = select.select([self.journal.fd, self.pane.fd], [], [], max(0.0, timeout))
        if self.journal.fd in ready:
            now, wall = time.monotonic(), time.time()
            for line in self.journal.read():
                if line.startswith(b'{"ev":"sample"'):
                    self.samples += 1
                    self.appeared[self.samples] = now
                    m = re.search(rb'"wall":([\d.]+)', line)
                    if m:
                        self.delay[self.samples] = wall - float(m.group(1))
        if self.pane.fd in ready and not self.pane.pump():
            raise RuntimeError("the tmux control client ended")
        now = time.monotonic()
        if ready and self.pids:
            self.sched.append((now, tuple(x for pid in self.pids for x in schedstat(pid))))
        if self.tmux_pid:
            wchan = blocked_in(self.tmux_pid)
            self.tmux.append((now, bool(wchan)))
            if wchan:
                self.tmux_wchans[wchan] = self.tmux_wchans.get(wchan, 0) + 1
        changed = self.pane.output_at > self.seen_output
        if not self.pane.busy and (changed or (awaiting and now - self.looked_at >= LOOK_EVERY)):
            self.seen_output, self.looked_at = self.pane.output_at, now
            self.looks += 1
            self.pane.command("capture-pane -p -t bench", self._captured)

    def _captured(self, text: str) -> None:
        """A look's reply, as it is read: the pane at that moment."""
        now = time.monotonic()
        self.screen = text
        m = SAMPLES.search(text)
        if m and int(m.group(1)) > self.shown:
            for n in range(self.shown + 1, int(m.group(1)) + 1):
                self.shown_at[n] = now
            self.shown = int(m.group(1))

    def spent(self, t0: float, t1: float) -> tuple[float, ...]:
        """The screen's seconds on a CPU and waiting for one between ``t0`` and ``t1``, then
        the session's (from the readings nearest outside them)."""
        before = [x for x in self.sched if x[0] <= t0] or self.sched[:1]
        after = [x for x in self.sched if x[0] >= t1] or self.sched[-1:]
        if not before or not after:
            return (math.nan,) * (2 * len(self.pids) + 1)
        return (*(b - a for a, b in zip(before[-1][1], after[0][1], strict=True)),
                self.tmux_blocked(t0, t1))

    def tmux_blocked(self, t0: float, t1: float) -> float:
        """About how long the pane's tmux server was blocked in the kernel between ``t0``
        and ``t1`` (from one reading to the next, as the first said)."""
        return sum(min(b[0], t1) - max(a[0], t0) for a, b in itertools.pairwise(self.tmux)
                   if a[1] and b[0] > t0 and a[0] < t1)

    def until(self, done: Callable[[], bool], timeout: float) -> float | None:
        """Watch until ``done()`` holds for the newest look; when it first did (None: not
        within ``timeout``)."""
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            self.step(True, min(left, LOOK_EVERY))
            if done():
                return time.monotonic()
        return None


def blocked_in(pid: int) -> str:
    """Where ``pid`` is blocked in the kernel (its wchan), or "" when it is not (state D)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        if stat[stat.rindex(")") + 2] != "D":
            return ""
        wchan = Path(f"/proc/{pid}/wchan").read_text().strip()
        return wchan if wchan not in ("", "0") else "?"  # "0": it was waking up
    except (OSError, ValueError):
        return ""


def session_pid(screen: int) -> int:
    """The live screen's one child: the session's process (0 if there is none)."""
    kids = psutil.Process(screen).children()
    return kids[0].pid if len(kids) == 1 else 0


def dialog_is(watch: Watch, shown: bool) -> bool:
    return (NOTE_DIALOG in watch.screen) == shown


def nearest_rank(values: list[float], q: float) -> float:
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def observe(live: KnobtopLive, window: float, presses: int, until: float,
            seed: int = 37) -> dict[str, Any]:
    """Lag for ``window`` seconds, then ``presses`` note-dialog openings and closings (as
    many as there is time for before ``until``, when the load ends)."""
    in_real_time(0)  # this thread, and the control client it starts
    cpu0 = time.thread_time()
    journal = JournalLines(live.journal)
    pane = PaneClient(live.pane)
    watch = Watch(journal, pane, pids=(live.pid, session_pid(live.pid)),
                  tmux_pid=live.pane.server_pid)
    out: dict[str, Any] = {}
    try:
        watch.start()
        first = watch.samples + 1
        end = time.monotonic() + window
        while (left := end - time.monotonic()) > 0:
            watch.step(watch.shown < watch.samples, min(LOOK_EVERY, left))
        last = watch.samples
        # The window's last samples may not show yet: watch on until they do (bounded).
        caught_up = watch.until(lambda: watch.shown >= last, WAIT) is not None
        window_samples = range(first, last + 1)
        out["lag"] = {
            "samples": len(window_samples),
            "lags": [watch.shown_at[n] - watch.appeared[n] for n in window_samples
                     if n in watch.shown_at and n in watch.appeared],
            "never": sum(n not in watch.shown_at for n in window_samples),
            "journal_delay": [watch.delay[n] for n in window_samples if n in watch.delay],
            "caught_up": caught_up,
            "status_bar": watch.screen.split("\n", 1)[0].strip(),  # as last seen
            # For each sample shown: (lag, the screen's CPU seconds, its seconds waiting
            # for a CPU, the session's two, the tmux server's seconds blocked) over that lag.
            "spent": [(watch.shown_at[n] - watch.appeared[n],
                       *watch.spent(watch.appeared[n], watch.shown_at[n]))
                            for n in window_samples
                            if n in watch.shown_at and n in watch.appeared],
        }
        rng = random.Random(seed)
        opens: list[float] = []
        closes: list[float] = []
        missed = 0
        spent: list[tuple[float, ...]] = []
        for _ in range(presses):
            if time.monotonic() > until:
                break
            for key, shows, got in (("n", True, opens), ("Escape", False, closes)):
                pause = time.monotonic() + rng.uniform(0.3, 0.9)
                while (left := pause - time.monotonic()) > 0:
                    watch.step(False, left)
                sent = time.monotonic()
                pane.command(f"send-keys -t bench {key}")
                seen = watch.until(partial(dialog_is, watch, shows), WAIT)
                if seen is None:
                    missed += 1
                    break  # the next press starts from no dialog again
                got.append(seen - sent)
                spent.append((seen - sent, *watch.spent(sent, seen)))
            if seen is None:
                # The dialog may show late: wait for it (bounded) and close it untimed, so
                # that no `n` is typed into an open dialog.
                if watch.until(partial(dialog_is, watch, True), WAIT):
                    pane.command("send-keys -t bench Escape")
                if not watch.until(partial(dialog_is, watch, False), WAIT):
                    break  # the screen does not answer: no more keys
        out["keys"] = {"opens": opens, "closes": closes, "missed": missed,
                       "planned": 2 * presses, "spent": spent}
    finally:
        out["cpu"] = {"watcher": time.thread_time() - cpu0, "client": pane.close(),
                      "looks": watch.looks}
        out["tmux_wchans"] = watch.tmux_wchans
        journal.close()
    return out


def screen_lag(server: BenchServer, cleanup: Cleanup, tmp: Path, window: float,
               presses: int, screen_realtime: bool = False) -> dict[str, Any]:
    """``screen_realtime`` (a diagnosis, not a row): the screen's threads are put in the
    real-time class from outside, as the session's process puts its own."""
    live = KnobtopLive(server, tmp / "lag.knobtop.jsonl")
    dolphie = Dolphie(server)
    for tool in (live, dolphie):
        tool.start(cleanup)
    for tool in (live, dolphie):
        tool.wait_ready()
    got: dict[str, Any] = {}
    try:
        tmux = live.pane.server_pid
        in_real_time(tmux)
        if screen_realtime:
            for task in os.listdir(f"/proc/{live.pid}/task"):
                os.sched_setscheduler(int(task), os.SCHED_RR, os.sched_param(1))
        # Long enough for the window and the keys, slow ones included (4 s a press).
        load = window + presses * 4 + 60
        with server.background_load(int(load), cleanup):
            until = time.monotonic() + load - 20  # keys stop in time, still under load
            time.sleep(3.0)
            cpu0 = {"knobtop": tree_cpu(live.pid), "tmux": proc_cpu(tmux)}
            began = time.monotonic()
            with (tmp / "lag-probe.txt").open("w") as sink:
                probe = subprocess.Popen([sys.executable, "-c", PROBE, str(PROBE_STEP)],
                                         stdout=sink, start_new_session=True)
            done = cleanup.add("the probe", lambda: end_process(probe.pid))
            thread = threading.Thread(
                target=lambda: got.update(observe(live, window, presses, until)))
            thread.start()
            thread.join()
            took = time.monotonic() - began
            done()
            got["probe"] = [float(x) for x in (tmp / "lag-probe.txt").read_text().split()]
            got["seconds"] = took
            got["cpu"]["knobtop"] = tree_cpu(live.pid) - cpu0["knobtop"]
            got["cpu"]["tmux"] = proc_cpu(tmux) - cpu0["tmux"]
            got["alive"] = not live.pane.dead
    finally:
        for tool in (live, dolphie):
            tool.stop()
    if "lag" not in got:
        raise RuntimeError("the screen's lag was not measured (see above)")
    summary = summarise(got)
    if got["lag"]["never"]:
        log(f"{got['lag']['never']} samples never shown; the status bar last read "
            f"{got['lag']['status_bar']!r}")
    log(f"screen lag behind the journal: p50 {summary['lag_p50']:.2f} s, p99 "
        f"{summary['lag_p99']:.2f} s over {got['lag']['samples']} samples; key to effect "
        f"p50 {summary['key_p50']:.2f} s, p99 {summary['key_p99']:.2f} s over "
        f"{summary['key_count']} keys; the watcher used {summary['watcher_cpu']:.2f} s/min; "
        f"a bare loop woke late by p99 {summary['probe_p99']:.2f} s, max "
        f"{summary['probe_max']:.2f} s")
    return {**got, **summary}


def summarise(got: dict[str, Any]) -> dict[str, Any]:
    lag, keys, cpu = got["lag"], got["keys"], got["cpu"]
    # A sample never shown, or a key never acted on, is later than any shown one.
    lags = lag["lags"] + [math.inf] * lag["never"]
    both = keys["opens"] + keys["closes"] + [math.inf] * keys["missed"]
    per_min = 60.0 / got["seconds"]
    return {
        "lag_p50": nearest_rank(lags, 0.5), "lag_p99": nearest_rank(lags, 0.99),
        "lag_max": max(lags, default=math.nan),
        "journal_delay_p99": nearest_rank(lag["journal_delay"], 0.99),
        "key_p50": nearest_rank(both, 0.5), "key_p99": nearest_rank(both, 0.99),
        "key_max": max(both, default=math.nan), "key_count": len(both),
        "open_p50": nearest_rank(keys["opens"], 0.5),
        "open_p99": nearest_rank(keys["opens"], 0.99),
        "close_p50": nearest_rank(keys["closes"], 0.5),
        "close_p99": nearest_rank(keys["closes"], 0.99),
        "watcher_cpu": (cpu["watcher"] + cpu["client"]) * per_min,
        "tmux_cpu": cpu["tmux"] * per_min, "knobtop_cpu": cpu["knobtop"] * per_min,
        "looks_per_s": cpu["looks"] / got["seconds"],
        "probe_p99": nearest_rank(got["probe"], 0.99),
        "probe_max": max(got["probe"], default=math.nan),
        # (seconds, the screen's CPU seconds, its seconds waiting for a CPU, the session's
        # two, the pane's tmux server's seconds blocked in the kernel), latest first
        "worst_lags": sorted(map(tuple, lag["spent"]), reverse=True)[:3],
        "worst_keys": sorted(map(tuple, keys["spent"]), reverse=True)[:3],
    }


def lag_rows(lag: dict[str, Any]) -> list[tuple[str, str, str, str, str]]:
    """Rows 2d-2e of ``run_all.py``'s table: (key, what, measured, goal, verdict)."""
    dead = "" if lag["alive"] else "; the screen had exited"
    never, missed = lag["lag"]["never"], lag["keys"]["missed"]
    planned = lag["keys"]["planned"]
    short = (f" of {planned}, the rest not sent: the load ended or the screen stopped "
             "answering" if lag["key_count"] < planned else "")
    worst = lag["worst_lags"][0] if lag["worst_lags"] else (math.nan,) * 6
    return [
        ("2d", "live screen behind its journal (a sample's line written to it painted), "
         "1 Hz, sysbench saturating the CPUs, dolphie beside it",
         f"p50 {lag['lag_p50']:.2f} s, p99 {lag['lag_p99']:.2f} s, max "
         f"{lag['lag_max']:.2f} s ({lag['lag']['samples']} samples"
         f"{f', {never} never shown' if never else ''}); the latest: the screen ran "
         f"{worst[1]:.2f} s and waited {worst[2]:.2f} s for a CPU, the pane's tmux was "
         f"blocked in the kernel {worst[5]:.2f} s; a bare loop beside it woke up to "
         f"{lag['probe_max']:.2f} s late{dead}",
         "p99 <= 1 s", verdict(lag["lag_p99"] <= 1.0 and lag["alive"])),
        ("2e", "a key's effect on the live screen (`n` opens the note dialog, Escape "
         "closes it), same condition",
         f"p50 {lag['key_p50']:.2f} s, p99 {lag['key_p99']:.2f} s, max "
         f"{lag['key_max']:.2f} s ({lag['key_count']} keys{short}; `n` p99 "
         f"{lag['open_p99']:.2f} "
         f"s, Escape p99 {lag['close_p99']:.2f} s"
         f"{f'; {missed} not seen within 15 s' if missed else ''}){dead}",
         "p99 <= 0.5 s", verdict(lag["key_p99"] <= 0.5 and lag["alive"])),
    ]


def lag_details(lag: dict[str, Any], load: dict[str, Any]) -> list[str]:
    """The details section of rows 2d-2e (``load``: row 2b's loaded window)."""
    def spent(cases: list[tuple[float, ...]]) -> str:
        return "; ".join(f"{t:.2f} s (screen ran {run:.2f} s, waited {wait:.2f} s; session "
                         f"ran {srun:.2f} s, waited {swait:.2f} s; tmux blocked {tty:.2f} s)"
                         for t, run, wait, srun, swait, tty in cases) or "none"

    return [
        "", "### Rows 2d-2e: the live screen behind its journal, and its keys", "",
        f"Over {lag['seconds']:.0f} s: the watcher (a thread and a tmux control-mode client, "
        f"in the real-time class) used {lag['watcher_cpu']:.2f} CPU s/min and looked at the "
        f"pane {lag['looks_per_s']:.1f} times a second; the pane's tmux server "
        f"{lag['tmux_cpu']:.2f} s/min (row 2b's pane, unwatched: "
        f"{load['tmux (knobtop)']:.2f}); knobtop's two processes {lag['knobtop_cpu']:.2f} "
        f"s/min. Samples reached the journal p99 {lag['journal_delay_p99'] * 1e3:.0f} ms "
        "after their stamp (the session's process). The latest samples to show, with each "
        "process's own time over each (CPU, and runnable but waiting for a CPU, summed "
        "over its threads; /proc schedstat), and about how long the pane's tmux server "
        "was blocked in the kernel (state D, read at each look; where: "
        + (", ".join(f"{w} x{n}" for w, n in lag["tmux_wchans"].items()) or "never") + "): "
        + spent(lag["worst_lags"]) + ". The slowest keys: " + spent(lag["worst_keys"])
        + f". `n` p50 {lag['open_p50']:.2f} s, "
        f"Escape p50 {lag['close_p50']:.2f} s (Textual waits 0.1 s after an Escape for a "
        "sequence it might start). A bare Python loop at normal priority in a session of "
        f"its own, waking every 50 ms, woke p99 {lag['probe_p99']:.2f} s and at most "
        f"{lag['probe_max']:.2f} s late: the machine's delay for any such process."]


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--window", type=float, default=120.0, help="seconds of lag measured")
    ap.add_argument("--presses", type=int, default=60, help="note dialogs opened and closed")
    ap.add_argument("--screen-realtime", action="store_true",
                    help="diagnosis: the screen's threads in the real-time class (SCHED_RR)")
    args = ap.parse_args()
    cleanup = Cleanup()
    try:
        tmp = temp_dir(cleanup)
        server = BenchServer(tmp)
        server.start(cleanup)
        server.prepare()
        got = screen_lag(server, cleanup, tmp, args.window, args.presses,
                         args.screen_realtime)
        print(json.dumps({k: v for k, v in got.items() if k != "probe"}, indent=1))
    finally:
        cleanup.run()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
