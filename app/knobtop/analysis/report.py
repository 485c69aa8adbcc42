"""Reports from a recorded journal: setup, baseline knobs, timeline, per-phase statistics, CSV."""
# Just over 500 lines: one report's sections (setup, knobs, timeline, phases, recipe runs)
# and its CSV share the same labels and formatting helpers.

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from knobtop.analysis.journaldata import (
    CSV_FIELDS,
    ROW_FIELDS,
    JournalData,
    PhaseSpan,
    Row,
    fold,
    phase_spans,
    phase_table,
)
from knobtop.analysis.journalfold import _Loader
from knobtop.analysis.times import fmt_rel, fmt_utc
from knobtop.errors import BadValue
from knobtop.journal import (
    Change,
    Header,
    JournalReader,
    OutsideChange,
)
from knobtop.printable import printable

if TYPE_CHECKING:
    from knobtop.analysis.results import Results


def fmt_num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def fmt_knob(value: str | None) -> str:
    return "—" if value is None else value


def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def md_table(head: Iterable[str], rows: Iterable[Iterable[object]]) -> list[str]:
    head = list(head)
    out = ["| " + " | ".join(head) + " |", "|" + "|".join("---" for _ in head) + "|"]
    out.extend("| " + " | ".join(_cell(c) for c in row) + " |" for row in rows)
    return out


def server_label(header: Header) -> str:
    server = header.server
    flavor = str(server.get("flavor") or "server")
    version = str(server.get("version") or "?")
    text = f"{flavor} {version}"
    version_text = server.get("version_text")
    if version_text and version_text != version:
        text += f" ({version_text})"
    return text + storage_note(server)


def storage_note(server: Mapping[str, object]) -> str:
    """", storage emulated: sync +2 ms" for a lab sandbox run under the storage
    emulation (lab_storage), else "": every table and screen that names a server says it."""
    storage = server.get("storage")
    if not isinstance(storage, str) or not storage:
        return ""
    return ", " + printable(storage, newlines=False)[:80]


def _server_setup(header: Header) -> str:
    return _where(server_label(header), header.server)


def _where(text: str, server: Mapping[str, object]) -> str:
    host, port, socket = (server.get(k) for k in ("host", "port", "socket"))
    if socket:
        text += f" on {socket}"
    elif host:
        text += f" on {host}:{port}" if port else f" on {host}"
    return text


def _hosts_setup(hosts: Mapping[str, object]) -> str:
    parts = []
    for name, facts in hosts.items():
        if not isinstance(facts, Mapping):
            parts.append(str(name))
            continue
        bits = []
        if facts.get("cpus"):
            bits.append(f"{facts['cpus']} CPUs")
        memory = facts.get("memory")
        if isinstance(memory, int | float) and memory > 0:
            bits.append(f"{memory / 2**30:.1f} GiB RAM")
        if facts.get("os"):
            bits.append(str(facts["os"]))
        hostname = facts.get("hostname")
        label = f"{name} ({hostname})" if hostname and hostname != name else str(name)
        parts.append(f"{label}: {', '.join(bits)}" if bits else label)
    return "; ".join(parts) or "—"


def report_warnings(data: JournalData) -> list[str]:
    """Things the reader of a report must know about the journal itself."""
    out = []
    if data.outside:
        knobs = ", ".join(dict.fromkeys(o.knob for o in data.outside))
        out.append(f"knobs were changed outside knobtop during this session ({knobs}): what "
                   "changed then is not only knobtop's doing (see Changed outside knobtop)")
    if data.skipped_unknown:
        kinds = ", ".join(sorted(data.unknown_types))
        noun = "event" if data.skipped_unknown == 1 else "events"
        out.append(
            f"skipped {data.skipped_unknown} {noun} of unknown type ({kinds}); "
            "the journal may have been written by a newer knobtop"
        )
    if data.torn_tail:
        out.append("the last line was cut off mid-write (the writer was killed); it was left out")
    if data.end is None and data.t_to is None:
        out.append("the journal has no end event: the session was killed or is still running")
    return out


def _change_row(change: Change) -> list[str]:
    detail = f"{change.knob}: {fmt_knob(change.old)} → {fmt_knob(change.new)}"
    if change.requested != change.new:
        detail += f" (asked {change.requested})"
    detail += f" via {change.method}"
    extras = [
        f"{k}: {fmt_knob(v[0])} → {fmt_knob(v[1])}"
        for k, v in change.side_effects.items()
        if isinstance(v, list | tuple) and len(v) == 2
    ]
    if extras:
        detail += "; also " + ", ".join(extras)
    if change.message:
        detail += f" — {change.message}"
    if change.warnings:
        detail += " — " + "; ".join(change.warnings)
    return ["change", detail, change.result, change.reason or "by hand"]


