"""MetricGraph's rows as pre-styled ``Strip``s: the title row, the plot rows of one series
(with its markers, ticks and tags) or of several, and the time axis below the plot.  The
numbers they draw come from knobtop.ui.widgets.graph_math."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from rich.cells import cell_len, set_cell_size
from rich.segment import Segment
from rich.style import Style
from textual.strip import Strip

from knobtop.ui.widgets.graph_math import (
    EMPTY,
    FRAME_TICK_GLYPH,
    LABEL_WIDTH,
    MARGIN,
    MARKER_GLYPH,
    NEWEST_GLYPH,
    RANGE_SEP,
    TICK_GLYPH,
    cells_text,
    owner_runs,
    place_tags,
    time_axis_text,
    time_to_col,
)

# Per plot row: (column, segment, cells it covers) drawn over the line's text there.
RowRuns = list[list[tuple[int, Segment, int]]]


class GraphStyles(NamedTuple):
    base: Style
    title: Style
    value: Style
    line: Style
    marker: Style
    axis: Style
    overlay: Style
    both: Style
    more: tuple[Style, ...] = ()  # the third series' on (compare of N journals)


def series_styles(styles: GraphStyles) -> list[Style]:
    """Each series' colour, A first."""
    return [styles.line, styles.overlay, *styles.more]


class Marks(NamedTuple):
    """Where one series' markers, ticks and tags go (``place_marks``)."""

    tag_at: dict[int, str]  # a full-height marker's column: its tag
    all_ticks: set[int]  # every tick's column (none where a marker is)
    row_runs: RowRuns  # per plot row, sorted


def place_marks(
    masks: Sequence[bytes | bytearray], plot_rows: int, cols: int,
    markers: Sequence[tuple[float, str]], ticks: Sequence[tuple[float, str]],
    t0: float, t1: float, s_marker: Style,
) -> Marks:
    """Full-height markers (the newest tag wins a shared column), then ticks where no
    marker is; tags on a plot row beside their line, clear of every other mark.  All of
    them go under the line: a cell holding dots shows the dots, so a graph dense with
    markers still shows every data column."""
    tag_at: dict[int, str] = {}
    for t, tag in sorted(markers):
        col = time_to_col(t, t0, t1, cols)
        if col is not None:
            tag_at[col] = tag
    all_ticks = {
        col for t, _tag in ticks
        if (col := time_to_col(t, t0, t1, cols)) is not None and col not in tag_at
    }
    tick_cols = {col for col in all_ticks if plot_rows and not masks[0][col]}
    marker_seg = Segment(MARKER_GLYPH, s_marker)
    tick_seg = Segment(TICK_GLYPH, s_marker)
    rows_extra: RowRuns = [
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
    return Marks(tag_at, all_ticks, [sorted(extra) for extra in rows_extra])


def line_rows(width: int, margin: int, labels: tuple[str, str],
              masks: Sequence[bytes | bytearray], row_runs: RowRuns,
              styles: GraphStyles) -> list[Strip]:
    """The plot rows of one series: the line's cells, the marks of ``row_runs`` over
    them, the y labels in the margin."""
    hi_label, lo_label = labels
    s_line, s_axis = styles.line, styles.axis
    cols, plot_rows = width - margin, len(row_runs)
    strips = []
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
    return strips


def axis_strip(width: int, margin: int, t0: float, t1: float, marks: Marks,
               styles: GraphStyles) -> Strip:
    """The frame below the plot: the time labels, and every marker (a time label over one
    is left out) and every tick where the labels leave room, so a change stays visible
    where the line's dots cover its column."""
    s_axis, s_marker = styles.axis, styles.marker
    cols = width - margin
    axis_text = time_axis_text(cols, t0, t1, marks.tag_at)
    frame = sorted({**{col: FRAME_TICK_GLYPH for col in marks.all_ticks},
                    **dict.fromkeys(marks.tag_at, MARKER_GLYPH)}.items())
    segments = [Segment(" " * margin, s_axis)] if margin else []
    pos = 0
    for col, glyph in frame:
        if axis_text[col] != " ":
            continue
        segments.append(Segment(axis_text[pos:col], s_axis))
        segments.append(Segment(glyph, s_marker))
        pos = col + 1
    segments.append(Segment(axis_text[pos:], s_axis))
    return Strip(segments, width)


def owned_rows(width: int, margin: int, labels: tuple[str, str],
               rows: list[tuple[str, bytes]], marker_glyphs: dict[int, str],
               owner_style: dict[int, Style], styles: GraphStyles) -> list[Strip]:
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


def title_strip(
    title: str,
    width: int,
    value_segments: list[Segment],
    lo_label: str,
    hi_label: str,
    newest_x: int,
    styles: GraphStyles,
) -> Strip:
    """The title row: the title, the latest value(s), the newest marker's ▼ where it fits,
    and the y range at the right."""
    base, s_title = styles.base, styles.title
    s_axis, s_marker = styles.axis, styles.marker
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
