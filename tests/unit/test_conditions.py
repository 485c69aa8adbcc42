"""Issue 39 items 8 and 9 without a server: the storage emulation's spelling and strace
command, the conditions probe's host program run for real (with and without the
emulation), what a recipe's [conditions] need and how an unmet one is said, and the notes
a report prints from a journal's plan (text from outside: every field type-checked)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from knobtop.conditions import Conditions, Latency, Needs, plan_notes, unmet
from knobtop.lab_storage import Storage, parse_storage
from knobtop.labdirs import LabError
from knobtop.recipes.model import RecipeError
from knobtop.recipes.reader import load_recipe
from knobtop.server.conditions import HOST_PROBE

RECIPE = """\
name = "c"
description = "a test recipe"
[load]
workload = "oltp_write_only"
threads = [4]
duration = 5
tables = 1
table_size = 100
[[arm]]
name = "A"
knobs = { innodb_flush_log_at_trx_commit = 1 }
[[arm]]
name = "B"
knobs = { innodb_flush_log_at_trx_commit = 2 }
"""


@pytest.mark.parametrize(("text", "sync_us", "read_us", "spec"), [
    ("sync=2ms", 2000, 0, "sync=2ms"),
    ("read=0.5ms,sync=2ms", 2000, 500, "sync=2ms,read=0.5ms"),
    ("sync=250us", 250, 0, "sync=0.25ms"),
    ("SYNC = 3", 3000, 0, "sync=3ms"),  # a bare number is milliseconds
])
def test_storage_spellings_read_and_write_back(text: str, sync_us: int, read_us: int,
                                               spec: str) -> None:
    storage = parse_storage(text)
    assert (storage.sync_us, storage.read_us) == (sync_us, read_us)
    assert storage.spec() == spec and parse_storage(spec) == storage


@pytest.mark.parametrize(("text", "said"), [
    ("fsync=2ms", "is not sync=... or read=..."),
    ("sync", "is not sync=... or read=..."),
    ("sync=2s", "is not a duration"),
    ("sync=-1ms", "is not a duration"),
    ("sync=2ms,sync=3ms", "gives sync twice"),
    ("sync=1001ms", "must be 0 to 1000 ms"),
])
def test_a_wrong_storage_spelling_is_named_with_the_right_one(text: str, said: str) -> None:
    with pytest.raises(LabError) as info:
        parse_storage(text)
    assert said in str(info.value) and repr(text) in str(info.value)


def test_the_strace_command_traces_only_the_delayed_calls() -> None:
    storage = parse_storage("sync=2ms,read=0.5ms")
    argv = storage.wrapper("/usr/bin/strace")
    assert argv[0] == "/usr/bin/strace" and argv[-1] == "--"
    assert "--seccomp-bpf" in argv and "-f" in argv  # only the traced calls stop
    assert "trace=fsync,fdatasync,pread64,preadv,preadv2" in argv
    assert "inject=fsync,fdatasync:delay_exit=2000" in argv
    assert "inject=pread64,preadv,preadv2:delay_exit=500" in argv
    assert storage.describe() == "storage emulated: sync +2 ms, read +0.5 ms"
    assert Storage().wrapper() == [] and not Storage() and Storage().describe() == ""


def _probe(argv_prefix: list[str], where: Path) -> dict[str, object]:
    run = subprocess.run([*argv_prefix, sys.executable, "-I", "-c", HOST_PROBE, str(where),
                          "60", "60"], capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout)
    assert isinstance(found, dict)
    return found


def test_the_host_program_measures_sync_and_read_and_leaves_nothing(tmp_path: Path) -> None:
    found = _probe([], tmp_path)
    sync, read = found["sync"], found["read"]
    assert isinstance(sync, list) and isinstance(read, list)
    assert sync[2] == 60 and read[2] == 60 and read[3] in ("O_DIRECT", "uncached")
    assert 0 < sync[0] <= sync[1] and 0 < read[0] <= read[1]
    assert found["cpus"] == len(__import__("os").sched_getaffinity(0))
    assert isinstance(found["fs"], str) and found["fs"]
    assert found["problems"] == [] and list(tmp_path.iterdir()) == []  # its file is gone
    conditions = Conditions(sync=Latency(*sync[:3]))
    assert conditions.lines()[0].startswith("sync: ")


def test_under_the_emulation_the_probe_meets_the_added_delay(tmp_path: Path) -> None:
    """The lab's probe runs behind the server's strace command: it measures the delay the
    server's calls meet (strace is installed by make, as the lab needs it)."""
    assert shutil.which("strace"), "strace is missing: make deps-test installs it"
    found = _probe(parse_storage("sync=3ms,read=1ms").wrapper(), tmp_path)
    sync, read = found["sync"], found["read"]
    assert isinstance(sync, list) and isinstance(read, list)
    assert sync[0] >= 3.0 and read[0] >= 1.0  # each call held at least the delay


