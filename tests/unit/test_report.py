"""Reports and comparisons from recorded journals: Markdown, CSV, phase statistics, B/A ratios,
time ranges of one journal, and bad input (corrupt lines, unknown events, torn last line)."""

from __future__ import annotations

import csv
import io
import json
import statistics
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from harness import paths as repo_paths
from knobtop.analysis.compare import compare, compare_ranges, comparison_markdown, comparison_text
from knobtop.analysis.journaldata import CSV_FIELDS, load_journal, phase_table
from knobtop.analysis.report import csv_report, markdown_report
from knobtop.analysis.times import parse_range
from knobtop.journal import JournalFormatError

JOURNALS = repo_paths.DATA / "journals"
LAB_80S = JOURNALS / "lab-80s.knobtop.jsonl"
READ_WRITE = JOURNALS / "lab-read-write.knobtop.jsonl"
POINT_SELECT = JOURNALS / "lab-point-select.knobtop.jsonl"


def lines_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def load_tps(path: Path, lo: float = float("-inf"), hi: float = float("inf")) -> list[float]:
    return [e["tps"] for e in lines_of(path) if e["ev"] == "load" and lo <= e["t"] < hi]


def utc(wall: float) -> str:
    return datetime.fromtimestamp(wall, UTC).strftime("%H:%M:%S")


# --------------------------------------------------------------------------- report


def test_markdown_has_setup_knobs_changes_and_phase_table() -> None:
    data = load_journal(LAB_80S)
    md = markdown_report(data)
    header = lines_of(LAB_80S)[0]
    assert header["server"]["version"] in md
    assert "mariadb 10.11.19" in md
    assert "knobtop | 0.1.0" in md
    assert "profile | lab" in md
    assert "interval | 1 s" in md
    started = datetime.fromtimestamp(header["started_wall"], UTC)
    assert started.strftime("%Y-%m-%d %H:%M:%S UTC") in md
    # Baseline knobs come from the knobs event.
    assert "| innodb_io_capacity | 200 |" in md
    assert "| innodb_flush_log_at_trx_commit | 1 |" in md
    # Both knob changes, with relative and UTC time, result and reason.
    changes = [e for e in lines_of(LAB_80S) if e["ev"] == "change"]
    assert len(changes) == 2
    timeline = md.split("## Timeline")[1].split("## Load phases")[0]
    for change, rel in zip(changes, ("00:25", "00:50"), strict=True):
        row = next(line for line in timeline.splitlines() if change["knob"] in line)
        assert row.startswith(f"| {rel} | {utc(change['wall'])} | change |")
        assert f"{change['old']} → {change['new']}" in row
        assert "| ok | by hand |" in row
    # The phase table: median TPS of the journal's own load events.
    expected = statistics.median(load_tps(LAB_80S))
    table = md.split("## Load phases")[1]
    assert "| 1 | oltp_read_write | 4 | 00:00 | 01:20 |" in table
    assert f"| {expected:.1f} |" in table
    assert "Warning" not in md


def test_phase_table_medians_match_an_independent_computation() -> None:
    events = lines_of(LAB_80S)
    [stats] = phase_table(load_journal(LAB_80S))
    loads = [e for e in events if e["ev"] == "load"]
    assert stats.workload == "oltp_read_write" and stats.threads == 4
    assert stats.load_tps == pytest.approx(statistics.median(e["tps"] for e in loads))
    assert stats.p95 == pytest.approx(statistics.median(e["lat"] for e in loads))
    # The load driver's own summary in the stop event agrees.
    stop = next(e for e in events if e["ev"] == "phase" and e["action"] == "stop")
    assert stats.load_tps == pytest.approx(stop["summary"]["tps_median"], abs=0.01)
    assert stats.p95 == pytest.approx(stop["summary"]["p95_median"])
    assert stats.samples == sum(e["ev"] == "sample" for e in events)
    assert stats.load_intervals == len(loads)
    assert stats.duration == pytest.approx(stop["t"] - 0.0056, abs=1e-3)
    assert stats.ended_by == "stop"
    assert stats.server_tps is not None and stats.server_tps > 0
    assert stats.hit_ratio is not None and 0 <= stats.hit_ratio <= 100
    assert stats.dirty_pct is not None and 0 <= stats.dirty_pct <= 100


