"""HostPanel: each host's OS view (CPU, iowait, memory, disk, load) from the newest sample."""

from __future__ import annotations

from typing import Any

from rich.table import Table
from rich.text import Text
from textual.widgets import Static

from knobtop.metrics.board import MetricBoard
from knobtop.ui.widgets.metric_graph import default_fmt

COLUMNS = (
    ("tps", "tps"),
    ("p95", "p95"),
    ("cpu", "cpu%"),
    ("iowait", "io%"),
    ("mem_used_pct", "mem%"),
    ("read_bps", "rd/s"),
    ("write_bps", "wr/s"),
    ("iops", "iops"),
    ("load1", "load"),
)


def _cell(metric: str, value: float | None) -> str:
    if value is None:
        return "–"  # noqa: RUF001
    if metric in ("cpu", "iowait", "mem_used_pct"):
        return f"{value:.0f}"
    if metric == "p95":
        return f"{value:.1f}"
    if metric == "load1":
        return f"{value:.2f}"
    return default_fmt(value)


class HostPanel(Static):
    DEFAULT_CSS = """
    HostPanel {
        height: auto;
        max-height: 10;
        border: round $primary 50%;
        border-title-color: $text-accent;
    }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__("", **kwargs)
        self.border_title = "Hosts"
        self._shown: tuple[tuple[str, ...], ...] = ()  # the figures on screen

    def show(self, board: MetricBoard) -> None:
        rows: list[tuple[Text | str, ...]] = []
        for host, os_metrics in board.hosts.items():
            metrics: dict[str, float | None] = dict(os_metrics)
            load = board.load_by_src.get(f"sysbench@{host}") if board.load_running else None
            metrics["tps"] = load.tps if load is not None else None
            metrics["p95"] = load.lat if load is not None else None
            rows.append((Text(host), *(_cell(m, metrics.get(m)) for m, _ in COLUMNS)))
        for node, hit in board.ndb_hit.items():
            shown = "–" if hit is None else f"{hit:.1f}%"  # noqa: RUF001
            rows.append((Text(f"ndb node {node}"), f"dpb hit {shown}",
                         *[""] * (len(COLUMNS) - 1)))
        key = tuple(tuple(str(cell) for cell in row) for row in rows)
        if key == self._shown:
            return  # the same figures: nothing to repaint
        # A new row (a host or node) changes the panel's height; new figures do not.
        layout = len(key) != len(self._shown)
        self._shown = key
        table = Table(box=None, padding=(0, 1, 0, 0), expand=True, show_edge=False)
        table.add_column("host", no_wrap=True, overflow="ellipsis", ratio=2)
        for _, label in COLUMNS:
            table.add_column(label, justify="right", no_wrap=True)
        for row in rows:
            table.add_row(*row)
        self.update(table, layout=layout)
