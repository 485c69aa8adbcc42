"""Pairing over tmux: a real `knobtop lab` in a tmux pane of exactly 80x24 (TERM
screen-256color, tmux's default escape-time), resized to 160x48 and back, with a second
window running `knobtop follow` on its journal; `q` ends it and stops the sandbox."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path

import pytest
from rich.cells import cell_len

from harness.binaries import require_binary
from harness.cli import knobtop_argv as knobtop
from harness.tmux import TmuxServer, samples_shown
from knobtop.journal import Change, End, JournalReader, Sample
from knobtop.journal.events import Note
from knobtop.lab import Sandbox

pytestmark = pytest.mark.integration

GRAPH_TITLES = ("Server TPS", "BP hit ratio", "Dirty pages")
PANELS = (*GRAPH_TITLES, "╭─ Knobs", "╭─ Journal")
NOTE = "paired in tmux"
PROMPT = "Note for the journal"
HOSTS_TITLE = "╭─ Hosts"  # the Hosts panel is shown from 120 columns up
LAG = re.compile(r"following, ([\d.]+) s")  # "behind" may not fit


# tmux: the shared fixture (harness.tmux_fixture), a server of the test's own: tmux defaults
# except the pane's TERM, no status line (so the pane is the whole 80x24), dead panes kept
# to read their exit status; escape-time is left at tmux's default on purpose.
@pytest.fixture
def pane_lab_dir(tmp_path: Path) -> Path:
    """If the lab did not stop its server (a failed test), the tmux fixture stops it there
    (after killing the panes)."""
    return tmp_path / "lab"


def fits(screen: list[str], width: int, height: int) -> None:
    assert len(screen) == height, f"{len(screen)} rows, not {height}"
    wide = [row for row in screen if cell_len(row) > width]
    assert not wide, f"rows wider than {width} columns: {wide}"


def mariadbd_for(config: Path) -> list[int]:
    """Live mariadbd processes started with this sandbox's my.cnf."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if "mariadbd" in cmd and str(config) in cmd and state != "Z":
            found.append(int(pid))
    return found


