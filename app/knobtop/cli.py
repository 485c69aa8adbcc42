"""The knobtop command line: `knobtop lab` (more commands arrive with their issues)."""
# Over 500 lines for now: argument parsing and every command's assembly; #12 (issue 15)
# splits it into options dataclasses, one build_session() and set_defaults dispatch.

from __future__ import annotations

import argparse
import asyncio
import contextlib
import re
import signal
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn
from rich.text import Text

from knobtop import __version__
from knobtop.connect import (
    ConnectError,
    SshOptions,
    build_hosts,
    connection_info,
    load_driver,
    ndb_restarter,
    needs_tunnel,
    preflight,
    resolve_password,
    server_link,
    server_nodes,
)
from knobtop.hosts.base import HostError
from knobtop.hosts.ssh import SshHost
from knobtop.journal.events import Change, Error, Event, Phase, Restart
from knobtop.journal.writer import cannot_create, check_journal_path, default_journal_path
from knobtop.lab import (
    LAB_DB,
    LabError,
    Sandbox,
    default_lab_dir,
    find_program,
    previous_baseline,
    stop_lab,
)
from knobtop.load.base import RAND_TYPES, WORKLOADS, LoadDriver, LoadError, LoadSpec
from knobtop.load.builtin import BuiltinDriver
from knobtop.load.sysbench import INSTALL_HINT
from knobtop.load.sysbench_output import PrepareProgress
from knobtop.profiles import lab_profile, load_profile, profile_from_args
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink
from knobtop.server.static import ServerNode
from knobtop.session import Session, SessionConfig, SessionError, prepare_all

if TYPE_CHECKING:
    from knobtop.config import UiConfig
    from knobtop.journal.replay import Replay
    from knobtop.recipes.recipe import Recipe
    from knobtop.recipes.results import Results
    from knobtop.ui.app import KnobtopApp

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


