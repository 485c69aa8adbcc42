"""Compare two journals, or two time ranges of one journal: phases side by side with B/A ratios,
server versions, and knob values at start and at end."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from knobtop.analysis.journaldata import (
    JournalData,
    KnobValues,
    PhaseStats,
    load_journal,
    phase_table,
)
from knobtop.analysis.journalfold import _apply_change
from knobtop.analysis.report import fmt_knob, fmt_num, md_table, report_warnings, server_label
from knobtop.analysis.times import fmt_rel, fmt_utc

# (PhaseStats attribute, label, digits, +1 when higher is better / -1 when lower is / 0)
RATIO_METRICS: tuple[tuple[str, str, int, int], ...] = (
    ("load_tps", "TPS (load)", 1, 1),
    ("server_tps", "TPS (server)", 1, 1),
    ("p95", "p95 ms", 2, -1),
    ("hit_ratio", "hit ratio %", 2, 1),
    ("dirty_pct", "dirty %", 1, 0),
)


@dataclass(frozen=True, slots=True)
class KnobDiff:
    """A knob whose value differs between A and B (None: not recorded / not applicable)."""

    knob: str
    a: str | None
    b: str | None


@dataclass(frozen=True, slots=True)
class PhasePair:
    """A phase of A next to a phase of B; one side is None when the other has no partner.

    ``matched_by`` is "workload+threads", "order" or "unmatched".  ``ratios``
    holds B/A of each metric in RATIO_METRICS (None when a side is missing or A is 0).
    ``knobs`` are the knobs in force that differ between the two phases.
    """

    a: PhaseStats | None
    b: PhaseStats | None
    matched_by: str
    ratios: dict[str, float | None] = field(default_factory=dict)
    knobs: list[KnobDiff] = field(default_factory=list)


@dataclass
class Comparison:
    a: JournalData
    b: JournalData
    phases_a: list[PhaseStats]
    phases_b: list[PhaseStats]
    pairs: list[PhasePair]
    server_a: str
    server_b: str
    knobs_start: list[KnobDiff]
    knobs_end: list[KnobDiff]

    @property
    def server_differs(self) -> bool:
        return self.server_a != self.server_b

    @property
    def differs_words(self) -> str:
        """What differs between the two servers: their versions, or (same version) a lab's
        storage emulation on one side or another delay."""
        if _version_part(self.server_a) != _version_part(self.server_b):
            return "server versions differ"
        return "storage emulation differs"

    @property
    def same_journal(self) -> bool:
        return self.a.path.resolve() == self.b.path.resolve()


def ratio(a: float | None, b: float | None) -> float | None:
    """B/A, or None when either is missing or A is 0."""
    if a is None or b is None or a == 0:
        return None
    return b / a


def _pair(a: PhaseStats | None, b: PhaseStats | None, matched_by: str) -> PhasePair:
    ratios = {
        name: ratio(getattr(a, name) if a else None, getattr(b, name) if b else None)
        for name, _label, _digits, _better in RATIO_METRICS
    }
    return PhasePair(a, b, matched_by, ratios)


def pair_phases(a: Sequence[PhaseStats], b: Sequence[PhaseStats]) -> list[PhasePair]:
    """Pair each phase of A with the first unpaired phase of B of the same workload and
    threads; what remains is paired by order; leftovers stand alone.  Pairs come in A's order
    (B-only phases last)."""
    partner: dict[int, int] = {}
    taken: set[int] = set()
    for i, pa in enumerate(a):
        for j, pb in enumerate(b):
            if j not in taken and (pa.workload, pa.threads) == (pb.workload, pb.threads):
                partner[i] = j
                taken.add(j)
                break
    how = dict.fromkeys(partner, "workload+threads")
    rest_b = iter(j for j in range(len(b)) if j not in taken)
    for i in range(len(a)):
        if i not in partner:
            k = next(rest_b, None)
            if k is not None:
                partner[i] = k
                taken.add(k)
                how[i] = "order"
    pairs = [
        _pair(pa, b[partner[i]], how[i]) if i in partner else _pair(pa, None, "unmatched")
        for i, pa in enumerate(a)
    ]
    pairs += [_pair(None, pb, "unmatched") for j, pb in enumerate(b) if j not in taken]
    return pairs


def knobs_at(data: JournalData, t: float, *, before: bool = False) -> KnobValues:
    """The knob values in force at ``t`` (just before it with ``before``) on one side."""
    values = dict(data.knobs_start)
    for change in data.changes:
        if change.t < t or (change.t == t and not before):
            _apply_change(values, change)
    return values


def phase_knobs(data: JournalData, phase: PhaseStats) -> KnobValues:
    """Each knob's value during a phase: "v", or "v1 → v2" when it changed within it."""
    first, last = knobs_at(data, phase.start), knobs_at(data, phase.end, before=True)
    out: KnobValues = {}
    for knob in set(first) | set(last):
        a, b = first.get(knob), last.get(knob)
        out[knob] = a if a == b else f"{fmt_knob(a)} → {fmt_knob(b)}"
    return out


