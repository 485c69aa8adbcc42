"""knobtop tune's judging (issue 21), without a server: the objective and constraints of a
measured step, the candidates, the verification verdict and recommendation, a tune read
back from journal events, and what --resume refuses."""

from __future__ import annotations

from pathlib import Path

import pytest

from knobtop.analysis.tune import (
    BASE,
    TuneSpec,
    best_trials,
    collect_tunes,
    measured,
    objective_of,
    tune_markdown,
    verification_of,
    violations,
)
from knobtop.journal.events import RecipeRun, StepResult, Trial
from knobtop.recipes.kinds.tune import verification_steps
from knobtop.recipes.model import Arm
from knobtop.recipes.resume import prior_trials, spec_of, tune_plan
from knobtop.recipes.search import SearchError, load_search

SEARCH = """\
name = "commit"
description = "trx_commit and io_capacity"
seed = 7
[load]
workload = "oltp_update_index"
threads = 4
duration = 5
warmup = 1
[objective]
maximize = "tps"
[constraints]
latency_ms_max = 5.0
[budget]
trials = 6
[verify]
candidates = 2
replicates = 5
[[knob]]
name = "innodb_flush_log_at_trx_commit"
choices = [0, 1, 2]
[[knob]]
name = "innodb_io_capacity"
min = 100
max = 2000
log = true
"""


@pytest.fixture
def search_path(tmp_path: Path) -> Path:
    path = tmp_path / "commit.toml"
    path.write_text(SEARCH)
    return path


def spec(**changes: object) -> TuneSpec:
    base: dict[str, object] = dict(name="commit", direction="maximize", metric="tps",
                                   threads=4, constraints={"latency_ms_max": 5.0},
                                   candidates=2, replicates=5)
    base.update(changes)
    return TuneSpec(**base)  # type: ignore[arg-type]


def trial(number: int, knobs: dict[str, str], objective: float | None, *,
          feasible: bool = True, state: str = "done", step: int = -1,
          resumed: bool = False) -> Trial:
    return Trial(t=float(number), wall=1000.0 + number, tune="commit", number=number,
                 arm=BASE if number == 0 else f"t{number}", knobs=knobs, objective=objective,
                 feasible=feasible, state=state, step=step, resumed=resumed)


def step(index: int, arm: str, replicate: int, tps: float, p95: float = 1.0) -> StepResult:
    return StepResult(t=float(index), wall=0.0, recipe="commit", index=index,
                      replicate=replicate, arm=arm, threads=4, start=0.0, end=3.0, tps=tps,
                      p95=p95, avg_tps=tps, err=0.0)


def test_a_step_scores_its_average_tps_and_breaks_a_constraint_it_exceeds() -> None:
    values = measured(step(0, "t1", 1, 1500.0, p95=7.5))
    assert values == {"tps": 1500.0, "latency_ms": 7.5, "err_s": 0.0}
    assert objective_of(spec(), values) == 1500.0
    assert objective_of(spec(metric="latency", direction="minimize"), values) == 7.5
    assert violations(spec(), values) == {"latency_ms_max": 2.5}  # 2.5 ms over
    kept = violations(spec(), measured(step(0, "t1", 1, 1500.0, p95=4.0)))
    assert kept["latency_ms_max"] < 0
    # a figure the step did not measure breaks its constraint
    assert violations(spec(constraints={"tps_min": 10.0}), {"tps": None})["tps_min"] > 0


