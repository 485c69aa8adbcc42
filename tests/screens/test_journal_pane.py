"""The journal pane in time order, without no-op entries (issue 37, items 9/10): a static
change is journaled when done, stamped with its start, after the `sampling paused` its
restart caused; the pane lists the change first. A change that changed nothing (a revert's
`io_capacity_max=10000 (was 10000)`) is journaled, not listed. At 80x24 and 160x48."""

from __future__ import annotations

import pytest

from harness.ui import until
from knobtop.journal import Change, Event, Header
from knobtop.journal.events import Error
from knobtop.ui.app import KnobtopApp
from knobtop.ui.widgets.journal_pane import JournalPane
from test_graph_data_first import SIZES, recorded


def restart_then_change(header: Header, events: list[Event], same_moment: bool) -> list[Event]:
    """A static change at 30 s as the session journals it: the sampler's pause (during the
    restart) first, then the change, stamped with its start; then a revert whose side
    effect was already back (a no-op change, io_capacity_max 10000 -> 10000)."""
    wall = header.started_wall
    t_change = 30.0
    t_pause = t_change if same_moment else 30.6
    pause = Error(t=t_pause, wall=wall + t_pause, source="sampler", gap=True,
                  message="sampling paused: the server is restarting for a static knob change")
    change = Change(t=t_change, wall=wall + 31.5, knob="innodb_buffer_pool_size",
                    requested="256M", old="134217728", new="268435456",
                    method="dropin_restart", result="ok", duration=1.5)
    no_op = Change(t=40.0, wall=wall + 40.0, knob="innodb_io_capacity_max",
                   requested="10000", old="10000", new="10000", method="set_global",
                   result="ok", reason="revert to baseline")
    before = [e for e in events if e.t < t_pause]
    after = [e for e in events if e.t >= t_pause]
    return [*before, pause, change, *[e for e in after if e.t < 40.0], no_op,
            *[e for e in after if e.t >= 40.0]]


def pane_text(app: KnobtopApp) -> str:
    pane = app.live.query_one(JournalPane)
    return " ".join(" ".join(line.text for line in pane.lines).split())


@pytest.mark.parametrize("same_moment", [False, True])
@pytest.mark.parametrize("size", SIZES)
async def test_the_pane_lists_a_change_above_the_pause_it_caused(
        size: tuple[int, int], same_moment: bool) -> None:
    header, events = recorded()
    app = KnobtopApp(header=header, events=restart_then_change(header, events, same_moment))
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: "sampling paused" in pane_text(app))
        text = pane_text(app)
        change, pause = text.index("innodb_buffer_pool_size"), text.index("sampling paused")
        assert change < pause, text
        # Each entry once, in time order: the two of 25 s and 50 s around them.
        assert text.count("sampling paused") == 1 and text.count("buffer_pool_size") == 1
        assert text.index("innodb_io_capacity") < change  # (a narrow pane wraps "=1000")
        assert pause < text.index("innodb_flush_log_at_trx_commit")


@pytest.mark.parametrize("size", SIZES)
async def test_a_change_that_changed_nothing_is_not_listed(size: tuple[int, int]) -> None:
    header, events = recorded()
    app = KnobtopApp(header=header, events=restart_then_change(header, events, False))
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: "load stop" in pane_text(app))  # the last one listed
        text = pane_text(app)
        # The no-op revert (io_capacity_max 10000 -> 10000) is journaled, never listed.
        assert "io_capacity_max" not in text and "(was 10000)" not in text, text
        assert "buffer_pool_size" in text  # the change beside it is


async def test_a_late_change_is_placed_and_the_pane_rewrapped_in_order() -> None:
    # Events arriving one by one (as from the session's socket): the change comes last but
    # goes above the pause; a resize after it keeps that order.
    header, events = recorded()
    app = KnobtopApp(header=header, events=events[:40])
    ordered = restart_then_change(header, events, same_moment=False)
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: app._painted > 0)
        pane = app.live.query_one(JournalPane)
        for event in ordered[40:]:
            pane.add_event(event)
        await pilot.pause()
        text = pane_text(app)
        assert text.index("buffer_pool_size") < text.index("sampling paused"), text
        await pilot.resize_terminal(160, 48)
        await until(pilot, lambda: "sampling paused" in pane_text(app))
        text = pane_text(app)
        assert text.index("buffer_pool_size") < text.index("sampling paused"), text
        assert [line.plain for line in pane.entries] == sorted(
            [line.plain for line in pane.entries], key=lambda s: s[:5])