def _window(change: OutsideChange) -> str:
    """When a change made outside knobtop happened: between two of knobtop's reads."""
    return f"between {fmt_rel(change.since)} and {fmt_rel(change.t)}"


def _outside_rows(data: JournalData) -> list[str]:
    """The section listing the changes made outside knobtop (none: no section)."""
    if not data.outside:
        return []
    lines = ["## Changed outside knobtop", "",
             "Values knobtop found changed without a change of its own (another client's "
             "SET GLOBAL, another session, a restart it did not make): each changed between "
             "the last read that saw the old value and the one that saw the new.", ""]
    lines += md_table(["from", "to", "UTC (to)", "knob", "old", "new"], (
        [fmt_rel(o.since), fmt_rel(o.t), fmt_utc(o.wall, with_date=True)[11:19], o.knob,
         fmt_knob(o.old), fmt_knob(o.new)] for o in data.outside))
    return [*lines, ""]


def _timeline(data: JournalData) -> Iterator[tuple[float, float, list[str]]]:
    """(t, wall, [what, detail, result, reason]) of changes (knobtop's and those made
    outside it), restarts, notes, marks, errors."""
    for c in data.changes:
        yield c.t, c.wall, _change_row(c)
    for o in data.outside:
        yield o.t, o.wall, ["outside", f"{o.text} ({_window(o)})", "", "not knobtop"]
    for r in data.restarts:
        detail = f"{r.node}: {r.step} ({r.seconds:.1f} s)"
        if r.message:
            detail += f" — {r.message}"
        yield r.t, r.wall, ["restart", detail, r.result, ""]
    for n in data.notes:
        yield n.t, n.wall, ["note", n.text, "", ""]
    for m in data.marks:
        yield m.t, m.wall, ["mark", m.label, "", ""]
    for e in data.errors:
        yield e.t, e.wall, ["error", f"{e.source}: {e.message}", "gap" if e.gap else "", ""]


def _targets_knobs(data: JournalData) -> list[str]:
    """The knobs whose starting value differs between the run's own server and a recipe's
    further targets (issue 19): what else differs besides the arms' own knobs."""
    if not data.target_knobs:
        return []
    names = list(data.target_knobs)
    knobs = sorted({k for values in (data.knobs_start, *data.target_knobs.values())
                    for k in values})
    rows = [[k, fmt_knob(data.knobs_start.get(k)),
             *(fmt_knob(data.target_knobs[n].get(k)) for n in names)]
            for k in knobs
            if len({data.knobs_start.get(k), *(data.target_knobs[n].get(k) for n in names)}) > 1]
    lines = ["## Servers' baseline knobs that differ", ""]
    if rows:
        lines += md_table(["knob", "own server", *(f"target {n}" for n in names)], rows)
    else:
        lines.append("Every target started with the same knob values as the run's own server.")
    return [*lines, ""]


def markdown_report(data: JournalData) -> str:
    """A Markdown report of one journal (or one time range of it)."""
    lines = _title(data)
    lines += _setup_section(data)
    lines += _baseline_section(data)
    lines += _targets_knobs(data)
    lines += _outside_rows(data)
    lines += _timeline_section(data)
    lines += _phases_section(data)
    lines += _recipe_sections(data)
    return "\n".join(lines)


def _title(data: JournalData) -> list[str]:
    """The report's title and its warnings (a quote block of them), then a blank line."""
    lines = [f"# knobtop report: {data.label}", ""]
    for warning in report_warnings(data):
        lines.append(f"> **Warning:** {warning}")
    if lines[-1]:
        lines.append("")
    return lines


def _setup_section(data: JournalData) -> list[str]:
    """## Setup: knobtop, the server and hosts, the sampling, the range and the length."""
    h = data.header
    lines = ["## Setup", ""]
    setup: list[tuple[str, str]] = [
        ("knobtop", h.knobtop),
        ("server", _server_setup(h)),
        ("hosts", _hosts_setup(h.hosts)),
        ("interval", f"{h.interval:g} s"),
        ("profile", h.profile or "—"),
        ("started", fmt_utc(h.started_wall, with_date=True)),
    ]
    for name, facts in h.targets.items():  # a recipe's further servers (issue 19)
        server = facts.get("server") if isinstance(facts, dict) else None
        server = server if isinstance(server, dict) else {}
        hosts = facts.get("hosts") if isinstance(facts, dict) else None
        label = f"{server.get('flavor') or 'server'} {server.get('version') or '?'}"
        setup.append((f"target {name}", _where(label, server)
                      + (f"; {_hosts_setup(hosts)}" if isinstance(hosts, dict) else "")))
    if data.t_from is not None or data.t_to is not None:
        lo = fmt_rel(data.t_from) if data.t_from is not None else "start"
        hi = fmt_rel(data.t_to) if data.t_to is not None else "end"
        setup.append(("range", f"{lo} to {hi} (from inclusive, to exclusive)"))
    setup.append(("length", f"{data.duration:.1f} s, {len(data.rows)} samples"))
    if data.end is not None:
        setup.append(("ended", data.end.reason))
    lines += md_table(["", ""], setup)
    lines.append("")
    return lines


