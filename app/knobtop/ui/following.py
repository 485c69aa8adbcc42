"""Following a journal another knobtop writes (`knobtop follow`): its events fed to the live
view as they come, its name and how far behind the view is in the status line."""

from __future__ import annotations

from collections.abc import Sequence

from knobtop.journal.events import End, Error, Event
from knobtop.journal.follow import JournalFollower
from knobtop.journal.follow_dir import DirectoryFollower
from knobtop.metrics.board import MetricBoard
from knobtop.ui.live_view import LiveViewApp


def start_following(view: LiveViewApp, follower: JournalFollower,
                    initial: Sequence[Event]) -> None:
    """Name the journal, save screenshots beside it, say what the view waits for, and tail
    it in a worker (``initial``: the events read before the view started)."""
    view.set_journal_name(followed_name(follower))
    view.screenshot_dir = follower.path.parent
    view.set_state("following")
    if isinstance(follower, DirectoryFollower):
        view.screenshot_dir = follower.directory
        if follower.waiting:
            view.set_state(f"waiting for a journal in {follower.directory}")
    ends = [e for e in initial if isinstance(e, End)]
    if ends and ends[-1] is initial[-1]:  # it had ended before we looked
        view.set_state(ended_state(follower, ends[-1]))
    view.run_worker(follow(view, follower), name="follow", exclusive=True)


async def follow(view: LiveViewApp, follower: JournalFollower) -> None:
    """Tail the journal another knobtop writes; the view is the same as live."""
    async for event in follower.events():
        if isinstance(event, Error) and event.source == "follow" and follower.header:
            # The writer started a new journal: its header may lay samples out anew.
            view.board = MetricBoard(follower.header)
            view.set_journal_name(followed_name(follower))
            if isinstance(follower, DirectoryFollower) and follower.switches:
                view.notify(event.message, title="following a newer journal",
                            timeout=10, markup=False)
        elif view.board is None and follower.header is not None:
            # A folder that held no journal has one now.
            view.board = MetricBoard(follower.header)
            view.set_journal_name(followed_name(follower))
        view.apply_event(event)
        if isinstance(event, End):
            # The writer closed its journal: nothing more will come (unless a new one).
            view.set_state(ended_state(follower, event))
            continue
        lag = follower.lag
        view.set_state("following" + (f", {lag:.1f} s behind" if lag is not None else ""))


def followed_name(follower: JournalFollower) -> str:
    """The followed journal's name for the header (the folder's while none is there)."""
    if isinstance(follower, DirectoryFollower) and follower.waiting:
        return f"{follower.directory.name}/"
    return follower.path.name


def ended_state(follower: JournalFollower, end: End) -> str:
    """The state shown once the followed journal ended (and what happens next)."""
    state = f"ended: {end.reason}" if end.reason else "ended"
    if isinstance(follower, DirectoryFollower):
        state += "; waiting for a newer journal"  # short: the file's name must fit
    return state
