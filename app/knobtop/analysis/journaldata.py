"""A recorded journal read once, streaming, into what analysis needs (a JournalData, of
analysis.journalrows): the header, knob values, changes (knobtop's and those made outside
it), restarts, notes, marks, errors, load phases, and one row of derived metrics per sample
(rates derived from the raw counters exactly as the live screen derives them).

Here the ways in, which must agree line for line: load_journal (the quick path's checked
samples, or the report cache's kept fold), fold (the CSV stream's rows as they come) and
phase_spans (the CSV stream's phase pass).  The fold itself is analysis.journalfold's
``_Loader``; the per-phase statistics are analysis.phasestats'."""

from __future__ import annotations

import contextlib
import gc
import hashlib
import operator
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from knobtop.analysis.journalfold import _Loader
from knobtop.analysis.journalrows import (
    _LOAD_FIELDS,
    CSV_FIELDS,
    ROW_FIELDS,
    JournalData,
    KnobValues,
    LoadPoint,
    PhaseSpan,
    Row,
)
from knobtop.analysis.phasestats import PhaseStats, phase_stats, phase_table
from knobtop.analysis.reportcache import (
    DEFAULT_CACHE,
    BadKept,
    Kept,
    ReportCache,
    default_dir,
)
from knobtop.journal import (
    Event,
    JournalFormatError,
    JournalReader,
    Load,
    Phase,
    Sample,
)
from knobtop.journal.reader import Hasher

_T = operator.itemgetter(0)


def load_journal(
    path: str | Path, *, t_from: float | None = None, t_to: float | None = None,
    cache: ReportCache | None = DEFAULT_CACHE,
) -> JournalData:
    """Read a journal once, keeping what reports need.

    ``t_from``/``t_to`` (seconds since the session started; from inclusive, to
    exclusive) restrict everything to a time range: knob values "at start" are
    those in force at ``t_from``, and rates at the range's first sample are
    still derived from the sample before it.

    Raises JournalFormatError (with the line number) for a line that is not a
    journal event, and for a file that is not a journal at all (line 1).
    Events of unknown types are skipped and counted; a torn last line (a
    write cut off by a kill) is left out and noted in ``torn_tail``.
    """
    with _no_gc():
        return _load(Path(path), t_from, t_to, cache)


