"""The seed posts' table shapes from a recipe journal (issue 18 part 4; REFERENCE.md section
5), for `knobtop report JOURNAL --table NAME --format md|csv`:

* ``sweep``: configurations x thread counts of average TPS, each against the baseline
  (ratio and verdict), as Callaghan's concurrency sweeps (shape A).
* ``efficiency``: one row per arm (and thread count): TPS, the latency percentile, CPU per
  transaction for the host and for mysqld alone, reads / KB read / KB written per
  transaction, r/s, MB/s, database and datadir size, mysqld RSS (the LinkBench post, B).
* ``overhead``: thread counts x arms of TPS and overhead % = 1 - arm / baseline (the
  performance_schema post, C).
* ``purge``: arms x thread counts of the history list length at the end of each step
  (the purge-lag table of shape A).
* ``timeline``: the named metrics at elapsed-time checkpoints of a timeline recipe (D).
* ``linkbench``: the LinkBench post's two parts, the load phase (inserts/s and its costs
  per insert) and the request phase (requests/s, rates, per-operation p99, costs).
* ``curve``: a curve recipe's knob values (KB) with the probe's seconds and the counters'
  deltas at each, and where the first counter fell to 0 for good (the sort_buffer_size
  post, seed 002).
* ``scalability``: servers (the arms) x thread counts of average TPS, one table per query
  type, a recipe each (seed 003, shape E: experiments/scalability-*.toml).

Each is a :class:`SeedTable` (title, header, rows, note) printed as Markdown or CSV. The
numbers are the ones the results tables use (medians over replicates of each run's
figure); nothing here measures anything.
"""
# Over 500 lines: one builder per seed post's table (eight shapes), each short, sharing the
# SeedTable form, the configurations' order and the number formats; split, they would
# each carry a copy of those.

from __future__ import annotations

import csv
import io
import statistics
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from knobtop.analysis.curve import (
    QUERIES,
    SECONDS,
    curve_counters,
    curve_knob,
    zero_line,
)
from knobtop.analysis.results import (
    NONE,
    Cell,
    Results,
    disk_words,
    fmt_ms,
    fmt_tps,
    results_markdown,
    results_table,
)
from knobtop.analysis.stats import TOO_FEW, Verdict
from knobtop.errors import BadValue

TABLES = ("sweep", "efficiency", "overhead", "purge", "timeline", "linkbench", "curve",
          "scalability")


@dataclass
class SeedTable:
    title: str
    header: list[str]
    rows: list[list[str]]  # as shown in Markdown
    csv_header: list[str]
    csv_rows: list[list[str]]  # plain numbers for a spreadsheet
    notes: list[str] = field(default_factory=list)
    # Tables of their own under the title (LinkBench's load and request phases): Markdown
    # and the terminal print these instead of header and rows; the CSV stays one table
    parts: list[SeedTable] = field(default_factory=list)

    def markdown(self) -> str:
        def row(cells: list[str]) -> str:
            return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"

        if self.parts:
            lines = [f"**{self.title}**", ""]
            lines += [part.markdown() for part in self.parts]
            lines += [*self.notes, ""] if self.notes else []
            return "\n".join(lines)

        lines = [f"**{self.title}**", "", row(self.header),
                 row(["---"] * len(self.header)), *(row(r) for r in self.rows), ""]
        lines += [*self.notes, ""] if self.notes else []
        return "\n".join(lines)

    def rich(self) -> RenderableType:
        """The table for a terminal (text from journals: never markup)."""
        if self.parts:
            return Group(Text(self.title), *(part.rich() for part in self.parts),
                         Text(" ".join(self.notes)))
        table = Table(title=Text(self.title), title_justify="left", show_lines=False,
                      caption=Text(" ".join(self.notes)), caption_justify="left")
        for i, head in enumerate(self.header):
            table.add_column(Text(head), justify="left" if i == 0 else "right")
        for row in self.rows:
            table.add_row(*(Text(cell) for cell in row))
        return table

    def csv(self) -> str:
        buf = io.StringIO()
        writer = csv.writer(buf, lineterminator="\n")
        writer.writerow(self.csv_header)
        writer.writerows(self.csv_rows)
        return buf.getvalue()