def workload_arg(text: str) -> str:
    if text == "none" or text in WORKLOADS or text.endswith(".lua"):
        return text
    raise argparse.ArgumentTypeError(
        f"unknown workload '{text}'; choose one of {', '.join(WORKLOADS)}, a .lua path, or none"
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="knobtop", description="Live tuning experiments on MySQL-family servers."
    )
    parser.add_argument("--version", action="version", version=f"knobtop {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    connect = sub.add_parser(
        "connect",
        help="open the live screen on a server reached over SSH (a profile, or --target)",
        description="Reach the target server (directly or through an SSH tunnel) and the "
        "client hosts, then open the live screen. PROFILE is a name in "
        "~/.config/knobtop/profiles/ or a path to a .toml file.",
    )
    connect.add_argument("profile", nargs="?", help="profile name or path")
    connect.add_argument("--target", help="SSH destination of the server host (no profile)")
    connect.add_argument("--client", action="append", default=[],
                         help="SSH destination of a client host (repeatable; no profile)")
    connect.add_argument("--mysql-user", default="root", help="MySQL user (no profile)")
    connect.add_argument("--mysql-port", type=int, default=3306, help="MySQL port (no profile)")
    connect.add_argument("--mysql-socket", help="MySQL socket on the target (no profile)")
    connect.add_argument("--password-env", metavar="VAR",
                         help="read the MySQL password from this environment variable")
    connect.add_argument("--accept-new", action="store_true",
                         help="trust unknown SSH host keys and add them to known_hosts "
                         "(a changed key is always refused)")
    connect.add_argument("--known-hosts", metavar="FILE",
                         help="known_hosts file (default ~/.ssh/known_hosts)")
    connect.add_argument("-i", "--identity", action="append", default=[], metavar="FILE",
                         help="SSH private key (repeatable; default: agent and ~/.ssh/id_*)")
    connect.add_argument("--ssh-config", metavar="FILE",
                         help="ssh config file, or 'none' (default ~/.ssh/config)")
    connect.add_argument("--client-tables", choices=("shared", "own"), default="shared",
                         help="with several clients: all on the sbtest tables (shared) or "
                         "each on its own database sbtest_NAME (own)")
    add_session_options(connect, journal_default="~/.local/share/knobtop/journals/",
                        default_load="none")
    follow = sub.add_parser(
        "follow", help="watch a journal another knobtop is writing (read-only live view)",
        description="Tail a journal that another knobtop process (lab, connect) is writing: "
        "the same graphs and panels, read-only; says how far behind it is; survives the "
        "writer restarting or the file being replaced. Given a folder (or --latest), it "
        "follows the newest *.knobtop.jsonl there and moves at once to a newer one when "
        "one appears (the lab quit and started again).",
    )
    follow.add_argument("journal", type=Path, nargs="?", default=None, metavar="PATH",
                        help="a *.knobtop.jsonl file being written, or a folder of them")
    follow.add_argument("--latest", action="store_true",
                        help="follow the newest journal in the folder PATH (default: the "
                        "lab's journals folder) and each newer one that appears")
    follow.add_argument("--history", type=float, default=900.0, metavar="S",
                        help="seconds of history to load first (default 900)")
    serve = sub.add_parser(
        "serve", help="show `knobtop follow JOURNAL` to browsers (pairing in a browser)",
        description="Serve the read-only live view of a journal another knobtop is writing "
        "over HTTP with textual-serve: each browser that opens the page gets its own "
        "`knobtop follow JOURNAL`. Listens on 127.0.0.1 unless --public is given.",
    )
    serve.add_argument("journal", type=Path, nargs="?", default=None, metavar="PATH",
                       help="a *.knobtop.jsonl file being written, or a folder of them "
                       "(each viewer follows the newest, and each newer one)")
    serve.add_argument("--latest", action="store_true",
                       help="as with follow: the newest journal in the folder PATH "
                       "(default: the lab's journals folder)")
    serve.add_argument("--host", default="127.0.0.1",
                       help="address to listen on (default 127.0.0.1; a non-loopback "
                       "address needs --public)")
    serve.add_argument("--port", type=int, default=8000, help="TCP port (default 8000)")
    serve.add_argument("--public", action="store_true",
                       help="allow a non-loopback --host: anyone who can reach the port "
                       "watches the session")
    serve.add_argument("--public-url", metavar="URL",
                       help="the address browsers use, when it is not http://HOST:PORT "
                       "(e.g. with --host 0.0.0.0, or behind a proxy)")
    serve.add_argument("--history", type=float, default=900.0, metavar="S",
                       help="seconds of history each viewer loads first (default 900)")
    serve.add_argument("--max-viewers", type=int, default=8, metavar="N",
                       help="browsers watching at once (default 8); one more is refused")
    replay = sub.add_parser(
        "replay", help="replay a saved journal: play, pause, seek, jump between changes",
        description="The live screen's graphs and panels driven by a virtual clock over a "
        "journal: space plays/pauses, +/- change the speed (1x-100x), left/right seek 10 s, "
        "[ and ] seek a minute, . and , jump to the next/previous change, note or mark, "
        "n adds a note (to a side file next to the journal, which is never rewritten).",
    )
    replay.add_argument("journal", type=Path, help="a *.knobtop.jsonl file")
    replay.add_argument("--at", metavar="TIME", help="start at this time from the journal's "
                        "start (seconds, m:ss or h:mm:ss), or 'end'")
    replay.add_argument("--speed", type=float, default=1.0, help="1, 2, 5, 10, 20, 50 or 100")
    replay.add_argument("--play", action="store_true", help="start playing at once")
    report = sub.add_parser(
        "report", help="write a Markdown or CSV report of a journal (no server needed)",
        description="Setup, baseline knobs, a timeline of changes and notes, and a table per "
        "load phase (Markdown); or one row of metrics per sample (CSV).",
    )
    report.add_argument("journal", type=Path, help="a *.knobtop.jsonl file")
    report.add_argument("--format", choices=("md", "csv", "steps-csv"), default="md",
                        help="md: the report (with recipe results); csv: one row per "
                        "sample; steps-csv: one row per measured recipe step")
    report.add_argument("--range", dest="span", metavar="FROM-TO",
                        help="only this time range (seconds or m:ss from the start), e.g. 60-300")
    report.add_argument("-o", "--output", type=Path, help="write to this file (default stdout)")
    compare = sub.add_parser(
        "compare", help="compare two journals, or two time ranges of one",
        description="Per load phase: median TPS, p95, hit ratio and dirty %% with B/A ratios; "
        "and what differs in server version and knob values.",
    )
    compare.add_argument("a", type=Path, help="journal A")
    compare.add_argument("b", type=Path, nargs="?", help="journal B (default: A again)")
    compare.add_argument("--range-a", metavar="FROM-TO", help="time range of A")
    compare.add_argument("--range-b", metavar="FROM-TO", help="time range of B")
    compare.add_argument("--format", choices=("tui", "text", "md"), default=None,
                         help="tui: overlaid graphs and tables on screen (default on a "
                         "terminal); text (default when output is not a terminal) or md")
    run = sub.add_parser(
        "run", help="run an experiment recipe (arms, thread sweep, replicates) and print "
        "the results table",
        description="Run a recipe (TOML, see experiments/) on the sandbox (--lab) or a "
        "profile's server: every arm at every thread count, replicated and interleaved, "
        "with waits and a steady-state check before each measured step; then a table of "
        "median TPS, spread, p95 and a verdict per cell. Ctrl+C aborts and restores the "
        "baseline knobs. Everything goes to the journal.",
    )
    run.add_argument("recipe", type=Path, help="a recipe file, e.g. experiments/doublewrite.toml")
    where = run.add_mutually_exclusive_group(required=True)
    where.add_argument("--lab", action="store_true", help="on the sandbox server (knobtop lab)")
    where.add_argument("--profile", metavar="PROFILE", help="on a profile's server")
    run.add_argument("--tui", action="store_true",
                     help="run inside the live screen with a progress panel (a aborts)")
    run.add_argument("--journal", type=Path, default=None, help="journal file to write")
    run.add_argument("--interval", type=float, default=1.0, help="sampling interval (s)")
    run.add_argument("--dir", type=Path, default=None, help="lab: sandbox directory")
    run.add_argument("--driver", choices=("auto", "sysbench", "builtin"), default="auto",
                     help="lab: load generator")
    run.add_argument("--accept-new", action="store_true", help="trust unknown SSH host keys")
    run.add_argument("--known-hosts", metavar="FILE", help="known_hosts file")
    run.add_argument("-i", "--identity", action="append", default=[], metavar="FILE",
                     help="SSH private key (repeatable)")
    run.add_argument("--ssh-config", metavar="FILE", help="ssh config file, or 'none'")
    run.add_argument("--replicates", type=int, metavar="N", help="override [run] replicates")
    run.add_argument("--duration", dest="step_duration", type=int, metavar="S",
                     help="override [load] duration (measured seconds per step)")
    run.add_argument("--warmup", type=int, metavar="S", help="override [load] warmup")
    run.add_argument("--threads", dest="step_threads", metavar="LIST",
                     help="override [load] threads, e.g. 4,8")
    run.add_argument("--pause", type=float, metavar="S", help="override [run] pause")
    run.add_argument("--wait-timeout", type=float, metavar="S",
                     help="override [wait] timeout")
    run.add_argument("--markdown", type=Path, metavar="FILE",
                     help="also write the results as Markdown to FILE")
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
    lab.add_argument("--stop", action="store_true",
                     help="stop the sandbox server (left running by --keep-running) cleanly "
                     "and exit; says so if none is running")
    lab.add_argument("--driver", choices=("auto", "sysbench", "builtin"), default="auto",
                     help="load generator: sysbench, or knobtop's built-in one (auto: sysbench "
                     "when installed, else built-in)")
    add_session_options(lab, journal_default="the lab's journals/",
                        default_load="oltp_read_write")
    return parser


