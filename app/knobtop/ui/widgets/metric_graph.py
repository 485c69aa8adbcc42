"""A braille line plot of one time series, or two overlaid, with vertical change markers.

Layout at 40x6 (a ramp with a gap at 60-70 s, a knob change at 40 s, a note at 90 s, a load
phase change at 20 s)::

    tps 1.20K/s                      0-1.20K   <- title, latest value+unit, y range (holds it)
    1.20K     ╷   │io_cap=1000 ⢀⣀⡠note│⠉   <- margin: y max; ticks (load phases) on the top row
                     │        ⢀⣀⡠⠤⠒│⠉⠁         only; each full-height line's tag beside it
                     │ ⢀⣀⡠⠤  ⠈⠁    │
                ⢀⣀⠤⠤⠒│⠉⠁           │
        0 ⣀⠤⠔⠒⠊⠉⠁    │             │           <- ... and the y minimum (usually 0) at the bottom

Full-height lines are for what a person did (``markers``); load phases and gaps are ``ticks``.
Data first: lines and ticks are drawn under the series (a cell holding dots shows the dots),
and repeated on the time axis below the plot where there is one.  Each line's tag goes right
of it, or left when there is no room, whole, on a plot row where it hides no dot, newest
first, never over another line or tag (``place_tags``); a tag with no such place is left
out, never cut (the journal pane lists every change).

Everything the widget shows is computed by the pure module-level helpers below
(``column_means`` -> ``y_range`` -> ``rasterize`` -> braille text), so they can be tested
without an app.  The widget itself only turns their output into pre-styled ``Strip``s, once per
(data version, size), and serves them from ``render_line``.

Overlay (``set_data(..., overlay=...)``, used by ``knobtop compare``): a second series "B" is
drawn in the same plot on the same y range (``shared_y_range``), each series rasterised on its
own and the dot masks OR-ed, so a cell holds the dots of both.  ``overlay_owners`` says whose
dots a cell holds, which picks its style (A, B, or both).  Without colour (NO_COLOR) the title
names each side's latest value ("A 1.20K  B 1.41K"), B's markers are dashed (``┆``) and
``show_series`` can hide either line.  ``more`` adds series C.. (up to MAX_SERIES, compare of
N journals), each in a colour of its own; ``show_only`` draws one of them alone.
"""
# Over 500 lines: the braille plot, its axis ticks, markers and tags are drawn in one
# pass over the same cells (bench/graph_repaint.py measures that pass); apart they would
# each walk the cells again.

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence
from typing import ClassVar, NamedTuple

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.geometry import Region
from textual.strip import Strip
from textual.widget import Widget

from knobtop.metrics.board import Points

MARGIN = 6
"""Left margin in cells: a 5-cell y label plus one space.  Fixed (not fitted to the labels) so
that graphs stacked in a column share the same x axis and a knob change lines up across them."""
LABEL_WIDTH = MARGIN - 1
MIN_PLOT_COLS = 10  # below MARGIN + this many cells the margin is dropped
MARKER_GLYPH = "│"  # not a braille glyph, so markers stay distinct without colour (NO_COLOR)
OVERLAY_MARKER_GLYPH = "┆"  # a marker of the overlaid series B: dashed, so it reads as B's
SHARED_MARKER_GLYPH = "║"  # A and B both have a marker in this column
NEWEST_GLYPH = "▼"  # compare's overlay: the newest marker, in the title's free gap
TICK_GLYPH = "╷"  # a light marker (a load phase change, a gap): top plot row only
FRAME_TICK_GLYPH = "╵"  # a light marker again, on the time axis below the plot
RANGE_SEP = "\u2013"  # en dash between the y range labels, "0-1.50K"
NO_VALUE = "\u2013"  # the latest point is a gap (e.g. the load was stopped)
BRAILLE_BASE = 0x2800

# Bit of each dot of a braille cell, indexed [dot row 0..3][dot column 0..1] (Unicode numbers
# the dots 1-2-3 down the left, 4-5-6 down the right, then 7 and 8 on the bottom row).
_DOT_BITS = ((0x01, 0x08), (0x02, 0x10), (0x04, 0x20), (0x40, 0x80))
# Cell text for each 8-bit dot mask.  An empty cell is a space rather than U+2800 so that a gap
# copies as blank and never carries a glyph.
_CELL_TEXT = tuple(" " if mask == 0 else chr(BRAILLE_BASE + mask) for mask in range(256))

_NICE_MANTISSAS = (1.0, 1.2, 1.5, 2.0, 2.5, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0)
_STEP_MANTISSAS = (1.0, 2.0, 2.5, 5.0, 10.0)
_SUFFIXES = (("", 1.0), ("K", 1e3), ("M", 1e6), ("G", 1e9), ("T", 1e12))

Point = tuple[float, float | None]
Column = tuple[int, float, bool]  # (dot column, mean value, joined to the previous column)

# Whose dots a cell of an overlay holds (``overlay_owners``): bit 0 is A's, bit 1 is B's.
EMPTY, OWNER_A, OWNER_B, OWNER_BOTH = 0, 1, 2, 3
# More than two series (``set_data(..., more=...)``, compare of N journals, issue 19): a
# cell's owner is its one series' number + 1, or OWNER_SEVERAL (``series_owners``).
MAX_SERIES = 5
OWNER_SEVERAL = 255


# ---------------------------------------------------------------------------------------------
# Pure helpers
# ---------------------------------------------------------------------------------------------
def _si(value: float, sig: int) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    sign = "-" if value < 0 else ""
    a = abs(value)
    if a < 1.0 - 0.5 * 10.0 ** -(sig - 1):  # rounds to below 1: fixed decimals, no suffix
        text = f"{a:.{sig - 1}f}"
        return text if text.strip("0.") == "" else sign + text
    for suffix, scale in _SUFFIXES:
        x = a / scale
        for decimals in range(sig - 1, 0, -1):
            if x < 10.0 ** (sig - decimals) - 0.5 * 10.0**-decimals:
                return f"{sign}{x:.{decimals}f}{suffix}"
        if x < 999.5:
            return f"{sign}{x:.0f}{suffix}"
    return f"{sign}{a / 1e12:.0f}T"


