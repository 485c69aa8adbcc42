"""Recipe results as the seeds show them: arms x thread counts, average TPS (the seeds'
figure: transactions over the window) with the median and stall share beside it, spread,
the latency percentile, and verdicts per cell against the baseline arm on average TPS and
on latency (one replicate = one sample), Holm-corrected within each table; under them the
effect the design can detect at 80% power, and whether each cell was measured on its
plateau.

Built from the journal's ``recipe`` and ``step`` events, so the runner, ``knobtop report``
and the TUI all show the same table.
"""
# The cells and verdicts are resultcells.py's, the notes under a table resultnotes.py's;
# the statistics themselves live in stats.py, power.py and plateau.py.

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable

from rich.table import Table
from rich.text import Text

from knobtop.analysis.resultcells import (
    STEP_COSTS,
    Cell,
    Results,
    build,
    collect,
    comparisons,
    run_value,
)
from knobtop.analysis.resultnotes import (
    calibration_note,
    detectable_by_level,
    detectable_note,
    holm_note,
    short_note,
    tests_note,
)
from knobtop.analysis.stats import HIGHER, LOWER, NOISE
from knobtop.metrics.footprint import FOOTPRINT

NONE = "\u2013"  # an en dash: no value


def fmt_tps(value: float | None) -> str:
    return NONE if value is None else f"{value:,.0f}"


def spread_text(cell: Cell) -> str:
    if cell.cv is None or cell.iqr is None:
        return f"{len(cell.runs)} run"
    return f"IQR {cell.iqr:,.0f} (CV {cell.cv:.0%}), {len(cell.runs)} runs"


def median_text(cell: Cell) -> str:
    """``median 1,250, stall 2%``: beside the average, what a stall did to it."""
    text = f"median {fmt_tps(cell.per_second)}"
    return text if cell.stall is None else f"{text}, stall {cell.stall:.0%}"


def plateau_text(results: Results, cell: Cell, flags_only: bool = False) -> str:
    """``steady`` / ``not steady 1/3, off plateau 1/3`` / ``on plateau``: "not steady" when a
    plateau wait timed out (only if the recipe waited for one), "off plateau" when a
    measured window still drifted.  ``flags_only``: "" when nothing is wrong."""
    n = len(cell.runs)
    words = []
    if results.plateau and cell.steady < n:
        words.append(f"not steady {n - cell.steady}/{n}")
    if cell.drifting:
        words.append(f"off plateau {cell.drifting}/{n}")
    if words or flags_only:
        return ", ".join(words)
    return "steady" if results.plateau else "on plateau"


def _num(value: float | None, digits: int = 1) -> str:
    if value is None:
        return NONE
    return f"{value:,.{digits}f}" if value < 100 else f"{value:,.0f}"


# (label, STEP_COSTS key, digits, unit) of the cost lines a cell shows
_PER_TXN = (("CPU", "cpu_us_txn", 0, " us"), ("r", "reads_txn", 3, ""),
            ("rKB", "rkb_txn", 2, ""), ("wKB", "wkb_txn", 2, ""))
_RATES = (("r/s", "r_s", 1, ""), ("rMB/s", "rmb_s", 2, ""), ("wMB/s", "wmb_s", 2, ""))
_SERVER = (("mysqld CPU", "mysqld_us_txn", 0, " us"), ("RSS", "rss_mb", 0, " MB"),
           ("db", "db_mb", 0, " MB"), ("datadir", "datadir_mb", 0, " MB"))


def _cost_line(cell: Cell, parts: tuple[tuple[str, str, int, str], ...]) -> str:
    if not cell.cost:
        return NONE
    return ", ".join(f"{label} {_num(cell.cost.get(key), digits)}{unit}"
                     for label, key, digits, unit in parts)


def cost_text(cell: Cell) -> str:
    """``CPU 123 us, r 0.020, rKB 0.30, wKB 1.20`` per transaction."""
    return _cost_line(cell, _PER_TXN)


def rate_text(cell: Cell) -> str:
    """``r/s 10.0, rMB/s 0.16, wMB/s 2.50``."""
    return _cost_line(cell, _RATES)


def server_text(cell: Cell) -> str:
    """``mysqld CPU 95 us, RSS 310 MB, db 24 MB, datadir 180 MB``."""
    return _cost_line(cell, _SERVER)


