"""The ``tmux`` fixture: a tmux server of the test's own for its panes (harness.tmux's
pane_server: tmux defaults except the pane's TERM, no status line, dead panes kept),
killed after the test.

A module whose panes run `knobtop lab --dir tmp_path/lab` overrides ``pane_lab_dir`` with
that directory: after the server (and the lab, if still up, with its pane) is gone, a
sandbox a failed test left running there is stopped."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.tmux import TmuxServer, pane_server
from knobtop.lab import Sandbox


@pytest.fixture
def pane_lab_dir() -> Path | None:
    """The lab directory the tests' panes start sandboxes in, to stop after them (none)."""
    return None


@pytest.fixture
def tmux(tmp_path: Path, pane_lab_dir: Path | None) -> Iterator[TmuxServer]:
    server = pane_server(tmp_path)
    try:
        yield server
    finally:
        server.kill()  # before the leftover lab: the lab, if still up, goes with its pane
        if pane_lab_dir is not None:
            Sandbox(pane_lab_dir).stop()
