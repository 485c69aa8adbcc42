"""ChoiceScreen: pick one of a few named options (the workload); Escape keeps what was."""

from __future__ import annotations

from collections.abc import Sequence

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Label, OptionList
from textual.widgets.option_list import Option


class ChoiceScreen(ModalScreen[str | None]):
    """Arrows and Enter choose (the current option starts highlighted); Escape returns
    None. Options are shown as plain text, never as markup."""

    DEFAULT_CSS = """
    ChoiceScreen {
        align: center middle;
    }
    ChoiceScreen > Vertical {
        width: 48;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    ChoiceScreen .choice-title {
        text-style: bold;
        color: $text-accent;
    }
    ChoiceScreen OptionList {
        height: auto;
        max-height: 16;
        border: none;
    }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="choice.cancel")]

    def __init__(self, title: str, options: Sequence[str], current: str | None = None) -> None:
        super().__init__()
        self.title_text = title
        self.options = list(options)
        self.current = current

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text, classes="choice-title", markup=False)
            marked = [f"{o}  (now)" if o == self.current else o for o in self.options]
            yield OptionList(*[Option(text, id=str(i)) for i, text in enumerate(marked)],
                             markup=False)

    def on_mount(self) -> None:
        listing = self.query_one(OptionList)
        if self.current in self.options:
            listing.highlighted = self.options.index(self.current)
        listing.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.dismiss(self.options[event.option_index])

    def action_cancel(self) -> None:
        self.dismiss(None)
