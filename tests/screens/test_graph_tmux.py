"""Graphs that show data first, as users run them (issue 37, item 7): `knobtop lab --load
none` (the screen and the session's process over their socket) in a real tmux pane at 80x24
and 160x48. A knob change's label that does not fit is left out, never cut to `flush_…`; an
idle server's QPS range is not `1.00-1.00` (en dash), and History length reads as the
count it is."""

from __future__ import annotations

import re
import time
from pathlib import Path

import pytest

from harness.tmux import open_lab, pane_server, samples_shown
from knobtop.journal import Change, JournalReader
from knobtop.server.link import ConnectionInfo
from knobtop.ui.widgets.metric_graph import MARKER_GLYPH, RANGE_SEP
from test_quit import set_in_tmux

pytestmark = pytest.mark.integration

KNOB = "innodb_flush_log_at_trx_commit"  # its tag, flush_log_at_trx_cmt=2, is 22 cells



def graph_rows(screen: list[str]) -> list[str]:
    """The graphs' part of the screen: under the status bar, above the panels (80x24) or
    left of them (160x48), above the footer."""
    top = next(i for i, row in enumerate(screen) if "╭─" in row)
    left = screen[top].index("╭─")
    if left > 0:  # the panels stand beside the graphs
        return [row[:left] for row in screen[1:-1]]
    return screen[1:top]


def title_of(screen: list[str], title: str) -> tuple[str, str | None, str | None]:
    """A graph's latest value and its y range's two ends (None when the range is left
    out for room), read from its title row."""
    for row in graph_rows(screen):
        m = re.search(rf"{title} (\S+)(?: +([^\s{RANGE_SEP}]+){RANGE_SEP}(\S+))?", row)
        if m:
            return m[1], m[2], m[3]
    raise AssertionError(f"no {title} title on the screen:\n" + "\n".join(screen))


def check(screen: list[str]) -> None:
    rows = graph_rows(screen)
    # The change's label fits nowhere whole: left out, never cut (it read "flush_log_…").
    assert not any("…" in row for row in rows), "\n".join(rows)
    assert not any("flush_" in row and "flush_log_at_trx_cmt=2" not in row for row in rows)
    check_titles(screen)


def check_titles(screen: list[str]) -> None:
    assert f"1.00{RANGE_SEP}1.00" not in "\n".join(screen)
    qps, lo, hi = title_of(screen, "Server QPS")
    assert lo != hi or lo is None, (qps, lo, hi)
    assert re.fullmatch(r"\d+(\.\d+)?[KM]?", qps) and not qps.endswith(".00"), qps
    history, _, _ = title_of(screen, "History length")
    assert re.fullmatch(r"\d+(\.\d+)?[KM]?", history) and not history.endswith(".00"), history


def test_live_graphs_show_whole_labels_and_sane_ranges_in_tmux(
        tmp_path: Path, lab: tuple[Path, ConnectionInfo]) -> None:
    where, _info = lab
    tmux = pane_server(tmp_path)
    journal = tmp_path / "graphs.knobtop.jsonl"
    try:
        pane = open_lab(tmux, where, journal, tmp_path)
        assert tmux.display(pane, "#{window_width}x#{window_height}") == "80x24"
        tmux.wait_for(pane, lambda s: "MariaDB" in s[0], timeout=30, what="the status line")
        # Idle: the server answers only the sampler, about one question a second.
        screen = tmux.wait_for(pane, lambda s: (samples_shown(s) or 0) >= 10, timeout=60,
                               what="ten samples")
        check_titles(screen)
        set_in_tmux(tmux, pane, KNOB, "2")
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
                isinstance(e, Change) and e.knob == KNOB and e.result == "ok"
                for e in JournalReader(journal)):
            time.sleep(0.2)
        # The change drawn (its line on every graph's time axis at least) with samples on
        # both sides of it.
        first = samples_shown(tmux.capture(pane)) or 0
        screen = tmux.wait_for(
            pane, lambda s: (samples_shown(s) or 0) >= first + 5
            and sum(MARKER_GLYPH in row for row in graph_rows(s)) >= 3,
            timeout=60, what="the change's marker and five more samples")
        check(screen)

        tmux.run("resize-window", "-t", pane, "-x", "160", "-y", "48")
        screen = tmux.wait_for(pane, lambda s: len(s) == 48 and "Host CPU" in "\n".join(s)
                               and sum(MARKER_GLYPH in row for row in graph_rows(s)) >= 3,
                               timeout=60, what="the screen at 160x48")
        check(screen)

        tmux.run("send-keys", "-t", pane, "q")
        tmux.wait_for(pane, lambda s: "Revert (r)" in "\n".join(s), timeout=30,
                      what="the quit dialog")
        tmux.run("send-keys", "-t", pane, "r")
        assert tmux.exit_status(pane, timeout=120) == "0"
    finally:
        tmux.kill()
