"""PromptScreen: a small dialog that asks for one line of text (knob value, note, threads)."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label, Static


class PromptScreen(ModalScreen[str | None]):
    """Enter returns the text (an empty field is refused with a notice); Escape returns
    None."""

    DEFAULT_CSS = """
    PromptScreen {
        align: center middle;
    }
    PromptScreen > Vertical {
        width: 64;
        max-width: 100%;
        height: auto;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    PromptScreen .prompt-title {
        text-style: bold;
        color: $text-accent;
    }
    PromptScreen .prompt-help {
        color: $text-muted;
    }
    PromptScreen #prompt-preview {
        color: $text-accent;
    }
    """

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="prompt.cancel")]

    def __init__(self, title: str, help_text: str = "", value: str = "",
                 preview: Callable[[str], str] | None = None) -> None:
        """``preview`` turns the text typed so far into the line shown under the field:
        what Enter will apply (the parsed value), or why it would be refused."""
        super().__init__()
        self.title_text = title
        self.help_text = help_text
        self.value = value
        self.preview = preview

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text, classes="prompt-title", markup=False)
            if self.help_text:
                yield Static(self.help_text, classes="prompt-help", markup=False)
            yield Input(value=self.value, id="prompt-input")
            if self.preview is not None:
                yield Static(self.preview(self.value), id="prompt-preview", markup=False)

    def on_input_changed(self, event: Input.Changed) -> None:
        if self.preview is not None:
            self.query_one("#prompt-preview", Static).update(self.preview(event.value))

    def on_input_submitted(self, event: Input.Submitted) -> None:
        if not event.value.strip():
            # Closing quietly would look like the value was taken (a key lost in a burst
            # over tmux or a slow SSH link submits an empty field): say so, stay open.
            self.notify("no value given: type one, or press Escape to cancel",
                        severity="warning", timeout=5)
            return
        self.dismiss(event.value.strip())

    def action_cancel(self) -> None:
        self.dismiss(None)
