"""The knobtop command line: `knobtop lab` (more commands arrive with their issues)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import signal
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

from knobtop import __version__
from knobtop.hosts.base import HostError
from knobtop.hosts.local import LocalHost
from knobtop.journal.events import Change, Error, Event, Phase
from knobtop.journal.writer import default_journal_path
from knobtop.lab import LAB_DB, LabError, Sandbox, default_lab_dir, find_program
from knobtop.load.base import WORKLOADS, LoadError, LoadSpec
from knobtop.load.sysbench import INSTALL_HINT, Sysbench
from knobtop.load.sysbench_output import PrepareProgress
from knobtop.server.link import ConnectionInfo, ServerError
from knobtop.session import Session, SessionConfig, SessionError, prepare_tables

_SET = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)=([^@]+)(?:@(\d+(?:\.\d+)?)s?)?$")


@dataclass(frozen=True)
class ScheduledChange:
    at: float
    knob: str
    value: str


def parse_set(text: str) -> ScheduledChange:
    m = _SET.match(text.strip())
    if not m:
        raise argparse.ArgumentTypeError(
            f"--set {text!r}: write KNOB=VALUE or KNOB=VALUE@SECONDS, "
            "e.g. innodb_flush_log_at_trx_commit=2@10"
        )
    return ScheduledChange(float(m.group(3) or 0), m.group(1).lower(), m.group(2))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="knobtop", description="Live tuning experiments on MySQL-family servers."
    )
    parser.add_argument("--version", action="version", version=f"knobtop {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    lab = sub.add_parser(
        "lab",
        help="start a sandbox MariaDB on this machine and open the live screen on it",
        description="Start (or reuse) a private sandbox server from this machine's "
        "mariadbd, load sysbench tables the first time, and open the live screen.",
    )
    lab.add_argument("--dir", type=Path, default=None,
                     help=f"sandbox directory (default {default_lab_dir()})")
    lab.add_argument("--fresh", action="store_true", help="wipe the sandbox and start anew")
    lab.add_argument("--keep-running", action="store_true",
                     help="leave the sandbox server running on exit")
    lab.add_argument("--headless", action="store_true",
                     help="record a session without a screen (needs --duration)")
    lab.add_argument("--duration", type=float, default=None,
                     help="headless: seconds to record")
    lab.add_argument("--journal", type=Path, default=None,
                     help="journal file to write (default: a new file in the lab's journals/)")
    lab.add_argument("--interval", type=float, default=1.0,
                     help="sampling interval in seconds, 0.1 to 60 (default 1)")
    lab.add_argument("--load", default="oltp_read_write", choices=[*WORKLOADS, "none"],
                     help="workload to start with (default oltp_read_write; 'none' starts idle)")
    lab.add_argument("--threads", type=int, default=4, help="sysbench threads (default 4)")
    lab.add_argument("--tables", type=int, default=4, help="sysbench tables (default 4)")
    lab.add_argument("--table-size", type=int, default=10000,
                     help="rows per sysbench table (default 10000)")
    lab.add_argument("--set", dest="changes", action="append", type=parse_set, default=[],
                     metavar="KNOB=VALUE[@S]",
                     help="headless: apply a dynamic knob at S seconds (repeatable)")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console(stderr=True)
    try:
        if args.command == "lab":
            return run_lab(args, console)
    except (LabError, LoadError, ServerError, SessionError, HostError, ValueError) as exc:
        console.print(f"[bold red]knobtop:[/] {exc}", highlight=False)
        return 2
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        console.print(f"[bold red]knobtop:[/] {exc.strerror or exc}{where}", highlight=False)
        return 2
    except KeyboardInterrupt:
        console.print("knobtop: interrupted")
        return 130
    return 2


def run_lab(args: argparse.Namespace, console: Console) -> int:
    if args.headless and args.duration is None:
        raise ValueError("--headless needs --duration SECONDS")
    if args.changes and not args.headless:
        raise ValueError("--set is for --headless runs; in the live screen press k to edit knobs")
    spec = LoadSpec(
        workload=args.load if args.load != "none" else "oltp_read_write",
        threads=args.threads,
        tables=args.tables,
        table_size=args.table_size,
    )
    spec.check()
    if find_program("sysbench") is None:
        raise LoadError(f"sysbench is not installed: {INSTALL_HINT}")
    sandbox = Sandbox(args.dir or default_lab_dir())
    if args.fresh:
        sandbox.wipe()
    with console.status(f"Starting the sandbox server in {sandbox.root} ..."):
        info = sandbox.start()
    console.print(f"Sandbox server on 127.0.0.1:{info.port} (socket {sandbox.socket})")
    if not sandbox.started_here:
        console.print("It was already running, so it stays up when this session ends.")
    try:
        driver = Sysbench(
            LocalHost(), mysql_socket=str(sandbox.socket), user=info.user,
            password=info.password, database=LAB_DB,
        )
        prepare_with_progress(console, info, driver, spec)
        journal = args.journal or default_journal_path(sandbox.root / "journals", "lab")
        config = SessionConfig(
            profile="lab", connection=info, journal_path=journal, interval=args.interval, load=spec
        )
        session = Session(config, LocalHost(), driver)
        if args.headless:
            code = asyncio.run(
                run_headless(session, args.duration, args.changes, args.load != "none", console)
            )
        else:
            from knobtop.ui.app import KnobtopApp

            app = KnobtopApp(session, start_load=args.load != "none")
            try:
                app.run()
            finally:
                if app.runner is not None:
                    app.runner.stop("quit")  # no-op after a normal quit
            code = app.return_code or 0
        console.print(f"Journal: {journal}")
        return code
    finally:
        if sandbox.started_here and not args.keep_running:
            with console.status("Stopping the sandbox server ..."):
                sandbox.stop()


def prepare_with_progress(
    console: Console, info: ConnectionInfo, driver: Sysbench, spec: LoadSpec
) -> None:
    steps = spec.tables * 3
    with Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(), console=console, transient=True,
    ) as progress:
        task = progress.add_task("Checking sysbench tables", total=steps)

        def on_progress(step: PrepareProgress) -> None:
            progress.update(task, advance=1, description=f"Loading {step.table}: {step.stage}")

        loaded = asyncio.run(prepare_tables(info, driver, spec, on_progress))
    if loaded:
        console.print(f"Loaded {spec.tables} sysbench tables x {spec.table_size} rows")


def describe(event: Event) -> str | None:
    """One line for the headless log, for the events a person watching cares about."""
    if isinstance(event, Change):
        text = f"change {event.knob}: {event.old} -> {event.new} [{event.result}]"
        return f"{text} {event.message}".rstrip()
    if isinstance(event, Phase):
        return f"load {event.action}: {event.workload} x{event.threads} {event.message}".rstrip()
    if isinstance(event, Error):
        return f"error ({event.source}): {event.message}"
    return None


async def run_headless(
    session: Session,
    duration: float,
    changes: Sequence[ScheduledChange],
    start_load: bool,
    console: Console,
) -> int:
    def log(event: Event) -> None:
        line = describe(event)
        if line:
            console.print(f"[{event.t:8.2f}s] {line}", highlight=False)

    session.listeners.append(log)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    reason = "duration reached"
    code = 0
    try:
        await session.open()
        assert session.journal is not None
        console.print(f"Recording {duration:g} s to {session.journal.path}")
        if start_load:
            await session.start_load()
        started = time.monotonic()
        for change in sorted(changes, key=lambda c: c.at):
            wait = started + change.at - time.monotonic()
            if wait > 0:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), wait)
            if stop.is_set():
                break
            result = await session.set_knob(change.knob, change.value)
            if result.result != "ok":
                code = 1
        remaining = started + duration - time.monotonic()
        if remaining > 0 and not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), remaining)
        if stop.is_set():
            reason = "interrupted"
    finally:
        await session.close(reason)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    console.print(f"{session.samples} samples, {session.phase} load phase(s); {reason}")
    return code


if __name__ == "__main__":
    sys.exit(main())
