"""The compare screens' widgets: the framed tables (each phase pair's B/A ratios, the knobs
that differ and each side's events) and the header that says who is A and who is B."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from itertools import zip_longest
from typing import ClassVar

from rich.style import Style
from rich.text import Text
from textual.content import Content
from textual.widgets import DataTable, Static

from knobtop.analysis.compare import (
    RATIO_METRICS,
    Comparison,
    PhasePair,
    fmt_ratio,
    ratio_verdict,
)
from knobtop.analysis.journaldata import PhaseStats
from knobtop.analysis.report import fmt_knob, fmt_num
from knobtop.analysis.report import report_warnings as journal_warnings
from knobtop.analysis.times import fmt_rel
from knobtop.ui.compare_sides import SERIES_NAMES, SideView
from knobtop.ui.widgets.metric_graph import (
    MARKER_GLYPH,
    OVERLAY_MARKER_GLYPH,
    SHARED_MARKER_GLYPH,
)

A_STYLE = "$text-primary bold"  # the colours of each side's graph line (MetricGraph's CSS)
B_STYLE = "$text-success bold"
WARN_STYLE = "$text-warning bold"


def pair_lines(pair: PhasePair, origins: tuple[float, float] = (0.0, 0.0)) -> list[str]:
    """The description of a phase pair, one short line per table row; its times are since
    each side's start (``origins``), like everything else on the screen."""

    def side(name: str, s: PhaseStats | None, origin: float) -> list[str]:
        if s is None:
            return [f"{name} —", "  (no partner)"]
        return [
            f"{name} #{s.number} {s.workload}",
            f"  x{s.threads} {fmt_rel(s.start - origin)}-{fmt_rel(s.end - origin)}",
        ]

    a, b = origins
    return [*side("A", pair.a, a), *side("B", pair.b, b), f"  by {pair.matched_by}"]


def pair_rows(
    pair: PhasePair, origins: tuple[float, float] = (0.0, 0.0)
) -> Iterator[tuple[str, str, str, str, float | None, int]]:
    """(description line, metric, A, B, B/A, better) per row of one pair: the numbers are
    compare.py's (PhaseStats medians and PhasePair.ratios), formatted as in its text output."""
    metrics = [
        (
            label,
            fmt_num(getattr(pair.a, name) if pair.a else None, digits),
            fmt_num(getattr(pair.b, name) if pair.b else None, digits),
            pair.ratios.get(name),
            better,
        )
        for name, label, digits, better in RATIO_METRICS
    ]
    for line, metric in zip_longest(pair_lines(pair, origins), metrics):
        label, a, b, value, better = metric if metric else ("", "", "", None, 0)
        yield line or "", label, a, b, value, better


def knob_rows(pair: PhasePair) -> Iterator[tuple[str, str, str, str]]:
    """(knob, "in force", A, B) for each knob in force that differs between the pair's two
    phases (a value, or "old → new" when it changed within the phase)."""
    if pair.a is None or pair.b is None:
        return
    if not pair.knobs:
        yield "knobs in force", "the same", "", ""
    for d in pair.knobs:  # the name goes where the table is widest, the ratios stay in view
        yield d.knob.removeprefix("innodb_"), "in force", fmt_knob(d.a), fmt_knob(d.b)


# ---------------------------------------------------------------------------------------------
# Widgets
# ---------------------------------------------------------------------------------------------
class FramedTable(DataTable[Text]):
    """A compare screen's table: a rounded border with its title, brighter when focused."""

    DEFAULT_CSS = """
    FramedTable {
        border: round $primary 50%;
        border-title-color: $text-accent;
    }
    FramedTable:focus {
        border: round $primary;
    }
    """


class HeaderBar(Static):
    """A compare screen's header: docked on top, one line per journal, never wrapped."""

    DEFAULT_CSS = """
    HeaderBar {
        dock: top;
        height: auto;
        background: $panel;
        color: $foreground;
        padding: 0 1;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """


