"""Reach variables (server.policy) from files, the command line, the session and the
person at the keyboard: refused unless the file lists them under [allow] reach and the
command line says --allow-reach, or the person confirms a dialog; journaled either way."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import pytest

from conftest import show_global
from faults.helpers import knobtop_run
from harness.tmux import first_hit, open_lab, pane_server
from knobtop.hosts.local import LocalHost
from knobtop.journal import Change, JournalReader
from knobtop.journal.events import Note, RecipeRun
from knobtop.recipes.model import RecipeError
from knobtop.recipes.reader import load_recipe
from knobtop.recipes.search import SearchError, load_search
from knobtop.server.link import ConnectionInfo
from knobtop.session.core import Session, SessionConfig

RECIPE = """\
name = "logs"
description = "general log off and on"
{allow}
[load]
workload = "oltp_point_select"
threads = [1]
duration = 5
warmup = 0
tables = 1
table_size = 100

[run]
replicates = 1

[[arm]]
name = "A"
knobs = {{ general_log = "OFF" }}

[[arm]]
name = "B"
knobs = {{ general_log = "ON" }}
"""
ALLOW = '[allow]\nreach = ["general_log"]'


def write(tmp_path: Path, text: str, name: str = "r.toml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


# -- files (no server) ----------------------------------------------------------------


def test_a_recipe_arm_naming_a_reach_variable_is_refused_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path, RECIPE.format(allow=""))
    with pytest.raises(RecipeError) as caught:
        load_recipe(path)
    text = str(caught.value)
    assert f"{path}: arm[0].knobs.general_log (line 17): general_log starts the server " \
        "writing files" in text
    assert 'fix: list it under [allow] reach = ["general_log"] in the file and run with ' \
        "--allow-reach" in text
    assert load_recipe(write(tmp_path, RECIPE.format(allow=ALLOW))).allow_reach == \
        ("general_log",)


@pytest.mark.parametrize("body", [
    # an arm opening the network, a timeline's action and its start, a search's knob
    'name = "n"\ndescription = "d"\n[load]\nworkload = "oltp_point_select"\nthreads = [1]\n'
    'duration = 5\n[[arm]]\nname = "A"\nknobs = { sort_buffer_size = 1 }\n[[arm]]\n'
    'name = "B"\nknobs = { sort_buffer_size = 2, bind_address = "0.0.0.0" }\n',
    'name = "t"\ndescription = "d"\n[run]\nkind = "timeline"\n[load]\nworkload = '
    '"oltp_point_select"\nthreads = [1]\nduration = 60\n[timeline]\ncheckpoints = [30]\n'
    '[[timeline.action]]\nat = 10\nknobs = { init_connect = "DO 1" }\n',
    'name = "t"\ndescription = "d"\n[run]\nkind = "timeline"\n[load]\nworkload = '
    '"oltp_point_select"\nthreads = [1]\nduration = 60\n[timeline]\ncheckpoints = [30]\n'
    'start = { plugin_maturity = "alpha" }\n',
])
def test_recipes_cannot_reach_without_permission(tmp_path: Path, body: str) -> None:
    with pytest.raises(RecipeError, match=r"\(line \d+\): \S+ (opens|runs|loads).*"
                       r"without permission"):
        load_recipe(write(tmp_path, body))


def test_a_search_file_cannot_search_a_reach_variable(tmp_path: Path) -> None:
    body = ('name = "s"\ndescription = "d"\n[load]\nworkload = "oltp_point_select"\n'
            'threads = 1\nduration = 5\n[objective]\nmaximize = "tps"\n[budget]\ntrials = 2\n'
            '[[knob]]\nname = "general_log_file"\nchoices = ["/tmp/a.log", "/tmp/b.log"]\n')
    with pytest.raises(SearchError, match=r"knob\[0\]\.name.*general_log_file names a file"):
        load_search(write(tmp_path, body, "s.toml"))


def test_allow_lists_only_reach_variables(tmp_path: Path) -> None:
    text = RECIPE.format(allow='[allow]\nreach = ["general_log", "sort_buffer_size"]')
    with pytest.raises(RecipeError, match=r"allow\.reach\[1\]: 'sort_buffer_size' is not a "
                       "reach variable"):
        load_recipe(write(tmp_path, text))


def test_the_command_line_must_say_allow_reach_too(tmp_path: Path) -> None:
    """Refused before anything starts: no sandbox directory is made."""
    recipe = write(tmp_path, RECIPE.format(allow=ALLOW))
    where = tmp_path / "lab"
    run = knobtop_run("run", str(recipe), "--lab", "--dir", str(where), timeout=60)
    assert run.returncode != 0
    assert "asks to set reach variables ([allow] reach): general_log starts the server " \
        "writing files. Run again with --allow-reach" in run.stderr
    headless = knobtop_run("lab", "--dir", str(where), "--headless", "--duration", "1",
                           "--set", "general_log=ON@0", timeout=60)
    assert headless.returncode != 0
    assert "--set general_log: general_log starts the server writing files; add " \
        "--allow-reach" in headless.stderr
    assert "Traceback" not in run.stderr + headless.stderr
    assert not where.exists()


# -- the session and a recipe run (a real server) ---------------------------------------



@pytest.mark.integration
async def test_the_session_sets_a_reach_variable_only_when_allowed(
        lab: tuple[Path, ConnectionInfo], tmp_path: Path) -> None:
    _, info = lab
    journal = tmp_path / "s.knobtop.jsonl"
    session = Session(SessionConfig(profile="test", connection=info, journal_path=journal),
                      LocalHost(), None)
    await session.open()
    try:
        refused = await session.set_knob("general_log", "ON")
        assert refused.result == "refused" and refused.reach == ""
        assert "general_log starts the server writing files" in refused.message
        assert await show_global(info, "general_log") == "OFF"
        group = await session.set_knobs({"sort_buffer_size": "1M", "init_connect": "DO 1"})
        assert [c.result for c in group] == ["refused", "refused"]
        assert await show_global(info, "init_connect") == ""
        done = await session.set_knob("general_log", "ON", reach=("general_log",))
        assert (done.result, done.new, done.reach) == ("ok", "ON", "files")
        assert await show_global(info, "general_log") == "ON"
        undone = await session.undo()  # taking it back needs no new permission
        assert undone is not None and undone.result == "ok"
    finally:
        await session.close()
    assert await show_global(info, "general_log") == "OFF"
    changes = [(e.knob, e.result, e.reach) for e in JournalReader(journal)
               if isinstance(e, Change)]
    assert changes[:4] == [("general_log", "refused", ""), ("sort_buffer_size", "refused", ""),
                           ("init_connect", "refused", ""), ("general_log", "ok", "files")]


@pytest.mark.integration
def test_a_recipe_allowed_to_reach_sets_it_and_journals_why(
        lab: tuple[Path, ConnectionInfo], tmp_path: Path) -> None:
    where, info = lab
    recipe = write(tmp_path, RECIPE.format(allow=ALLOW))
    journal = tmp_path / "run.knobtop.jsonl"
    run = knobtop_run("run", str(recipe), "--lab", "--dir", str(where), "--journal",
                      str(journal), "--allow-reach", "--duration", "1", timeout=300)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    events = list(JournalReader(journal))
    start = next(e for e in events if isinstance(e, RecipeRun) and e.action == "start")
    assert start.plan["allow_reach"] == ["general_log"]
    assert any(isinstance(e, Note) and "reach variables allowed: general_log ([allow] reach "
               f"in {recipe} and --allow-reach)" in e.text for e in events)
    set_on = [e for e in events if isinstance(e, Change) and e.knob == "general_log"
              and e.new == "ON"]
    assert set_on and all(e.result == "ok" and e.reach == "files" for e in set_on)
    assert asyncio.run(show_global(info, "general_log")) == "OFF"  # the baseline is back


# -- the person at the keyboard (the real screen and session processes, in tmux) -------


@pytest.mark.integration
def test_the_live_screen_asks_before_a_reach_variable_and_journals_it(
        tmp_path: Path, lab: tuple[Path, ConnectionInfo]) -> None:
    where, info = lab
    tmux = pane_server(tmp_path)
    journal = tmp_path / "keys.knobtop.jsonl"
    try:
        pane = open_lab(tmux, where, journal, tmp_path)

        def ask(answer: str) -> None:
            tmux.run("send-keys", "-t", pane, "C-p")
            tmux.wait_for(pane, lambda s: "Search" in "\n".join(s), timeout=30,
                          what="the palette")
            tmux.run("send-keys", "-t", pane, "-l", "general_log")
            tmux.wait_for(pane, lambda s: first_hit(s) == "general_log", timeout=30,
                          what="general_log first in the palette")
            tmux.run("send-keys", "-t", pane, "Enter")
            tmux.wait_for(pane, lambda s: "Set general_log" in "\n".join(s), timeout=30,
                          what="the knob dialog")
            tmux.run("send-keys", "-t", pane, "C-u")
            tmux.run("send-keys", "-t", pane, "-l", "ON")
            tmux.run("send-keys", "-t", pane, "Enter")
            tmux.wait_for(pane, lambda s: "general_log reaches beyond performance" in
                          "\n".join(s) and "starts the server writing files" in
                          " ".join(r.strip() for r in s), timeout=30,
                          what="the reach dialog")
            tmux.run("send-keys", "-t", pane, answer)
            tmux.wait_for(pane, lambda s: "reaches beyond" not in "\n".join(s), timeout=30,
                          what="the dialog closing")

        ask("n")
        ask("y")
        deadline = time.monotonic() + 30
        while not changes_of(journal) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert changes_of(journal) == [("general_log", "ON", "ok", "files")]
        assert asyncio.run(show_global(info, "general_log")) == "ON"
        tmux.run("send-keys", "-t", pane, "q")
        tmux.wait_for(pane, lambda s: "Revert (r)" in "\n".join(s), timeout=30,
                      what="the quit dialog")
        tmux.run("send-keys", "-t", pane, "r")
        assert tmux.exit_status(pane, timeout=120) == "0"
    finally:
        tmux.kill()
    assert asyncio.run(show_global(info, "general_log")) == "OFF"


def changes_of(journal: Path) -> list[tuple[str, str | None, str, str]]:
    if not journal.exists():
        return []
    return [(e.knob, e.new, e.result, e.reach) for e in JournalReader(journal)
            if isinstance(e, Change)]
