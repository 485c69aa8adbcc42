"""StatusBar: the one-line summary at the top: server, load, sampling, journal."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import events
from textual.widgets import Static

from knobtop.analysis.report import storage_note
from knobtop.metrics.board import MetricBoard
from knobtop.printable import printable

SEP = " · "
JOURNAL_SUFFIX = ".knobtop.jsonl"
#: A journal name is shortened to no fewer columns than this (else it is left out).
MIN_JOURNAL = 12


def middle_ellipsis(text: str, width: int) -> str:
    """``text`` in ``width`` columns, cut in the middle: a third of its start and the rest
    from its distinctive end ("lab-…3301-a7f3")."""
    if len(text) <= width:
        return text
    if width <= 1:
        return "…"[:width]
    head = (width - 1) // 3
    tail = width - 1 - head
    return text[:head] + "…" + text[len(text) - tail:]


def fit_journal(name: str, width: int) -> str:
    """The journal's name in ``width`` columns: whole, or without the common suffix, or
    shortened in the middle (a timestamped name keeps its time and random tail)."""
    if len(name) <= width:
        return name
    return middle_ellipsis(name.removesuffix(JOURNAL_SUFFIX), width)


class StatusBar(Static):
    DEFAULT_CSS = """
    StatusBar {
        dock: top;
        height: 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
        background: $panel;
        color: $foreground;
        padding: 0 1;
    }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self._fields: list[tuple[str, str]] = []
        self._where = ""
        self._journal = ""
        self._shown = ""  # what the bar shows now (unchanged text is not repainted)
        self._shown_spans: list[object] = []

    def show(self, board: MetricBoard | None, journal: str, state: str = "",
             page: str = "") -> None:
        # The journal's file name (a followed folder's newest, someone else's) and the
        # state (an end's reason) are text from outside: one printable line each.
        journal, state = printable(journal, newlines=False), printable(state, newlines=False)
        fields: list[tuple[str, str]] = []
        if page:
            fields.append((f"{page} ", "bold reverse"))
        self._where = self._journal = ""
        if board is None:
            fields.append((state or "connecting ...", "italic"))
        else:
            server = board.header.server
            flavor = "MariaDB" if server.get("flavor") == "mariadb" else "MySQL"
            where = server.get("socket") or f"{server.get('host')}:{server.get('port')}"
            if server.get("via"):
                where = f"{server['via']} ({where} via ssh)"
            # Most telling first: a narrow terminal loses the end (where, then the journal
            # name is shortened in the middle), never the state.
            fields.append((f"{flavor} {server.get('version', '?')}", "bold"))
            if state:
                fields.append((state, "bold reverse"))
            storage = storage_note(server).removeprefix(", ")
            if storage:  # a lab sandbox under the storage emulation: before the load
                fields.append((storage, "bold"))
            if board.load_running:
                fields.append((f"▶ {board.load_label}", "bold"))
            else:
                fields.append(("■ load stopped", ""))
            fields.append((f"{board.samples} samples every {board.header.interval:g}s", ""))
            self._where, self._journal = f"@{where}", journal
        self._fields = fields
        self._fit()

    def on_resize(self, event: events.Resize) -> None:
        self._fit()

    def line(self, width: int) -> Text:
        """The bar's text for ``width`` columns: fields apart by " · ", the address left
        out before the journal's name is shortened below MIN_JOURNAL columns."""
        text = Text(no_wrap=True, overflow="ellipsis")
        for i, (words, style) in enumerate(self._fields):
            if i:
                text.append(SEP, style="dim")
            text.append(words, style=style)
        if not self._journal:
            if self._where:
                text.append(SEP + self._where, style="")
            return text
        for where in (self._where, ""):
            room = width - text.cell_len - len(SEP) * (2 if where else 1) - len(where)
            if room >= min(MIN_JOURNAL, len(self._journal)):
                out = text.copy()
                if where:
                    out.append(SEP, style="dim")
                    out.append(where)
                out.append(SEP, style="dim")
                out.append(fit_journal(self._journal, room), style="dim")
                return out
        return text

    def _fit(self) -> None:
        width = self.content_region.width
        line = self.line(width if width > 0 else 10_000)
        if line.plain != self._shown or line.spans != self._shown_spans:
            # One row whatever it says: no relayout, only this row repaints.
            self._shown, self._shown_spans = line.plain, list(line.spans)
            self.update(line, layout=False)
