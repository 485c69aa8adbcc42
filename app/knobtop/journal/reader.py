"""Journal reader: header, events in order, a torn last line tolerated, bad lines named."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from knobtop.errors import KnobtopError
from knobtop.journal.events import (
    Event,
    EventDecodeError,
    Header,
    Unknown,
    event_from_dict,
    header_from_dict,
)
from knobtop.printable import printable, printable_json


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
                event = self._decode(line, line_no)
                self.stats.events += 1
                if isinstance(event, Unknown):
                    self.stats.unknown_types += 1
                yield event

    def _decode(self, line: bytes, line_no: int) -> Event:
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise JournalFormatError(self.path, line_no, f"not valid JSON ({exc})") from None
        if not isinstance(data, dict):
            raise JournalFormatError(self.path, line_no, "not a JSON object")
        try:
            return event_from_dict(printable_json(line, data))
        except EventDecodeError as exc:
            raise JournalFormatError(self.path, line_no, str(exc)) from None

    def __iter__(self) -> Iterator[Event]:
        return self.events()
