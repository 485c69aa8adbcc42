"""Journal reader: header, events in order, a torn last line tolerated, bad lines named."""

from __future__ import annotations

import operator
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import orjson

from knobtop.errors import KnobtopError
from knobtop.journal.events import (
    Event,
    EventDecodeError,
    Header,
    JsonDict,
    Unknown,
    event_from_dict,
    header_from_dict,
)
from knobtop.printable import printable, printable_json


class Hasher(Protocol):
    """What quick() uses of a hashlib object."""

    def update(self, data: bytes, /) -> None: ...


class JournalFormatError(KnobtopError, ValueError):
    """A line that is not a journal event; the message names the file and line."""

    def __init__(self, path: Path, line_no: int, reason: str) -> None:
        # The reason may quote the line, and a file's name is someone else's text too.
        super().__init__(printable(f"{path}:{line_no}: {reason}", newlines=False))
        self.path = path
        self.line_no = line_no
        self.reason = printable(reason, newlines=False)


@dataclass
class ReadStats:
    events: int = 0
    torn_tail: bool = False
    unknown_types: int = 0


class JournalReader:
    """Reads a journal file once, line by line, without holding it in memory.

    A last line without its newline is a write that was cut off (the writer
    was killed mid-line); it is skipped and ``stats.torn_tail`` is set.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.stats = ReadStats()
        self._header: Header | None = None
        # quick(): bytes read, where the last line starts, bytes in whole lines, their count
        self.consumed = self.line_start = self.whole = 0
        self.lines = 1

    @property
    def header(self) -> Header:
        if self._header is None:
            with self.path.open("rb") as fh:
                first = fh.readline()
            self._header = self._decode_header(first)
        return self._header

    def _decode_header(self, line: bytes) -> Header:
        if not line:
            raise JournalFormatError(self.path, 1, "the file is empty, not a knobtop journal")
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError:
            raise JournalFormatError(
                self.path, 1, "the first line is not JSON: this is not a knobtop journal"
            ) from None
        if not isinstance(data, dict):
            raise JournalFormatError(self.path, 1, "the first line is not a journal header")
        try:
            return header_from_dict(printable_json(line, data))
        except EventDecodeError as exc:
            raise JournalFormatError(self.path, 1, str(exc)) from None

    def events(self) -> Iterator[Event]:
        with self.path.open("rb") as fh:
            self._header = self._decode_header(fh.readline())
            line_no = 1
            for line in fh:
                line_no += 1
                if not line.endswith(b"\n"):
                    # Only the last line can lack its newline: a cut-off write.
                    self.stats.torn_tail = True
                    return
                if line.strip() == b"":
                    continue
                event = self.decode_line(line, line_no)
                self.stats.events += 1
                if isinstance(event, Unknown):
                    self.stats.unknown_types += 1
                yield event

    def decode_line(self, line: bytes, line_no: int) -> Event:
        """One line of the journal as an event (JournalFormatError names ``line_no``)."""
        return self._event(self._json(line, line_no), line_no)

    def _json(self, line: bytes, line_no: int) -> JsonDict:
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise JournalFormatError(self.path, line_no, f"not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise JournalFormatError(self.path, line_no, "not a JSON object")
        return printable_json(line, data)  # type: ignore[no-any-return]

    def _event(self, data: JsonDict, line_no: int) -> Event:
        try:
            return event_from_dict(data)
        except EventDecodeError as exc:
            raise JournalFormatError(self.path, line_no, str(exc)) from None

    def quick(self, start: tuple[int, int] | None = None, hasher: Hasher | None = None
              ) -> Generator[tuple[int, Event | JsonDict], None, None]:
        """(line number, event) as ``events()`` reads them, except that a sample or load
        line comes as its JSON object, not built into an event, once every field of it has
        passed the checks ``event_from_dict`` makes (``sample_ok``/``load_ok``): a report
        of a day's journal reads 172,800 of them.  Any other line, and one that fails a
        check, goes through ``event_from_dict`` as ever, so a wrong one is refused with
        the same message naming the file and line.

        ``start``: (offset, number of the line before it) to begin at a line further on
        (the header is read all the same).  ``hasher`` (a hashlib object) is fed every whole
        line read, the header's too when reading from the start: what a kept fold covers
        is exactly the bytes folded, however the file grows meanwhile.  Once read to the
        end, ``whole`` is where the whole lines end (a torn one after them is not read),
        and ``lines`` the last one's number."""
        with self.path.open("rb") as fh:
            first = fh.readline()
            self._header = self._decode_header(first)
            line_no = 1
            self.consumed = len(first)  # bytes read; where the line yielded starts
            if start is not None:
                fh.seek(start[0])
                self.consumed, line_no = start
            elif hasher is not None and first.endswith(b"\n"):
                hasher.update(first)
            self.whole, self.lines = self.consumed, line_no
            stats = self.stats
            loads = orjson.loads
            for line in fh:
                line_no += 1
                self.line_start = self.consumed
                self.consumed += len(line)
                if not line.endswith(b"\n"):
                    stats.torn_tail = True  # only the last line can lack it: a cut-off write
                    self.whole, self.lines = self.line_start, line_no - 1
                    return
                if hasher is not None:
                    hasher.update(line)
                if line.isspace():
                    continue
                try:
                    data = loads(line)
                except orjson.JSONDecodeError as exc:
                    raise JournalFormatError(self.path, line_no,
                                             f"not valid JSON ({exc})") from None
                if type(data) is not dict:  # (dict: orjson makes no subclass of one)
                    raise JournalFormatError(self.path, line_no, "not a JSON object")
                if not (line.isascii() and b"\\" not in line and b"\x7f" not in line):
                    data = printable_json(line, data)  # (its own first test, in line)
                stats.events += 1
                kind = data.get("ev")
                if (kind == "sample" and sample_ok(data)) or (kind == "load" and load_ok(data)):
                    yield line_no, data
                    continue
                event = self._event(data, line_no)
                if isinstance(event, Unknown):
                    stats.unknown_types += 1
                yield line_no, event
            self.whole, self.lines = self.consumed, line_no

    def __iter__(self) -> Iterator[Event]:
        return self.events()


