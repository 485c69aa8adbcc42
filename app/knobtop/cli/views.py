"""The commands over journals, no server needed: follow, serve, replay, report, compare."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from knobtop.errors import BadValue

if TYPE_CHECKING:
    from collections.abc import Iterator

    from rich.console import Console

    from knobtop.analysis.replay import Replay
    from knobtop.config import UiConfig
    from knobtop.ui.app import KnobtopApp


def stderr_console() -> Console:
    """Where knobtop speaks: stderr, each message a whole line in logs (no wrapping).

    Emoji codes stay as written: a server's or a file's ``:x:`` is text, not an emoji (and
    Rich's table of 3,600 codes, about 1 MB, stays unloaded in the session's process)."""
    from rich.console import Console

    return Console(stderr=True, soft_wrap=True, emoji=False)


def ui_config() -> UiConfig:
    """The person's config file, its key remapping checked against every binding id
    (a ConfigError names the file, the key and the fix before any screen opens).  The
    keymap imports every app (replay, compare and their analysis modules, ~3 MB): only a
    config that remaps keys pays for it."""
    from knobtop.config import load_config

    config = load_config()
    if config.keys:
        from knobtop.ui.keymap import binding_ids, check_keymap

        check_keymap(config.keys, binding_ids(), str(config.path))
    return config


def following_app(path: Path, history: float, folder: Path | None = None) -> KnobtopApp:
    """The live screen over a journal being written: its knob state from the start,
    the last ``history`` seconds of events, then whatever is appended (with ``folder``:
    then the newer journals that appear there)."""
    import time

    from knobtop.journal.events import Error
    from knobtop.journal.follow import JournalFollower
    from knobtop.journal.follow_dir import DirectoryFollower
    from knobtop.journal.index import JournalIndex
    from knobtop.ui.app import KnobtopApp

    index = JournalIndex(path)
    index.build()
    lo, hi = index.t_range or (0.0, 0.0)
    # knob values from the start: snapshots, knobtop's changes and those made outside it
    early = sorted({i for kind in ("knobs", "change", "outside") for i in index.lines_of(kind)})
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
            raise BadValue("give the journal to follow (a *.knobtop.jsonl file or a folder "
                             "of them), or --latest for the newest one in the lab's journals "
                             "folder")
        from knobtop.lab import default_lab_dir

        folder = default_lab_dir() / "journals"
        if not folder.is_dir():
            raise BadValue(f"{folder}: no lab journals folder yet (start `knobtop lab` "
                             "first, or give the folder to follow: knobtop follow --latest DIR)")
        return folder
    path = path.expanduser()
    if path.is_dir():
        return path
    if not path.exists():
        raise BadValue(f"{path}: no such file or folder (give a *.knobtop.jsonl journal, or "
                         "a folder of them)")
    if latest:
        raise BadValue(f"{path} is a file; --latest follows the newest journal in a folder: "
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
        raise BadValue(f"--host {host}: cannot resolve it ({exc.strerror or exc})") from None
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
                raise BadValue(
                    f"cannot listen on {host} port {port}: {exc.strerror or exc} "
                    "(choose another with --port)"
                ) from None


def run_serve(args: argparse.Namespace) -> int:
    """`knobtop serve JOURNAL`: `knobtop follow JOURNAL` in browsers, via textual-serve."""

    from knobtop.journal.reader import JournalReader

    path = follow_target(args.journal, args.latest)
    header = None  # a folder: each viewer follows its newest journal
    if not path.is_dir():
        if not path.is_file():
            raise BadValue(f"{path}: not a file (give a *.knobtop.jsonl journal)")
        header = JournalReader(path).header  # a JournalFormatError names the file and line
    else:
        try:
            next(path.iterdir(), None)
        except OSError as exc:
            raise BadValue(f"{path}: cannot read this folder ({exc.strerror or exc}); "
                             "give a folder of journals you can read") from None
    if not 1 <= args.port <= 65535:
        raise BadValue(f"--port {args.port}: choose a port between 1 and 65535")
    if args.history <= 0:
        raise BadValue(f"--history {args.history:g}: give a number of seconds above 0")
    if args.max_viewers < 1:
        raise BadValue(f"--max-viewers {args.max_viewers}: give 1 or more")
    if not is_loopback_host(args.host) and not args.public:
        raise BadValue(
            f"--host {args.host} is not a loopback address: anyone who can reach port "
            f"{args.port} there would watch this session (server, knob values, notes) "
            "without a password. Serve on 127.0.0.1 (the default), or add --public if "
            "that is what you want."
        )
    check_port_free(args.host.strip("[]"), args.port)  # --host '[::1]': the address inside

    from knobtop.ui.serve import serve_follow

    serve_follow(path, header, host=args.host, port=args.port, public=args.public,
                 public_url=args.public_url, history=args.history, console=stderr_console(),
                 max_viewers=args.max_viewers)
    return 0


def replay_for(path: Path, at: str | None = None, speed: float = 1.0) -> Replay:
    """A Replay over ``path`` whose index builds in the background; the first chunk is
    indexed before this returns (so the first frame has data), the rest keeps coming."""
    from knobtop.analysis.replay import SPEEDS, Replay
    from knobtop.analysis.times import parse_time
    from knobtop.journal.index import JournalIndex

    if speed not in SPEEDS:
        raise BadValue(f"--speed {speed:g}: choose one of {', '.join(f'{s:g}' for s in SPEEDS)}")
    index = JournalIndex(path)
    # The first chunk is all the first frame needs; the rest is indexed once it is
    # painted (ReplayApp says go_ahead), not while the screen starts.
    index.build_in_background(hold=at is None)
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
    from knobtop.analysis.journaldata import load_journal
    from knobtop.analysis.report import csv_stream, markdown_report, steps_csv
    from knobtop.analysis.times import parse_range

    t_from, t_to = parse_range(args.span) if args.span else (None, None)
    if args.format == "csv" and not args.table:  # written as it is read (issue 41)
        return write_stream(csv_stream(args.journal, t_from, t_to), args.output)
    data = load_journal(args.journal, t_from=t_from, t_to=t_to)
    if args.table:
        from knobtop.analysis.report import seed_tables

        if args.format == "steps-csv":
            raise BadValue("--table prints one table as md or csv: drop --format steps-csv")
        text = seed_tables(data, args.table, args.format)
    else:
        formats = {"md": markdown_report, "steps-csv": steps_csv}  # csv: streamed above
        text = formats[args.format](data)
    if args.output:
        args.output.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


def write_stream(lines: Iterator[str], output: Path | None) -> int:
    """Each line out as it comes: to stdout, or to ``output`` through a ``.part`` file beside
    it that takes its name once the last line is in (a journal found bad halfway leaves
    ``output`` as it was)."""
    if output is None:
        for n, line in enumerate(lines):
            sys.stdout.write(line)
            if n == 0:
                sys.stdout.flush()  # the column names at once, the rest as the buffer fills
        return 0
    part = output.with_name(output.name + ".part")
    try:
        with part.open("w") as fh:
            fh.writelines(lines)
        part.replace(output)
    finally:
        part.unlink(missing_ok=True)
    return 0


def baseline_index(args: argparse.Namespace, paths: list[Path]) -> int:
    """Which of the journals is --baseline (by path or label; the first without it)."""
    from knobtop.analysis.merge import label_of

    if args.baseline is None:
        return 0
    matches = [i for i, p in enumerate(paths)
               if p == args.baseline or label_of(p) == str(args.baseline)]
    if not matches:
        raise BadValue(f"--baseline {args.baseline} is not one of the journals given")
    return matches[0]


def compare_phases(args: argparse.Namespace) -> int:
    """`knobtop compare A B C ...` (plain journals, issue 19 part 4): their load phases as
    one verdict table per workload, a row per journal against the baseline's."""
    from knobtop.analysis.journaldata import load_journal
    from knobtop.analysis.merge import label_of, merge_phases
    from knobtop.analysis.report import server_label
    from knobtop.analysis.seedtables import SeedTable, sweep
    from knobtop.analysis.times import fmt_utc

    paths = [p for p in (args.a, args.b, *args.more) if p is not None]
    if args.range_a or args.range_b:
        raise BadValue("--range-a/--range-b compare two parts of one or two journals: give "
                       "at most two journals with them")
    base = baseline_index(args, paths)
    datas = [(label_of(p), load_journal(p)) for p in paths]
    tables = merge_phases(datas, base)
    setup = SeedTable(
        title="journals", header=["journal", "server", "started", "load phases"],
        rows=[[label, server_label(d.header), fmt_utc(d.header.started_wall, True),
               str(len(d.phases))] for label, d in datas],
        csv_header=[], csv_rows=[])
    out: list[SeedTable] = [setup]
    for workload, results in tables.items():
        table = sweep(results)
        table.header[0] = "journal"
        if not any(c.arm == results.baseline for c in results.cells.values()):
            table.notes.append(f"{results.baseline} ran no {workload} phase: ratios need "
                               "another --baseline.")
        table.title = (f"{workload}: median load TPS per phase by journal and client threads, "
                       f"relative to {results.baseline}")
        table.notes[:0] = ["One load phase is one run (its median TPS); a journal with two or "
                       "more phases of a workload and thread count gets a verdict against the "
                       "baseline's (bootstrap CI and rank test, Holm across the table); one "
                       "phase each gives the ratio only."]
        out.append(table)
    fmt = args.format or ("tui" if sys.stdout.isatty() else "text")
    if fmt == "tui":
        from knobtop.ui.compare_many import ManyCompareApp, ManyComparison
        from knobtop.ui.widgets.metric_graph import MAX_SERIES

        if len(datas) > MAX_SERIES:
            raise BadValue(f"{len(datas)} journals: the compare screen overlays up to "
                           f"{MAX_SERIES}; use --format text or md for more")
        order = [datas[base], *(d for i, d in enumerate(datas) if i != base)]
        app = ManyCompareApp(ManyComparison(order, tables), config=ui_config())
        app.run()
        return app.return_code or 0
    if len(out) == 1:
        raise BadValue("none of the journals has a load phase with a TPS to compare (recipe "
                       "journals: add --merge for their results as one table)")
    if fmt == "csv":
        import csv
        import io

        buf = io.StringIO()  # one table: a workload column before the merge's columns
        writer = csv.writer(buf, lineterminator="\n")
        tables_by = list(zip(tables, out[1:], strict=True))
        writer.writerow(["workload", *tables_by[0][1].csv_header])
        for workload, table in tables_by:
            writer.writerows([workload, *row] for row in table.csv_rows)
        sys.stdout.write(buf.getvalue())
    elif fmt == "md":
        sys.stdout.write("\n".join(t.markdown() for t in out))
    else:
        from rich.console import Console

        console = Console()
        for table in out:
            console.print(table.rich())
    return 0