def test_lab_in_tmux_at_80x24_resized_and_followed(
    tmp_path: Path, tmux: TmuxServer, sysbench_path: str
) -> None:
    require_binary("mariadbd", "mariadb-server")
    lab_dir = tmp_path / "lab"
    journal = tmp_path / "lab.knobtop.jsonl"
    session = f"knobtop-{tmux.socket}"
    lab, follow = f"{session}:lab", f"{session}:follow"
    tmux.new_session(session, "lab", 80, 24, knobtop(
        "lab", "--dir", str(lab_dir), "--journal", str(journal),
        "--threads", "1", "--tables", "1", "--table-size", "1000",
    ), cwd=tmp_path)

    # What is under test: tmux's default escape-time, a 256-colour TERM, an 80x24 pane.
    assert tmux.run("show-options", "-sv", "escape-time").strip() == "500"
    assert tmux.display(lab, "#{window_width}x#{window_height}") == "80x24"
    environ = Path(f"/proc/{tmux.display(lab, '#{pane_pid}')}/environ").read_bytes()
    assert b"TERM=screen-256color\0" in environ and b"COLORTERM=" not in environ

    # A fresh sandbox: mariadb-install-db, the sysbench table, then the screen (bounded).
    screen = tmux.wait_for(
        lab, lambda s: "MariaDB" in s[0] and all(t in "\n".join(s) for t in PANELS),
        timeout=300, what="the live screen at 80x24 (status bar, graphs, knobs, journal)",
    )
    fits(screen, 80, 24)
    assert HOSTS_TITLE not in "\n".join(screen)
    # Only 256-colour SGR codes: nothing relies on truecolor (38;2 / 48;2).
    coloured = "\n".join(tmux.capture(lab, escapes=True))
    assert "\x1b[38;5;" in coloured
    assert not re.search(r"\x1b\[[0-9;]*[34]8;2;", coloured), "truecolor escape in the pane"

    # Keys typed by a person: a client attached on an 80x24 pty, so Escape goes through
    # tmux's escape-time (500 ms: tmux holds a lone ESC that long before passing it on).
    client = tmux.attach(session, 80, 24, term="xterm-256color")
    client.type(b"n")
    tmux.wait_for(lab, lambda s: PROMPT in "\n".join(s), timeout=30, what="the note prompt")
    pressed = time.monotonic()
    client.type(b"\x1b")
    tmux.wait_for(lab, lambda s: PROMPT not in "\n".join(s), timeout=30,
                  what="Escape closing the note prompt")
    assert time.monotonic() - pressed >= 0.45  # it did go through tmux's escape-time
    client.type(b"n")
    tmux.wait_for(lab, lambda s: PROMPT in "\n".join(s), timeout=30, what="the note prompt")
    client.type(NOTE.encode() + b"\r")
    screen = tmux.wait_for(lab, lambda s: NOTE in "\n".join(s) and PROMPT not in "\n".join(s),
                           timeout=30, what="the note in the journal pane")
    assert any("✎ " + NOTE in row for row in screen)
    assert tmux.display(lab, "#{window_width}x#{window_height}") == "80x24"
    client.close()
    assert [e.text for e in JournalReader(journal) if isinstance(e, Note)] == [NOTE]

    # Wider: the side column with the Hosts panel, every row within 160 columns.
    tmux.run("resize-window", "-t", lab, "-x", "160", "-y", "48")
    screen = tmux.wait_for(lab, lambda s: len(s) == 48 and HOSTS_TITLE in "\n".join(s),
                           timeout=30, what="the wide layout at 160x48")
    fits(screen, 160, 48)
    assert all(t in "\n".join(screen) for t in GRAPH_TITLES)
    assert "✎ " + NOTE in "\n".join(screen)

    # A second window follows the journal: the same server and the same samples.
    started = time.monotonic()
    tmux.new_window(session, "follow", knobtop("follow", str(journal)), cwd=tmp_path)
    tmux.run("resize-window", "-t", follow, "-x", "160", "-y", "48")
    tmux.wait_for(follow, lambda s: "following" in s[0], timeout=60, what="follow's state")
    shown: list[tuple[int | None, int | None, str]] = []

    def same_samples(s: list[str]) -> bool:
        mine = samples_shown(tmux.capture(lab))
        theirs = samples_shown(s)
        lag = LAG.search(s[0])
        shown.append((mine, theirs, lag.group(1) if lag else "?"))
        return mine is not None and mine == theirs and lag is not None and float(
            lag.group(1)) <= 2.0

    screen = tmux.wait_for(follow, same_samples, timeout=60,
                           what="the lab's sample count in the follow window")
    caught_up = time.monotonic() - started
    assert screen[0].split()[:2] == tmux.capture(lab)[0].split()[:2]  # "MariaDB x.y"
    fits(screen, 160, 48)
    print(f"follow showed the lab's sample count {caught_up:.1f} s after it started; "
          f"(lab, follow, lag) polls: {shown[-5:]}")

    # Back to 80x24: the narrow layout again, nothing wider than the pane.
    tmux.run("resize-window", "-t", lab, "-x", "80", "-y", "24")
    screen = tmux.wait_for(lab, lambda s: len(s) == 24 and HOSTS_TITLE not in "\n".join(s)
                           and all(t in "\n".join(s) for t in PANELS),
                           timeout=30, what="the narrow layout back at 80x24")
    fits(screen, 80, 24)
    assert "Knobs" in "\n".join(screen) and "Journal" in "\n".join(screen)
    tmux.run("resize-window", "-t", follow, "-x", "80", "-y", "24")
    screen = tmux.wait_for(follow, lambda s: len(s) == 24 and HOSTS_TITLE not in "\n".join(s),
                           timeout=30, what="follow's narrow layout")
    fits(screen, 80, 24)
    assert LAG.search(screen[0]), screen[0]  # at 80 columns too it says it follows, and how far

    # q: the lab ends, its sandbox server stops, the journal ends with `end`.
    tmux.run("send-keys", "-t", lab, "q")
    assert tmux.exit_status(lab, timeout=120) == "0"
    assert Sandbox(lab_dir).running_pid() is None
    assert mariadbd_for(lab_dir / "my.cnf") == []
    events = list(JournalReader(journal))
    assert isinstance(events[-1], End) and events[-1].reason == "quit"
    total = sum(isinstance(e, Sample) for e in events)

    # The follower reaches the end of the journal; q closes it too.
    tmux.run("resize-window", "-t", follow, "-x", "160", "-y", "48")
    tmux.wait_for(follow, lambda s: samples_shown(s) == total and "load stopped" in s[0]
                  and "ended: quit" in s[0],
                  timeout=30, what=f"{total} samples, the stopped load and the end in follow")
    tmux.run("send-keys", "-t", follow, "q")
    assert tmux.exit_status(follow, timeout=30) == "0"


