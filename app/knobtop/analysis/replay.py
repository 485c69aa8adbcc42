"""Replay: a virtual clock over an indexed journal, and the frame the screen shows at it.

A replay never holds the journal in memory.  Each frame is rebuilt from the index:

* the graphs' window (``window`` seconds up to the cursor, plus a little lead so the first
  sample in view has a previous one to derive rates from) is read and folded into a fresh
  ``MetricBoard``, after the load phase that was running when the window opened;
* knob values are the last ``knobs`` snapshot before the cursor plus the changes since;
* the journal pane lists the last ``PANE_EVENTS`` person-readable events (changes, phases,
  notes, marks, restarts, errors) up to the cursor, the newest one being "current".

Notes typed during a replay go to a side file next to the journal
(``NAME.knobtop.jsonl`` -> ``NAME.knobtop.notes.jsonl``); the journal itself is never
rewritten.  Side notes are shown and jumped to like the journal's own.
"""

from __future__ import annotations

import bisect
import math
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from knobtop.journal.events import Change, Event, Knobs, Note, OutsideChange, Phase, to_dict
from knobtop.journal.index import JUMP_KINDS, JournalIndex, decode_line
from knobtop.metrics.board import MetricBoard
from knobtop.safefile import NotOwnFile, open_append, read_own

SPEEDS: tuple[float, ...] = (1, 2, 5, 10, 20, 50, 100)
PANE_EVENTS = 200
#: Read this much before the window so its first sample derives rates from a previous one.
LEAD = 10.0
#: Jump targets: what a person looks for when stepping through an experiment.
MARKER_KINDS: tuple[str, ...] = (
    "change", "outside", "restart", "phase", "note", "mark", "error", "recipe", "step")
_CACHE_LIMIT = 20_000
_EPS = 1e-6  # journal times are rounded to the millisecond


def notes_path_for(journal: Path) -> Path:
    """Where replay notes on ``journal`` are kept (next to it, never inside it)."""
    name = journal.name
    stem = name[: -len(".jsonl")] if name.endswith(".jsonl") else name
    return journal.with_name(f"{stem}.notes.jsonl")


@dataclass
class Frame:
    """What the screen shows with the cursor at ``t``."""

    t: float
    board: MetricBoard
    knobs: dict[str, str | None]
    facts: dict[str, dict[str, Any]]
    listed: list[Event] = field(default_factory=list)  # the pane, oldest first
    current: int | None = None  # index into ``listed`` of the event at the cursor