def _num(value: float | None, digits: int = 3) -> str:
    if value is None:
        return ""
    text = f"{value:.{digits}f}"
    if "." in text:  # trailing zeros of the fraction only (280 stays 280)
        text = text.rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _verdict_words(v: Verdict | None) -> str:
    if v is None:
        return "base"
    ratio = "n/a" if v.ratio is None else f"{v.ratio:.2f}x"
    label = "no verdict" if v.label == TOO_FEW else v.label
    return f"{ratio} {label}"


def _cell(results: Results, arm: str, threads: int) -> Cell | None:
    return results.cells.get((arm, threads))


def _verdict_csv(v: Verdict | None) -> list[str]:
    if v is None:
        return ["", "", "", "", "", "baseline"]
    return [_num(v.ratio, 4), _num(v.lo, 4), _num(v.hi, 4), _num(v.p, 4),
            _num(v.p_holm, 4), v.label]


def sweep(results: Results) -> SeedTable:
    rows, csv_rows = [], []
    for arm in results.arms:
        row = [arm]
        for threads in results.threads:
            c = _cell(results, arm, threads)
            row.append(NONE if c is None else
                       f"{fmt_tps(c.median)} ({_verdict_words(c.verdict)})")
            if c is not None:
                csv_rows.append([arm, str(threads), _num(c.median, 2), str(len(c.runs)),
                                 *_verdict_csv(c.verdict)])
        rows.append(row)
    return SeedTable(
        title=f"{results.recipe}: average TPS by configuration and total client threads "
              f"(ratio to {results.baseline} and verdict)",
        header=["configuration", *(str(t) for t in results.threads)], rows=rows,
        csv_header=["arm", "threads", "avg_tps", "runs", "ratio", "ci_lo", "ci_hi", "p",
                    "p_holm", "verdict"],
        csv_rows=csv_rows,
        notes=["Average TPS = transactions / seconds of each measured window, median over "
               "replicates; verdicts as in `knobtop report` (bootstrap CI and rank test, "
               "Holm across the table)."])


# (header, cost key or callable, digits) of the efficiency table's columns after tps / pN
_EFFICIENCY: tuple[tuple[str, str, int], ...] = (
    ("CPU us/t", "cpu_us_txn", 0), ("mysqld us/t", "mysqld_us_txn", 0),
    ("r/t", "reads_txn", 3), ("rKB/t", "rkb_txn", 2), ("wKB/t", "wkb_txn", 2),
    ("r/s", "r_s", 1), ("rMB/s", "rmb_s", 2), ("wMB/s", "wmb_s", 2),
    ("size MB", "db_mb", 0), ("datadir MB", "datadir_mb", 0), ("RSS MB", "rss_mb", 0))


def _configurations(results: Results) -> Iterator[tuple[str, int, Cell, list[str]]]:
    """Each measured (arm, threads) cell with its row's leading cells: the arm, and the
    thread count when the run swept several."""
    many = len(results.threads) > 1
    for arm in results.arms:
        for threads in results.threads:
            c = _cell(results, arm, threads)
            if c is not None:
                yield arm, threads, c, [arm, *([str(threads)] if many else [])]


def efficiency(results: Results) -> SeedTable:
    pct = next((c.pct for c in results.cells.values()), 95)
    many = len(results.threads) > 1
    rows, csv_rows = [], []
    for arm, threads, c, lead in _configurations(results):
        values = [c.cost.get(key) for _, key, _ in _EFFICIENCY]
        lat = c.window_pct if c.window_pct is not None else c.p95
        rows.append([*lead, fmt_tps(c.median),
                     NONE if lat is None else fmt_ms(lat),
                     *(NONE if v is None else f"{v:,.{d}f}"
                       for v, (_, _, d) in zip(values, _EFFICIENCY, strict=True))])
        csv_rows.append([arm, str(threads), _num(c.median, 2), _num(lat, 3),
                         *(_num(v, 4) for v in values)])
    return SeedTable(
        title=f"{results.recipe}: efficiency per transaction, one row per configuration",
        header=["configuration", *(["threads"] if many else []), "tps", f"p{pct} ms",
                *(h for h, _, _ in _EFFICIENCY)],
        rows=rows,
        csv_header=["arm", "threads", "avg_tps", f"p{pct}_ms",
                    *(key for _, key, _ in _EFFICIENCY)],
        csv_rows=csv_rows,
        notes=[f"p{pct}: over each whole window where the steps were timed runs ([run] "
               f"timed), else the median of per-second p{pct}. "
               f"CPU us/t: the server host's busy CPU per transaction; mysqld us/t: the "
               f"mysqld process alone. Disk columns from {disk_words(results)}. Sizes at "
               "the end of each step (database: InnoDB's tablespace files and other "
               "engines' data + index length). Medians over replicates."])


