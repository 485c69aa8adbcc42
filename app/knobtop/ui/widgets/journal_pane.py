"""JournalPane: the events a person reads (changes, those made outside knobtop, load phases,
notes, errors), newest last."""

from __future__ import annotations

import bisect
from collections import deque
from typing import Any

from rich.text import Text
from textual import events

from knobtop.conditions import condition_lines
from knobtop.journal.events import (
    Change,
    Error,
    Event,
    Mark,
    Note,
    OutsideChange,
    Phase,
    RecipeRun,
    StepResult,
    Trial,
    target_of,
)
from knobtop.printable import printable
from knobtop.ui.widgets.richlog import RichLog

MAX_ENTRIES = 1000


def is_no_op(event: Event) -> bool:
    """A change that changed nothing (``io_capacity_max=10000 (was 10000)``: a revert
    putting back a value the server already held): journaled, not listed."""
    return isinstance(event, Change) and event.result == "ok" and event.old == event.new


def order_key(event: Event) -> tuple[float, int]:
    """Where an event goes in the pane: by time, a change before what else happened at the
    same moment.  A change is journaled when it is done, stamped with its start, so what
    it caused (``sampling paused`` for its restart, the load stopped for it) arrives first
    and is listed after it."""
    return event.t, 0 if isinstance(event, Change) else 1


def starts_a_journal(event: Event) -> bool:
    """The follower moved to a newer (or rotated) journal: its times start again at 0, and
    its events are listed after the last one's, not among them."""
    return isinstance(event, Error) and event.source == "follow" and event.gap


def describe(event: Event) -> Text | None:
    """A short line for the pane, or None for events that are not listed (samples, loads,
    changes that changed nothing)."""
    if is_no_op(event):
        return None
    stamp = f"{int(event.t) // 60:02d}:{int(event.t) % 60:02d} "
    # The pane wraps (and re-wraps on a resize), and the essential part comes first: a
    # change reads "knob=new" before the old value, so the new value shows at any width.
    line = Text(stamp, style="dim")
    target = target_of(event)
    if target and not isinstance(event, StepResult):  # a recipe's further server (issue 19)
        line.append(f"{target}: ", style="bold")
    if isinstance(event, Change):
        if event.result == "unchanged":
            return None  # asked for what it held: nothing happened to list
        if event.result == "ok":
            line.append(f"◆ {event.knob}={event.new}", style="bold")
            line.append(f" (was {event.old})")
            if event.warnings:
                line.append(f" ({len(event.warnings)} warning(s))")
        else:
            line.append(f"✗ {event.knob}={event.requested}: {event.message}", style="italic")
        return line
    if isinstance(event, OutsideChange):
        # Not knobtop's: said first, with the window it happened in (knobtop's reads).
        since = f"{int(event.since) // 60:02d}:{int(event.since) % 60:02d}"
        line.append(f"⚠ {event.knob}={event.new}", style="bold")
        line.append(f" changed outside knobtop (was {event.old}; after {since})")
        return line
    if isinstance(event, Phase):
        marker = {"start": "▶", "stop": "■", "failed": "✗"}.get(event.action, "·")
        line.append(f"{marker} load {event.action} {event.load_text}")
        median = event.summary.get("tps_median")
        if median is not None:
            line.append(f" (median {median:g} tps)")
        if event.message:
            line.append(f": {event.message}")
        return line
    if isinstance(event, Note):
        line.append(f"✎ {event.text}", style="italic")
        return line
    if isinstance(event, Mark):
        line.append(f"⚑ {event.label}")
        return line
    if isinstance(event, Error):
        line.append(f"! {event.source}: {event.message}", style="bold")
        return line
    if isinstance(event, RecipeRun):
        # "≡", not "☰": Unicode 16 made the trigrams wide, so Rich counts 2 columns where
        # tmux and most terminals draw 1, and the row came out one column too long.
        line.append(f"≡ recipe {event.name} {event.action}", style="bold")
        if event.message:
            line.append(f": {event.message}")
        if event.action == "start":  # its conditions and warnings come before its first step
            for fact in condition_lines(event.plan):
                line.append(f"\n  conditions: {printable(fact, newlines=False)}")
            for warning in event.plan.get("warnings", []):
                line.append(f"\n  warning: {warning}", style="italic")
        return line
    if isinstance(event, StepResult):
        tps = "\u2013" if event.tps is None else f"{event.tps:,.0f}"
        line.append(f"✓ {event.arm} x{event.threads} #{event.replicate}: {tps} tps")
        return line
    if isinstance(event, Trial):  # a tune's search (issue 21)
        knobs = " ".join(f"{k}={v}" for k, v in event.knobs.items())
        obj = event.objective
        score = "\u2013" if obj is None else f"{obj:,.0f}" if abs(obj) >= 100 else f"{obj:.2f}"
        line.append(f"◇ trial {event.number} {knobs}: {score}")
        if event.state != "done":
            line.append(f" ({event.state}: {event.message})", style="italic")
        elif not event.feasible:
            line.append(f" (broke {', '.join(event.violated)})", style="italic")
        return line
    return None


