"""RecipePanel: a running recipe's progress (arm, step, replicate, time left, what it waits
for), then its results table.  Hidden unless a recipe runs in this session."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.text import Text
from textual.markup import escape
from textual.widgets import Static

from knobtop.recipes.results import Results, results_table
from knobtop.recipes.runner import Progress, short_duration


class RecipePanel(Static):
    DEFAULT_CSS = """
    RecipePanel {
        display: none;
        height: auto;
        max-height: 16;
        border: round $accent;
        border-title-color: $text-accent;
        padding: 0 1;
    }
    RecipePanel.-active {
        display: block;
    }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self.border_title = "Recipe"

    def show_progress(self, p: Progress) -> None:
        self.add_class("-active")
        self.border_title = escape(f"Recipe {p.recipe}")  # a recipe file's name, as it is
        text = Text(no_wrap=True, overflow="ellipsis")
        bar_width = 24
        filled = round(bar_width * p.done / p.total) if p.total else bar_width
        text.append("█" * filled + "░" * (bar_width - filled), style="bold")
        text.append(f" {p.done}/{p.total} steps · ~{short_duration(p.seconds_left)} left\n")
        text.append(p.label, style="bold")
        if p.waiting_for:
            text.append(f"\n{p.waiting_for}", style="italic")
        self.border_subtitle = "a: abort (restores the baseline)"
        self.update(text)

    def show_results(self, results: Results) -> None:
        self.add_class("-active")
        self.border_subtitle = ""
        self.update(Group(results_table(results)))
