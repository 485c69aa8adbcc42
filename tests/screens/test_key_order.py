"""Keys that arrive in one burst are applied in the order they were typed: in the knob
dialog (where a wrong order applies a wrong value to the server), the note dialog and the
command palette. The burst is posted to the app in one go, as Textual's driver does with
one read of a tmux ``send-keys`` or a paste; tests/screens/test_tmux.py types it in real tmux."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from textual import events
from textual.app import App, ComposeResult
from textual.command import CommandInput, CommandPalette
from textual.widgets import Input

from conftest import show_global
from harness.served import served_session
from harness.ui import until
from knobtop.journal import Change, JournalReader, Note
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.session.core import SessionConfig
from knobtop.ui.app import KnobtopApp
from knobtop.ui.base import ScreenApp
from knobtop.ui.screens.confirm import ConfirmScreen
from knobtop.ui.screens.prompt import PromptScreen
from knobtop.ui.widgets.knob_panel import KnobPanel

KEYS = {"BSpace": ("backspace", None), " ": ("space", " ")}


def burst(app: App[object], *keys: str) -> None:
    """Post every key at once, before any is handled (one read of the terminal)."""
    for key in keys:
        name, char = KEYS.get(key, (key, key if len(key) == 1 else None))
        if key == "Enter":
            name, char = "enter", "\r"
        app.post_message(events.Key(name, char))


class OneField(ScreenApp):
    """A field alone on a knobtop screen (the key queue is every knobtop app's)."""

    def compose(self) -> ComposeResult:
        yield Input(value="200", id="field")


async def test_a_bare_field_keeps_the_order_of_a_burst() -> None:
    app = OneField()
    async with app.run_test() as pilot:
        field = app.query_one(Input)
        field.focus()
        await pilot.pause()
        field.cursor_position = len(field.value)  # no selection: BSpace deletes the last 0
        burst(app, "BSpace", "1", "0", "left", "left", "9", "end", "0")
        await until(pilot, lambda: field.value == "209100", timeout=5)


class Dialogs(ScreenApp):
    """n opens a prompt at once, b a confirmation after a slow read (as q and b do live),
    m writes down that it was pressed: what each got, in order."""

    BINDINGS = [("n", "note"), ("b", "ask"), ("m", "mark")]

    def __init__(self) -> None:
        super().__init__()
        self.got: list[str] = []

    def action_note(self) -> None:
        self.push_screen(PromptScreen("note"), lambda text: self.got.append(f"note {text}"))

    def action_mark(self) -> None:
        self.got.append("mark")

    def action_ask(self) -> None:
        async def ask() -> None:
            await asyncio.sleep(0.3)  # the server being read before the dialog can open
            self.push_screen(ConfirmScreen("revert?", "details"),
                             lambda yes: self.got.append(f"revert {yes}"))

        self.key_queue.hold_for(self.run_worker(ask()))


async def test_keys_typed_behind_a_key_that_opens_a_dialog_go_to_that_dialog() -> None:
    app = Dialogs()
    async with app.run_test() as pilot:
        burst(app, "n", "h", "i", "Enter", "m", "b", "y", "m")
        await until(pilot, lambda: len(app.got) == 4, timeout=10)
        assert app.got == ["note hi", "mark", "revert True", "mark"]


@pytest.mark.integration
@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
async def test_knob_dialog_applies_the_typed_burst_and_shows_what_it_will_apply(
    mariadb_info: ConnectionInfo, tmp_path: Path, size: tuple[int, int]
) -> None:
    journal = tmp_path / "keys.knobtop.jsonl"
    before = await show_global(mariadb_info, "innodb_io_capacity")
    config = SessionConfig(profile="test", connection=mariadb_info, journal_path=journal)
    with served_session(config) as session:
        app = KnobtopApp(session)
        try:
            async with app.run_test(size=size) as pilot:
                panel = app.live.query_one(KnobPanel)
                await until(pilot, lambda: "innodb_io_capacity" in panel.values)
                while panel.highlighted_knob != "innodb_io_capacity":
                    await pilot.press("down")
                await pilot.press("enter")
                assert isinstance(app.screen, PromptScreen)
                field = app.screen.query_one(Input)
                preview = app.screen.query_one("#prompt-preview")
                # The field opens with the current value selected, as the user saw it:
                # BSpace clears the selection, then 1000. Out of order it would be 100.
                assert field.selection.end - field.selection.start == len(field.value) > 0
                burst(app, "BSpace", "1", "0", "0", "0")
                await until(pilot, lambda: field.value == "1000", timeout=5)
                # The keys go in one at a time (ui/keyqueue.py): the last one's preview follows.
                await until(pilot, lambda: "= 1000" in str(preview.render()), timeout=5)
                assert "applies innodb_io_capacity = 1000" in str(preview.render())
                field.value = "99"
                await pilot.pause()
                assert "out of range" in str(preview.render())  # said before Enter, not after
                field.value = ""
                await pilot.pause()
                field.value = "1000"
                await pilot.press("enter")
                await until(pilot, lambda: any(m.kind == "change" for m in app.board.markers))
                await pilot.press("q")
            assert await show_global(mariadb_info, "innodb_io_capacity") == "1000"
            changes = [e for e in JournalReader(journal) if isinstance(e, Change)]
            assert [(c.knob, c.new, c.result) for c in changes] == [
                ("innodb_io_capacity", "1000", "ok")]
        finally:
            link = ServerLink(mariadb_info)
            await link.connect()
            try:
                await link.query("SET GLOBAL innodb_io_capacity = %s", (int(before),))
            finally:
                await link.close()


@pytest.mark.integration
@pytest.mark.parametrize("size", [(80, 24), (160, 48)], ids=["80x24", "160x48"])
async def test_note_dialog_and_palette_keep_the_order(
    mariadb_info: ConnectionInfo, tmp_path: Path, size: tuple[int, int]
) -> None:
    journal = tmp_path / "note.knobtop.jsonl"
    config = SessionConfig(profile="test", connection=mariadb_info, journal_path=journal)
    with served_session(config) as session:
        app = KnobtopApp(session)
        async with app.run_test(size=size) as pilot:
            await until(pilot, lambda: app.board is not None and app.board.samples >= 1)
            await pilot.press("n")
            assert isinstance(app.screen, PromptScreen)
            burst(app, "a", "b", "BSpace", "c", " ", "x", "y", "BSpace", "BSpace", "z", "Enter")
            await until(pilot, lambda: not isinstance(app.screen, PromptScreen), timeout=5)
            await pilot.press("ctrl+p")
            await until(pilot, lambda: isinstance(app.screen, CommandPalette), timeout=5)
            palette_field = app.screen.query_one(CommandInput)
            burst(app, "s", "o", "r", "x", "BSpace", "t", "_", "b")
            await until(pilot, lambda: palette_field.value == "sort_b", timeout=5)
            await pilot.press("escape")
            await pilot.press("q")
        assert [e.text for e in JournalReader(journal) if isinstance(e, Note)] == ["ac z"]
