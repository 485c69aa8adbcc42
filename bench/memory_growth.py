"""RSS growth of knobtop's live-screen process over a simulated day of 1 Hz sampling.

Feeds ``--seconds`` (default 86,400) seconds of recorded-shaped events (from
``journal_open_seek.day_events``: one sample and one sysbench load report per second, a knob
change every 10 minutes) on a fast clock through the same objects a live ``knobtop connect``
keeps them in:

* ``Session.emit`` for samples and changes, ``Session._on_report`` for load reports (as the
  sysbench driver calls it: it keeps the phase's reports for the phase summary), with the
  session's clock set to the simulated time (``--no-phase-reports``: load events go
  through ``Session.emit`` too, to tell that list's share of the growth apart);
* the session's ``JournalWriter`` (a temporary file, with a secret to redact, as live);
* the session listener of ``KnobtopApp`` (header given, no server), which posts each event as
  a ``JournalEvent`` message to the app running under ``App.run_test`` at 160x48: the
  ``MetricBoard``, the knob panel, the journal pane; the graphs are painted every
  ``--paint-every`` simulated seconds (and by the app's own 0.5 s timer).

``--part screen`` / ``--part session`` split the day as the live screen runs since issue 16:
the screen's process alone (the app fed the events, as its RemoteSession hands them on) and
the session's process alone (Session, JournalWriter, the phase's reports; no app).

RSS (psutil, after ``gc.collect()``) is read once the app is up, after the first simulated
hour (the graphs' 3600-point series are full by then) and at the end.  Prints a table and,
with ``--json``, one JSON line.

Run:  .venv/bin/python bench/memory_growth.py [--seconds 86400] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson
import psutil

from journal_open_seek import day_events
from knobtop.hosts.local import LocalHost
from knobtop.journal import JournalWriter, Load, Sample
from knobtop.load.sysbench_output import IntervalReport
from knobtop.server.link import ConnectionInfo
from knobtop.session.core import Session, SessionConfig
from knobtop.ui.app import KnobtopApp

SECRET = "not-a-real-password-but-redacted-like-one"


def rss() -> int:
    gc.collect()
    return int(psutil.Process().memory_info().rss)


def report_of(event: Load) -> IntervalReport:
    return IntervalReport(second=event.s, threads=event.thds, tps=event.tps, qps=event.qps,
                          reads=event.r, writes=event.w, other=event.o,
                          latency_percentile=event.pct, latency_ms=event.lat,
                          errors_per_s=event.err, reconnects_per_s=event.reconn)


async def simulate(seconds: int, paint_every: int, tmp: Path,
                   phase_reports: bool = True, part: str = "both") -> dict[str, Any]:
    """``part``: "both" (session and screen in one process, as before issue 16), "screen"
    (what the live screen's process holds since: the app fed the session's events, no
    Session, no journal writer) or "session" (what the session's process holds: Session,
    JournalWriter, the phase's reports; no app)."""
    header, events = day_events(seconds)
    config = SessionConfig(profile="bench", connection=ConnectionInfo(password=SECRET),
                           journal_path=tmp / "day.knobtop.jsonl")
    session = Session(config, LocalHost(), None) if part != "screen" else None
    if session is not None:
        session.journal = JournalWriter(config.journal_path, header, secrets=(SECRET,))
    clock = [0.0, header.started_wall]
    if session is not None:
        session.now = lambda: clock[0]  # type: ignore[method-assign]
        session.wall = lambda: clock[1]  # type: ignore[method-assign]
    app = KnobtopApp(header=header, events=[]) if part != "session" else None
    out: dict[str, Any] = {"seconds": seconds, "phase_reports_kept": phase_reports,
                           "part": part}
    began = time.perf_counter()
    async with contextlib.AsyncExitStack() as stack:
        pilot = await stack.enter_async_context(app.run_test(size=(160, 48))) if app else None

        async def paint(force: bool = False) -> None:
            if app is not None and pilot is not None:
                await pilot.pause()
                app.paint(force=force)
                await pilot.pause()

        if session is not None and app is not None:
            session.listeners.append(app._from_session)  # what the live app registers
        if pilot is not None:
            await pilot.pause()
        await paint(force=True)
        out["rss_start"] = rss()
        samples = 0
        for event in events:
            clock[0], clock[1] = event.t, event.wall
            if session is None:
                assert app is not None
                app._from_session(event)  # as the screen's RemoteSession hands them on
            elif isinstance(event, Load) and phase_reports:
                session.loads.on_report(event.src, report_of(event))
                continue
            else:
                session.emit(event)
            if isinstance(event, Sample):
                samples += 1
                if samples % paint_every == 0:
                    await paint()
                if samples == 3600:
                    out["rss_1h"] = rss()
        await paint(force=True)
        out["rss_end"] = rss()
        if app is not None:
            board = app.board
            assert board is not None
            if board.samples != samples:
                raise RuntimeError(f"the app's board saw {board.samples} of {samples} samples")
            out["board_samples"] = board.samples
        if session is not None:
            out["phase_reports"] = len(session.loads.phase_reports)
            kept = session.loads.phase_reports  # two compact columns (PhaseNumbers)
            out["phase_report_bytes"] = (kept.tps.nbytes() + kept.lat.nbytes()
                                         ) / max(len(kept), 1)
            out["journal_bytes"] = config.journal_path.stat().st_size
            assert session.journal is not None
            session.journal.close()
    out["wall_seconds"] = time.perf_counter() - began
    out.setdefault("rss_1h", out["rss_end"])
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=int, default=86_400, help="simulated seconds (1 Hz)")
    ap.add_argument("--paint-every", type=int, default=60, help="paint every N samples")
    ap.add_argument("--no-phase-reports", action="store_true",
                    help="emit load events straight to the journal and the app instead of "
                    "through Session._on_report (which keeps every report of the phase)")
    ap.add_argument("--part", choices=("both", "screen", "session"), default="both",
                    help="what one process holds: both (before issue 16), the live screen's "
                    "process alone, or the session's process alone")
    ap.add_argument("--json", action="store_true", help="also print one JSON line")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="knobtop-bench-") as tmp:
        got = asyncio.run(simulate(args.seconds, args.paint_every, Path(tmp),
                                   phase_reports=not args.no_phase_reports,
                                   part=args.part))
    mb = 1e6
    growth = (got["rss_end"] - got["rss_start"]) / mb
    print(f"simulated {args.seconds} s of 1 Hz sampling in {got['wall_seconds']:.0f} s")
    print(f"  RSS at start            {got['rss_start'] / mb:8.1f} MB")
    print(f"  RSS after 1 h           {got['rss_1h'] / mb:8.1f} MB")
    print(f"  RSS at end              {got['rss_end'] / mb:8.1f} MB")
    print(f"  growth start -> end     {growth:8.1f} MB   (goal < 20 MB) "
          f"{'PASS' if growth < 20 else 'FAIL'}")
    print(f"  growth 1 h -> end       {(got['rss_end'] - got['rss_1h']) / mb:8.1f} MB")
    if "phase_reports" in got:
        held = got["phase_reports"] * got["phase_report_bytes"] / mb
        print(f"  Session._phase_reports  {got['phase_reports']:8d} reports, ~{held:.1f} MB")
    if args.json:
        print(orjson.dumps(got).decode())
    return 0 if growth < 20 else 1


if __name__ == "__main__":
    sys.exit(main())
