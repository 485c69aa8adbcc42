"""Helpers for pilot tests: wait on a condition, read what a widget shows."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.pilot import Pilot
from textual.widget import Widget


async def until(pilot: Pilot[Any], predicate: Callable[[], bool], timeout: float = 20) -> None:
    """Let the app run until ``predicate`` holds (bounded; fails the test otherwise)."""
    for _ in range(int(timeout / 0.05)):
        if predicate():
            return
        await pilot.pause(0.05)
    raise AssertionError(f"condition not met within {timeout} s")


def widget_text(widget: Widget) -> list[str]:
    """The text of every line the widget renders now (styles dropped)."""
    return [widget.render_line(y).text for y in range(widget.size.height)]