def add_session_options(
    p: argparse.ArgumentParser, *, journal_default: str, default_load: str
) -> None:
    p.add_argument("--headless", action="store_true",
                   help="record a session without a screen (needs --duration)")
    p.add_argument("--duration", type=float, default=None, help="headless: seconds to record")
    p.add_argument("--journal", type=Path, default=None,
                   help=f"journal file to write (default: a new file in {journal_default})")
    p.add_argument("--interval", type=float, default=1.0,
                   help="sampling interval in seconds, 0.1 to 60 (default 1)")
    p.add_argument("--load", default=default_load, type=workload_arg, metavar="WORKLOAD",
                   help=f"workload to start with: {', '.join(WORKLOADS)}, the absolute path "
                   f"of a .lua script, or none (default {default_load})")
    p.add_argument("--threads", type=int, default=4, help="sysbench threads (default 4)")
    p.add_argument("--tables", type=int, default=4, help="sysbench tables (default 4)")
    p.add_argument("--table-size", type=int, default=10000,
                   help="rows per sysbench table (default 10000)")
    p.add_argument("--rate", type=int, default=0,
                   help="sysbench --rate: transactions per second in total (default 0 = max)")
    p.add_argument("--rand-type", default="uniform", choices=RAND_TYPES,
                   help="sysbench --rand-type (default uniform)")
    p.add_argument("--percentile", type=int, default=95,
                   help="latency percentile sysbench reports (default 95)")
    p.add_argument("--no-ps", action="store_true",
                   help="run sysbench without prepared statements (--db-ps-mode=disable)")
    p.add_argument("--phase-seconds", type=int, default=0, metavar="S",
                   help="each load phase runs S seconds and ends with sysbench's own summary "
                   "(default 0: until stopped; sysbench prints no summary when stopped)")
    p.add_argument("--no-statements", dest="statements", action="store_false",
                   help="the incident page (key 4) never reads statement texts: for "
                   "sensitive systems (default: read, shortened, secrets redacted)")
    p.add_argument("--cleanup", action="store_true",
                   help="drop the sysbench tables when the session ends")
    p.add_argument("--set", dest="changes", action="append", type=parse_set, default=[],
                   metavar="KNOB=VALUE[@S]",
                   help="headless: set a knob at S seconds (repeatable; "
                   "static knobs restart the server)")


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    console = Console(stderr=True, soft_wrap=True)  # messages stay whole lines in logs
    try:
        if args.command == "lab":
            return run_lab(args, console)
        if args.command == "connect":
            return run_connect(args, console)
        if args.command == "report":
            return run_report(args)
        if args.command == "follow":
            return run_follow(args)
        if args.command == "serve":
            return run_serve(args, console)
        if args.command == "replay":
            return run_replay(args)
        if args.command == "run":
            return run_recipe(args, console)
        if args.command == "compare":
            return run_compare(args)
    except (LabError, LoadError, ServerError, SessionError, HostError, ConnectError,
            ValueError) as exc:
        console.print(labelled("knobtop:", str(exc)), highlight=False)
        return 2
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename else ""
        console.print(labelled("knobtop:", f"{exc.strerror or exc}{where}"), highlight=False)
        return 2
    except KeyboardInterrupt:
        console.print("knobtop: interrupted")
        return 130
    return 2


def labelled(label: str, message: str) -> Text:
    """A red label and a message that is printed as it is (file names, server errors and
    profile fields may hold ``[``: they are never read as markup)."""
    return Text.assemble((label, "bold red"), " ", message)