def pair_knobs(c_a: JournalData, c_b: JournalData, pair: PhasePair) -> PhasePair:
    """The pair with the knobs that differ between its two phases (none if unpaired)."""
    if pair.a is None or pair.b is None:
        return pair
    return replace(pair, knobs=knob_diff(phase_knobs(c_a, pair.a), phase_knobs(c_b, pair.b)))


def knob_diff(a: KnobValues, b: KnobValues) -> list[KnobDiff]:
    return [
        KnobDiff(knob, a.get(knob), b.get(knob))
        for knob in sorted(set(a) | set(b))
        if a.get(knob) != b.get(knob)
    ]


def compare(a: JournalData, b: JournalData) -> Comparison:
    phases_a, phases_b = phase_table(a), phase_table(b)
    return Comparison(
        a=a,
        b=b,
        phases_a=phases_a,
        phases_b=phases_b,
        pairs=[pair_knobs(a, b, p) for p in pair_phases(phases_a, phases_b)],
        server_a=server_label(a.header),
        server_b=server_label(b.header),
        knobs_start=knob_diff(a.knobs_start, b.knobs_start),
        knobs_end=knob_diff(a.knobs_end, b.knobs_end),
    )


def compare_ranges(
    path: str | Path,
    a: tuple[float | None, float | None],
    b: tuple[float | None, float | None],
) -> Comparison:
    """Compare two time ranges (from inclusive, to exclusive) of one journal."""
    return compare(
        load_journal(path, t_from=a[0], t_to=a[1]), load_journal(path, t_from=b[0], t_to=b[1])
    )


# --------------------------------------------------------------------------- formatting


def fmt_ratio(value: float | None) -> str:
    if value is None:
        return "—"
    return f"{value:.3f} ({100.0 * (value - 1.0):+.1f}%)"


def _phase_name(s: PhaseStats | None) -> str:
    if s is None:
        return "—"
    return f"#{s.number} {s.workload} x{s.threads} ({fmt_rel(s.start)}-{fmt_rel(s.end)})"


def _side_rows(c: Comparison) -> list[tuple[str, str, str]]:
    rows = [
        ("journal", c.a.label, c.b.label),
        ("server", c.server_a, c.server_b),
        ("knobtop", c.a.header.knobtop, c.b.header.knobtop),
        ("started", fmt_utc(c.a.header.started_wall, True), fmt_utc(c.b.header.started_wall, True)),
        (
            "length",
            f"{c.a.duration:.1f} s, {len(c.a.rows)} samples",
            f"{c.b.duration:.1f} s, {len(c.b.rows)} samples",
        ),
        ("changes", str(len(c.a.changes)), str(len(c.b.changes))),
    ]
    return rows


def _warnings(c: Comparison) -> list[str]:
    out = [f"A: {w}" for w in report_warnings(c.a)]
    out += [f"B: {w}" for w in report_warnings(c.b)]
    if c.server_differs:
        out.append(f"{c.differs_words}: A is {c.server_a}, B is {c.server_b}")
    return out


def _change_lines(data: JournalData) -> Iterable[str]:
    for ch in data.changes:
        yield (
            f"{fmt_rel(ch.t)} {ch.knob}: {fmt_knob(ch.old)} → {fmt_knob(ch.new)} "
            f"({ch.result}{', ' + ch.reason if ch.reason else ''})"
        )