def overhead(results: Results) -> SeedTable:
    others = results.arms[1:]
    base = results.baseline
    rows, csv_rows = [], []
    for threads in results.threads:
        b = _cell(results, base, threads)
        row = [str(threads), NONE if b is None else fmt_tps(b.median)]
        for arm in others:
            c = _cell(results, arm, threads)
            if c is None:
                row.append(NONE)
                continue
            cost = (None if b is None or not b.median or c.median is None
                    else 1 - c.median / b.median)
            label = "" if c.verdict is None else c.verdict.label
            row.append(f"{fmt_tps(c.median)} ({NONE if cost is None else f'{cost:.1%}'}"
                       f"{', ' + label if label else ''})")
            csv_rows.append([str(threads), arm, _num(c.median, 2),
                             _num(None if b is None else b.median, 2),
                             _num(None if cost is None else cost * 100, 2), label])
        rows.append(row)
    return SeedTable(
        title=f"{results.recipe}: TPS and overhead % = 1 - arm / {base} by client threads",
        header=["threads", base, *others], rows=rows,
        csv_header=["threads", "arm", "avg_tps", "base_tps", "overhead_pct", "verdict"],
        csv_rows=csv_rows,
        notes=["Overhead from the medians over replicates of average TPS; the verdict says "
               "whether the difference is beyond the run-to-run noise."])


def purge(results: Results) -> SeedTable:
    rows, csv_rows = [], []
    for arm in results.arms:
        row = [arm]
        for threads in results.threads:
            c = _cell(results, arm, threads)
            value = None if c is None else c.history_end
            row.append(NONE if value is None else f"{value:,.0f}")
            if c is not None:
                csv_rows.append([arm, str(threads), _num(value, 0)])
        rows.append(row)
    return SeedTable(
        title=f"{results.recipe}: history list length at the end of each step (purge lag)",
        header=["configuration", *(str(t) for t in results.threads)], rows=rows,
        csv_header=["arm", "threads", "history_end"], csv_rows=csv_rows,
        notes=["Median over replicates of the last sample's History list length in each "
               "measured window."])


ARROWS = {"climbing": " ↑", "falling": " ↓"}


def _value_text(key: str, value: float | None) -> str:
    if value is None:
        return NONE
    if key in ("load_tps", "tps", "qps", "history_len", "checkpoint_age"):
        return f"{value:,.0f}"
    return f"{value:,.2f}"


def timeline(results: Results) -> SeedTable:
    if not results.one_load:
        raise BadValue(f"recipe {results.recipe} is not a timeline: --table timeline needs a "
                       'recipe with [run] kind = "timeline" or "soak"')
    points = results.checkpoints
    if not points:
        raise BadValue(f"timeline {results.recipe} has no checkpoint yet: no table")
    keys: dict[str, None] = {}
    for cp in points:
        for key in cp.values:
            keys.setdefault(key, None)
    rows, csv_rows = [], []
    previous = -1.0
    for cp in points:
        done = [a for a in results.actions if previous < float(a.get("at", -1)) <= cp.at]
        previous = cp.at
        acts = "; ".join(f"{a['at']:g} s " + ", ".join(f"{k}={v}" for k, v in
                                                       dict(a.get("knobs", {})).items())
                         for a in done)
        rows.append([f"{cp.at:g}", *(_value_text(k, cp.values.get(k))
                                     + ARROWS.get(cp.trends.get(k, ""), "")
                                     for k in keys), acts or NONE])
        csv_rows.append([f"{cp.at:g}", *(_num(cp.values.get(k), 4) for k in keys),
                         ";".join(f"{k}={v}" for k, v in cp.trends.items()), acts])
    last = points[-1]
    moving = [f"{k} {v}" for k, v in last.trends.items()]
    notes = [f"Each value over the {last.window:g} s before its checkpoint (load_tps: "
             "transactions / seconds, a second without load counting 0; sampled metrics: "
             "their mean); ↑ ↓ still climbing or falling beyond the noise over 2 x that."]
    notes.append(f"At {last.at:g} s: " + (", ".join(moving) if moving else
                                          "every metric settled") + ".")
    return SeedTable(
        title=f"{results.recipe}: metrics at elapsed-time checkpoints (seconds from the "
              "load's start)",
        header=["s", *keys, "actions since the previous checkpoint"], rows=rows,
        csv_header=["at_s", *keys, "trends", "actions"], csv_rows=csv_rows, notes=notes)


