"""What a journal's fold makes: one Row of derived metrics per sample, the load driver's
reports, the load phases clipped to the range read, and the JournalData that holds them with
the header, knob values, changes, restarts, notes, marks and errors (analysis.journalfold
fills it; analysis.journaldata reads a journal into it)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from knobtop.analysis.times import fmt_rel
from knobtop.journal import (
    Change,
    End,
    Error,
    Event,
    Header,
    Mark,
    Note,
    OutsideChange,
    Restart,
)
from knobtop.printable import printable

# Columns of one per-interval row (and of the CSV report), in order.
ROW_FIELDS = (
    "t",
    "wall",
    "tps",
    "qps",
    "hit_ratio",
    "dirty_pct",
    "history_len",
    "checkpoint_age",
    "cpu",
    "load_tps",
    "load_p95",
    "threads_running",
)
#: csv_report's columns: the sample's, then the load phase it fell in.
CSV_FIELDS = (*ROW_FIELDS, "phase", "workload", "threads")

KnobValues = dict[str, str | None]


class Row(NamedTuple):
    """Derived metrics for the interval ending at one sample.

    Rates (tps, qps, hit_ratio, cpu) are None for the first sample and after a
    reconnect or server restart. ``load_tps``/``load_p95`` come from the load
    driver's report received since the previous sample (None when there was none).

    A named tuple, not a frozen dataclass: a report makes one a second of journal (a day:
    86,400), a kept fold's each from its list in one call (``_make``), where a frozen
    dataclass set its 12 fields one ``object.__setattr__`` at a time (about a third of a
    1-hour report's reading of its kept fold); the class is made at import for half the cost.
    """

    t: float
    wall: float
    tps: float | None
    qps: float | None
    hit_ratio: float | None
    dirty_pct: float | None
    history_len: float | None
    checkpoint_age: float | None
    cpu: float | None
    load_tps: float | None
    load_p95: float | None
    threads_running: float | None


class LoadPoint(NamedTuple):
    """One per-interval report of the load driver (the sum over clients when several);
    a named tuple, as Row is."""

    t: float
    tps: float
    p95: float


_LOAD_FIELDS = ("t", "tps", "p95")  # LoadPoint's, in order


@dataclass(frozen=True, slots=True)
class PhaseSpan:
    """One load phase, clipped to the journal's read range.

    ``ended_by`` is "stop", "failed", "next start" or "end of journal".  A phase
    that ran to the end of the journal includes a point at exactly ``end``.
    """

    number: int
    workload: str
    threads: int
    driver: str
    host: str
    start: float
    end: float
    ended_by: str
    message: str = ""

    def contains(self, t: float) -> bool:
        if t < self.start:
            return False
        return t < self.end or (self.ended_by == "end of journal" and t <= self.end)


@dataclass
class JournalData:
    """What the reports need from one journal (or one time range of it)."""

    path: Path
    header: Header
    t_from: float | None = None
    t_to: float | None = None
    knobs_start: KnobValues = field(default_factory=dict)
    knobs_end: KnobValues = field(default_factory=dict)
    changes: list[Change] = field(default_factory=list)
    outside: list[OutsideChange] = field(default_factory=list)  # changes not made by knobtop
    restarts: list[Restart] = field(default_factory=list)
    notes: list[Note] = field(default_factory=list)
    marks: list[Mark] = field(default_factory=list)
    errors: list[Error] = field(default_factory=list)
    phases: list[PhaseSpan] = field(default_factory=list)
    rows: list[Row] = field(default_factory=list)
    loads: list[LoadPoint] = field(default_factory=list)
    end: End | None = None
    first_t: float | None = None  # first and last event time inside the range
    last_t: float | None = None
    skipped_unknown: int = 0
    other_targets: int = 0  # events of a recipe's further servers (series not drawn)
    target_knobs: dict[str, KnobValues] = field(default_factory=dict)  # each one's first
    unknown_types: dict[str, int] = field(default_factory=dict)
    torn_tail: bool = False
    recipe_events: list[Event] = field(default_factory=list)  # recipe runs and their steps

    @property
    def label(self) -> str:
        """The file name (printable: a name is someone else's text too), with the time range
        when only part of it was read."""
        name = printable(self.path.name, newlines=False)
        if self.t_from is None and self.t_to is None:
            return name
        lo = fmt_rel(self.t_from) if self.t_from is not None else "start"
        hi = fmt_rel(self.t_to) if self.t_to is not None else "end"
        return f"{name} [{lo}-{hi})"

    @property
    def duration(self) -> float:
        if self.first_t is None or self.last_t is None:
            return 0.0
        return max(0.0, self.last_t - self.first_t)

