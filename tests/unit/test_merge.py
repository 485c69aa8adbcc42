"""Recipe journals merged into one table (issue 19 part 3): a row per journal, each
against the baseline journal's, refusing runs that measured different things."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import paths as repo_paths
from knobtop.analysis.journaldata import load_journal
from knobtop.analysis.merge import label_of, merge_phases, merge_runs
from knobtop.analysis.stats import HIGHER, NOISE, TOO_FEW
from knobtop.errors import BadValue
from knobtop.journal import JournalReader, JournalWriter, RecipeRun, StepResult
from knobtop.journal.events import Event, Load, Phase

RECORDED = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"
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


# --------------------------------------------------------------------------- plain journals
# issue 19 part 4: journals without a recipe compare phase by phase, any number of them,
# with a verdict where a journal repeated a phase (its replicates).


def phase_journal(path: Path, phases: list[tuple[str, int, list[float]]]) -> Path:
    """A plain journal as a session writes one: each phase's start, its per-second load
    reports (the TPS values given) and its stop."""
    header = JournalReader(RECORDED).header
    assert header is not None
    writer = JournalWriter(path, header)
    t = 0.0
    for number, (workload, threads, values) in enumerate(phases, start=1):
        writer.append(Phase(t=t, wall=t, action="start", phase=number, driver="sysbench",
                            workload=workload, threads=threads))
        for s, tps in enumerate(values, start=1):
            writer.append(Load(t=t + s, wall=t + s, src="sysbench@local", s=s,
                               thds=threads, tps=tps, qps=tps * 20, r=0, w=0, o=0, pct=95,
                               lat=2.0, err=0, reconn=0))
        t += len(values) + 1
        writer.append(Phase(t=t, wall=t, action="stop", phase=number, driver="sysbench",
                            workload=workload, threads=threads))
        t += 1
    writer.close()
    return path


def rw(scale: float, threads: int = 8) -> list[tuple[str, int, list[float]]]:
    """Five phases of oltp_read_write at ``threads``, median TPS 1000 x scale each (a little
    run-to-run spread), then one of oltp_point_select."""
    spread = (1.0, 1.01, 0.99, 1.005, 0.995)
    return [*(("oltp_read_write", threads, [1000 * scale * f] * 5) for f in spread),
            ("oltp_point_select", 4, [20_000.0 * scale] * 5)]


def test_plain_journals_compare_phase_by_phase_with_verdicts_where_phases_repeat(
    tmp_path: Path,
) -> None:
    a = phase_journal(tmp_path / "a.knobtop.jsonl", rw(1.0))
    b = phase_journal(tmp_path / "b.knobtop.jsonl", rw(1.5))
    c = phase_journal(tmp_path / "c.knobtop.jsonl", rw(1.0))
    tables = merge_phases([(label_of(p), load_journal(p)) for p in (a, b, c)])
    assert list(tables) == ["oltp_read_write", "oltp_point_select"]
    rw_table = tables["oltp_read_write"]
    assert rw_table.arms == ["a", "b", "c"] and rw_table.threads == [8]
    faster, same = rw_table.cells[("b", 8)], rw_table.cells[("c", 8)]
    assert len(faster.runs) == 5 and faster.median == pytest.approx(1500)
    assert faster.verdict is not None and faster.verdict.label == HIGHER
    assert same.verdict is not None and same.verdict.label == NOISE
    # one phase each: a ratio, no verdict
    ps = tables["oltp_point_select"].cells[("b", 4)]
    assert ps.verdict is not None and ps.verdict.ratio == pytest.approx(1.5)
    assert ps.verdict.label == TOO_FEW
    env = {**os.environ, "COLUMNS": "200"}
    run = subprocess.run([sys.executable, "-m", "knobtop", "compare", str(a), str(b), str(c),
                          "--baseline", "b", "--format", "md"],
                         capture_output=True, text=True, timeout=60, env=env)
    assert run.returncode == 0, run.stderr
    assert "oltp_read_write: median load TPS per phase by journal and client threads, " \
           "relative to b" in run.stdout
    assert "| b | 1,500 (base) |" in run.stdout
    assert "| a | 1,000 (0.67x lower) |" in run.stdout
    assert "| c | 1,000 (0.67x lower) |" in run.stdout
    assert "| a | 20,000 (0.67x no verdict) |" in run.stdout
    # a journal without the baseline's workload: said, not a crash
    d = phase_journal(tmp_path / "d.knobtop.jsonl", [("oltp_write_only", 2, [500.0] * 5)])
    run = subprocess.run([sys.executable, "-m", "knobtop", "compare", str(a), str(b), str(d),
                          "--format", "md"], capture_output=True, text=True, timeout=60,
                         env=env)
    assert run.returncode == 0, run.stderr
    assert "a ran no oltp_write_only phase: ratios need another --baseline." in run.stdout


def test_two_plain_journals_keep_the_phase_pairs() -> None:
    run = subprocess.run([sys.executable, "-m", "knobtop", "compare", str(RECORDED),
                          str(RECORDED), "--format", "md"], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    assert "# knobtop comparison: A = lab-80s.knobtop.jsonl" in run.stdout
    assert "## Load phases (B/A)" in run.stdout


def test_plain_journals_as_one_csv_with_a_workload_column(tmp_path: Path) -> None:
    paths = [phase_journal(tmp_path / f"{n}.knobtop.jsonl", rw(s))
             for n, s in (("a", 1.0), ("b", 1.5), ("c", 1.0))]
    run = subprocess.run([sys.executable, "-m", "knobtop", "compare", *map(str, paths),
                          "--format", "csv"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("workload,arm,threads,avg_tps,runs,ratio")
    assert sum(line.startswith("workload,") for line in lines) == 1
    rows = [line.split(",") for line in lines[1:]]
    assert {(r[0], r[1]) for r in rows} >= {("oltp_read_write", "b"),
                                            ("oltp_point_select", "c")}
    assert next(r for r in rows if r[:2] == ["oltp_read_write", "b"])[-1] == "higher"