def test_a_typed_burst_in_the_knob_dialog_applies_what_was_typed(
    tmp_path: Path, tmux: TmuxServer
) -> None:
    """`send-keys BSpace 1 0 0 0 Enter` in one burst, as the issue's user typed it: the
    value applied is 1000 (before the fix, the backspace ran last and applied 100)."""
    require_binary("mariadbd", "mariadb-server")
    lab_dir = tmp_path / "lab"
    journal = tmp_path / "keys.knobtop.jsonl"
    session = f"knobtop-{tmux.socket}"
    lab = f"{session}:lab"
    tmux.new_session(session, "lab", 80, 24, knobtop(
        "lab", "--dir", str(lab_dir), "--journal", str(journal), "--load", "none",
    ), cwd=tmp_path)
    tmux.wait_for(lab, lambda s: "MariaDB" in s[0] and "╭─ Knobs" in "\n".join(s),
                  timeout=300, what="the live screen")
    tmux.run("send-keys", "-t", lab, "C-p")
    tmux.wait_for(lab, lambda s: "Search" in "\n".join(s), timeout=30, what="the palette")
    tmux.run("send-keys", "-t", lab, "-l", "innodb_io_capacity")

    def first_hit(screen: list[str]) -> str | None:
        """The palette's first option under its search line (before the search answers,
        it lists the seed knobs: Enter then would pick the first of those)."""
        rows = [row.strip() for row in screen]
        at = next((i for i, row in enumerate(rows) if row.startswith("🔎")), None)
        return next((row for row in rows[at + 1:] if row), None) if at is not None else None

    tmux.wait_for(lab, lambda s: first_hit(s) == "innodb_io_capacity",
                  timeout=30, what="innodb_io_capacity first in the palette")
    tmux.run("send-keys", "-t", lab, "Enter")
    tmux.wait_for(lab, lambda s: any("Set innodb_io_capacity" in row
                                     and "_max" not in row for row in s),
                  timeout=30, what="the knob dialog for innodb_io_capacity")
    tmux.run("send-keys", "-t", lab, "BSpace", "1", "0", "0", "0", "Enter")
    tmux.wait_for(lab, lambda s: "Set innodb_io_capacity" not in "\n".join(s),
                  timeout=30, what="the dialog closing")

    def applied() -> list[tuple[str, str | None, str]]:
        return [(e.knob, e.new, e.result) for e in JournalReader(journal)
                if isinstance(e, Change)]

    deadline = time.monotonic() + 30
    while not applied() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert applied() == [("innodb_io_capacity", "1000", "ok")]
    tmux.run("send-keys", "-t", lab, "q")
    # The changed knob is listed at quit; Enter reverts it in the lab.
    tmux.wait_for(lab, lambda s: "Revert (r)" in "\n".join(s), timeout=30,
                  what="the quit dialog")
    tmux.run("send-keys", "-t", lab, "Enter")
    assert tmux.exit_status(lab, timeout=120) == "0"
    assert applied()[-1][1:] == ("200", "ok")
