"""`u` on the live screen as users run it (issue 37, item 1): the screen and the session's
process over their socket, in a real tmux pane. The screen's copy of the last change crossed
the process boundary, so the session must know it by value: `u` puts the value back."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from conftest import show_global
from harness.tmux import first_hit, open_lab, pane_server
from knobtop.journal import Change, JournalReader
from knobtop.server.link import ConnectionInfo

pytestmark = pytest.mark.integration


def changes(journal: Path) -> list[tuple[str, str | None, str, str]]:
    if not journal.exists():
        return []
    return [(e.knob, e.new, e.result, e.reason) for e in JournalReader(journal)
            if isinstance(e, Change)]


def wait_changes(journal: Path, count: int) -> list[tuple[str, str | None, str, str]]:
    deadline = time.monotonic() + 30
    while len(changes(journal)) < count and time.monotonic() < deadline:
        time.sleep(0.2)
    return changes(journal)


def test_u_undoes_the_last_change_on_the_live_screen(
        tmp_path: Path, lab: tuple[Path, ConnectionInfo]) -> None:
    where, info = lab
    before = asyncio.run(show_global(info, "innodb_io_capacity"))
    tmux = pane_server(tmp_path)
    journal = tmp_path / "undo.knobtop.jsonl"
    try:
        pane = open_lab(tmux, where, journal, tmp_path)
        tmux.run("send-keys", "-t", pane, "C-p")
        tmux.wait_for(pane, lambda s: "Search" in "\n".join(s), timeout=30, what="the palette")
        tmux.run("send-keys", "-t", pane, "-l", "innodb_io_capacity")
        tmux.wait_for(pane, lambda s: first_hit(s) == "innodb_io_capacity", timeout=30,
                      what="innodb_io_capacity first in the palette")
        tmux.run("send-keys", "-t", pane, "Enter")
        tmux.wait_for(pane, lambda s: any("Set innodb_io_capacity" in r and "_max" not in r
                                          for r in s), timeout=30, what="the knob dialog")
        tmux.run("send-keys", "-t", pane, "C-u")
        tmux.run("send-keys", "-t", pane, "-l", "1000")
        tmux.run("send-keys", "-t", pane, "Enter")
        assert wait_changes(journal, 1) == [("innodb_io_capacity", "1000", "ok", "")]
        assert asyncio.run(show_global(info, "innodb_io_capacity")) == "1000"
        tmux.wait_for(pane, lambda s: "Set innodb_io_capacity" not in "\n".join(s),
                      timeout=30, what="the dialog closing")
        tmux.run("send-keys", "-t", pane, "u")
        assert wait_changes(journal, 2)[1] == ("innodb_io_capacity", before, "ok", "undo")
        assert asyncio.run(show_global(info, "innodb_io_capacity")) == before
        screen = "\n".join(tmux.capture(pane))
        assert "not the one you confirmed" not in screen
        tmux.run("send-keys", "-t", pane, "q")
        assert tmux.exit_status(pane, timeout=120) == "0"
    finally:
        tmux.kill()