def disk_words(results: Results) -> str:
    """Where the disk columns come from: the datadir's device, or every whole disk."""
    disks = sorted({s.disk for s in results.steps if s.disk})
    if disks:
        return f"the datadir's device ({', '.join(disks)})"
    return "the server host's disks"


def verdict_text(cell: Cell) -> str:
    return "baseline" if cell.verdict is None else cell.verdict.text()


def lat_verdict_text(cell: Cell) -> str:
    if cell.lat_verdict is None:
        return "baseline" if cell.verdict is None else NONE
    return cell.lat_verdict.text()


def summary_line(results: Results) -> str:
    done = len(results.steps)
    planned = f"/{results.planned_steps}" if results.planned_steps else ""
    state = {"end": "finished", "running": "in progress"}.get(results.outcome, results.outcome)
    extra = f": {results.message}" if results.message and results.outcome != "end" else ""
    return f"recipe {results.recipe}: {done}{planned} steps, {state}{extra}"


_STYLE = {HIGHER: "bold green", LOWER: "bold red", NOISE: "dim"}


def fmt_ms(ms: float) -> str:
    """A latency with the digits that matter: 0.02, 1.4, 35."""
    if ms < 1:
        return f"{ms:.2f}"
    return f"{ms:.1f}" if ms < 100 else f"{ms:.0f}"


def results_table(results: Results) -> Table:
    """Rows are arms, columns thread counts; each cell: median TPS, spread, p95, verdict."""
    table = Table(title=Text(summary_line(results)), title_justify="left", show_lines=True)
    table.add_column("arm", style="bold")
    for threads in results.threads:
        table.add_column(f"{threads} threads", justify="right")
    for arm in results.arms:
        row: list[Text | str] = [Text(arm)]  # a recipe's name for it, never markup
        for threads in results.threads:
            cell = results.cells.get((arm, threads))
            if cell is None:
                row.append(NONE)
                continue
            text = Text(f"{fmt_tps(cell.median)} tps avg\n", style="bold")
            if cell.stall is not None:
                text.append(f"{median_text(cell)}\n", style="")
            text.append(f"{spread_text(cell)}\n", style="")
            p95 = NONE if cell.p95 is None else fmt_ms(cell.p95)
            text.append(f"p{cell.pct} {p95} ms", style="")
            if cell.hit_ratio is not None:
                text.append(f", hit {cell.hit_ratio:.1f}%", style="")
            flags = plateau_text(results, cell, flags_only=True)
            if flags:
                text.append(f"\n{flags}", style="bold yellow")
            label = cell.verdict.label if cell.verdict is not None else ""
            text.append(f"\n{verdict_text(cell)}", style=_STYLE.get(label, "italic"))
            if cell.lat_verdict is not None:
                lat = cell.lat_verdict
                # lower latency is the good direction: its colours swap
                style = {HIGHER: "bold red", LOWER: "bold green"}.get(lat.label, "dim")
                text.append(f"\np{cell.pct} {lat.text()}", style=style)
            row.append(text)
        table.add_row(*row)
    note = " ".join([short_note(results), *(n for n in results.condition_notes
                                            if n.startswith("Not met"))]).strip()
    if note:
        table.caption = Text(note)
        table.caption_justify = "left"
    return table


