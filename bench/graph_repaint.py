"""Measure CPU ms per repaint of 8 live graphs for four Textual graph widgets, side by side.

Candidates: textual-plotext ``PlotextPlot``, textual-plot ``PlotWidget``, Textual's built-in
``Sparkline`` and knobtop's own braille ``MetricGraph`` (knobtop.ui.widgets.metric_graph).
Each runs in a headless Textual app (``App.run_test``) with 8 graphs in a 2-column x 4-row
grid.  One "repaint" = append one point to every graph's 600-point rolling
window, refresh all 8 widgets, then force the compositor pass with ``pilot.pause()``.  The cost
is ``time.process_time()`` around that whole step (median over N repaints after warm-up).

Headless mode normally skips turning the compositor update into terminal escape sequences;
this script does that step too (``CompositorUpdate.render_segments``) so the cost matches what
a real terminal session pays (only the final ``write()`` to the tty is missing).  A baseline
row (same loop, no graph touched) shows the fixed cost of the measurement loop itself; the
"net" column subtracts it.

Run:  .venv/bin/python bench/graph_repaint.py [--repaints N] [--warmup W]
"""

from __future__ import annotations

import argparse
import asyncio
import math
import random
import statistics
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from textual._compositor import CompositorUpdate
from textual.app import App, ComposeResult
from textual.pilot import Pilot
from textual.widget import Widget
from textual.widgets import Sparkline
from textual_hires_canvas import Canvas
from textual_plot import HiResMode, PlotWidget
from textual_plotext import PlotextPlot

from knobtop.ui.widgets.metric_graph import MetricGraph

WINDOW = 600  # points per graph (rolling window)
N_GRAPHS = 8
SIZES: tuple[tuple[int, int], ...] = ((160, 48), (80, 24))
PAUSES_PER_REPAINT = 2  # textual-plot draws onto child Canvases during render -> 2nd frame

# ---------------------------------------------------------------------------------------------
# Render-call counters (to prove that every repaint really renders every graph).
# ---------------------------------------------------------------------------------------------
COUNTS: dict[str, int] = {"plotext": 0, "tplot": 0, "canvas_lines": 0, "spark": 0, "mgraph": 0}

_orig_canvas_render_line = Canvas.render_line


def _counting_canvas_render_line(self: Canvas, y: int) -> Any:
    COUNTS["canvas_lines"] += 1
    return _orig_canvas_render_line(self, y)


Canvas.render_line = _counting_canvas_render_line  # type: ignore[method-assign]


class CountingPlotext(PlotextPlot):
    def render(self) -> Any:
        COUNTS["plotext"] += 1
        return super().render()


class CountingPlotWidget(PlotWidget):
    def _render_plot(self) -> None:
        COUNTS["tplot"] += 1
        super()._render_plot()


class CountingSparkline(Sparkline):
    def render(self) -> Any:
        COUNTS["spark"] += 1
        return super().render()


class CountingMetricGraph(MetricGraph):
    """Counts strip builds (MetricGraph renders once per data version and size, then caches)."""

    def _build(self, width: int, height: int) -> Any:
        COUNTS["mgraph"] += 1
        return super()._build(width, height)


# ---------------------------------------------------------------------------------------------
# Data: deterministic random walk per graph, rolling window of WINDOW points.
# ---------------------------------------------------------------------------------------------
class Series:
    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.t = 0
        self.y = 50.0
        self.xs: deque[int] = deque(maxlen=WINDOW)
        self.ys: deque[float] = deque(maxlen=WINDOW)
        for _ in range(WINDOW):
            self.step()

    def step(self) -> None:
        self.y = max(0.0, self.y + self.rng.gauss(0, 3) + 2 * math.sin(self.t / 40))
        self.xs.append(self.t)
        self.ys.append(self.y)
        self.t += 1

    def markers(self) -> tuple[int, int]:
        """Two vertical-marker x positions inside the visible window."""
        return self.t - 450, self.t - 150


