"""Quit's "Keep" says what will really happen (issue 37, finding 5), for each place, in a real
tmux pane on the real screen and session processes: a sandbox the session started stops, and
what was set live goes with it (the next session starts from the sandbox's own values, as
checked here), while its drop-in file keeps static values (the next session starts from them
and says so); a sandbox left running keeps them all; a profile's server keeps them, the live
ones until it restarts."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import show_global
from harness.tmux import TmuxServer, pane_server
from knobtop.journal import Change, JournalReader, Knobs, Note
from knobtop.lab import Sandbox
from knobtop.server.link import ConnectionInfo, ServerLink

pytestmark = pytest.mark.integration

LIVE, STATIC = "innodb_io_capacity", "innodb_doublewrite"  # dynamic; static on 10.11



@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[TmuxServer]:
    server = pane_server(tmp_path)
    yield server
    server.kill()


def start(tmux: TmuxServer, cwd: Path, *args: str) -> str:
    """The live screen at 80x24 in a pane of its own; its pane, once the knobs show."""
    name = f"knobtop-{tmux.socket}"
    tmux.new_session(name, "live", 80, 24, [sys.executable, "-m", "knobtop", *args], cwd=cwd)
    pane = f"{name}:live"
    tmux.wait_for(pane, lambda s: "╭─ Knobs" in "\n".join(s), timeout=300,
                  what="the live screen")
    return pane


def first_hit(screen: list[str]) -> str | None:
    rows = [row.strip() for row in screen]
    at = next((i for i, row in enumerate(rows) if row.startswith("🔎")), None)
    return next((row for row in rows[at + 1:] if row), None) if at is not None else None


def set_knob(tmux: TmuxServer, pane: str, journal: Path, knob: str, value: str) -> None:
    """The palette, the knob's dialog, the value, Enter (and for a static knob the restart
    dialog's y), as a person types them; back once the journal has the change."""
    before = len(changes(journal))
    tmux.run("send-keys", "-t", pane, "C-p")
    tmux.wait_for(pane, lambda s: "Search" in "\n".join(s), timeout=30, what="the palette")
    tmux.run("send-keys", "-t", pane, "-l", knob)
    tmux.wait_for(pane, lambda s: first_hit(s) == knob, timeout=30, what=f"{knob} first")
    tmux.run("send-keys", "-t", pane, "Enter")
    tmux.wait_for(pane, lambda s: any(f"Set {knob}" in r for r in s), timeout=30,
                  what=f"the dialog of {knob}")
    tmux.run("send-keys", "-t", pane, "C-u")
    tmux.run("send-keys", "-t", pane, "-l", value)
    tmux.run("send-keys", "-t", pane, "Enter")
    if knob == STATIC:
        tmux.wait_for(pane, lambda s: f"Restart for {knob}" in "\n".join(s), timeout=30,
                      what="the restart dialog")
        tmux.run("send-keys", "-t", pane, "y")
    deadline = time.monotonic() + 120
    while len(changes(journal)) == before and time.monotonic() < deadline:
        time.sleep(0.2)
    assert changes(journal)[before:] == [(knob, value, "ok")]


def changes(journal: Path) -> list[tuple[str, str | None, str]]:
    if not journal.exists():
        return []
    return [(e.knob, e.new, e.result) for e in JournalReader(journal) if isinstance(e, Change)]


def quit_dialog(tmux: TmuxServer, pane: str) -> str:
    """q, and the quit dialog's words as one line (its rows inside the frame, unwrapped)."""
    tmux.run("send-keys", "-t", pane, "q")
    screen = tmux.wait_for(pane, lambda s: "Revert (r)" in "\n".join(s), timeout=60,
                           what="the quit dialog")
    inside = [row[row.index("█") + 1:row.rindex("█")] for row in screen if row.count("█") > 1]
    return " ".join(" ".join(inside).split())


def keep(tmux: TmuxServer, pane: str) -> None:
    tmux.run("send-keys", "-t", pane, "k")
    assert tmux.exit_status(pane, timeout=180) == "0"


