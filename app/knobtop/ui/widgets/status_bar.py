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
        background: $panel;
        color: $foreground;
        padding: 0 1;
    }
    """

    def show(self, board: MetricBoard | None, journal: str, state: str = "") -> None:
        text = Text(no_wrap=True, overflow="ellipsis")
        if board is None:
            text.append(state or "connecting ...", style="italic")
            self.update(text)
            return
        server = board.header.server
        flavor = "MariaDB" if server.get("flavor") == "mariadb" else "MySQL"
        where = server.get("socket") or f"{server.get('host')}:{server.get('port')}"
        if server.get("via"):
            where = f"{server['via']} ({where} via ssh)"
        text.append(f"{flavor} {server.get('version', '?')}", style="bold")
        text.append(f" @{where}  ")
        if board.load_running:
            text.append(f"▶ {board.load_label}", style="bold")
        else:
            text.append("■ load stopped")
        text.append(f"  every {board.header.interval:g}s  {board.samples} samples")
        if state:
            text.append(f"  {state}", style="bold reverse")
        text.append(f"  {journal}", style="dim")
        self.update(text)
