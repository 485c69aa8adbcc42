"""The one sanitizer for text from outside knobtop (servers, journals, files): every character
that is not printable is shown as a visible escape, so no such text can drive the terminal.

A server's processlist, its error log or a journal from someone else may hold terminal
control sequences (``ESC ] 2 ; title BEL`` renames a tmux pane, CSI moves the cursor, a C1
``\\x9b`` is a CSI on some terminals, ``U+202E`` turns the text after it around).  Rich keeps
ESC as it is, so the readers (the journal decoders, the incident reader, the recorder) pass
every string through :func:`printable` once, and nothing downstream has to remember it.
This module imports nothing of knobtop, so every part may use it.
"""

from __future__ import annotations

import re

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up time
if TYPE_CHECKING:
    from typing import Any

# Kept as they are where text may span lines (a note, a log line); escaped with newlines=False.
_KEPT = str.maketrans("", "", "\n\t")
# A JSON line can hold a character printable() escapes only as a JSON escape (\u00XX, \b, \f,
# \r, or \uXXXX for any character), as DEL or as a non-ASCII UTF-8 byte: a line without one
# of these needs no walk.  An escaped backslash before a b (JSON's \\b) matches too: a
# walk that finds nothing, never a character let through.
_SUSPECT_JSON = re.compile(rb"\\[ubfr]|[\x7f-\xff]")


def _escape(char: str) -> str:
    return repr(char)[1:-1]  # \x1b, \x9b, \u202e, \U000e0001, \r, \n


def printable(text: str, *, newlines: bool = True) -> str:
    """``text`` with every character that is not printable shown as its escape: C0 controls
    (ESC as ``\\x1b``), DEL, C1 controls (``\\x9b``), bidi overrides and zero-width or
    separator characters (``\\u202e``, ``\\u2028``).  ``\\n`` and ``\\t`` stay as they are
    unless ``newlines`` is False (one line of a log).  Printable text comes back as it is
    (the same object), so a second pass changes nothing."""
    if text.isprintable():
        return text
    if newlines and text.translate(_KEPT).isprintable():
        return text
    return "".join(c if c.isprintable() or (newlines and c in "\n\t") else _escape(c)
                   for c in text)


def printable_deep(value: Any) -> Any:
    """A JSON-like value (dicts, lists, strings, numbers) with every string in it, dict keys
    too, passed through :func:`printable`; other values as they are."""
    kind = type(value)
    if kind is str:
        return printable(value)
    if kind is dict:
        return {printable(k) if type(k) is str else k:
                v if type(v) in _SCALARS else printable_deep(v) for k, v in value.items()}
    if kind is list:  # a sample's counters: numbers, passed over without a call each
        return [v if type(v) in _SCALARS else printable_deep(v) for v in value]
    if kind is tuple:
        return tuple(v if type(v) in _SCALARS else printable_deep(v) for v in value)
    return value


_SCALARS = frozenset({int, float, bool, type(None)})


def printable_json(line: bytes, value: Any) -> Any:
    """``value`` decoded from the JSON ``line``, made printable.  The line's bytes are
    checked first: a line that cannot hold such a character, nearly every line of a
    journal, costs no walk.  The first test is three byte scans in C (2.5 ms for the 2 MB of
    a 1-hour journal, where the regex alone takes 18 ms, as long as decoding the JSON); the
    regex then looks only at lines with a backslash, DEL or a non-ASCII byte."""
    if line.isascii() and b"\\" not in line and b"\x7f" not in line:
        return value
    return printable_deep(value) if _SUSPECT_JSON.search(line) else value


__all__ = ["printable", "printable_deep", "printable_json"]