# The LinkBench post's efficiency table (issue 20): its operations' p99 and cost columns.
LINKBENCH_OPS = (("un", "updatenode"), ("gn", "getnode"), ("ul", "updatelink"),
                 ("gl", "getlinklist"))
KIB, MIB, GIB = 1024.0, 1024.0 ** 2, 1024.0 ** 3  # the post's units: iostat's KB of 1024
# (header, csv key, digits) of the two parts of the LinkBench table
_LB_LOAD = (("ips", "ips", 0), ("wKB/i", "wkb_i", 3), ("Mcpu/i", "mcpu_i", 1),
            ("size GB", "size_gb", 3), ("RSS GB", "rss_gb", 3), ("wMB/s", "wmb_s", 2),
            ("cpu%", "cpu_pct", 1))
_LB_REQUEST = (("tps", "tps", 0), ("r/s", "r_s", 1), ("rMB/s", "rmb_s", 2),
               ("wMB/s", "wmb_s", 2), ("cpu%", "cpu_pct", 1), ("Mcpu/t", "mcpu_t", 1),
               ("r/t", "r_t", 3), ("rKB/t", "rkb_t", 3), ("wKB/t", "wkb_t", 3),
               ("size GB", "size_gb", 3), ("RSS GB", "rss_gb", 3))