class JournalPane(RichLog):
    """The listed events in time order (``order_key``), newest last."""

    DEFAULT_CSS = """
    JournalPane {
        height: 1fr;
        border: round $primary 50%;
        border-title-color: $text-accent;
        scrollbar-size-vertical: 1;
    }
    JournalPane:focus {
        border: round $primary;
    }
    """

    def __init__(self, **kwargs: Any) -> None:
        # min_width=1: lines wrap at the pane's width (RichLog's default renders 78 columns
        # wide and scrolls sideways).
        super().__init__(max_lines=MAX_ENTRIES, wrap=True, markup=False, auto_scroll=True,
                         min_width=1, **kwargs)
        self.border_title = "Journal"
        # The entries as written, in order, with the key that placed them: a RichLog wraps
        # at the width it had when each was written, so a resize writes them again at the
        # new width, and so does an event that belongs above the last one.
        self.entries: deque[Text] = deque(maxlen=MAX_ENTRIES)
        self._keys: deque[tuple[int, float, int]] = deque(maxlen=MAX_ENTRIES)
        self._journals = 0  # journals followed before this one (starts_a_journal)
        self._wrapped_at = 0

    def _add(self, line: Text, key: tuple[int, float, int]) -> None:
        if not self._keys or key >= self._keys[-1]:
            self.entries.append(line)
            self._keys.append(key)
            self.write(line)
            return
        # Late (a change journaled after what it caused): in its place, then written again.
        at = bisect.bisect_right(self._keys, key)
        if len(self.entries) == MAX_ENTRIES:  # a full deque refuses an insert: the oldest goes
            if at == 0:
                return  # older than all the pane keeps
            self.entries.popleft()
            self._keys.popleft()
            at -= 1
        self.entries.insert(at, line)
        self._keys.insert(at, key)
        self._rewrite()

    def _key(self, event: Event) -> tuple[int, float, int]:
        if starts_a_journal(event):
            self._journals += 1
        return self._journals, *order_key(event)

    def add_event(self, event: Event) -> None:
        key = self._key(event)
        line = describe(event)
        if line is not None:
            self._add(line, key)

    def show_list(self, events: list[Event], current: int | None) -> None:
        """Replay: exactly ``events`` (those listed), in time order, with the one at
        ``current`` highlighted."""
        self.clear()
        self.entries.clear()
        self._keys.clear()
        self._journals = 0
        listed: list[tuple[tuple[int, float, int], Text]] = []
        for i, event in enumerate(events):
            key = self._key(event)
            line = describe(event)
            if line is None:
                continue
            if i == current:
                line.stylize("reverse")
            listed.append((key, line))
        for key, line in sorted(listed, key=lambda kl: kl[0]):  # stable: ties as journaled
            self._add(line, key)

    def _rewrite(self) -> None:
        at_end = self.is_vertical_scroll_end
        keep = list(self.entries)
        self.clear()
        for line in keep:
            self.write(line, scroll_end=at_end)

    def on_resize(self, event: events.Resize) -> None:
        # (RichLog's own handler runs after this one: it writes what waited for a size.)
        width = self.scrollable_content_region.width
        if width == self._wrapped_at or width <= 0:
            return
        first = self._wrapped_at == 0
        self._wrapped_at = width
        if first:
            return
        self._rewrite()
