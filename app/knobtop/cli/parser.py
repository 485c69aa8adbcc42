"""The command line's parser: every command, flag and help text, and the handler each runs.

Nothing heavy is imported here (`knobtop --version` and `--help` build the whole parser):
values that live in heavy modules are read when first used (:class:`Later`), and each
command's handler is imported only when that command runs (:func:`handler`).
"""
# Over 500 lines: the whole command line in one place, one function per command, read by
# `--help`, the shell completion and tools/docsref.py; all of it is option declarations.

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

from knobtop import __version__

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs 4 ms of start-up
if TYPE_CHECKING:
    from knobtop.session.options import ScheduledChange

SHELLS = ("bash", "zsh", "fish")  # knobtop completion SHELL
CALIBRATE_ROUNDS = 8  # --calibrate alone: enough runs to read a CV to about +-25% of itself
_SET = r"^([A-Za-z_][A-Za-z0-9_]*)=([^@]+)(?:@(\d+(?:\.\d+)?)s?)?$"

Handler = Callable[[argparse.Namespace], int]


def handler(module: str, name: str) -> Handler:
    """The command function ``name`` of ``knobtop.cli.<module>``, imported when it runs."""

    def run(args: argparse.Namespace) -> int:
        import importlib

        func: Handler = getattr(importlib.import_module(f"knobtop.cli.{module}"), name)
        return func(args)

    return run


def parse_set(text: str) -> ScheduledChange:
    import re

    from knobtop.session.options import ScheduledChange

    m = re.match(_SET, text.strip())
    if not m:
        raise argparse.ArgumentTypeError(
            f"--set {text!r}: write KNOB=VALUE or KNOB=VALUE@SECONDS, "
            "e.g. innodb_flush_log_at_trx_commit=2@10"
        )
    return ScheduledChange(float(m.group(3) or 0), m.group(1).lower(), m.group(2))


def workload_arg(text: str) -> str:
    if text == "none" or text in workloads() or text.endswith(".lua"):
        return text
    raise argparse.ArgumentTypeError(
        f"unknown workload '{text}'; choose one of {', '.join(workloads())}, a .lua path, or none"
    )


class Later:
    """A value of the parser worked out only when it is used (a help shown, a choice
    checked): its module is heavy, and `knobtop --version` and `--help` need none of it."""

    def __init__(self, get: Callable[[], object]) -> None:
        self.get = get

    def __str__(self) -> str:
        return str(self.get())


class LaterChoices(Sequence[str]):
    """``choices=`` for the parser, read from their module when first checked or shown."""

    def __init__(self, get: Callable[[], tuple[str, ...]]) -> None:
        self.get = get

    def __getitem__(self, i: int) -> str:  # type: ignore[override]
        return self.get()[i]

    def __len__(self) -> int:
        return len(self.get())

    def __iter__(self) -> Iterator[str]:
        return iter(self.get())

    def __contains__(self, value: object) -> bool:
        return value in self.get()


def lab_dir() -> str:
    from knobtop.lab import default_lab_dir

    return str(default_lab_dir())


def workloads() -> tuple[str, ...]:
    from knobtop.load.base import WORKLOADS

    return WORKLOADS