def default_fmt(value: float) -> str:
    """Three significant digits with a K/M/G/T suffix: 1234 -> "1.23K", 0.5 -> "0.50"."""
    return _si(value, 3)


def axis_label(
    value: float, fmt: Callable[[float], str] = default_fmt, width: int = LABEL_WIDTH
) -> str:
    """A y-axis label of at most ``width`` cells.

    Tries ``fmt``, then ``default_fmt``, then two significant digits ("-1.2K"), then crops.
    Zero is always "0".
    """
    if value == 0:
        return "0"
    text = ""
    for candidate in (fmt(value), default_fmt(value), _si(value, 2)):
        text = candidate
        if cell_len(text) <= width:
            return text
    return set_cell_size(text, width)


def _nice(value: float, mantissas: tuple[float, ...]) -> float:
    exp = math.floor(math.log10(value))
    for mantissa in mantissas:
        nice = float(f"{mantissa}e{exp}")  # decimal parse: 3e-1 is 0.3, not 0.30000000000000004
        if nice >= value * (1.0 - 1e-12):
            return nice
    return float(f"1e{exp + 1}")


def nice_max(value: float) -> float:
    """Smallest of 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8 x 10^k >= value (1.0 if value <= 0)."""
    if not (value > 0 and math.isfinite(value)):
        return 1.0
    return _nice(value, _NICE_MANTISSAS)


def nice_step(value: float) -> float:
    """Smallest of 1, 2, 2.5, 5 x 10^k that is >= value (1.0 if value <= 0): a tick step."""
    if not (value > 0 and math.isfinite(value)):
        return 1.0
    return _nice(value, _STEP_MANTISSAS)


def y_range(values: Sequence[float]) -> tuple[float, float]:
    """The y axis (lo, hi) for the plotted values.

    The baseline is 0, so a 20 % throughput drop looks like 20 % of the plot height and the
    axis never exaggerates noise.  Only when every value sits in the upper half of [0, max]
    (a 99.2-99.9 % hit ratio, a steady 950-1000 tps) would a 0 baseline squash the line into
    the top row; then the axis is zoomed to whole tick steps around [min, max], and the bottom
    label (and the "lo-hi" range in the title row) shows that minimum instead of 0, so the
    zoom is never hidden.  A series flat to three significant digits (a steady 1 qps with a
    sampler's jitter) is not zoomed: "1.00-1.00" told nothing, "0-1" shows its level.  A
    zoom's step is at least one unit of the top's third digit, so its two ends never read
    alike.  Data below 0 get a nice floor below 0.
    """
    if not values:
        return 0.0, 1.0
    lo, hi = min(values), max(values)
    if lo >= 0:
        if hi > lo > hi / 2:
            digit = 10.0 ** (math.floor(math.log10(hi)) - 2)  # hi's third significant digit
            if hi - lo >= digit * (1.0 - 1e-9):
                step = max(nice_step((hi - lo) / 4), digit)
                return math.floor(lo / step) * step, math.ceil(hi / step) * step
        return 0.0, nice_max(hi)
    if hi <= 0:
        return -nice_max(-lo), 0.0
    step = nice_step((hi - lo) / 4)
    return math.floor(lo / step) * step, math.ceil(hi / step) * step


def time_to_col(t: float, t_start: float, t_end: float, ncols: int) -> int | None:
    """Column (0..ncols-1) of time ``t`` on an axis spanning [t_start, t_end]; None outside."""
    if ncols <= 0 or not t_end > t_start or not t_start <= t <= t_end:
        return None
    return min(ncols - 1, int((t - t_start) / (t_end - t_start) * ncols))


def cell_aligned(t_start: float, t_end: float, ncols: int) -> tuple[float, float]:
    """The window [t_start, t_end] moved later by less than one column's time, so that its
    column edges fall on whole multiples of a column's time.

    A window that slides with every sample then keeps each column's samples (and so its
    dots) until a whole column's time has passed and every column moves one place left;
    in between only the newest cells change (the line's join into the newest column may
    touch the cell before it). Unaligned, every column's share of samples
    changed at every sample, and a graph with any history of ups and downs was redrawn
    whole each time."""
    span = t_end - t_start
    if ncols <= 0 or not span > 0:
        return t_start, t_end
    col = span / ncols
    end = math.ceil(t_end / col) * col
    return end - span, end


def scale_to_row(value: float, lo: float, hi: float, dot_rows: int) -> int:
    """Dot row (0 = top) of ``value``: ``hi`` on row 0, ``lo`` on row dot_rows-1, clamped."""
    if dot_rows <= 1 or not hi > lo:
        return max(0, dot_rows - 1)
    row = int((hi - value) / (hi - lo) * (dot_rows - 1) + 0.5)
    return 0 if row < 0 else min(row, dot_rows - 1)


