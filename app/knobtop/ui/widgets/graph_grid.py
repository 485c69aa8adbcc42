"""GraphGrid: the live graphs, fed from the MetricBoard at a paint rate of its own."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from textual.app import ComposeResult
from textual.containers import Grid

from knobtop.metrics.board import MetricBoard
from knobtop.ui.widgets.metric_graph import MetricGraph, default_fmt


def _pct(value: float) -> str:
    return f"{value:.1f}"


@dataclass(frozen=True)
class GraphSpec:
    metric: str
    title: str
    unit: str = ""
    fmt: Callable[[float], str] = default_fmt


GRAPHS: tuple[GraphSpec, ...] = (
    GraphSpec("tps", "Server TPS"),
    GraphSpec("qps", "Server QPS"),
    GraphSpec("load_tps", "sysbench TPS"),
    GraphSpec("load_p95", "sysbench p95", " ms"),
    GraphSpec("hit_ratio", "BP hit ratio", "%", _pct),
    GraphSpec("dirty_pct", "Dirty pages", "%", _pct),
    GraphSpec("history_len", "History length"),
    GraphSpec("checkpoint_age", "Checkpoint age", "B"),
    GraphSpec("cpu", "Host CPU", "%", _pct),
)


class GraphGrid(Grid):
    """Nine graphs sharing one time window, each with the change/load markers."""

    DEFAULT_CSS = """
    GraphGrid {
        grid-size: 3;
        grid-gutter: 0 1;
        height: 1fr;
        padding: 0 0 0 0;
    }
    GraphGrid MetricGraph {
        height: 1fr;
    }
    """

    window = 120.0  # seconds of history on screen

    def compose(self) -> ComposeResult:
        for spec in GRAPHS:
            yield MetricGraph(spec.title, fmt=spec.fmt, unit=spec.unit, id=f"graph-{spec.metric}")

    def draw(self, board: MetricBoard) -> None:
        # A strip chart: the newest sample sits at the right edge and history scrolls left.
        t_end = board.now
        t_start = t_end - self.window
        markers = [(m.t, m.label) for m in board.markers if m.t >= t_start]
        for spec in GRAPHS:
            graph = self.query_one(f"#graph-{spec.metric}", MetricGraph)
            graph.set_data(board.series[spec.metric].points(t_start), markers, t_start, t_end)