# ---------------------------------------------------------------------------------------------
# Candidates.  ``update`` pushes the current window into the widget and refreshes it.
# ---------------------------------------------------------------------------------------------
@dataclass
class Candidate:
    name: str
    counter: str | None
    make: Callable[[], Widget]
    update: Callable[[Any, Series], None]
    markers: str
    axes: str
    samples: dict[tuple[int, int], list[float]] = field(default_factory=dict)
    renders: dict[tuple[int, int], float] = field(default_factory=dict)
    canvas_lines: dict[tuple[int, int], float] = field(default_factory=dict)


def _plotext_update(w: PlotextPlot, s: Series) -> None:
    plt = w.plt
    plt.clear_data()
    plt.plot(list(s.xs), list(s.ys))
    m1, m2 = s.markers()
    plt.vline(m1, "red")
    plt.vline(m2, "red")
    w.refresh()


def _tplot_make() -> Widget:
    return CountingPlotWidget(allow_pan_and_zoom=False)


def _tplot_update(w: PlotWidget, s: Series) -> None:
    w.clear()
    w.plot(
        np.fromiter(s.xs, float, WINDOW),
        np.fromiter(s.ys, float, WINDOW),
        hires_mode=HiResMode.QUADRANT,
    )
    m1, m2 = s.markers()
    w.add_v_line(m1, "red")  # native vertical marker
    w.add_v_line(m2, "red")
    w.refresh()


def _spark_update(w: Sparkline, s: Series) -> None:
    w.data = list(s.ys)
    w.refresh()


def _mgraph_make() -> Widget:
    return CountingMetricGraph("tps", unit="/s")


def _mgraph_update(w: MetricGraph, s: Series) -> None:
    m1, m2 = s.markers()
    # set_data copies the points and refreshes itself (only if they changed; here they always do).
    w.set_data(list(zip(s.xs, s.ys, strict=True)), [(m1, "m1"), (m2, "m2")], s.xs[0], s.xs[-1])


def _noop_update(w: Widget, s: Series) -> None:
    """Baseline: data still rolls, but nothing is pushed to or refreshed on any widget."""


CANDIDATES = [
    Candidate("baseline (no graph refreshed)", None, Widget, _noop_update, "-", "-"),
    Candidate(
        "textual-plotext PlotextPlot",
        "plotext",
        CountingPlotext,
        _plotext_update,
        "yes (plt.vline)",
        "yes (x/y ticks, labels, title)",
    ),
    Candidate(
        "textual-plot PlotWidget",
        "tplot",
        _tplot_make,
        _tplot_update,
        "yes (add_v_line)",
        "yes (x/y ticks, set_x/ylabel)",
    ),
    Candidate(
        "textual Sparkline",
        "spark",
        CountingSparkline,
        _spark_update,
        "NO (no marker support)",
        "no (bars only, no axis/labels)",
    ),
    Candidate(
        "knobtop MetricGraph",
        "mgraph",
        _mgraph_make,
        _mgraph_update,
        "yes (│ column + ▼ newest)",
        "y max/min labels, title+value; no x ticks",
    ),
]


# ---------------------------------------------------------------------------------------------
# Headless app.
# ---------------------------------------------------------------------------------------------
class BenchApp(App[None]):
    CSS = """
    Screen { layout: grid; grid-size: 2 4; }
    Screen > * { width: 1fr; height: 1fr; }
    """

    def __init__(self, make: Callable[[], Widget]) -> None:
        super().__init__()
        self._make = make
        self.graphs: list[Widget] = []
        self.encoded_chars = 0

    def compose(self) -> ComposeResult:
        self.graphs = [self._make() for _ in range(N_GRAPHS)]
        yield from self.graphs

    def _display(self, screen: Any, renderable: Any) -> None:
        # Headless skips ANSI encoding; do it so the measured cost matches a real terminal.
        if isinstance(renderable, CompositorUpdate):
            self.encoded_chars += len(renderable.render_segments(self.console))
        super()._display(screen, renderable)