def _md_row(cells: Iterable[object]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def results_markdown(results: Results) -> str:
    heads = ["arm", *(f"{t} threads" for t in results.threads)]
    lines = [f"### {summary_line(results)}", ""]

    def table(title: str, value: Callable[[Cell], str]) -> None:
        lines.extend([f"**{title}**", "", _md_row(heads), _md_row(["---"] * len(heads))])
        for arm in results.arms:
            row: list[object] = [arm]
            for threads in results.threads:
                cell = results.cells.get((arm, threads))
                row.append(NONE if cell is None else value(cell))
            lines.append(_md_row(row))
        lines.append("")

    cells = list(results.cells.values())
    pct = cells[0].pct if cells else 95
    table("Average TPS (spread over replicates)",
          lambda c: f"{fmt_tps(c.median)} ({spread_text(c)})")
    if any(c.stall is not None for c in cells):
        table("Median of per-second TPS, and the share of seconds below half of it (stall)",
              median_text)
    table(f"p{pct} latency, ms (each run's median of its per-second p{pct}; median over "
          "replicates)",
          lambda c: NONE if c.p95 is None else fmt_ms(c.p95))
    if any(c.window_pct is not None for c in cells):
        table(f"p{pct} latency over each whole measured window (the driver's own summary of "
              "the timed run), ms (median over replicates)",
              lambda c: NONE if c.window_pct is None else fmt_ms(c.window_pct))
    if any(c.hit_ratio is not None for c in cells):
        table("Buffer pool hit ratio, %",
              lambda c: NONE if c.hit_ratio is None else f"{c.hit_ratio:.2f}")
    if any(c.ndb_hit for c in cells):
        table("NDB disk page buffer hit ratio per data node, % (median over replicates)",
              lambda c: ", ".join(f"node {n} {v:.2f}" for n, v in sorted(c.ndb_hit.items()))
              or NONE)
    if any(c.history_end is not None for c in cells):
        table("History list length at the end of each step (median over replicates)",
              lambda c: NONE if c.history_end is None else f"{c.history_end:,.0f}")
    if any(c.cost for c in cells):
        where = disk_words(results)
        table(f"Per transaction: server host CPU microseconds; reads, KB read, KB written on "
              f"{where} (median over replicates)", cost_text)
        table(f"Disk rates on {where}: reads/s, read MB/s, write MB/s", rate_text)
    if any(c.cost.get(k) is not None for c in cells for k in FOOTPRINT):
        table("mysqld alone: CPU microseconds per transaction, RSS; database and datadir "
              "size at the end of the step", server_text)
    if results.plateau or any(c.drifting for c in cells):
        table("Plateau (steady: reached before measuring; off plateau: the measured window "
              "still drifted beyond its noise)", lambda c: plateau_text(results, c))
    table(f"Average TPS vs {results.baseline}: ratio [bootstrap 95% CI] and p", verdict_text)
    tests = tests_note(results)
    if tests:
        lines.extend([tests, ""])
    note = holm_note(results)
    if note:
        lines.extend([note, ""])
    if comparisons(results, "lat_verdict"):
        table(f"p{pct} latency vs {results.baseline}: ratio [bootstrap 95% CI] and p "
              "(lower is better)", lat_verdict_text)
        note = holm_note(results, "lat_verdict")
        if note:
            lines.extend([note, ""])
    lines.append("One replicate is one sample (its average TPS over the measured window, "
                 "warmup excluded: transactions / seconds, so a stalled second counts; its "
                 f"median p{pct} for latency). \"~ noise\" means the difference cannot be "
                 "told from run-to-run variation: the CI spans 1 or the rank test disagrees.")
    power = detectable_note(results)
    if power:
        lines.extend(["", power])
    for note in results.condition_notes:
        lines.extend(["", note])
    lines.append("")
    return "\n".join(lines)


CSV_FIELDS = ("recipe", "index", "replicate", "arm", "threads", "start", "end", "tps", "p95",
              "err", "hit_ratio", "dirty_pct", "intervals", "steady", "waits", "avg_tps",
              "stall", "pct", "drift", "flat", "calibration", "history_start", "history_end",
              *STEP_COSTS, "disk")


def results_csv(results: Results) -> str:
    """One row per measured step (for spreadsheets)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for s in results.steps:
        waits = ";".join(f"{k}={v:g}" for k, v in s.waits.items())
        writer.writerow([s.recipe, s.index + 1, s.replicate, s.arm, s.threads,
                         f"{s.start:.2f}", f"{s.end:.2f}",
                         *("" if v is None else f"{v:.2f}"
                           for v in (s.tps, s.p95, s.err, s.hit_ratio, s.dirty_pct)),
                         s.intervals, int(s.steady), waits,
                         "" if s.avg_tps is None else f"{s.avg_tps:.2f}",
                         "" if s.stall is None else f"{s.stall:.4f}", s.pct,
                         "" if s.drift is None else f"{s.drift:.4f}",
                         "" if s.flat is None else int(s.flat), int(s.calibration),
                         *("" if v is None else f"{v:g}" for v in (
                             s.history_start, s.history_end,
                             *(getattr(s, k) for k in STEP_COSTS))), s.disk])
    return buf.getvalue()


# What other modules take from here (some defined beside it, in resultcells and resultnotes).
__all__ = ["CSV_FIELDS", "NONE", "Cell", "Results", "build", "calibration_note", "collect",
           "detectable_by_level", "detectable_note", "disk_words", "fmt_ms", "fmt_tps",
           "results_csv", "results_markdown", "results_table", "run_value", "short_note"]
