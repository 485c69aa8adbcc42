"""Checks at the start (issue 37, findings 6 and 7): every knob a command will set is checked
against the server's catalog before a table is prepared or a load starts, with the variable
the person most likely meant; every warning of a recipe's plan is said before its first step,
headless and on the live screen (the real screen and session processes, in a real tmux pane).
"""

from __future__ import annotations

import asyncio
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from conftest import show_global
from faults.helpers import knobtop_run
from harness.tmux import pane_server
from knobtop.journal import JournalReader, RecipeRun, StepResult
from knobtop.lab import Sandbox
from knobtop.server.link import ConnectionInfo, ServerLink

pytestmark = pytest.mark.integration

TYPO, KNOB = "innodb_io_capacty", "innodb_io_capacity"
NOTHING_RUN = "Nothing was run: no table was prepared, no load started, no knob changed"

RECIPE = """\
name = "typo"
description = "an arm's knob written wrong"
[load]
workload = "oltp_point_select"
threads = [1]
duration = 5
warmup = 0
tables = 1
table_size = 150
[run]
replicates = 1
[[arm]]
name = "A"
knobs = {{ {knob} = 200 }}
[[arm]]
name = "B"
knobs = {{ {knob} = 400 }}
"""
TIMELINE = """\
name = "typo-timeline"
description = "a timeline's start knob written wrong"
[run]
kind = "timeline"
[load]
workload = "oltp_point_select"
threads = [1]
duration = 20
tables = 1
table_size = 150
[timeline]
checkpoints = [10]
start = {{ {knob} = 300 }}
"""
SEARCH = """\
name = "typo-search"
description = "a searched knob written wrong"
[load]
workload = "oltp_point_select"
threads = 1
duration = 5
tables = 1
table_size = 150
[objective]
maximize = "tps"
[budget]
trials = 2
[[knob]]
name = "{knob}"
min = 100
max = 400
"""
# Two arms at two thread counts, 3 replicates: 2 comparisons (Holm) need 5 runs per arm.
WARNED = """\
name = "warned"
description = "three replicates cannot read higher or lower"
[load]
workload = "oltp_point_select"
threads = [1, 2]
duration = 10
warmup = 0
tables = 1
table_size = 150
[run]
replicates = 3
[[arm]]
name = "A"
knobs = { innodb_io_capacity = 200 }
[[arm]]
name = "B"
knobs = { innodb_io_capacity = 400 }
"""
WARNING = "replicates = 3: with 3 runs per arm and a family of 2 comparisons (Holm) the best " \
    "a cell can read is p = 0.200 (above 0.05): no cell can get a verdict (higher or lower); " \
    "give at least 5 replicates"


async def query(info: ConnectionInfo, sql: str) -> list[tuple[object, ...]]:
    link = ServerLink(info)
    await link.connect()
    try:
        return list(await link.query(sql))
    finally:
        await link.close()


def no_load_tables(info: ConnectionInfo) -> None:
    """The load's database gone: a command that prepares tables makes it again."""
    asyncio.run(query(info, "DROP DATABASE IF EXISTS sbtest"))


def load_tables(info: ConnectionInfo) -> list[tuple[object, ...]]:
    return asyncio.run(query(info, "SELECT TABLE_NAME FROM information_schema.TABLES "
                                   "WHERE TABLE_SCHEMA LIKE 'sbtest%'"))


def refused_before_anything(run: subprocess.CompletedProcess[str], info: ConnectionInfo,
                            journal: Path) -> str:
    """The command ended at its start: code 2, said on the terminal, no journal, no table,
    the knob as it was."""
    said = run.stdout + run.stderr
    assert run.returncode == 2, said
    assert "Traceback" not in said and "Recording" not in said and "Loaded" not in said, said
    assert not journal.exists()
    assert load_tables(info) == []
    assert asyncio.run(show_global(info, KNOB)) == "200"
    return " ".join(said.split())  # the terminal's line breaks do not matter