def test_a_directory_the_probe_cannot_write_is_said_not_guessed(tmp_path: Path) -> None:
    found = _probe([], tmp_path / "missing")
    assert "sync" not in found and "read" not in found
    assert found["problems"] and "cannot write a file in" in str(found["problems"])


FAST = Conditions(sync=Latency(0.13, 0.6, 200), read=Latency(0.1, 0.3, 200, "O_DIRECT"),
                  data_bytes=5 << 20, pool_bytes=128 << 20, cpus=2, client_shares_cpus=True)


def test_unmet_conditions_say_the_figure_the_need_and_what_to_expect() -> None:
    needs = Needs(sync_ms_min=1.0, why="the commit's redo sync")
    said = unmet(needs, FAST, lab=True)
    assert said == ["this disk syncs in 0.13 ms; the commit's redo sync needs >= 1 ms: "
                    "expect noise (the lab can emulate it: --storage sync=1ms)"]
    assert unmet(needs, FAST) == [said[0].removesuffix(
        " (the lab can emulate it: --storage sync=1ms)")]
    slow = Conditions(sync=Latency(2.4, 6.0, 200), emulated="storage emulated: sync +2 ms")
    assert unmet(needs, slow) == []
    assert "was not measured" in unmet(needs, Conditions())[0]
    big = Needs(data_over_pool_min=2.0, client_apart=True, cpus_min=4)
    said = unmet(big, FAST)
    assert "the data is 0.04x the buffer pool" in said[0] and "needs >= 2x" in said[0]
    assert "2 CPUs" in said[1] and "shares the server's CPUs" in said[2]


def test_needs_text_and_the_plan_round_trip() -> None:
    needs = Needs(sync_ms_min=1.0, data_over_pool_max=0.5, why="x")
    assert needs.text() == "sync >= 1 ms, data <= 0.5x the buffer pool"
    assert Needs.from_json(needs.as_json()) == needs
    assert Conditions.from_json(FAST.as_json()) == FAST
    assert not Needs() and Needs().as_json() == {}


def test_a_hostile_plan_gives_only_what_type_checks() -> None:
    plan = {"conditions": {"": {"sync": {"median_ms": "0.1", "p99_ms": 1, "ops": 3},
                                "read": {"median_ms": 0.2, "p99_ms": float("nan"), "ops": 1},
                                "cpus": -2, "fs": "ext4\x1b[31m", "problems": ["p", 3],
                                "client_shares_cpus": "yes", "data_bytes": 10,
                                "pool_bytes": 0},
                           "t2": "not a table"},
            "needs": {"sync_ms_min": "1", "why": "\x1b]0;x\x07"}}
    c = Conditions.from_json(plan["conditions"][""])  # type: ignore[index]
    assert c == Conditions(data_bytes=10, pool_bytes=0, problems=("p",))
    assert Needs.from_json(plan["needs"]) == Needs()  # type: ignore[arg-type]
    assert plan_notes(plan) == ["Conditions at the start (measured): not measured: p."]
    # a problem's text from the journal is made printable where it is read
    hostile = Conditions.from_json({"problems": ["read: \x1b[2Jgone\x07"]})
    assert hostile.problems and not any(c in hostile.problems[0] for c in "\x1b\x07")


def test_plan_notes_say_each_server_and_what_did_not_hold() -> None:
    plan = {"conditions": {"": FAST.as_json(), "trx2": FAST.as_json()},
            "needs": Needs(sync_ms_min=1.0).as_json()}
    notes = plan_notes(plan)
    assert notes[0].startswith("Conditions at the start (measured): sync: 0.13 ms median")
    assert notes[1] == ("Not met: this disk syncs in 0.13 ms; the effect needs >= 1 ms: "
                        "expect noise.")
    assert notes[2].startswith("Conditions at the start on trx2 (measured)")
    assert notes[3].startswith("Not met on trx2: ")
    assert plan_notes({"arms": {}}) == []  # a journal from before the probe


