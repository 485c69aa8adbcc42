"""Key names answered without reading Unicode's name tables (the live screen's footprint).

Textual asks two things of a binding's key: the character it names (``key_to_character``,
for the bindings of every widget above the focused one, so that a text field keeps its
printable keys) and how the footer shows it (``format_key``).  It answers both with
``unicodedata.lookup``, and a lookup reads Unicode's name tables: the 19 lookups of the
live screen's first frame made 0.9 MB of the process's memory (pages of the unicodedata
module's file).

``answer_known_keys()`` has Textual take the answers for the keys knobtop binds from
:data:`KNOWN` (Textual's own answers, written out; tests/screens/test_keynames.py checks each
against Textual's functions and that every key knobtop's screens bind is here).  A key
of one character needs no lookup (no Unicode name is one letter long).  Any other key, a
remapped one from the config say, is Textual's to answer, as before.
"""

from __future__ import annotations

import textual.app
import textual.keys
import textual.screen

#: key name -> (the character it names, or None; what the footer shows)
KNOWN: dict[str, tuple[str | None, str]] = {
    "backspace": ("\x08", "⌫"),
    "comma": (",", ","),
    "delete": ("\x7f", "del"),
    "down": (None, "↓"),
    "end": (None, "end"),
    "enter": (None, "⏎"),
    "equals_sign": ("=", "="),
    "escape": ("\x1b", "esc"),
    "f1": (None, "f1"),
    "f6": (None, "f6"),
    "f7": (None, "f7"),
    "full_stop": (".", "."),
    "home": (None, "home"),
    "left": (None, "←"),
    "left_square_bracket": ("[", "["),
    "minus": (None, "-"),
    "pagedown": (None, "pgdn"),
    "pageup": (None, "pgup"),
    "plus": (None, "+"),
    "question_mark": ("?", "?"),
    "right": (None, "→"),
    "right_square_bracket": ("]", "]"),
    "space": (" ", "space"),
    "tab": ("\t", "tab"),
    "up": (None, "↑"),
}

_installed = False


def key_to_character(key: str) -> str | None:
    """``textual.keys.key_to_character`` for the keys of :data:`KNOWN` and of one
    character; Textual's own for the rest."""
    _, modifier, name = key.rpartition("+")
    if modifier:
        return None  # a key with a modifier is never a printable one (Textual's rule)
    if len(name) == 1:
        return name
    known = KNOWN.get(name)
    return known[0] if known is not None else textual.keys.key_to_character(key)


def format_key(key: str) -> str:
    """``textual.keys.format_key`` for the keys of :data:`KNOWN` and of one character
    (which Textual shows as they are, bar its display aliases); Textual's own for the rest."""
    known = KNOWN.get(key)
    if known is not None:
        return known[1]
    if len(key) == 1 and key not in textual.keys.KEY_DISPLAY_ALIASES:
        return key
    return textual.keys.format_key(key)


def answer_known_keys() -> None:
    """Point Textual's two callers at these functions, once per process (idempotent)."""
    global _installed
    if _installed:
        return
    textual.screen.key_to_character = key_to_character  # type: ignore[attr-defined,assignment]
    textual.app.format_key = format_key  # type: ignore[attr-defined,assignment]
    _installed = True


__all__ = ["KNOWN", "answer_known_keys", "format_key", "key_to_character"]
