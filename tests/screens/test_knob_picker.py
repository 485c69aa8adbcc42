"""The command-palette knob picker over the catalog of a real mariadbd."""

from __future__ import annotations

import pytest
from textual.app import App, ComposeResult
from textual.command import Command, CommandList, CommandPalette
from textual.pilot import Pilot
from textual.widgets import Static

from harness.ui import until
from knobtop.server.catalog import Catalog
from knobtop.ui.knob_picker import KnobProvider, describe

pytestmark = pytest.mark.integration


class PickerApp(App[None]):
    COMMANDS = App.COMMANDS | {KnobProvider}

    def __init__(self, catalog: Catalog | None) -> None:
        super().__init__()
        self.knob_catalog = catalog
        self.edited: list[str] = []

    def compose(self) -> ComposeResult:
        yield Static("knobs")

    def edit_knob(self, name: str) -> None:
        self.edited.append(name)




def listed(app: App[None]) -> list[str]:
    """The hit names the open palette shows, top first."""
    if not palette_ready(app):
        return []
    options = app.screen.query_one(CommandList).options
    return [str(o.hit.text) for o in options if isinstance(o, Command)]


def searching(app: App[None]) -> bool:
    """Is the command palette's search still gathering hits?"""
    group = CommandPalette._GATHER_COMMANDS_GROUP
    return any(w.group == group and not w.is_finished for w in app.workers)


def palette_ready(app: App[None]) -> bool:
    return isinstance(app.screen, CommandPalette) and bool(app.screen.query(CommandList))


def first_help(app: App[None]) -> str:
    option = app.screen.query_one(CommandList).get_option_at_index(0)
    return str(option.prompt)


async def open_and_type(app: PickerApp, pilot: Pilot[None], text: str) -> None:
    app.action_command_palette()
    await until(pilot, lambda: palette_ready(app))
    await pilot.press(*["space" if c == " " else c for c in text])


async def test_typing_flush_log_and_enter_edits_the_knob(catalog: Catalog) -> None:
    app = PickerApp(catalog)
    async with app.run_test() as pilot:
        await open_and_type(app, pilot, "flush log")
        await until(pilot, lambda: listed(app)[:1] == ["innodb_flush_log_at_trx_commit"])
        assert "innodb_flush_log_at_timeout" in listed(app)
        await pilot.press("enter")
        await until(pilot, lambda: app.edited == ["innodb_flush_log_at_trx_commit"])
        assert not isinstance(app.screen, CommandPalette)


async def test_hits_show_value_default_range_and_mode(catalog: Catalog) -> None:
    app = PickerApp(catalog)
    async with app.run_test(size=(160, 40)) as pilot:
        await open_and_type(app, pilot, "bpsize")
        await until(pilot, lambda: listed(app)[:1] == ["innodb_buffer_pool_size"])
        shown = first_help(app)
        facts = catalog.get("innodb_buffer_pool_size")
        # Sizes read as a person reads them (47a47e8): the server's 134217728 is 128M.
        assert int(facts.value) % (1 << 20) == 0
        assert f"now {int(facts.value) >> 20}M" in shown
        assert "default 128M" in shown
        assert "≥ 2M" in shown  # the server's minimum, 2097152
        assert "dynamic" in shown
        # The palette re-lists its hits (the highlight starting again) until its search
        # worker ends: wait for that, then step down to the second hit and Enter.
        await until(pilot, lambda: not searching(app))
        commands = app.screen.query_one(CommandList)
        second = listed(app)[1]
        for _ in range(3):
            if commands.highlighted == 1:
                break
            await pilot.press("down")
        assert commands.highlighted == 1 and listed(app)[1] == second
        await pilot.press("enter")
        await until(pilot, lambda: len(app.edited) == 1)
        assert app.edited[0] == second != "innodb_buffer_pool_size"  # one of its kin
        assert "size" in app.edited[0]


async def test_absent_and_static_knobs_say_so(catalog: Catalog) -> None:
    absent = describe(catalog.get("innodb_thread_concurrency"))
    assert absent == "absent — removed in 10.6.0 (ignored since 10.5.5)"
    static = describe(catalog.get("innodb_doublewrite"))
    assert "static (config + restart)" in static and "one of OFF/ON" in static
    io = catalog.get("innodb_io_capacity")
    assert describe(io).startswith(f"now {io.value} · default 200 · 100 to 4G · dynamic")

    app = PickerApp(catalog)
    async with app.run_test(size=(160, 40)) as pilot:
        await open_and_type(app, pilot, "thread conc")
        await until(pilot, lambda: listed(app)[:1] == ["innodb_thread_concurrency"])
        assert "removed in 10.6.0" in first_help(app)


async def test_empty_query_lists_the_seed_knobs(catalog: Catalog) -> None:
    app = PickerApp(catalog)
    async with app.run_test(size=(160, 48)) as pilot:
        app.action_command_palette()
        await until(pilot, lambda: palette_ready(app))
        await until(pilot, lambda: "innodb_io_capacity" in listed(app))
        assert "innodb_doublewrite" in listed(app)


async def test_without_a_catalog_the_picker_offers_nothing() -> None:
    app = PickerApp(None)
    async with app.run_test() as pilot:
        await open_and_type(app, pilot, "quit")
        await until(pilot, lambda: "Quit" in listed(app))  # the system commands still answer
        await pilot.press(*["backspace"] * 4, *"innodb")
        await until(pilot, lambda: no_matches(app))
        assert listed(app) == []


def no_matches(app: App[None]) -> bool:
    """The palette finished a search and says "No matches found"."""
    if not palette_ready(app):
        return False
    commands = app.screen.query_one(CommandList)
    return any(commands.get_option_at_index(i).id == "--no-matches"
               for i in range(commands.option_count))


async def test_knob_changes_do_not_pile_up_in_the_panels_render_cache() -> None:
    """A day of knob changes used to fill DataTable's 10,000-cell cache with dead entries
    (most of the live screen's memory growth in bench/memory_growth.py)."""
    from knobtop.ui.widgets.knob_panel import KnobPanel

    class PanelApp(App[None]):
        def compose(self) -> ComposeResult:
            yield KnobPanel()

    knobs = [f"innodb_knob_{i}" for i in range(20)]
    app = PanelApp()
    async with app.run_test(size=(80, 30)) as pilot:
        panel = app.query_one(KnobPanel)
        panel.set_knobs(dict.fromkeys(knobs, "1"), {})
        await pilot.pause()
        for n in range(200):
            panel.set_value(knobs[n % len(knobs)], str(n))
            await pilot.pause()
        shown = panel.get_row("innodb_knob_19")[1]
        cached = len(panel._cell_render_cache)
    assert str(shown) == "199"  # a plain str or a rich Text cell
    assert 0 < cached <= 2 * len(knobs) * len(panel.columns)