def test_candidates_are_the_best_kept_trials_one_per_values_never_the_baseline() -> None:
    base = {"innodb_flush_log_at_trx_commit": "1"}
    trials = [
        trial(0, base, 900.0),
        trial(1, {"innodb_flush_log_at_trx_commit": "2"}, 3000.0),
        trial(2, {"innodb_flush_log_at_trx_commit": "0"}, 3500.0, feasible=False),
        trial(3, {"innodb_flush_log_at_trx_commit": "2"}, 3100.0),  # same values as t1
        trial(4, base, 950.0),  # the baseline's values again
        trial(5, {"innodb_flush_log_at_trx_commit": "0"}, None, state="failed"),
        trial(6, {"innodb_flush_log_at_trx_commit": "0"}, 2800.0),
    ]
    assert [t.number for t in best_trials(spec(), trials, 2)] == [3, 6]
    assert [t.number for t in best_trials(spec(direction="minimize"), trials, 1)] == [6]
    # a number within 10% of a better candidate's is the same setting: the next one is taken
    io = [trial(1, {"innodb_io_capacity": "1110"}, 41000.0),
          trial(2, {"innodb_io_capacity": "1120"}, 40700.0),
          trial(3, {"innodb_io_capacity": "14595"}, 34900.0)]
    assert [t.number for t in best_trials(spec(), io, 2)] == [1, 3]


def test_the_verification_recommends_the_candidate_beyond_noise(search_path: Path) -> None:
    search = load_search(search_path)
    s = spec_of(search)
    assert TuneSpec.from_plan("commit", tune_plan(search)) == s  # as the report reads it
    trials = [trial(0, {"innodb_flush_log_at_trx_commit": "1"}, 1000.0, step=0),
              trial(1, {"innodb_flush_log_at_trx_commit": "2"}, 2100.0, step=1),
              trial(2, {"innodb_flush_log_at_trx_commit": "0"}, 1010.0, step=2)]
    # the verification's order: counterbalanced rounds of base, t1, t2 (a Williams square)
    arms = [Arm(BASE, {}), Arm("t1", {}), Arm("t2", {})]
    order = verification_steps(search, arms[0], arms[1:])
    assert len(order) == 15 and {st.replicate for st in order} == {1, 2, 3, 4, 5}
    assert len({tuple(st.arm.name for st in order if st.replicate == r)
                for r in range(1, 6)}) > 1  # not one fixed order
    tps = {BASE: [1000, 1020, 990, 1005, 1012], "t1": [2000, 2100, 1990, 2050, 2020],
           "t2": [1003, 1018, 995, 1001, 1011]}
    steps = [step(i, "x", 1, 0.0) for i in range(3)]  # the trials' own steps
    steps += [step(3 + i, st.arm.name, st.replicate, tps[st.arm.name][st.replicate - 1])
              for i, st in enumerate(order)]
    v = verification_of(s, trials, steps)
    assert v is not None
    assert v.results.arms == [BASE, "t1", "t2"]
    assert len(v.results.cells[(BASE, 4)].runs) == 5  # trial 0's own step is not a run
    assert v.verdict("t1") == "higher" and v.verdict("t2") == "noise"
    assert v.recommended == "t1"
    assert v.line().startswith("tune: recommend t1 (innodb_flush_log_at_trx_commit=2): TPS 2.")
    # the same table where nothing is beyond noise: no recommendation
    flat = [st if st.arm != "t1" else step(st.index, "t1", st.replicate, st.tps + 3)
            for st in steps if st.arm != "t1"] + [
        step(st.index, "t1", st.replicate, tps[BASE][st.replicate - 1] + 2)
        for st in steps if st.arm == "t1"]
    v = verification_of(s, trials, flat)
    assert v is not None and v.recommended is None
    assert v.line().startswith("tune: could not beat the baseline beyond noise (t1, t2")


def test_a_tune_reads_back_from_its_events_and_reports_as_markdown(search_path: Path) -> None:
    search = load_search(search_path)
    start = RecipeRun(t=0.0, wall=0.0, action="start", name="commit", plan=tune_plan(search))
    events = [start,
              step(0, BASE, 1, 1000.0), trial(0, {"innodb_flush_log_at_trx_commit": "1"},
                                             1000.0, step=0),
              step(1, "t1", 1, 2000.0), trial(1, {"innodb_flush_log_at_trx_commit": "2"},
                                             2000.0, step=1)]
    runs = collect_tunes(events)  # killed before its verification: no end, no table
    assert len(runs) == 1 and runs[0].outcome == "running" and runs[0].verification is None
    assert [t.number for t in runs[0].trials] == [0, 1]
    text = tune_markdown(runs[0])
    assert "| t1 | innodb_flush_log_at_trx_commit=2 | 2,000 | yes | - | (best) |" in text
    assert "No verification round" in text
    # a recipe journal holds no tune
    plain = RecipeRun(t=0.0, wall=0.0, action="start", name="r", plan={"arms": {}})
    assert collect_tunes([plain, step(0, "A", 1, 5.0)]) == []


