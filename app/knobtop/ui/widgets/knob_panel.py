"""KnobPanel: the seed knobs on this server, their values and whether they can change live."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.binding import Binding
from textual.message import Message
from textual.widgets import DataTable

from knobtop.server.knobtext import show_value

STATUS_TEXT = {"dynamic": "live", "static": "restart", "absent": "absent",
               "ignored": "ignored", "unknown": "?"}
STATUS_SHORT = {"dynamic": "live", "static": "rst", "absent": "n/a", "ignored": "ign",
                "unknown": "?"}


def _cell(text: str) -> Text:
    """A knob name or value as it is: a server's value is never read as markup."""
    return Text(text, no_wrap=True, end="")


class KnobPanel(DataTable[Text]):
    """One row per knob; Enter asks to edit the highlighted one."""

    DEFAULT_CSS = """
    KnobPanel {
        height: 1fr;
        border: round $primary 50%;
        border-title-color: $text-accent;
        scrollbar-size-vertical: 1;
        overflow-x: hidden;
    }
    KnobPanel:focus {
        border: round $primary;
    }
    """

    BINDINGS = [Binding("enter,e", "edit", "Edit knob", id="knob.edit")]

    class EditRequested(Message):
        def __init__(self, knob: str) -> None:
            super().__init__()
            self.knob = knob

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self.border_title = "Knobs"
        self.facts: dict[str, dict[str, Any]] = {}
        self.values: dict[str, str | None] = {}
        self.compact = False

    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        # The widths (each plus a cell's padding of 2, plus a 1-column scrollbar) fill the
        # side panel exactly (46 or 56 columns less the border): no sideways scrolling.
        # Narrow screens also drop the header row: one more knob shows instead.
        # Headers (and every cell) as Text: DataTable reads a str as markup with emoji
        # codes, which loads Rich's table of 3,600 of them (1 MB of the screen's process).
        self.show_header = not self.compact
        self.add_column(Text("knob"), key="knob", width=23 if self.compact else 30)
        self.add_column(Text("value"), key="value", width=10)
        self.add_column(Text(""), key="status", width=4 if self.compact else 7)

    def set_compact(self, compact: bool) -> None:
        """Narrow screens drop the ``innodb_`` prefix so the value still fits."""
        if compact == self.compact:
            return
        self.compact = compact
        keep = self.highlighted_knob
        self.clear(columns=True)
        self._add_columns()
        self._fill(keep)

    def set_knobs(self, values: dict[str, str | None], facts: dict[str, dict[str, Any]]) -> None:
        keep = self.highlighted_knob
        self.facts = dict(facts)
        self.values = dict(values)
        self.clear()
        self._fill(keep)

    def _fill(self, keep: str | None = None) -> None:
        # Changeable knobs first, then restart-only, then absent: what you can flip is on top.
        order = {"dynamic": 0, "unknown": 1, "static": 1, "ignored": 2, "absent": 3}
        for name in sorted(self.values, key=lambda n: (order[self.status_of(n)], n)):
            label = name.removeprefix("innodb_") if self.compact else name
            status = (STATUS_SHORT if self.compact else STATUS_TEXT)[self.status_of(name)]
            self.add_row(_cell(label), _cell(show_value(name, self.values[name])),
                         _cell(status), key=name)
        # The cursor stays on the knob it was on (by name, not by row), scrolled into view.
        if keep is not None and keep in self.rows:
            self.move_cursor(row=self.get_row_index(keep), animate=False)

    def status_of(self, name: str) -> str:
        facts = self.facts.get(name, {})
        if not facts.get("present", True):
            return "absent"
        if facts.get("ignored"):
            return "ignored"
        if facts.get("mode") == "unknown":
            return "unknown"
        return "dynamic" if facts.get("dynamic", True) else "static"

    def set_value(self, name: str, value: str | None) -> None:
        self.values[name] = value
        if name in self.rows:
            self.update_cell(name, "value", _cell(show_value(name, value)))
            # DataTable keys its render caches by an update counter, so every change leaves
            # the old entries behind until its 10,000-cell LRU is full: over a day of knob
            # changes that was most of the live screen's memory growth. They are dead: drop
            # them (a few dozen cells are rendered again).
            self._clear_caches()

    @property
    def highlighted_knob(self) -> str | None:
        if not self.row_count:
            return None
        key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return key.value

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Whether a knob can be edited is the app's call (a follower or a replay cannot).
        return self.app.check_action(action, parameters) if action == "edit" else True

    def action_edit(self) -> None:
        knob = self.highlighted_knob
        if knob is not None:
            self.post_message(self.EditRequested(knob))
