"""LiveViewApp: the live screen's view of the journal event stream (a session's, or a followed
journal's): the board the events feed, the panes that list them, the status line and the paint;
and the calls into the session, run on its thread."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterable
from typing import Any, TypeVar

from textual.css.query import NoMatches

from knobtop.config import UiConfig
from knobtop.errors import KnobtopError
from knobtop.journal.events import (
    Change,
    Error,
    Event,
    Header,
    Incident,
    Knobs,
    OutsideChange,
    RecipeRun,
    target_of,
)
from knobtop.journal.follow import JournalFollower
from knobtop.metrics.board import MetricBoard
from knobtop.server.knobtext import show_value
from knobtop.session.port import LOST_SOURCE, SessionPort
from knobtop.session.thread import SessionThread
from knobtop.ui.base import KnobtopBase
from knobtop.ui.leanstrips import CELL_WIDTHS_KEPT_FOR, forget_cell_widths
from knobtop.ui.messages import JournalEvent
from knobtop.ui.screens.live import LiveScreen
from knobtop.ui.widgets.graph_grid import GraphGrid
from knobtop.ui.widgets.host_panel import HostPanel
from knobtop.ui.widgets.incident_page import IncidentPage
from knobtop.ui.widgets.journal_pane import JournalPane
from knobtop.ui.widgets.knob_panel import KnobPanel
from knobtop.ui.widgets.status_bar import StatusBar

T = TypeVar("T")
PAINT_INTERVAL = 0.5  # graphs repaint at most twice a second, whatever the sample rate


class LiveViewApp(KnobtopBase):
    """A view of the journal event stream.

    Live: ``session`` runs on a SessionThread; its events arrive as JournalEvent messages
    and the app's parts call it through ``_call``.  Without a session the app shows
    ``events`` under ``header``, and what ``follow`` tails after them (following.py).
    """

    def __init__(
        self,
        config: UiConfig | None,
        *,
        session: SessionPort | None,
        header: Header | None,
        events: Iterable[Event],
        follow: JournalFollower | None,
    ) -> None:
        super().__init__(config)
        self.session: SessionPort | None = session
        self.runner = SessionThread(session) if session is not None else None
        self.board: MetricBoard | None = MetricBoard(header) if header is not None else None
        self._initial = list(events)
        self.follower = follow
        self._painted = -1
        self._state = ""
        self._journal_name = ""
        self._live_ready = False
        self._unshown: list[Event] = []
        self._widths_hour = 0  # hours of samples when Rich's width cache was last emptied

    @property
    def recipe_running(self) -> bool:
        """Whether a recipe or a tune has the load and the knobs (KnobtopApp runs them)."""
        return False

    async def abort_run(self) -> None:
        """Abort the recipe or tune that runs, and wait for it (KnobtopApp runs them)."""

    def run_event(self, event: Event) -> None:
        """An event of the session while a run goes on: its progress, its trials
        (KnobtopApp shows them)."""

    # -- the session's calls ----------------------------------------------------

    def need_session(self) -> SessionPort | None:
        """The session, or None (said in a notice) when this view has none: it follows a
        journal."""
        if self.session is None:
            self.notify("this view is read-only", severity="warning")
        return self.session

    def _submit(self, coro: Coroutine[Any, Any, T]) -> asyncio.Future[T]:
        assert self.runner is not None
        return asyncio.wrap_future(self.runner.submit(coro))

    async def _call(self, coro: Coroutine[Any, Any, T]) -> T | None:
        """Run a session call on its thread; a failure becomes a visible notice."""
        try:
            return await self._submit(coro)
        except KnobtopError as exc:
            self.notify(str(exc), title="knobtop", severity="error", timeout=8, markup=False)
            return None

    # -- status line ------------------------------------------------------------

    def set_state(self, state: str, *, paint: bool = False) -> None:
        """What the status bar says the view is doing (``paint``: at once)."""
        self._state = state
        if paint:
            self.paint(force=True)

    def set_journal_name(self, name: str) -> None:
        """The journal's name in the status bar."""
        self._journal_name = name

    # -- events -----------------------------------------------------------------

    def on_journal_event(self, message: JournalEvent) -> None:
        event = message.event
        if isinstance(event, Error) and event.source == LOST_SOURCE:
            # The sampler's process is gone: nothing more will come, and no command can
            # be carried out. The message (which says where the journal is) stays on the
            # terminal.
            self.exit_saying(f"knobtop: {event.message}")
            return
        if isinstance(event, Error) and event.source == "journal":
            # Nothing more is recorded: say so where it cannot be missed.
            self._state = "NOT RECORDING: the journal cannot be written"
            self.notify(event.message, title="journal", severity="error", timeout=30,
                        markup=False)
        if isinstance(event, OutsideChange) and self.session is not None:
            self.notify(f"{event.knob}: {show_value(event.knob, event.old)} → "
                        f"{show_value(event.knob, event.new)}", title="changed outside knobtop",
                        timeout=8, severity="warning", markup=False)
        if isinstance(event, RecipeRun) and event.action == "start":
            # Said before the first step (the journal pane lists them under the start too).
            for warning in event.plan.get("warnings", []):
                self.notify(str(warning), title=f"{event.name}: warning", severity="warning",
                            timeout=30, markup=False)
        self.run_event(event)
        self.apply_event(event)

    def apply_event(self, event: Event) -> None:
        """The board takes ``event``; the panes list it once the screen is there."""
        if self.board is None:
            header = self.session.state().header if self.session else None
            if header is None:
                return
            self.board = MetricBoard(header)
        self.board.apply(event)
        self._unshown.append(event)
        if self._live_ready:
            self._show_events()

    def on_live_screen_ready(self, _message: LiveScreen.Ready) -> None:
        self._live_ready = True
        self._show_events()
        self.paint(force=True)

    def _show_events(self) -> None:
        """Hand events that the panes list to them (even while a dialog is on top)."""
        try:
            pane = self.live.query_one(JournalPane)
            panel = self.live.query_one(KnobPanel)
        except NoMatches:  # the app is closing: the session's last events come after its panes
            return
        events, self._unshown = self._unshown, []
        for event in events:
            pane.add_event(event)
            if target_of(event):
                continue  # a recipe's further server (issue 19): not the panel's server
            if isinstance(event, Incident):
                self.live.query_one(IncidentPage).show(event)
            elif isinstance(event, Knobs):
                panel.set_knobs(event.values, event.facts)
            elif isinstance(event, Change) and event.result == "ok":
                panel.set_value(event.knob, event.new)
                for knob, (_old, new) in event.side_effects.items():
                    panel.set_value(knob, new)
            elif isinstance(event, OutsideChange):
                panel.set_value(event.knob, event.new)

    def window_changed(self) -> None:
        self.paint(force=True)

    def current_board(self) -> MetricBoard | None:
        return self.board

    def paint(self, force: bool = False) -> None:
        """Redraw graphs and status from the board if anything changed since last time."""
        if not self._live_ready:
            return
        version = self.board.version if self.board is not None else 0
        if version == self._painted and not force:
            return
        self._painted = version
        try:
            grid = self.live.query_one(GraphGrid)
            bar = self.live.query_one(StatusBar)
            hosts = self.live.query_one(HostPanel)
        except NoMatches:  # the app is closing: its paint timer ticked once more
            return
        page = grid.page_title if grid.page != "overview" else ""
        bar.show(self.board, self._journal_name, self._state, page)
        if self.board is not None:
            grid.draw(self.board)
            hosts.show(self.board)
            hour = self.board.samples // CELL_WIDTHS_KEPT_FOR
            if hour != self._widths_hour:
                self._widths_hour = hour
                forget_cell_widths()