class PhasePairTable(FramedTable):
    """Each pair of load phases: A, B and B/A of every metric, better/worse marked."""

    COMPONENT_CLASSES: ClassVar[set[str]] = DataTable.COMPONENT_CLASSES | {
        "phase-pair-table--better",
        "phase-pair-table--worse",
    }
    DEFAULT_CSS = """
    PhasePairTable > .phase-pair-table--better {
        color: $text-success;
        text-style: bold;
    }
    PhasePairTable > .phase-pair-table--worse {
        color: $text-error;
        text-style: bold;
    }
    """

    def __init__(
        self,
        pairs: Sequence[PhasePair],
        origins: tuple[float, float] = (0.0, 0.0),
        *,
        id: str | None = None,
    ) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, id=id)
        self.pairs = list(pairs)
        self.origins = origins
        self.border_title = "Load phases: medians, B/A"
        self.border_subtitle = "✓ B better  ✗ B worse (by 2 % or more)"

    def on_mount(self) -> None:
        for name in ("phases", "metric", "A", "B", "B/A"):
            self.add_column(
                Text(name, justify="left" if name in ("phases", "metric") else "right"), key=name
            )
        self._fill()
        self.watch(self.app, "theme", self._restyle, init=False)

    def _restyle(self) -> None:
        row = self.cursor_row
        self.clear()
        self._fill()
        self.move_cursor(row=row)

    def _fill(self) -> None:
        get = self.get_component_rich_style
        styles = {
            1: get("phase-pair-table--better", partial=True),
            -1: get("phase-pair-table--worse", partial=True),
        }
        glyphs = {1: " ✓", -1: " ✗", 0: "  "}
        if not self.pairs:
            self.add_row(
                Text("Neither side has a load phase."), Text(""), Text(""), Text(""), Text("")
            )
            return
        for i, pair in enumerate(self.pairs):
            if i:
                self.add_row(*(Text("") for _ in range(5)))
            for line, label, a, b, value, better in pair_rows(pair, self.origins):
                verdict = ratio_verdict(value, better)
                ratio = Text(
                    fmt_ratio(value) + glyphs[verdict] if label else "",
                    justify="right",
                    style=styles.get(verdict, Style()),
                )
                self.add_row(
                    Text(line),
                    Text(label),
                    Text(a, justify="right"),
                    Text(b, justify="right"),
                    ratio,
                )
            for line, what, a, b in knob_rows(pair):
                self.add_row(Text(line), Text(what, style="italic"), Text(a, justify="right"),
                             Text(b, justify="right"), Text(""))


class KnobDiffTable(FramedTable):
    """Knobs that differ between A and B at start and at end, then each side's events."""

    def __init__(
        self, comparison: Comparison, sides: Sequence[SideView], *, id: str | None = None
    ) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, id=id)
        self.comparison = comparison
        self.sides = list(sides)
        self.border_title = "Knobs that differ, and events"

    def on_mount(self) -> None:
        for name in ("when", "knob", "A", "B"):
            self.add_column(name, key=name)
        c = self.comparison
        for when, diffs in (("at start", c.knobs_start), ("at end", c.knobs_end)):
            for d in diffs:
                self.add_row(Text(when), Text(d.knob), Text(fmt_knob(d.a)), Text(fmt_knob(d.b)))
        if not (c.knobs_start or c.knobs_end):
            self.add_row(Text("—"), Text("no knob differs"), Text(""), Text(""))
        events = sorted((e for side in self.sides for e in side.events), key=lambda e: e.t)
        for e in events:
            detail = Text(e.detail)
            a, b = (detail, Text("")) if e.side == "A" else (Text(""), detail)
            self.add_row(Text(f"{e.side} {fmt_rel(e.t)}"), Text(e.what), a, b)


class CompareHeader(HeaderBar):
    """Who is A and who is B (journal, server, length), the time window, and warnings."""

    def show(
        self,
        comparison: Comparison,
        sides: Sequence[SideView],
        t0: float,
        t1: float,
        zoom: str,
        shown: tuple[bool, bool],
    ) -> None:
        differs = comparison.server_differs
        lines: list[Content] = []
        for side, server, style in zip(
            sides, (comparison.server_a, comparison.server_b), (A_STYLE, B_STYLE), strict=True
        ):
            changes = sum(1 for e in side.events if e.marker is not None)
            lines.append(
                Content.assemble(
                    (f"{side.name} ", style),
                    (side.data.label, "bold"),
                    f"  {side.span:.1f} s, {len(side.data.rows)} samples, "
                    f"{changes} marker{'s' if changes != 1 else ''}  ",
                    (server, WARN_STYLE if differs else ""),
                )
            )
        parts: list[str | tuple[str, str]] = []
        if differs:
            parts.append((f"≠ {comparison.differs_words}  ", WARN_STYLE))
        window = "all" if zoom == "all" else f"zoom {zoom}"
        parts.append(f"since each side's start: {fmt_rel(t0)}-{fmt_rel(t1)} ({window})")
        parts.append(f"  {SERIES_NAMES[shown]}")
        # What the vertical lines in the graphs are (a change, note, restart, gap or load
        # start/stop of that side; the KnobDiffTable lists each).
        parts += ["  marks ", (f"{MARKER_GLYPH}A", A_STYLE), " ", (f"{OVERLAY_MARKER_GLYPH}B",
                  B_STYLE), f" {SHARED_MARKER_GLYPH}both"]
        warnings = [f"{side.name}: {w}" for side in sides for w in journal_warnings(side.data)]
        if warnings:
            parts.append(("  ⚠ " + "; ".join(warnings), WARN_STYLE))
        lines.append(Content.assemble(*parts))
        self.update(Content("\n").join(lines))
