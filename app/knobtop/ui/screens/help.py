"""HelpScreen: every key of the screen that opened it, as remapped, with its binding id."""

from __future__ import annotations

from collections.abc import Iterable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import DataTable, Label, Static

SECTIONS = {
    "app": "General", "view": "General", "knob": "Knobs", "load": "Load",
    "journal": "Journal", "recipe": "Recipes", "replay": "Replay", "compare": "Compare",
}


HINT = ('Remap a key in ~/.config/knobtop/config.toml, e.g. [keys] "load.toggle" = "L". '
        "Ctrl+P finds every action by name. Arrows, PgUp/PgDn or the wheel scroll. Esc closes.")
#: How to read the graphs' change markers (the screens with graphs pass it as ``note``).
GRAPHS_NOTE = ("Graphs: a line marks a knob change, restart, note or mark, also on the time "
               "axis under the plot; a small tick marks a load phase or a gap. A line's "
               "label shows only where it fits whole: the Journal pane lists every change.")
#: The box around the table: border and padding across, border and title down.
BOX_WIDTH, BOX_HEIGHT, BOX_MAX_WIDTH = 4, 3, 90


class HelpScreen(ModalScreen[None]):
    """Lists bindings: section, key(s), what it does, and the id to remap it with."""

    DEFAULT_CSS = """
    HelpScreen {
        align: center middle;
    }
    HelpScreen > Vertical {
        width: 90;
        max-width: 100%;
        height: auto;
        max-height: 100%;
        border: thick $primary;
        background: $surface;
        padding: 0 1;
    }
    HelpScreen .help-title {
        text-style: bold;
        color: $text-accent;
    }
    HelpScreen .help-hint {
        color: $text-muted;
    }
    HelpScreen DataTable {
        height: auto;
    }
    """

    BINDINGS = [Binding("escape,q,question_mark,f1", "close", "Close", id="help.close")]

    def __init__(self, bindings: Iterable[Binding], keymap: dict[str, str], title: str,
                 note: str = "") -> None:
        super().__init__()
        self.bindings = [b for b in bindings if b.id and b.description]
        self.keymap = keymap
        self.title_text = title
        self.hint = f"{note} {HINT}" if note else HINT

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self.title_text, classes="help-title", markup=False)
            yield DataTable(cursor_type="row", zebra_stripes=True, id="help-keys")
            yield Static(self.hint, classes="help-hint", markup=False)

    def keys_of(self, binding: Binding) -> str:
        keys = self.keymap.get(binding.id or "", binding.key)
        shown = [self.app.get_key_display(Binding(k, binding.action)) for k in keys.split(",")]
        return " ".join(shown)

    def on_mount(self) -> None:
        table = self.query_one(DataTable)
        table.add_columns("", "key", "does", "id")
        for binding in self.bindings:
            section = SECTIONS.get((binding.id or "").split(".")[0], "")
            table.add_row(section, self.keys_of(binding), binding.description, binding.id or "")
        table.focus()
        self._fit()

    def on_resize(self) -> None:
        self._fit()

    def _fit(self) -> None:
        """The table gets the rows the screen has left after the title and the hint, so
        the hint's last line always shows and the table scrolls for the rest."""
        width = max(10, min(BOX_MAX_WIDTH, self.size.width) - BOX_WIDTH)
        hint_lines = len(Text(self.hint).wrap(self.app.console, width))
        room = self.size.height - BOX_HEIGHT - hint_lines
        self.query_one(DataTable).styles.max_height = max(3, room)

    def action_close(self) -> None:
        self.dismiss(None)
