"""ConfirmScreen: a yes/no question with what will happen spelled out (restarts, downtime);
RevertScreen: revert knobtop's changes or those made outside it too; QuitScreen: what to do
at quit with the knobs that differ from the session's baseline."""

from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Label, Static


class ConfirmScreen(ModalScreen[bool]):
    """``y``/Enter on Yes confirms; ``n``/Escape cancels."""

    DEFAULT_CSS = """
    ConfirmScreen {
        align: center middle;
    }
    ConfirmScreen > Vertical {
        width: 72;
        max-width: 100%;
        height: auto;
        border: thick $warning;
        background: $surface;
        padding: 0 1;
    }
    ConfirmScreen .confirm-title {
        text-style: bold;
        color: $text-warning;
    }
    ConfirmScreen Horizontal {
        height: auto;
        align: right middle;
    }
    ConfirmScreen Button {
        margin: 0 0 0 2;
    }
    """

    BINDINGS = [
        Binding("y", "answer(True)", "Yes", id="confirm.yes"),
        Binding("n,escape", "answer(False)", "No", id="confirm.no"),
    ]

    def __init__(self, title: str, details: str, yes: str = "Yes") -> None:
        super().__init__()
        self.title_text = title
        self.details = details
        self.yes = yes

    def compose(self) -> ComposeResult:
        with Vertical():
            # Typed values and commands are shown as they are, never read as markup.
            yield Label(self.title_text, classes="confirm-title", markup=False)
            yield Static(self.details, markup=False)
            with Horizontal():
                yield Button("No (n)", id="no")
                yield Button(f"{self.yes} (y)", id="yes", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(event.button.id == "yes")

    def action_answer(self, yes: bool) -> None:
        self.dismiss(yes)


class RevertScreen(ModalScreen[str | None]):
    """Revert to the baseline when some knobs were changed outside knobtop: ``y`` reverts
    knobtop's own changes (those stay), ``a`` all of them, ``n``/Escape nothing. Answers
    "ours", "all" or None."""

    DEFAULT_CSS = ConfirmScreen.DEFAULT_CSS.replace("ConfirmScreen", "RevertScreen")

    BINDINGS = [
        Binding("y", "answer('ours')", "Revert knobtop's", id="revert.ours"),
        Binding("a", "answer('all')", "Revert all", id="revert.all"),
        Binding("n,escape", "answer(None)", "No", id="revert.no"),
    ]

    def __init__(self, details: str) -> None:
        super().__init__()
        self.details = details

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Revert to the session's baseline?", classes="confirm-title",
                        markup=False)
            yield Static(self.details, markup=False)
            with Horizontal():
                yield Button("No (n)", id="no")
                yield Button("All, outside too (a)", id="all")
                yield Button("Knobtop's (y)", id="ours", variant="warning")

    def on_mount(self) -> None:
        self.query_one("#no", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None if event.button.id == "no" else event.button.id)

    def action_answer(self, choice: str | None) -> None:
        self.dismiss(choice)


class QuitScreen(ModalScreen[str | None]):
    """``r`` reverts and quits, ``k`` keeps and quits, ``c``/Escape stays; with knobs
    changed outside knobtop (``outside``), ``r`` leaves those as they are and ``a`` reverts
    them too ("revert_all").  ``default`` ("revert" for the lab; None for a profile's
    server: nothing happens on Enter until the person chooses) is the focused button."""

    DEFAULT_CSS = ConfirmScreen.DEFAULT_CSS.replace("ConfirmScreen", "QuitScreen") + """
    QuitScreen.outside > Vertical {
        width: 80;
    }
    """

    BINDINGS = [
        Binding("r", "answer('revert')", "Revert", id="quit.revert"),
        Binding("a", "answer('revert_all')", "Revert all", id="quit.revert_all"),
        Binding("k", "answer('keep')", "Keep", id="quit.keep"),
        Binding("c,escape", "answer(None)", "Cancel", id="quit.cancel"),
    ]

    def __init__(self, details: str, default: str | None = None,
                 outside: bool = False) -> None:
        super().__init__(classes="outside" if outside else None)
        self.details = details
        self.default = default
        self.outside = outside

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("Quit: these knobs differ from the session's baseline",
                        classes="confirm-title", markup=False)
            yield Static(self.details, markup=False)
            with Horizontal():
                yield Button("Cancel (c)", id="cancel")
                yield Button("Keep (k)", id="keep")
                if self.outside:
                    yield Button("Revert all (a)", id="revert_all")
                yield Button("Revert (r)", id="revert", variant="warning")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # "revert all" is a choice only when something was changed outside knobtop
        return self.outside or parameters != ("revert_all",)

    def on_mount(self) -> None:
        self.query_one(f"#{self.default or 'cancel'}", Button).focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        self.dismiss(None if event.button.id == "cancel" else event.button.id)

    def action_answer(self, choice: str | None) -> None:
        self.dismiss(choice)