def _median_of(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _ratio(top: float | None, bottom: float | None, scale: float = 1.0) -> float | None:
    if top is None or bottom is None or bottom <= 0:
        return None
    return top * scale / bottom


def _load_columns(phase: dict[str, float], ips: float | None) -> list[float | None]:
    """The load part's figures from one load phase's readings (StepResult.load_phase); a
    journal from before them has the inserts/s alone."""
    rows, seconds = phase.get("rows"), phase.get("seconds")
    cpu, written = phase.get("cpu_s"), phase.get("written_bytes")
    size, rss = phase.get("db_bytes"), phase.get("rss_bytes")
    return [_ratio(rows, seconds) if phase else ips,
            _ratio(written, rows, 1 / KIB), _ratio(cpu, rows, 1e6),
            None if size is None else size / GIB, None if rss is None else rss / GIB,
            _ratio(written, seconds, 1 / MIB), _ratio(cpu, seconds, 100.0)]


def _request_columns(c: Cell) -> list[float | None]:
    """The request part's figures from a cell's medians (stored in KB of 1000 and MB of
    1e6, as the efficiency table prints them: converted here to the post's 1024s)."""
    cost = c.cost

    def scaled(key: str, factor: float) -> float | None:
        value = cost.get(key)
        return None if value is None else value * factor

    mcpu = cost.get("mysqld_us_txn")
    return [c.median, cost.get("r_s"), scaled("rmb_s", 1e6 / MIB),
            scaled("wmb_s", 1e6 / MIB),
            None if mcpu is None or c.median is None else mcpu * c.median / 1e4,
            mcpu, cost.get("reads_txn"), scaled("rkb_txn", 1e3 / KIB),
            scaled("wkb_txn", 1e3 / KIB), scaled("db_mb", 1e6 / GIB),
            scaled("rss_mb", 1e6 / GIB)]


def _shown(values: list[float | None], spec: tuple[tuple[str, str, int], ...]) -> list[str]:
    return [NONE if v is None else f"{v:,.{d}f}" for v, (_, _, d) in zip(values, spec,
                                                                          strict=True)]


def linkbench(results: Results) -> SeedTable:
    """The LinkBench post's table in its two parts (REFERENCE.md section 5 B), one row per
    configuration (and thread count) in each: the load phase (inserts/s, KB written and
    mysqld CPU per insert, size and RSS at its end, write MB/s and CPU) read from the
    steps' ``load_phase``, and the request phase (requests/s, disk rates, CPU, the p99 of
    updatenode, getnode, updatelink and getlinklist over each timed window, and the costs
    per request), medians over replicates. CSV: one row per configuration and phase."""
    many = len(results.threads) > 1
    load_rows: list[list[str]] = []
    request_rows: list[list[str]] = []
    csv_rows: list[list[str]] = []
    loaded: set[str] = set()
    for arm, threads, c, lead in _configurations(results):
        steps = [s for s in results.steps if s.arm == arm and s.threads == threads
                 and not s.calibration]
        # the graph is loaded once per engine: each step of it carries the same readings
        phase = next((s.load_phase for s in steps if s.load_phase), {})
        ips = _median_of([s.load_ips for s in steps if s.load_ips is not None])
        load = _load_columns(phase, ips)
        if any(v is not None for v in load) and arm not in loaded:  # one graph per arm
            loaded.add(arm)
            load_rows.append([arm, *_shown(load, _LB_LOAD)])
            csv_rows.append([arm, "", "load", *(_num(v, 6) for v in load),
                             *([""] * (len(_LB_REQUEST) + len(LINKBENCH_OPS)))])
        p99 = [_median_of([s.ops[op][3] for s in steps if op in s.ops])
               for _, op in LINKBENCH_OPS]
        request = _request_columns(c)
        request_rows.append([*lead, *_shown(request[:5], _LB_REQUEST[:5]),
                             *(NONE if v is None else f"{v:,.1f}" for v in p99),
                             *_shown(request[5:], _LB_REQUEST[5:])])
        csv_rows.append([arm, str(threads), "request", *([""] * len(_LB_LOAD)),
                         *(_num(v, 6) for v in request), *(_num(v, 3) for v in p99)])
    lead_head = ["configuration", *(["threads"] if many else [])]
    request_head = [*lead_head, *(h for h, _, _ in _LB_REQUEST[:5]),
                    *(f"{short} p99" for short, _ in LINKBENCH_OPS),
                    *(h for h, _, _ in _LB_REQUEST[5:])]
    parts = [
        SeedTable(title="load phase", header=["configuration", *(h for h, _, _ in _LB_LOAD)],
                  rows=load_rows, csv_header=[], csv_rows=[]),
        SeedTable(title="request phase", header=request_head, rows=request_rows,
                  csv_header=[], csv_rows=[])]
    if not load_rows:
        parts[0].notes.append("No load phase in this journal: the graph was already there "
                              "when the recipe ran.")
    return SeedTable(
        title=f"{results.recipe}: LinkBench, the load phase and the request phase per "
              "configuration",
        header=request_head, rows=request_rows,
        csv_header=["arm", "threads", "phase", *(f"load_{k}" for _, k, _ in _LB_LOAD),
                    *(f"request_{k}" for _, k, _ in _LB_REQUEST),
                    *(f"{op}_p99_ms" for _, op in LINKBENCH_OPS)],
        csv_rows=csv_rows, parts=parts,
        notes=["Units as the post's: KB = 1024 bytes and MB = 1024 KB as iostat's, GB = "
               "1024^3 bytes. Load phase (once per graph, before the first step): ips = "
               "rows inserted / seconds of the whole load (tables, rows and indexes); wKB/i "
               "= KB written to the datadir's device per insert; Mcpu/i = mysqld's user + "
               "system CPU microseconds per insert (CPU seconds x 1e6 / inserts; the post "
               "derives its Mcpu from vmstat's us + sy of the whole host, so compare ratios "
               "between rows, not the absolute figures); size = the databases' size and "
               "RSS = mysqld's at the end of the load; cpu% = mysqld's CPU seconds per "
               "second x 100 (100 = one core busy). Request phase: tps = requests per "
               "second; r/s, rMB/s, wMB/s from the datadir's device (or every disk of the "
               "host when it was not found); cpu% and Mcpu/t = mysqld's as in the load "
               "phase; p99 in ms over each whole timed window (un updatenode, gn getnode, "
               "ul updatelink, gl getlinklist); r/t, rKB/t, wKB/t per request; size and "
               "RSS at the end of the window. Medians over replicates. The post ran 1 "
               "billion ids with 4 loaders, then 12 one-hour request periods and reported "
               "the last; a recipe's figures are its own form's (see its comments)."])


def _whole(value: float | None) -> str:
    return "" if value is None else f"{value:.0f}"


def curve(results: Results) -> SeedTable:
    """One row per value of the knob (KB): the probe's seconds for its queries and each
    counter's delta over them; the note says where the first counter fell to 0."""
    if results.kind != "curve":
        raise BadValue(f"recipe {results.recipe} is not a curve: --table curve needs a "
                       'recipe with [run] kind = "curve"')
    points = results.checkpoints
    if not points:
        raise BadValue(f"curve {results.recipe} has no value measured yet: no table")
    knob, counters = curve_knob(points), curve_counters(points)
    queries = {p.values.get(QUERIES) for p in points}
    count = f"{queries.pop():g} queries" if len(queries) == 1 and None not in queries \
        else "the queries"
    rows, csv_rows = [], []
    for p in points:
        value = p.values.get(knob)
        kb = NONE if value is None else f"{value / 1024:,.0f}"
        rows.append([kb, _value_text(SECONDS, p.values.get(SECONDS)),
                     *(_value_text(c, p.values.get(c)) if p.values.get(c) is None
                       else f"{p.values[c]:,.0f}" for c in counters)])
        csv_rows.append([_whole(value), _num(p.values.get(SECONDS), 4),
                         _whole(p.values.get(QUERIES)),
                         *(_whole(p.values.get(c)) for c in counters)])
    notes = [f"seconds: the time of {count} of the probe at each value, on a new "
             f"connection that takes the global {knob}; counters: their session deltas "
             "over those queries."]
    if counters:
        notes.append(zero_line(points, knob, counters[0]) + ".")
    return SeedTable(
        title=f"{results.recipe}: {knob} (KB) against the probe's seconds for {count}",
        header=[f"{knob} KB", f"s for {count}", *counters], rows=rows,
        csv_header=[f"{knob}_bytes", "seconds", "queries", *counters], csv_rows=csv_rows,
        notes=notes)


def scalability(results: Results) -> SeedTable:
    """Seed 003's shape E for one query type (one recipe run): a row per server (arm), a
    column per thread count, average TPS in the cells; the csv rows carry the recipe's name
    so that the four query types' files concatenate into one sheet."""
    rows, csv_rows = [], []
    for arm in results.arms:
        row = [arm]
        for threads in results.threads:
            c = _cell(results, arm, threads)
            row.append(NONE if c is None else fmt_tps(c.median))
            if c is not None:
                csv_rows.append([results.recipe, arm, str(threads), _num(c.median, 2),
                                 str(len(c.runs))])
        rows.append(row)
    return SeedTable(
        title=f"{results.recipe}: average TPS by server and client threads",
        header=["server", *(str(t) for t in results.threads)], rows=rows,
        csv_header=["recipe", "arm", "threads", "avg_tps", "runs"], csv_rows=csv_rows,
        notes=["Average TPS = transactions / seconds of each measured window, median over "
               "replicates; one table per query type (a recipe each), the servers' "
               "verdicts against the first in `knobtop report`."])


BUILDERS: dict[str, Callable[[Results], SeedTable]] = {
    "sweep": sweep, "efficiency": efficiency, "overhead": overhead, "purge": purge,
    "timeline": timeline, "linkbench": linkbench, "curve": curve,
    "scalability": scalability}


def run_markdown(results: Results) -> str:
    """One recipe run as Markdown: a timeline's checkpoints, a curve's points, else its
    results tables."""
    if results.kind == "curve":
        if not results.checkpoints:
            return f"Curve {results.recipe}: no value measured yet.\n"
        return curve(results).markdown()
    if not results.one_load:
        return results_markdown(results)
    if not results.checkpoints:
        return f"{results.kind.capitalize()} {results.recipe}: no checkpoint yet.\n"
    return timeline(results).markdown()


def run_renderable(results: Results) -> Any:
    """One recipe run's table for a terminal: a curve's points, a timeline's (or a soak's)
    checkpoints, else its results table (what the live screen's panel shows, and what
    stays on the terminal after it)."""
    if results.kind == "curve" and results.checkpoints:
        return curve(results).rich()
    if results.one_load and results.checkpoints:
        return timeline(results).rich()
    return results_table(results)


def seed_table(name: str, results: Results) -> SeedTable:
    """The table ``name`` (one of TABLES) of one recipe run."""
    if name not in BUILDERS:
        raise BadValue(f"unknown table {name!r}: choose one of {', '.join(TABLES)}")
    if name not in ("timeline", "curve") and not results.cells:
        why = (f"it is a {results.kind}: use --table timeline" if results.one_load
               else "it is a curve: use --table curve" if results.kind == "curve"
               else "no measured step yet")
        raise BadValue(f"recipe {results.recipe} has no steps ({why}): no {name} table")
    table = BUILDERS[name](results)
    table.notes += results.condition_notes
    return table