def rand_types() -> tuple[str, ...]:
    from knobtop.load.base import RAND_TYPES

    return RAND_TYPES


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line; with ``only`` (a command's name), the top level and that
    command's parser alone, which parse that command's arguments, and print its help and
    errors, exactly as the whole one does (a report's start does not build ten parsers)."""
    parser = argparse.ArgumentParser(
        prog="knobtop", description="Live tuning experiments on MySQL-family servers."
    )
    parser.add_argument("--version", action="version", version=f"knobtop {__version__}")
    # One command alone: its usage line still lists every command, as the whole parser's
    # does (its errors name the argument "command": one alone never has those errors)
    sub = parser.add_subparsers(dest="command", required=True, metavar=None if only is None
                                else "{" + ",".join(COMMANDS) + "}")
    for name, (add, module, func) in COMMANDS.items():
        if only is None or only == name:
            add(sub).set_defaults(func=handler(module, func))
    return parser


def command_of(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names first, if it is one (else None: the whole parser then
    says what is wrong)."""
    return argv[0] if argv and argv[0] in COMMANDS else None


def _add_connect(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """`knobtop connect`: the live screen on a server reached over SSH."""
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
    return connect


def _add_follow(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """`knobtop follow`: the read-only live view of a journal being written."""
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
    return follow


def _add_serve(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """`knobtop serve`: `knobtop follow` shown to browsers."""
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
    return serve


def _add_replay(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """`knobtop replay`: a saved journal on a virtual clock."""
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
    return replay


def _add_report(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """`knobtop report`: a Markdown or CSV report of a journal."""
    report = sub.add_parser(
        "report", help="write a Markdown or CSV report of a journal (no server needed)",
        description="Setup, baseline knobs, a timeline of changes and notes, and a table per "
        "load phase (Markdown); or one row of metrics per sample (CSV).",
    )
    report.add_argument("journal", type=Path, help="a *.knobtop.jsonl file")
    report.add_argument("--format", choices=("md", "csv", "steps-csv"), default="md",
                        help="md: the report (with recipe results); csv: one row per "
                        "sample; steps-csv: one row per measured recipe step")
    report.add_argument("--table", choices=("sweep", "efficiency", "overhead", "purge",
                                            "timeline", "linkbench", "curve",
                                            "scalability"),
                        help="one of the seed posts' tables of a recipe journal: sweep "
                        "(configurations x threads, average TPS and verdicts), efficiency "
                        "(per transaction, one row per configuration), overhead (1 - arm / "
                        "baseline), purge (history length at each step's end), timeline "
                        "(metrics at the checkpoints of a timeline recipe), linkbench (the "
                        "load phase and the request phase per configuration: ips and tps, "
                        "rates, p99 of un/gn/ul/gl, costs per insert and per request), curve "
                        "(a curve recipe's knob values against its probe's seconds and "
                        "counters), scalability (servers x threads of average TPS, "
                        "one table per query type: seed 003)")
    report.add_argument("--range", dest="span", metavar="FROM-TO",
                        help="only this time range (seconds or m:ss from the start), e.g. 60-300")
    report.add_argument("-o", "--output", type=Path, help="write to this file (default stdout)")
    return report


def _add_compare(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """`knobtop compare`: journals, or two time ranges of one, side by side."""
    compare = sub.add_parser(
        "compare", help="compare journals, or two time ranges of one",
        description="Two journals (or ranges): per load phase, median TPS, p95, hit ratio and "
        "dirty % with B/A ratios, and what differs in server version and knob values. Three "
        "or more: their load phases as one table per workload, a row per journal against the "
        "baseline's, with a verdict where phases repeat; on a terminal every journal's graphs "
        "overlaid (up to 5).",
    )
    compare.add_argument("a", type=Path, help="journal A")
    compare.add_argument("b", type=Path, nargs="?", help="journal B (default: A again)")
    compare.add_argument("more", type=Path, nargs="*",
                         help="more journals: their phases as one table, or with --merge "
                         "their recipe results")
    compare.add_argument("--merge", action="store_true",
                         help="recipe journals of one recipe (other servers, other days) as "
                         "one table: a row per journal (and arm), average TPS by threads, "
                         "each against the baseline row with its CI and verdict")
    compare.add_argument("--baseline", type=Path, metavar="JOURNAL",
                         help="with three or more journals, or --merge: the journal the "
                         "others are relative to (default: the first)")
    compare.add_argument("--range-a", metavar="FROM-TO", help="time range of A")
    compare.add_argument("--range-b", metavar="FROM-TO", help="time range of B")
    compare.add_argument("--format", choices=("tui", "text", "md", "csv"), default=None,
                         help="tui: overlaid graphs and tables on screen (default on a "
                         "terminal); text (default when output is not a terminal), md, or csv "
                         "(tables of three or more journals, or --merge)")
    return compare


def _add_run(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """`knobtop run`: an experiment recipe and its results table."""
    run = sub.add_parser(
        "run", help="run an experiment recipe (arms, thread sweep, replicates) and print "
        "the results table",
        description="Run a recipe (TOML, see experiments/) on the sandbox (--lab) or a "
        "profile's server: every arm at every thread count, replicated in a counterbalanced order, "
        "with waits and a steady-state check before each measured step; then a table of "
        "average TPS, spread, latency and verdicts per cell. Ctrl+C aborts and restores the "
        "baseline knobs. Everything goes to the journal.",
    )
    run.add_argument("recipe", type=Path, nargs="?",
                     help="a recipe file, e.g. experiments/doublewrite.toml, or a bundled "
                     "recipe's name, e.g. doublewrite (`knobtop run --list` shows them)")
    run.add_argument("--list", action="store_true",
                     help="list the bundled recipes: description, conditions, duration")
    run.add_argument("--plan", action="store_true",
                     help="print the plan (steps in order, estimated time, warnings) and "
                     "exit, without reaching any server")
    add_experiment_place(run, "a progress panel")
    run.add_argument("--client-tables", choices=("shared", "own"), default="shared",
                     help="a profile with several clients: all on the sbtest tables (shared) "
                     "or each on its own database sbtest_NAME (own)")
    run.add_argument("--replicates", type=int, metavar="N", help="override [run] replicates")
    run.add_argument("--duration", dest="step_duration", type=int, metavar="S",
                     help="override [load] duration (measured seconds per step)")
    run.add_argument("--warmup", type=int, metavar="S", help="override [load] warmup")
    run.add_argument("--threads", dest="step_threads", metavar="LIST",
                     help="override [load] threads, e.g. 4,8")
    run.add_argument("--pause", type=float, metavar="S", help="override [run] pause")
    run.add_argument("--order", metavar="ORDER", help="override [run] order "
                     "(counterbalanced, abba, williams, interleaved, random)")
    run.add_argument("--wait-timeout", type=float, metavar="S",
                     help="override [wait] timeout")
    run.add_argument("--instances", type=int, metavar="N",
                     help="override [load] instances (sysbench processes at once per client; "
                     "threads are their total)")
    run.add_argument("--calibrate", type=int, nargs="?", const=CALIBRATE_ROUNDS, metavar="N",
                     help="first run the baseline arm against itself N times (default "
                     f"{CALIBRATE_ROUNDS}) at each thread count: prints the run-to-run CV and "
                     "the smallest effect the replicates can find at 80%% power")
    run.add_argument("--until-ci", type=float, metavar="W",
                     help="keep adding rounds until every cell's CI is within +-W (e.g. "
                     "0.05), up to --max-replicates")
    run.add_argument("--max-replicates", type=int, metavar="N",
                     help="the cap on rounds for --until-ci")
    run.add_argument("--markdown", type=Path, metavar="FILE",
                     help="also write the results as Markdown to FILE")
    return run


def _add_tune(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """`knobtop tune`: a knob search, then its verification against the baseline."""
    tune = sub.add_parser(
        "tune", help="search knob values for a better objective, then verify the best "
        "against the baseline beyond noise",
        description="Search the knobs of a search file (TOML, see experiments/README.md) on "
        "the sandbox (--lab) or a profile's server: each trial is one measured step (gates, "
        "warmup, plateau, restart with rollback for static knobs); optuna's TPE proposes the "
        "next values. Then the best candidates run against the baseline in counterbalanced "
        "rounds, and the recommendation is the best one whose verdict is 'higher' (or "
        "'lower' latency), or the tune says nothing beat the baseline beyond noise. Ctrl+C "
        "aborts and restores the baseline; --resume continues a killed tune from its "
        "journal without repeating its trials.",
    )
    tune.add_argument("search", type=Path, nargs="?",
                      help="a search file, e.g. experiments/tune/commit-flush.toml, or a "
                      "bundled search's name, e.g. commit-flush (`knobtop tune --list`)")
    tune.add_argument("--list", action="store_true",
                      help="list the bundled searches: description, conditions, duration")
    add_experiment_place(tune, "a trials panel")
    tune.add_argument("--resume", type=Path, metavar="JOURNAL",
                      help="continue the search a killed or interrupted tune journaled "
                      "(its trials are not measured again; a new journal holds them all)")
    tune.add_argument("--trials", type=int, metavar="N", help="override [budget] trials")
    tune.add_argument("--minutes", type=float, metavar="M", help="override [budget] minutes")
    tune.add_argument("--duration", dest="step_duration", type=int, metavar="S",
                      help="override [load] duration (measured seconds per trial and round)")
    tune.add_argument("--warmup", type=int, metavar="S", help="override [load] warmup")
    tune.add_argument("--replicates", type=int, metavar="N",
                      help="override [verify] replicates (rounds of the verification)")
    return tune


def _add_lab(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """`knobtop lab`: the sandbox server and the live screen on it."""
    lab = sub.add_parser(
        "lab",
        help="start a sandbox MariaDB on this machine and open the live screen on it",
        description="Start (or reuse) a private sandbox server from this machine's "
        "mariadbd, load sysbench tables the first time, and open the live screen.",
    )
    sandbox_dir = lab.add_argument("--dir", type=Path, default=None,
                                   help="sandbox directory (default %(lab_dir)s)")
    vars(sandbox_dir)["lab_dir"] = Later(lab_dir)
    add_lab_identity(lab)
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
    return lab


def _add_completion(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
) -> argparse.ArgumentParser:
    """`knobtop completion`: a shell completion script."""
    completion = sub.add_parser(
        "completion", help="print a shell completion script (bash, zsh or fish)",
        description="Print the completion script of every knobtop command and option, "
        "generated from this parser. bash: add `source <(knobtop completion bash)` to "
        "~/.bashrc; zsh: `knobtop completion zsh > \"${fpath[1]}/_knobtop\"`; fish: "
        "`knobtop completion fish > ~/.config/fish/completions/knobtop.fish`.",
    )
    completion.add_argument("shell", choices=SHELLS, help="the shell: bash, zsh or fish")
    return completion


def add_experiment_place(p: argparse.ArgumentParser, panel: str) -> None:
    """`run` and `tune`: the lab or a profile's server, the screen, the journal, SSH."""
    where = p.add_mutually_exclusive_group()  # one is needed to run (finds.need_place)
    where.add_argument("--lab", action="store_true",
                       help="on the sandbox server (knobtop lab); --lab or --profile is "
                       "needed, except with --list or --plan")
    where.add_argument("--profile", metavar="PROFILE", help="on a profile's server")
    p.add_argument("--tui", action="store_true",
                   help=f"run inside the live screen with {panel} (a aborts)")
    p.add_argument("--journal", type=Path, default=None, help="journal file to write")
    p.add_argument("--interval", type=float, default=1.0, help="sampling interval (s)")
    p.add_argument("--dir", type=Path, default=None, help="lab: sandbox directory")
    add_lab_identity(p)
    p.add_argument("--driver", choices=("auto", "sysbench", "builtin"), default="auto",
                   help="lab: load generator")
    p.add_argument("--accept-new", action="store_true", help="trust unknown SSH host keys")
    p.add_argument("--known-hosts", metavar="FILE", help="known_hosts file")
    p.add_argument("-i", "--identity", action="append", default=[], metavar="FILE",
                   help="SSH private key (repeatable)")
    p.add_argument("--ssh-config", metavar="FILE", help="ssh config file, or 'none'")
    add_allow_reach(p, "the variables the file lists under [allow] reach")


def add_allow_reach(p: argparse.ArgumentParser, which: str) -> None:
    p.add_argument("--allow-reach", action="store_true",
                   help=f"let {which} be set although they reach beyond performance (name "
                   "files, open the network, load plugins, run SQL, change logins or start "
                   "writing files); journaled")


def add_lab_identity(p: argparse.ArgumentParser) -> None:
    """--name and --option: named sandboxes inside the lab's directory, each with its own
    base config."""

    def option(text: str) -> tuple[str, str]:
        from knobtop.lab_options import parse_option  # only when given: start-up time
        from knobtop.labdirs import LabError

        try:
            return parse_option(text)
        except LabError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    def storage(text: str) -> object:
        from knobtop.lab_storage import parse_storage  # only when given: start-up time
        from knobtop.labdirs import LabError

        try:
            return parse_storage(text)
        except LabError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    p.add_argument("--storage", type=storage, default=None, metavar="sync=2ms,read=0.5ms",
                   help="lab: emulate slower storage: each fsync/fdatasync (sync) and each "
                   "page read (read) of the sandbox server takes that much longer (strace's "
                   "fault injection; journaled, shown in every header); a running sandbox "
                   "keeps its own")
    p.add_argument("--name", metavar="NAME",
                   help="a named sandbox inside the lab's directory, LAB/labs/NAME (its own "
                   "datadir, port and base config), e.g. --name trx2; with --dir, inside "
                   "that lab (a recipe's lab target NAME is there too)")
    p.add_argument("--option", dest="options", action="append", default=[], type=option,
                   metavar="KEY=VALUE",
                   help="a base my.cnf option of the sandbox (repeatable), exactly a "
                   "performance variable of its server, e.g. innodb_flush_log_at_trx_commit=2;"
                   " replaces a stopped sandbox's options (without it a sandbox keeps its "
                   "own); a running sandbox with other options is refused")


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
    load = p.add_argument("--load", default=default_load, type=workload_arg, metavar="WORKLOAD",
                          help="workload to start with: %(workloads)s, the absolute path "
                          "of a .lua script, or none (default %(default)s)")
    vars(load)["workloads"] = Later(lambda: ", ".join(workloads()))
    p.add_argument("--threads", type=int, default=4, help="sysbench threads (default 4)")
    p.add_argument("--tables", type=int, default=4, help="sysbench tables (default 4)")
    p.add_argument("--table-size", type=int, default=10000,
                   help="rows per sysbench table (default 10000)")
    p.add_argument("--rate", type=int, default=0,
                   help="sysbench --rate: transactions per second in total (default 0 = max)")
    rand_type = p.add_argument("--rand-type", default="uniform",
                               help="sysbench --rand-type (default uniform)")
    rand_type.choices = LaterChoices(rand_types)  # after add_argument, which would read them
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
    add_allow_reach(p, "--set")


SubParsers = argparse._SubParsersAction  # (argparse's own name for what add_parser is on)
#: Each command: the function adding its parser, and its handler's module and function
#: (in the order `knobtop --help` lists them).
COMMANDS: dict[str, tuple[Callable[[SubParsers[argparse.ArgumentParser]],
                                   argparse.ArgumentParser], str, str]] = {
    "connect": (_add_connect, "live", "run_connect"),
    "follow": (_add_follow, "views", "run_follow"),
    "serve": (_add_serve, "views", "run_serve"),
    "replay": (_add_replay, "views", "run_replay"),
    "report": (_add_report, "views", "run_report"),
    "compare": (_add_compare, "views", "run_compare"),
    "run": (_add_run, "finds", "run_command"),
    "tune": (_add_tune, "finds", "tune_command"),
    "lab": (_add_lab, "live", "run_lab"),
    "completion": (_add_completion, "finds", "completion"),
}
