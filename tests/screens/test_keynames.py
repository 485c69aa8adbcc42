"""Key names answered without Unicode's name tables (ui.keynames): the same answers as
Textual's, for every key knobtop's screens bind, and no lookup while a screen starts."""

from __future__ import annotations

import string
import sys
import unicodedata
from collections.abc import Iterator
from typing import Any

import pytest
import textual.keys

import knobtop.ui.app
import knobtop.ui.compare_app
import knobtop.ui.compare_many
import knobtop.ui.replay_app
from harness import paths as repo_paths
from harness.ui import until
from knobtop.cli import replay_for
from knobtop.ui import keynames

JOURNALS = repo_paths.DATA / "journals"


def _subclasses(cls: type) -> Iterator[type]:
    for sub in cls.__subclasses__():
        yield sub
        yield from _subclasses(sub)


def bound_keys() -> set[str]:
    """Every key a widget, screen or app class loaded by knobtop's screens binds."""
    from textual.dom import DOMNode

    assert knobtop.ui.app and knobtop.ui.replay_app  # their classes are the subclasses
    assert knobtop.ui.compare_app and knobtop.ui.compare_many
    keys: set[str] = set()
    for cls in {DOMNode, *_subclasses(DOMNode)}:
        keys.update(cls._merge_bindings().key_to_bindings)  # type: ignore[attr-defined]
    return keys


@pytest.mark.parametrize("name", sorted(keynames.KNOWN))
def test_each_written_answer_is_textuals(name: str) -> None:
    assert keynames.KNOWN[name] == (textual.keys.key_to_character(name),
                                    textual.keys.format_key(name))
    assert keynames.key_to_character(name) == textual.keys.key_to_character(name)
    assert keynames.format_key(name) == textual.keys.format_key(name)


def test_keys_of_one_character_and_with_modifiers_read_as_textual_reads_them() -> None:
    for char in string.printable.strip() + " ":
        assert keynames.format_key(char) == textual.keys.format_key(char), char
        for key in (char, f"ctrl+{char}", f"shift+{char}"):
            assert keynames.key_to_character(key) == textual.keys.key_to_character(key), key
    for key in ("ctrl+q", "ctrl+question_mark", "shift+tab"):
        assert keynames.key_to_character(key) is None


def test_every_key_knobtops_screens_bind_is_answered_here() -> None:
    names = {key.rpartition("+")[2] for key in bound_keys()}
    assert len(names) > 20  # the collection found the bindings
    assert {n for n in names if len(n) > 1} - set(keynames.KNOWN) == set()


def test_a_key_not_written_here_is_textuals_to_answer() -> None:
    for key in ("f12", "exclamation_mark", "solidus", "insert"):
        assert key not in keynames.KNOWN
        assert keynames.key_to_character(key) == textual.keys.key_to_character(key)
        assert keynames.format_key(key) == textual.keys.format_key(key)


async def test_a_screen_starts_and_takes_keys_without_a_unicode_lookup(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay screen (the live screen's footer, panes and bindings) looks nothing up,
    through its first frame, a page change and the help screen (the pilot, which types the
    keys, looks up their characters itself: those lookups are not the screen's)."""
    from knobtop.ui.replay_app import ReplayApp

    looked_up: list[Any] = []
    original = unicodedata.lookup

    def lookup(name: str) -> str:
        if sys._getframe(1).f_code.co_name != "_press_keys":  # the pilot's own typing
            looked_up.append(name)
        return original(name)

    monkeypatch.setattr(unicodedata, "lookup", lookup)
    textual.keys.key_to_character.cache_clear()
    textual.keys.format_key.cache_clear()
    replay = replay_for(JOURNALS / "lab-80s.knobtop.jsonl")
    app = ReplayApp(replay)
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, lambda: app.frame is not None)
            for key in ("right_square_bracket", "question_mark"):
                await pilot.press(key)
                await pilot.pause()
            await pilot.press("escape", "q")
    finally:
        replay.index.close()
    assert looked_up == []