def ui_config() -> UiConfig:
    """The person's config file, its key remapping checked against every binding id
    (a ConfigError names the file, the key and the fix before any screen opens)."""
    from knobtop.config import load_config
    from knobtop.ui.look import binding_ids, check_keymap

    config = load_config()
    if config.keys:
        check_keymap(config.keys, binding_ids(), str(config.path))
    return config


def following_app(path: Path, history: float, folder: Path | None = None) -> KnobtopApp:
    """The live screen over a journal being written: its knob state from the start,
    the last ``history`` seconds of events, then whatever is appended (with ``folder``:
    then the newer journals that appear there)."""
    from knobtop.journal.follow import JournalFollower
    from knobtop.journal.follow_dir import DirectoryFollower
    from knobtop.journal.index import JournalIndex
    from knobtop.ui.app import KnobtopApp

    index = JournalIndex(path)
    index.build()
    lo, hi = index.t_range or (0.0, 0.0)
    early = sorted({i for kind in ("knobs", "change") for i in index.lines_of(kind)})
    first = [e for i in early for e in index.read(i, 1) if e.t < hi - history]
    recent = index.events_between(max(lo, hi - history), hi + 1)
    # Lines that are not events (or hold a field of the wrong type) are shown, not dropped.
    skipped = [Error(t=hi, wall=time.time(), source="journal",
                     message=f"{path}:{line}: {reason}; line skipped")
               for line, reason in index.problems]
    return KnobtopApp(header=index.header, events=[*first, *recent, *skipped],
                      config=ui_config(),
                      follow=JournalFollower.after(index) if folder is None else
                      DirectoryFollower(folder, current=path, offset=index.end_offset))


def follow_target(path: Path | None, latest: bool) -> Path:
    """The file or folder ``knobtop follow [PATH] [--latest]`` follows; ValueError naming
    the fix for a missing one, or for --latest with a file."""
    if path is None:
        if not latest:
            raise ValueError("give the journal to follow (a *.knobtop.jsonl file or a folder "
                             "of them), or --latest for the newest one in the lab's journals "
                             "folder")
        folder = default_lab_dir() / "journals"
        if not folder.is_dir():
            raise ValueError(f"{folder}: no lab journals folder yet (start `knobtop lab` "
                             "first, or give the folder to follow: knobtop follow --latest DIR)")
        return folder
    path = path.expanduser()
    if path.is_dir():
        return path
    if not path.exists():
        raise ValueError(f"{path}: no such file or folder (give a *.knobtop.jsonl journal, or "
                         "a folder of them)")
    if latest:
        raise ValueError(f"{path} is a file; --latest follows the newest journal in a folder: "
                         f"give the folder ({path.parent}) or leave out --latest")
    return path


def folder_following_app(folder: Path, history: float) -> KnobtopApp:
    """The live screen over the newest journal in ``folder``, moving to newer ones."""
    from knobtop.journal.follow_dir import DirectoryFollower, JournalFolder
    from knobtop.ui.app import KnobtopApp

    newest = JournalFolder(folder).newest()
    if newest is None:  # nothing yet: the screen waits for the first journal
        return KnobtopApp(config=ui_config(), follow=DirectoryFollower(folder))
    return following_app(newest[0], history, folder=folder)


def run_follow(args: argparse.Namespace) -> int:
    target = follow_target(args.journal, args.latest)
    if target.is_dir():
        app = folder_following_app(target, args.history)
    else:
        app = following_app(target, args.history)
    app.run()
    return app.return_code or 0


def is_loopback_host(host: str) -> bool:
    """True when every address ``host`` stands for is a loopback one (127/8, ::1)."""
    import ipaddress
    import socket

    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise ValueError(f"--host {host}: cannot resolve it ({exc.strerror or exc})") from None
    return bool(infos) and all(
        ipaddress.ip_address(str(info[4][0]).split("%")[0]).is_loopback for info in infos
    )


def check_port_free(host: str, port: int) -> None:
    """Refuse a port something already listens on, before the web server says more."""
    import socket

    for family, kind, proto, _, addr in socket.getaddrinfo(host, port, type=socket.SOCK_STREAM):
        with socket.socket(family, kind, proto) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind(addr)
            except OSError as exc:
                raise ValueError(
                    f"cannot listen on {host} port {port}: {exc.strerror or exc} "
                    "(choose another with --port)"
                ) from None


