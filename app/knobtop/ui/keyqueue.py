"""Keys of a burst handed to the screen one at a time, each once the last one's work is done.

Textual 8.2 routes a key the moment the app reads it: to the widget focused *then*. A key
that opens a dialog (Enter on the knob panel, t, n, w, b, q, ?, Ctrl+P ...) opens it only
after its event has gone through the focused widget, that widget's parents and the app's
bindings, each with a message queue of its own; the keys typed behind it in one burst (a
paste, tmux ``send-keys``, a laggy SSH link) were routed meanwhile, to the main screen. A
key that comes after the dialog is pushed but before it has focused its field goes to a
screen with no focus, and is lost. So ``Enter 1 0 0 0 Enter`` on the knob panel applied
200 -> 200: the digits went to the main screen, the last Enter to the dialog. The same
race put an ``Input``'s editing keys (backspace, arrows) after the letters typed behind
them (its bindings run once the key has come back up to the app).

``KeyQueue`` takes every key and paste the terminal sends. A key goes on at once, as in
Textual, when nothing is in flight; a key that comes while the last one's work is still
going on waits, in order, until that work has settled:

* every widget of the screen on top (a dialog just pushed included) is mounted, and in a
  round where each of them and then the app handled what it had (a ``call_later`` each)
  no other message was handled anywhere (``message_signal``): a key bubbles up one queue
  at a time and a handler posts the next message, so the rounds go on until one is quiet.
  Painting (Textual's refresh messages) and what the app names as coming from outside
  (the session's events) do not count: they are not a key's work, and on a busy screen
  they would leave no round quiet;
* no worker the last key started on the screen on top still runs (the palette's search:
  an Enter typed behind the name picks from its results), and no worker the app said will
  open a dialog (``hold_for``: quit and revert read the server first) runs before that
  dialog is up.

Every wait is bounded: after ``SETTLE_LIMIT`` (``DIALOG_LIMIT`` for a worker that opens a
dialog) the key goes on anyway. Only Textual's public API is used (``App.on_event``,
``call_later``, ``message_signal``, ``set_timer``, ``message_queue_size``, ``is_mounted``,
``walk_children``, ``workers``); "Known issues" in docs/internals.md has the upstream
behaviour.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any
from weakref import WeakSet

from textual import events, messages
from textual.app import App
from textual.message import Message
from textual.message_pump import MessagePump
from textual.screen import Screen
from textual.timer import Timer
from textual.worker import Worker

SETTLE_LIMIT = 10.0  # s: the longest a key waits for the work of the key before it
DIALOG_LIMIT = 20.0  # s: ... for a dialog a worker opens after asking the session
ROUND_LOOK = 0.25  # s: how often a round looks at the time, and for widgets that closed
WORKER_LOOK = 0.01  # s: how often a running worker is looked at again

HandOver = Callable[[events.Event], Awaitable[None]]
# Painting: a screen on show handles these all the time, whatever the keys do.
REFRESHES: tuple[type[Message], ...] = (messages.Update, messages.Layout,
                                        messages.UpdateScroll, messages.Prompt)


class KeyQueue:
    """The keys (and pastes) of one app, handed to Textual one at a time."""

    def __init__(self, app: App[Any], hand_over: HandOver,
                 outside: tuple[type[Message], ...] = ()) -> None:
        """``outside``: the app's messages that come from elsewhere than the keys (a
        session's events), not counted as a key's work."""
        self.app = app
        self._hand_over = hand_over  # Textual's own routing (App.on_event)
        self._not_work = REFRESHES + outside
        self.waiting: deque[events.Event] = deque()
        self._settling = False
        self._until = 0.0
        self._round = 0  # a look of an older round (a late callback, its timer) is ignored
        self._unanswered: dict[int, MessagePump] = {}  # this round's, by id
        self._timer: Timer | None = None
        self._handled = 0  # messages handled by the app and its widgets (not this queue's)
        self._counted: WeakSet[MessagePump] = WeakSet()
        self._workers_before: set[Worker[Any]] = set()
        self._asking: list[tuple[Worker[Any], Screen[Any], float]] = []

    @staticmethod
    def takes(event: events.Event) -> bool:
        """A key or paste read from the terminal (not one on its way through widgets)."""
        return isinstance(event, events.Key | events.Paste) and not event.is_forwarded

    async def arrived(self, event: events.Event) -> None:
        if self._settling or self.waiting:
            self.waiting.append(event)
            return
        await self._go(event)

    def hold_for(self, worker: Worker[Any]) -> None:
        """``worker`` opens a dialog once it has read what it shows: the keys typed behind
        the key that started it wait for that dialog (or for the worker's end)."""
        self._asking.append((worker, self.app.screen, time.monotonic() + DIALOG_LIMIT))

    async def _go(self, event: events.Event) -> None:
        self._settling = True
        self._until = time.monotonic() + SETTLE_LIMIT
        self._workers_before = set(self.app.workers)
        await self._hand_over(event)
        self._start_round()

    def _start_round(self) -> None:
        """Every widget of the screen on top handles what it has, then the app does; a
        round in which nothing else was handled anywhere ends the wait."""
        self._round += 1
        self._stop_timer()
        if time.monotonic() > max(self._until, self._asking_until()):
            self._finish()  # bounded: the key goes on
            return
        pumps = self._pumps()
        for pump in pumps:
            if pump not in self._counted and pump.is_running:
                pump.message_signal.subscribe(self.app, self._count, immediate=True)
                self._counted.add(pump)
        self._handled = 0
        self._unanswered = {id(p): p for p in pumps}
        for pump in pumps:
            if not pump.call_later(self._answered, self._round, pump):
                self._answered(self._round, pump)  # closing: it will never call back
        self._timer = self.app.set_interval(ROUND_LOOK, partial(self._meanwhile, self._round))

    def _answered(self, round_: int, pump: MessagePump) -> None:
        if round_ == self._round and self._unanswered.pop(id(pump), None) is not None \
                and not self._unanswered:
            self.app.call_later(self._look, round_)  # after what the app has queued

    def _meanwhile(self, round_: int) -> None:
        """While a round waits: past the bound the key goes on; a widget that closed with
        the round's callback in its queue never calls back, so it is done (a slow one is
        waited for, however long the round takes)."""
        if round_ != self._round:
            return
        if time.monotonic() > max(self._until, self._asking_until()):
            self._finish()
            return
        for pump in list(self._unanswered.values()):
            if getattr(pump, "is_mounted", True) and not pump.is_running:
                self._answered(round_, pump)

    def _look(self, round_: int) -> None:
        if round_ != self._round or not self._settling:
            return
        quiet = (not self._handled and not self._unanswered
                 and not any(p.message_queue_size or not getattr(p, "is_mounted", True)
                             for p in self._pumps()))
        if not quiet:
            self._start_round()
        elif self._working():
            self._round += 1
            self._stop_timer()
            self._timer = self.app.set_timer(WORKER_LOOK, self._start_round)
        else:
            self._finish()

    def _count(self, message: Message) -> None:
        """A message handled: the last key's work may still be going on (not painting, not
        what comes from outside, not this queue's own callbacks and timers)."""
        if isinstance(message, self._not_work):
            return
        callback = getattr(message, "callback", None)
        if getattr(getattr(callback, "func", callback), "__self__", None) is not self:
            self._handled += 1

    def _stop_timer(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _finish(self) -> None:
        self._settling = False
        self._round += 1
        self._stop_timer()
        if self.waiting:
            # Behind what the app has queued (more keys of the burst join the line).
            self.app.call_later(self._next)

    async def _next(self) -> None:
        if self.waiting and not self._settling:
            await self._go(self.waiting.popleft())

    def _pumps(self) -> list[MessagePump]:
        """The app, the screen on top and its widgets."""
        screen = self.app.screen
        return [self.app, screen, *screen.walk_children()]

    def _working(self) -> bool:
        """A worker the last key started on the screen on top runs, or one that opens a
        dialog has not opened it yet."""
        pumps = {id(p) for p in self._pumps()[1:]}  # the app's own workers may run long
        if any(w not in self._workers_before and id(w.node) in pumps
               and not w.is_finished for w in self.app.workers):
            return True
        return self._asking_until() > 0

    def _asking_until(self) -> float:
        """When the wait for a worker's dialog ends (0: no worker is still to open one)."""
        now = time.monotonic()
        self._asking = [(w, screen, until) for w, screen, until in self._asking
                        if not w.is_finished and self.app.screen is screen and now < until]
        return max((until for _w, _s, until in self._asking), default=0.0)
