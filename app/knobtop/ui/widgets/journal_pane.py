"""JournalPane: the events a person reads (changes, load phases, notes, errors), newest last."""

from __future__ import annotations

from collections import deque
from typing import Any

from rich.text import Text
from textual import events

from knobtop.journal.events import (
    Change,
    Error,
    Event,
    Mark,
    Note,
    Phase,
    RecipeRun,
    StepResult,
    Trial,
    target_of,
)
from knobtop.ui.widgets.richlog import RichLog

MAX_ENTRIES = 1000


def describe(event: Event) -> Text | None:
    """A short line for the pane, or None for events that are not listed (samples, loads)."""
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
        # The entries as written: a RichLog wraps at the width it had when each was
        # written, so a resize writes them again at the new width.
        self.entries: deque[Text] = deque(maxlen=MAX_ENTRIES)
        self._wrapped_at = 0

    def _add(self, line: Text) -> None:
        self.entries.append(line)
        self.write(line)

    def add_event(self, event: Event) -> None:
        line = describe(event)
        if line is not None:
            self._add(line)

    def show_list(self, events: list[Event], current: int | None) -> None:
        """Replay: exactly ``events``, with the one at ``current`` highlighted."""
        self.clear()
        self.entries.clear()
        for i, event in enumerate(events):
            line = describe(event)
            if line is None:
                continue
            if i == current:
                line.stylize("reverse")
            self._add(line)

    def on_resize(self, event: events.Resize) -> None:
        # (RichLog's own handler runs after this one: it writes what waited for a size.)
        width = self.scrollable_content_region.width
        if width == self._wrapped_at or width <= 0:
            return
        first = self._wrapped_at == 0
        self._wrapped_at = width
        if first:
            return
        at_end = self.is_vertical_scroll_end
        keep = list(self.entries)
        self.clear()
        for line in keep:
            self.write(line, scroll_end=at_end)
