"""Byte-offset index over a journal file: open fast, seek by time, jump between markers."""
# Just over 500 lines: the index, its background build and its reads share one set of
# offsets and one lock (single subject: issue 38 lists index among the files that may be).

from __future__ import annotations

import bisect
import math
import os
import threading
from array import array
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType

import orjson

from knobtop.journal.events import (
    Event,
    EventDecodeError,
    Header,
    event_from_dict,
    header_from_dict,
)
from knobtop.journal.reader import JournalFormatError
from knobtop.printable import printable, printable_json

#: The kinds a person jumps between; each keeps a sorted list of its index positions.
JUMP_KINDS: tuple[str, ...] = (
    "change", "outside", "restart", "phase", "note", "mark", "error", "recipe", "step")

CHUNK_SIZE = 4 << 20
#: How far (seconds) ``tail_window`` reads past its cut-off: lines may be written a little
#: out of ``t`` order (a change is stamped before the load line that precedes it on disk).
TAIL_SLACK = 5.0
_OTHER_KIND = 255  # kind code shared by every kind past the first 255 distinct ones


def decode_line(line: bytes) -> Event:
    """One event line as an Event; raises EventDecodeError (a ValueError with the reason)
    if it is not one."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError as exc:
        raise EventDecodeError(f"not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise EventDecodeError("not a JSON object")
    return event_from_dict(printable_json(line, data))


def decode_header_line(path: Path, line: bytes) -> Header:
    """The journal header from the first line; JournalFormatError (line 1) if it is not one."""
    if not line.strip():
        raise JournalFormatError(path, 1, "the file is empty, not a knobtop journal")
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        raise JournalFormatError(
            path, 1, "the first line is not JSON: this is not a knobtop journal"
        ) from None
    if not isinstance(data, dict):
        raise JournalFormatError(path, 1, "the first line is not a journal header")
    try:
        return header_from_dict(printable_json(line, data))
    except EventDecodeError as exc:
        raise JournalFormatError(path, 1, str(exc)) from None


def scan_line(line: bytes) -> tuple[float, bytes] | str:
    """``(t, ev)`` of an event line without decoding it, or why the line is not an event.

    Lines as JournalWriter writes them (``{"ev":"KIND","t":T,`` first, no spaces) are read
    from their bytes; any other layout of valid JSON (spaces, another key order, escapes)
    is parsed, so the index skips no line that the reader accepts.
    """
    if line[:7] == b'{"ev":"':
        q = line.find(b'"', 7)
        if q > 7 and line.startswith(b'","t":', q) and line.find(b"\\", 7, q) < 0:
            e = line.find(b",", q + 6)
            if e < 0:
                e = line.find(b"}", q + 6)
            try:
                t = float(line[q + 6 : e])
            except ValueError:  # not a number: the line is parsed below, to say why
                t = math.nan
            if math.isfinite(t) and line[-1:] == b"}":
                return t, line[7:q]
    return _scan_parsed(line)


def _scan_parsed(line: bytes) -> tuple[float, bytes] | str:
    """``scan_line`` for a line in any JSON layout: parse it."""
    try:
        data = orjson.loads(line)
    except orjson.JSONDecodeError:
        if line.lstrip()[:1] != b"{":
            return "not a JSON object"
        return "not valid JSON (cut off, or not an event line)"
    if not isinstance(data, dict):
        return "not a JSON object"
    kind = data.get("ev")
    if not isinstance(kind, str) or not kind:
        return "line has no event type ('ev')"
    t = data.get("t")
    if type(t) is not float and type(t) is not int:
        return f"{printable(kind, newlines=False)} event has no numeric 't'"
    return float(t), kind.encode()


HOLD_LIMIT = 3.0  # a held build goes on after this long whatever the screen does


class JournalIndex:
    """Where each event line of a journal starts, its ``t`` and its kind, in compact arrays.

    Queries talk about *index positions* ``i`` (0 .. ``len(idx) - 1``): the i-th event line
    that indexed cleanly.  ``line_no(i)`` turns one into a 1-based file line number (the
    header is line 1), which is what ``problems`` uses.  Nothing but the arrays is kept in
    memory: ``read`` seeks to the offsets and decodes only the lines asked for.

    ``seek`` bisects on the running maximum of ``t``: the position where the journal first
    reached a time.  A line without its newline at the end of the file (a write in flight or
    cut off) is not indexed until ``extend`` finds it complete.
    """

    def __init__(self, path: Path | str, *, chunk_size: int = CHUNK_SIZE) -> None:
        self.path = Path(path)
        self.chunk_size = chunk_size
        self._fd = os.open(self.path, os.O_RDONLY)
        self._lock = threading.Lock()  # guards the arrays
        self._scan_lock = threading.Lock()  # one scanner at a time (build / extend)
        self.ready = threading.Event()
        # Set unless a screen asked the background build to hold after its first chunk
        # until it has painted (the scan would share the interpreter with its start-up).
        self.go_on = threading.Event()
        self.go_on.set()
        self._thread: threading.Thread | None = None
        try:
            self._reset()
        except BaseException:
            os.close(self._fd)
            raise

    # -- state -------------------------------------------------------------------------

    def _reset(self) -> None:
        self.header, self._data_start = self._read_header()
        self._offsets: array[int] = array("q")
        self._t: array[float] = array("d")
        self._tmax: array[float] = array("d")
        self._codes: array[int] = array("B")
        self._kind_names: list[str] = []
        self._kind_codes: dict[bytes, int] = {}
        self._jumps: dict[str, array[int]] = {k: array("q") for k in JUMP_KINDS}
        self._jump_codes: dict[int, str] = {}
        self._skips: list[int] = []  # index position before which each skipped line sat
        self._max_back = 0.0  # largest (running max t - t) seen: how far out of order t goes
        self._end = self._data_start  # byte after the last complete line scanned
        self._line_no = 1  # file line number of the last complete line scanned
        self.problems: list[tuple[int, str]] = []
        self.progress = 0.0
        self.ready.clear()

    def _read_header(self) -> tuple[Header, int]:
        buf = b""
        while True:
            more = os.pread(self._fd, 65536, len(buf))
            nl = (buf + more).find(b"\n")
            buf += more
            if nl >= 0:
                return decode_header_line(self.path, buf[:nl]), nl + 1
            if not more:
                reason = "the header line is incomplete" if buf else "the file is empty"
                raise JournalFormatError(self.path, 1, f"{reason}, not a knobtop journal")

    def go_ahead(self) -> None:
        """Let a held background build index the rest."""
        self.go_on.set()

    def close(self) -> None:
        self.go_on.set()
        if self._thread is not None:
            self._thread.join()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def __enter__(self) -> JournalIndex:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- building ----------------------------------------------------------------------

    def build(self) -> int:
        """Index every complete line not indexed yet; sets ``ready``.  Returns how many."""
        added = self._scan(report_progress=True)
        self.progress = 1.0
        self.ready.set()
        return added

    def build_in_background(self, *, hold: bool = False) -> threading.Thread:
        """``build`` on a daemon thread; watch ``progress`` (0..1) and wait on ``ready``.
        With ``hold``, it stops after the first chunk until :meth:`go_ahead` (or
        HOLD_LIMIT seconds): what a first frame needs is there, and the rest waits."""
        if hold:
            self.go_on.clear()
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(
                target=self.build, name=f"journal-index:{self.path.name}", daemon=True
            )
            self._thread.start()
        return self._thread

    def extend(self) -> int:
        """Index the lines appended since the last build (for follow).  Returns how many.

        A torn last line is left for a later call; a file that shrank (truncated, or a new
        journal written over it) is indexed again from its header.
        """
        size = os.fstat(self._fd).st_size
        if size < self._end:
            with self._scan_lock, self._lock:
                self._reset()
        return self.build()

    def _kind_code(self, kind: bytes) -> int:
        code = self._kind_codes.get(kind)
        if code is None:
            code = len(self._kind_names) if len(self._kind_names) < _OTHER_KIND else _OTHER_KIND
            if code != _OTHER_KIND:  # a kind's name is the file's text: made printable
                name = printable(kind.decode(errors="replace"), newlines=False)
                self._kind_names.append(name)
                if name in self._jumps:
                    self._jump_codes[code] = name
            self._kind_codes[kind] = code
        return code

    def _scan(self, *, report_progress: bool) -> int:
        with self._scan_lock:
            fd, start = self._fd, self._end
            size = max(os.fstat(fd).st_size, start + 1)
            base, line_no, carry = start, self._line_no, b""
            count = len(self._offsets)
            tmax = self._tmax[-1] if self._tmax else -math.inf
            added = 0
            while True:
                buf = os.pread(fd, self.chunk_size, base + len(carry))
                if not buf:
                    break
                data = carry + buf if carry else buf
                lines = data.split(b"\n")
                carry = lines.pop()
                offsets: array[int] = array("q")
                ts: array[float] = array("d")
                tmaxs: array[float] = array("d")
                codes: array[int] = array("B")
                jumps: list[tuple[str, int]] = []
                problems: list[tuple[int, str]] = []
                skips: list[int] = []
                max_back = self._max_back
                kind_codes, jump_codes = self._kind_codes, self._jump_codes
                pos = base
                for line in lines:
                    line_no += 1
                    r = scan_line(line)
                    if isinstance(r, str):
                        if line.strip():
                            problems.append((line_no, r))
                        skips.append(count)
                    else:
                        t, kind = r
                        if t > tmax:
                            tmax = t
                        elif tmax - t > max_back:
                            max_back = tmax - t
                        code = kind_codes.get(kind)
                        if code is None:
                            code = self._kind_code(kind)
                        offsets.append(pos)
                        ts.append(t)
                        tmaxs.append(tmax)
                        codes.append(code)
                        if code in jump_codes:
                            jumps.append((jump_codes[code], count))
                        count += 1
                    pos += len(line) + 1
                with self._lock:
                    self._offsets.extend(offsets)
                    self._t.extend(ts)
                    self._tmax.extend(tmaxs)
                    self._codes.extend(codes)
                    for name, i in jumps:
                        self._jumps[name].append(i)
                    self._skips.extend(skips)
                    self.problems.extend(problems)
                    self._max_back = max_back
                    self._end = pos
                    self._line_no = line_no
                added += len(offsets)
                base = pos
                if report_progress:
                    self.progress = min(1.0, (base - start) / (size - start))
                    self.go_on.wait(HOLD_LIMIT)
            return added

    # -- queries -----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def end_offset(self) -> int:
        """Byte after the last complete line indexed (where a follower should start)."""
        return self._end

    @property
    def t_range(self) -> tuple[float, float] | None:
        """(first event's t, latest t reached) of what is indexed; None while empty."""
        with self._lock:
            if not self._t:
                return None
            return self._t[0], self._tmax[-1]

    @property
    def nbytes(self) -> int:
        """Memory held by the index arrays."""
        with self._lock:
            ints = (self._offsets, self._codes, *self._jumps.values())
            floats = (self._t, self._tmax)
            return sum(a.itemsize * len(a) for a in ints) + sum(a.itemsize * len(a) for a in floats)

    @property
    def max_back(self) -> float:
        """How far back in time (seconds) a line was seen after a later one."""
        return self._max_back

    def t_at(self, i: int) -> float:
        return self._t[i]

    def tmax_at(self, i: int) -> float:
        """The latest ``t`` seen in the lines up to and including position ``i``."""
        return self._tmax[i]

    def kind_at(self, i: int) -> str:
        code = self._codes[i]
        return self._kind_names[code] if code < len(self._kind_names) else "?"

    def kind_counts(self) -> dict[str, int]:
        """How many indexed events of each kind (kinds past the 255th count as "?")."""
        with self._lock:
            counts = [0] * 256
            for code in self._codes:
                counts[code] += 1
            names = list(self._kind_names)
        out = {name: counts[code] for code, name in enumerate(names) if counts[code]}
        if counts[_OTHER_KIND] and len(names) <= _OTHER_KIND:
            out["?"] = counts[_OTHER_KIND]
        return out

    def line_no(self, i: int) -> int:
        """1-based file line number of index position ``i``."""
        with self._lock:
            return i + 2 + bisect.bisect_right(self._skips, i)

    def seek(self, t: float) -> int:
        """First position at which the journal reached time ``t``; ``len(self)`` if never."""
        with self._lock:
            return bisect.bisect_left(self._tmax, t)

    def read(self, i: int, n: int) -> list[Event]:
        """Decode the events at positions ``i .. i+n-1`` (fewer at the end of the index).

        A line that looked like an event but does not decode is left out and added to
        ``problems``.
        """
        with self._lock:
            i = max(i, 0)
            j = min(i + max(n, 0), len(self._offsets))
            if i >= j:
                return []
            offs = self._offsets[i:j]
            end = self._offsets[j] if j < len(self._offsets) else self._end
        base = offs[0]
        data = os.pread(self._fd, end - base, base)
        out: list[Event] = []
        for k, off in enumerate(offs):
            s = off - base
            e = data.find(b"\n", s)
            try:
                out.append(decode_line(data[s:e]))
            except ValueError as exc:
                self._note_problem(self.line_no(i + k), str(exc))
        return out

    def _note_problem(self, line_no: int, reason: str) -> None:
        with self._lock:
            if all(n != line_no for n, _ in self.problems):
                self.problems.append((line_no, reason))
                self.problems.sort()

    def events_between(self, t0: float, t1: float) -> list[Event]:
        """Every event with ``t0 <= t <= t1``, in journal order."""
        with self._lock:
            lo = bisect.bisect_left(self._tmax, t0)
            hi = bisect.bisect_right(self._tmax, t1 + self._max_back)
        return [e for e in self.read(lo, hi - lo) if t0 <= e.t <= t1]

    def lines_of(self, kind: str) -> list[int]:
        """Positions of every event of one kind, in order (markers for a graph)."""
        with self._lock:
            jump = self._jumps.get(kind)
            if jump is not None:
                return list(jump)
            code = self._code_of(kind)
            if code is None:
                return []
            return [i for i, c in enumerate(self._codes) if c == code]

    def _code_of(self, kind: str) -> int | None:
        code = self._kind_codes.get(kind.encode())
        return None if code is None or code == _OTHER_KIND else code

    def next_of(self, kinds: str | Iterable[str], from_line: int) -> int | None:
        """The first position after ``from_line`` holding one of ``kinds``; None if none."""
        best: int | None = None
        with self._lock:
            for kind in [kinds] if isinstance(kinds, str) else kinds:
                jump = self._jumps.get(kind)
                if jump is not None:
                    k = bisect.bisect_right(jump, from_line)
                    found = jump[k] if k < len(jump) else None
                else:
                    code = self._code_of(kind)
                    found = None
                    if code is not None:
                        try:
                            found = self._codes.index(code, max(from_line + 1, 0))
                        except ValueError:
                            found = None
                if found is not None and (best is None or found < best):
                    best = found
        return best

    def prev_of(self, kinds: str | Iterable[str], from_line: int) -> int | None:
        """The last position before ``from_line`` holding one of ``kinds``; None if none."""
        best: int | None = None
        with self._lock:
            for kind in [kinds] if isinstance(kinds, str) else kinds:
                jump = self._jumps.get(kind)
                if jump is not None:
                    k = bisect.bisect_left(jump, from_line)
                    found = jump[k - 1] if k > 0 else None
                else:
                    code = self._code_of(kind)
                    found = None
                    if code is not None and from_line > 0:
                        r = self._codes.tobytes().rfind(bytes([code]), 0, from_line)
                        found = r if r >= 0 else None
                if found is not None and (best is None or found > best):
                    best = found
        return best

    # -- before the index exists ---------------------------------------------------------

    def tail_window(self, seconds: float) -> list[Event]:
        """The events of the journal's last ``seconds``, read backwards from the end.

        Needs no index (for the first frame while ``build_in_background`` runs); a torn last
        line and lines that are not events are left out.
        """
        fd, stop = self._fd, self._data_start
        pos = os.fstat(fd).st_size
        carry = b""
        first = True
        tmax = -math.inf
        picked: list[tuple[float, bytes]] = []
        done = False
        while pos > stop and not done:
            start = max(stop, pos - self.chunk_size)
            data = os.pread(fd, pos - start, start) + carry
            pos = start
            if first:  # drop the b"" after the final newline, or a torn last line
                nl = data.rfind(b"\n")
                if nl < 0:
                    continue
                data = data[:nl]
                first = False
            lines = data.split(b"\n")
            carry = lines.pop(0) if start > stop else b""
            for line in reversed(lines):
                r = scan_line(line)
                if isinstance(r, str):
                    continue
                t = r[0]
                if t > tmax:
                    tmax = t
                if t < tmax - seconds - TAIL_SLACK:
                    done = True
                    break
                picked.append((t, line))
        cutoff = tmax - seconds
        out: list[Event] = []
        for t, line in reversed(picked):
            if t < cutoff:
                continue
            try:
                out.append(decode_line(line))
            except ValueError:
                continue
        return out
