"""SessionOptions: `knobtop run` gets every option `lab` and `connect` get, from the recipe.

No server here: the options are built from parsed arguments and compared, field by field.
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from harness import paths as repo_paths
from knobtop.cli.live import (
    lab_place,
    recipe_options,
    recipe_request,
    server_place,
    session_options,
)
from knobtop.cli.parser import build_parser
from knobtop.load.base import LoadSpec
from knobtop.recipes.checks import check_server
from knobtop.recipes.model import Recipe
from knobtop.recipes.reader import load_recipe
from knobtop.session.options import LabPlace, ScheduledChange, SessionOptions

EXPERIMENTS = repo_paths.REPO / "experiments"
# The three-arm sort-buffer recipe (bundled until issue 39 made it a curve)
SORT_ARMS = repo_paths.DATA / "recipes" / "sort-buffer.toml"


def lab_options(argv: list[str]) -> SessionOptions:
    args = build_parser().parse_args(["lab", *argv])
    return session_options(args, lambda: lab_place(args))


def run_options(argv: list[str], recipe: Recipe) -> SessionOptions:
    return recipe_options(build_parser().parse_args(["run", "x.toml", *argv]), recipe)


def test_run_and_lab_give_the_same_options_from_equivalent_inputs(tmp_path: Path) -> None:
    # sort-buffer: a [load] lab flags can express (doublewrite runs 8 instances since issue 18)
    recipe = load_recipe(SORT_ARMS)
    journal = tmp_path / "j.knobtop.jsonl"
    run = run_options(["--lab", "--journal", str(journal), "--interval", "0.5",
                       "--dir", str(tmp_path), "--driver", "builtin"], recipe)
    lab = lab_options([
        "--headless", "--duration", str(recipe.planned_seconds), "--journal", str(journal),
        "--interval", "0.5", "--dir", str(tmp_path), "--driver", "builtin",
        "--load", recipe.load.workload, "--threads", str(recipe.threads[0]),
        "--tables", str(recipe.load.tables), "--table-size", str(recipe.load.table_size),
        "--rate", str(recipe.load.rate), "--rand-type", recipe.load.rand_type,
        "--percentile", str(recipe.load.percentile),
    ])
    names = [f.name for f in dataclasses.fields(SessionOptions)]
    differ = [n for n in names if getattr(run, n) != getattr(lab, n)]
    assert differ == ["checks"]  # all else is the same session
    (check,) = run.checks  # the recipe's own check of its knobs, on the run's own server
    assert check.func == check_server and check.args == (recipe,)
    assert check.keywords == {"target": ""}
    assert lab.checks == ()


def test_every_option_has_a_value_for_run() -> None:
    # No field has a default: a new one that `run` does not fill is a TypeError here
    # (and a mypy error in recipe_options), never an AttributeError mid-run.
    assert all(f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
               for f in dataclasses.fields(SessionOptions))
    # sort-buffer: a [load] lab flags can express (doublewrite runs 8 instances since issue 18)
    recipe = load_recipe(SORT_ARMS)
    for where in (["--lab"], ["--profile", "somewhere"]):
        args = build_parser().parse_args(["run", "x.toml", *where, "--tui", "--markdown",
                                          "out.md"])
        request = recipe_request(args, recipe)
        options = request.options
        assert not options.headless and request.markdown == Path("out.md")
        assert request.recipe == recipe
        load = recipe.load
        assert options.load == LoadSpec(workload=load.workload, threads=recipe.threads[0],
                                        tables=load.tables, table_size=load.table_size,
                                        rate=load.rate, rand_type=load.rand_type,
                                        percentile=load.percentile)
    profile = run_options(["--profile", "p", "--accept-new", "-i", "k"], recipe).where
    assert not isinstance(profile, LabPlace)
    assert profile.profile == "p" and profile.ssh.accept_new and profile.ssh.identities == ("k",)


def test_connect_options_from_flags() -> None:
    args = build_parser().parse_args([
        "connect", "--target", "db1", "--client", "c1", "--client", "c2", "--headless",
        "--duration", "5", "--load", "none", "--set", "sort_buffer_size=1M@2",
        "--client-tables", "own", "--no-statements",
    ])
    options = session_options(args, lambda: server_place(args))
    assert not options.start_load and options.load.workload == "oltp_read_write"
    assert options.changes == (ScheduledChange(2.0, "sort_buffer_size", "1M"),)
    assert not options.statements
    where = options.where
    assert not isinstance(where, LabPlace)
    assert where.clients == ("c1", "c2") and where.own_tables and where.mysql_user == "root"


@pytest.mark.parametrize(("argv", "message"), [
    (["connect", "p", "--target", "t"], "not both"),
    (["connect"], "say where the server is"),
    (["connect", "p", "--headless"], "--headless needs --duration"),
    (["connect", "p", "--set", "a=1"], "--set is for --headless"),
])
def test_connect_refusals(argv: list[str], message: str) -> None:
    args = build_parser().parse_args(argv)
    with pytest.raises(ValueError, match=message):
        session_options(args, lambda: server_place(args))


def test_version_and_help_import_nothing_heavy() -> None:
    # The whole process: what `knobtop --version` and `--help` load before they answer.
    probe = ("import sys, runpy\n"
             "sys.argv = ['knobtop', '{arg}']\n"
             "try:\n    runpy.run_module('knobtop', run_name='__main__')\n"
             "except SystemExit:\n    pass\n"
             "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n")
    for arg in ("--version", "--help"):
        run = subprocess.run([sys.executable, "-c", probe.format(arg=arg)],
                             capture_output=True, text=True, timeout=60, check=True)
        loaded = set(run.stderr.split())
        heavy = {"asyncio", "asyncssh", "aiomysql", "textual", "rich", "psutil", "orjson",
                 "dataclasses", "knobtop.session", "knobtop.load.base"}
        assert not loaded & heavy, (arg, loaded & heavy)


def test_report_imports_no_server_or_screen_library(tmp_path: Path) -> None:
    journal = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"
    probe = ("import sys\nfrom knobtop.cli import main\n"
             f"main(['report', {str(journal)!r}, '-o', {str(tmp_path / 'r.md')!r}])\n"
             "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, check=True)
    loaded = {m.split(".")[0] for m in run.stderr.split()}
    assert not loaded & {"asyncssh", "aiomysql", "pymysql", "textual"}


def test_the_live_screen_holds_neither_the_session_nor_the_recipe_machinery() -> None:
    # What the screen's process loads: everything before the fork (session.process) and its
    # own imports after it (ui.app). The session's modules are the forked child's, imported
    # after the fork; the recipe runner and results tables load when a recipe runs (row 3c).
    probe = ("import sys\nimport knobtop.session.process, knobtop.ui.app\n"
             "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, check=True)
    loaded = set(run.stderr.split())
    assert "knobtop.ui.app" in loaded  # the probe ran
    later = {"knobtop.session.served", "knobtop.session.core", "knobtop.session.sampler",
             "knobtop.recipes.model", "knobtop.recipes.reader", "knobtop.recipes.runner",
             "knobtop.analysis.results",
             # replay's reader (the incident page needs only its clock format, row 5d)
             "knobtop.analysis.replay"}
    assert not loaded & later, loaded & later


def test_run_takes_the_client_tables_choice_connect_has() -> None:
    """Issue 18: run no longer forces shared tables on a profile's several clients."""
    recipe = load_recipe(SORT_ARMS)
    own = run_options(["--profile", "p", "--client-tables", "own"], recipe).where
    shared = run_options(["--profile", "p"], recipe).where
    assert not isinstance(own, LabPlace) and not isinstance(shared, LabPlace)
    assert own.own_tables and not shared.own_tables


def test_the_sessions_process_loads_neither_cryptography_nor_package_metadata() -> None:
    # What the forked child imports (session.served) and the MySQL driver it connects with:
    # `cryptography` waits for an RSA password exchange (server/link.py), importlib.metadata
    # (with email, zipfile, csv) for a built-in load's version line (row 5d).
    probe = ("import sys\nimport knobtop.session.process, knobtop.session.served\n"
             "from knobtop.server.link import _drivers\n_drivers()\n"
             "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n")
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                         timeout=60, check=True)
    loaded = set(run.stderr.split())
    assert {"knobtop.session.served", "aiomysql", "pymysql"} <= loaded  # the probe ran
    assert not loaded & {"cryptography", "importlib.metadata", "email"}, loaded


def test_the_built_in_driver_still_names_its_client_library_and_version() -> None:
    from importlib import metadata

    from knobtop.load.builtin import BuiltinDriver
    from knobtop.server.link import ConnectionInfo

    driver = BuiltinDriver(ConnectionInfo())
    assert driver.version == f"{driver.library} {metadata.version(driver.library)}"
