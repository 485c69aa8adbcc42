"""Recipe journals merged into one table (issue 19 part 3): a row per journal, each
against the baseline journal's, refusing runs that measured different things."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from knobtop.analysis.merge import label_of, merge_runs
from knobtop.analysis.stats import HIGHER, NOISE
from knobtop.errors import BadValue
from knobtop.journal import JournalReader, JournalWriter, RecipeRun, StepResult
from knobtop.journal.events import Event

RECORDED = Path(__file__).parent / "data" / "journals" / "lab-80s.knobtop.jsonl"
PLAN = {"workload": "oltp_read_write", "threads": [8, 32], "duration": 20, "warmup": 5,
        "instances": 8, "arms": {"base": {}}, "replicates": 5}
RUNS = [1000.0, 1010.0, 990.0, 1005.0, 995.0]


def run_events(scale: float, plan: dict[str, object] | None = None,
               arms: tuple[str, ...] = ("base",)) -> list[Event]:
    """A recipe run as the runner journals it: its start, a step per arm, threads and
    replicate (average TPS ``scale`` x the base runs), its end."""
    plan = {**PLAN, "arms": {a: {} for a in arms}, **(plan or {})}
    out: list[Event] = [RecipeRun(t=0.0, wall=0.0, action="start", name="sweep", plan=plan)]
    i = 0
    for rep, value in enumerate(RUNS, start=1):
        for arm in arms:
            for threads in (8, 32):
                tps = value * scale * (1.0 if threads == 8 else 2.0)
                out.append(StepResult(t=float(i), wall=0.0, recipe="sweep", index=i,
                                      replicate=rep, arm=arm, threads=threads, start=0.0,
                                      end=20.0, tps=tps, p95=2.0, avg_tps=tps))
                i += 1
    out.append(RecipeRun(t=float(i), wall=0.0, action="end", name="sweep"))
    return out


def test_three_servers_one_table_with_the_baseline_row() -> None:
    merged = merge_runs([("mariadb-10.11", run_events(1.0)), ("mysql-8.0", run_events(1.5)),
                         ("mysql-5.7", run_events(1.0))])
    assert merged.arms == ["mariadb-10.11", "mysql-8.0", "mysql-5.7"]
    faster, same = merged.cells[("mysql-8.0", 32)], merged.cells[("mysql-5.7", 32)]
    assert faster.verdict is not None and faster.verdict.label == HIGHER
    assert faster.verdict.ratio == pytest.approx(1.5)
    assert same.verdict is not None and same.verdict.label == NOISE
    # another baseline: the rows are judged against it
    flipped = merge_runs([("a", run_events(1.0)), ("b", run_events(1.5))], baseline=1)
    assert flipped.arms == ["b", "a"]
    # a journal of several arms gives a row per arm
    two = merge_runs([("a", run_events(1.0)), ("b", run_events(1.0, arms=("x", "y")))])
    assert two.arms == ["a", "b: x", "b: y"]


@pytest.mark.parametrize(("field", "value"), [("workload", "oltp_read_only"),
                                              ("threads", [8, 64]), ("instances", 1)])
def test_journals_that_measured_different_things_are_refused(field: str,
                                                             value: object) -> None:
    with pytest.raises(BadValue, match=f"differ in {field}"):
        merge_runs([("a", run_events(1.0)), ("b", run_events(1.0, {field: value}))])


def test_compare_merge_prints_the_table_from_journal_files(tmp_path: Path) -> None:
    header = JournalReader(RECORDED).header
    assert header is not None
    paths = []
    for name, scale in (("lab-a", 1.0), ("lab-b", 1.5), ("lab-c", 1.0)):
        path = tmp_path / f"{name}.knobtop.jsonl"
        writer = JournalWriter(path, header)
        for event in run_events(scale):
            writer.append(event)
        writer.close()
        paths.append(path)
    assert label_of(paths[0]) == "lab-a"
    env = {**os.environ, "COLUMNS": "200"}
    result = subprocess.run([sys.executable, "-m", "knobtop", "compare", *map(str, paths),
                             "--merge", "--baseline", str(paths[1]), "--format", "md"],
                            capture_output=True, text=True, timeout=60, env=env)
    assert result.returncode == 0, result.stderr
    assert "relative to lab-b" in result.stdout
    assert "| lab-b | 1,500 (base) | 3,000 (base) |" in result.stdout
    assert "| lab-a | 1,000 (0.67x lower) | 2,000 (0.67x lower) |" in result.stdout
    plain = subprocess.run([sys.executable, "-m", "knobtop", "compare", *map(str, paths)],
                           capture_output=True, text=True, timeout=60, env=env)
    assert plain.returncode == 2 and "--merge" in plain.stderr
