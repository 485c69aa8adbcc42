"""Terminal control sequences from journals never reach a terminal raw (issue 36, item 6): a
journal with ESC, OSC, CSI, BEL, C1 and bidi characters in every kind of string field goes
through `knobtop report` (md, csv), `knobtop compare` (text, md, csv) and the journal
readers, run as the `knobtop` console script, and no such byte comes out; the escaped text
(``\\x1b]2;PWNED``) does."""

from __future__ import annotations

import contextlib
import dataclasses
import os
import re
import shlex
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymysql
import pytest
from rich.text import Text

from conftest import kept_globals
from harness.hostile import HOSTILE, JOURNAL, OSC_TITLE, SHOWN, hostile_journal, raw_controls
from harness.tmux import TmuxServer
from harness.ui import until
from knobtop.journal import JournalReader
from knobtop.journal.events import Incident, Note
from knobtop.journal.index import JournalIndex
from knobtop.lab import Sandbox
from knobtop.printable import printable
from knobtop.server.knobtext import show_value
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.ui.app import KnobtopApp

KNOBTOP = str(Path(sys.executable).with_name("knobtop"))


@pytest.fixture(scope="module")
def journals(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """Three hostile journals; the first one's file name holds an OSC too."""
    folder = tmp_path_factory.mktemp("hostile")
    names = [f"1{OSC_TITLE}", "2", "3"]
    return [hostile_journal(folder / f"{name}.knobtop.jsonl", tag=str(n))
            for n, name in enumerate(names, start=1)]


def run(*args: str | Path) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([KNOBTOP, *map(str, args)], capture_output=True, timeout=120,
                          env={**os.environ, "COLUMNS": "200"}, check=False)


@pytest.mark.parametrize("args", [
    ("report", "{a}"),
    ("report", "{a}", "--format", "csv"),
    ("report", "{a}", "--format", "steps-csv"),
    ("compare", "{a}", "{b}", "--format", "text"),
    ("compare", "{a}", "{b}", "--format", "md"),
    ("compare", "{a}", "{b}", "{c}", "--format", "csv"),
    ("compare", "{a}", "{b}", "{c}", "--format", "text"),
    ("compare", "{a}", "{b}", "{c}", "--format", "md"),
    ("compare", "{a}", "{b}", "--merge", "--format", "csv"),
    ("compare", "{a}", "{b}", "--merge", "--format", "text"),
    ("compare", "{a}", "{b}", "--merge", "--format", "md"),
], ids=lambda a: "-".join(x.strip("{}").upper() if x[0] == "{" else x.lstrip("-") for x in a))
def test_report_and_compare_print_no_control_character(journals: list[Path],
                                                       args: tuple[str, ...]) -> None:
    a, b, c = journals
    done = run(*(x.format(a=a, b=b, c=c) for x in args))
    assert done.returncode == 0, done.stderr.decode(errors="replace")
    assert b"Traceback" not in done.stderr
    out = done.stdout + done.stderr
    assert b"\x1b" not in out
    assert raw_controls(out) == []
    if args[0] == "report" and args[2:] != ("--format", "steps-csv"):
        assert SHOWN.encode() in done.stdout  # shown, escaped, not dropped


def test_the_readers_hand_out_every_string_escaped(journals: list[Path]) -> None:
    """What every output reads through (report and compare: JournalReader; replay and
    follow: JournalIndex) holds no control character, header included."""
    reader = JournalReader(journals[0])
    events = list(reader)
    with JournalIndex(journals[0]) as index:
        index.build()
        indexed = index.read(0, len(index))
        assert index.header == reader.header
        assert not [k for k in index.kind_counts() if not k.isprintable()]
    assert indexed == events
    strings = [s for record in (reader.header, *events)
               for s in strings_of(dataclasses.asdict(record))]
    assert len(strings) > 1000
    assert [s for s in strings if not s.replace("\n", "").isprintable()] == []
    assert reader.header.profile.startswith("lab" + SHOWN)
    note = next(e for e in events if isinstance(e, Note))
    assert note.text.startswith(SHOWN)
    incident = next(e for e in events if isinstance(e, Incident))
    assert incident.procs[0][6] == f"SELECT SLEEP(30), '{printable(HOSTILE + '1')}'"


def test_an_error_naming_a_hostile_file_prints_it_escaped(tmp_path: Path) -> None:
    """The command line's error line (cli main, headless: labelled) quotes file names and
    servers' errors."""
    missing = tmp_path / f"x{OSC_TITLE}.knobtop.jsonl"
    done = run("report", missing)
    assert done.returncode == 2
    assert b"\x1b" not in done.stderr and raw_controls(done.stderr) == []
    assert f"x{SHOWN[1:]}.knobtop.jsonl".encode() in done.stderr


def test_knob_values_notices_and_exit_text_are_printable() -> None:
    """What the screen shows that is not a journal event: a server's knob value (the knob
    picker, the quit dialog), a notice quoting an error, the text left on exit."""
    assert show_value("init_connect", f"SET x=1;{OSC_TITLE}") == f"SET x=1;{SHOWN[1:]}"
    assert show_value("innodb_buffer_pool_size", "134217728") == "128M"


async def test_a_notice_and_the_exit_text_are_printable() -> None:
    reader = JournalReader(JOURNAL)
    app = KnobtopApp(header=reader.header, events=list(reader))
    async with app.run_test(size=(80, 24)) as pilot:
        app.notify(f"cannot connect: {HOSTILE}", title=f"t{OSC_TITLE}")
        await until(pilot, lambda: bool(app._notifications))
        notice = next(iter(app._notifications))
        assert notice.message.isprintable() and notice.title.isprintable()
        assert notice.message.startswith(f"cannot connect: {SHOWN}")
        app.exit_saying(f"knobtop: {HOSTILE}")
        [said] = app._exit_renderables
        assert isinstance(said, Text) and said.plain.startswith(f"knobtop: {SHOWN}")
        assert said.plain.isprintable()


def strings_of(value: Any) -> Iterator[str]:
    """Every string in a JSON-like value, dict keys too."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings_of(k)
            yield from strings_of(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from strings_of(v)


# -- a real lab and replay in a real tmux pane --------------------------------------------


def start_in_pane(tmux: TmuxServer, name: str, argv: list[str], cwd: Path,
                  raw: Path) -> str:
    """``argv`` in a new 160x48 pane, every byte it writes to the terminal also appended to
    ``raw`` (pipe-pane is attached before the program starts: it waits for an Enter)."""
    pane = f"{name}:w"
    tmux.new_session(name, "w", 160, 48, ["sh", "-c", 'read go; exec "$@"', "sh", *argv],
                     cwd=cwd)
    tmux.run("pipe-pane", "-o", "-t", pane, f"cat >> {shlex.quote(str(raw))}")
    tmux.run("send-keys", "-t", pane, "Enter")
    return pane


# Textual's own OSC: the mouse pointer's shape (OSC 22).
TEXTUALS_OSC = re.compile(rb"\x1b\]22;[a-z-]*\x07")


def assert_nothing_raw_reached(tmux: TmuxServer, pane: str, raw: Path) -> str:
    """The pane's title is its own, no OSC, BEL or C1 character from the text reached the
    terminal (every byte the program wrote is in ``raw``); returns the screen as shown."""
    written = TEXTUALS_OSC.sub(b"", raw.read_bytes())
    assert b"\x1b]" not in written and b"\x07" not in written, "an OSC reached the pane"
    assert not [c for c in written.decode(errors="replace") if "\x80" <= c <= "\x9f"]
    assert "PWNED" not in tmux.display(pane, "#{pane_title}")
    with_escapes = "\n".join(tmux.capture(pane, escapes=True))
    assert "\x1b]" not in with_escapes and "\x07" not in with_escapes
    return flat("".join(tmux.capture(pane)))


def flat(text: str) -> str:
    """``text`` without whitespace: what a wrapped line and its parts have in common."""
    return "".join(text.split())


@pytest.mark.integration
def test_replay_of_a_hostile_journal_in_tmux_shows_escapes(
        tmp_path: Path, tmux: TmuxServer, journals: list[Path]) -> None:
    raw = tmp_path / "pane.raw"
    # At the hostile events (just after the first change, 25 s in), then its incident page.
    pane = start_in_pane(tmux, f"replay-{tmux.socket}",
                         [KNOBTOP, "replay", str(journals[0]), "--at", "26"], tmp_path, raw)
    tmux.wait_for(pane, lambda s: "Knobs" in "\n".join(s), timeout=60, what="the replay")
    shown = assert_nothing_raw_reached(tmux, pane, raw)
    # The status bar's workload, the knob panel's knob and the journal pane, escaped.
    assert f"oltp_read_write{SHOWN}" in shown and f"evil{SHOWN}" in shown
    tmux.run("send-keys", "-t", pane, "4")
    tmux.wait_for(pane, lambda s: "SLEEP(30)" in "\n".join(s), timeout=30,
                  what="the incident page")
    shown = assert_nothing_raw_reached(tmux, pane, raw)
    assert flat(f"SELECT SLEEP(30), '{SHOWN}") in shown
    tmux.run("send-keys", "-t", pane, "q")
    assert tmux.exit_status(pane, timeout=30) == "0"


USER = f"U{OSC_TITLE}"  # a user name that lands in error.log on a failed login
USER_SHOWN = "U\\x1b]2;PWNED\\x07"


def _sleep_with_escapes(info: ConnectionInfo, started: threading.Event,
                        ids: list[int]) -> None:
    conn = pymysql.connect(host=info.host, port=info.port, user=info.user,
                           password=info.password)
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT CONNECTION_ID()")
            ids.append(cur.fetchone()[0])
            started.set()
            with contextlib.suppress(pymysql.err.OperationalError):  # KILL QUERY at the end
                cur.execute(f"SELECT SLEEP(30), 'A{OSC_TITLE}'")
    finally:
        conn.close()


@pytest.mark.integration
async def test_a_statement_and_a_log_line_with_escapes_never_reach_the_lab_pane(
        tmp_path: Path, tmux: TmuxServer, mariadb: Sandbox,
        mariadb_info: ConnectionInfo) -> None:
    """Issue 36 reproduction 5: any database user's `SELECT SLEEP(30), 'A<ESC>]2;PWNED<BEL>'`
    and a failed login whose user name carries an escape (it lands in error.log) changed the
    pane title of a DBA watching the incident page of `knobtop lab`."""
    async with kept_globals(mariadb_info, "log_warnings"):
        link = ServerLink(mariadb_info)
        await link.connect()
        try:
            await link.query("SET GLOBAL log_warnings = 4")  # logs 'Access denied' lines
        finally:
            await link.close()
        with pytest.raises(pymysql.err.OperationalError, match="Access denied"):
            pymysql.connect(host=mariadb_info.host, port=mariadb_info.port,
                            user=USER, password="wrong")
        assert USER.encode() in mariadb.error_log.read_bytes()
        started, ids = threading.Event(), []
        sleeper = threading.Thread(target=_sleep_with_escapes,
                                   args=(mariadb_info, started, ids), daemon=True)
        sleeper.start()
        try:
            assert started.wait(30)
            journal = tmp_path / "lab.knobtop.jsonl"
            raw = tmp_path / "pane.raw"
            # The shared sandbox joined (it stays up), exactly as a person runs the lab.
            pane = start_in_pane(tmux, f"lab-{tmux.socket}", [
                KNOBTOP, "lab", "--dir", str(mariadb.root), "--journal", str(journal),
                "--load", "none"], tmp_path, raw)
            tmux.wait_for(pane, lambda s: "╭─ Knobs" in "\n".join(s), timeout=120,
                          what="the live screen")
            tmux.run("send-keys", "-t", pane, "4")
            screen = tmux.wait_for(
                pane, lambda s: "SLEEP(30)" in "\n".join(s) and "Access denied" in "\n".join(s),
                timeout=60, what="the incident page with the statement and the log line")
            shown = assert_nothing_raw_reached(tmux, pane, raw)
            assert flat(f"SELECT SLEEP(30), '{SHOWN}'") in shown, "\n".join(screen)
            assert flat(f"user '{USER_SHOWN}'@") in shown, "\n".join(screen)
            tmux.run("send-keys", "-t", pane, "q")
            assert tmux.exit_status(pane, timeout=60) == "0"
        finally:
            if ids:
                link = ServerLink(mariadb_info)
                await link.connect()
                try:
                    await link.query(f"KILL QUERY {ids[0]}")
                finally:
                    await link.close()
            sleeper.join(30)
    # The journal holds what the screen showed: the escaped text, no control character.
    written = journal.read_bytes()
    assert b"\\u001b" not in written and b"\\u0007" not in written
    incidents = [e for e in JournalReader(journal) if isinstance(e, Incident)]
    assert any(str(p[6]).endswith(f"SLEEP(30), '{SHOWN}'") for e in incidents for p in e.procs)
    assert any(f"user '{USER_SHOWN}'@" in line for e in incidents for line in e.log)