def run_serve(args: argparse.Namespace, console: Console) -> int:
    """`knobtop serve JOURNAL`: `knobtop follow JOURNAL` in browsers, via textual-serve."""

    from knobtop.journal.reader import JournalReader

    path = follow_target(args.journal, args.latest)
    header = None  # a folder: each viewer follows its newest journal
    if not path.is_dir():
        if not path.is_file():
            raise ValueError(f"{path}: not a file (give a *.knobtop.jsonl journal)")
        header = JournalReader(path).header  # a JournalFormatError names the file and line
    else:
        try:
            next(path.iterdir(), None)
        except OSError as exc:
            raise ValueError(f"{path}: cannot read this folder ({exc.strerror or exc}); "
                             "give a folder of journals you can read") from None
    if not 1 <= args.port <= 65535:
        raise ValueError(f"--port {args.port}: choose a port between 1 and 65535")
    if args.history <= 0:
        raise ValueError(f"--history {args.history:g}: give a number of seconds above 0")
    if args.max_viewers < 1:
        raise ValueError(f"--max-viewers {args.max_viewers}: give 1 or more")
    if not is_loopback_host(args.host) and not args.public:
        raise ValueError(
            f"--host {args.host} is not a loopback address: anyone who can reach port "
            f"{args.port} there would watch this session (server, knob values, notes) "
            "without a password. Serve on 127.0.0.1 (the default), or add --public if "
            "that is what you want."
        )
    check_port_free(args.host.strip("[]"), args.port)  # --host '[::1]': the address inside

    from knobtop.ui.serve import serve_follow

    serve_follow(path, header, host=args.host, port=args.port, public=args.public,
                 public_url=args.public_url, history=args.history, console=console,
                 max_viewers=args.max_viewers)
    return 0


def replay_for(path: Path, at: str | None = None, speed: float = 1.0) -> Replay:
    """A Replay over ``path`` whose index builds in the background; the first chunk is
    indexed before this returns (so the first frame has data), the rest keeps coming."""
    from knobtop.journal.index import JournalIndex
    from knobtop.journal.replay import SPEEDS, Replay
    from knobtop.recipes.report import parse_time

    if speed not in SPEEDS:
        raise ValueError(f"--speed {speed:g}: choose one of {', '.join(f'{s:g}' for s in SPEEDS)}")
    index = JournalIndex(path)
    index.build_in_background()
    while index.t_range is None and not index.ready.wait(0.005):
        pass
    replay = Replay(index)
    replay.speed = speed
    if at is not None:
        index.ready.wait()  # a time anywhere in the file: the whole index is needed
        if at.strip().lower() == "end":
            replay.seek_to(replay.indexed_to)
        else:
            replay.seek_to(replay.start + parse_time(at))
    return replay


def run_replay(args: argparse.Namespace) -> int:
    from knobtop.ui.replay_app import ReplayApp

    replay = replay_for(args.journal, args.at, args.speed)
    try:
        app = ReplayApp(replay, play=args.play, config=ui_config())
        app.run()
    finally:
        replay.index.close()
    return app.return_code or 0


def run_report(args: argparse.Namespace) -> int:
    from knobtop.recipes.report import (
        csv_report,
        load_journal,
        markdown_report,
        parse_range,
        steps_csv,
    )

    t_from, t_to = parse_range(args.span) if args.span else (None, None)
    data = load_journal(args.journal, t_from=t_from, t_to=t_to)
    formats = {"md": markdown_report, "csv": csv_report, "steps-csv": steps_csv}
    text = formats[args.format](data)
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def run_compare(args: argparse.Namespace) -> int:
    from knobtop.recipes.compare import compare, comparison_markdown, comparison_text
    from knobtop.recipes.report import load_journal, parse_range

    span_a = parse_range(args.range_a) if args.range_a else (None, None)
    span_b = parse_range(args.range_b) if args.range_b else (None, None)
    if args.b is None and not (args.range_a or args.range_b):
        raise ValueError("give journal B, or --range-a/--range-b to compare parts of A")
    a = load_journal(args.a, t_from=span_a[0], t_to=span_a[1])
    b = load_journal(args.b or args.a, t_from=span_b[0], t_to=span_b[1])
    result = compare(a, b)
    fmt = args.format or ("tui" if sys.stdout.isatty() else "text")
    if fmt == "tui":
        from knobtop.ui.compare_app import CompareApp

        app = CompareApp(result, config=ui_config())
        app.run()
        return app.return_code or 0
    if fmt == "md":
        sys.stdout.write(comparison_markdown(result))
    else:
        Console().print(comparison_text(result))
    return 0


def recipe_from_args(args: argparse.Namespace) -> Recipe:
    """The recipe file with the command line's overrides, checked again."""
    import dataclasses

    from knobtop.recipes.recipe import load_recipe

    recipe = load_recipe(args.recipe)
    changes: dict[str, object] = {}
    if args.replicates is not None:
        if args.replicates < 1:
            raise ValueError("--replicates must be at least 1")
        changes["replicates"] = args.replicates
    if args.step_duration is not None:
        if args.step_duration < 1:
            raise ValueError("--duration must be at least 1 second")
        changes["duration"] = args.step_duration
    if args.warmup is not None:
        if args.warmup < 0:
            raise ValueError("--warmup cannot be negative")
        changes["warmup"] = args.warmup
    if args.pause is not None:
        changes["pause"] = max(0.0, args.pause)
    if args.step_threads:
        try:
            threads = tuple(int(t) for t in args.step_threads.split(","))
        except ValueError:
            raise ValueError(f"--threads {args.step_threads}: give numbers like 4,8,16") from None
        if any(not 1 <= t <= 1024 for t in threads):
            raise ValueError("--threads: each count must be 1 to 1024")
        changes["threads"] = threads
    if args.wait_timeout is not None:
        changes["waits"] = dataclasses.replace(recipe.waits, timeout=max(1.0, args.wait_timeout))
    return dataclasses.replace(recipe, **changes)  # type: ignore[arg-type]