def _baseline_section(data: JournalData) -> list[str]:
    """## Baseline knobs: the snapshot at the start, and those changed by the end."""
    lines = ["## Baseline knobs", ""]
    if data.knobs_start:
        lines += md_table(
            ["knob", "value"], ((k, fmt_knob(v)) for k, v in sorted(data.knobs_start.items()))
        )
        changed = sorted(
            k
            for k in set(data.knobs_start) | set(data.knobs_end)
            if data.knobs_start.get(k) != data.knobs_end.get(k)
        )
        if changed:
            lines += ["", "Changed by the end:", ""]
            lines += md_table(
                ["knob", "start", "end"],
                (
                    (k, fmt_knob(data.knobs_start.get(k)), fmt_knob(data.knobs_end.get(k)))
                    for k in changed
                ),
            )
    else:
        lines.append("The journal has no knob snapshot.")
    lines.append("")
    return lines


def _timeline_section(data: JournalData) -> list[str]:
    """## Timeline: changes, restarts, notes and marks in time order."""
    lines = ["## Timeline", ""]
    events = sorted(_timeline(data), key=lambda item: item[0])
    if events:
        start_day = fmt_utc(data.header.started_wall, with_date=True)[:10]
        rows = []
        for t, wall, cells in events:
            utc = fmt_utc(wall, with_date=True)
            rows.append([fmt_rel(t), utc[11:19] if utc[:10] == start_day else utc, *cells])
        lines += md_table(["time", "UTC", "event", "detail", "result", "reason"], rows)
    else:
        lines.append("No changes, restarts, notes or marks.")
    lines.append("")
    return lines


def _phases_section(data: JournalData) -> list[str]:
    """## Load phases: one row of medians per phase."""
    lines = ["## Load phases", ""]
    stats = phase_table(data)
    if stats:
        lines += md_table(
            [
                "#",
                "workload",
                "threads",
                "start",
                "end",
                "duration",
                "TPS (load)",
                "TPS (server)",
                "p95 ms",
                "hit ratio %",
                "dirty %",
                "samples",
            ],
            (
                [
                    s.number,
                    s.workload,
                    s.threads,
                    fmt_rel(s.start),
                    fmt_rel(s.end),
                    f"{s.duration:.1f} s",
                    fmt_num(s.load_tps),
                    fmt_num(s.server_tps),
                    fmt_num(s.p95, 2),
                    fmt_num(s.hit_ratio, 2),
                    fmt_num(s.dirty_pct),
                    s.samples,
                ]
                for s in stats
            ),
        )
        lines += [
            "",
            "Medians over the phase's intervals; p95 is the median of the "
            "load driver's per-interval p95.",
        ]
    else:
        lines.append("No load phases.")
    lines.append("")
    return lines


def _recipe_sections(data: JournalData) -> list[str]:
    """## Recipe results of each recipe run, and each tune's sections (none in a plain
    session, whose report then loads none of their modules)."""
    lines: list[str] = []
    runs = recipe_runs(data)
    if runs:
        from knobtop.analysis.seedtables import run_markdown

        lines += ["## Recipe results", ""]
        lines += [run_markdown(results) for results in runs]
    if any(e.kind == "trial" for e in data.recipe_events):  # a tune (imported only then)
        from knobtop.analysis.tune import collect_tunes, tune_markdown

        lines += [tune_markdown(run) for run in collect_tunes(data.recipe_events)]
    return lines


def recipe_runs(data: JournalData) -> list[Results]:
    """The journal's recipe runs, judged. The statistics behind them load only for a
    journal that holds a recipe (a plain session's report starts without them)."""
    if not data.recipe_events:
        return []
    from knobtop.analysis.results import collect

    return collect(data.recipe_events)