# -- the quick checks ------------------------------------------------------------------------
# Each says whether event_from_dict would accept the object as a Sample or a Load: the same
# test of each field it makes (events._checker: exact types, so a boolean is no number), the
# required fields present; extra keys are ignored there as here.  Written out for the two
# events a journal holds one of each second; tests/unit/test_report_fast.py holds them against
# event_from_dict on every field of every kind of wrong value.

_NUM = frozenset({int, float})
_NUM_NONE = frozenset({int, float, type(None)})
_INT = frozenset({int})


def _lists_of(value: object, allowed: frozenset[type]) -> bool:
    """A JSON object of lists whose items' types are all in ``allowed``."""
    if type(value) is not dict:
        return False
    for x in value.values():
        if type(x) is not list or not allowed.issuperset(map(type, x)):
            return False
    return True


_TIMES = operator.itemgetter("t", "wall")
_LOAD_NUMBERS = operator.itemgetter("t", "wall", "tps", "qps", "r", "w", "o", "lat", "err",
                                    "reconn")
_LOAD_INTS = operator.itemgetter("s", "thds", "pct")


def sample_ok(d: JsonDict) -> bool:
    try:  # (itemgetter and issuperset: the tests run in C)
        if not _NUM.issuperset(map(type, _TIMES(d))):
            return False
    except KeyError:
        return False
    v = d.get("v")
    if type(v) is not list or not _NUM_NONE.issuperset(map(type, v)):
        return False
    if len(d) == 8 and "ndb" in d:  # as the writer writes it: every field, no target
        return (type(d.get("lat")) in _NUM and type(d.get("re")) is bool
                and _lists_of(d.get("host"), _NUM) and _lists_of(d["ndb"], _INT))
    return (("lat" not in d or type(d["lat"]) in _NUM)
            and ("host" not in d or _lists_of(d["host"], _NUM))
            and ("re" not in d or type(d["re"]) is bool)
            and ("ndb" not in d or _lists_of(d["ndb"], _INT))
            and ("target" not in d or type(d["target"]) is str))


def load_ok(d: JsonDict) -> bool:
    try:
        if not (_NUM.issuperset(map(type, _LOAD_NUMBERS(d)))
                and _INT.issuperset(map(type, _LOAD_INTS(d)))):
            return False
    except KeyError:
        return False
    return (type(d["src"]) is str if "src" in d else False) and (
        ("target" not in d or type(d["target"]) is str)
        and ("ops" not in d or _lists_of(d["ops"], _NUM)))