@pytest.mark.parametrize(("change", "says"), [
    (f"{TYPO}=500@2", [f"--set {TYPO}=500@2: {TYPO} does not exist on this server, mariadb",
                       f"did you mean {KNOB}? Fix: write --set {KNOB}=500@2."]),
    (f"{KNOB}=lots@1", [f"--set {KNOB}=lots@1: {KNOB} takes a whole number",
                        "Fix: give a value this server takes (it is 200 now)."]),
])
def test_a_set_the_server_cannot_take_ends_the_run_before_it_starts(
        lab: tuple[Path, ConnectionInfo], tmp_path: Path, change: str,
        says: list[str]) -> None:
    where, info = lab
    no_load_tables(info)
    journal = tmp_path / "set.knobtop.jsonl"
    started = time.monotonic()
    run = knobtop_run("lab", "--dir", str(where), "--headless", "--duration", "30",
                      "--journal", str(journal), "--load", "oltp_point_select", "--tables",
                      "1", "--table-size", "150", "--threads", "1", "--set", change,
                      timeout=120)
    said = refused_before_anything(run, info, journal)
    for text in [*says, NOTHING_RUN]:
        assert text in said, said
    assert time.monotonic() - started < 25  # not after the run's 30 s


def test_a_set_after_the_runs_end_is_refused_before_a_sandbox_starts(tmp_path: Path) -> None:
    where = tmp_path / "lab"
    run = knobtop_run("lab", "--dir", str(where), "--headless", "--duration", "3",
                      "--load", "none", "--set", f"{KNOB}=500@1800", timeout=60)
    assert run.returncode == 2, run.stderr
    assert f"--set {KNOB}=500@1800: 1800 s is not before the run's end (--duration 3), so " \
        "it would never be made" in " ".join(run.stderr.split())
    assert not where.exists()


def test_the_sandbox_a_refused_command_started_is_stopped(tmp_path: Path) -> None:
    where = tmp_path / "own"
    journal = tmp_path / "own.knobtop.jsonl"
    try:
        run = knobtop_run("lab", "--dir", str(where), "--headless", "--duration", "5",
                          "--journal", str(journal), "--load", "none", "--set",
                          f"{TYPO}=500@1", timeout=240)
        said = " ".join((run.stdout + run.stderr).split())
        assert run.returncode == 2, said
        assert f"did you mean {KNOB}?" in said and "Sandbox server on" in said, said
        assert Sandbox(where).running_pid() is None, said  # started by it, stopped by it
        assert not journal.exists()
    finally:
        Sandbox(where).stop()


def test_a_profiles_server_is_checked_before_anything_runs(
        lab: tuple[Path, ConnectionInfo], tmp_path: Path) -> None:
    where, info = lab
    profile = tmp_path / "p.toml"
    profile.write_text(f'[target.mysql]\nsocket = "{where / "mysqld.sock"}"\n'
                       f'user = "{info.user}"\npassword = {{ env = "KNOBTOP_TEST_PW" }}\n')
    profile.chmod(0o600)
    journal = tmp_path / "p.knobtop.jsonl"
    run = subprocess.run(
        [sys.executable, "-m", "knobtop", "connect", str(profile), "--headless", "--duration",
         "30", "--journal", str(journal), "--load", "none", "--set", f"{TYPO}=300@1"],
        capture_output=True, text=True, timeout=120, check=False, stdin=subprocess.DEVNULL,
        env={**os.environ, "COLUMNS": "200", "KNOBTOP_TEST_PW": info.password})
    said = refused_before_anything(run, info, journal)
    assert f"did you mean {KNOB}? Fix: write --set {KNOB}=300@1." in said, said