class Replay:
    """The virtual clock (cursor, speed, play/pause) and frame building over an index.

    The index may still be building in the background: everything clamps to what is
    indexed so far (``indexed_to``).
    """

    def __init__(self, index: JournalIndex, *, window: float = 120.0,
                 notes_path: Path | None = None) -> None:
        self.index = index
        self.window = window
        self.notes_path = notes_path if notes_path is not None else notes_path_for(index.path)
        self.playing = False
        self.speed = SPEEDS[0]
        t_range = index.t_range
        self.cursor = t_range[0] if t_range else 0.0
        self._cache: dict[int, Event] = {}
        self.note_problems: list[tuple[int, str]] = []
        self.side_notes: list[Note] = self._read_notes()
        self._sample_lines: tuple[int, list[int]] = (-1, [])  # (index length, positions)

    # -- the clock ---------------------------------------------------------------------

    @property
    def start(self) -> float:
        t_range = self.index.t_range
        return t_range[0] if t_range else 0.0

    @property
    def indexed_to(self) -> float:
        """The latest time indexed so far (the end, once the index is ready)."""
        t_range = self.index.t_range
        return t_range[1] if t_range else 0.0

    @property
    def at_end(self) -> bool:
        return self.index.ready.is_set() and self.cursor >= self.indexed_to

    def tick(self, wall_seconds: float) -> bool:
        """Advance a playing cursor by ``wall_seconds`` x speed; pauses at the end.
        Returns True when the cursor moved."""
        if not self.playing or wall_seconds <= 0:
            return False
        before = self.cursor
        self.cursor = min(self.cursor + wall_seconds * self.speed, self.indexed_to)
        if self.at_end:
            self.playing = False
        return self.cursor != before

    def toggle(self) -> bool:
        """Play or pause; playing from the end starts again at the beginning."""
        if not self.playing and self.at_end:
            self.cursor = self.start
        self.playing = not self.playing
        return self.playing

    def faster(self, steps: int = 1) -> float:
        i = bisect.bisect_left(SPEEDS, self.speed)
        self.speed = SPEEDS[max(0, min(len(SPEEDS) - 1, i + steps))]
        return self.speed

    def seek_to(self, t: float) -> float:
        self.cursor = max(self.start, min(t, self.indexed_to))
        return self.cursor

    def seek_by(self, seconds: float) -> float:
        return self.seek_to(self.cursor + seconds)

    def position(self, t: float | None = None) -> int:
        """The last index position that may hold an event at or before ``t`` (the cursor):
        lines can be written a little out of time order (``index.max_back``); -1 if none."""
        t = self.cursor if t is None else t
        return self.index.seek(t + self.index.max_back + 1e-9) - 1

    def jump(self, kinds: Iterable[str], forward: bool) -> float | None:
        """Move the cursor to the next (previous) stop: the last event of ``kinds`` (side
        notes included) in a second as the clock shows it, so events that share a second are
        listed together after one press.  Returns the new cursor, or None (cursor unchanged)
        when there is none."""
        kinds = tuple(kinds)
        found = self._nearest(kinds, self.cursor, forward)
        stop = self._stop(kinds, found)
        if not forward and stop is not None and stop >= self.cursor and found is not None:
            # The cursor sits inside that second, before its stop: the stop before it.
            second_start = self.start + math.floor(found - self.start + _EPS)
            stop = self._stop(kinds, self._nearest(kinds, second_start, False))
        return self.seek_to(stop) if stop is not None else None

    def _stop(self, kinds: tuple[str, ...], t: float | None) -> float | None:
        """The last event of ``kinds`` in the clock's second that holds ``t``."""
        if t is None:
            return None
        second_end = self.start + math.floor(t - self.start + _EPS) + 1
        last = self._nearest(kinds, second_end, False)
        return max(t, last) if last is not None else t

    def _nearest(self, kinds: tuple[str, ...], at: float, forward: bool) -> float | None:
        """The time of the first event of ``kinds`` after ``at`` (forward) or the last one
        before it, side notes included; None when there is none."""
        index = self.index
        best: float | None = None
        # Lines may sit a little out of time order (a static change is stamped when it
        # began but written after its restart steps): look past the first hit until no
        # later (earlier) line can hold a closer time.
        if forward:
            i = index.seek(at) - 1  # every earlier line lies before ``at``
            while (found := index.next_of(kinds, i)) is not None:
                t = index.t_at(found)
                if best is not None and t - index.max_back > best:
                    break
                if t > at and (best is None or t < best):
                    best = t
                i = found
        else:
            i = self.position(at) + 1
            while (found := index.prev_of(kinds, i)) is not None:
                if best is not None and index.tmax_at(found) < best:
                    break
                t = index.t_at(found)
                if t < at and (best is None or t > best):
                    best = t
                i = found
        targets = [best] if best is not None else []
        if "note" in kinds:
            times = [n.t for n in self.side_notes]
            if forward:
                targets += [t for t in times if t > at][:1]
            else:
                targets += [t for t in times if t < at][-1:]
        if not targets:
            return None
        return min(targets) if forward else max(targets)

    def samples_at(self, t: float) -> int:
        """How many samples the journal holds up to time ``t`` (the header's count)."""
        if self._sample_lines[0] != len(self.index):
            self._sample_lines = (len(self.index), self.index.lines_of("sample"))
        lines = self._sample_lines[1]
        t_at = self.index.t_at
        return bisect.bisect_right(lines, t, key=t_at)

    # -- reading -----------------------------------------------------------------------

    def _event(self, i: int) -> Event | None:
        event = self._cache.get(i)
        if event is None:
            got = self.index.read(i, 1)
            if not got:
                return None
            event = got[0]
            if len(self._cache) >= _CACHE_LIMIT:
                self._cache.clear()
            self._cache[i] = event
        return event

    def _last_of(self, kind: str, before: int) -> Event | None:
        i = self.index.prev_of(kind, before)
        return self._event(i) if i is not None else None

    def knobs_at(self, t: float) -> tuple[dict[str, str | None], dict[str, dict[str, Any]]]:
        """Knob values and facts as of time ``t``: the last snapshot, then every successful
        change after it, knobtop's and those made outside it (of the header's own server: a
        recipe's further targets' snapshots and changes are theirs)."""
        values: dict[str, str | None] = {}
        facts: dict[str, dict[str, Any]] = {}
        pos = self.position(t)
        first_change = 0
        at = self.index.prev_of("knobs", pos + 1)
        while at is not None:
            snap = self._event(at)
            if isinstance(snap, Knobs) and snap.t <= t and not snap.target:
                values.update(snap.values)
                facts = dict(snap.facts)
                first_change = at + 1
                break
            at = self.index.prev_of("knobs", at)
        # knobtop's own changes and those made outside it, in journal order
        lines: list[int] = []
        for kind in ("change", "outside"):
            found = self.index.lines_of(kind)
            lines += found[bisect.bisect_left(found, first_change):bisect.bisect_right(found, pos)]
        for i in sorted(lines):
            change = self._event(i)
            if isinstance(change, OutsideChange) and change.t <= t and not change.target:
                values[change.knob] = change.new
            if isinstance(change, Change) and change.result == "ok" and change.t <= t \
                    and not change.target:
                values[change.knob] = change.new
                for knob, (_old, new) in change.side_effects.items():
                    values[knob] = new
        return values, facts

    def _listed(self, t: float) -> list[Event]:
        pos = self.position(t)
        picked: list[int] = []
        for kind in JUMP_KINDS:
            lines = self.index.lines_of(kind)
            hi = bisect.bisect_right(lines, pos)
            picked.extend(lines[max(0, hi - PANE_EVENTS):hi])
        picked.sort()
        events = [e for i in picked[-PANE_EVENTS:]
                  if (e := self._event(i)) is not None and e.t <= t]
        notes = [n for n in self.side_notes if n.t <= t]
        if notes:
            events = sorted([*events, *notes], key=lambda e: e.t)[-PANE_EVENTS:]
        return events

    def frame(self, t: float | None = None) -> Frame:
        """The board, knobs and pane with the cursor at ``t`` (default: the cursor)."""
        t = self.cursor if t is None else t
        pos = self.position(t)
        board = MetricBoard(self.index.header)
        lo = t - self.window - LEAD
        first = self.index.seek(lo)
        phase = self._last_of("phase", first)
        if isinstance(phase, Phase):
            board.apply(phase)  # the load state (running, label, clients) when the window opens
        for event in self.index.read(first, pos + 1 - first):
            if lo <= event.t <= t:
                board.apply(event)
        values, facts = self.knobs_at(t)
        board.knob_values = dict(values)
        board.samples = self.samples_at(t)  # the whole journal's count, not the window's
        listed = self._listed(t)
        return Frame(t, board, values, facts, listed, len(listed) - 1 if listed else None)

    # -- notes -------------------------------------------------------------------------

    def _read_notes(self) -> list[Note]:
        try:
            data = read_own(self.notes_path)
        except FileNotFoundError:
            return []
        except OSError as exc:  # a link, a FIFO: said, never followed or waited on
            self.note_problems.append((0, str(exc) if isinstance(exc, NotOwnFile)
                                       else f"cannot be read: {exc.strerror or exc}"))
            return []
        notes: list[Note] = []
        for n, line in enumerate(data.split(b"\n"), start=1):
            if not line.strip():
                continue
            try:
                event = decode_line(line)
            except ValueError as exc:
                self.note_problems.append((n, str(exc)))
                continue
            if isinstance(event, Note):
                notes.append(event)
            else:
                self.note_problems.append((n, f"a '{event.kind}' event, not a note"))
        notes.sort(key=lambda e: e.t)
        return notes

    def add_note(self, text: str) -> Note:
        """Append a note at the cursor to the side file (created 0600 on first use; never
        through a link, nor to a file of someone else's: NotOwnFile says so)."""
        text = text.strip()
        if not text:
            raise ValueError("an empty note was not saved")
        header = self.index.header
        # Not rounded: a note stamped a hair after the cursor would not show at the cursor.
        note = Note(t=self.cursor, wall=round(header.started_wall + self.cursor, 3), text=text)
        line = orjson.dumps(to_dict(note)) + b"\n"
        fd = open_append(self.notes_path)
        try:
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        bisect.insort(self.side_notes, note, key=lambda e: e.t)
        return note


def clock_text(seconds: float) -> str:
    """h:mm:ss (or m:ss under an hour) for the time readout."""
    s = max(0, int(seconds))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"
