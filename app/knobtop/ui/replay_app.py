"""ReplayApp: the live screen's widgets driven by a virtual clock over a saved journal."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any, ClassVar

from textual.binding import Binding
from textual.css.query import NoMatches

from knobtop.analysis.replay import MARKER_KINDS, SPEEDS, Frame, Replay, clock_text
from knobtop.config import UiConfig
from knobtop.journal.events import Incident
from knobtop.metrics.board import MetricBoard
from knobtop.safefile import NotOwnFile
from knobtop.ui.base import KnobtopBase
from knobtop.ui.screens.help import HelpScreen
from knobtop.ui.screens.live import LiveScreen
from knobtop.ui.screens.prompt import PromptScreen
from knobtop.ui.widgets.graph_grid import GraphGrid
from knobtop.ui.widgets.host_panel import HostPanel
from knobtop.ui.widgets.incident_page import IncidentPage
from knobtop.ui.widgets.journal_pane import JournalPane
from knobtop.ui.widgets.knob_panel import KnobPanel
from knobtop.ui.widgets.status_bar import StatusBar

TICK = 0.25  # seconds between clock ticks (and repaints while playing)
SEEK_SHORT = 10.0
SEEK_LONG = 60.0


class ReplayApp(KnobtopBase):
    """Play, pause, seek and jump through a journal; the screen is the live one's."""

    # The screens and widgets whose bindings this app shows (one keymap serves all).
    BINDING_CLASSES: ClassVar[tuple[type[Any], ...]] = (HelpScreen, PromptScreen, KnobPanel)
    TITLE = "knobtop replay"
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("space", "toggle_play", "Play/Pause", id="replay.play"),
        Binding("plus,equals_sign", "speed(1)", "Faster", id="replay.faster"),
        Binding("minus", "speed(-1)", "Slower", id="replay.slower"),
        Binding("left", f"seek({-SEEK_SHORT})", "-10s", id="replay.back", show=False),
        Binding("right", f"seek({SEEK_SHORT})", "+10s", id="replay.forward", show=False),
        Binding("left_square_bracket,shift+left", f"seek({-SEEK_LONG})", "-1m",
                id="replay.back_long", show=False),
        Binding("right_square_bracket,shift+right", f"seek({SEEK_LONG})", "+1m",
                id="replay.forward_long", show=False),
        Binding("full_stop", "jump(True)", "Next event", id="replay.next"),
        Binding("comma", "jump(False)", "Prev event", id="replay.prev"),
        Binding("c", "jump(True, 'change')", "Next change", id="replay.next_change",
                show=False),
        Binding("C", "jump(False, 'change')", "Prev change", id="replay.prev_change",
                show=False),
        Binding("home,g", "to_start", "Start", id="replay.start", show=False),
        Binding("end,G", "to_end", "End", id="replay.end", show=False),
        Binding("n", "note", "Note", id="journal.note"),
    ]

    def __init__(self, replay: Replay, *, play: bool = False,
                 config: UiConfig | None = None) -> None:
        super().__init__(config)
        self.replay = replay
        self.screenshot_dir = replay.index.path.parent
        self._screen_ready = False
        self._last_tick = time.monotonic()
        self._shown: tuple[object, ...] | None = None
        self._pane: tuple[object, ...] | None = None
        self._knobs: dict[str, str | None] | None = None
        self._play_at_start = play
        self._warned = False
        self._told: set[int] = set()  # file lines whose problem was shown
        self.frame: Frame | None = None

    def on_mount(self) -> None:
        self.apply_config()
        self.push_screen(self.live)
        self.set_interval(TICK, self._tick)

    def on_live_screen_ready(self, _message: LiveScreen.Ready) -> None:
        self._screen_ready = True
        self.call_after_refresh(self.replay.index.go_ahead)  # the first frame is painted
        # Read-only, and the arrow/home/end keys belong to the clock, not to a table:
        # nothing on this screen takes focus.
        panel = self.live.query_one(KnobPanel)
        panel.border_subtitle = "as of the cursor"
        for widget in (panel, self.live.query_one(JournalPane)):
            widget.can_focus = False
        self.set_focus(None)
        if self._play_at_start:
            self.replay.playing = True
        self.paint(force=True)

    def _tick(self) -> None:
        now = time.monotonic()
        elapsed, self._last_tick = now - self._last_tick, now
        self.replay.tick(elapsed)
        self._warn_problems()
        self.paint()

    def _warn_problems(self) -> None:
        """Once the index is complete, say what was skipped (bad lines, unknown kinds); later,
        each line found bad when the cursor reached it (a field of the wrong type)."""
        index = self.replay.index
        if self._warned:
            self._warn_new_problems()
            return
        if not index.ready.is_set():
            return
        self._warned = True
        self._told = {n for n, _ in list(index.problems)}
        notes = []
        if index.problems:
            first_line, reason = index.problems[0]
            notes.append(f"{len(index.problems)} line(s) skipped, first at line "
                         f"{first_line}: {reason}")
        from knobtop.journal.events import EVENT_TYPES

        unknown = {k: n for k, n in index.kind_counts().items() if k not in EVENT_TYPES}
        if unknown:
            listed = ", ".join(f"{k} x{n}" for k, n in sorted(unknown.items()))
            notes.append(f"event types from a newer knobtop were skipped: {listed}")
        if self.replay.note_problems:
            line, reason = self.replay.note_problems[0]
            notes.append(f"{self.replay.notes_path.name}: line {line} skipped: {reason}" if line
                         else f"side notes not read: {reason}")
        if notes:
            self.notify("\n".join(notes), title=index.path.name, severity="warning",
                        timeout=15, markup=False)

    def _warn_new_problems(self) -> None:
        problems = list(self.replay.index.problems)  # the index thread may add to it
        if len(problems) == len(self._told):
            return
        new = [(n, reason) for n, reason in problems if n not in self._told]
        self._told.update(n for n, _ in new)
        if new:
            more = f" (and {len(new) - 1} more)" if len(new) > 1 else ""
            self.notify(f"line {new[0][0]} skipped: {new[0][1]}{more}",
                        title=self.replay.index.path.name, severity="warning", timeout=15,
                        markup=False)

    # -- painting -----------------------------------------------------------------------

    def state_text(self) -> str:
        r = self.replay
        mark = "▶" if r.playing else "⏸"
        total = r.indexed_to - r.start
        building = "" if r.index.ready.is_set() else f" (indexing {r.index.progress:.0%})"
        return (f"replay {mark} {r.speed:g}x  {clock_text(r.cursor - r.start)} / "
                f"{clock_text(total)}{building}")

    def paint(self, force: bool = False) -> None:
        if not self._screen_ready:
            return
        r = self.replay
        key = (r.cursor, len(r.side_notes), r.playing, r.speed, r.indexed_to,
               r.index.ready.is_set())
        if key == self._shown and not force:
            return
        live = self.live
        # A timer's tick may land while the app takes its screen down on exit, its widgets
        # going one by one (CI once saw the status bar gone and the graphs still there).
        if not self.is_running:
            return
        try:
            grid, bar = live.query_one(GraphGrid), live.query_one(StatusBar)
            hosts, knobs = live.query_one(HostPanel), live.query_one(KnobPanel)
            journal = live.query_one(JournalPane)
        except NoMatches:
            return
        self._shown = key
        r.window = grid.window  # the frame reads what the graphs show
        frame = self.frame = r.frame()
        page = grid.page_title if grid.page != "overview" else ""
        bar.show(frame.board, r.index.path.name, self.state_text(), page)
        grid.draw(frame.board)
        hosts.show(frame.board)
        if frame.knobs != self._knobs:
            self._knobs = dict(frame.knobs)
            knobs.set_knobs(frame.knobs, frame.facts)
        pane = (tuple((e.t, e.kind) for e in frame.listed), frame.current)
        if pane != self._pane:
            self._pane = pane
            journal.show_list(frame.listed, frame.current)
        if grid.page == "incident":
            self._show_incident(r.cursor)

    def _show_incident(self, t: float) -> None:
        """The incident page as it was at ``t``: the last incident event at or before it."""
        index = self.replay.index
        at = index.prev_of("incident", self.replay.position(t) + 1)
        event = None
        while at is not None:
            got = index.read(at, 1)
            if got and isinstance(got[0], Incident) and got[0].t <= t:
                event = got[0]
                break
            at = index.prev_of("incident", at)
        age = t - event.t if event is not None else None
        self.live.query_one(IncidentPage).show(
            event, age=age, waiting="no incident snapshot at or before this point: the "
            "recording session samples one only while its incident page (key 4) is shown")

    # -- keys ---------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # A replay changes no knob: the knob panel's edit key is neither shown nor in help.
        return action != "edit"

    def window_changed(self) -> None:
        self.paint(force=True)

    def current_board(self) -> MetricBoard | None:
        return self.frame.board if self.frame is not None else None

    def action_toggle_play(self) -> None:
        self.replay.toggle()
        self._last_tick = time.monotonic()
        self.paint()

    def action_speed(self, steps: int) -> None:
        speed = self.replay.faster(steps)
        if speed in (SPEEDS[0], SPEEDS[-1]):
            self.notify(f"speed {speed:g}x", timeout=2)
        self.paint()

    def action_seek(self, seconds: float) -> None:
        self.replay.seek_by(seconds)
        self.paint()

    def action_jump(self, forward: bool, kind: str = "") -> None:
        kinds: Sequence[str] = (kind,) if kind else MARKER_KINDS
        if self.replay.jump(kinds, forward) is None:
            what = f"{kind}s" if kind else "events"
            self.notify(f"no more {what} {'after' if forward else 'before'} this point",
                        timeout=3)
        self.paint()

    def action_to_start(self) -> None:
        self.replay.seek_to(self.replay.start)
        self.paint()

    def action_to_end(self) -> None:
        self.replay.seek_to(self.replay.indexed_to)
        self.paint()

    def action_note(self) -> None:
        at = clock_text(self.replay.cursor - self.replay.start)

        def save(text: str | None) -> None:
            if not text:
                return
            try:
                self.replay.add_note(text)
            except NotOwnFile as exc:
                self.notify(f"note not saved: {exc}", severity="error", timeout=12,
                            markup=False)
                return
            except (OSError, ValueError) as exc:
                self.notify(f"note not saved to {self.replay.notes_path}: {exc}. Fix: make "
                            "the journal's folder writable, or copy the journal somewhere "
                            "that is.", severity="error", timeout=12, markup=False)
                return
            self.notify(f"note saved at {at} to {self.replay.notes_path.name}", timeout=4,
                        markup=False)
            self.paint(force=True)

        self.push_screen(PromptScreen(f"Note at {at} (saved next to the journal)"), save)
