"""`knobtop tune` on a real sandbox with real sysbench (issue 21): a search whose better
region is known here finds it and verifies it "higher"; a search of knobs that do nothing
ends with "could not beat the baseline beyond noise", after a kill -9 mid-search and a
resume that repeats no trial and ends on the server's first baseline."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import signal
from pathlib import Path

import orjson
import pytest

from conftest import show_global
from faults.helpers import (
    knobtop_process,
    knobtop_run,
    served_lab_session,
    wait_sysbench_gone,
    wait_until,
)
from harness.ui import until, widget_text
from knobtop.analysis.tune import BASE, baseline_band, best_trials, collect_tunes
from knobtop.journal import JournalReader, RecipeRun, StepResult, Trial
from knobtop.lab import Sandbox
from knobtop.recipes.orders import TuneReport
from knobtop.recipes.search import load_search
from knobtop.server.link import ConnectionInfo
from knobtop.ui.app import KnobtopApp
from knobtop.ui.screens.confirm import ConfirmScreen
from knobtop.ui.widgets.recipe_panel import RecipePanel

# Its verdicts compare throughput: run with no other live test beside it (make test).
pytestmark = [pytest.mark.integration, pytest.mark.serial]

QUICK = ("--duration", "2", "--warmup", "0")


@pytest.fixture(scope="module")
def lab(lab_sandbox: tuple[Sandbox, ConnectionInfo]) -> tuple[Path, ConnectionInfo, Sandbox]:
    """conftest's module sandbox, which `knobtop tune --lab --dir` joins (and leaves
    running), so the test can read the server's values after each tune."""
    sandbox, info = lab_sandbox
    return sandbox.root, info, sandbox