@contextlib.contextmanager
def _no_gc() -> Iterator[None]:
    """The cyclic garbage collector paused: a day's fold makes a million objects, none in a
    cycle, and the collector would walk them all again and again (a fifth of the time)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _load(path: Path, t_from: float | None, t_to: float | None,
          cache: ReportCache | None) -> JournalData:
    reader = JournalReader(path)
    data = JournalData(path=path, header=reader.header, t_from=t_from, t_to=t_to)
    loader = _Loader(data)
    if cache is DEFAULT_CACHE:
        where = default_dir()
        cache = ReportCache(where) if where is not None else None
    size = path.stat().st_size
    kept = cache.open(path, size) if cache is not None else None
    keeping = cache is not None and size >= cache.min_bytes and t_from is None and t_to is None
    start: tuple[int, int] | None = None
    hasher: Any = None  # (a hashlib object)
    if kept is not None:
        try:
            _from_kept(reader, loader, kept)
            if kept.size < size:
                start = _go_on(reader, loader, kept)
        except BadKept:  # (values of the wrong type: the journal then)
            return _load(path, t_from, t_to, None)
        finally:
            kept.close()
        if kept.size == size:  # the journal has not grown since
            loader.finish()
            return data
        hasher = kept.hasher
        if keeping:  # (a range's fold is kept by no one)
            loader.keep = Kept(dropped=list(kept.dropped), other_targets=kept.other_targets,
                               lines=list(kept.lines), last_sample=kept.last_sample)
    elif keeping:
        loader.keep, hasher = Kept(), hashlib.sha256()
    for _row in fold(reader, loader, start, hasher if loader.keep is not None else None):
        pass
    covered = kept.size if kept is not None else 0
    if cache is not None and loader.keep is not None and cache.worth_keeping(
            covered, reader.whole):
        # The fold's state at the end of the whole lines (a torn one after them is not
        # folded): the next report of this journal, grown or not, goes on from there.
        loader.keep.line_no = reader.lines
        pending = loader.pending_load
        loader.keep.pending = None if pending is None else list(pending)
        cache.write(path, reader.whole, hasher.hexdigest(), loader.keep,
                    ((data.rows, ROW_FIELDS), (data.loads, _LOAD_FIELDS)))
    loader.finish()
    data.torn_tail = reader.stats.torn_tail
    return data


def _from_kept(reader: JournalReader, loader: _Loader, kept: Kept) -> None:
    """load_journal from a kept fold: the rows and load reports inside the range, the
    times of every sample and load report (the range's first and last), and every other
    line read and checked again, in order."""
    data = loader.data
    t_from, t_to = data.t_from, data.t_to

    def inside(t: float) -> bool:
        return (t_from is None or t >= t_from) and (t_to is None or t < t_to)

    whole = t_from is None and t_to is None
    for chunk in kept.row_chunks():  # (C's loops where they can: a day has 86,400 rows)
        loader._seen_all(list(map(_T, chunk)))
        data.rows.extend(map(Row._make, chunk if whole else (
            c for c in chunk if inside(c[0]))))
    for chunk in kept.load_chunks():
        loader._seen_all(list(map(_T, chunk)))
        data.loads.extend(map(LoadPoint._make, chunk if whole else (
            c for c in chunk if inside(c[0]))))
    loader._seen_all(kept.dropped)
    data.other_targets = kept.other_targets
    with reader.path.open("rb") as fh:
        for offset, line_no in kept.lines:
            fh.seek(offset)
            event = reader.decode_line(fh.readline(), line_no)
            try:
                loader.feed(event)
            except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
                raise JournalFormatError(
                    reader.path, line_no, f"{event.kind} event has values of the wrong type "
                    f"({exc})") from None


def _go_on(reader: JournalReader, loader: _Loader, kept: Kept) -> tuple[int, int]:
    """The fold put where it stood at the end of the kept bytes (after _from_kept, whose
    phase lines clear a load report no sample took yet): that load report back, and the
    last sample stepped through the deriver again (the next one's rates are from it).
    Where the lines after the kept ones start: (offset, number of the line before)."""
    if kept.pending is not None:
        loader.pending_load = LoadPoint._make(kept.pending)
    if kept.last_sample is not None:
        offset, line_no = kept.last_sample
        lines = JournalReader(reader.path).quick(start=(offset, line_no - 1))
        try:
            _, item = next(lines, (0, None))
        except JournalFormatError:
            raise BadKept("the kept fold's last sample") from None
        finally:
            lines.close()
        if type(item) is not dict or item.get("ev") != "sample":
            raise BadKept("the kept fold's last sample")
        loader.go_on_from(item)
    return kept.size, kept.line_no


def fold(reader: JournalReader, loader: _Loader, start: tuple[int, int] | None = None,
         hasher: Hasher | None = None) -> Iterator[Row]:
    """Feed every event of the journal to ``loader``, yielding each row as it is added (the
    CSV report writes them as they come).  Samples and load reports come checked but not
    built into events (JournalReader.quick); a value of the wrong type the checks let
    through (a host's CPU list shorter than its fields) is named by file and line.
    ``start`` and ``hasher``: as JournalReader.quick's."""
    rows = loader.data.rows
    keep = loader.keep
    last: list[int] | None = None
    for line_no, item in reader.quick(start, hasher):
        before = len(rows)
        try:
            if type(item) is dict:
                if item["ev"] == "sample":
                    if loader.feed_sample(item):
                        last = [reader.line_start, line_no]
                else:
                    loader.feed_load(item)
            else:
                assert isinstance(item, Event)
                if keep is not None:
                    if isinstance(item, Sample | Load):  # not the quick path's: not kept
                        loader.keep = keep = None
                    else:
                        keep.lines.append([reader.line_start, line_no])
                loader.feed(item)
        except (TypeError, ValueError, IndexError, KeyError, AttributeError) as exc:
            kind = item["ev"] if isinstance(item, dict) else item.kind
            raise JournalFormatError(
                reader.path, line_no, f"{kind} event has values of the wrong type ({exc})"
            ) from None
        if len(rows) > before:
            yield rows[-1]
    if keep is not None and last is not None:
        keep.last_sample = last


def phase_spans(path: Path, t_from: float | None = None, t_to: float | None = None
                ) -> tuple[list[PhaseSpan], PhaseSpan | None, float]:
    """The load phases of the journal as load_journal finds them, read without decoding
    the lines that cannot be phase events: only a line with ``phase`` or a backslash (a
    JSON escape may spell it) in its bytes can decode to one.  A phase still running at the
    end of the journal ends at infinity here (load_journal ends it at the journal's last
    time, which takes reading every line); it is also returned (None if there is none or
    the range leaves nothing of it), with its start.  A line that is not an event is
    passed over: load_journal names it."""
    reader = JournalReader(path)
    data = JournalData(path=path, header=reader.header, t_from=t_from, t_to=t_to)
    loader = _Loader(data)
    for line in _maybe_phases(path):
        try:
            event = reader.decode_line(line, 0)
            if isinstance(event, Phase):
                loader.feed(event)
        except (JournalFormatError, TypeError, ValueError, KeyError, AttributeError):
            continue
    running = loader.open_phase
    loader.last_seen = float("inf")
    loader.finish()
    if running is None:
        return data.phases, None, 0.0
    start = running.event.t  # did finish() keep it? (the clipping of finish())
    lo = max(start, t_from if t_from is not None else float("-inf"))
    hi = t_to if t_to is not None else float("inf")
    kept = not (hi < lo or hi == lo)  # its end, infinity, is past its start
    return data.phases, data.phases[-1] if kept else None, start


def _maybe_phases(path: Path, block: int = 1 << 20) -> Iterator[bytes]:
    """The whole lines after the header that hold ``phase`` or a backslash (a last line
    without its newline is a cut-off write, not a line)."""
    with path.open("rb") as fh:
        fh.readline()
        rest = b""
        while chunk := fh.read(block):
            chunk = rest + chunk
            cut = chunk.rfind(b"\n") + 1
            chunk, rest = chunk[:cut], chunk[cut:]
            if b"phase" in chunk or b"\\" in chunk:
                for line in chunk.splitlines(keepends=True):
                    if (b"phase" in line or b"\\" in line) and not line.isspace():
                        yield line



# What other modules take from here (some defined beside it, in journalrows and phasestats).
__all__ = ["CSV_FIELDS", "ROW_FIELDS", "JournalData", "KnobValues", "LoadPoint", "PhaseSpan",
           "PhaseStats", "Row", "fold", "load_journal", "phase_spans", "phase_stats",
           "phase_table"]
