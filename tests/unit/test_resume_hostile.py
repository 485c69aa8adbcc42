"""`tune --resume` of a hostile journal (issue 36): only the search's own knobs, each inside
the search's range or choices, come from it; anything else is refused with its line, before
anything runs; the baseline is the server's as read, except what a killed tune left."""

from __future__ import annotations

from pathlib import Path

import pytest

from faults.helpers import knobtop_run
from knobtop.analysis.tune import BASE
from knobtop.journal import JournalReader
from knobtop.journal.events import FORMAT_VERSION, Header, RecipeRun, Trial
from knobtop.journal.writer import JournalWriter
from knobtop.recipes.resume import leftover_knobs, read_prior, tune_plan
from knobtop.recipes.search import SearchError, load_search
from test_tune_analysis import SEARCH

KNOB = "innodb_flush_log_at_trx_commit"


def trial(number: int, knobs: dict[str, str]) -> Trial:
    return Trial(t=float(number), wall=1000.0 + number, tune="commit", number=number,
                 arm=BASE if number == 0 else f"t{number}", knobs=knobs, objective=1000.0,
                 feasible=True, state="done", step=number)


def journal(tmp_path: Path, *trials: Trial) -> Path:
    search = load_search(search_path(tmp_path))
    path = tmp_path / "old.knobtop.jsonl"
    writer = JournalWriter(path, Header(format=FORMAT_VERSION, knobtop="test", profile="lab",
                                           started_wall=1000.0, interval=1.0))
    writer.append(RecipeRun(t=0.0, wall=1000.0, action="start", name="commit",
                            plan=tune_plan(search)))
    for t in trials:
        writer.append(t)
    writer.close()
    return path


def search_path(tmp_path: Path) -> Path:
    path = tmp_path / "commit.toml"
    if not path.exists():
        path.write_text(SEARCH)
    return path


HOSTILE = [
    # the reviewer's journal: a baseline with reach variables added
    ({KNOB: "1", "innodb_io_capacity": "200", "init_connect": "DO 1"}, 0,
     "trial 0 sets init_connect, which the search does not search"),
    ({KNOB: "1", "innodb_io_capacity": "200",
      "general_log_file": "/tmp/hijacked.log"}, 0, "trial 0 sets general_log_file"),
    ({KNOB: "1", "innodb_io_capacity": "200", "general_log": "ON"}, 0,
     "trial 0 sets general_log"),
    # a performance variable outside the search, and values outside its space
    ({KNOB: "2", "innodb_io_capacity": "500", "sort_buffer_size": "1"}, 1,
     "trial 1 sets sort_buffer_size"),
    ({KNOB: "3", "innodb_io_capacity": "500"}, 1,
     f"trial 1 sets {KNOB} = 3, outside the search's choices"),
    ({KNOB: "2", "innodb_io_capacity": "99999"}, 1,
     "trial 1 sets innodb_io_capacity = 99999, outside the search's range"),
    ({KNOB: "1", "innodb_io_capacity": "200; DO 1"}, 0,
     "the baseline (trial 0) has innodb_io_capacity = '200; DO 1', not a plain value"),
]


@pytest.mark.parametrize(("knobs", "number", "said"), HOSTILE)
def test_a_hostile_resume_journal_is_refused_with_its_line(
        tmp_path: Path, knobs: dict[str, str], number: int, said: str) -> None:
    good = trial(0, {KNOB: "1", "innodb_io_capacity": "200"})
    path = journal(tmp_path, *([good] if number else []), trial(number, knobs))
    line = 4 if number else 3  # the header, the tune's start, then the trials
    with pytest.raises(SearchError) as caught:
        read_prior(path, load_search(search_path(tmp_path)))
    assert str(caught.value).startswith(f"{path}:{line}: {said}")


def test_the_cli_refuses_a_hostile_resume_before_anything_runs(tmp_path: Path) -> None:
    path = journal(tmp_path, trial(0, {KNOB: "1", "innodb_io_capacity": "200",
                                       "init_connect": "DO 1"}))
    where = tmp_path / "lab"
    run = knobtop_run("tune", str(search_path(tmp_path)), "--lab", "--dir", str(where),
                      "--resume", str(path), timeout=60)
    assert run.returncode != 0
    assert f"{path}:3: trial 0 sets init_connect" in run.stderr
    assert "Traceback" not in run.stderr
    assert not where.exists()  # no sandbox was made, nothing was set


