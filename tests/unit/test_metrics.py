"""Metric math on recorded real journals (a sandbox MariaDB under sysbench)."""

from __future__ import annotations

import statistics

import pytest

from harness import paths as repo_paths
from harness.journals import board_of
from knobtop.journal import Load, Sample
from knobtop.metrics import SERVER_COUNTERS, MetricBoard, Snapshot, derive
from knobtop.metrics.derive import BRIEF_METRICS, cpu_percent

JOURNALS = repo_paths.DATA / "journals"


def board_for(name: str) -> tuple[MetricBoard, list[Sample], list[Load]]:
    board, samples, loads, _ = board_of(JOURNALS / name)
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


def rocks(t: float, hit: int, miss: int, stops: int, slowdowns: int, micros: int,
          uptime: int = 100) -> Snapshot:
    """A hand-made sample of a server with MyRocks (only the counters the math reads)."""
    return Snapshot(t, {
        "Uptime": uptime,
        "Rocksdb_block_cache_hit": hit,
        "Rocksdb_block_cache_miss": miss,
        "Rocksdb_stall_total_stops": stops,
        "Rocksdb_stall_total_slowdowns": slowdowns,
        "Rocksdb_stall_micros": micros,
    })


def test_myrocks_hit_ratio_and_stalls_per_interval() -> None:
    a = rocks(10.0, hit=5_000, miss=5_000, stops=1, slowdowns=2, micros=1_000)
    b = rocks(12.0, hit=5_900, miss=5_100, stops=2, slowdowns=5, micros=31_000)
    got = derive(a, b)
    # 900 hits and 100 misses in the interval: 90 %, not the 53.6 % since start.
    assert got["rocks_hit_ratio"] == pytest.approx(90.0)
    # (1 stop + 3 slowdowns) over 2 s; 30 000 us stalled over 2 s = 15 ms per second.
    assert got["rocks_stalls"] == pytest.approx(2.0)
    assert got["rocks_stall_ms"] == pytest.approx(15.0)


def test_myrocks_hit_ratio_is_none_without_reads_or_across_a_restart() -> None:
    a = rocks(10.0, hit=700, miss=300, stops=0, slowdowns=0, micros=0)
    idle = derive(a, rocks(11.0, hit=700, miss=300, stops=0, slowdowns=0, micros=0))
    assert idle["rocks_hit_ratio"] is None  # no block lookups: no ratio
    assert idle["rocks_stalls"] == 0.0 and idle["rocks_stall_ms"] == 0.0
    restarted = derive(a, rocks(11.0, hit=10, miss=5, stops=0, slowdowns=0, micros=0, uptime=1))
    assert restarted["rocks_hit_ratio"] is None and restarted["rocks_stalls"] is None
    first = derive(None, a)
    assert first["rocks_hit_ratio"] is None and first["rocks_stall_ms"] is None


def test_no_myrocks_metrics_and_no_panel_on_an_innodb_journal() -> None:
    board, _, _ = board_for("lab-read-write.knobtop.jsonl")
    assert board.has_rocksdb is False
    for name in ("rocks_hit_ratio", "rocks_stalls", "rocks_stall_ms"):
        assert name in board.series
        assert board.latest[name] is None
        assert all(v is None for _, v in board.series[name].points())
    assert board.latest["hit_ratio"] is not None  # the InnoDB metrics are untouched


def test_board_turns_on_myrocks_with_the_first_sample_that_has_it() -> None:
    from knobtop.journal import Header
    from knobtop.metrics.derive import ROCKS_COUNTERS

    names = ["Uptime", *ROCKS_COUNTERS]
    header = Header(format=1, knobtop="t", profile="t", started_wall=0.0, interval=1.0,
                    server={}, hosts={}, counters=names, host_fields=[])
    board = MetricBoard(header)
    board.apply(Sample(t=0.0, wall=0.0, v=[5, None, None, None, None, None]))
    assert board.has_rocksdb is False
    board.apply(Sample(t=1.0, wall=1.0, v=[6, 100, 0, 0, 0, 0]))
    board.apply(Sample(t=2.0, wall=2.0, v=[7, 190, 10, 0, 1, 4_000]))
    assert board.has_rocksdb is True
    assert board.latest["rocks_hit_ratio"] == pytest.approx(90.0)  # 90 of 100 lookups
    assert board.latest["rocks_stalls"] == pytest.approx(1.0)
    assert board.latest["rocks_stall_ms"] == pytest.approx(4.0)


def test_myrocks_counters_are_sampled() -> None:
    from knobtop.metrics.derive import ROCKS_COUNTERS

    assert set(ROCKS_COUNTERS) <= set(SERVER_COUNTERS)


