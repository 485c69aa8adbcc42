"""Follow a folder of journals: the newest one, and the next one when a newer one appears."""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from knobtop.journal.events import Error, Event
from knobtop.journal.follow import FOLLOW_CHUNK, JournalFollower
from knobtop.journal.index import decode_header_line

JOURNAL_GLOB = "*.knobtop.jsonl"
SCAN_INTERVAL = 1.0  # seconds between looks at the folder for a newer journal
HEADER_LIMIT = 1 << 20  # a header line longer than this is not one


def switched_message(path: Path) -> str:
    """What the follower says when it moves to a newer journal (the journal pane shows it)."""
    return f"a newer journal appeared: now following {path.name}"


class JournalFolder:
    """The journals in one folder, each known by its header's ``started_wall``.

    A file counts once its first line is a complete, readable header; a file whose header
    cannot be read is left out (and not read again while it stays the same file).  Only
    regular files are opened (a FIFO or device named ``*.knobtop.jsonl`` is never read).
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        # path -> (device, inode, started_wall or None while the header is incomplete,
        # or -inf for a file that is not a readable journal)
        self._known: dict[Path, tuple[int, int, float | None]] = {}

    def newest(self) -> tuple[Path, float] | None:
        """The journal started last (ties: the larger name), or None if there is none."""
        best: tuple[float, str, Path] | None = None
        seen: dict[Path, tuple[int, int, float | None]] = {}
        try:
            entries = list(self.directory.glob(JOURNAL_GLOB))
        except OSError:
            return None
        for path in entries:
            try:
                st = os.stat(path)
            except OSError:
                continue
            if not stat.S_ISREG(st.st_mode):
                continue
            known = self._known.get(path)
            started: float | None
            if known is not None and known[:2] == (st.st_dev, st.st_ino) and known[2] is not None:
                started = known[2]
            else:
                started = self._started(path)
            seen[path] = (st.st_dev, st.st_ino, started)
            if started is None or started == float("-inf"):
                continue
            if best is None or (started, path.name) > best[:2]:
                best = (started, path.name, path)
        self._known = seen
        return None if best is None else (best[2], best[0])

    @staticmethod
    def _started(path: Path) -> float | None:
        """``started_wall`` from the header; None if incomplete, -inf if not a journal."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
        except OSError:
            return None
        try:
            head = os.pread(fd, HEADER_LIMIT, 0)
        except OSError:
            return float("-inf")
        finally:
            os.close(fd)
        nl = head.find(b"\n")
        if nl < 0:
            return float("-inf") if len(head) >= HEADER_LIMIT else None
        try:
            return decode_header_line(path, head[:nl]).started_wall
        except ValueError:
            return float("-inf")


class DirectoryFollower(JournalFollower):
    """Follows the newest journal in ``directory`` and moves to a newer one at once.

    A newer journal is one whose header's ``started_wall`` is later than the followed
    one's (names may be anything a ``--journal`` gave).  On a switch the complete lines
    left in the old file are handed out first (so its ``end`` is seen), then a synthetic
    ``Error(source="follow", gap=True)`` naming the new file, then the new file from its
    first event; ``header`` and ``path`` are the new file's from then on.  With no journal
    in the folder yet, ``poll`` returns nothing until one appears.
    """

    def __init__(
        self,
        directory: Path | str,
        *,
        current: Path | None = None,
        offset: int | None = None,
        chunk_size: int = FOLLOW_CHUNK,
        scan_interval: float = SCAN_INTERVAL,
    ) -> None:
        self.directory = Path(directory)
        super().__init__(current if current is not None else self.directory,
                         offset=offset if current is not None else None, chunk_size=chunk_size)
        self.folder = JournalFolder(self.directory)
        self.scan_interval = scan_interval
        self.switches = 0
        self.switched_wall: float | None = None  # when it last moved to a newer journal
        self._chosen = current is not None
        self._next_scan = 0.0
        self._announce = False

    @property
    def waiting(self) -> bool:
        """True while the folder holds no journal to follow."""
        return not self._chosen

    def poll(self) -> list[Event]:
        out: list[Event] = []
        now = time.monotonic()
        if now >= self._next_scan:
            self._next_scan = now + self.scan_interval
            out.extend(self._look_for_newer())
        if not self._chosen:
            return out
        got = super().poll()
        if self._announce and self._fd >= 0:
            self._announce = False
            self.switched_wall = time.time()
            out.append(Error(t=0.0, wall=self.switched_wall, source="follow",
                             message=switched_message(self.path), gap=True))
        out.extend(got)
        return out

    def _look_for_newer(self) -> list[Event]:
        found = self.folder.newest()
        if found is None:
            return []
        path, started = found
        if self._chosen and (path == self.path or self.header is None
                             or started <= self.header.started_wall):
            return []
        out: list[Event] = []
        if self._fd >= 0:
            out.extend(self._drain())  # the old session's last words (its `end`)
            self._close_fd()
        if self._chosen:
            self.switches += 1
            self._announce = True
        self.path = path
        self.header = None
        self._offset = None
        self._carry = b""
        self._chosen = True
        return out

    def _drain(self) -> list[Event]:
        out: list[Event] = []
        while True:
            out.extend(self._read_chunk())
            if not self._more:
                return out