@pytest.mark.parametrize("path", [LAB_80S, READ_WRITE, POINT_SELECT], ids=lambda p: p.name)
def test_csv_has_one_row_per_sample_and_parses(path: Path) -> None:
    text = csv_report(load_journal(path))
    rows = list(csv.DictReader(io.StringIO(text)))
    samples = [e for e in lines_of(path) if e["ev"] == "sample"]
    # Every sample is a row, the first one too (its rates are empty: nothing to diff against).
    assert len(rows) == len(samples)
    assert tuple(rows[0]) == CSV_FIELDS  # the sample's fields, then its load phase
    assert rows[0]["tps"] == "" and rows[0]["qps"] == ""
    assert rows[0]["dirty_pct"] != ""  # gauges need no previous sample
    assert float(rows[1]["tps"]) > 0
    assert [float(r["t"]) for r in rows] == pytest.approx([s["t"] for s in samples], abs=1e-4)
    # Server QPS of the second interval, computed here from the raw counters.
    counters = lines_of(path)[0]["counters"]
    q = counters.index("Questions")
    qps = (samples[1]["v"][q] - samples[0]["v"][q]) / (samples[1]["t"] - samples[0]["t"])
    assert float(rows[1]["qps"]) == pytest.approx(qps, abs=1e-3)
    # The load driver's per-interval numbers are all there, each once.
    tps = [float(r["load_tps"]) for r in rows if r["load_tps"]]
    assert tps == load_tps(path)


def test_short_journals_report() -> None:
    for path in (READ_WRITE, POINT_SELECT):
        md = markdown_report(load_journal(path))
        assert "## Load phases" in md
        assert f"| {statistics.median(load_tps(path)):.1f} |" in md
    md = markdown_report(load_journal(READ_WRITE))
    assert "innodb_doublewrite: ON → ON" in md and "| refused |" in md


# --------------------------------------------------------------------------- compare


def test_compare_two_journals_gives_b_over_a_ratios() -> None:
    a, b = load_journal(READ_WRITE), load_journal(POINT_SELECT)
    c = compare(a, b)
    [pair] = c.pairs
    assert pair.matched_by == "order"  # different workloads: paired by order
    assert pair.a is not None and pair.b is not None
    assert pair.a.workload == "oltp_read_write" and pair.b.workload == "oltp_point_select"
    expected = statistics.median(load_tps(POINT_SELECT)) / statistics.median(load_tps(READ_WRITE))
    assert pair.ratios["load_tps"] == pytest.approx(expected)
    p95_a = statistics.median(e["lat"] for e in lines_of(READ_WRITE) if e["ev"] == "load")
    p95_b = statistics.median(e["lat"] for e in lines_of(POINT_SELECT) if e["ev"] == "load")
    assert pair.ratios["p95"] == pytest.approx(p95_b / p95_a)
    assert not c.server_differs
    assert c.knobs_start == []  # the same baseline
    [diff] = c.knobs_end  # read-write changed flush_log during the run
    assert (diff.knob, diff.a, diff.b) == ("innodb_flush_log_at_trx_commit", "2", "1")
    md = comparison_markdown(c)
    assert f"{expected:.3f}" in md
    assert "| innodb_flush_log_at_trx_commit | 2 | 1 |" in md