def comparison_markdown(c: Comparison) -> str:
    """The comparison as Markdown: setups, phase pairs with B/A ratios, knob differences."""
    lines = [f"# knobtop comparison: A = {c.a.label}, B = {c.b.label}", ""]
    for warning in _warnings(c):
        lines.append(f"> **Warning:** {warning}")
    if lines[-1]:
        lines.append("")
    lines += ["## Setup", ""]
    lines += md_table(["", "A", "B"], _side_rows(c))
    lines.append("")

    lines += ["## Load phases (B/A)", ""]
    for p in c.pairs:
        lines += [f"### A {_phase_name(p.a)} vs B {_phase_name(p.b)} ({p.matched_by})", ""]
        lines += md_table(
            ["metric", "A", "B", "B/A"],
            (
                [
                    label,
                    fmt_num(getattr(p.a, name) if p.a else None, digits),
                    fmt_num(getattr(p.b, name) if p.b else None, digits),
                    fmt_ratio(p.ratios.get(name)),
                ]
                for name, label, digits, _better in RATIO_METRICS
            ),
        )
        lines.append("")
        if p.a is not None and p.b is not None:
            lines += _phase_knob_lines(p)
    if not c.pairs:
        lines += ["Neither side has a load phase.", ""]

    for title, diffs in (("Knobs at start", c.knobs_start), ("Knobs at end", c.knobs_end)):
        lines += [f"## {title}", ""]
        if diffs:
            lines += md_table(
                ["knob", "A", "B"], ((d.knob, fmt_knob(d.a), fmt_knob(d.b)) for d in diffs)
            )
        else:
            lines.append("No differences.")
        lines.append("")

    for side, data in (("A", c.a), ("B", c.b)):
        changes = list(_change_lines(data))
        if changes:
            lines += [f"## Changes during {side}", ""]
            lines += [f"- {text}" for text in changes]
            lines.append("")
    return "\n".join(lines)


def _phase_knob_lines(p: PhasePair) -> list[str]:
    if not p.knobs:
        return ["Knobs in force: the same on both sides.", ""]
    rows = ((d.knob, fmt_knob(d.a), fmt_knob(d.b)) for d in p.knobs)
    return ["Knobs in force that differ:", "", *md_table(["knob", "A", "B"], rows), ""]


def ratio_verdict(value: float | None, better: int) -> int:
    """+1 when a B/A ratio says B is better (by 2 % or more), -1 when worse, 0 when the
    metric has no better direction, the ratio is unknown, or the difference is noise."""
    if value is None or better == 0 or abs(value - 1.0) < 0.02:
        return 0
    return 1 if (value > 1.0) == (better > 0) else -1


def _ratio_text(value: float | None, better: int) -> Text:
    text = fmt_ratio(value)
    verdict = ratio_verdict(value, better)
    if verdict == 0:
        return Text(text)
    return Text(text, style="green" if verdict > 0 else "red")


def comparison_text(c: Comparison) -> RenderableType:
    """The comparison as rich renderables for a terminal (print with a rich Console).

    What comes from the journals (labels, server versions, phase names, knob values) goes
    in as Text: a str would be read as markup and emoji codes."""
    parts: list[RenderableType] = []
    for warning in _warnings(c):
        parts.append(Text(f"warning: {warning}", style="yellow"))

    setup = Table(title="Setup", title_justify="left", show_edge=False)
    setup.add_column("")
    setup.add_column("A")
    setup.add_column("B")
    for row in _side_rows(c):
        setup.add_row(*(Text(cell) for cell in row))
    parts.append(setup)

    for pair in c.pairs:
        table = Table(
            title=Text(f"A {_phase_name(pair.a)}  vs  B {_phase_name(pair.b)}  "
                       f"[{pair.matched_by}]"),
            title_justify="left",
            show_edge=False,
        )
        for name in ("metric", "A", "B", "B/A"):
            table.add_column(name, justify="left" if name == "metric" else "right")
        for name, label, digits, better in RATIO_METRICS:
            table.add_row(
                label,
                fmt_num(getattr(pair.a, name) if pair.a else None, digits),
                fmt_num(getattr(pair.b, name) if pair.b else None, digits),
                _ratio_text(pair.ratios.get(name), better),
            )
        if pair.a is not None and pair.b is not None:
            if pair.knobs:
                table.add_row(Text("knobs in force that differ", style="italic"), "", "", "")
            for d in pair.knobs:
                table.add_row(Text(f"  {d.knob}"), Text(fmt_knob(d.a)), Text(fmt_knob(d.b)), "")
        parts.append(table)
    if not c.pairs:
        parts.append(Text("Neither side has a load phase."))

    for title, diffs in (("Knobs at start", c.knobs_start), ("Knobs at end", c.knobs_end)):
        if not diffs:
            parts.append(Text(f"{title}: no differences"))
            continue
        table = Table(title=title, title_justify="left", show_edge=False)
        for name in ("knob", "A", "B"):
            table.add_column(name)
        for d in diffs:
            table.add_row(Text(d.knob), Text(fmt_knob(d.a)), Text(fmt_knob(d.b)))
        parts.append(table)

    for side, data in (("A", c.a), ("B", c.b)):
        changes = list(_change_lines(data))
        if changes:
            parts.append(Text(f"Changes during {side}:\n" + "\n".join(f"  {x}" for x in changes)))
    return Group(*parts)


def _version_part(label: str) -> str:
    """A server label without its storage note (report.storage_note)."""
    return label.split(", storage emulated: ", 1)[0]
