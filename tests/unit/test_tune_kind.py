"""Issue 38: the tune is a kind of its own (recipes/kinds/tune.py), which the runner drives
as it drives every kind, and which no recipe file selects."""

from __future__ import annotations

from pathlib import Path

import pytest

from knobtop.analysis.tune import BASE
from knobtop.journal.events import Trial
from knobtop.recipes.kinds import KINDS, start_plan
from knobtop.recipes.kinds.tune import BASELINE_RUNS, Tune
from knobtop.recipes.model import Arm, RecipeError, Step
from knobtop.recipes.orders import TuneOrder
from knobtop.recipes.reader import load_recipe
from knobtop.recipes.resume import tune_plan
from knobtop.recipes.runner import RecipeRunner
from knobtop.recipes.schema import bundled_files, traced_checks
from knobtop.recipes.search import Search, load_search
from test_record import unopened
from test_tune_analysis import SEARCH

RECIPE = """\
name = "not-a-tune"
description = "a recipe file that asks for the tune's kind"
[load]
workload = "oltp_point_select"
threads = 4
duration = 10
[run]
kind = "tune"
[[arm]]
name = "A"
knobs = {}
"""

BASE_KNOBS = {"innodb_flush_log_at_trx_commit": "1", "innodb_io_capacity": "200"}


@pytest.fixture
def search(tmp_path: Path) -> Search:
    path = tmp_path / "commit.toml"
    path.write_text(SEARCH)
    return load_search(path)


def test_a_recipe_file_of_kind_tune_is_refused_naming_knobtop_tune(tmp_path: Path) -> None:
    path = tmp_path / "r.toml"
    path.write_text(RECIPE)
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    assert info.value.key == "run.kind"
    assert "knobtop tune SEARCH.toml" in info.value.fix
    assert "tune" not in KINDS


def test_no_recipe_file_and_no_reference_offers_the_tune() -> None:
    assert all(kind.planned for kind in KINDS.values())
    choices = traced_checks(bundled_files())["recipe"][("[run]", "kind")].choices
    assert choices == tuple(KINDS) and "tune" not in choices


def test_the_runner_drives_a_tune_as_its_kind(tmp_path: Path, search: Search) -> None:
    session, _ = unopened(tmp_path)
    tune = Tune(search)
    recipe = search.recipe(Arm(BASE, BASE_KNOBS))
    assert recipe.kind == tune.name == "tune" and not tune.planned
    runner = RecipeRunner(session, recipe, kind=tune)
    assert runner.kind is tune
    # the baseline's runs are the steps it knows before it starts (the start event's count)
    assert [(s.index, s.replicate, s.arm.name) for s in runner.steps] == [
        (i, i + 1, BASE) for i in range(BASELINE_RUNS)]
    runner.set_total(tune.planned_steps())
    assert runner.progress.total == BASELINE_RUNS + 6 + 3 * 5  # trials, then verification
    runner.add_steps([Step(0, 1, Arm("t1", {"innodb_io_capacity": "400"}), 4)])
    assert runner.steps[-1].index == BASELINE_RUNS and runner.steps[-1].arm.name == "t1"
    # a recipe file's kind is the registry's (the runner's default)
    assert RecipeRunner(session, recipe.changed(kind="arms")).kind is KINDS["arms"]


def test_a_resumed_tune_knows_no_step_before_it_starts(tmp_path: Path,
                                                        search: Search) -> None:
    base = Trial(t=1.0, wall=1000.0, tune="commit", number=0, arm=BASE, knobs=BASE_KNOBS,
                 objective=100.0, state="done", step=0)
    tune = Tune(search, prior=[base], resumed_from=str(tmp_path / "old.knobtop.jsonl"))
    recipe = search.recipe(Arm(BASE, BASE_KNOBS))
    assert tune.schedule(recipe) == []
    assert tune.planned_steps() == 6 + 3 * 5


def test_a_tunes_start_plan_has_its_keys(search: Search) -> None:
    tune = Tune(search)
    recipe = search.recipe(Arm(BASE, BASE_KNOBS))
    plan = start_plan(recipe, tune, BASELINE_RUNS, ["w"], {"conditions": {}})
    # where every kind's are (the conditions probe's come last)
    assert list(plan)[-5:] == ["kind", "tune", "steps", "warnings", "conditions"]
    assert {k: plan[k] for k in ("kind", "tune")} == tune_plan(search)
    assert plan["arms"] == {BASE: BASE_KNOBS} and plan["steps"] == BASELINE_RUNS


async def test_a_tune_on_a_session_not_open_is_refused_before_its_runner(
        tmp_path: Path, search: Search) -> None:
    session, heard = unopened(tmp_path)
    report = await TuneOrder(search).run(session, {})
    assert report.outcome.outcome == "refused"
    assert "the session is not open" in report.outcome.message
    assert report.trials == [] and heard == []