def test_compare_time_ranges_before_and_after_flush_log_change() -> None:
    a = load_journal(LAB_80S, t_to=50)
    b = load_journal(LAB_80S, t_from=50)
    c = compare(a, b)
    assert c.same_journal
    [pair] = c.pairs
    assert pair.matched_by == "workload+threads"
    assert pair.a is not None and pair.b is not None
    assert pair.a.end == 50 and pair.b.start == 50
    before, after = load_tps(LAB_80S, hi=50), load_tps(LAB_80S, lo=50)
    assert pair.a.load_intervals == len(before) and pair.b.load_intervals == len(after)
    assert pair.ratios["load_tps"] == pytest.approx(
        statistics.median(after) / statistics.median(before)
    )
    samples = [e for e in lines_of(LAB_80S) if e["ev"] == "sample"]
    assert len(a.rows) == sum(e["t"] < 50 for e in samples)
    assert len(b.rows) == sum(e["t"] >= 50 for e in samples)
    assert b.rows[0].tps is not None  # rates at a range's start use the sample before it
    # io_capacity changed at 00:25 (inside A); flush_log at 00:50 (inside B).
    start = {d.knob: (d.a, d.b) for d in c.knobs_start}
    end = {d.knob: (d.a, d.b) for d in c.knobs_end}
    assert start == {"innodb_io_capacity": ("200", "1000")}
    assert end == {"innodb_flush_log_at_trx_commit": ("1", "2")}
    assert [ch.knob for ch in a.changes] == ["innodb_io_capacity"]
    assert [ch.knob for ch in b.changes] == ["innodb_flush_log_at_trx_commit"]
    # The convenience form gives the same answer.
    same = compare_ranges(LAB_80S, (None, 50), (50, None))
    assert same.pairs[0].ratios == pair.ratios
    md = comparison_markdown(c)
    assert "[start-00:50)" in md and "[00:50-end)" in md
    console = Console(record=True, width=140, color_system=None)
    console.print(comparison_text(c))
    text = console.export_text()
    assert "innodb_flush_log_at_trx_commit" in text and "TPS (load)" in text
    assert f"{pair.ratios['load_tps']:.3f}" in text


def test_compare_in_a_terminal_prints_journal_text_as_written() -> None:
    """Phase titles carry how the phases were matched in brackets, and knob values come from
    servers: printed through a terminal's Console, neither is read as markup or emoji."""
    import dataclasses

    from knobtop.analysis.compare import KnobDiff

    c = compare_ranges(LAB_80S, (None, 50), (50, None))
    c = dataclasses.replace(c, knobs_end=[KnobDiff("innodb_x", "[bold]on[/bold] :x:", "off")])
    console = Console(record=True, width=200, color_system=None)
    console.print(comparison_text(c))
    text = console.export_text()
    assert f"[{c.pairs[0].matched_by}]" in text
    assert "[bold]on[/bold] :x:" in text


def test_range_report_is_labelled_and_clipped() -> None:
    data = load_journal(LAB_80S, t_from=20, t_to=40)
    md = markdown_report(data)
    assert "[00:20-00:40)" in md
    assert "| innodb_io_capacity | 200 |" in md  # baseline: the value at 00:20
    assert "| 00:25 |" in md and "00:50" not in md.split("## Timeline")[1]
    [stats] = phase_table(data)
    assert (stats.start, stats.end, stats.ended_by) == (20, 40, "end of range")


def test_parse_range() -> None:
    assert parse_range("0-50") == (0, 50)
    assert parse_range("50-") == (50, None)
    assert parse_range("-1:30") == (None, 90)
    assert parse_range("1:00..1:01:00") == (60, 3660)
    for bad in ("", "-", "abc", "50-10"):
        with pytest.raises(ValueError):
            parse_range(bad)


# --------------------------------------------------------------------------- bad input


def write_lines(path: Path, lines: list[str], newline_at_end: bool = True) -> Path:
    path.write_text("\n".join(lines) + ("\n" if newline_at_end else ""))
    return path


