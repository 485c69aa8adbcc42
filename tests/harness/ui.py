"""Helpers for pilot tests: wait on a condition, read what a widget shows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot
from textual.widget import Widget


async def until(pilot: Pilot[Any], predicate: Callable[[], bool], timeout: float = 20,
                shown: Callable[[], str] | None = None) -> None:
    """Let the app run until ``predicate`` holds (bounded; fails the test otherwise, with
    what ``shown`` returns then: what the screen showed instead)."""
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return
        await pilot.pause(0.05)
    instead = "" if shown is None else f"; shown instead:\n{shown()}"
    raise AssertionError(f"condition not met within {timeout} s{instead}")


def widget_text(widget: Widget) -> list[str]:
    """The text of every line the widget renders now (styles dropped)."""
    return [widget.render_line(y).text for y in range(widget.size.height)]
