"""The one TOML reader and checker behind profiles, recipes, the config file and themes.

What every knobtop TOML file gets the same way: its bytes read (a directory, an unreadable
file, non-UTF-8 bytes), parsed (a syntax error names its line, column and the dotted key it is
in; nesting too deep and numbers with thousands of digits are named too), unknown keys with the
close match and the known ones, wrong types with what was found (a password's value is never
shown), all as ``FILE: KEY: problem`` + ``fix:`` errors.  Each file kind keeps only its own
rules: what keys exist, what values mean, and the example its fixes point to.

A typed decoder (msgspec, pydantic) could carry the structural part, but each knobtop message
has its own fix line per key and type (``write port = 3306 (a whole number, no quotes)``), so the
decoder's errors would need translating back key by key: more code for the same messages.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import os
import re
import tomllib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from knobtop.errors import KnobtopError

Table = Mapping[str, object]
ErrorFactory = Callable[[str | None, str, str], Exception]

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


def unknown_key_fix(key: str, known: Sequence[str]) -> str:
    """The fix for an unknown key in a TOML file: the close match, and the known keys."""
    close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
    if close:
        return f"did you mean {close[0]!r}? Known keys here: {', '.join(known)}"
    return f"remove it; known keys here: {', '.join(known)}"


def check_keys(table: Table, known: Sequence[str], prefix: str, error: ErrorFactory) -> None:
    """Raise ``error(dotted key, problem, fix)`` for the first key not in ``known``."""
    for key in table:
        if key not in known:
            dotted = f"{prefix}.{key}" if prefix else key
            raise error(dotted, "unknown key", unknown_key_fix(key, known))


def is_secret(dotted: str) -> bool:
    return dotted.endswith("password") or ".password." in dotted


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
    "Reader",
    "Table",
    "check_keys",
    "found",
    "is_secret",
    "parse",
    "read_text_file",
    "read_toml",
    "syntax_key",
    "toml_type",
    "too_deep",
    "unknown_key_fix",
]
