"""Changes made outside knobtop: what the session knows of each watched knob, and the slow
read that finds a value someone else changed.

The watched knobs are the panel's and every knob this session changed (side effects
included).  knobtop knows a value when it read it or set it.  A value found otherwise, while
knobtop did not change that knob in between, is journaled as an ``outside`` event: the knob,
the value last seen, the new one, and the window it changed in (from the last read that saw
the old value to the one that saw the new).  The knob applier finds such values in the reads
its own changes make first; the :class:`DriftWatch` reads every watched knob on a slow
schedule of its own: one statement on the actions' link (never the sampler's), while it
holds the applier's lock, so no change of knobtop's is in flight meanwhile, with a deadline.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Mapping

from knobtop.journal.events import Change, OutsideChange
from knobtop.server.knobs import valid_name
from knobtop.session.recorder import Recorder
from knobtop.session.sampler import stop_task

DRIFT_INTERVAL = 5.0  # seconds between two reads of the watched knobs (at least one sample's)
DRIFT_DEADLINE = 3.0  # a read that takes longer is given up (and tried at the next round)
# A change knobtop makes to put its own value back after its own restart: the value it
# replaces is what knobtop's restart left, not someone else's.
REAPPLIED = "re-applied after restart"


class KnownValues:
    """What this session last knew of each watched knob, when it last saw it, and which knobs
    hold a value set outside knobtop (the revert and quit dialogs say so)."""

    def __init__(self, recorder: Recorder) -> None:
        self.recorder = recorder
        self.values: dict[str, str | None] = {}
        self.seen: dict[str, float] = {}  # journal time of the last read that saw values[k]
        self.unknown: set[str] = set()  # a change that timed out: the next read is taken
        self.outside: dict[str, OutsideChange] = {}  # the newest, for knobs still holding it

    def start(self, values: Mapping[str, str | None]) -> None:
        """The values read at the session's start (the panel's knobs present on the server)."""
        now = self.recorder.now()
        self.values = {k: v for k, v in values.items() if valid_name(k)}
        self.seen = dict.fromkeys(self.values, now)

    def names(self) -> list[str]:
        return sorted(self.values)

    def found(self, values: Mapping[str, str | None], sent: float,
              at: float | None = None) -> list[OutsideChange]:
        """Values knobtop read (the read was sent at journal time ``sent``; ``at`` is when
        its answer came, default now): each that is not the one knobtop knew is journaled as
        changed outside knobtop; every one is known from then on."""
        at = self.recorder.now() if at is None else at
        out: list[OutsideChange] = []
        for knob, value in values.items():
            if knob not in self.values:
                continue
            if knob in self.unknown:
                self.unknown.discard(knob)
            elif value != self.values[knob]:
                event = self.recorder.emit(OutsideChange(
                    t=at, wall=self.recorder.wall(), knob=knob, old=self.values[knob],
                    new=value, since=self.seen.get(knob, 0.0)))
                self.outside[knob] = event
                out.append(event)
            self.values[knob] = value
            self.seen[knob] = sent
        return out

    def before_change(self, change: Change) -> None:
        """The values a change of knobtop's found before it acted (its ``old``, its side
        effects' old ones): any that is not the one knobtop knew changed outside knobtop
        before this change (journaled before it)."""
        if change.reason == REAPPLIED:  # the old value is what knobtop's restart left
            return
        olds = {change.knob: change.old, **{k: v[0] for k, v in change.side_effects.items()}}
        found = {k: v for k, v in olds.items() if v is not None and k in self.values}
        if found:  # read after the change started: its start bounds the window
            self.found(found, change.t, at=change.t)

    def after_change(self, change: Change) -> None:
        """What a change of knobtop's left on the server is known (and is knobtop's)."""
        now = self.recorder.now()
        # Side effects are read from the server whatever the outcome (a rollback's restart
        # forgets live values too): knobtop's doing.
        news = {k: v[1] for k, v in change.side_effects.items()}
        if change.result == "ok":
            news[change.knob] = change.new
        for knob, new in news.items():
            if valid_name(knob):
                self._knobtop_set(knob, new, now)
        if change.result == "ok":
            return
        if change.new is not None and valid_name(change.knob) and change.knob in self.values:
            # refused or failed, read back: the server's value (the same, or found before)
            self.values[change.knob] = change.new
            self.seen[change.knob] = now
        elif change.result == "failed" and change.knob in self.values:
            self.unknown.add(change.knob)  # timed out: it may or may not have been applied

    def _knobtop_set(self, knob: str, value: str | None, t: float) -> None:
        self.values[knob] = value
        self.seen[knob] = t
        self.unknown.discard(knob)
        self.outside.pop(knob, None)

    def forget(self, knobs: Iterable[str]) -> None:
        """These knobs' values are unknown now (the server did not answer after a restart):
        the next read takes what it finds."""
        self.unknown.update(k for k in knobs if k in self.values)


class DriftWatch:
    """Every ``interval`` seconds, one ``check`` (the knob applier's read of the watched
    knobs, under its lock), the next scheduled when the last one finished.  ``reads``
    counts them (the bench's statements per sample).  A server that does not answer is
    tried at the next round (the sampler says it is gone); anything else that fails a
    round is journaled once, and the watch goes on."""

    def __init__(self, recorder: Recorder, check: Callable[[], Awaitable[bool]],
                 interval: float, closed: Callable[[], bool]) -> None:
        self.recorder = recorder
        self.check = check
        self.interval = interval
        self.reads = 0
        self._closed = closed
        self._failed = False
        self.task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self.task = asyncio.create_task(self._loop(), name="knobtop-drift")

    async def stop(self) -> None:
        if self.task is not None:
            await stop_task(self.task)

    async def _loop(self) -> None:
        while not self._closed():
            await asyncio.sleep(self.interval)
            try:
                if await self.check():
                    self.reads += 1
            except Exception as exc:  # nothing may kill the watch: said once, tried again
                if not self._failed:
                    self._failed = True
                    self.recorder.error("drift", "the read of the watched knobs (changes "
                                        f"made outside knobtop) failed: {exc}; tried again "
                                        f"every {self.interval:g} s")


__all__ = ["DRIFT_DEADLINE", "DRIFT_INTERVAL", "REAPPLIED", "DriftWatch", "KnownValues"]
