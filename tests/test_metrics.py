"""Metric math on recorded real journals (a sandbox MariaDB under sysbench)."""

from __future__ import annotations

import statistics
from pathlib import Path

import pytest

from knobtop.journal import JournalReader, Load, Sample
from knobtop.metrics import MetricBoard, Snapshot, derive
from knobtop.metrics.derive import cpu_percent

JOURNALS = Path(__file__).parent / "data" / "journals"


def board_for(name: str) -> tuple[MetricBoard, list[Sample], list[Load]]:
    reader = JournalReader(JOURNALS / name)
    board = MetricBoard(reader.header)
    samples: list[Sample] = []
    loads: list[Load] = []
    for event in reader:
        board.apply(event)
        if isinstance(event, Sample):
            samples.append(event)
        elif isinstance(event, Load):
            loads.append(event)
    return board, samples, loads


def counter(board: MetricBoard, sample: Sample, name: str) -> float:
    value = sample.v[board.header.counters.index(name)]
    assert value is not None
    return value


@pytest.mark.parametrize(
    "journal", ["lab-read-write.knobtop.jsonl", "lab-point-select.knobtop.jsonl"]
)
def test_server_tps_agrees_with_sysbench(journal: str) -> None:
    board, _, loads = board_for(journal)
    driver = [ld.tps for ld in loads]
    # Server intervals that lie inside the load's reports (not the idle tail).
    first, last = loads[0].t - 1, loads[-1].t
    server = [v for t, v in board.series["tps"].points() if v is not None and first < t <= last]
    assert len(server) >= 4 and len(driver) >= 4
    # Two independent counts of the same transactions: within 15 % on medians.
    assert statistics.median(server) == pytest.approx(statistics.median(driver), rel=0.15)


def test_rates_are_deltas_over_the_measured_interval() -> None:
    board, samples, _ = board_for("lab-read-write.knobtop.jsonl")
    a, b = samples[2], samples[3]
    dt = b.t - a.t
    expected_qps = (counter(board, b, "Questions") - counter(board, a, "Questions")) / dt
    commits = sum(
        counter(board, b, n) - counter(board, a, n) for n in ("Com_commit", "Com_rollback")
    )
    names = board.header.counters
    values = derive(
        Snapshot.from_values(a.t, names, a.v), Snapshot.from_values(b.t, names, b.v)
    )
    assert values["qps"] == pytest.approx(expected_qps)
    assert values["tps"] == pytest.approx(commits / dt)


def test_hit_ratio_is_per_interval_not_since_start() -> None:
    board, samples, _ = board_for("lab-read-write.knobtop.jsonl")
    names = board.header.counters
    a, b = samples[1], samples[2]
    req = counter(board, b, "Innodb_buffer_pool_read_requests") - counter(
        board, a, "Innodb_buffer_pool_read_requests"
    )
    reads = counter(board, b, "Innodb_buffer_pool_reads") - counter(
        board, a, "Innodb_buffer_pool_reads"
    )
    since_start = 100 * (
        1 - counter(board, b, "Innodb_buffer_pool_reads")
        / counter(board, b, "Innodb_buffer_pool_read_requests")
    )
    got = derive(Snapshot.from_values(a.t, names, a.v), Snapshot.from_values(b.t, names, b.v))
    assert got["hit_ratio"] == pytest.approx(100 * (1 - reads / req))
    assert got["hit_ratio"] != pytest.approx(since_start, abs=1e-9)


def test_gauges_dirty_history_checkpoint() -> None:
    board, samples, _ = board_for("lab-read-write.knobtop.jsonl")
    last = samples[-1]
    dirty = 100 * counter(board, last, "Innodb_buffer_pool_pages_dirty") / counter(
        board, last, "Innodb_buffer_pool_pages_total"
    )
    assert board.latest["dirty_pct"] == pytest.approx(dirty)
    assert board.latest["history_len"] == counter(board, last, "Innodb_history_list_length")
    assert board.latest["checkpoint_age"] == counter(board, last, "Innodb_checkpoint_age")


def test_no_rates_across_a_reconnect_or_a_server_restart() -> None:
    board, samples, _ = board_for("lab-read-write.knobtop.jsonl")
    names = board.header.counters
    a, b = samples[2], samples[3]
    prev = Snapshot.from_values(a.t, names, a.v)
    assert derive(prev, Snapshot.from_values(b.t, names, b.v, reconnect=True))["tps"] is None
    restarted = list(b.v)
    restarted[names.index("Uptime")] = 1
    assert derive(prev, Snapshot.from_values(b.t, names, restarted))["qps"] is None
    assert derive(None, prev)["tps"] is None
    assert derive(None, prev)["dirty_pct"] is not None


def test_host_cpu_percent_from_cumulative_times() -> None:
    board, samples, _ = board_for("lab-point-select.knobtop.jsonl")
    fields = board.header.host_fields
    a, b = samples[1].host["local"], samples[2].host["local"]
    busy, iowait = cpu_percent(a, b, fields) or (None, None)
    total = sum(y - x for x, y in zip(a, b, strict=True))
    idle = b[fields.index("idle")] - a[fields.index("idle")]
    wait = b[fields.index("iowait")] - a[fields.index("iowait")]
    assert busy == pytest.approx(100 * (total - idle - wait) / total)
    assert iowait == pytest.approx(100 * wait / total)
    assert cpu_percent(a, a, fields) is None


def test_board_markers_for_changes_and_load() -> None:
    board, _, _ = board_for("lab-read-write.knobtop.jsonl")
    kinds = [(m.kind, m.label) for m in board.markers]
    assert ("change", "innodb_flush_log_at_trx_commit=2") in kinds
    assert any(k == "load" and "oltp_read_write" in label for k, label in kinds)
    # The refused doublewrite change draws no marker.
    assert not any("doublewrite" in label for _, label in kinds)
    assert board.knob_values["innodb_flush_log_at_trx_commit"] == "2"


def test_ndb_disk_page_buffer_hit_ratio_per_interval_per_node() -> None:
    from knobtop.metrics.board import ndb_hit_ratio

    first = {"2": [900, 100], "3": [50, 0]}
    second = {"2": [1890, 110], "3": [50, 0]}
    since_start = ndb_hit_ratio({}, first)
    assert since_start["2"] == pytest.approx(90.0) and since_start["3"] == pytest.approx(100.0)
    interval = ndb_hit_ratio(first, second)
    assert interval["2"] == pytest.approx(99.0)  # 990 direct of 1000 in the interval
    assert interval["3"] is None  # no page requests in the interval: no ratio