def column_means(points: Sequence[Point], t_start: float, t_end: float, ncols: int) -> list[Column]:
    """Bucket ``points`` (sorted by t) into ``ncols`` dot columns over [t_start, t_end].

    Returns ``(column, mean, joined)`` for every column holding at least one value; ``joined``
    is False when a gap (a None or non-finite value, or the start of the data) precedes the
    column, so no line is drawn into it.  Points outside [t_start, t_end] are ignored.

    Mean, not max: for throughput the mean of the samples in a column *is* the throughput over
    that slice of time, so the line's level does not depend on how many samples share a column
    (window length / widget width).  Max would drift upward with noise, make a knob that adds
    jitter look like a win, and erase one-second stalls (tps dropping to 0 during a checkpoint)
    entirely; the mean still shows them as a dip.
    """
    if ncols <= 0 or not t_end > t_start:
        return []
    scale = ncols / (t_end - t_start)
    last = ncols - 1
    out: list[Column] = []
    col, total, n, joined, broken = -1, 0.0, 0, False, True
    for t, v in points:
        if t < t_start or t > t_end:
            continue
        if v is None or v - v != 0.0:  # None, NaN or +-inf (inf - inf is NaN); no call
            broken = True
            continue
        c = int((t - t_start) * scale)
        if c > last:
            c = last
        if c != col:
            if n:
                out.append((col, total / n, joined))
            col, total, n, joined = c, v, 1, not broken
        else:
            total += v
            n += 1
        broken = False
    if n:
        out.append((col, total / n, joined))
    return out


def braille_mask(left: int, right: int) -> int:
    """Dot mask of a braille cell from two 4-bit column bitmaps (bit 0 = top dot row)."""
    mask = 0
    for row, (left_bit, right_bit) in enumerate(_DOT_BITS):
        if left >> row & 1:
            mask |= left_bit
        if right >> row & 1:
            mask |= right_bit
    return mask


def braille_char(left: int, right: int) -> str:
    """The braille character for two 4-bit column bitmaps; a space when no dot is set."""
    return _CELL_TEXT[braille_mask(left, right)]


# braille_mask for every (left | right << 4) pair of column nibbles.
_PAIR_MASK = bytes(braille_mask(i & 15, i >> 4) for i in range(256))


def column_bitmaps(
    columns: Sequence[Column], lo: float, hi: float, dot_cols: int, dot_rows: int
) -> list[int]:
    """Draw ``columns`` (from ``column_means``) as a line: one bitmap per dot column.

    Bit y of entry x is the dot at column x, row y (row 0 at the top).  Joined columns are
    connected: empty columns in between are interpolated and a vertical jump is split between
    the two columns at its midpoint, so steep edges stay continuous.
    """
    bitmaps = [0] * max(0, dot_cols)
    if dot_rows <= 0:
        return bitmaps
    px = py = -1
    for x, value, joined in columns:
        if not 0 <= x < dot_cols:
            continue
        y = scale_to_row(value, lo, hi, dot_rows)
        if joined and 0 <= px < x:
            last_y, span = py, x - px
            for cx in range(px + 1, x + 1):
                cy = py + math.floor((y - py) * (cx - px) / span + 0.5)
                if last_y - 1 <= cy <= last_y + 1:
                    bitmaps[cx] |= 1 << cy
                elif cy > last_y:  # going down: upper half in the previous column
                    mid = (last_y + cy) >> 1
                    bitmaps[cx - 1] |= (2 << mid) - (1 << last_y)  # rows last_y..mid
                    bitmaps[cx] |= (2 << cy) - (2 << mid)  # rows mid+1..cy
                else:  # going up: lower half in the previous column
                    mid = (last_y + cy) >> 1
                    bitmaps[cx - 1] |= (2 << last_y) - (2 << mid)  # rows mid+1..last_y
                    bitmaps[cx] |= (2 << mid) - (1 << cy)  # rows cy..mid
                last_y = cy
        else:
            bitmaps[x] |= 1 << y
        px, py = x, y
    return bitmaps


def encode_cells(bitmaps: Sequence[int], cell_rows: int) -> list[bytearray]:
    """Braille dot masks, one bytearray per cell row, from dot-column bitmaps (2 per cell).

    Only cells with at least one dot are visited (a line touches one or two cells per column).
    """
    cell_cols = (len(bitmaps) + 1) // 2
    rows = [bytearray(cell_cols) for _ in range(max(0, cell_rows))]
    pair = _PAIR_MASK
    for c in range(cell_cols):
        left = bitmaps[2 * c]
        right = bitmaps[2 * c + 1] if 2 * c + 1 < len(bitmaps) else 0
        both = left | right
        while both:
            shift = ((both & -both).bit_length() - 1) & ~3  # first dot row of the lowest cell
            r = shift >> 2
            if r >= cell_rows:
                break
            rows[r][c] = pair[(left >> shift & 15) | (right >> shift & 15) << 4]
            both &= -(16 << shift)  # drop this cell's four dot rows (and any below)
    return rows


def rasterize(
    columns: Sequence[Column], lo: float, hi: float, cell_cols: int, cell_rows: int
) -> list[bytearray]:
    """``column_bitmaps`` + ``encode_cells``: braille dot masks of the line, per cell row."""
    return encode_cells(column_bitmaps(columns, lo, hi, cell_cols * 2, cell_rows * 4), cell_rows)


def cells_text(masks: bytes | bytearray) -> str:
    """The text of one row of braille cells (a space for each empty cell)."""
    return "".join([_CELL_TEXT[mask] for mask in masks])


