"""Themes, NO_COLOR, key remapping, help, palette actions, graph window, screenshots; and
snapshots of every screen in every bundled theme at 80x24 and 160x48."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from textual.command import CommandPalette
from textual.pilot import Pilot
from textual.widgets import DataTable, Input

from harness import paths as repo_paths
from harness.keys import live_screen_bindings
from harness.ui import until, widget_text
from knobtop.analysis.compare import compare
from knobtop.analysis.journaldata import load_journal
from knobtop.cli import replay_for
from knobtop.config import ConfigError, UiConfig, load_config
from knobtop.journal import Change, JournalReader
from knobtop.ui.app import KnobtopApp
from knobtop.ui.compare_app import CompareApp
from knobtop.ui.keymap import binding_ids, check_keymap
from knobtop.ui.look import BUNDLED_THEMES, load_themes
from knobtop.ui.replay_app import ReplayApp
from knobtop.ui.screens.help import HelpScreen
from knobtop.ui.widgets.graph_grid import GraphGrid, graph_id
from knobtop.ui.widgets.metric_graph import MetricGraph, span_label, time_axis_text

JOURNALS = repo_paths.DATA / "journals"
RECORDED = JOURNALS / "lab-80s.knobtop.jsonl"
THEMES = sorted(p.stem for p in BUNDLED_THEMES.glob("*.toml"))


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never read the person's own ~/.config/knobtop."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("KNOBTOP_CONFIG", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)


def live_app(config: UiConfig | None = None) -> KnobtopApp:
    reader = JournalReader(RECORDED)
    return KnobtopApp(header=reader.header, events=list(reader), config=config)


# -- themes -------------------------------------------------------------------------------


def test_bundled_themes_load_and_cover_the_four_looks() -> None:
    themes, problems = load_themes([BUNDLED_THEMES])
    assert not problems
    assert {t.name for t in themes} == {"knobtop-dark", "knobtop-light",
                                        "knobtop-high-contrast", "knobtop-mono"}
    light = next(t for t in themes if t.name == "knobtop-light")
    assert light.dark is False


@pytest.mark.parametrize(("text", "key", "fix"), [
    ('name = "x"\nprimary = "#00f"\ncolour = "red"\n', "colour", "known keys here"),
    ('name = "x"\nprimary = "#00f"\nbackgrund = "red"\n', "backgrund", "background"),
    ('primary = "#00f"\n', "name", "add name"),
    ('name = "x"\n', "primary", "add primary"),
    ('name = "x"\nprimary = "not-a-colour"\n', "primary", "#RRGGBB"),
    ('name = "x"\nprimary = "#00f"\ndark = "yes"\n', "dark", "dark = true"),
    ('name = "x"\nprimary = "#00f"\nluminosity_spread = 7\n', "luminosity_spread", "0.15"),
    ('name = "x"\nprimary = "#00f"\n[variables]\nfoo = 1\n', "variables", "[variables]"),
    ('name = "x\n', None, "syntax"),
])
def test_a_broken_theme_file_is_skipped_with_file_key_and_fix(
    tmp_path: Path, text: str, key: str | None, fix: str
) -> None:
    folder = tmp_path / "themes"
    folder.mkdir()
    (folder / "mine.toml").write_text(text)
    shutil.copy(BUNDLED_THEMES / "knobtop-light.toml", folder / "ok.toml")
    themes, problems = load_themes([folder])
    assert [t.name for t in themes] == ["knobtop-light"]  # the good file still loads
    assert len(problems) == 1
    assert str(folder / "mine.toml") in problems[0] and fix in problems[0]
    if key:
        assert f": {key}:" in problems[0]


async def test_config_theme_no_color_and_a_user_theme(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = live_app(UiConfig(theme="knobtop-light"))
    async with app.run_test(size=(80, 24)):
        assert app.theme == "knobtop-light"
    monkeypatch.setenv("NO_COLOR", "1")
    app = live_app()
    async with app.run_test(size=(80, 24)):
        assert app.theme == "knobtop-mono"
    monkeypatch.delenv("NO_COLOR")
    own = tmp_path / "xdg" / "knobtop" / "themes"
    own.mkdir(parents=True)
    (own / "night.toml").write_text('name = "night-shift"\nprimary = "#ff8800"\n')
    app = live_app(UiConfig(theme="night-shift"))
    async with app.run_test(size=(80, 24)):
        assert app.theme == "night-shift"
        assert app.current_theme.primary == "#ff8800"
    app = live_app(UiConfig(theme="no-such-theme"))
    async with app.run_test(size=(80, 24)) as pilot:
        assert app.theme == "knobtop-dark"
        await until(pilot, lambda: any("no-such-theme" in str(n.message)
                                       for n in app._notifications))


async def test_theme_switch_from_the_palette_restyles_the_graphs() -> None:
    app = live_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app._painted > 0)
        graph = app.live.query_one("#graph-load_tps", MetricGraph)
        before = graph.render_line(2)
        app.theme = "knobtop-light"
        await pilot.pause()
        after = graph.render_line(2)
        assert before.text == after.text
        assert [s.style for s in before] != [s.style for s in after]


# -- keys: config, remapping, help, palette --------------------------------------------------


def test_config_file_errors_name_file_key_and_fix(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    for text, key in (('colour = "x"', "colour"), ("theme = 3", "theme"),
                      ('keys = "x"', "keys"), ('[keys]\n"load.toggle" = ""', "keys.load.toggle")):
        path.write_text(text)
        with pytest.raises(ConfigError) as err:
            load_config(path)
        assert f"{path}: {key}:" in str(err.value) and "fix:" in str(err.value)
    path.write_text('theme = "knobtop-light"\n[keys]\n"load.toggle" = "L, ctrl+l"\n')
    config = load_config(path)
    assert config.theme == "knobtop-light" and config.keys == {"load.toggle": "L,ctrl+l"}


def test_an_unknown_binding_id_is_refused_before_any_screen_opens(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[keys]\n"journal.noet" = "N"\n')
    run = subprocess.run([sys.executable, "-m", "knobtop.cli", "replay", str(RECORDED)],
                         capture_output=True, text=True, timeout=60,
                         env={"KNOBTOP_CONFIG": str(path), "PATH": "/usr/bin:/bin",
                              "HOME": str(tmp_path)})
    assert run.returncode == 2
    assert "keys.journal.noet" in run.stderr and "journal.note" in run.stderr
    assert "Traceback" not in run.stderr


def test_every_binding_has_a_unique_id_and_a_description() -> None:
    ids = binding_ids()
    assert {"app.quit", "app.help", "view.window", "app.screenshot", "load.toggle",
            "knob.undo", "journal.note", "replay.play", "recipe.abort",
            "compare.zoom"} <= set(ids)
    assert all(b.description for b in ids.values())


def test_every_key_of_the_live_screens_dialogs_can_be_remapped() -> None:
    """A config's [keys] is checked against the keymap's ids before any screen opens: the
    keys of quit's, revert's and the workload picker's dialogs were not among them, so
    remapping one (quit.keep = "K") was refused as "no key binding has this id"."""
    live = live_screen_bindings()
    assert {"quit.keep", "revert.all", "choice.cancel"} <= set(live)
    assert sorted(set(live) - set(binding_ids())) == []
    check_keymap({"quit.keep": "K", "revert.all": "A", "choice.cancel": "x"}, binding_ids(),
                 "config.toml")


async def test_remapped_key_works_and_the_help_screen_shows_it() -> None:
    app = live_app(UiConfig(keys={"view.window": "W"}))
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app._painted > 0)
        grid = app.live.query_one(GraphGrid)
        assert grid.window == 120
        await pilot.press("v")  # no longer bound
        assert grid.window == 120
        await pilot.press("W")
        assert grid.window == 300
        await pilot.press("question_mark")
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        table = app.screen.query_one(DataTable)
        rows = {table.get_row_at(i)[3]: table.get_row_at(i) for i in range(table.row_count)}
        assert rows["view.window"][1] == "W"
        assert rows["app.quit"][1] == "q" and rows["app.help"][2] == "Help"
        # A view without a session (a follower, a recording) is read-only: its help lists
        # no load or knob keys (issue 14 item 9; this line listed them before).
        assert "load.toggle" not in rows and "knob.edit" not in rows
        await pilot.press("escape")
        assert not isinstance(app.screen, HelpScreen)


async def test_palette_runs_any_action_by_name() -> None:
    app = live_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app._painted > 0)
        names = [name for name, _help, _cb in app.palette_actions()]
        for wanted in ("Help", "Window", "Screenshot", "Graph window: 15 min",
                       "Screenshot graph: sysbench TPS"):
            assert wanted in names, wanted
        # A view without a session is read-only (issue 14 item 9): the palette offers no
        # load or knob actions (this list had them before).
        assert not {"Load", "Undo", "Baseline", "Note", "Mark"} & set(names)
        system = [c.title for c in app.get_system_commands(app.live)]
        assert "Theme" in system  # Textual's own theme switcher lists the knobtop themes
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        app.screen.query_one(Input).value = "graph window: 15"
        commands = app.screen.query_one("CommandList")

        def first_is_the_window() -> bool:
            # The palette lists its discovery hits at once and the search's a little later:
            # Enter on the former would pick whatever is first there.
            return commands.option_count > 0 and str(  # type: ignore[attr-defined]
                commands.get_option_at_index(0).prompt  # type: ignore[attr-defined]
            ).startswith("Graph window: 15 min")

        await until(pilot, first_is_the_window)
        await pilot.press("enter")
        await until(pilot, lambda: app.live.query_one(GraphGrid).window == 900)


# -- graph window and time axis ---------------------------------------------------------------


def test_time_axis_labels() -> None:
    assert [span_label(s) for s in (0, -30, -90, -120, -300, -3600, -5400)] == [
        "now", "-30s", "-90s", "-2m", "-5m", "-1h", "-1h30m"]
    row = time_axis_text(40, 0, 120)
    assert row.startswith("-2m") and row.endswith("now") and "-1m" in row and len(row) == 40
    assert time_axis_text(5, 0, 120).strip() == "now"


async def test_window_key_cycles_and_every_graph_shows_its_axis() -> None:
    app = live_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app._painted > 0)
        graphs = list(app.live.query("#page-overview MetricGraph").results(MetricGraph))
        assert len(graphs) == 9
        assert all(widget_text(g)[-1].rstrip().endswith("now") for g in graphs)
        assert "-2m" in widget_text(graphs[0])[-1]
        seen = []
        for _ in range(5):
            await pilot.press("v")
            seen.append(app.live.query_one(GraphGrid).window)
        assert seen == [300, 900, 3600, 60, 120]
        await pilot.press("v")
        await until(pilot, lambda: "-5m" in widget_text(graphs[0])[-1])


async def test_graph_pages_by_key_and_palette() -> None:
    app = live_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app._painted > 0)
        status = app.live.query_one("#status")
        await pilot.press("2")
        grid = app.live.query_one(GraphGrid)
        assert grid.page == "innodb"
        flushed = app.live.query_one("#innodb-pages_flushed", MetricGraph)
        await until(pilot, lambda: widget_text(flushed) != [] and any(
            ch in "⠁⠂⠄⡀⠈⠐⠠⢀" or 0x2800 < ord(ch) <= 0x28FF
            for line in widget_text(flushed)[1:-1] for ch in line))
        assert widget_text(flushed)[0].startswith("Pages flushed")
        assert widget_text(status)[0].startswith("InnoDB")
        await pilot.press("3")  # this journal has no RocksDB: say so
        await until(pilot, lambda: any("RocksDB" in str(n.message)
                                       for n in app._notifications))
        await pilot.press("1")
        assert grid.page == "overview" and not widget_text(status)[0].startswith("InnoDB")
        names = [name for name, _h, _c in app.palette_actions()]
        assert {"Graphs: Overview", "Graphs: InnoDB", "Graphs: MyRocks"} <= set(names)


async def test_a_graph_page_is_mounted_when_first_shown_and_drawn_at_once() -> None:
    """Only the page on screen is mounted at start (each graph is a widget with its own
    message pump: bench row 5d); the first time a page is shown it is mounted and drawn
    in the same step, without waiting for the next paint, and never mounted twice."""
    from knobtop.ui.widgets.graph_grid import PAGES

    app = live_app()
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app._painted > 0)
        graphs = app.live.query(MetricGraph)
        assert {g.id for g in graphs} == {graph_id("overview", s.metric)
                                          for s in PAGES["overview"][1]}
        await pilot.press("2")
        await pilot.pause()
        innodb = {graph_id("innodb", s.metric) for s in PAGES["innodb"][1]}
        shown = [g for g in app.live.query(MetricGraph) if g.id in innodb]
        assert len(shown) == len(innodb)
        assert all(g._data_version > 0 for g in shown)  # each given its points already
        assert any(g._points for g in shown)
        await pilot.press("1", "2")
        assert len(app.live.query(MetricGraph)) == len(graphs) + len(innodb)


# -- screenshots ------------------------------------------------------------------------------


async def test_screenshot_of_the_screen_and_of_one_graph(tmp_path: Path) -> None:
    app = live_app()
    app.screenshot_dir = tmp_path
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app._painted > 0)
        await pilot.press("S")
        await until(pilot, lambda: any(tmp_path.glob("knobtop-2*.svg")))
        shot = next(tmp_path.glob("knobtop-2*.svg")).read_text()
        assert "<svg" in shot and "sysbench" in shot
        path = Path(app.screenshot_graph("load_tps"))
        svg = path.read_text()
        text = svg.replace("&#160;", " ")
        await pilot.press("2", "ctrl+g")  # every graph of the page on screen, one file each
        # Graph files are knobtop-METRIC-STAMP.svg; the screen's knobtop-STAMP.svg also
        # matched "knobtop-*-2*" from 20:00 on (its time starts with a 2).
        # The InnoDB page's 10 graphs (9 until the redo log's bytes/s joined them).
        await until(pilot, lambda: len(list(tmp_path.glob("knobtop-[a-z]*-2*.svg"))) == 1 + 10)
        assert any(tmp_path.glob("knobtop-pages_flushed-*.svg"))
        assert any(tmp_path.glob("knobtop-log_written-*.svg"))
        assert path.parent == tmp_path and "<svg" in svg
        assert "knobtop: sysbench TPS" in text  # the title ...
        assert text.count("now") == 1  # ... and one graph: one time axis


# -- every screen in every theme --------------------------------------------------------------


def screen_app(screen: str, theme: str, tmp_path: Path) -> Any:
    config = UiConfig(theme=theme)
    if screen == "live":
        return live_app(config)
    if screen == "replay":
        path = tmp_path / "r.knobtop.jsonl"
        path.write_bytes(RECORDED.read_bytes())
        change = next(e for e in JournalReader(path) if isinstance(e, Change))
        replay = replay_for(path)
        replay.index.ready.wait()
        replay.seek_to(change.t + 20)
        return ReplayApp(replay, config=config)
    a = load_journal(JOURNALS / "lab-read-write.knobtop.jsonl")
    b = load_journal(JOURNALS / "lab-point-select.knobtop.jsonl")
    return CompareApp(compare(a, b), config=config)


@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
@pytest.mark.parametrize("theme", THEMES)
@pytest.mark.parametrize("screen", ["live", "replay", "compare", "help"])
def test_snapshot(snap_compare, screen: str, theme: str,  # type: ignore[no-untyped-def]
                  size: tuple[int, int], tmp_path: Path) -> None:
    app = screen_app("live" if screen == "help" else screen, theme, tmp_path)

    async def settle(pilot: Pilot[int]) -> None:
        await pilot.pause()
        if screen in ("live", "help"):
            await until(pilot, lambda: pilot.app._painted > 0)
        elif screen == "replay":
            await until(pilot, lambda: pilot.app.frame is not None)
        if screen == "help":
            await pilot.press("question_mark")
            await until(pilot, lambda: isinstance(pilot.app.screen, HelpScreen))
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=settle)