def merge_journals(args: argparse.Namespace) -> int:
    """`knobtop compare A B C ... --merge`: recipe journals as one verdict table."""
    from knobtop.analysis.journaldata import load_journal
    from knobtop.analysis.merge import label_of, merge_runs
    from knobtop.analysis.seedtables import sweep

    paths = [p for p in (args.a, args.b, *args.more) if p is not None]
    if args.range_a or args.range_b:
        raise BadValue("--merge takes whole recipe journals: drop --range-a/--range-b")
    base = baseline_index(args, paths)
    merged = merge_runs([(label_of(p), load_journal(p).recipe_events) for p in paths], base)
    table = sweep(merged)
    table.title = f"{merged.recipe}: average TPS by journal and client threads, relative to " \
                  f"{merged.baseline}"
    fmt = args.format or "text"
    if fmt == "csv":
        sys.stdout.write(table.csv())
    elif fmt == "md":
        sys.stdout.write(table.markdown())
    else:
        from rich.console import Console

        Console().print(table.rich())
    return 0


def run_compare(args: argparse.Namespace) -> int:
    if args.merge:
        return merge_journals(args)
    if args.more:
        return compare_phases(args)
    from knobtop.analysis.compare import compare, comparison_markdown, comparison_text
    from knobtop.analysis.journaldata import load_journal
    from knobtop.analysis.times import parse_range

    if args.format == "csv":
        raise BadValue("--format csv is for --merge (recipe journals as one table)")
    span_a = parse_range(args.range_a) if args.range_a else (None, None)
    span_b = parse_range(args.range_b) if args.range_b else (None, None)
    if args.b is None and not (args.range_a or args.range_b):
        raise BadValue("give journal B, or --range-a/--range-b to compare parts of A")
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
        from rich.console import Console

        Console().print(comparison_text(result))
    return 0
