"""Tests for the sysbench 1.0 output parser against recorded real sysbench output."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from harness import paths as repo_paths
from knobtop.load.sysbench_output import (
    IntervalReport,
    PrepareProgress,
    QueueReport,
    RunSummary,
    SysbenchError,
    SysbenchOutputParser,
    parse_interval,
    parse_queue,
    parse_summary,
)

LOCAL_DATA = repo_paths.DATA / "sysbench"
READ_WRITE = "oltp_read_write.8.txt"
POINT_SELECT = "oltp_point_select.8.txt"
# Real lines: the eps form from `sysbench cpu --report-interval=1`, the tps form from the recording.
EPS_LINE = "[ 1s ] thds: 2 eps: 5639.61 lat (ms,95%): 0.38"
RW_LINE = (
    "[ 19s ] thds: 8 tps: 2133.08 qps: 42660.52 (r/w/o: 29867.07/8527.30/4266.15) "
    "lat (ms,95%): 5.37 err/s: 0.00 reconn/s: 0.00"
)


def _shared_dir() -> Path:
    """Recorded real sysbench output (copied from shared/data/sysbench into tests/data)."""
    return repo_paths.DATA / "sysbench"


def _shared(name: str) -> str:
    return (_shared_dir() / name).read_text()


def _local(name: str) -> str:
    return (LOCAL_DATA / name).read_text()


def _feed_all(text: str) -> list[object]:
    parser = SysbenchOutputParser()
    out: list[object] = []
    for line in text.splitlines(keepends=True):
        out.extend(parser.feed(line))
    return out


def _intervals(text: str) -> list[IntervalReport]:
    return [r for r in _feed_all(text) if isinstance(r, IntervalReport)]


def _numbers_after(text: str, label: str) -> list[float]:
    """The numbers on the first line of text that contains label, read after the label."""
    line = next(line for line in text.splitlines() if label in line)
    return [float(n) for n in re.findall(r"\d+(?:\.\d+)?", line.split(label, 1)[1])]


# --- interval lines ------------------------------------------------------------------------


@pytest.mark.parametrize("name", [READ_WRITE, POINT_SELECT])
def test_interval_count_matches_bracket_lines(name: str) -> None:
    text = _shared(name)
    expected = sum(1 for line in text.splitlines() if line.startswith("[ "))
    assert expected > 0
    reports = _intervals(text)
    assert len(reports) == expected
    assert [r.second for r in reports] == list(range(1, expected + 1))
    assert all(r.threads == 8 and r.db for r in reports)


def test_read_write_first_and_last_interval() -> None:
    reports = _intervals(_shared(READ_WRITE))
    first, last = reports[0], reports[-1]
    assert first == IntervalReport(
        second=1,
        threads=8,
        tps=2310.77,
        qps=46338.18,
        reads=32448.61,
        writes=9260.05,
        other=4629.52,
        latency_percentile=95,
        latency_ms=4.91,
        errors_per_s=0.0,
        reconnects_per_s=0.0,
    )
    assert (last.second, last.tps, last.qps) == (20, 2130.80, 42605.91)
    assert (last.reads, last.writes, last.other) == (29822.14, 8523.18, 4260.59)
    assert last.latency_ms == 5.67


def test_point_select_first_and_last_interval() -> None:
    reports = _intervals(_shared(POINT_SELECT))
    assert (reports[0].second, reports[0].tps, reports[0].latency_ms) == (1, 90112.21, 0.15)
    assert (reports[-1].second, reports[-1].tps, reports[-1].latency_ms) == (19, 72612.11, 0.19)


def test_point_select_is_one_read_per_transaction() -> None:
    for r in _intervals(_shared(POINT_SELECT)):
        assert r.tps == r.qps == r.reads
        assert r.writes == 0.0
        assert r.other == 0.0


def test_read_write_mix_is_14_4_2() -> None:
    for r in _intervals(_shared(READ_WRITE)):
        assert r.reads / r.other == pytest.approx(7.0, rel=0.02)
        assert r.writes / r.other == pytest.approx(2.0, rel=0.02)
        assert r.qps == pytest.approx(20 * r.tps, rel=0.02)
        assert r.reads + r.writes + r.other == pytest.approx(r.qps, abs=0.02)


def test_interval_tolerates_line_endings() -> None:
    expected = parse_interval(RW_LINE)
    assert expected is not None
    assert parse_interval(RW_LINE + "\n") == expected
    assert parse_interval(RW_LINE + "\r\n") == expected


def test_interval_to_event_keys_and_json() -> None:
    report = parse_interval(RW_LINE)
    assert report is not None
    event = report.to_event()
    assert list(event) == [
        "s", "thds", "tps", "qps", "r", "w", "o", "pct", "lat", "err", "reconn",
    ]  # fmt: skip
    assert event["s"] == 19 and event["tps"] == 2133.08 and event["pct"] == 95
    assert json.loads(json.dumps(event)) == event


def test_eps_form() -> None:
    report = parse_interval(EPS_LINE + "\n")
    assert report == IntervalReport(
        second=1,
        threads=2,
        tps=5639.61,
        qps=0.0,
        reads=0.0,
        writes=0.0,
        other=0.0,
        latency_percentile=95,
        latency_ms=0.38,
        errors_per_s=0.0,
        reconnects_per_s=0.0,
        db=False,
    )


def test_other_percentile() -> None:
    report = parse_interval(RW_LINE.replace("(ms,95%)", "(ms,99%)"))
    assert report is not None and report.latency_percentile == 99


@pytest.mark.parametrize(
    "line",
    [
        "",
        "Threads started!",
        "Number of threads: 8",
        "SBTIME cpu=54% user=2.58 sys=8.42 wall=20.02",
        "    transactions:                        43924  (2195.61 per sec.)",
        "queue length: 0, concurrency: 8",
        "[ 2s ]",
        "[ 2s ] thds: 8 tps: fast qps: 1.00 (r/w/o: 1.00/0.00/0.00) lat (ms,95%): 1.00 "
        "err/s: 0.00 reconn/s: 0.00",
        "x" + RW_LINE,
    ],
)
def test_non_interval_lines_return_none(line: str) -> None:
    assert parse_interval(line) is None


@pytest.mark.parametrize("line", [RW_LINE, EPS_LINE])
def test_torn_interval_line_returns_none(line: str) -> None:
    for cut in range(len(line)):
        assert parse_interval(line[:cut]) is None, line[:cut]


# --- queue lines (--rate > 0) --------------------------------------------------------------


def test_queue_line() -> None:
    assert parse_queue("queue length: 12, concurrency: 8\r\n") == QueueReport(12, 8)
    assert parse_queue("queue length: 0, concurrency: 0") == QueueReport(0, 0)
    assert parse_queue("queue length: 12, concurrency:") is None
    assert parse_queue(RW_LINE) is None


def test_streaming_interval_then_queue() -> None:
    parser = SysbenchOutputParser()
    assert parser.feed(RW_LINE + "\n") == [parse_interval(RW_LINE)]
    assert parser.feed("queue length: 3, concurrency: 7\n") == [QueueReport(3, 7)]


# --- summary -------------------------------------------------------------------------------


def test_read_write_summary_matches_file() -> None:
    text = _shared(READ_WRITE)
    summary = parse_summary(text)
    assert summary is not None
    # Known values of this recording ...
    assert summary.transactions == 43924
    assert summary.latency_pct_ms == 5.28
    assert summary.total_time_s == 20.0048
    # ... and every field against the file, read independently of the parser.
    assert summary.reads == _numbers_after(text, "read:")[0]
    assert summary.writes == _numbers_after(text, "write:")[0]
    assert summary.other == _numbers_after(text, "other:")[0]
    assert summary.total_queries == _numbers_after(text, "total:")[0]
    assert [summary.transactions, summary.tps] == _numbers_after(text, "transactions:")
    assert [summary.queries, summary.qps] == _numbers_after(text, "queries:")
    assert summary.ignored_errors == _numbers_after(text, "ignored errors:")[0]
    assert summary.reconnects == _numbers_after(text, "reconnects:")[0]
    assert summary.total_time_s == _numbers_after(text, "total time:")[0]
    assert summary.events == _numbers_after(text, "total number of events:")[0]
    assert summary.latency_min_ms == _numbers_after(text, "min:")[0]
    assert summary.latency_avg_ms == _numbers_after(text, "avg:")[0]
    assert summary.latency_max_ms == _numbers_after(text, "max:")[0]
    assert summary.latency_percentile == 95
    assert summary.latency_pct_ms == _numbers_after(text, "95th percentile:")[0]
    assert summary.latency_sum_ms == _numbers_after(text, "sum:")[0]
    assert [summary.events_avg, summary.events_stddev] == _numbers_after(
        text, "events (avg/stddev):"
    )
    assert [summary.exec_time_avg, summary.exec_time_stddev] == _numbers_after(
        text, "execution time (avg/stddev):"
    )
    # oltp_read_write is 14 reads, 4 writes, 2 other per transaction.
    assert (summary.reads, summary.writes, summary.other) == (
        14 * summary.transactions,
        4 * summary.transactions,
        2 * summary.transactions,
    )


def test_point_select_summary() -> None:
    text = _shared(POINT_SELECT)
    summary = parse_summary(text)
    assert summary is not None
    assert summary.transactions == summary.queries == summary.reads == summary.events
    assert summary.transactions == _numbers_after(text, "transactions:")[0]
    assert (summary.writes, summary.other) == (0, 0)
    assert summary.latency_percentile == 95
    assert summary.latency_pct_ms == _numbers_after(text, "95th percentile:")[0]
    assert summary.total_time_s == _numbers_after(text, "total time:")[0]


def test_summary_to_event_is_json() -> None:
    summary = parse_summary(_shared(READ_WRITE))
    assert summary is not None
    event = summary.to_event()
    assert event["transactions"] == 43924 and event["latency_pct_ms"] == 5.28
    assert json.loads(json.dumps(event)) == event


def test_partial_summary_returns_none() -> None:
    lines = _shared(READ_WRITE).splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if "execution time (avg/stddev):" in line)
    for cut in range(end + 1):
        assert parse_summary("".join(lines[:cut])) is None
    # Torn inside the last line.
    last = lines[end].rstrip("\n")
    assert parse_summary("".join(lines[:end]) + last[: last.index("/")]) is None
    assert parse_summary("".join(lines[: end + 1])) is not None


def test_summary_with_percentile_disabled() -> None:
    text = re.sub(r"95th percentile:\s+5\.28", "percentile stats:               disabled",
                  _shared(READ_WRITE))  # fmt: skip
    summary = parse_summary(text)
    assert summary is not None
    assert (summary.latency_percentile, summary.latency_pct_ms) == (0, 0.0)


def test_no_summary_in_non_summary_text() -> None:
    assert parse_summary("") is None
    assert parse_summary(_local("prepare.txt")) is None
    assert parse_summary(_local("fatal_missing_table.txt")) is None


# --- streaming parser ----------------------------------------------------------------------


@pytest.mark.parametrize("name", [READ_WRITE, POINT_SELECT])
def test_stream_yields_summary_once_at_the_end(name: str) -> None:
    text = _shared(name)
    lines = text.splitlines(keepends=True)
    end = next(i for i, line in enumerate(lines) if "execution time (avg/stddev):" in line)
    parser = SysbenchOutputParser()
    summaries: list[tuple[int, RunSummary]] = []
    for i, line in enumerate(lines):
        out = parser.feed(line)
        summaries += [(i, item) for item in out if isinstance(item, RunSummary)]
        if i > end:
            assert out == []  # the trailing SBTIME line and blanks give nothing
    assert len(summaries) == 1
    assert summaries[0][0] == end
    assert summaries[0][1] == parse_summary(text)
    assert parser.summary == summaries[0][1]


def test_stream_with_crlf_and_only_known_objects() -> None:
    text = _shared(READ_WRITE).replace("\n", "\r\n")
    out = _feed_all(text)
    assert all(isinstance(item, (IntervalReport, RunSummary)) for item in out)
    assert sum(isinstance(item, RunSummary) for item in out) == 1
    assert isinstance(out[-1], RunSummary)


def test_stream_prepare_progress() -> None:
    text = _local("prepare.txt")
    out = _feed_all(text)
    expected_count = sum(
        1 for line in text.splitlines() if line.startswith(("Creating ", "Inserting "))
    )
    assert len(out) == expected_count == 6
    assert out == [
        PrepareProgress("sbtest1", "create"),
        PrepareProgress("sbtest1", "insert", 1000),
        PrepareProgress("sbtest1", "index"),
        PrepareProgress("sbtest2", "create"),
        PrepareProgress("sbtest2", "insert", 1000),
        PrepareProgress("sbtest2", "index"),
    ]


def test_stream_fatal_errors() -> None:
    text = _local("fatal_missing_table.txt")
    out = _feed_all(text)
    assert len(out) == sum(1 for line in text.splitlines() if line.startswith("FATAL:"))
    assert all(isinstance(item, SysbenchError) for item in out)
    messages = [item.message for item in out if isinstance(item, SysbenchError)]
    assert messages[0] == "mysql_stmt_prepare() failed"
    assert "1146" in messages[1] and "doesn't exist" in messages[1]
    assert not any(m.startswith("FATAL") for m in messages)


def test_the_servers_error_leads_whatever_order_the_threads_print_in() -> None:
    """Two threads' FATAL lines, in the order a CI run saw them: the generic ones first."""
    from knobtop.load.sysbench import explain, summarize_errors

    lines = [item.message for item in _feed_all(_local("fatal_missing_table.txt"))
             if isinstance(item, SysbenchError)]
    prepare, mysql, thread_init = lines[0], lines[1], lines[2]
    seen = [prepare, prepare, thread_init, thread_init, mysql, mysql]
    summary = summarize_errors(seen)
    assert summary.startswith("MySQL error: 1146")
    assert summary.count("mysql_stmt_prepare() failed") == 1
    assert "press P" in explain(summary, database="test")
    assert "press P" not in explain(summarize_errors([prepare, thread_init]), database="test")


def test_access_denied_leads_too() -> None:
    from knobtop.load.sysbench import explain, summarize_errors

    lines = [item.message for item in _feed_all(_local("fatal_access_denied.txt"))
             if isinstance(item, SysbenchError)]
    denied = next(m for m in lines if "Access denied" in m)
    others = [m for m in lines if "Access denied" not in m]
    # The order a test run saw: both generic lines before the server's.
    summary = summarize_errors([*others, denied])
    assert summary.startswith("error 1045: Access denied")
    assert "Check the MySQL user and password source" in explain(summary)