def run_recipe(args: argparse.Namespace, console: Console) -> int:
    """`knobtop run`: the lab or a profile's session, driven by a recipe."""
    from knobtop.recipes.runner import short_duration

    recipe = recipe_from_args(args)
    steps = len(recipe.schedule())
    console.print(f"Recipe {recipe.name}: {len(recipe.arms)} arms x "
                  f"{len(recipe.threads)} thread counts x {recipe.replicates} replicates = "
                  f"{steps} steps, at least {short_duration(recipe.planned_seconds)}",
                  highlight=False, markup=False)
    # The session options the lab and connect commands take, filled from the recipe.
    args.recipe_loaded = recipe
    args.headless = not args.tui
    args.duration = recipe.planned_seconds
    args.changes = []
    args.load = recipe.workload
    args.threads = recipe.threads[0]
    args.tables, args.table_size = recipe.tables, recipe.table_size
    args.rate, args.rand_type, args.percentile = recipe.rate, recipe.rand_type, recipe.percentile
    args.no_ps = False
    args.statements = True  # the incident page's statement texts (lab/connect's default)
    args.phase_seconds = 0
    args.cleanup = args.fresh = args.keep_running = False
    if args.lab:
        return run_lab(args, console)
    args.target = args.client = None
    args.client_tables = "shared"
    args.mysql_user = args.mysql_port = args.mysql_socket = args.password_env = None
    return run_connect(args, console)


async def run_recipe_headless(
    session: Session, recipe: Recipe, console: Console
) -> tuple[int, str]:
    """Run the recipe with progress bars and print the results table.  Returns the exit
    code (0 when it finished) and the results as Markdown ("" when no step ran)."""
    from knobtop.recipes.recipe import RecipeError
    from knobtop.recipes.results import build, results_markdown, results_table
    from knobtop.recipes.runner import Progress as RunProgress
    from knobtop.recipes.runner import RecipeRunner, RunAborted, RunFailed, short_duration

    loop = asyncio.get_running_loop()
    code, reason = 0, "recipe finished"
    with Progress(TextColumn("{task.description}"), BarColumn(),
                  TextColumn("{task.completed}/{task.total} steps"), TimeElapsedColumn(),
                  TextColumn("{task.fields[left]}"), console=console) as bars:
        task = bars.add_task(escape(recipe.name), total=len(recipe.schedule()), left="")

        def on_progress(p: RunProgress) -> None:
            wait = f" ({p.waiting_for})" if p.waiting_for else ""
            bars.update(task, completed=p.done, description=escape(f"{p.label}{wait}"),
                        left=f"~{short_duration(p.seconds_left)} left")

        def log(event: Event) -> None:
            line = describe(event)
            if line:
                bars.console.print(f"[{event.t:8.2f}s] {line}", highlight=False, markup=False)

        runner = RecipeRunner(session, recipe, on_progress=on_progress, prepare=True)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, runner.abort)
        session.listeners.append(log)
        try:
            await session.open()
            assert session.journal is not None
            bars.console.print(f"Journal: {session.journal.path}", markup=False)
            await runner.run()
        except RecipeError as exc:
            code, reason = 2, "recipe refused"
            bars.console.print(labelled("knobtop:", str(exc)), highlight=False)
        except RunAborted:
            code, reason = 130, "recipe aborted"
            bars.console.print("Aborted: the load was stopped and the baseline knobs restored.")
        except RunFailed as exc:
            code, reason = 1, "recipe failed"
            bars.console.print(labelled("Recipe failed:", f"{exc} (the baseline knobs were "
                                        "restored)"), highlight=False)
        finally:
            await session.close(reason)
            for sig in (signal.SIGINT, signal.SIGTERM):
                loop.remove_signal_handler(sig)
    for warning in runner.warnings:
        console.print(f"warning: {warning}", highlight=False, markup=False)
    if runner.results:
        outcome = {0: "end", 130: "aborted"}.get(code, "failed")
        results = build(recipe.name, [a.name for a in recipe.arms], list(recipe.threads),
                        runner.results, outcome, "", len(runner.steps))
        console.print(results_table(results))
        return code, results_markdown(results)
    return code, ""


def recipe_results_so_far(app: KnobtopApp, recipe: Recipe) -> Results | None:
    """A recipe the screen quit before its end: the steps it measured ("aborted"), or
    None when none was."""
    from knobtop.recipes.results import build

    runner = app.recipe_runner
    if runner is None or not runner.results:
        return None
    return build(recipe.name, [a.name for a in recipe.arms], list(recipe.threads),
                 runner.results, "aborted", "quit before the end", len(runner.steps))


def load_spec(args: argparse.Namespace) -> LoadSpec:
    if args.headless and args.duration is None:
        raise ValueError("--headless needs --duration SECONDS")
    if args.changes and not args.headless:
        raise ValueError("--set is for --headless runs; in the live screen press k to edit knobs")
    spec = LoadSpec(
        workload=args.load if args.load != "none" else "oltp_read_write",
        threads=args.threads,
        tables=args.tables,
        table_size=args.table_size,
        rate=args.rate,
        rand_type=args.rand_type,
        percentile=args.percentile,
        prepared=not args.no_ps,
        duration=args.phase_seconds,
    )
    spec.check()
    return spec