def seed_tables(data: JournalData, name: str, fmt: str) -> str:
    """One of the seed posts' tables (analysis.seedtables) for each recipe run of the
    journal, as Markdown or CSV (one header for all runs)."""
    from knobtop.analysis.seedtables import seed_table

    runs = recipe_runs(data)
    if not runs:
        raise BadValue(f"{data.path}: no recipe steps in this journal (knobtop run records "
                       "them); --table needs a recipe journal")
    tables = [seed_table(name, results) for results in runs]
    if fmt == "csv":
        text = tables[0].csv()
        for table in tables[1:]:
            text += table.csv().split("\n", 1)[1]
        return text
    return "\n".join(t.markdown() for t in tables)


def steps_csv(data: JournalData) -> str:
    """One row per measured recipe step (all recipe runs in the journal)."""
    runs = recipe_runs(data)
    if not runs:
        raise BadValue(f"{data.path}: no recipe steps in this journal (knobtop run records "
                         "them); use --format csv for per-interval metrics")
    from knobtop.analysis.results import results_csv

    text = results_csv(runs[0])
    for results in runs[1:]:
        text += results_csv(results).split("\n", 1)[1]
    return text


def _csv_num(value: float | None) -> str:
    if value is None:
        return ""
    text = f"{value:.3f}".rstrip("0").rstrip(".")
    return "0" if text in ("", "-0") else text


def _phase_cells(row: Row, span: PhaseSpan | None) -> list[str]:
    inside = span is not None and span.start <= row.t
    return [str(span.number), span.workload, str(span.threads)] if span and inside else [
        "", "", ""]


def _csv_row(row: Row, phase: list[str]) -> list[str]:
    return ([f"{row.t:.4f}", f"{row.wall:.3f}"]
            + [_csv_num(getattr(row, name)) for name in ROW_FIELDS[2:]] + phase)


def csv_report(data: JournalData) -> str:
    """One row per sample interval (header row first; empty cells for missing values), with
    the load phase it fell in (number, workload, threads; empty while no load ran).

    Every sample is a row, including the first, whose rates are empty because
    there is no earlier sample to take a difference from.
    """
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    spans = iter(data.phases)  # both in time order: one pass
    span = next(spans, None)
    for row in data.rows:
        while span is not None and span.end < row.t:
            span = next(spans, None)
        writer.writerow(_csv_row(row, _phase_cells(row, span)))
    return buf.getvalue()


def csv_stream(path: Path, t_from: float | None = None, t_to: float | None = None
               ) -> Iterator[str]:
    """csv_report's text, line by line as the journal is read, in constant memory: the
    column names at once, then each sample's row as soon as it is derived.

    A row's phase cells need the load phases, which a first pass finds without decoding
    the samples (journaldata.phase_spans); a phase still running at the journal's end
    takes in every row after its start (load_journal ends it at the journal's last time,
    and no row comes after that).  The one case that needs that time itself (a row at
    exactly ``t_from`` in a phase still running when the journal ended there) is held
    until it is known.  A bad line ends the stream with the same error as csv_report's,
    after the rows before it."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")

    def line(cells: Iterable[str]) -> str:
        buf.seek(0)
        buf.truncate()
        writer.writerow(cells)
        return buf.getvalue()

    yield line(CSV_FIELDS)
    phases, last, last_start = phase_spans(path, t_from, t_to)
    spans = iter(phases)
    span = next(spans, None)
    held: list[tuple[Row, PhaseSpan | None]] = []
    reader = JournalReader(path)
    data = JournalData(path=path, header=reader.header, t_from=t_from, t_to=t_to)
    loader = _Loader(data)
    for row in fold(reader, loader):
        data.rows.clear()  # each row is written once: nothing is kept
        data.loads.clear()
        while span is not None and span.end < row.t:
            span = next(spans, None)
        if held and loader.last_seen > held[0][0].t:
            yield from (line(_csv_row(r, _phase_cells(r, s))) for r, s in held)
            held.clear()
        if held or (span is last and last is not None and row.t == t_from):
            held.append((row, span))  # does the running phase end at t_from? (see above)
            continue
        yield line(_csv_row(row, _phase_cells(row, span)))
    for row, s in held:
        if s is not None and _dropped(s, loader.last_seen, last_start):
            s = None
        yield line(_csv_row(row, _phase_cells(row, s)))


def _dropped(span: PhaseSpan, last_seen: float, start: float) -> bool:
    """Whether load_journal leaves out the phase running at the journal's end (started at
    ``start``, clipped to ``span``) once its end is known: the journal's last time."""
    end = min(last_seen, span.end)
    return end < span.start or (end == span.start and last_seen > start)
