"""The one TOML reader and checker behind profiles, recipes, the config file and themes.

What every knobtop TOML file gets the same way: its bytes read (a directory, an unreadable
file, non-UTF-8 bytes), parsed (a syntax error names its line, column and the dotted key it is
in; nesting too deep and numbers with thousands of digits are named too), unknown keys with the
close match and the known ones, wrong types with what was found (a password's value is never
shown), all as ``FILE: KEY: problem`` + ``fix:`` errors.  ``Reader`` holds the typed accessors
every file kind's reader reads its keys with (a table, a string, a whole number or a number in
a range, a boolean, an array of tables, a required key); each file kind keeps only its own
rules: what keys exist, what values mean, and the example its fixes point to.

A typed decoder (msgspec, pydantic) could carry the structural part, but each knobtop message
has its own fix line per key and type (``write port = 3306 (a whole number, no quotes)``), so the
decoder's errors would need translating back key by key: more code for the same messages.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import math
import os
import re
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, TypeGuard, TypeVar

from knobtop.errors import KnobtopError

Table = Mapping[str, object]
ErrorFactory = Callable[[str | None, str, str], Exception]
Fix = str | Callable[[object], str]  # a fix line, or one made from the value found
T = TypeVar("T")

# What a TOML file nested past Python's recursion limit gets (tomllib reads arrays and
# inline tables recursively; a checker or a message may walk any nesting again).
TOO_DEEP = ("tables or arrays are nested too deeply to read (hundreds of levels)",
            "write the settings as flat tables and plain values")
_POS = re.compile(r"\(at line (\d+), column (\d+)\)")
_HEADER = re.compile(r"\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?\Z")


class FileError(KnobtopError, ValueError):
    """A file that cannot be used; ``file``, ``key`` (dotted), ``problem`` and ``fix`` say why.

    ``str()`` is ``"FILE: KEY: problem\\n  fix: ..."`` (``"FILE: problem ..."`` without a key).
    """

    def __init__(self, file: str, key: str | None, problem: str, fix: str) -> None:
        self.file, self.key, self.problem, self.fix = file, key, problem, fix
        where = f"{file}: {key}" if key else file
        super().__init__(f"{where}: {problem}\n  fix: {fix}")


def too_deep(error: ErrorFactory) -> Exception:
    """The error for a file nested too deeply, from ``error(key, problem, fix)``."""
    return error(None, *TOO_DEEP)


def read_text_file(path: Path, error: ErrorFactory, what: str, dir_fix: str) -> tuple[str, int]:
    """A TOML file's text and mode; ``error(key, problem, fix)`` for a directory, an
    unreadable file or non-UTF-8 bytes.  FileNotFoundError is left to the caller, whose
    fix depends on what it looked for."""
    try:
        with path.open("rb") as fh:
            mode = os.fstat(fh.fileno()).st_mode
            data = fh.read()
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise error(None, f"is a directory, not a {what}", dir_fix) from None
    except OSError as exc:
        raise error(None, f"cannot read: {exc.strerror}",
                    "check the path and its permissions") from None
    try:
        return data.decode("utf-8"), mode
    except UnicodeDecodeError as exc:
        raise error(None, f"not UTF-8 text (byte {exc.start})",
                    "save the file as UTF-8") from None


def syntax_key(text: str, line: int) -> str:
    """Best guess at the dotted key a TOML syntax error at ``line`` (1-based) belongs to."""
    lines = text.splitlines()
    table = ""
    for previous in lines[: max(line - 1, 0)]:
        m = _HEADER.match(previous)
        if m:
            table = m.group(1).replace(" ", "").replace('"', "")
    key = ""
    if 0 < line <= len(lines):
        m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*=", lines[line - 1])
        if m:
            key = m.group(1)
    dotted = ".".join(part for part in (table, key) if part)
    return dotted or "(top level)"


def parse(text: str, error: ErrorFactory, see: object) -> dict[str, Any]:
    """``text`` as TOML; a syntax error names its place, the key it is in, and ``see`` (the
    example or documentation to look at)."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        m = _POS.search(message)
        if m:
            where = f"line {m.group(1)}, column {m.group(2)}"
            key = syntax_key(text, int(m.group(1)))
        else:
            where = "end of file"
            key = syntax_key(text, len(text.splitlines()) + 1)
        raise error(
            key, f"TOML syntax error at {where}: {_POS.sub('', message).strip()}",
            f"correct the TOML at {where} (strings need quotes, each key once per table); "
            f"see {see}") from None
    except RecursionError:  # tomllib reads nested arrays and inline tables recursively
        raise too_deep(error) from None
    except ValueError:  # tomllib's int() of a number with more than 4300 digits
        raise error(None, "a number in the file has thousands of digits",
                    "write the value as a plain number") from None


