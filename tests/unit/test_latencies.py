"""The built-in LinkBench's per-operation latencies (knobtop.load.latencies), on latencies a
real run recorded: 8,000 requests of the lab's LinkBench at 4 threads, as its workers timed
them (KNOBTOP_LATENCY_LOG), in tests/data/linkbench/latencies.4threads.txt."""

from __future__ import annotations

import collections
import pickle

import pytest
from ddsketch import DDSketch

from harness import paths as repo_paths
from knobtop.load.builtin import HIST_SIZE, bucket
from knobtop.load.builtin_stats import Counts as _Counts
from knobtop.load.latencies import SKETCH_ACCURACY, OpLatencies, key_of

RECORDED = repo_paths.DATA / "linkbench" / "latencies.4threads.txt"


def recorded() -> list[tuple[str, float]]:
    out = []
    for line in RECORDED.read_text().splitlines():
        op, ms = line.split()
        out.append((op, float(ms)))
    return out


def by_op() -> dict[str, list[float]]:
    ops: dict[str, list[float]] = collections.defaultdict(list)
    for op, ms in recorded():
        ops[op].append(ms)
    return ops


def test_the_key_is_ddsketchs_own() -> None:
    mapping = DDSketch(relative_accuracy=SKETCH_ACCURACY)._mapping
    values = [ms for _, ms in recorded()]
    assert len(values) == 8000 and len(set(values)) > 7000
    assert [key_of(ms) for ms in values] == [mapping.key(ms) for ms in values]


def test_percentiles_are_the_ones_ddsketch_add_gives_and_max_and_mean_are_exact() -> None:
    for op, values in by_op().items():
        lat, sketch = OpLatencies(), DDSketch(relative_accuracy=SKETCH_ACCURACY)
        for ms in values:
            lat.add(key_of(ms), ms)
            sketch.add(ms)
        count, p50, p95, p99, top, mean = lat.numbers()
        assert count == len(values) == sketch.count
        assert [p50, p95, p99] == [round(sketch.get_quantile_value(q), 3)
                                   for q in (0.5, 0.95, 0.99)], op
        assert top == round(max(values), 3)
        assert mean == round(sum(values) / len(values), 3)
        ordered = sorted(values)
        for q, got in ((0.5, p50), (0.95, p95), (0.99, p99)):
            exact = ordered[int(q * (len(values) - 1))]
            assert got == pytest.approx(exact, rel=SKETCH_ACCURACY * 1.01, abs=0.0006), (op, q)
        assert lat.numbers(12.5)[0] == 12.5 and len(lat.numbers(12.5)) == 5


def test_two_workers_counts_merged_after_crossing_a_pipe_are_one_runs() -> None:
    values = by_op()["getlinklist"]
    whole, halves = OpLatencies(), (OpLatencies(), OpLatencies())
    for i, ms in enumerate(values):
        whole.add(key_of(ms), ms)
        halves[i % 2].add(key_of(ms), ms)
    merged = pickle.loads(pickle.dumps(halves[0]))
    merged.merge(pickle.loads(pickle.dumps(halves[1])))
    assert merged.keys == whole.keys and merged.count == whole.count == len(values)
    assert merged.max == whole.max and merged.sum == pytest.approx(whole.sum, rel=1e-12)
    assert merged.numbers() == whole.numbers()


def test_a_workers_record_fills_sysbenchs_buckets_and_each_operations_keys() -> None:
    counts = _Counts()
    for op, ms in recorded():
        counts.record(op, ms)
    hist = [0] * HIST_SIZE
    for _, ms in recorded():
        hist[bucket(ms)] += 1
    assert counts.hist == hist
    for op, values in by_op().items():
        assert counts.ops[op].count == len(values)
        assert counts.ops[op].keys == collections.Counter(key_of(ms) for ms in values)
    point = _Counts()  # sysbench's workloads: no operation, the bucket alone
    point.record(None, 0.25)
    point.record(None, 0.0)  # never measured; counted in the lowest bucket, not an error
    assert point.ops == {} and point.hist[bucket(0.25)] == 1 and point.hist[0] == 1
