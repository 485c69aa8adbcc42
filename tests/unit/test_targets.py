"""Arms on different servers, one journal (issue 19 part 1): a recipe's [targets], the
events of each further server named in the journal, and the live run on two sandboxes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from harness import paths as repo_paths
from knobtop.analysis.journaldata import load_journal
from knobtop.analysis.replay import Replay
from knobtop.analysis.report import markdown_report
from knobtop.analysis.results import collect
from knobtop.journal import JournalReader, JournalWriter, Knobs, Load, Sample, StepResult
from knobtop.journal.events import Change, Header, Phase, event_from_dict, to_dict
from knobtop.journal.index import JournalIndex
from knobtop.lab import Sandbox
from knobtop.metrics.board import MetricBoard
from knobtop.recipes.model import RecipeError
from knobtop.recipes.reader import load_recipe

BASE = """\
name = "servers"
description = "the same load on two servers"
[load]
workload = "oltp_write_only"
threads = [2]
duration = 5
warmup = 0
tables = 1
table_size = 1000
[run]
replicates = 2
pause = 0
[targets.trx2]
options = { innodb_flush_log_at_trx_commit = 2 }
[[arm]]
name = "trx1"
[[arm]]
name = "trx2"
target = "trx2"
"""


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "servers.toml"
    path.write_text(body)
    return path


def refused(tmp_path: Path, body: str) -> RecipeError:
    with pytest.raises(RecipeError) as info:
        load_recipe(write(tmp_path, body))
    return info.value


# --------------------------------------------------------------------------- the recipe


def test_arms_may_differ_only_in_the_server_they_run_on(tmp_path: Path) -> None:
    recipe = load_recipe(write(tmp_path, BASE))
    assert [(a.name, a.target, a.knobs) for a in recipe.arms] == [("trx1", "", {}),
                                                                  ("trx2", "trx2", {})]
    (target,) = recipe.targets
    assert (target.name, target.profile, target.options) == (
        "trx2", "", (("innodb_flush_log_at_trx_commit", "2"),))
    # without [targets] an arm that sets nothing is still refused, as before
    plain = BASE.split("[targets.trx2]")[0] + '[[arm]]\nname = "A"\n[[arm]]\nname = "B"\n'
    err = refused(tmp_path, plain)
    assert err.key == "arm[0].knobs" and "missing knobs" in err.problem


@pytest.mark.parametrize(("old", "new", "key", "says"), [
    ('target = "trx2"', 'target = "trx3"', "arm[1].target", "no [targets.trx3] table"),
    ('target = "trx2"', "", "targets.trx2", "no arm runs on it"),
    ("options = { innodb_flush_log_at_trx_commit = 2 }",
     'profile = "db"\noptions = { innodb_flush_log_at_trx_commit = 2 }', "targets.trx2.options",
     "not both"),
    ("innodb_flush_log_at_trx_commit = 2", '"Bad Key" = 2', "targets.trx2.options.Bad Key",
     "not a server option name"),
    ("innodb_flush_log_at_trx_commit = 2", 'socket = "/tmp/x"', "targets.trx2.options.socket",
     "a lab sandbox's options may not set it"),
    ("[targets.trx2]", "[targets.\"a b\"]", 'targets.a b', "not a target name"),
    ("options = {", "host = 1\noptions = {", "targets.trx2.host", "unknown key"),
])
def test_targets_are_checked_naming_the_key(tmp_path: Path, old: str, new: str, key: str,
                                            says: str) -> None:
    assert old in BASE
    err = refused(tmp_path, BASE.replace(old, new, 1))
    assert err.key == key and says in str(err), str(err)
    assert err.fix


def test_a_timeline_runs_on_one_server(tmp_path: Path) -> None:
    body = BASE.split("[targets.trx2]")[0].replace(
        "[run]\n", '[run]\nkind = "timeline"\n') + (
        "[timeline]\ncheckpoints = [2]\n[targets.trx2]\n"
        "options = { innodb_flush_log_at_trx_commit = 2 }\n")
    err = refused(tmp_path, body)
    assert err.key == "targets" and "one server" in err.problem


def test_a_lab_target_needs_the_lab(tmp_path: Path) -> None:
    run = subprocess.run([sys.executable, "-m", "knobtop.cli", "run",
                          str(write(tmp_path, BASE)), "--profile", "nowhere"],
                         capture_output=True, text=True, timeout=60)
    assert run.returncode == 2
    assert "target trx2 of recipe servers is a lab sandbox" in run.stderr
    assert "run it with --lab" in run.stderr


# --------------------------------------------------------------------------- the journal


def header(targets: dict[str, object] | None = None) -> Header:
    return Header(format=1, knobtop="t", profile="lab", started_wall=1.0, interval=1.0,
                  server={"flavor": "mariadb", "version": "10.11.1"},
                  counters=["Com_commit", "Com_rollback", "Innodb_buffer_pool_read_requests",
                            "Innodb_buffer_pool_reads"],
                  targets=targets or {})


def test_an_event_of_the_own_server_is_written_as_before_and_a_targets_named() -> None:
    own = Sample(t=1.0, wall=2.0, v=[1, 2, 3])
    assert "target" not in to_dict(own)
    other = Sample(t=1.0, wall=2.0, v=[1, 2, 3], target="trx2")
    assert to_dict(other)["target"] == "trx2"
    assert event_from_dict(to_dict(other)) == other
    assert event_from_dict(to_dict(own)) == own


def journal_of_two(tmp_path: Path) -> Path:
    """Two servers' samples, loads and knobs interleaved as a two-target run writes them:
    the own server commits 100/s, trx2 1000/s."""
    path = tmp_path / "two.knobtop.jsonl"
    h = header({"trx2": {"profile": "lab", "server": {"flavor": "mariadb", "version":
                                                      "10.11.2", "host": "127.0.0.1",
                                                      "port": 2}, "hosts": {}}})
    writer = JournalWriter(path, h)
    writer.append(Knobs(t=0.0, wall=1.0, values={"innodb_flush_log_at_trx_commit": "1",
                                                 "sort_buffer_size": "2097152"}))
    writer.append(Knobs(t=0.0, wall=1.0, values={"innodb_flush_log_at_trx_commit": "2",
                                                 "sort_buffer_size": "2097152"},
                        target="trx2"))
    writer.append(Phase(t=0.5, wall=1.5, action="start", phase=1, driver="sysbench",
                        workload="w", threads=2, target="trx2"))
    for i in range(1, 6):
        writer.append(Sample(t=float(i), wall=1.0 + i, v=[100 * i, 0, 1000 * i, 0]))
        writer.append(Sample(t=float(i), wall=1.0 + i, v=[1000 * i, 0, 1000 * i, 0],
                             target="trx2"))
        writer.append(Load(t=float(i), wall=1.0 + i, src="sysbench@local", s=i, thds=2,
                           tps=990.0, qps=0, r=0, w=0, o=0, pct=95, lat=1.0, err=0,
                           reconn=0, target="trx2"))
    writer.append(Change(t=5.5, wall=6.5, knob="sort_buffer_size", requested="1M",
                         old="2097152", new="1048576", method="set_global", result="ok",
                         target="trx2"))
    writer.close()
    return path


def test_readers_draw_the_own_servers_series_and_keep_the_targets_steps(tmp_path: Path
                                                                         ) -> None:
    path = journal_of_two(tmp_path)
    events = list(JournalReader(path))
    board = MetricBoard(header())
    other = MetricBoard(header(), target="trx2")
    for event in events:
        board.apply(event)
        other.apply(event)
    assert board.samples == 5 and board.latest.get("tps") == pytest.approx(100)
    assert other.samples == 5 and other.latest.get("tps") == pytest.approx(1000)
    assert board.knob_values.get("sort_buffer_size") != "1048576"  # trx2's change only
    assert not board.load_running and other.load_running
    data = load_journal(path)
    assert [r.tps for r in data.rows if r.tps is not None] == [pytest.approx(100)] * 4
    assert not data.phases and not data.changes and not data.loads
    assert data.target_knobs == {"trx2": {"innodb_flush_log_at_trx_commit": "2",
                                          "sort_buffer_size": "2097152"}}
    index = JournalIndex(path)  # replay's knob panel: the header's own server's values
    index.build()
    try:
        values, _facts = Replay(index).knobs_at(10.0)
    finally:
        index.close()
    assert values == {"innodb_flush_log_at_trx_commit": "1", "sort_buffer_size": "2097152"}
    report = markdown_report(data)
    assert "| target trx2 | mariadb 10.11.2 on 127.0.0.1:2" in report
    assert "| innodb_flush_log_at_trx_commit | 1 | 2 |" in report
    assert "sort_buffer_size | 2097152 | 2097152" not in report  # only what differs


# --------------------------------------------------------------------------- live


@pytest.mark.integration
def test_two_sandboxes_with_different_base_configs_are_two_arms_of_one_journal(
    tmp_path: Path, sysbench_path: str
) -> None:
    """Issue 19's done-when: a recipe whose two arms are two lab sandboxes whose my.cnf
    differ in innodb_flush_log_at_trx_commit (1, the lab's default, and 2) gives one
    journal with both servers' samples and a verdict table. Both arms set
    sort_buffer_size, so each server gets a change of its own and its baseline back."""
    body = BASE.replace('name = "trx1"\n', 'name = "trx1"\nknobs = { sort_buffer_size = '
                        '"1M" }\n').replace('target = "trx2"\n', 'target = "trx2"\nknobs = '
                                            '{ sort_buffer_size = "1M" }\n')
    journal = tmp_path / "servers.knobtop.jsonl"
    run = subprocess.run(
        [sys.executable, "-m", "knobtop.cli", "run", str(write(tmp_path, body)), "--lab",
         "--dir", str(tmp_path / "lab"), "--journal", str(journal), "--duration", "3",
         "--warmup", "1"],
        capture_output=True, text=True, timeout=600,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-3000:]
    events = list(JournalReader(journal))
    h = JournalReader(journal).header
    main_port, other = h.server["port"], h.targets["trx2"]["server"]
    assert other["flavor"] == "mariadb" and other["version"] == h.server["version"]
    assert other["port"] != main_port and "labs/trx2" in other["socket"]
    assert "local" in h.targets["trx2"]["hosts"]
    # each server's own base config, read by its own session at the start
    knobs = {e.target: e.values for e in events if isinstance(e, Knobs)}
    assert knobs[""]["innodb_flush_log_at_trx_commit"] == "1"
    assert knobs["trx2"]["innodb_flush_log_at_trx_commit"] == "2"
    # both servers sampled all along, into the one journal
    samples = {t: [e for e in events if isinstance(e, Sample) and e.target == t]
               for t in ("", "trx2")}
    assert len(samples[""]) >= 10 and len(samples["trx2"]) >= 10
    steps = [e for e in events if isinstance(e, StepResult)]
    assert sorted((s.arm, s.target) for s in steps) == [("trx1", ""), ("trx1", ""),
                                                        ("trx2", "trx2"), ("trx2", "trx2")]
    for step in steps:  # each step's load ran on its own arm's server, and only there
        loads = [e for e in events if isinstance(e, Load) and step.start < e.t <= step.end]
        assert loads and {e.target for e in loads} == {step.target}
        assert step.avg_tps is not None and step.avg_tps > 0
        assert step.cpu_us_txn is not None and step.mysqld_us_txn is not None
    starts = [e for e in events if isinstance(e, Phase) and e.action == "start"]
    assert [e.target for e in starts] == [
        "" if s.arm == "trx1" else "trx2" for s in sorted(steps, key=lambda s: s.index)]
    # each server's knob went to 1M for its arm and back to its baseline at the end
    changes = [(e.target, e.new, e.reason) for e in events if isinstance(e, Change)]
    for target in ("", "trx2"):
        mine = [c for c in changes if c[0] == target]
        assert mine[0][1] == "1048576" and mine[-1][1] == "2097152", changes
    results = collect(events)[0]
    cell = results.cells[("trx2", 2)]
    assert len(cell.runs) == 2 and cell.verdict is not None
    assert cell.verdict.lo is not None and cell.verdict.hi is not None
    # the report reads it as one experiment: both servers, their differing base config,
    # and the results table
    report = subprocess.run([sys.executable, "-m", "knobtop.cli", "report", str(journal)],
                            capture_output=True, text=True, timeout=60)
    assert report.returncode == 0, report.stderr
    assert f"| target trx2 | mariadb {h.server['version']} on " in report.stdout
    assert "| innodb_flush_log_at_trx_commit | 1 | 2 |" in report.stdout
    assert "| trx2 |" in report.stdout
    # nothing of the further server was written anywhere else, and both sandboxes stopped
    assert not (tmp_path / "lab" / "labs" / "trx2" / "journals").exists()
    assert Sandbox(tmp_path / "lab").running_pid() is None
    assert Sandbox(tmp_path / "lab" / "labs" / "trx2").running_pid() is None


def through_the_process(tmp_path: Path, mode: str) -> tuple[dict[str, object], Path]:
    journal = tmp_path / f"{mode}.knobtop.jsonl"
    run = subprocess.run(
        [sys.executable, str(repo_paths.TESTS / "targets_script.py"),
         str(write(tmp_path, BASE)), str(tmp_path / "lab"), str(journal), mode],
        capture_output=True, text=True, timeout=600, cwd=repo_paths.TESTS)
    assert run.returncode == 0, run.stderr[-3000:]
    return json.loads(run.stdout.strip().splitlines()[-1]), journal


@pytest.mark.integration
def test_the_live_screens_session_process_runs_every_target(tmp_path: Path,
                                                             sysbench_path: str) -> None:
    """`run --tui`: the session's process builds and opens the run's own session and each
    target's, serves calls to each by name, and closes them all; the run it is handed (as
    the screen hands it) drives them there (here without a screen)."""
    out, journal = through_the_process(tmp_path, "run")
    assert out["targets"] == ["trx2"] and out["roots"] == [str(tmp_path / "lab" / "labs" / "trx2")]
    h = JournalReader(journal).header
    assert out["target_ports"] == {"trx2": h.targets["trx2"]["server"]["port"]}
    assert sorted(out["steps"]) == ["trx1@", "trx1@", "trx2@trx2", "trx2@trx2"]  # type: ignore[arg-type]
    events = list(JournalReader(journal))
    assert events[-1].kind == "end"
    assert {e.target for e in events if isinstance(e, Sample)} == {"", "trx2"}
    assert Sandbox(tmp_path / "lab").running_pid() is None
    assert Sandbox(tmp_path / "lab" / "labs" / "trx2").running_pid() is None


@pytest.mark.integration
def test_a_killed_session_process_leaves_no_target_sandbox_running(tmp_path: Path,
                                                                    sysbench_path: str
                                                                    ) -> None:
    out, journal = through_the_process(tmp_path, "kill")
    assert "was killed by signal 9" in str(out["lost"])
    assert journal.exists()  # the header and the first samples, as written
    assert Sandbox(tmp_path / "lab").running_pid() is None
    assert Sandbox(tmp_path / "lab" / "labs" / "trx2").running_pid() is None