@pytest.mark.parametrize(("command", "body", "key", "fix"), [
    ("run", RECIPE, f"arm[0].knobs.{TYPO}", f"write {KNOB} instead of {TYPO} in every arm"),
    ("run", TIMELINE, f"timeline.start.{TYPO}",
     f"write {KNOB} instead of {TYPO} in timeline.start"),
    ("tune", SEARCH, "knob[0].name", f'write name = "{KNOB}"'),
], ids=["arm", "timeline", "search"])
def test_a_files_knob_the_server_lacks_is_refused_before_its_tables(
        lab: tuple[Path, ConnectionInfo], tmp_path: Path, command: str, body: str, key: str,
        fix: str) -> None:
    where, info = lab
    no_load_tables(info)
    path = tmp_path / "file.toml"
    path.write_text(body.format(knob=TYPO))
    journal = tmp_path / "file.knobtop.jsonl"
    run = knobtop_run(command, str(path), "--lab", "--dir", str(where), "--journal",
                      str(journal), timeout=180)
    said = refused_before_anything(run, info, journal)
    assert f"{path}: {key}: {TYPO} does not exist on this server, mariadb" in said, said
    assert f"did you mean {KNOB}? fix: {fix}" in said, said


def test_headless_says_the_plans_warnings_before_its_first_step(
        lab: tuple[Path, ConnectionInfo], tmp_path: Path, sysbench_path: str) -> None:
    where, _info = lab
    recipe = tmp_path / "warned.toml"
    recipe.write_text(WARNED)
    journal = tmp_path / "warned.knobtop.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "knobtop", "run", str(recipe), "--lab", "--dir", str(where),
         "--journal", str(journal)],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, env={**os.environ, "COLUMNS": "400"})
    lines: queue.Queue[str | None] = queue.Queue()

    def read() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            lines.put(line)
        lines.put(None)

    threading.Thread(target=read, daemon=True).start()
    seen: list[str] = []
    try:
        deadline = time.monotonic() + 180
        while not any("load start" in line for line in seen):
            left = deadline - time.monotonic()
            assert left > 0, "".join(seen)
            try:
                line = lines.get(timeout=left)
            except queue.Empty:
                continue
            assert line is not None, "".join(seen)  # it ended before its first step
            seen.append(line)
        first_step = next(i for i, line in enumerate(seen) if "load start" in line)
        warned = [i for i, line in enumerate(seen) if f"warning: {WARNING}" in line]
        assert warned and warned[0] < first_step, "".join(seen)
    finally:
        proc.send_signal(signal.SIGINT)  # abort: the load stops, the baseline comes back
        assert proc.wait(timeout=120) == 130
    start = next(e for e in JournalReader(journal)
                 if isinstance(e, RecipeRun) and e.action == "start")
    assert any(WARNING in w for w in start.plan["warnings"])


def test_the_live_screen_says_the_plans_warnings_before_its_first_step(
        lab: tuple[Path, ConnectionInfo], tmp_path: Path, sysbench_path: str) -> None:
    where, _info = lab
    recipe = tmp_path / "warned.toml"
    recipe.write_text(WARNED)
    journal = tmp_path / "warned-tui.knobtop.jsonl"
    tmux = pane_server(tmp_path)
    try:
        session = f"knobtop-{tmux.socket}"
        pane = f"{session}:run"
        tmux.new_session(session, "run", 160, 48, [
            sys.executable, "-m", "knobtop", "run", str(recipe), "--lab", "--dir", str(where),
            "--journal", str(journal), "--tui"], cwd=tmp_path)
        tmux.wait_for(pane, lambda s: "replicates = 3: with 3 runs per arm" in "\n".join(s),
                      timeout=300, what="the plan's warning on the live screen")
        steps = [e for e in JournalReader(journal) if isinstance(e, StepResult)]
        assert steps == []  # said before the first step was measured
        tmux.run("send-keys", "-t", pane, "q")  # aborts the recipe, restores the baseline
        # aborted: the exit code headless gives (recipes/outcome.py; it was 0 here)
        assert tmux.exit_status(pane, timeout=180) == "130"
    finally:
        tmux.kill()
