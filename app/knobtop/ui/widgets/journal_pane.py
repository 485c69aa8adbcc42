"""JournalPane: the events a person reads (changes, load phases, notes, errors), newest last."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import RichLog

from knobtop.journal.events import (
    Change,
    Error,
    Event,
    Mark,
    Note,
    Phase,
    RecipeRun,
    StepResult,
)


def describe(event: Event) -> Text | None:
    """A short line for the pane, or None for events that are not listed (samples, loads)."""
    stamp = f"{int(event.t) // 60:02d}:{int(event.t) % 60:02d} "
    line = Text(stamp, style="dim", no_wrap=True, overflow="ellipsis")
    if isinstance(event, Change):
        if event.result == "ok":
            line.append(f"◆ {event.knob} {event.old} → {event.new}", style="bold")
            if event.warnings:
                line.append(f" ({len(event.warnings)} warning(s))")
        else:
            line.append(f"✗ {event.knob}={event.requested}: {event.message}", style="italic")
        return line
    if isinstance(event, Phase):
        marker = {"start": "▶", "stop": "■", "failed": "✗"}.get(event.action, "·")
        line.append(f"{marker} load {event.action} {event.workload} x{event.threads}")
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
        line.append(f"☰ recipe {event.name} {event.action}", style="bold")
        if event.message:
            line.append(f": {event.message}")
        return line
    if isinstance(event, StepResult):
        tps = "\u2013" if event.tps is None else f"{event.tps:,.0f}"
        line.append(f"✓ {event.arm} x{event.threads} #{event.replicate}: {tps} tps")
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
        super().__init__(max_lines=1000, wrap=True, markup=False, auto_scroll=True, **kwargs)
        self.border_title = "Journal"

    def add_event(self, event: Event) -> None:
        line = describe(event)
        if line is not None:
            self.write(line)

    def show_list(self, events: list[Event], current: int | None) -> None:
        """Replay: exactly ``events``, with the one at ``current`` highlighted."""
        self.clear()
        for i, event in enumerate(events):
            line = describe(event)
            if line is None:
                continue
            if i == current:
                line.stylize("reverse")
            self.write(line)
