"""HostPanel: each host's OS view (CPU, iowait, memory, disk, load) from the newest sample."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rich.cells import cell_len
from rich.console import Console, ConsoleOptions, RenderResult
from rich.segment import Segment
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


Row = tuple[Text | str, ...]


def host_notes(facts: object) -> str:
    """What the journal's host facts say about reaching the host, after its name: files
    over the exec channel (its sshd has no SFTP subsystem), sudo for restarts and the
    drop-in."""
    if not isinstance(facts, dict):
        return ""
    notes = [*(["no sftp"] if facts.get("files") == "exec" else []),
             *(["sudo"] if facts.get("sudo") is True else [])]
    return f" ({', '.join(notes)})" if notes else ""


def host_table(rows: list[Row]) -> Table:
    """The panel as a Rich Table: a host column that takes the room left (ellipsis when
    short of it), the figures right-justified, one space after each column."""
    table = Table(box=None, padding=(0, 1, 0, 0), expand=True, show_edge=False)
    table.add_column("host", no_wrap=True, overflow="ellipsis", ratio=2)
    for _, label in COLUMNS:
        table.add_column(label, justify="right", no_wrap=True)
    for row in rows:
        table.add_row(*row)
    return table


class HostLines:
    """:func:`host_table`'s lines, laid out here: the panel changes at every sample, and
    Rich's Table measured and laid out its cells again each time (a tenth of the idle live
    screen's CPU).  Where the figures leave the host column under two cells, the Table
    (which then narrows columns its own way) draws them; tests/unit/test_host_panel.py checks
    the two give the same segments."""

    def __init__(self, rows: list[Row]) -> None:
        self.rows = rows

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        header = ("host", *(label for _, label in COLUMNS))
        cells = [tuple(str(cell) for cell in row) for row in self.rows]
        widths = [max(cell_len(c) for c in column) + 1
                  for column in list(zip(header, *cells, strict=True))[1:]]
        room = options.max_width - sum(widths)
        if room < 2:
            yield host_table(self.rows)
            return
        widths.insert(0, room)
        yield from self._line(header, widths, console.get_style("table.header"))
        for row in cells:
            yield from self._line(row, widths, None)

    @staticmethod
    def _line(cells: tuple[str, ...], widths: list[int], style: Any) -> Iterator[Segment]:
        host = Text(cells[0])
        host.truncate(widths[0] - 1, overflow="ellipsis", pad=True)
        parts = [host.plain, " "]
        for cell, width in zip(cells[1:], widths[1:], strict=True):
            parts += [" " * (width - 1 - cell_len(cell)), cell, " "]
        yield Segment("".join(parts), style)
        yield Segment.line()


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
        rows: list[Row] = []
        for host, os_metrics in board.hosts.items():
            metrics: dict[str, float | None] = dict(os_metrics)
            load = board.load_by_src.get(f"sysbench@{host}") if board.load_running else None
            metrics["tps"] = load.tps if load is not None else None
            metrics["p95"] = load.lat if load is not None else None
            rows.append((Text(host + host_notes(board.header.hosts.get(host))),
                         *(_cell(m, metrics.get(m)) for m, _ in COLUMNS)))
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
        self.update(HostLines(rows), layout=layout)
