"""StatusBar: the one-line summary at the top: server, load, sampling, journal."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from knobtop.metrics.board import MetricBoard


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

    def show(self, board: MetricBoard | None, journal: str, state: str = "",
             page: str = "") -> None:
        text = Text(no_wrap=True, overflow="ellipsis")
        if page:
            text.append(f"{page} ", style="bold reverse")
            text.append(" ")
        if board is None:
            text.append(state or "connecting ...", style="italic")
            self.update(text)
            return
        server = board.header.server
        flavor = "MariaDB" if server.get("flavor") == "mariadb" else "MySQL"
        where = server.get("socket") or f"{server.get('host')}:{server.get('port')}"
        if server.get("via"):
            where = f"{server['via']} ({where} via ssh)"
        # Most telling first: a narrow terminal cuts the end (where, journal), not the state.
        text.append(f"{flavor} {server.get('version', '?')}  ", style="bold")
        if state:
            text.append(state, style="bold reverse")
            text.append("  ")
        if board.load_running:
            text.append(f"▶ {board.load_label}", style="bold")
        else:
            text.append("■ load stopped")
        text.append(f"  {board.samples} samples every {board.header.interval:g}s")
        text.append(f"  @{where}")
        text.append(f"  {journal}", style="dim")
        self.update(text)
