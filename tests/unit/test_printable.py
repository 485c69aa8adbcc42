"""The one sanitizer for text from outside (issue 36): every character that is not printable
is shown as its escape, printable text comes back as it is, and the JSON line check walks
only lines that can hold such a character."""

from __future__ import annotations

import json

import orjson
import pytest

from knobtop.printable import printable, printable_deep, printable_json


@pytest.mark.parametrize(("raw", "shown"), [
    ("A\x1b]2;PWNED\x07", "A\\x1b]2;PWNED\\x07"),  # OSC: a terminal's title
    ("\x1b[2J\x1b[31mred", "\\x1b[2J\\x1b[31mred"),  # CSI
    ("\x9b31m C1", "\\x9b31m C1"),  # a C1 CSI
    ("\x90q\x9c", "\\x90q\\x9c"),  # C1 DCS ... ST
    ("del\x7f", "del\\x7f"),
    ("nul\x00bs\x08cr\r", "nul\\x00bs\\x08cr\\r"),
    ("\u202eevil\u202c", "\\u202eevil\\u202c"),  # bidi override
    ("zero\u200bwidth", "zero\\u200bwidth"),
    ("line\u2028para\u2029", "line\\u2028para\\u2029"),
    ("tag\U000e0041", "tag\\U000e0041"),
    ("\ud800 lone", "\\ud800 lone"),  # a lone surrogate (never encodable)
])
def test_unprintable_characters_are_shown_as_escapes(raw: str, shown: str) -> None:
    assert printable(raw) == shown
    assert printable(shown) == shown  # a second pass changes nothing


def test_printable_text_newlines_and_tabs_stay() -> None:
    for text in ("plain", "é µs — 日本語 ✓", "two\nlines\tand a tab", ""):
        assert printable(text) is text
    assert printable("a\nb\tc", newlines=False) == "a\\nb\\tc"


def test_deep_values_keys_too() -> None:
    value = {"k\x1b": ["\x9b", 1, 2.5, None, True, {"x": "\x07"}], "n": ("\x1b",)}
    assert printable_deep(value) == {
        "k\\x1b": ["\\x9b", 1, 2.5, None, True, {"x": "\\x07"}], "n": ("\\x1b",)}


@pytest.mark.parametrize("text", [
    "\x1b]2;x\x07", "\x9b", "\x7f", "\u202e", "\x0c", "\x08", "\r", "é\x85",
])
@pytest.mark.parametrize("dump", [orjson.dumps, lambda v: json.dumps(v).encode()])
def test_every_json_form_of_an_unprintable_character_is_walked(text: str, dump: object) -> None:
    """orjson writes control characters as \\u00XX (\\b \\f \\r), C1 and bidi as UTF-8;
    json.dumps (ensure_ascii) writes every non-ASCII one as \\uXXXX: each is caught."""
    value = {"note": text}
    line = dump(value)  # type: ignore[operator]
    assert printable_json(line, orjson.loads(line)) == {"note": printable(text)}


def test_a_clean_line_is_not_walked() -> None:
    value = {"ev": "sample", "v": [1, 2, 3], "text": "plain"}
    line = orjson.dumps(value)
    assert printable_json(line, value) is value