def run_session(args: argparse.Namespace, console: Console, session: Session) -> int:
    """Headless recording or the live screen, for any session."""
    want_load = args.load != "none"
    recipe: Recipe | None = getattr(args, "recipe_loaded", None)
    if recipe is not None and args.headless:
        code, markdown = asyncio.run(run_recipe_headless(session, recipe, console))
        if args.markdown is not None and markdown:
            args.markdown.write_text(markdown)
            console.print(f"Markdown: {args.markdown}", markup=False)
    elif recipe is not None:
        from knobtop.recipes.results import results_markdown, results_table
        from knobtop.ui.app import KnobtopApp

        app = KnobtopApp(session, recipe=recipe, config=ui_config())
        try:
            app.run()
        finally:
            if app.runner is not None:
                app.runner.stop("quit")
        code = app.return_code or 0
        # The screen is gone: the results stay on the terminal (the table `run` prints
        # headless; arm names are the recipe's words, never markup).
        tui_results = app.recipe_results or recipe_results_so_far(app, recipe)
        if tui_results is not None:
            console.print(results_table(tui_results))
            if args.markdown is not None:
                args.markdown.write_text(results_markdown(tui_results))
                console.print(f"Markdown: {args.markdown}", markup=False)
    elif args.headless:
        code = asyncio.run(run_headless(session, args.duration, args.changes, want_load, console))
    else:
        from knobtop.ui.app import KnobtopApp

        app = KnobtopApp(session, start_load=want_load, config=ui_config())
        try:
            app.run()
        finally:
            if app.runner is not None:
                app.runner.stop("quit")  # no-op after a normal quit
        code = app.return_code or 0
    console.print(f"Journal: {session.config.journal_path}", markup=False)
    return code


def run_connect(args: argparse.Namespace, console: Console) -> int:
    spec = load_spec(args)
    if args.profile:
        if args.target or args.client:
            raise ValueError("give a PROFILE or --target/--client, not both")
        profile = load_profile(args.profile)
    elif args.target or args.client:
        profile = profile_from_args(
            args.target, args.client, mysql_user=args.mysql_user, mysql_port=args.mysql_port,
            mysql_socket=args.mysql_socket, password_env=args.password_env,
        )
    else:
        raise ValueError("say where the server is: knobtop connect PROFILE, or --target DEST")
    ssh = SshOptions(known_hosts=args.known_hosts, accept_new=args.accept_new,
                     identities=tuple(args.identity), config=args.ssh_config)
    want_load = args.load != "none"
    own = args.client_tables == "own"

    async def check() -> tuple[ConnectionInfo, bool]:
        hosts = build_hosts(profile, ssh)
        try:
            password = await resolve_password(profile, hosts.target, interactive=True)
            info = connection_info(profile, password)
            via = await needs_tunnel(profile)
            with console.status(Text(f"Reaching {profile.target.ssh or 'this machine'} ...")):
                described = await preflight(profile, hosts, info, via, want_load)
            console.print(f"Server: {described}", highlight=False, markup=False)
            if want_load:
                driver = load_driver(profile, hosts, info, own_tables=own)
                await prepare_with_progress(console, spec, lambda cb: prepare_all(
                    lambda: server_link(hosts, info, via), driver, spec, cb))
            return info, via
        finally:
            await hosts.close()

    journal = args.journal or default_journal_path(
        Path("~/.local/share/knobtop/journals").expanduser(), profile.name
    )
    journal_must_work(journal)
    info, via = asyncio.run(check())
    # Fresh host objects: SSH connections belong to the event loop that made them.
    hosts = build_hosts(profile, ssh)
    config = SessionConfig(profile=profile.name, connection=info, journal_path=journal,
                           interval=args.interval, load=spec,
                           nodes=server_nodes(profile, hosts, info, ssh, via=via),
                           ndb=ndb_restarter(profile, hosts, ssh),
                           cleanup_on_close=args.cleanup, statements=args.statements)
    tunnel = hosts.target if via and isinstance(hosts.target, SshHost) else None
    session = Session(config, hosts.target, load_driver(profile, hosts, info, own_tables=own),
                      clients=tuple(h for _, h in hosts.clients), via=tunnel)
    return run_session(args, console, session)


def journal_must_work(path: Path) -> None:
    """Refuse a journal path that cannot be written before doing anything else.

    An existing file is refused, never appended to: a journal is one session (one header,
    times from its start), and a follower of that file would take the new lines for the
    old session's."""
    try:
        check_journal_path(path)
    except FileExistsError:
        raise SessionError(
            f"the journal {path} already exists; knobtop never writes into an existing "
            "journal: choose a new --journal path, or leave --journal out for a new "
            "timestamped file (`knobtop follow --latest` follows each new one)"
        ) from None
    except OSError as exc:
        raise SessionError(cannot_create(path, exc)) from None


