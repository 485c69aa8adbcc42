"""The pure helpers behind MetricGraph (knobtop.ui.widgets.metric_graph): scaling
(``column_means`` -> ``y_range``), rasterising (``rasterize`` -> braille text), the axes'
labels and where markers' tags go.  No textual here: they are tested without an app."""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Sequence

from rich.cells import cell_len, set_cell_size

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


def marker_glyphs(
    sides: Sequence[tuple[bool, Sequence[tuple[float, str]]]], t0: float, t1: float, cols: int,
) -> tuple[dict[int, str], int]:
    """The marker glyph of each plot column of series drawn together, ``sides`` being each
    series' (shown, markers), A first: A's solid, the others' dashed, several in one column
    doubled; and the newest marker's column (-1: none)."""
    glyphs: dict[int, str] = {}
    newest_t, newest_col = -math.inf, -1
    for i, (shown, side_markers) in enumerate(sides):
        if not shown:
            continue
        glyph = MARKER_GLYPH if i == 0 else OVERLAY_MARKER_GLYPH
        for t, _label in side_markers:
            at = time_to_col(t, t0, t1, cols)
            if at is None:
                continue
            have = glyphs.get(at, glyph)
            glyphs[at] = glyph if have == glyph else SHARED_MARKER_GLYPH
            if t >= newest_t:
                newest_t, newest_col = t, at
    return glyphs, newest_col


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
