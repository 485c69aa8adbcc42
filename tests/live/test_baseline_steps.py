"""A baseline that is the baseline (issue 37, item 3): before every measured step of a recipe
or a tune, the runner puts back what the server changed on its own with an earlier arm
(innodb_io_capacity_max raised with innodb_io_capacity), and journals what it read."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from conftest import show_global
from faults.helpers import knobtop_run
from knobtop.analysis.tune import BASE
from knobtop.journal import Change, JournalReader, StepResult
from knobtop.server.link import ConnectionInfo

pytestmark = pytest.mark.integration

MAX = "innodb_io_capacity_max"
RECIPE = """\
name = "io"
description = "io_capacity far above io_capacity_max's default, and back"
[load]
workload = "oltp_point_select"
threads = [1]
duration = 5
warmup = 0
tables = 1
table_size = 100
[run]
replicates = 2
[[arm]]
name = "A"
knobs = { innodb_io_capacity = 200 }
[[arm]]
name = "B"
knobs = { innodb_io_capacity = 5000 }
"""
SEARCH = """\
name = "io"
description = "io_capacity over a range above io_capacity_max's default"
seed = 3
[load]
workload = "oltp_point_select"
threads = 1
duration = 5
tables = 1
table_size = 100
[objective]
maximize = "tps"
[budget]
trials = 2
[verify]
candidates = 1
replicates = 4
[[knob]]
name = "innodb_io_capacity"
min = 5000
max = 20000
"""



def steps_of(journal: Path) -> list[StepResult]:
    return [e for e in JournalReader(journal) if isinstance(e, StepResult)]


def test_every_baseline_step_runs_on_the_baseline_io_capacity_max(
        lab: tuple[Path, ConnectionInfo], tmp_path: Path) -> None:
    where, info = lab
    before = asyncio.run(show_global(info, MAX))
    recipe = tmp_path / "io.toml"
    recipe.write_text(RECIPE)
    journal = tmp_path / "io.knobtop.jsonl"
    run = knobtop_run("run", str(recipe), "--lab", "--dir", str(where), "--journal",
                      str(journal), "--duration", "1", timeout=300)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    steps = steps_of(journal)
    assert [s.arm for s in steps] == ["A", "B", "B", "A"]  # counterbalanced
    raised = steps[1].knobs[MAX]
    assert raised is not None and int(raised) >= 5000  # the server's own rule
    # the A step after the B steps ran on the baseline's io_capacity_max (the first one
    # came before the server had changed it: no side effect was known to read yet)
    assert steps[0].knobs == {"innodb_io_capacity": "200"}
    assert steps[3].knobs == {"innodb_io_capacity": "200", MAX: before}
    assert all(s.knobs[MAX] == raised for s in steps if s.arm == "B")
    back = [e for e in JournalReader(journal) if isinstance(e, Change) and e.knob == MAX]
    assert back and back[0].new == before and back[0].reason.endswith("back to the baseline")
    assert asyncio.run(show_global(info, MAX)) == before


def test_every_base_round_of_a_tune_runs_on_the_baseline_io_capacity_max(
        lab: tuple[Path, ConnectionInfo], tmp_path: Path) -> None:
    where, info = lab
    before = {k: asyncio.run(show_global(info, k)) for k in ("innodb_io_capacity", MAX)}
    search = tmp_path / "io-search.toml"
    search.write_text(SEARCH)
    journal = tmp_path / "tune.knobtop.jsonl"
    run = knobtop_run("tune", str(search), "--lab", "--dir", str(where), "--journal",
                      str(journal), "--duration", "1", "--warmup", "0", timeout=400)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    steps = steps_of(journal)
    base = [s for s in steps if s.arm == BASE]
    assert len(base) >= 5  # the baseline's own step, then the verification rounds
    # every base round after a trial had raised io_capacity_max read it back on its baseline
    first_trial = next(i for i, s in enumerate(steps) if s.arm != BASE)
    rounds = [s.knobs for s in steps[first_trial:] if s.arm == BASE]
    assert len(rounds) >= 4 and all(k == before for k in rounds), rounds
    assert all(int(s.knobs[MAX] or 0) >= 10000 for s in steps if s.arm != BASE)
    assert {k: asyncio.run(show_global(info, k)) for k in before} == before