def test_innodb_page_metrics_from_recorded_counters() -> None:
    board, samples, _ = board_for("lab-read-write.knobtop.jsonl")
    a, b = samples[-2], samples[-1]
    dt = b.t - a.t
    for metric, counter_name in (("pages_flushed", "Innodb_buffer_pool_pages_flushed"),
                                 ("data_reads", "Innodb_data_reads"),
                                 ("log_waits", "Innodb_log_waits")):
        expected = (counter(board, b, counter_name) - counter(board, a, counter_name)) / dt
        assert board.latest[metric] == pytest.approx(expected), metric
    pct = 100 * counter(board, b, "Innodb_checkpoint_age") / counter(
        board, b, "Innodb_checkpoint_max_age")
    assert board.latest["checkpoint_pct"] == pytest.approx(pct)
    assert 0 < pct < 100
    assert any(v for _, v in board.series["pages_flushed"].points())  # writes flushed pages


def test_series_is_a_bounded_ring_that_keeps_gaps() -> None:
    from knobtop.metrics.board import Series

    series = Series(capacity=4)
    assert len(series) == 0 and series.points() == [] and series.last is None
    for t, v in [(1.0, 10.0), (2.0, None), (3.0, 30.0)]:
        series.append(t, v)
    assert series.points() == [(1.0, 10.0), (2.0, None), (3.0, 30.0)]
    for t, v in [(4.0, 40.0), (5.0, None), (6.0, 60.5)]:
        series.append(t, v)
    assert len(series) == 4  # the two oldest are gone
    assert series.points() == [(3.0, 30.0), (4.0, 40.0), (5.0, None), (6.0, 60.5)]
    assert series.points(since=4.5) == [(5.0, None), (6.0, 60.5)]
    assert series.last == 60.5 and series.last_t == 6.0
    series.append(7.0, None)
    assert series.last == 60.5 and series.last_t == 7.0  # last skips the gap, last_t does not


def test_a_series_window_reads_as_its_points_at_every_wrap_of_the_ring() -> None:
    """What a graph keeps between paints (Series.window): the same points as points(since),
    read back as tuples, held in two arrays of 8 bytes a point."""
    import random
    import sys

    from knobtop.metrics.board import Series

    rng = random.Random(3)
    series = Series(capacity=7)
    assert list(series.window(0.0)) == [] and len(series.window(0.0)) == 0
    for step in range(30):  # past the ring's end four times, each start position in turn
        series.append(float(step), None if rng.random() < 0.3 else rng.random())
        for since in (-1.0, step - 3.5, float(step), step + 1.0):
            window = series.window(since)
            assert list(window) == series.points(since)
            assert [window[i] for i in range(len(window))] == series.points(since)
            if len(window):
                assert window[-1] == series.points()[-1] and list(window[1:]) == \
                    series.points(since)[1:]
    big = Series(capacity=3600)
    for step in range(5000):
        big.append(float(step), float(step % 97))
    window = big.window(0.0)
    assert len(window) == 3600 and window[0] == (1400.0, 1400.0 % 97)
    held = sys.getsizeof(window._t) + sys.getsizeof(window._v)
    assert held < 3600 * 16 + 200  # the tuples held about 100 bytes a point


def test_series_on_a_shared_clock_read_as_series_of_their_own() -> None:
    """The board's sample metrics share one ring of times (half the memory of a ring each):
    each reads exactly as a series with its own times, fed the same points."""
    import random

    from knobtop.metrics.board import Clock, Series

    rng = random.Random(7)
    clock = Clock(capacity=5)
    shared = [Series(clock=clock) for _ in range(3)]
    alone = [Series(capacity=5) for _ in range(3)]
    for step in range(12):
        t = float(step)
        i = clock.tick(t)
        for a, b in zip(shared, alone, strict=True):
            value = None if rng.random() < 0.3 else rng.random()
            a.put(i, value)
            b.append(t, value)
        for a, b in zip(shared, alone, strict=True):
            assert a.points() == b.points() and a.points(since=t - 2) == b.points(since=t - 2)
            assert (len(a), a.last, a.last_t) == (len(b), b.last, b.last_t)
    assert len(shared[0]) == 5  # bounded like the others
    assert shared[0].points() != shared[1].points()  # each keeps its own values


@pytest.mark.parametrize("journal", sorted(p.name for p in JOURNALS.glob("*.knobtop.jsonl")))
def test_brief_derive_gives_a_reports_columns_exactly_as_the_full_one(journal: str) -> None:
    """A report derives every sample of a journal with ``brief=True`` (only its columns,
    issue 16's report start-up): the same values as the live screen's full derive."""
    board, samples, _ = board_for(journal)
    header = board.header
    prev = None
    compared = 0
    for sample in samples:
        snap = Snapshot.from_values(sample.t, header.counters, sample.v, sample.host,
                                    reconnect=sample.re)
        full = derive(prev, snap, header.host_fields)
        brief = derive(prev, snap, header.host_fields, brief=True)
        for key in BRIEF_METRICS:
            assert brief[key] == full[key], (journal, sample.t, key)
        compared += full["tps"] is not None and full["cpu"] is not None
        prev = snap
    assert compared >= 5, "rates and CPU were compared, not only gaps"
