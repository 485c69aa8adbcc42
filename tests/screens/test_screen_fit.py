"""Long content is never cut off (issue 14 item 5), at 80x24 and 160x48: the recipe
results scroll to every arm, help scrolls and shows its last line, the journal pane shows
a change's new value, the knob panel shows more knobs and keeps its cursor on the same knob
through a resize, and the status bar fits the terminal with its journal name shortened in
the middle."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console
from textual.binding import Binding
from textual.widgets import DataTable, Static

from harness import paths as repo_paths
from harness.ui import until, widget_text
from knobtop.analysis.results import build, results_table
from knobtop.journal import Change, JournalReader
from knobtop.journal.events import StepResult
from knobtop.ui.app import KnobtopApp
from knobtop.ui.screens.help import HelpScreen
from knobtop.ui.widgets.journal_pane import JournalPane
from knobtop.ui.widgets.knob_panel import KnobPanel
from knobtop.ui.widgets.recipe_panel import RecipePanel
from knobtop.ui.widgets.status_bar import StatusBar, fit_journal, middle_ellipsis

RECORDED = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"
SIZES = [(80, 24), (160, 48)]
SIZE_IDS = ["80x24", "160x48"]
# The last arm's name is markup-shaped: it must show as written, never as bold "8M".
ARMS = ["256K", "2M", "[b]8M[/b]"]
LONG_JOURNAL = "lab-20261123-203301-a7f3.knobtop.jsonl"


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("KNOBTOP_CONFIG", raising=False)


def live_app() -> KnobtopApp:
    reader = JournalReader(RECORDED)
    return KnobtopApp(header=reader.header, events=list(reader))


def three_arm_results() -> object:
    steps = []
    for i, arm in enumerate(ARMS * 2):
        steps.append(StepResult(t=10.0 + i, wall=0.0, recipe="sort-buffer", index=i,
                                replicate=i // 3 + 1, arm=arm, threads=8, start=0.0, end=1.0,
                                tps=1000.0 + 10 * i, p95=2.5))
    return build("sort-buffer", list(ARMS), [8], steps, "end", "", len(steps))


def squeezed(lines: list[str]) -> str:
    """A widget's text with the wrapping undone (spaces and line ends dropped)."""
    return "".join("".join(lines).split())


# -- recipe results -----------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_recipe_results_scroll_to_every_arm(size: tuple[int, int]) -> None:
    app = live_app()
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.live.query_one(KnobPanel).row_count > 0)
        panel = app.live.query_one(RecipePanel)
        panel.show_results(three_arm_results())  # type: ignore[arg-type]
        await pilot.pause()
        seen = "\n".join(widget_text(panel))
        if size == (80, 24):
            # Taller than the panel: the last arm is below the edge until scrolled to.
            assert panel.max_scroll_y > 0 and ARMS[-1] not in seen, seen
        panel.focus()
        for _ in range(panel.max_scroll_y + 1):
            await pilot.press("down")
            seen += "\n".join(widget_text(panel))
        assert all(arm in seen for arm in ARMS), seen
        assert "8M" in "\n".join(widget_text(panel))  # the end shows the last arm
        await pilot.press("home")
        assert panel.scroll_y == 0 and ARMS[0] in "\n".join(widget_text(panel))
        if panel.max_scroll_y:
            await pilot.press("pagedown")
            assert panel.scroll_y > 0


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_the_results_summary_line_is_not_folded_at_the_tables_width(
        size: tuple[int, int]) -> None:
    """A table of one thread count is narrower than its run's summary line: the panel shows
    the line whole above the table (a table's own title folds at the table's width)."""
    steps = [StepResult(t=10.0 + i, wall=0.0, recipe="a-recipe-with-a-long-name", index=i,
                        replicate=i // 2 + 1, arm=arm, threads=8, start=0.0, end=1.0,
                        tps=1000.0 + 10 * i, p95=2.5) for i, arm in enumerate(["a", "b"] * 2)]
    results = build("a-recipe-with-a-long-name", ["a", "b"], [8], steps, "end", "", 4)
    line = "recipe a-recipe-with-a-long-name: 4/4 steps, finished"
    app = live_app()
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.live.query_one(KnobPanel).row_count > 0)
        panel = app.live.query_one(RecipePanel)
        panel.show_results(results)
        await pilot.pause()
        shown = widget_text(panel)
        assert any(line in row for row in shown), shown
        assert any("8 threads" in row for row in shown), shown


def test_results_table_prints_arm_names_as_written() -> None:
    console = Console(width=100, record=True, color_system=None)
    console.print(results_table(three_arm_results()))  # type: ignore[arg-type]
    text = console.export_text()
    assert ARMS[-1] in text, text


# -- help ---------------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_help_scrolls_and_shows_its_last_line(size: tuple[int, int]) -> None:
    app = live_app()
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.live.query_one(KnobPanel).row_count > 0)
        # Every key a lab session has (a journal-fed app offers fewer: the read-only ones).
        bindings = {b.id: b for cls in (KnobtopApp, KnobPanel) for klass in cls.__mro__
                    for b in getattr(klass, "BINDINGS", ()) if isinstance(b, Binding)}
        app.push_screen(HelpScreen(bindings.values(), app.config.keys, "knobtop: keys"))
        await until(pilot, lambda: isinstance(app.screen, HelpScreen))
        await pilot.pause()
        screen = app.screen
        hint = screen.query_one(".help-hint", Static)
        # The hint's last line is inside the screen (above the box's bottom border).
        assert hint.region.height >= 1
        assert hint.region.bottom <= size[1] - 1, (hint.region, size)
        assert squeezed(widget_text(hint)).endswith("Esccloses."), widget_text(hint)
        table = screen.query_one(DataTable)
        assert table.region.bottom <= hint.region.y
        last_id = str(table.get_row_at(table.row_count - 1)[-1])
        if size == (80, 24):  # more keys than rows: the last is below the edge at first
            assert table.max_scroll_y > 0
            assert not any(last_id in line for line in widget_text(table))
        for _ in range(table.row_count):
            await pilot.press("down")
        await pilot.pause()
        assert table.cursor_row == table.row_count - 1
        assert any(last_id in line for line in widget_text(table)), widget_text(table)
        await pilot.press("pageup", "pageup", "pageup", "up", "up", "up")
        await pilot.pause()
        first_id = str(table.get_row_at(0)[-1])
        assert any(first_id in line for line in widget_text(table))


