"""Follow a journal another process is writing: new events as they land, across rotations."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncGenerator
from pathlib import Path
from types import TracebackType

from knobtop.journal.events import Error, Event, Header
from knobtop.journal.index import JournalIndex, decode_header_line, decode_line
from knobtop.journal.reader import JournalFormatError

FOLLOW_CHUNK = 1 << 20
ROTATED_MESSAGE = "journal was replaced/rotated; following the new file"


class JournalFollower:
    """Tails one journal path, reading only the bytes appended since the last look.

    A line is handed out only once its newline is there (a write in flight waits for the
    rest).  If the path now names another file (renamed over, inode changed) or the file got
    shorter or got a new header (truncated and rewritten), the follower first takes the
    complete lines left in the old file (after a rename), yields a synthetic
    ``Error(source="follow", gap=True)`` and goes on from the new file's first event;
    ``header`` is then the new file's header.  Lines that are not events are skipped and
    listed in ``problems`` as (file line number, reason).

    ``offset`` starts the first file at that byte instead of after its header (a line
    boundary, e.g. ``JournalIndex.end_offset`` to pick up where an index stopped).
    """

    def __init__(
        self, path: Path | str, *, offset: int | None = None, chunk_size: int = FOLLOW_CHUNK
    ) -> None:
        self.path = Path(path)
        self.chunk_size = chunk_size
        self.header: Header | None = None
        self.problems: list[tuple[int, str]] = []
        self.rotations = 0
        self._offset = offset
        self._fd = -1
        self._pos = 0  # next byte to read
        self._carry = b""  # bytes read past the last newline
        self._line_no = 0  # file line number of the last complete line read
        self._header_bytes = b""
        self._newest_wall: float | None = None
        self._newest_t = 0.0
        self._refused_header = b""  # a header already reported as unreadable
        self._pending: list[Event] = []  # what _open has to say
        self._more = False  # the last poll stopped at its chunk limit, not at the file's end

    @classmethod
    def after(cls, index: JournalIndex) -> JournalFollower:
        """A follower that starts where ``index`` stopped (no event twice, none missed)."""
        return cls(index.path, offset=index.end_offset)

    @property
    def lag(self) -> float | None:
        """Seconds from the newest event's ``wall`` to now; None before the first event."""
        if self._newest_wall is None:
            return None
        return time.time() - self._newest_wall

    # -- async interface ---------------------------------------------------------------

    async def events(self, poll: float = 0.2) -> AsyncGenerator[Event, None]:
        """Every event appended from now on (forever); looks for new bytes every ``poll`` s."""
        try:
            while True:
                for event in self.poll():
                    yield event
                if self._more:
                    await asyncio.sleep(0)  # a backlog: let others run between chunks
                else:
                    await asyncio.sleep(poll)
        finally:
            self.close()

    # -- one look ----------------------------------------------------------------------

    def poll(self) -> list[Event]:
        """The events that became complete since the last call (at most one chunk's worth)."""
        out: list[Event] = []
        if self._fd < 0:
            opened = self._open()
            out.extend(self._pending)
            self._pending.clear()
            if not opened:
                return out
        elif self._switched():
            out.extend(self._read_all_old())
            self._close_fd()
            self.rotations += 1
            out.append(
                Error(t=0.0, wall=time.time(), source="follow", message=ROTATED_MESSAGE, gap=True)
            )
            opened = self._open()
            out.extend(self._pending)
            self._pending.clear()
            if not opened:
                return out
        out.extend(self._read_chunk())
        return out

    def close(self) -> None:
        self._close_fd()

    def __enter__(self) -> JournalFollower:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- internals ---------------------------------------------------------------------

    def _close_fd(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def _open(self) -> bool:
        """Open the path once its header line is complete; False to try again later."""
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return False
        head = b""
        while True:
            more = os.pread(fd, 65536, len(head))
            nl = (head + more).find(b"\n")
            head += more
            if nl >= 0 or not more:
                break
        if nl < 0:
            os.close(fd)
            return False
        try:
            header = decode_header_line(self.path, head[:nl])
        except JournalFormatError as exc:
            # A file this knobtop cannot read (another program's, a newer format) took the
            # path: say so once, and look again later (it may be replaced again).
            os.close(fd)
            if head[:nl] != self._refused_header:
                self._refused_header = head[:nl]
                self._pending.append(self._skipped(str(exc), gap=True))
            return False
        except BaseException:
            os.close(fd)
            raise
        self._fd = fd
        self.header = header
        self._header_bytes = head[: nl + 1]
        self._carry = b""
        if self._offset is not None:
            self._pos = self._offset
            self._line_no = self._count_lines(self._offset)
            self._offset = None  # only the first file starts there
        else:
            self._pos = nl + 1
            self._line_no = 1
        return True

    def _count_lines(self, end: int) -> int:
        count, pos = 0, 0
        while pos < end:
            buf = os.pread(self._fd, min(self.chunk_size, end - pos), pos)
            if not buf:
                break
            count += buf.count(b"\n")
            pos += len(buf)
        return count

    def _switched(self) -> bool:
        """The path names another file now, or this one was truncated or rewritten."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return False  # gone for a moment (delete, then create): keep the old one for now
        own = os.fstat(self._fd)
        if (st.st_dev, st.st_ino) != (own.st_dev, own.st_ino):
            return True
        if own.st_size < self._pos:
            return True
        return os.pread(self._fd, len(self._header_bytes), 0) != self._header_bytes

    def _read_all_old(self) -> list[Event]:
        """What complete lines the replaced file still had (only if it was renamed over)."""
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return []
        own = os.fstat(self._fd)
        if (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino):
            return []  # truncated or rewritten in place: the old bytes are gone
        out: list[Event] = []
        while True:
            got = self._read_chunk()
            out.extend(got)
            if not self._more:
                return out

    def _read_chunk(self) -> list[Event]:
        buf = os.pread(self._fd, self.chunk_size, self._pos)
        self._more = len(buf) == self.chunk_size
        if not buf:
            return []
        self._pos += len(buf)
        data = self._carry + buf if self._carry else buf
        lines = data.split(b"\n")
        self._carry = lines.pop()
        out: list[Event] = []
        for line in lines:
            self._line_no += 1
            if not line.strip():
                continue
            try:
                event = decode_line(line)
            except ValueError as exc:
                self.problems.append((self._line_no, str(exc)))
                out.append(self._skipped(f"{self.path}:{self._line_no}: {exc}; line skipped"))
                continue
            out.append(event)
            self._newest_t, self._newest_wall = event.t, event.wall
        return out

    def _skipped(self, message: str, gap: bool = False) -> Error:
        """What a follower shows for a line (or file) it cannot read: an error event."""
        return Error(t=self._newest_t, wall=time.time(), source="journal", message=message,
                     gap=gap)