def test_a_recipe_states_its_conditions(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text(RECIPE + "[conditions]\nsync_ms_min = 1\ndata_over_pool_max = 0.5\n"
                    "why = \"the redo sync\"\n")
    recipe = load_recipe(path)
    assert recipe.needs == Needs(sync_ms_min=1.0, data_over_pool_max=0.5, why="the redo sync")
    path.write_text(RECIPE)
    assert not load_recipe(path).needs


@pytest.mark.parametrize(("table", "key", "said"), [
    ("sync_ms = 1", "conditions.sync_ms", "sync_ms_min"),  # did you mean
    ("sync_ms_min = \"1\"", "conditions.sync_ms_min", "a number"),
    ("sync_ms_min = 0", "conditions.sync_ms_min", "out of range"),
    ("data_over_pool_min = 3\ndata_over_pool_max = 2", "conditions.data_over_pool_min",
     "above data_over_pool_max"),
    ("client_apart = 1", "conditions.client_apart", "a boolean"),
])
def test_a_wrong_conditions_table_is_refused_with_key_and_fix(tmp_path: Path, table: str,
                                                             key: str, said: str) -> None:
    path = tmp_path / "c.toml"
    path.write_text(RECIPE + "[conditions]\n" + table + "\n")
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    assert key in str(info.value) and said in str(info.value), str(info.value)


def test_the_seed_recipes_that_need_a_slow_sync_say_so() -> None:
    from knobtop.recipes.reader import BUNDLED_DIR

    for name in ("trx-commit", "doublewrite", "sweep-read-write"):
        needs = load_recipe(BUNDLED_DIR / f"{name}.toml").needs
        assert needs.sync_ms_min is not None and needs.sync_ms_min >= 1, name


def test_every_server_label_says_the_emulation_and_compare_names_what_differs() -> None:
    from types import SimpleNamespace

    from knobtop.analysis.compare import Comparison
    from knobtop.analysis.report import server_label
    from knobtop.journal.events import FORMAT_VERSION, Header

    def header(**server: object) -> Header:
        return Header(format=FORMAT_VERSION, knobtop="0", profile="lab", started_wall=0.0,
                      interval=1.0, server={"flavor": "mariadb", "version": "10.11.19",
                                            **server})

    plain = server_label(header())
    emulated = server_label(header(storage="storage emulated: sync +2 ms"))
    hostile = server_label(header(storage="storage emulated: \x1b]0;pwned\x07sync"))
    assert plain == "mariadb 10.11.19"
    assert emulated == "mariadb 10.11.19, storage emulated: sync +2 ms"
    assert "\x1b" not in hostile and "\x07" not in hostile
    words = Comparison.differs_words.fget  # type: ignore[attr-defined]
    assert words(SimpleNamespace(server_a=plain, server_b=emulated)) == \
        "storage emulation differs"
    assert words(SimpleNamespace(server_a="mariadb 10.6.1", server_b=emulated)) == \
        "server versions differ"


def test_the_journal_pane_lists_the_probe_under_the_recipe_start_printably() -> None:
    from knobtop.journal.events import RecipeRun
    from knobtop.ui.widgets.journal_pane import describe

    hostile = {**FAST.as_json(), "problems": ["read: \x1b[2Jgone"]}
    start = RecipeRun(t=1.0, wall=0.0, action="start", name="trx-commit",
                      plan={"conditions": {"": hostile}, "warnings": ["w"]})
    text = describe(start)
    assert text is not None
    rows = text.plain.splitlines()
    assert rows[1] == "  conditions: sync: 0.13 ms median, 0.60 ms p99 (fdatasync of 4 KiB " \
        "in the datadir, 200 calls)"
    assert rows[-1] == "  warning: w" and "\x1b" not in text.plain
    assert any(r.startswith("  conditions: not measured: read: ") for r in rows)


def test_a_datadir_the_probe_cannot_write_names_the_fix(tmp_path: Path) -> None:
    from knobtop.server.conditions import _with_fix

    said = _probe([], tmp_path / "missing")["problems"]
    assert isinstance(said, list)
    fixed = _with_fix(said[0], "db1")
    assert fixed.startswith(said[0]) and "give the user knobtop logs in as on db1 write" in fixed
    assert _with_fix("read: odd", "db1") == "read: odd"