def test_the_baseline_is_the_servers_except_what_a_killed_tune_left(tmp_path: Path) -> None:
    prior = [trial(0, {KNOB: "1", "innodb_io_capacity": "200"}),
             trial(1, {KNOB: "2", "innodb_io_capacity": "700"}),
             trial(2, {KNOB: "0", "innodb_io_capacity": "1400"})]
    path = journal(tmp_path, *prior)
    got = read_prior(path, load_search(search_path(tmp_path)))
    assert [t.number for t in got] == [0, 1, 2]
    assert [t.knobs for t in JournalReader(path) if isinstance(t, Trial)] == \
        [t.knobs for t in prior]
    # the server holds trial 2's values: the journal's baseline comes back
    assert leftover_knobs(got, {KNOB: "0", "innodb_io_capacity": "1400"}) == \
        {KNOB: "1", "innodb_io_capacity": "200"}
    # the server holds values no trial set: they are the baseline, as read
    assert leftover_knobs(got, {KNOB: "1", "innodb_io_capacity": "300"}) == {}
    assert leftover_knobs(got, {KNOB: "2", "innodb_io_capacity": "300"}) == {KNOB: "1"}


def test_a_value_set_by_the_trial_the_tune_was_killed_in_is_a_leftover(tmp_path: Path) -> None:
    """Killed mid-trial: the server holds values no journaled trial has, only the trial's
    changes (its trial line comes after its step): that is still what the tune left."""
    prior = [trial(0, {KNOB: "1", "innodb_io_capacity": "200"}),
             trial(1, {KNOB: "2", "innodb_io_capacity": "700"})]
    killed_in = [(KNOB, "0"), ("innodb_io_capacity", "1400")]
    assert leftover_knobs(prior, {KNOB: "0", "innodb_io_capacity": "1400"}) == {}
    assert leftover_knobs(prior, {KNOB: "0", "innodb_io_capacity": "1400"}, killed_in) == \
        {KNOB: "1", "innodb_io_capacity": "200"}


def test_a_set_the_kill_came_before_the_journal_of_is_still_a_leftover() -> None:
    """Killed between an arm's SET of a knob and the change's line (CI saw it: trial 3's
    sort_buffer_size journaled, its join_buffer_size set on the server but not written):
    the knobs the killed run had not journaled since its last measured step are not the
    baseline either, whatever the server holds for them now."""
    from knobtop.journal.events import Change, StepResult
    from knobtop.recipes.resume import interrupted_arm

    def change(t: float, knob: str, new: str, arm: str) -> Change:
        return Change(t=t, wall=t, knob=knob, requested=new, old="x", new=new,
                      method="set_global", result="ok", reason=f"recipe aa: arm {arm}")

    def step(t: float, arm: str) -> StepResult:
        return StepResult(t=t, wall=t, recipe="aa", index=1, replicate=1, arm=arm,
                          threads=2, start=t - 2, end=t, tps=1.0, p95=1.0, err=0.0)

    knobs = (KNOB, "innodb_io_capacity")
    prior = [trial(0, {KNOB: "1", "innodb_io_capacity": "200"}),
             trial(1, {KNOB: "2", "innodb_io_capacity": "700"})]
    killed = [change(1, KNOB, "2", "t1"), change(2, "innodb_io_capacity", "700", "t1"),
              step(4, "t1"), prior[1], change(5, KNOB, "0", "t2")]
    assert interrupted_arm(killed, knobs) == {"innodb_io_capacity"}
    # the server holds trial 2's io_capacity, which no line of the journal has
    now = {KNOB: "0", "innodb_io_capacity": "1900"}
    assert leftover_knobs(prior, now, [(KNOB, "0")], {"innodb_io_capacity"}) == \
        {KNOB: "1", "innodb_io_capacity": "200"}
    # killed right after a measured step (CI saw this too: the next arm's first SET had
    # reached the server, its line not): every knob may have been set
    assert interrupted_arm(killed[:4], knobs) == set(knobs)
    # a run that ended left nothing half-set
    end = RecipeRun(t=6, wall=6, action="end", name="aa")
    assert interrupted_arm([*killed, end], knobs) == set()
    # an interrupted knob the server still holds at its baseline is no leftover
    assert leftover_knobs(prior, {KNOB: "0", "innodb_io_capacity": "200"}, [(KNOB, "0")],
                          {"innodb_io_capacity"}) == {KNOB: "1"}