def headless(where: Path, journal: Path, *extra: str) -> Path:
    """The next session on the same sandbox, without a screen: the journal it wrote."""
    run = subprocess.run(
        [sys.executable, "-m", "knobtop", "lab", "--dir", str(where), "--headless",
         "--duration", "1", "--load", "none", "--journal", str(journal), *extra],
        capture_output=True, text=True, timeout=300, check=False, stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr
    return journal


def started_from(journal: Path) -> dict[str, str | None]:
    return next(e.values for e in JournalReader(journal) if isinstance(e, Knobs))


def notes(journal: Path) -> list[str]:
    return [e.text for e in JournalReader(journal) if isinstance(e, Note)]


async def set_global(info: ConnectionInfo, name: str, value: int) -> None:
    link = ServerLink(info)
    await link.connect()
    try:
        await link.query(f"SET GLOBAL {name} = %s", (value,))
    finally:
        await link.close()


def test_keep_on_a_sandbox_that_stops_loses_the_live_values_and_says_so(
        tmp_path: Path, tmux: TmuxServer) -> None:
    where = tmp_path / "stops"  # the session starts this sandbox, so it stops it at the end
    journals = where / "journals"
    try:
        first = journals / "lab-1.knobtop.jsonl"
        pane = start(tmux, tmp_path, "lab", "--dir", str(where), "--journal", str(first),
                     "--load", "none")
        set_knob(tmux, pane, first, STATIC, "OFF")
        set_knob(tmux, pane, first, LIVE, "1234")
        said = quit_dialog(tmux, pane)
        assert "Keep: the sandbox stops when this session ends. What was set live goes " \
            f"with it ({LIVE}): the next session starts from the sandbox's own values (lab " \
            "--keep-running keeps it up). Its drop-in file keeps the static ones " \
            f"({STATIC}): the next session starts from them and says so." in said, said
        assert "the next session starts from them and says so" not in said.split(
            "Its drop-in file")[0]  # not of what was set live
        keep(tmux, pane)
        assert Sandbox(where).running_pid() is None
        # What the next session really starts from, and what it says.
        second = headless(where, journals / "lab-2.knobtop.jsonl")
        values = started_from(second)
        assert values[LIVE] == "200" and values[STATIC] == "OFF", values
        differ = [n for n in notes(second) if "differs from the baseline" in n]
        assert len(differ) == 1 and f"{STATIC} = OFF (it started from ON)" in differ[0]
        assert LIVE not in differ[0]
    finally:
        Sandbox(where).stop()


def test_keep_on_a_sandbox_left_running_is_said_by_the_next_session(
        lab: tuple[Path, ConnectionInfo], tmp_path: Path, tmux: TmuxServer) -> None:
    where, info = lab
    journals = where / "journals"  # where the next lab session looks for the last one
    try:
        first = journals / "keep-1.knobtop.jsonl"
        pane = start(tmux, tmp_path, "lab", "--dir", str(where), "--journal", str(first),
                     "--load", "none", "--keep-running")
        set_knob(tmux, pane, first, LIVE, "1234")
        said = quit_dialog(tmux, pane)
        assert "Keep leaves them on the sandbox, which stays up: the next session starts " \
            "from them and says so." in said, said
        keep(tmux, pane)
        assert asyncio.run(show_global(info, LIVE)) == "1234"
        second = headless(where, journals / "keep-2.knobtop.jsonl", "--keep-running")
        assert started_from(second)[LIVE] == "1234"
        assert any(f"{LIVE} = 1234 (it started from 200)" in n for n in notes(second))
    finally:
        asyncio.run(set_global(info, LIVE, 200))


def test_keep_on_a_profiles_server_says_the_live_values_last_until_it_restarts(
        lab: tuple[Path, ConnectionInfo], tmp_path: Path, tmux: TmuxServer) -> None:
    where, info = lab
    profile = tmp_path / "db.toml"
    profile.write_text(f'[target.mysql]\nsocket = "{where / "mysqld.sock"}"\n'
                       f'user = "{info.user}"\npassword = {{ env = "KNOBTOP_TEST_PW" }}\n')
    profile.chmod(0o600)
    tmux.env["KNOBTOP_TEST_PW"] = info.password  # the pane's environment, not its command
    journal = tmp_path / "db.knobtop.jsonl"
    try:
        pane = start(tmux, tmp_path, "connect", str(profile), "--journal", str(journal),
                     "--load", "none")
        set_knob(tmux, pane, journal, LIVE, "1234")
        said = quit_dialog(tmux, pane)
        assert re.search(r"Keep leaves them on the server as they are now: what was set live "
                         rf"\({LIVE}\) until it restarts\.", said), said
        assert "next session" not in said  # a profile's session compares with nothing
        keep(tmux, pane)
        assert asyncio.run(show_global(info, LIVE)) == "1234"
    finally:
        asyncio.run(set_global(info, LIVE, 200))