def run_lab(args: argparse.Namespace, console: Console) -> int:
    if getattr(args, "stop", False):
        with console.status("Stopping the sandbox server ..."):
            said = stop_lab(args.dir or default_lab_dir())
        console.print(said, markup=False, highlight=False)
        return 0
    spec = load_spec(args)
    has_sysbench = find_program("sysbench") is not None
    if args.driver == "sysbench" and not has_sysbench:
        raise LoadError(f"sysbench is not installed: {INSTALL_HINT}, or use --driver builtin")
    builtin = args.driver == "builtin" or (args.driver == "auto" and not has_sysbench)
    if builtin:
        BuiltinDriver.check(spec)
        if args.driver == "auto":
            console.print("sysbench is not installed: using knobtop's built-in load "
                          f"({INSTALL_HINT} for sysbench)")
    sandbox = Sandbox(args.dir or default_lab_dir())
    if args.journal:
        journal_must_work(args.journal)
    if args.fresh:
        sandbox.wipe()
    with console.status(Text(f"Starting the sandbox server in {sandbox.root} ...")):
        info = sandbox.start()
    console.print(f"Sandbox server on 127.0.0.1:{info.port} (socket {sandbox.socket})",
                  markup=False)
    if not sandbox.started_here:
        console.print("It was already running, so it stays up when this session ends.")
    try:
        # The lab is just the built-in profile whose hosts are all this machine.
        profile = lab_profile(str(sandbox.socket), info.port, info.user)
        hosts = build_hosts(profile, SshOptions())
        conn = connection_info(profile, info.password)
        driver: LoadDriver | None = load_driver(profile, hosts, conn)
        if builtin:
            driver = BuiltinDriver(conn, database=LAB_DB)
        asyncio.run(prepare_with_progress(
            console, spec, lambda cb: prepare_all(lambda: ServerLink(conn), driver, spec, cb)
        ))
        journal = args.journal or default_journal_path(sandbox.root / "journals", "lab")
        node = ServerNode(
            name="lab", host=hosts.target, link=lambda: ServerLink(conn),
            restart_command=sandbox.restart_command(), dropin_path=sandbox.dropin_file,
        )
        config = SessionConfig(profile=profile.name, connection=conn, journal_path=journal,
                               interval=args.interval, load=spec, nodes=(node,),
                               cleanup_on_close=args.cleanup, statements=args.statements)
        session = Session(config, hosts.target, driver,
                          clients=tuple(h for _, h in hosts.clients))
        # At open, knobs that differ from what the last lab session started from are said.
        session.previous_baseline = previous_baseline(sandbox.root / "journals", journal)
        return run_session(args, console, session)
    finally:
        if sandbox.started_here and not args.keep_running:
            with console.status("Stopping the sandbox server ..."):
                sandbox.stop()


async def prepare_with_progress(
    console: Console,
    spec: LoadSpec,
    prepare: Callable[[Callable[[PrepareProgress], None]], Awaitable[bool]],
) -> None:
    """Load sysbench tables (unless already there) behind a progress bar."""
    steps = spec.tables * 3
    with Progress(
        TextColumn("{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
        TimeElapsedColumn(), console=console, transient=True,
    ) as progress:
        task = progress.add_task("Checking sysbench tables", total=steps)

        def on_progress(step: PrepareProgress) -> None:
            progress.update(task, advance=1,
                            description=escape(f"Loading {step.table}: {step.stage}"))

        loaded = await prepare(on_progress)
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
    if isinstance(event, Restart):
        return f"{event.node}: {event.step} {event.result} in {event.seconds:.1f} s {event.message}"
    return None


async def restore_baseline(session: Session, console: Console) -> None:
    """Headless --set changes go back at the end (as a recipe's do): the next session
    must not take them for its baseline.  The load stops first, so a static revert does
    not start a new phase; what was done is journaled as the quit choice."""
    try:
        if session.driver is not None and session.driver.running:
            await session.stop_load()
        diff = await session.baseline_diff()
        if not diff:
            return
        failed = [c for c in await session.revert_to_baseline() if c.result != "ok"]
        session.quit_choice("revert", diff)
    except (ServerError, LoadError, HostError, TimeoutError) as exc:
        console.print(f"could not restore the baseline knobs: {exc}", markup=False)
        return
    for change in failed:
        console.print(f"could not restore {change.knob}: {change.message}", markup=False)


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
            console.print(f"[{event.t:8.2f}s] {line}", highlight=False, markup=False)
        if isinstance(event, Error) and event.source == "journal":
            stop.set()  # nothing can be recorded any more: end the run

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
        console.print(f"Recording {duration:g} s to {session.journal.path}", markup=False)
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
            # On the command line, --set is the confirmation: static knobs restart.
            result = await session.set_knob(change.knob, change.value, restart_ok=True)
            if result.result != "ok":
                code = 1
        remaining = started + duration - time.monotonic()
        if remaining > 0 and not stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(stop.wait(), remaining)
        if session.journal_error is not None:
            reason, code = "the journal could not be written", 1
        elif stop.is_set():
            reason = "interrupted"
    finally:
        if changes and session.journal is not None and session.journal_error is None:
            await restore_baseline(session, console)
        await session.close(reason)
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
    console.print(f"{session.samples} samples, {session.phase} load phase(s); {reason}",
                  markup=False)
    return code


if __name__ == "__main__":
    sys.exit(main())