def test_resume_takes_the_trials_of_the_same_search_and_refuses_another(
    search_path: Path, tmp_path: Path
) -> None:
    search = load_search(search_path)
    start = RecipeRun(t=0.0, wall=0.0, action="start", name="commit", plan=tune_plan(search))
    t0 = trial(0, {"innodb_flush_log_at_trx_commit": "1"}, 1000.0, step=0)
    t1 = trial(1, {"innodb_flush_log_at_trx_commit": "2"}, 2000.0, step=1)
    again = trial(1, {"innodb_flush_log_at_trx_commit": "2"}, 2000.0, resumed=True)
    got = prior_trials(tmp_path / "j", search, [start, t0, t1, again])
    assert [(t.number, t.resumed) for t in got] == [(0, False), (1, False)]
    with pytest.raises(SearchError, match="not a tune journal"):
        prior_trials(tmp_path / "j", search, [RecipeRun(t=0.0, wall=0.0, action="start",
                                                        name="r", plan={})])
    other = search_path.read_text().replace("max = 2000", "max = 4000")
    (tmp_path / "other.toml").write_text(other)
    with pytest.raises(SearchError) as exc:
        prior_trials(tmp_path / "j", load_search(tmp_path / "other.toml"), [start, t0])
    assert exc.value.key == "space" and "search file that journal was written" in str(exc.value)


@pytest.mark.parametrize(("line", "key"), [
    ("[verify]\ncandidates = 0", "verify.candidates"),
    ("[verify]\nreplicates = 3", "verify.replicates"),
    ("[verify]\nrounds = 3", "verify.rounds"),
    ('seed = "x"', "seed"),
])
def test_a_search_files_verify_table_is_checked(tmp_path: Path, line: str, key: str) -> None:
    body = SEARCH.replace("[verify]\ncandidates = 2\nreplicates = 5\n", "")
    path = tmp_path / "s.toml"
    path.write_text(line + "\n" + body if line.startswith("seed") else body + line + "\n")
    with pytest.raises(SearchError) as exc:
        load_search(path)
    assert exc.value.key == key


def test_the_bundled_searches_read() -> None:
    for name in ("commit-flush", "sort-buffer-aa"):
        s = load_search(name)
        assert s.path.parent.name == "tune" and s.trials and s.replicates >= 4


def test_replay_and_follow_list_each_trial_in_the_journal_pane() -> None:
    from knobtop.ui.widgets.journal_pane import describe

    shown = describe(trial(3, {"innodb_flush_log_at_trx_commit": "2"}, 2100.4))
    assert shown is not None
    assert shown.plain == "00:03 ◇ trial 3 innodb_flush_log_at_trx_commit=2: 2,100"
    failed = Trial(t=65.0, wall=0.0, tune="commit", number=4, arm="t4",
                   knobs={"join_buffer_size": "679119"}, objective=None, state="failed",
                   message="join_buffer_size must be a multiple of 128")
    text = describe(failed)
    assert text is not None and text.plain == (
        "01:05 ◇ trial 4 join_buffer_size=679119: \u2013 (failed: join_buffer_size must be a "
        "multiple of 128)")
    broke = Trial(t=1.0, wall=0.0, tune="commit", number=5, arm="t5", knobs={"a": "1"},
                  objective=1.5, feasible=False, violated=["latency_ms_max"])
    text = describe(broke)
    assert text is not None and text.plain.endswith(": 1.50 (broke latency_ms_max)")