async def _settle(pilot: Pilot[None]) -> None:
    for _ in range(PAUSES_PER_REPAINT):
        await pilot.pause()


async def run_one(cand: Candidate, size: tuple[int, int], repaints: int, warmup: int) -> None:
    app = BenchApp(cand.make)
    series = [Series(seed=i) for i in range(N_GRAPHS)]
    async with app.run_test(size=size) as pilot:
        await _settle(pilot)
        for w, s in zip(app.graphs, series, strict=True):
            cand.update(w, s)
        await _settle(pilot)
        samples: list[float] = []
        start_counts = dict(COUNTS)
        for i in range(warmup + repaints):
            if i == warmup:
                start_counts = dict(COUNTS)
            t0 = time.process_time()
            for w, s in zip(app.graphs, series, strict=True):
                s.step()
                cand.update(w, s)
            await _settle(pilot)
            dt = time.process_time() - t0
            if i >= warmup:
                samples.append(dt * 1000.0)
        cand.samples[size] = samples
        if cand.counter is not None:
            n = COUNTS[cand.counter] - start_counts[cand.counter]
            cand.renders[size] = n / (repaints * N_GRAPHS)
        if cand.counter == "tplot":
            lines = COUNTS["canvas_lines"] - start_counts["canvas_lines"]
            cand.canvas_lines[size] = lines / repaints
        if app.encoded_chars == 0:
            raise RuntimeError("compositor produced no output - rendering did not happen")


def print_table(size: tuple[int, int], repaints: int) -> None:
    base = statistics.median(CANDIDATES[0].samples[size])
    nets = {c.name: statistics.median(c.samples[size]) - base for c in CANDIDATES[1:]}
    cheapest = min(nets.values())
    w, h = size
    print(
        f"\nTerminal {w}x{h}: 8 graphs (2 cols x 4 rows), {WINDOW}-pt window, "
        f"median of {repaints} repaints, CPU ms per repaint of all 8 graphs"
    )
    hdr = f"{'widget':<32}{'total ms':>9}{'p90 ms':>8}{'net ms':>8}{'ratio':>7}"
    hdr += f"{'renders/graph':>15}  vertical marker"
    print(hdr)
    print("-" * len(hdr) + "-" * 14)
    for c in CANDIDATES:
        xs = sorted(c.samples[size])
        med = statistics.median(xs)
        p90 = xs[int(0.9 * (len(xs) - 1))]
        if c.counter is None:
            print(f"{c.name:<32}{med:>9.2f}{p90:>8.2f}{'':>8}{'':>7}{'':>15}  -")
            continue
        net = nets[c.name]
        ratio = net / cheapest if cheapest > 0 else float("nan")
        r = f"{c.renders[size]:.2f}"
        print(f"{c.name:<32}{med:>9.2f}{p90:>8.2f}{net:>8.2f}{ratio:>6.1f}x{r:>15}  {c.markers}")
    tp = next(c for c in CANDIDATES if c.counter == "tplot")
    print(
        f"  (textual-plot canvas lines rendered per repaint: {tp.canvas_lines[size]:.0f}; "
        "1 Hz CPU% of one core = net ms / 10)"
    )


async def main_async(repaints: int, warmup: int) -> None:
    for size in SIZES:
        for cand in CANDIDATES:
            await run_one(cand, size, repaints, warmup)
        print_table(size, repaints)
    print("\nCapabilities:")
    for c in CANDIDATES[1:]:
        print(f"  {c.name:<30} marker: {c.markers:<24} axes/labels: {c.axes}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repaints", type=int, default=50, help="measured repaints (default 50)")
    ap.add_argument("--warmup", type=int, default=5, help="warm-up repaints (default 5)")
    args = ap.parse_args()
    t0 = time.monotonic()
    asyncio.run(main_async(args.repaints, args.warmup))
    print(f"\n(total wall time {time.monotonic() - t0:.1f}s, python {sys.version.split()[0]})")


if __name__ == "__main__":
    main()