def search_file(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "search.toml"
    path.write_text(body)
    return path


def trial_lines(journal: Path) -> list[dict[str, object]]:
    if not journal.exists():
        return []
    return [orjson.loads(line) for line in journal.read_bytes().split(b"\n")[1:-1]
            if line.startswith(b'{"ev":"trial"')]


COMMIT = """\
name = "commit"
description = "durability traded for throughput under single-row updates"
seed = 1
[load]
workload = "oltp_update_index"
threads = 2
duration = 5
tables = 1
table_size = 2000
[objective]
maximize = "tps"
[constraints]
errors_per_s_max = 0
[budget]
trials = 2
[verify]
candidates = 1
replicates = 4
[[knob]]
name = "innodb_flush_log_at_trx_commit"
choices = [0, 1, 2]
[[knob]]
name = "innodb_io_capacity"
min = 100
max = 2000
log = true
"""


async def test_a_tune_on_screen_finds_the_commit_setting_that_beats_the_baseline(
    lab: tuple[Path, ConnectionInfo, Sandbox], tmp_path: Path, sysbench_path: str
) -> None:
    """The better region is known here: without an fsync per commit (0 or 2) single-row
    updates run several times faster than with one (1, the server's default). Run as
    `knobtop tune --tui` runs it, at 80x24: the trials panel names the current trial, the
    best so far over the baseline's band, and at the end the recommendation."""
    _where, info, sandbox = lab
    names = ("innodb_flush_log_at_trx_commit", "innodb_io_capacity")
    before = {k: await show_global(info, k) for k in names}
    assert before["innodb_flush_log_at_trx_commit"] == "1"
    search = load_search(search_file(tmp_path, COMMIT))
    search = dataclasses.replace(search, load=dataclasses.replace(search.load, duration=2),
                                 warmup=0)
    journal = tmp_path / "commit.knobtop.jsonl"
    with served_lab_session(sandbox, journal) as session:
        app = KnobtopApp(session, tune=search)
        async with app.run_test(size=(80, 24)) as pilot:
            panel = app.live.query_one(RecipePanel)

            def shown() -> str:
                return "\n".join(widget_text(panel))

            # the second trial under way: it is named with its values, the first is the best
            # (the tune runs in the session's process: the screen holds its spec, the
            # trials its events brought, and at the end the run's report)
            await until(pilot, lambda: app.tune_spec is not None
                        and "trial t2: innodb_flush_log_at_trx_commit=" in shown(), timeout=120)
            assert app.tune_spec is not None
            text = shown()
            best = best_trials(app.tune_spec, app.trials, 1)[0]
            assert f"best so far {best.arm}: {best.objective:,.0f}" in text
            band = baseline_band(app.trials)
            assert band is not None and f"baseline {band[0]:,.0f}-{band[1]:,.0f}" in text
            # a asks before it aborts (restoring the baseline); n lets the search go on
            assert "a: abort (restores the baseline)" in panel.border_subtitle
            await pilot.press("a")
            await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
            await pilot.press("n")
            await until(pilot, lambda: app.recipe_results is not None, timeout=300)
            # what the tune concluded, apart from whether the screen shows it (each failure
            # names its own cause: the tune's end, its runs, or the panel)
            assert isinstance(app.run_report, TuneReport)
            verification = app.run_report.verification
            assert verification is not None, f"the tune ended before its verification:\n{shown()}"
            assert verification.recommended is not None, (
                f"{verification.line()}; runs: "
                f"{[(s.arm, s.replicate, s.avg_tps) for s in verification.results.steps]}")
            await until(pilot, lambda: "tune: recommend t" in shown(), timeout=10, shown=shown)
            await pilot.press("q")
        events = list(JournalReader(journal))
        trials = [e for e in events if isinstance(e, Trial)]
        # the baseline (the server's own values) twice, its noise band, then two trials, each
        # its own values
        assert [t.number for t in trials] == [0, 0, 1, 2]
        assert trials[0].knobs == trials[1].knobs == before and trials[0].arm == BASE
        assert len({tuple(sorted(t.knobs.items())) for t in trials}) == 3
        steps = {s.index: s for s in events if isinstance(s, StepResult)}
        for t in trials:  # each trial is the recipe step it names, with that step's TPS
            assert t.state == "done" and t.objective == round(steps[t.step].avg_tps or 0, 3)
            assert t.feasible == (steps[t.step].err == 0)
        # the verification: the baseline and the best candidate, 4 counterbalanced rounds each
        rest = [s for i, s in steps.items() if i not in {t.step for t in trials}]
        assert sorted((s.arm, s.replicate) for s in rest if s.arm == BASE) == \
            [(BASE, r) for r in range(1, 5)]
        assert len(rest) == 8
        assert [e.action for e in events if isinstance(e, RecipeRun)] == ["start", "end"]
        # the conditions probe ran before the first trial (issue 39 item 8), into its plan
        start = next(e for e in events if isinstance(e, RecipeRun))
        assert start.plan["conditions"][""]["sync"]["median_ms"] > 0
        tune, = collect_tunes(events)
        assert tune.outcome == "end" and tune.verification is not None
        chosen = tune.verification.recommended
        assert chosen is not None, tune.verification.line()
        knobs = tune.verification.knobs[chosen]
        assert knobs["innodb_flush_log_at_trx_commit"] in ("0", "2")
        assert tune.verification.verdict(chosen) == "higher"
        assert isinstance(app.run_report, TuneReport)
        assert app.run_report.verification is not None
        assert app.run_report.verification.line() == tune.verification.line()
        # the server ends on its baseline values
        assert {k: await show_global(info, k) for k in names} == before
        # the report prints the trials and the verification table
        report = knobtop_run("report", str(journal))
        assert report.returncode == 0, report.stderr
        assert "## Tune commit" in report.stdout and f"tune: recommend {chosen}" in report.stdout
        assert "### Verification against the baseline" in report.stdout
        assert "Conditions at the start (measured): sync: " in report.stdout


AA = """\
name = "aa"
description = "buffers a point select never uses"
seed = 3
[load]
workload = "oltp_point_select"
threads = 2
duration = 5
tables = 1
table_size = 2000
[objective]
maximize = "tps"
[budget]
trials = 4
[verify]
candidates = 1
replicates = 4
[[knob]]
name = "sort_buffer_size"
min = 32768
max = 8388608
log = true
[[knob]]
name = "join_buffer_size"
min = 8192
max = 4194304
log = true
"""


def test_a_tune_of_knobs_that_do_nothing_resumes_after_kill_9_and_finds_nothing(
    lab: tuple[Path, ConnectionInfo, Sandbox], tmp_path: Path, sysbench_path: str
) -> None:
    where, info, _sandbox = lab
    names = ("sort_buffer_size", "join_buffer_size")
    before = {k: asyncio.run(show_global(info, k)) for k in names}
    search = search_file(tmp_path, AA)
    first = tmp_path / "first.knobtop.jsonl"
    proc = knobtop_process("tune", str(search), "--lab", "--dir", str(where), "--journal",
                           str(first), *QUICK)
    try:
        wait_until(lambda: sum(1 for t in trial_lines(first) if t["number"] != 0) >= 2, 300,
                   "two trials in the journal", proc)
        os.kill(proc.pid, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    assert wait_sysbench_gone(f"--mysql-socket={where / 'mysqld.sock'}", grace=10) == {}
    killed = [e for e in JournalReader(first) if isinstance(e, Trial)]
    assert [t.number for t in killed[:2]] == [0, 0] and len(killed) >= 4
    # the kill left the last trial's values on the server, not the baseline
    left = {k: asyncio.run(show_global(info, k)) for k in names}
    assert left != before

    second = tmp_path / "second.knobtop.jsonl"
    run = knobtop_run("tune", str(search), "--lab", "--dir", str(where), "--journal",
                      str(second), "--resume", str(first), *QUICK, timeout=600)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-4000:]
    events = list(JournalReader(second))
    trials = [e for e in events if isinstance(e, Trial)]
    resumed = [t for t in trials if t.resumed]
    # the killed tune's trials, copied, then only new ones up to the budget of 4
    assert [(t.number, t.knobs, t.objective) for t in resumed] == \
        [(t.number, t.knobs, t.objective) for t in killed]
    assert all(t.from_journal == str(first) for t in resumed)
    fresh = [t for t in trials if not t.resumed]
    assert [t.number for t in fresh] == list(range(killed[-1].number + 1, 5))
    assert not {tuple(sorted(t.knobs.items())) for t in fresh} & \
        {tuple(sorted(t.knobs.items())) for t in resumed}
    steps = [s for s in events if isinstance(s, StepResult)]
    assert len(steps) == len(fresh) + 8  # no baseline run again: the new trials and 4 rounds
    tune, = collect_tunes(events)
    # read back from the journal (as report does), the tune holds every trial, the copied
    # ones too, and judges as the tune itself did
    assert [t.number for t in tune.trials] == [t.number for t in trials]
    assert tune.verification is not None
    assert tune.verification.results.arms[0] == BASE and len(tune.verification.results.arms) == 2
    assert tune.verification.recommended is None, tune.verification.line()
    assert "tune: could not beat the baseline beyond noise" in out
    assert tune.verification.line() in out
    # the resumed tune took the killed one's baseline and ended on it
    assert any(e.kind == "note" and "baseline of join_buffer_size" in e.text for e in events)
    after = {k: asyncio.run(show_global(info, k)) for k in names}
    assert after == before
