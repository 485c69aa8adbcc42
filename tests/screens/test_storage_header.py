"""The lab's storage emulation in the live screen's header (issue 39 item 9): `knobtop lab
--storage sync=1ms` in a real tmux pane (the real screen and session processes), at 80x24
and at 160x48, says "storage emulated: sync +1 ms" in its status line for as long as it
runs; the same screen of a plain sandbox never does."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.tmux import TmuxServer, open_lab
from knobtop.journal import JournalReader

pytestmark = pytest.mark.integration

SAID = "storage emulated: sync +1 ms"


@pytest.fixture
def pane_lab_dir(tmp_path: Path) -> Path:
    return tmp_path / "lab"  # the tmux fixture stops the sandbox the pane left running


def test_the_status_line_says_the_emulation_at_both_sizes(
        tmux: TmuxServer, tmp_path: Path, pane_lab_dir: Path) -> None:
    journal = tmp_path / "emu.knobtop.jsonl"
    pane = open_lab(tmux, pane_lab_dir, journal, tmp_path, "--storage", "sync=1ms")
    assert tmux.display(pane, "#{window_width}x#{window_height}") == "80x24"
    screen = tmux.wait_for(pane, lambda s: "MariaDB" in s[0], timeout=30,
                           what="the status line")
    assert SAID in screen[0], screen[0]
    tmux.run("resize-window", "-t", pane, "-x", "160", "-y", "48")
    screen = tmux.wait_for(pane, lambda s: len(s) == 48 and "MariaDB" in s[0], timeout=30,
                           what="the screen at 160x48")
    assert SAID in screen[0] and screen[0].index(SAID) < screen[0].index("samples every")
    assert JournalReader(journal).header.server["storage"] == SAID


def test_a_plain_sandbox_says_no_emulation(
        tmux: TmuxServer, tmp_path: Path, pane_lab_dir: Path) -> None:
    journal = tmp_path / "plain.knobtop.jsonl"
    pane = open_lab(tmux, pane_lab_dir, journal, tmp_path)
    screen = tmux.wait_for(pane, lambda s: "MariaDB" in s[0] and "samples every" in s[0],
                           timeout=30, what="the status line")
    assert "storage" not in screen[0]
    assert "storage" not in JournalReader(journal).header.server
