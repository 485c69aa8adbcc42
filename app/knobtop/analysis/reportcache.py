"""What a report derived from a long journal, kept for the next report of it (issue 41).

Reading a day's journal means decoding and checking 172,800 lines and deriving 86,400
rows: seconds of Python.  The first report of a journal does that and keeps the result:
every sample's row, every load report kept, the times of the load reports a several-client
phase leaves out, and where every other line starts (a change, a phase, a recipe step...).
The next report of the same bytes reads those rows back and decodes only the other lines,
through the same checks as ever.

Never trusted blindly: the kept file names the size and SHA-256 of the bytes it was kept
from (the journal's whole lines then), and the next report uses it only when the journal
still starts with exactly those bytes (a journal cut short or edited is read again, and kept
again).  A journal that only grew since (a soak still recording, a session that went on)
is read from the kept fold up to there, and line by line only from there on: what the fold
needs to go on (the last sample, for the rates of the next one; a load report not yet
matched to a sample) is kept with it.  The kept file itself carries an HMAC under
a key only this user can read (``key`` in the cache directory, 0600), so a kept file changed
by anyone or anything, or planted there, is never used: it is read again from the journal.
Its contents are type-checked as they are read back, too.

Where: ``$XDG_CACHE_HOME/knobtop/reports`` (``~/.cache/knobtop/reports``), a file per
journal path; never beside the journal (someone else's directory, perhaps read-only).
``KNOBTOP_REPORT_CACHE=off`` turns it off; journals under 1 MiB are not kept (reading them
is as quick as reading what was kept).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import hmac
import itertools
import operator
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import orjson

from knobtop.safefile import NotOwnFile, open_own, read_own

VERSION = 2
#: load_journal's default: the cache in default_dir() (None: no cache)
DEFAULT_CACHE: Any = object()
ENV = "KNOBTOP_REPORT_CACHE"
MIN_BYTES = 1 << 20
_NUM = frozenset({int, float})
_NUM_NONE = frozenset({int, float, type(None)})
_T, _WALL = operator.itemgetter(0), operator.itemgetter(1)


CHUNK = 4096  # rows (and load reports) a line of the kept file
KEEP_FILES = 16  # kept folds at most (a day's journal's is 14 MB): the oldest go first


class BadKept(ValueError):
    """A kept fold whose values are not what load_journal keeps (read the journal instead)."""


@dataclass
class Kept:
    """One journal's fold as load_journal keeps it, but for its rows and load reports:
    ``dropped`` (times of the load reports a several-client phase leaves out),
    ``other_targets`` among the samples and load reports, ``lines`` ([offset, line number]
    of every other line); and where the fold stood at the end of the bytes it covers, to go
    on from there: ``line_no`` (the number of the last line), ``last_sample`` ([offset, line
    number] of the last sample folded), ``pending`` (a load report's [t, tps, p95] that no
    sample took yet).  Opened from the cache, ``row_chunks`` and ``load_chunks`` then read
    the rows (each Row's 12 fields) and load reports ([t, tps, p95]) from the kept file,
    CHUNK a line, a line at a time (a day's rows held as lists at once would add a third to
    a report's memory); ``size`` is the bytes it covers, ``hasher`` their SHA-256 so far
    (to go on hashing what is read after them)."""

    dropped: list[float] = field(default_factory=list)
    other_targets: int = 0
    lines: list[list[int]] = field(default_factory=list)
    line_no: int = 1
    last_sample: list[int] | None = None
    pending: list[float] | None = None
    fh: BinaryIO | None = None
    row_lines: int = 0
    load_lines: int = 0
    size: int = 0
    hasher: Any = None

    def _chunks(self, n: int) -> Iterator[list[Any]]:
        assert self.fh is not None
        for _ in range(n):
            yield _parsed(self.fh.readline())

    def row_chunks(self) -> Iterator[list[list[Any]]]:
        """The rows, CHUNK at a time, each 12 fields of which the first two (t, wall) are
        numbers and the rest numbers or null (BadKept if not); first."""
        for chunk in self._chunks(self.row_lines):
            try:
                ok = (all(type(r) is list and len(r) == 12 for r in chunk)
                      and _NUM_NONE.issuperset(map(type, itertools.chain.from_iterable(chunk)))
                      and _NUM.issuperset(map(type, map(_T, chunk)))
                      and _NUM.issuperset(map(type, map(_WALL, chunk))))
            except TypeError:
                ok = False
            if not ok:
                raise BadKept("a kept row")
            yield chunk

    def load_chunks(self) -> Iterator[list[list[Any]]]:
        """The load reports' [t, tps, p95], CHUNK at a time, checked; after the rows."""
        for chunk in self._chunks(self.load_lines):
            try:
                ok = (all(type(x) is list and len(x) == 3 for x in chunk)
                      and _NUM.issuperset(map(type, itertools.chain.from_iterable(chunk))))
            except TypeError:
                ok = False
            if not ok:
                raise BadKept("a kept load report")
            yield chunk

    def close(self) -> None:
        if self.fh is not None:
            self.fh.close()


def _parsed(chunk: bytes) -> list[Any]:
    try:
        items = orjson.loads(chunk)
    except orjson.JSONDecodeError:
        raise BadKept("a kept line") from None
    if type(items) is not list:
        raise BadKept("a kept line")
    return items


def default_dir() -> Path | None:
    """The cache directory, or None when ``KNOBTOP_REPORT_CACHE=off``."""
    if os.environ.get(ENV, "").lower() in ("off", "0", "no"):
        return None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "knobtop" / "reports"


def digest(path: Path, size: int) -> Any:
    """The SHA-256 (a hashlib object) of the first ``size`` bytes of ``path``."""
    h = hashlib.sha256()
    with path.open("rb") as fh:
        left = size
        while left > 0 and (chunk := fh.read(min(left, 1 << 20))):
            h.update(chunk)
            left -= len(chunk)
    return h


class ReportCache:
    """The kept folds of journals, in ``directory``."""

    def __init__(self, directory: Path, min_bytes: int = MIN_BYTES, *,
                 eager: bool = False) -> None:
        self.directory = directory
        self.min_bytes = min_bytes
        self.eager = eager  # the keeper's (analysis.keepfold): every fold that covers more

    def worth_keeping(self, covered: int, whole: int) -> bool:
        """Whether the fold of a journal's first ``whole`` bytes is kept in place of the one
        kept of its first ``covered`` (0: none): always for the keeper; for a report, once
        what it folded after the kept fold is an eighth of that or more.  Writing a day's
        fold costs about what folding three hours of journal does, so a report of a journal
        grown by less folds the new lines itself (the session's next keeping keeps them)."""
        if whole < self.min_bytes or whole <= covered:
            return False
        return self.eager or whole - covered >= covered // 8

    def _file(self, journal: Path) -> Path:
        name = hashlib.sha256(os.fsencode(journal.resolve())).hexdigest()[:40]
        return self.directory / f"{name}.json"

    def _key(self, create: bool) -> bytes | None:
        """This user's key (made on first use); None when there is none, or it is not a
        regular file of 32 bytes that only this user can read in a directory of this
        user's that no one else can write."""
        path = self.directory / "key"
        if create and not path.exists():
            import secrets  # (only when a key is made: the report's start stays light)

            self.directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            with contextlib.suppress(FileExistsError):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
                try:
                    os.write(fd, secrets.token_bytes(32))
                finally:
                    os.close(fd)
        try:
            key = read_own(path)
            st, where = os.lstat(path), os.lstat(self.directory)
        except (OSError, NotOwnFile):
            return None
        uid = os.geteuid()
        if (st.st_uid != uid or st.st_mode & 0o077 or where.st_uid != uid
                or where.st_mode & 0o022):
            return None  # a key others can read, or put there: nothing kept is trusted
        return key if len(key) == 32 else None

    def open(self, journal: Path, size: int) -> Kept | None:
        """The kept fold of ``journal``, now ``size`` bytes long, if it was kept from
        exactly its first bytes (all of them, or fewer: the journal grew since; same
        SHA-256) and the kept file is intact (its HMAC, checked over the whole file before
        anything in it is used; read again from the same open file, which a newer kept file
        renamed into place does not change); else None.  Close it when done."""
        if size < self.min_bytes:
            return None
        key = self._key(create=False)
        if key is None:
            return None
        try:
            fh = open_own(self._file(journal))
        except (OSError, NotOwnFile):
            return None
        try:
            kept = self._opened(fh, key, journal, size)
        except (OSError, orjson.JSONDecodeError, ValueError):
            kept = None
        if kept is None:
            fh.close()
        return kept

    def _opened(self, fh: BinaryIO, key: bytes, journal: Path, size: int) -> Kept | None:
        mac = hmac.new(key, digestmod=hashlib.sha256)
        said = fh.readline().rstrip(b"\n")
        while chunk := fh.read(1 << 20):
            mac.update(chunk)
        if not hmac.compare_digest(said, mac.hexdigest().encode()):
            return None
        fh.seek(len(said) + 1)
        head = orjson.loads(fh.readline())
        if type(head) is not dict or head.get("v") != VERSION:
            return None
        covers = head.get("size")
        if type(covers) is not int or not self.min_bytes <= covers <= size:
            return None
        hasher = digest(journal, covers)
        if head.get("sha256") != hasher.hexdigest():
            return None
        kept = _checked(orjson.loads(fh.readline()))
        rows, loads = head.get("row_lines"), head.get("load_lines")
        if kept is None or type(rows) is not int or type(loads) is not int:
            return None
        kept.fh, kept.row_lines, kept.load_lines = fh, rows, loads
        kept.size, kept.hasher = covers, hasher
        return kept

    def write(self, journal: Path, size: int, sha256: str, kept: Kept,
              tables: tuple[tuple[Sequence[Any], Sequence[str]], ...]) -> None:
        """Keep ``kept`` and the rows and load reports of the journal's first ``size``
        bytes, whose SHA-256 is ``sha256`` (``tables``: the objects and the names of their
        fields, Row's 12 then LoadPoint's 3; best effort: a cache that cannot be written
        leaves the report as it is).  The oldest kept files beyond KEEP_FILES are
        removed."""
        if size < self.min_bytes:
            return
        key = self._key(create=True)
        if key is None:
            return
        (rows, _), (loads, _) = tables
        n_rows, n_loads = -(-len(rows) // CHUNK), -(-len(loads) // CHUNK)
        head = [orjson.dumps({"v": VERSION, "size": size, "sha256": sha256,
                              "row_lines": n_rows, "load_lines": n_loads}) + b"\n",
                orjson.dumps({"dropped": kept.dropped, "other_targets": kept.other_targets,
                              "lines": kept.lines, "line_no": kept.line_no,
                              "last_sample": kept.last_sample, "pending": kept.pending})
                + b"\n"]
        lines = itertools.chain(head, (
            orjson.dumps([[getattr(r, f) for f in fields] for r in items[i:i + CHUNK]])
            + b"\n"
            for items, fields in tables for i in range(0, len(items), CHUNK)))
        mac = hmac.new(key, digestmod=hashlib.sha256)
        import tempfile  # (only when a fold is kept)

        try:
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".part-")
        except OSError:
            return
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(b"0" * mac.digest_size * 2 + b"\n")  # the MAC, once it is known
                for part in lines:  # a chunk at a time, as read back
                    mac.update(part)
                    fh.write(part)
                fh.seek(0)
                fh.write(mac.hexdigest().encode())
            os.replace(tmp, self._file(journal))
            self._trim()
        except OSError as exc:
            if exc.errno not in (errno.ENOSPC, errno.EDQUOT, errno.EACCES, errno.EROFS):
                raise
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)


    def _trim(self) -> None:
        """The oldest kept files (by when they were written) beyond KEEP_FILES removed."""
        kept = []
        for path in self.directory.glob("*.json"):
            with contextlib.suppress(FileNotFoundError):
                kept.append((path.lstat().st_mtime_ns, path))
        for _when, path in sorted(kept)[:-KEEP_FILES]:
            with contextlib.suppress(FileNotFoundError):
                path.unlink()


def _checked(body: Any) -> Kept | None:
    """The kept fold's small part, if every value in it has the type load_journal kept."""
    if type(body) is not dict:
        return None
    dropped, lines = body.get("dropped"), body.get("lines")
    other, line_no = body.get("other_targets"), body.get("line_no")
    last, pending = body.get("last_sample"), body.get("pending")
    if not (type(dropped) is list and type(lines) is list and type(other) is int
            and type(line_no) is int and _NUM.issuperset(map(type, dropped))):
        return None
    if not all(map(_offset_and_line, lines)) or not (last is None or _offset_and_line(last)):
        return None
    if pending is not None and not (type(pending) is list and len(pending) == 3
                                    and _NUM.issuperset(map(type, pending))):
        return None
    return Kept(dropped=dropped, other_targets=other, lines=lines, line_no=line_no,
                last_sample=last, pending=pending)


def _offset_and_line(item: Any) -> bool:
    return type(item) is list and len(item) == 2 and all(type(x) is int for x in item)