def test_corrupt_middle_line_names_its_line(tmp_path: Path) -> None:
    lines = READ_WRITE.read_text().splitlines()
    lines[9] = lines[9][: len(lines[9]) // 2]  # line 10 cut in half, the rest intact
    path = write_lines(tmp_path / "corrupt.knobtop.jsonl", lines)
    with pytest.raises(JournalFormatError) as err:
        load_journal(path)
    assert err.value.line_no == 10
    assert "corrupt.knobtop.jsonl:10:" in str(err.value)


def test_event_with_wrong_value_types_names_its_line(tmp_path: Path) -> None:
    lines = READ_WRITE.read_text().splitlines()
    sample_at = next(i for i, line in enumerate(lines) if '"ev":"sample"' in line and i > 5)
    event = json.loads(lines[sample_at])
    event["v"] = ["x"] * len(event["v"])
    lines[sample_at] = json.dumps(event)
    lines.insert(3, "")  # a blank line does not throw the count off
    path = write_lines(tmp_path / "types.knobtop.jsonl", lines)
    with pytest.raises(JournalFormatError) as err:
        load_journal(path)
    assert err.value.line_no == sample_at + 2


def test_unknown_event_type_is_skipped_and_warned(tmp_path: Path) -> None:
    lines = LAB_80S.read_text().splitlines()
    lines.insert(5, json.dumps({"ev": "hologram", "t": 3.5, "wall": 1795307571.0, "x": 1}))
    path = write_lines(tmp_path / "future.knobtop.jsonl", lines)
    data = load_journal(path)
    assert data.skipped_unknown == 1 and data.unknown_types == {"hologram": 1}
    md = markdown_report(data)
    warning = next(line for line in md.splitlines() if "Warning" in line)
    assert "unknown type" in warning and "hologram" in warning
    # Everything else is as without it.
    assert phase_table(data) == phase_table(load_journal(LAB_80S))
    assert csv_report(data) == csv_report(load_journal(LAB_80S))


@pytest.mark.parametrize(
    "content",
    ["", "time,tps\n0,12\n", "[1, 2, 3]\n", '{"ev": "sample", "t": 0, "wall": 0}\n'],
    ids=["empty", "csv", "json-array", "no-header"],
)
def test_a_file_that_is_not_a_journal_is_refused(tmp_path: Path, content: str) -> None:
    path = tmp_path / "other.txt"
    path.write_text(content)
    with pytest.raises(JournalFormatError) as err:
        load_journal(path)
    assert err.value.line_no == 1


def test_torn_last_line_still_gives_a_report(tmp_path: Path) -> None:
    text = LAB_80S.read_text()
    # Cut the file in the middle of its last-but-one line (the phase stop): a kill -9.
    lines = text.splitlines()
    cut = text.index(lines[-2]) + len(lines[-2]) // 2
    path = tmp_path / "killed.knobtop.jsonl"
    path.write_text(text[:cut])
    data = load_journal(path)
    assert data.torn_tail and data.end is None
    md = markdown_report(data)
    assert "cut off" in md and "no end event" in md
    [stats] = phase_table(data)
    assert stats.ended_by == "end of journal"
    assert stats.load_tps == pytest.approx(statistics.median(load_tps(LAB_80S)))
    assert stats.samples == sum(e["ev"] == "sample" for e in lines_of(LAB_80S))
    rows = list(csv.DictReader(io.StringIO(csv_report(data))))
    assert len(rows) == stats.samples


def test_report_and_compare_from_the_command_line(tmp_path: Path) -> None:
    import csv
    import io

    from knobtop.cli import main

    journal = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"
    out = tmp_path / "r.csv"
    assert main(["report", str(journal), "--format", "csv", "-o", str(out)]) == 0
    rows = list(csv.DictReader(io.StringIO(out.read_text())))
    assert len(rows) == sum(1 for ln in journal.read_text().splitlines() if '"ev":"sample"' in ln)
    md = tmp_path / "r.md"
    assert main(["report", str(journal), "--range", "50-", "-o", str(md)]) == 0
    assert "innodb_flush_log_at_trx_commit" in md.read_text()
    assert main(["compare", str(journal), "--range-a", "0-50", "--range-b", "50-",
                 "--format", "md"]) == 0
    bogus = tmp_path / "notes.txt"
    bogus.write_text("hello\n")
    assert main(["report", str(bogus)]) == 2
    assert main(["compare", str(journal)]) == 2  # nothing to compare it with


# --------------------------------------------------------------------------- issue 14 item 10


def _with_phase_change(tmp_path: Path, at: float = 40.0) -> Path:
    """lab-80s with the load switched to 8 threads of oltp_point_select at ``at`` (a second
    phase: a start ends the one before), and stopped 10 s later."""
    events = lines_of(LAB_80S)
    start = dict(next(e for e in events if e["ev"] == "phase"))
    second = {**start, "t": at, "wall": start["wall"] + at, "phase": 2, "threads": 8,
              "workload": "oltp_point_select"}
    stop = {**second, "t": at + 10, "wall": second["wall"] + 10, "action": "stop"}
    events = [e for e in events if not (e["ev"] == "phase" and e["action"] == "stop")]
    body = sorted([*events[1:], second, stop], key=lambda e: e["t"])
    path = tmp_path / "two-phases.knobtop.jsonl"
    path.write_text("".join(json.dumps(e) + "\n" for e in [events[0], *body]))
    return path


def test_csv_names_the_load_phase_of_each_sample(tmp_path: Path) -> None:
    path = _with_phase_change(tmp_path)
    rows = list(csv.DictReader(io.StringIO(csv_report(load_journal(path)))))
    phases = [e for e in lines_of(path) if e["ev"] == "phase"]
    first_start, second_start, second_stop = (e["t"] for e in phases)

    def expected(t: float) -> tuple[str, str, str]:  # from the journal's own phase lines
        if first_start <= t <= second_start:
            return "1", "oltp_read_write", "4"
        if second_start < t <= second_stop:
            return "2", "oltp_point_select", "8"
        return "", "", ""

    got = [(r["phase"], r["workload"], r["threads"]) for r in rows]
    assert got == [expected(float(r["t"])) for r in rows]
    assert {g[0] for g in got} == {"", "1", "2"}  # before, in each phase, and after the stop


def _stats(number: int, workload: str, threads: int, start: float) -> Any:
    from knobtop.analysis.journaldata import PhaseStats

    return PhaseStats(number=number, workload=workload, threads=threads, driver="sysbench",
                      host="local", start=start, end=start + 10, duration=10, ended_by="stop",
                      load_tps=100.0 * number, server_tps=None, p95=None, hit_ratio=None,
                      dirty_pct=None, samples=10, load_intervals=10)


def test_phases_pair_by_workload_and_threads_in_order_within_each_key() -> None:
    """Twelve thread steps on each side, B in another order: every phase finds its partner
    (the n-th A phase of a key with the n-th B phase of that key), none is left alone."""
    from knobtop.analysis.compare import pair_phases

    keys = [("oltp_read_write", t) for t in (1, 2, 4, 8, 16, 32)] * 2
    a = [_stats(i + 1, w, t, 10.0 * i) for i, (w, t) in enumerate(keys)]
    order_b = [*keys[6:][::-1], *keys[:6]]
    b = [_stats(i + 1, w, t, 10.0 * i) for i, (w, t) in enumerate(order_b)]
    pairs = pair_phases(a, b)
    assert len(pairs) == 12
    assert all(p.matched_by == "workload+threads" for p in pairs)
    for p in pairs:
        assert p.a is not None and p.b is not None
        assert (p.a.workload, p.a.threads) == (p.b.workload, p.b.threads)
    # Within a key, in order of occurrence: A's first x4 with B's first x4.
    x4 = [(p.a.number, p.b.number) for p in pairs if p.a and p.b and p.a.threads == 4]
    first_b, second_b = (s.number for s in b if s.threads == 4)
    assert x4 == [(3, first_b), (9, second_b)]


def test_each_phase_pair_lists_the_knobs_in_force_that_differ() -> None:
    c = compare_ranges(LAB_80S, (None, 50), (50, None))
    [pair] = c.pairs
    changes = {e["knob"]: e for e in lines_of(LAB_80S) if e["ev"] == "change"}
    io_cap, flush = changes["innodb_io_capacity"], changes["innodb_flush_log_at_trx_commit"]
    got = {d.knob: (d.a, d.b) for d in pair.knobs}
    assert got == {
        # changed during A's phase, in force all through B's
        "innodb_io_capacity": (f"{io_cap['old']} → {io_cap['new']}", io_cap["new"]),
        # changed during B's phase
        "innodb_flush_log_at_trx_commit": (flush["old"], f"{flush['old']} → {flush['new']}"),
    }
    md = comparison_markdown(c)
    assert "Knobs in force that differ" in md
    assert f"| innodb_io_capacity | {io_cap['old']} → {io_cap['new']} | {io_cap['new']} |" in md
    console = Console(record=True, width=140, color_system=None)
    console.print(comparison_text(c))
    assert "knobs in force that differ" in console.export_text()
    same = compare(load_journal(LAB_80S), load_journal(LAB_80S))
    assert [p.knobs for p in same.pairs] == [[]]
    assert "Knobs in force: the same on both sides." in comparison_markdown(same)