# -- journal pane -------------------------------------------------------------------------


async def test_journal_pane_shows_each_new_value_and_rewraps_on_resize() -> None:
    changes = [e for e in JournalReader(RECORDED) if isinstance(e, Change)]
    assert len(changes) == 2
    app = live_app()
    async with app.run_test(size=(80, 24)) as pilot:
        pane = app.live.query_one(JournalPane)
        await until(pilot, lambda: len(pane.lines) >= 4)
        await pilot.pause()
        # Every line the pane holds (the first change is above its 7 visible rows) ...
        text = squeezed([line.text for line in pane.lines])
        for change in changes:
            assert f"{change.knob}={change.new}" in text, text
        # ... and the newest change's new value on screen, next to its name.
        shown = squeezed(widget_text(pane))
        assert f"{changes[-1].knob}={changes[-1].new}(was{changes[-1].old})" in shown, shown
        width = pane.scrollable_content_region.width
        assert all(len(line.rstrip()) <= width for line in widget_text(pane))
        assert pane.max_scroll_x == 0  # nothing to scroll sideways to
        await pilot.resize_terminal(160, 48)
        await until(pilot, lambda: pane.scrollable_content_region.width > width)
        await pilot.pause()
        # Written again at the wider width: each change on one line, old value after.
        lines = widget_text(pane)
        for change in changes:
            whole = f"{change.knob}={change.new} (was {change.old})"
            assert any(whole in line for line in lines), lines
        await pilot.resize_terminal(80, 24)
        await until(pilot, lambda: pane.scrollable_content_region.width == width)
        await pilot.pause()
        assert pane.max_scroll_x == 0
        assert all(len(line.rstrip()) <= width for line in widget_text(pane))


# -- knob panel ---------------------------------------------------------------------------


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_knob_panel_shows_more_knobs_and_keeps_the_cursor_through_a_resize(
    size: tuple[int, int]
) -> None:
    app = live_app()
    other = (160, 48) if size == (80, 24) else (80, 24)
    async with app.run_test(size=size) as pilot:
        panel = app.live.query_one(KnobPanel)
        await until(pilot, lambda: panel.row_count > 0)
        await pilot.pause()
        names = list(panel.values)
        shown = [line for line in widget_text(panel)
                 if any(n.removeprefix("innodb_") in line for n in names)]
        assert len(shown) >= (7 if size == (80, 24) else 17), shown
        assert panel.max_scroll_x == 0  # the columns fit: no sideways scrolling
        panel.focus()
        for _ in range(11):
            await pilot.press("down")
        knob = panel.highlighted_knob
        assert knob is not None and panel.cursor_row == 11

        def cursor_visible() -> bool:
            label = knob.removeprefix("innodb_") if panel.compact else knob
            return any(label in line and line.count(label) == 1
                       for line in widget_text(panel)[panel.cursor_row - int(panel.scroll_y):]
                       [:1] or [""]) or any(
                f" {label} " in f" {line} " for line in widget_text(panel))

        assert cursor_visible()
        for target in (other, size):
            await pilot.resize_terminal(*target)
            await until(pilot, lambda t=target: app.live.size == t)  # type: ignore[misc]
            await pilot.pause()
            assert panel.highlighted_knob == knob, (target, panel.highlighted_knob)
            assert cursor_visible(), (target, widget_text(panel))


# -- status bar ---------------------------------------------------------------------------


def test_middle_ellipsis_keeps_the_distinctive_end() -> None:
    assert middle_ellipsis("abcdef", 6) == "abcdef"
    assert middle_ellipsis("lab-20261123-203301-a7f3", 14) == "lab-…3301-a7f3"
    assert len(middle_ellipsis("x" * 50, 13)) == 13
    assert fit_journal(LONG_JOURNAL, len(LONG_JOURNAL)) == LONG_JOURNAL
    short = fit_journal(LONG_JOURNAL, 16)
    assert len(short) == 16 and short.endswith("03301-a7f3") and "…" in short


@pytest.mark.parametrize("size", SIZES, ids=SIZE_IDS)
async def test_status_bar_fits_with_separated_fields(size: tuple[int, int]) -> None:
    app = live_app()
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.board is not None and app.board.samples > 0)
        app._journal_name = LONG_JOURNAL
        app.paint(force=True)
        bar = app.live.query_one(StatusBar)
        await until(pilot, lambda: "a7f3" in widget_text(bar)[0])
        line = widget_text(bar)[0].rstrip()
        assert len(line) <= size[0] - 1, line
        assert app.board is not None
        assert f"stopped · {app.board.samples} samples" in line, line
        if size == (80, 24):
            assert "…" in line and line.endswith("3301-a7f3"), line
        else:
            assert line.endswith(LONG_JOURNAL), line