def span_label(seconds: float) -> str:
    """A time offset for the x axis: "now", "-30s", "-2m", "-1h30m"."""
    s = round(abs(seconds))
    if s == 0:
        return "now"
    sign = "-" if seconds < 0 else "+"
    if s < 120 and s % 60:
        return f"{sign}{s}s"
    if s < 3600:
        return f"{sign}{s // 60}m" + (f"{s % 60}s" if s % 60 else "")
    h, m = divmod(s // 60, 60)
    return f"{sign}{h}h" + (f"{m}m" if m else "")


def time_axis_text(cols: int, t_start: float, t_end: float,
                   keep_clear: Collection[int] = ()) -> str:
    """One row of ``cols`` cells: the window's start at the left, its middle, "now" at the
    right (times relative to ``t_end``); labels that would collide are left out, and so is
    a label over a column of ``keep_clear`` (a marker's, drawn on this row instead)."""
    if cols <= 0:
        return ""
    row = [" "] * cols
    right = span_label(0.0)
    left = span_label(t_start - t_end)
    middle = span_label((t_start - t_end) / 2)
    placed: list[tuple[int, str]] = [(0, left), (cols - len(right), right)]
    mid_at = cols // 2 - len(middle) // 2
    if mid_at > len(left) + 1 and mid_at + len(middle) < cols - len(right) - 1:
        placed.append((mid_at, middle))
    if len(left) + len(right) + 1 > cols:
        placed = [(cols - len(right), right)] if len(right) <= cols else []
    for at, text in placed:
        if any(at <= col < at + len(text) for col in keep_clear):
            continue
        for i, ch in enumerate(text):
            if 0 <= at + i < cols:
                row[at + i] = ch
    return "".join(row)


def shared_y_range(*series: Sequence[Column]) -> tuple[float, float]:
    """``y_range`` over the values of several series, so overlaid lines share one y axis."""
    return y_range([value for columns in series for _, value, _ in columns])


def value_range(columns: Sequence[Column], latest: float | None) -> tuple[float, float]:
    """``y_range`` over the column means and the latest value: the newest point can sit in a
    column still being averaged (or be a spike the mean flattens), and the range printed in
    the title must contain the value printed beside it."""
    values = [value for _, value, _ in columns]
    if latest is not None and math.isfinite(latest):
        values.append(latest)
    return y_range(values)


def latest_value(points: Sequence[Point]) -> float | None:
    """The value the title shows: the newest point's (None for a gap)."""
    return points[-1][1] if points else None


def place_tags(
    markers: Sequence[tuple[int, str]], obstacles: Sequence[int], cols: int,
    fits: Callable[[int, int], bool] | None = None,
) -> list[tuple[int, str]]:
    """Where each marker's tag goes on a row of ``cols`` cells: ``(start, text)`` runs.

    ``markers`` are (column, tag) sorted by column (oldest first); ``obstacles`` are other
    columns that must stay visible.  The newest marker is placed first (a change just made,
    at "now", is the one a person looks for), then older ones in the cells left.  A tag goes
    right of its line when it fits there whole (keeping one blank before the next line or
    tag), else left of its line when it fits there whole; else it is left out.  A tag is
    never cut ("io_c…" named nothing): it is whole or absent, and the journal pane lists
    every change whatever the graph had room for.  ``fits(start, end)`` may refuse a place
    (no plot row is free of the line's dots there): then the other side is tried.  Tags
    never overlap each other, a line or an obstacle.
    """
    busy = bytearray(cols)
    for col in [*obstacles, *(col for col, _ in markers)]:
        if 0 <= col < cols:
            busy[col] = 1
    out: list[tuple[int, str]] = []
    for col, tag in reversed(markers):
        if not tag or not 0 <= col < cols:
            continue
        end = col + 1
        while end < cols and not busy[end]:
            end += 1
        right = end - (col + 1) - (1 if end < cols else 0)
        start = col
        while start > 0 and not busy[start - 1]:
            start -= 1
        left = col - start - (1 if start > 0 else 0)
        whole = cell_len(tag)
        spots = [at for at, room in ((col + 1, right), (col - whole, left)) if room >= whole]
        for at in spots:
            if fits is None or fits(at, at + whole):
                busy[at:at + whole] = b"\x02" * whole
                out.append((at, tag))
                break
    out.sort()
    return out


def merge_masks(a: bytes | bytearray, b: bytes | bytearray) -> bytes:
    """The dots of two rows of braille cells together (one row of an overlay)."""
    return bytes(x | y for x, y in zip(a, b, strict=True))


def overlay_owners(a: bytes | bytearray, b: bytes | bytearray) -> bytes:
    """Per cell: EMPTY, OWNER_A, OWNER_B or OWNER_BOTH, by which row has dots there."""
    return bytes((x != 0) | (y != 0) << 1 for x, y in zip(a, b, strict=True))


def series_owners(rows: Sequence[bytes | bytearray]) -> bytes:
    """Per cell of one row of N series' masks: EMPTY, the one series' number + 1 whose dots
    are there, or OWNER_SEVERAL."""
    out = bytearray(len(rows[0]) if rows else 0)
    for i, row in enumerate(rows, start=1):
        for x, mask in enumerate(row):
            if mask:
                out[x] = i if out[x] in (EMPTY, i) else OWNER_SEVERAL
    return bytes(out)


def owner_runs(owners: bytes | bytearray, start: int, end: int) -> list[tuple[int, int, int]]:
    """``(start, end, owner)`` runs of cells ``start..end-1`` that can share one style.

    An empty cell joins the run before it (it shows nothing, whatever its style), so a line
    of one series makes one run however sparse its dots; leading empty cells join the first
    run.
    """
    runs: list[tuple[int, int, int]] = []
    run_start, run_owner = start, EMPTY
    for x in range(start, end):
        owner = owners[x]
        if owner in (EMPTY, run_owner):
            continue
        if run_owner == EMPTY:
            run_owner = owner  # leading empty cells take the first owner
            continue
        runs.append((run_start, x, run_owner))
        run_start, run_owner = x, owner
    if end > start:
        runs.append((run_start, end, run_owner or OWNER_A))
    return runs


# ---------------------------------------------------------------------------------------------
# Widget
# ---------------------------------------------------------------------------------------------
class _Styles(NamedTuple):
    base: Style
    title: Style
    value: Style
    line: Style
    marker: Style
    axis: Style
    overlay: Style
    both: Style
    more: tuple[Style, ...] = ()  # the third series' on (compare of N journals)


class MetricGraph(Widget):
    """One metric over time as a braille line, with knob/load changes as vertical markers.

    Call ``set_data`` whenever the data may have changed (e.g. every tick); it repaints only
    if the inputs differ.  Strips are built once per (data version, size) and cached.
    With ``overlay`` a second series is drawn over the first (see the module docstring).
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "metric-graph--line",
        "metric-graph--marker",
        "metric-graph--axis",
        "metric-graph--title",
        "metric-graph--value",
        "metric-graph--overlay",
        "metric-graph--both",
        "metric-graph--s3",
        "metric-graph--s4",
        "metric-graph--s5",
    }

    # Theme variables only.  $text-primary / $text-accent / $text-warning are the theme's
    # contrast-adjusted $primary / $accent / $warning: one-dot-wide braille needs the contrast.
    DEFAULT_CSS = """
    MetricGraph {
        height: 1fr;
        min-height: 3;
    }
    MetricGraph > .metric-graph--title {
        color: $foreground;
        text-style: bold;
    }
    MetricGraph > .metric-graph--value {
        color: $text-accent;
        text-style: bold;
    }
    MetricGraph > .metric-graph--line {
        color: $text-primary;
    }
    MetricGraph > .metric-graph--marker {
        color: $text-warning;
    }
    MetricGraph > .metric-graph--axis {
        color: $text-muted;
    }
    MetricGraph > .metric-graph--overlay {
        color: $text-success;
    }
    MetricGraph > .metric-graph--both {
        color: $foreground;
    }
    MetricGraph > .metric-graph--s3 {
        color: $text-error;
    }
    MetricGraph > .metric-graph--s4 {
        color: $text-accent;
    }
    MetricGraph > .metric-graph--s5 {
        color: $secondary;
    }
    """

    def __init__(
        self,
        title: str,
        *,
        fmt: Callable[[float], str] = default_fmt,
        unit: str = "",
        axis_fmt: Callable[[float], str] | None = None,  # the y labels' (default: fmt)
        labels: tuple[str, ...] = ("A", "B"),
        time_axis: bool = False,
        sliding: bool = False,  # a window that moves with each sample: see cell_aligned
        name: str | None = None,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(name=name, id=id, classes=classes)
        self._graph_title = title
        self._fmt = fmt
        self._unit = unit
        self._axis_fmt = fmt if axis_fmt is None else axis_fmt
        self._labels = labels
        self._time_axis = time_axis
        self._sliding = sliding
        self._points: Sequence[Point] = ()
        self._markers: tuple[tuple[float, str], ...] = ()
        self._ticks: tuple[tuple[float, str], ...] = ()
        self._overlay: tuple[Point, ...] | None = None
        self._overlay_markers: tuple[tuple[float, str], ...] = ()
        self._more: tuple[tuple[tuple[Point, ...], tuple[tuple[float, str], ...]], ...] = ()
        self._only: int | None = None  # with ``more``: the one series drawn (None: all)
        self._shown = (True, True)
        self._t_start = 0.0
        self._t_end = 0.0
        self._data_key: object = None
        self._data_version = 0
        self._strips_key: tuple[int, int, int] | None = None
        self._styles: _Styles | None = None
        self._strips: list[Strip] = []

    def set_data(
        self,
        points: Sequence[tuple[float, float | None]],
        markers: Sequence[tuple[float, str]],
        t_start: float,
        t_end: float,
        *,
        overlay: Sequence[tuple[float, float | None]] | None = None,
        overlay_markers: Sequence[tuple[float, str]] = (),
        ticks: Sequence[tuple[float, str]] = (),
        more: Sequence[tuple[Sequence[Point], Sequence[tuple[float, str]]]] = (),
    ) -> None:
        """Plot ``points`` ((t, value), None = gap) over [t_start, t_end] with ``markers``.

        ``points`` must be sorted by t.  They are copied (a few microseconds for thousands of
        points), so the caller may keep appending to its deque (at run time an iterator works
        too).  Markers (t, tag) are full-height lines with their tag beside them where there
        is room; ``ticks`` (t, tag) are light marks on the top plot row only (load phases).
        Markers outside [t_start, t_end] are not drawn.  Nothing is repainted when length,
        first/last point, markers, ticks and t range are unchanged.

        ``overlay`` (sorted by t, on the same time axis) is drawn as series B over ``points``
        (series A) on one y range, with ``overlay_markers`` as B's markers; None (the default)
        plots ``points`` alone, exactly as before.  ``more`` adds series C, D, ... (points,
        markers) over both, up to MAX_SERIES in all, each in its own colour.
        """
        pts = points if isinstance(points, (tuple, Points)) else tuple(points)
        n = len(pts)
        markers_key = tuple(markers)
        ticks_key = tuple(ticks)
        first, last = (pts[0], pts[-1]) if n else (None, None)
        key: tuple[object, ...] = (n, first, last, markers_key, ticks_key, t_start, t_end)
        over: tuple[Point, ...] | None = None
        over_markers: tuple[tuple[float, str], ...] = ()
        if overlay is not None:
            over = overlay if isinstance(overlay, tuple) else tuple(overlay)
            over_markers = tuple(overlay_markers)
            m = len(over)
            key += (m, over[0] if m else None, over[-1] if m else None, over_markers)
        extra = tuple((tuple(p), tuple(mk)) for p, mk in more)[:MAX_SERIES - 2]
        for p, mk in extra:
            key += (len(p), p[0] if p else None, p[-1] if p else None, mk)
        if key == self._data_key:
            return
        self._data_key = key
        self._points = pts
        self._markers = markers_key
        self._ticks = ticks_key
        self._overlay = over
        self._overlay_markers = over_markers
        self._more = extra
        self._t_start = t_start
        self._t_end = t_end
        self._data_version += 1
        self._repaint()

    @property
    def shown(self) -> tuple[bool, bool]:
        """Whether series A and series B (the overlay) are drawn."""
        return self._shown

    def show_series(self, a: bool = True, b: bool = True) -> None:
        """Draw only some series of an overlay; the y range still covers both, so flipping
        between A and B shows their difference at one scale.  Hidden lines take their
        markers with them; the title keeps both latest values."""
        if (a, b) == self._shown:
            return
        self._shown = (a, b)
        self._data_version += 1
        self._repaint()

    def show_only(self, series: int | None) -> None:
        """With ``more``: draw only series ``series`` (0 = A), or all (None); the y range
        still covers every series."""
        if series == self._only:
            return
        self._only = series
        self._data_version += 1
        self._repaint()

    def _repaint(self) -> None:
        """Repaint the rows that changed, not the whole graph.

        A new sample at 1 Hz usually changes the title and the newest column: rebuilding
        the rows here and handing Textual only the ones that differ saves it restyling
        (and the terminal redrawing) the rest.  Before the first paint, after a resize or a
        style change, everything is repainted."""
        width, height = self.size
        if (self._strips_key is None or self._strips_key[1:] != (width, height)
                or width <= 0 or height <= 0):
            self.refresh()
            return
        old = self._strips
        new = self._build(width, height)
        self._strips, self._strips_key = new, (self._data_version, width, height)
        if len(old) != len(new):
            self.refresh()
            return
        changed = [y for y, (a, b) in enumerate(zip(old, new, strict=True)) if a != b]
        regions: list[Region] = []
        for y in changed:  # consecutive rows as one region
            if regions and regions[-1].bottom == y:
                last = regions[-1]
                regions[-1] = Region(last.x, last.y, last.width, last.height + 1)
            else:
                regions.append(Region(0, y, width, 1))
        if regions:
            self.refresh(*regions)

    def notify_style_update(self) -> None:
        super().notify_style_update()
        # Theme / CSS changed (also called for every descendant when an ancestor's classes
        # change): the cached styles and pre-styled strips are stale.
        self._styles = None
        self._strips_key = None

    def _get_styles(self) -> _Styles:
        # Widget.refresh() empties Textual's own component-style cache, and a component style
        # walks every ancestor for the background; at one refresh per tick that was a third of
        # the build cost, so the resolved styles are kept until notify_style_update.
        if self._styles is None:
            get = self.get_component_rich_style
            self._styles = _Styles(
                base=self.rich_style,
                title=get("metric-graph--title"),
                value=get("metric-graph--value"),
                line=get("metric-graph--line"),
                marker=get("metric-graph--marker"),
                axis=get("metric-graph--axis"),
                overlay=get("metric-graph--overlay"),
                both=get("metric-graph--both"),
                more=tuple(get(f"metric-graph--s{n}") for n in range(3, MAX_SERIES + 1)),
            )
        return self._styles

    def render_line(self, y: int) -> Strip:
        width, height = self.size
        key = (self._data_version, width, height)
        if key != self._strips_key:
            self._strips = self._build(width, height)
            self._strips_key = key
        if 0 <= y < len(self._strips):
            return self._strips[y]
        return Strip.blank(width, self._get_styles().base)

    # -- building ------------------------------------------------------------------------------
    def _latest_text(self, points: Sequence[Point] | None = None) -> str:
        points = self._points if points is None else points
        value = points[-1][1] if points else None
        if value is None:
            return NO_VALUE
        return f"{self._fmt(value)}{self._unit}"

    def _build(self, width: int, height: int) -> list[Strip]:
        if width <= 0 or height <= 0:
            return []
        if self._more:
            return self._build_many(width, height)
        if self._overlay is not None:
            return self._build_overlay(width, height, self._overlay)
        styles = self._get_styles()
        s_line, s_marker, s_axis = styles.line, styles.marker, styles.axis

        margin = MARGIN if width >= MARGIN + MIN_PLOT_COLS else 0
        cols, plot_rows = width - margin, height - 1
        axis = self._time_axis and plot_rows >= 3  # the bottom row becomes the time axis
        if axis:
            plot_rows -= 1
        t0, t1 = self._t_start, self._t_end
        if self._sliding:
            t0, t1 = cell_aligned(t0, t1, cols)
        columns = column_means(self._points, t0, t1, cols * 2)
        lo, hi = value_range(columns, latest_value(self._points))
        masks = rasterize(columns, lo, hi, cols, plot_rows)
        hi_label, lo_label = axis_label(hi, self._axis_fmt), axis_label(lo, self._axis_fmt)

        # Full-height markers (the newest tag wins a shared column), then ticks where no
        # marker is; tags on a plot row beside their line, clear of every other mark.  All
        # of them go under the line: a cell holding dots shows the dots, so a graph dense
        # with markers still shows every data column.
        tag_at: dict[int, str] = {}
        for t, tag in sorted(self._markers):
            col = time_to_col(t, t0, t1, cols)
            if col is not None:
                tag_at[col] = tag
        all_ticks = {
            col for t, _tag in self._ticks
            if (col := time_to_col(t, t0, t1, cols)) is not None and col not in tag_at
        }
        tick_cols = {col for col in all_ticks if plot_rows and not masks[0][col]}
        marker_seg = Segment(MARKER_GLYPH, s_marker)
        tick_seg = Segment(TICK_GLYPH, s_marker)
        rows_extra: list[list[tuple[int, Segment, int]]] = [
            [(col, marker_seg, 1) for col in tag_at if not masks[r][col]]
            for r in range(plot_rows)]

        def free_rows(at: int, end: int) -> list[int]:
            return [r for r in range(plot_rows) if masks[r].count(0, at, end) == end - at]

        # A tag goes on a plot row where it hides no dot of the line (the one hiding the
        # fewest ticks, then the top one); there it may cover a tick (a person's change
        # outranks a load phase).  With no such row on either side of its line it is left
        # out.  A one-row graph has no plot rows (its title only): no tags to place.
        covered: set[int] = set()
        placed = place_tags(sorted(tag_at.items()), (), cols,
                            lambda at, end: bool(free_rows(at, end))) \
            if tag_at and plot_rows else ()
        for at, text in placed:
            end = at + cell_len(text)
            hidden_ticks = sum(1 for col in tick_cols if at <= col < end)
            row = min(free_rows(at, end), key=lambda r: (hidden_ticks if r == 0 else 0, r))
            rows_extra[row].append((at, Segment(text, s_marker), end - at))
            if row == 0:
                covered.update(range(at, end))
        if plot_rows:
            rows_extra[0].extend((col, tick_seg, 1) for col in tick_cols if col not in covered)
        row_runs = [sorted(extra) for extra in rows_extra]

        strips = [self._title_strip(width, [Segment(self._latest_text(), styles.value)],
                                    lo_label, hi_label, -1, styles)]
        blank_label = " " * MARGIN
        for r in range(plot_rows):
            segments: list[Segment] = []
            if margin:
                label = hi_label if r == 0 else lo_label if r == plot_rows - 1 else ""
                text = " " * (LABEL_WIDTH - cell_len(label)) + label + " " if label else blank_label
                segments.append(Segment(text, s_axis))
            text = cells_text(masks[r])
            pos = 0
            for col, segment, cells in row_runs[r]:
                if col > pos:
                    segments.append(Segment(text[pos:col], s_line))
                segments.append(segment)
                pos = col + cells
            if pos < cols:
                segments.append(Segment(text[pos:], s_line))
            strips.append(Strip(segments, width))
        if axis:
            # The frame below the plot repeats every marker (a time label over one is left
            # out) and every tick where the labels leave room, so a change stays visible
            # where the line's dots cover its column.
            axis_text = time_axis_text(cols, t0, t1, tag_at)
            frame = sorted({**{col: FRAME_TICK_GLYPH for col in all_ticks},
                            **dict.fromkeys(tag_at, MARKER_GLYPH)}.items())
            segments = [Segment(" " * margin, s_axis)] if margin else []
            pos = 0
            for col, glyph in frame:
                if axis_text[col] != " ":
                    continue
                segments.append(Segment(axis_text[pos:col], s_axis))
                segments.append(Segment(glyph, s_marker))
                pos = col + 1
            segments.append(Segment(axis_text[pos:], s_axis))
            strips.append(Strip(segments, width))
        return strips

    def _build_overlay(self, width: int, height: int, overlay: Sequence[Point]) -> list[Strip]:
        styles = self._get_styles()
        show_a, show_b = self._shown
        margin = MARGIN if width >= MARGIN + MIN_PLOT_COLS else 0
        cols, plot_rows = width - margin, height - 1
        t0, t1 = self._t_start, self._t_end
        columns_a = column_means(self._points, t0, t1, cols * 2)
        columns_b = column_means(overlay, t0, t1, cols * 2)
        latest = [v for v in (latest_value(self._points), latest_value(overlay))
                  if v is not None and math.isfinite(v)]
        lo, hi = y_range([value for _, value, _ in (*columns_a, *columns_b)] + latest)
        masks_a = rasterize(columns_a if show_a else [], lo, hi, cols, plot_rows)
        masks_b = rasterize(columns_b if show_b else [], lo, hi, cols, plot_rows)
        hi_label, lo_label = axis_label(hi, self._axis_fmt), axis_label(lo, self._axis_fmt)

        # Marker glyph per plot column: A's solid, B's dashed, both at once doubled.
        marker_glyphs: dict[int, str] = {}
        newest_t, newest_col = -math.inf, -1
        for shown, side_markers, glyph in (
            (show_a, self._markers, MARKER_GLYPH),
            (show_b, self._overlay_markers, OVERLAY_MARKER_GLYPH),
        ):
            if not shown:
                continue
            for t, _label in side_markers:
                at = time_to_col(t, t0, t1, cols)
                if at is None:
                    continue
                have = marker_glyphs.get(at, glyph)
                marker_glyphs[at] = glyph if have == glyph else SHARED_MARKER_GLYPH
                if t >= newest_t:
                    newest_t, newest_col = t, at

        newest_x = margin + newest_col if newest_col >= 0 else -1
        strips = [
            self._title_strip(
                width, self._legend(overlay, styles), lo_label, hi_label, newest_x, styles
            )
        ]
        owner_style = {OWNER_A: styles.line, OWNER_B: styles.overlay, OWNER_BOTH: styles.both}
        rows = [(cells_text(merge_masks(masks_a[r], masks_b[r])),
                 overlay_owners(masks_a[r], masks_b[r])) for r in range(plot_rows)]
        return strips + self._owned_rows(width, margin, (hi_label, lo_label), rows,
                                         marker_glyphs, owner_style, styles)

    def _owned_rows(self, width: int, margin: int, labels: tuple[str, str],
                    rows: list[tuple[str, bytes]], marker_glyphs: dict[int, str],
                    owner_style: dict[int, Style], styles: _Styles) -> list[Strip]:
        """The plot rows of several series: each row's cells (``rows``: its text and whose
        dots each cell holds) in its owner's style, the markers under them (in the cells
        no series has dots in: a column full of markers still shows every series' data),
        the y labels in the margin."""
        hi_label, lo_label = labels
        cols = width - margin
        markers = sorted(marker_glyphs)
        blank_label = " " * MARGIN
        strips = []
        for r, (text, owners) in enumerate(rows):
            segments: list[Segment] = []
            if margin:
                label = hi_label if r == 0 else lo_label if r == len(rows) - 1 else ""
                pad = " " * (LABEL_WIDTH - cell_len(label)) + label + " " if label else blank_label
                segments.append(Segment(pad, styles.axis))
            pos = 0
            for col in [*(c for c in markers if owners[c] == EMPTY), cols]:
                for start, end, owner in owner_runs(owners, pos, col):
                    segments.append(Segment(text[start:end], owner_style[owner]))
                if col < cols:
                    segments.append(Segment(marker_glyphs[col], styles.marker))
                pos = col + 1
            strips.append(Strip(segments, width))
        return strips

    def _build_many(self, width: int, height: int) -> list[Strip]:
        """Three or more series on one y range (compare of N journals): each in its colour,
        a cell with dots of several in the "both" colour; A's markers solid, the others'
        dashed, several in one column doubled."""
        styles = self._get_styles()
        series = [(self._points, self._markers),
                  (self._overlay or (), self._overlay_markers), *self._more]
        shown = [self._only is None or self._only == i for i in range(len(series))]
        margin = MARGIN if width >= MARGIN + MIN_PLOT_COLS else 0
        cols, plot_rows = width - margin, height - 1
        t0, t1 = self._t_start, self._t_end
        columns = [column_means(points, t0, t1, cols * 2) for points, _ in series]
        latest = [v for points, _ in series if (v := latest_value(points)) is not None
                  and math.isfinite(v)]
        lo, hi = y_range([value for cs in columns for _, value, _ in cs] + latest)
        masks = [rasterize(cs if show else [], lo, hi, cols, plot_rows)
                 for cs, show in zip(columns, shown, strict=True)]
        hi_label, lo_label = axis_label(hi, self._axis_fmt), axis_label(lo, self._axis_fmt)
        marker_glyphs: dict[int, str] = {}
        for i, (_, side_markers) in enumerate(series):
            if not shown[i]:
                continue
            glyph = MARKER_GLYPH if i == 0 else OVERLAY_MARKER_GLYPH
            for t, _label in side_markers:
                at = time_to_col(t, t0, t1, cols)
                if at is not None:
                    have = marker_glyphs.get(at)
                    marker_glyphs[at] = glyph if have in (None, glyph) else SHARED_MARKER_GLYPH
        colours = self._series_styles(styles)
        owner_style = {i + 1: style for i, style in enumerate(colours)}
        owner_style[OWNER_SEVERAL] = styles.both
        owner_style[EMPTY] = styles.line
        bold = Style(bold=True)
        legend: list[Segment] = []
        for i, (points, _) in enumerate(series):
            if legend:
                legend.append(Segment("  ", styles.base))
            label = self._labels[i] if i < len(self._labels) else chr(ord("A") + i)
            legend.append(Segment(f"{label} {self._latest_text(points)}",
                                  colours[i] + bold if shown[i] else styles.axis))
        strips = [self._title_strip(width, legend, lo_label, hi_label, -1, styles)]
        rows = []
        for r in range(plot_rows):
            row = [m[r] for m in masks]
            merged = bytes(row[0])
            for other in row[1:]:
                merged = merge_masks(merged, other)
            rows.append((cells_text(merged), series_owners(row)))
        return strips + self._owned_rows(width, margin, (hi_label, lo_label), rows,
                                         marker_glyphs, owner_style, styles)

    @staticmethod
    def _series_styles(styles: _Styles) -> list[Style]:
        """Each series' colour, A first."""
        return [styles.line, styles.overlay, *styles.more]

    def _legend(self, overlay: Sequence[Point], styles: _Styles) -> list[Segment]:
        """The title's legend: each side's latest value ("A 1.20K  B 1.41K") in the colour of
        its line, a hidden side's in the axis colour."""
        show_a, show_b = self._shown
        label_a, label_b = self._labels
        bold = Style(bold=True)
        s_a = styles.line + bold if show_a else styles.axis
        s_b = styles.overlay + bold if show_b else styles.axis
        return [
            Segment(f"{label_a} {self._latest_text()}", s_a),
            Segment("  ", styles.base),
            Segment(f"{label_b} {self._latest_text(overlay)}", s_b),
        ]

    def _title_strip(
        self,
        width: int,
        value_segments: list[Segment],
        lo_label: str,
        hi_label: str,
        newest_x: int,
        styles: _Styles,
    ) -> Strip:
        base, s_title = styles.base, styles.title
        s_axis, s_marker = styles.axis, styles.marker
        title = self._graph_title
        value_w = sum(cell_len(segment.text) for segment in value_segments)
        left_w = cell_len(title) + 1 + value_w
        # Right-hand y range, shortened or dropped before the title is truncated; never
        # "x-x" (y_range keeps the two ends apart; this holds for any fmt).
        right = ""
        ranges = [f"{lo_label}{RANGE_SEP}{hi_label}"] if lo_label != hi_label else []
        for candidate in (*ranges, hi_label):
            if left_w + 2 + cell_len(candidate) <= width:  # two blanks: "C 3.9%  0-15"
                right = candidate
                break
        right_w = cell_len(right)
        room = width - (right_w + 1 if right else 0)
        if left_w > room:
            title_room = room - 1 - value_w
            title = set_cell_size(title, title_room - 1) + "…" if title_room >= 2 else ""
            left_w = (cell_len(title) + 1 if title else 0) + value_w

        segments = [Segment(title, s_title), Segment(" ", base)] if title else []
        segments.extend(value_segments)
        # The newest marker's ▼ goes in the free gap between the two texts, if it fits there.
        # Two blanks at least between a ▼ and the range text, so the arrow never reads as
        # part of the range ("18.1K ▼ 16.0K" looked like a falling trend).
        gap_end = width - right_w - 3 if right else width - 1
        if left_w + 1 <= newest_x <= gap_end:
            segments.append(Segment(" " * (newest_x - left_w), base))
            segments.append(Segment(NEWEST_GLYPH, s_marker))
            left_w = newest_x + 1
        if right:
            segments.append(Segment(" " * max(0, width - right_w - left_w), base))
            segments.append(Segment(right, s_axis))
        return Strip(segments).adjust_cell_length(width, base)
