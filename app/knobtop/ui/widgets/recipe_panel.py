"""RecipePanel: a running recipe's progress (arm, step, replicate, time left, what it waits
for), then its results table.  Hidden unless a recipe runs in this session."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rich.console import Group, RenderableType
from rich.text import Text
from textual import events
from textual.markup import escape

from knobtop.ui.widgets.richlog import RichLog

if TYPE_CHECKING:  # the runner and the results import the server's SQL side: not at start
    from knobtop.analysis.results import Results
    from knobtop.analysis.tune import TuneSpec, Verification
    from knobtop.journal.events import Progress, Trial


def title_apart(renderable: RenderableType) -> list[RenderableType]:
    """A table's title as a line of its own above it: Rich wraps a title at its table's
    width, and a table of one thread count would fold the run's summary line ("recipe
    sort-buffer: 6/6 steps, finished") over three lines of the panel."""
    from rich.table import Table

    if not isinstance(renderable, Table) or renderable.title is None:
        return [renderable]
    title = renderable.title
    renderable.title = None
    return [title if isinstance(title, Text) else Text(str(title)), renderable]


class RecipePanel(RichLog):
    """Scrolls (the wheel; or Shift+Tab to it from the knobs, then the arrows, PgUp/PgDn,
    Home/End) when the results table is taller than the panel: every arm can be reached."""

    DEFAULT_CSS = """
    RecipePanel {
        display: none;
        height: auto;
        max-height: 16;
        border: round $accent;
        border-title-color: $text-accent;
        background: $background;
        padding: 0 1;
        overflow-y: auto;
        scrollbar-size-vertical: 1;
    }
    RecipePanel:focus {
        border: round $text-accent;
        background-tint: transparent;
    }
    RecipePanel.-active {
        display: block;
    }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(wrap=False, markup=False, auto_scroll=False, min_width=1, **kwargs)
        self.border_title = "Recipe"
        self._shown: RenderableType = ""
        self._width = 0

    def _show(self, renderable: RenderableType) -> None:
        """Replace what the panel shows (kept, to lay it out again at a new width)."""
        self._shown = renderable
        self.clear()
        # Measured against the panel, not the app console's width (which may be narrower
        # and made the table wrap its verdict lines).
        width = self.scrollable_content_region.width
        self.write(renderable, width=width if width > 0 else None, scroll_end=False)

    def on_resize(self, event: events.Resize) -> None:
        # (RichLog's own handler runs after this one: it writes what waited for a size.)
        width = self.scrollable_content_region.width
        first, self._width = self._width == 0, width
        if not first and width > 0 and self._shown != "":
            self._show(self._shown)

    def show_progress(self, p: Progress) -> None:
        from knobtop.recipes.runner import short_duration

        self.add_class("-active")
        self.border_title = escape(f"Recipe {p.run}")  # a recipe file's name, as it is
        text = Text(no_wrap=True, overflow="ellipsis")
        bar_width = 24
        filled = round(bar_width * p.done / p.total) if p.total else bar_width
        text.append("█" * filled + "░" * (bar_width - filled), style="bold")
        text.append(f" {p.done}/{p.total} {p.unit} · ~{short_duration(p.seconds_left)} left\n")
        text.append(p.label, style="bold")
        if p.waiting_for:
            text.append(f"\n{p.waiting_for}", style="italic")
        self.border_subtitle = "a: abort (restores the baseline)"
        self._show(text)

    def show_tune(self, p: Progress, spec: TuneSpec, trials: list[Trial]) -> None:
        """A running tune: progress, the current trial's knob values, the best so far and
        every trial's objective over the baseline's band."""
        from knobtop.analysis.tune import BASE, best_trials, objective_text, trials_chart
        from knobtop.recipes.runner import short_duration

        self.add_class("-active")
        self.border_title = escape(f"Tune {p.run}")
        width = self.scrollable_content_region.width or 76
        text = Text(no_wrap=True, overflow="ellipsis")
        filled = round(16 * p.done / p.total) if p.total else 16
        text.append("█" * filled + "░" * (16 - filled), style="bold")
        text.append(f" {p.done}/{p.total} steps · ~{short_duration(p.seconds_left)} left · ")
        text.append(f"{p.doing}" + (f" ({p.waiting_for})" if p.waiting_for else "") + "\n",
                    style="italic")
        if p.step >= 0:
            knobs = " ".join(f"{k}={v}" for k, v in p.knobs.items())
            what = "baseline" if p.arm == BASE else f"trial {p.arm}"
            text.append(f"{what}: ", style="bold")
            text.append(f"{knobs}\n")
        best = best_trials(spec, trials, 1)
        if best:
            knobs = " ".join(f"{k}={v}" for k, v in best[0].knobs.items())
            text.append(f"best so far {best[0].arm}: {objective_text(spec, best[0].objective)} ",
                        style="bold green")
            text.append(f"{knobs}\n")
        # 80x24: the panel has 7 rows; the chart gets what the three lines above leave
        height = 3 if self.app.size.height < 30 else 5
        text.append_text(trials_chart(spec, trials, width=width, height=height))
        self.border_subtitle = "a: abort (restores the baseline)"
        self._show(text)

    def show_tune_end(self, spec: TuneSpec, trials: list[Trial],
                      verification: Verification | None, outcome: str, message: str) -> None:
        """The tune's end: its conclusion, the verification table and the trials."""
        from knobtop.analysis.tune import trials_chart, trials_table, verification_table

        self.add_class("-active")
        self.border_subtitle = "scroll: wheel, or Shift+Tab then ↑↓"
        width = self.scrollable_content_region.width or 76
        head = Text(verification.line() if verification is not None
                    else f"tune {outcome}: {message}", style="bold")
        parts: list[RenderableType] = [head]
        if verification is not None:
            parts += title_apart(verification_table(verification))
        parts += [trials_chart(spec, trials, width=width, height=5), trials_table(spec, trials)]
        self._show(Group(*parts))
        self.screen.add_class("-recipe-results")

    def show_results(self, results: Results) -> None:
        from knobtop.analysis.seedtables import run_renderable

        self.add_class("-active")
        self.border_subtitle = "scroll: wheel, or Shift+Tab then ↑↓"
        self._show(Group(*title_apart(run_renderable(results))))
        self.screen.add_class("-recipe-results")  # a narrow screen gives them the graphs' room