def read_toml(path: Path, error: ErrorFactory) -> dict[str, Any]:
    """A TOML file's table (the config file, a theme); ``error(key, problem, fix)`` for what
    a person can fix: bytes that are not UTF-8, a syntax error, nesting too deep to read, a
    huge number, a file that cannot be read. FileNotFoundError is left to the caller (a
    missing file may be fine)."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise
    except IsADirectoryError:
        raise error(None, "is a directory, not a TOML file", "give a .toml file") from None
    except OSError as exc:
        raise error(None, f"cannot be read ({exc.strerror or exc})",
                    "check the file's permissions") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise error(None, f"not UTF-8 text (byte {exc.start})", "save the file as UTF-8") from None
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise error(None, f"not valid TOML ({exc})", "fix the syntax at that line") from None
    except RecursionError:
        raise too_deep(error) from None
    except ValueError:  # tomllib's int() of a number with more than 4300 digits
        raise error(None, "a number in the file has thousands of digits",
                    "write the value as a plain number") from None


def toml_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "table"
    if isinstance(value, list):
        return "array"
    if isinstance(value, _dt.date | _dt.time):
        return "datetime"
    return type(value).__name__


def found(value: object, *, secret: bool = False) -> str:
    """What was found, for a wrong-type message: the type, and the value when short and not
    a secret."""
    kind = toml_type(value)
    if secret or isinstance(value, dict | list):
        return kind
    shown = repr(value)
    return f"{kind} {shown}" if len(shown) <= 40 else kind


def close_hint(name: str, known: Sequence[str]) -> str:
    """``"did you mean 'x'? "`` for the close match of ``name`` among ``known``, or ""."""
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
    return f"did you mean {close[0]!r}? " if close else ""


def unknown_key_fix(key: str, known: Sequence[str]) -> str:
    """The fix for an unknown key in a TOML file: the close match, and the known keys."""
    hint = close_hint(key, known)
    if hint:
        return f"{hint}Known keys here: {', '.join(known)}"
    return f"remove it; known keys here: {', '.join(known)}"


def check_keys(table: Table, known: Sequence[str], prefix: str, error: ErrorFactory) -> None:
    """Raise ``error(dotted key, problem, fix)`` for the first key not in ``known``."""
    for key in table:
        if key not in known:
            dotted = f"{prefix}.{key}" if prefix else key
            raise error(dotted, "unknown key", unknown_key_fix(key, known))


def is_secret(dotted: str) -> bool:
    return dotted.endswith("password") or ".password." in dotted


# What a typed accessor accepts (a TOML boolean is never a number).
def is_str(value: object) -> TypeGuard[str]:
    return isinstance(value, str)


def is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_bool(value: object) -> TypeGuard[bool]:
    return isinstance(value, bool)


def is_table(value: object) -> TypeGuard[dict[str, Any]]:
    return isinstance(value, dict)


def plain(x: float) -> str:
    """A number as a person writes it: 5, not 5.0."""
    return str(int(x)) if x == int(x) else str(x)


def whole_fix(key: str, value: object, otherwise: str, *, decimal_point: bool = True) -> str:
    """The fix for a value that is not a whole number: ``"8"`` without its quotes (and, with
    ``decimal_point``, ``8.0`` without its point); else ``otherwise``."""
    if decimal_point and isinstance(value, float) and value.is_integer():
        return f"write {key} = {int(value)} (a whole number, no decimal point)"
    if isinstance(value, str) and value.strip().isdigit():
        return f"write {key} = {value.strip()} (a number, no quotes)"
    return otherwise


class Reader:
    """The checks every file kind's reader shares; a subclass names its error type and adds
    its own sections and value rules."""

    error_type: ClassVar[type[FileError]] = FileError

    def __init__(self, file: str, text: str = "") -> None:
        self.file = file
        self.text = text  # the file's text, for line numbers (key_line)

    def error(self, key: str | None, problem: str, fix: str) -> FileError:
        return self.error_type(self.file, key, problem, fix)

    def check_keys(self, table: Table, known: Sequence[str], prefix: str) -> None:
        check_keys(table, known, prefix, self.error)

    def wrong_type(self, dotted: str, expected: str, value: object, fix: str) -> FileError:
        shown = found(value, secret=is_secret(dotted))
        return self.error(dotted, f"expected {expected}, found {shown}", fix)

    @staticmethod
    def dotted(prefix: str, key: str) -> str:
        return f"{prefix}.{key}" if prefix else key

    # ---- typed accessors: None when the key is absent, else the value or the error

    def get(self, table: Table, key: str, prefix: str, expected: str,
            accept: Callable[[object], TypeGuard[T]], fix: Fix) -> T | None:
        """``table[key]`` when ``accept`` takes it; ``expected`` names what it takes, ``fix``
        (or ``fix(value)``) says how to write it."""
        if key not in table:
            return None
        value = table[key]
        if not accept(value):
            raise self.wrong_type(self.dotted(prefix, key), expected, value,
                                  fix(value) if callable(fix) else fix)
        return value

    def required(self, value: T | None, key: str, prefix: str, fix: str) -> T:
        """``value``, read by an accessor; ``missing KEY`` when the key was absent."""
        if value is None:
            raise self.error(self.dotted(prefix, key), f"missing {key}", fix)
        return value

    def table(self, doc: Table, key: str, prefix: str = "", fix: str | None = None
              ) -> Table | None:
        dotted = self.dotted(prefix, key)
        return self.get(doc, key, prefix, "a table", is_table,
                        fix or f"write it as a [{dotted}] table")

    def nonblank(self, table: Table, key: str, prefix: str, *, fix: Fix, empty_fix: str
             ) -> str | None:
        """A string that is not blank, as written."""
        value = self.get(table, key, prefix, "a string", is_str, fix)
        if value is not None and not value.strip():
            raise self.error(self.dotted(prefix, key), "is empty", empty_fix)
        return value

    def string(self, table: Table, key: str, prefix: str, example: str) -> str | None:
        """A string that is not blank, stripped; ``write KEY = EXAMPLE`` as the fix."""
        fix = f"write {key} = {example}"
        value = self.nonblank(table, key, prefix, fix=fix, empty_fix=fix)
        return None if value is None else value.strip()

    def req_string(self, table: Table, key: str, prefix: str, example: str) -> str:
        return self.required(self.string(table, key, prefix, example), key, prefix,
                             f"add {key} = {example}")

    def integer(
        self, table: Table, key: str, prefix: str, *, lo: int, hi: int, unit: str = ""
    ) -> int | None:
        """A whole number from ``lo`` to ``hi`` (``unit`` for the example in a fix)."""
        what = f" ({unit})" if unit else ""
        example = f"write {key} = {max(lo, min(hi, 10))}{what}, a whole number"
        value = self.get(table, key, prefix, "an integer", is_int,
                         lambda found: whole_fix(key, found, example))
        if value is not None and not lo <= value <= hi:
            raise self.error(self.dotted(prefix, key), f"{value} is out of range {lo}-{hi}",
                             f"use a value from {lo} to {hi}")
        return value

    def number(
        self, table: Table, key: str, prefix: str, *, lo: float, hi: float, lo_open: bool
    ) -> float | None:
        """A finite number up to ``hi``, above ``lo`` (``lo_open``) or from it."""
        value = self.get(table, key, prefix, "a number", is_number,
                         lambda found: f"write {key} = {found.strip()} (a number, no quotes)"
                         if isinstance(found, str) else f"write {key} = a number")
        if value is None:
            return None
        number = float(value)
        low_ok = number > lo if lo_open else number >= lo
        if not math.isfinite(number) or not low_ok or number > hi:
            side = "more than" if lo_open else "at least"
            raise self.error(self.dotted(prefix, key), f"{value} is out of range",
                             f"use a number {side} {plain(lo)} and at most {plain(hi)}")
        return number

    def boolean(self, table: Table, key: str, prefix: str, fix: str | None = None
                ) -> bool | None:
        return self.get(table, key, prefix, "a boolean", is_bool,
                        fix or f"write {key} = true or {key} = false (no quotes)")

    def tables(self, value: object, key: str, fix: str) -> Iterator[tuple[int, str, Table]]:
        """An array of tables ``[[key]]``: each one's index, dotted name and table, checked
        as it is reached (so an earlier table's errors come first)."""
        if not isinstance(value, list):
            raise self.wrong_type(key, f"an array of tables ([[{key}]])", value, fix)
        for i, item in enumerate(value):
            p = f"{key}[{i}]"
            if not isinstance(item, dict):
                raise self.wrong_type(p, "a table", item, fix)
            yield i, p, item

    def once(self, seen: dict[str, int], name: str, key: str, i: int) -> None:
        """``key[i].name`` not already used by an earlier ``[[key]]`` (``seen``: name ->
        index, which this adds to)."""
        if name in seen:
            raise self.error(f"{key}[{i}].name",
                             f"name {name!r} is already used by {key}[{seen[name]}]",
                             f"give each {key} a distinct name")
        seen[name] = i

    def line_of(self, key: str) -> str:
        """The text ``" (line N)"`` for the line where ``key`` is first written as a key or a
        quoted name in the file, or "" (for messages: ``FILE: KEY (line N): problem``)."""
        word = re.escape(key)
        pattern = re.compile(rf"(^|[\s{{,]){word}\s*=|[\"']{word}[\"']", re.IGNORECASE)
        for number, line in enumerate(self.text.splitlines(), start=1):
            if pattern.search(line.split("#", 1)[0]):
                return f" (line {number})"
        return ""


__all__ = [
    "TOO_DEEP",
    "ErrorFactory",
    "FileError",
    "Fix",
    "Reader",
    "Table",
    "check_keys",
    "close_hint",
    "found",
    "is_bool",
    "is_int",
    "is_number",
    "is_secret",
    "is_str",
    "is_table",
    "parse",
    "plain",
    "read_text_file",
    "read_toml",
    "syntax_key",
    "toml_type",
    "too_deep",
    "unknown_key_fix",
    "whole_fix",
]
