"""The recorder: the one place a session's events are stamped, built and written.

Each event goes to the journal first, then to every subscriber (the screen, headless, a
recipe runner).  When the journal cannot be written (a full disk) recording ends: the
subscribers hear it, the session's ``on_failure`` stops the load, and nothing more is
written (no line may follow a torn one).  Every event is made printable here first (a
server's message, a remote host's output may hold terminal control sequences), so the
journal and the screen hold the same text.  It needs no server and no screen, so it can
run in a process of its own with the sampler.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Concatenate, TypeVar

from knobtop.journal.events import Error, Event, Header, Mark, Note, Restart
from knobtop.journal.sanitize import printable_record
from knobtop.journal.writer import JournalWriter
from knobtop.session.port import Fields, Listener

E = TypeVar("E", bound=Event)


class Recorder:
    def __init__(self, journal_path: Path) -> None:
        self.journal_path = journal_path
        self.journal: JournalWriter | None = None
        self.journal_error: str | None = None  # set when the journal cannot be written
        self.listeners: list[Listener] = []
        self._listeners_failed: set[int] = set()  # id() of each listener that raised
        self.on_failure: Callable[[], None] = lambda: None  # the session stops the load
        self._t0 = time.monotonic()
        self.header: Header | None = None
        # A further target of a recipe (issue 19): its events go, named, into this
        # recorder's journal instead of a file of their own.
        self.into: tuple[Recorder, str] | None = None

    # -- time

    def now(self) -> float:
        """Seconds since the journal started (monotonic)."""
        return round(time.monotonic() - self._t0, 4)

    @property
    def t0(self) -> float:
        """The ``time.monotonic()`` reading journal time counts from (one clock for every
        process on this machine, so a front end in another process keeps the same time)."""
        return self._t0

    @staticmethod
    def wall() -> float:
        return round(time.time(), 3)

    def since_start(self, monotonic: float) -> float:
        """A ``time.monotonic()`` reading as journal time (a sample stamped when taken)."""
        return round(monotonic - self._t0, 4)

    # -- the journal

    def start(self, header: Header, secrets: Sequence[str]) -> None:
        """Open the journal (its clock starts now); OSError when it cannot be created.
        A further target's recorder (``feed``) opens no file: it takes the journal's clock
        and hands its secrets to that journal's writer."""
        header = printable_record(header)
        self.header = header
        if self.into is not None:
            main, _ = self.into
            self._t0 = main.t0
            for secret in secrets:
                if main.journal is not None:
                    main.journal.add_secret(secret)
            return
        self._t0 = time.monotonic()
        self.journal = JournalWriter(self.journal_path, header, secrets=tuple(secrets))

    def feed(self, main: Recorder, target: str) -> None:
        """Write this session's events into ``main``'s journal, each named ``target``
        (before ``start``): a recipe's further server, one journal for the experiment."""
        self.into = (main, target)
        self.journal_path = main.journal_path

    @property
    def failure(self) -> str | None:
        """Why recording ended (this journal's, or the one this recorder feeds)."""
        return self.into[0].journal_error if self.into is not None else self.journal_error

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Hand every event, once journaled, to ``listener``; returns the unsubscribe."""
        self.listeners.append(listener)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self.listeners.remove(listener)

        return unsubscribe

    def emit(self, event: E) -> E:
        """Journal ``event`` made printable, then hand it to every subscriber; returns what
        was recorded (the same object when nothing needed escaping)."""
        event = printable_record(event)
        if self.into is not None:
            self._forward(event)
            return event
        if self.journal is not None and self.journal_error is None:
            try:
                self.journal.append(event)
            except OSError as exc:
                self._journal_failed(exc)
        failed: list[str] = []
        for listener in list(self.listeners):
            try:
                listener(event)
            except Exception as exc:  # one broken view must not stop the others or the run
                key = id(listener)
                if key not in self._listeners_failed:
                    self._listeners_failed.add(key)
                    name = getattr(listener, "__qualname__", type(listener).__name__)
                    failed.append(f"a listener ({name}) failed on a {event.kind} event: "
                                  f"{type(exc).__name__}: {exc}; it was skipped for that "
                                  "event (said once per listener)")
        for message in failed:  # after every listener has this event, in order
            self.emit(Error(t=self.now(), wall=self.wall(), source="listener", message=message))
        return event

    def _forward(self, event: Event) -> None:
        """A further target's event, named, to the main journal and its listeners (this
        recorder's own listeners hear it too)."""
        main, target = self.into or (self, "")
        if hasattr(event, "target"):
            named: Event = dataclasses.replace(event, target=target)  # type: ignore[call-arg]
        elif isinstance(event, Error):
            named = dataclasses.replace(event, message=f"{target}: {event.message}")
        elif isinstance(event, Note):
            named = dataclasses.replace(event, text=f"{target}: {event.text}")
        elif isinstance(event, Mark):
            named = dataclasses.replace(event, label=f"{target}: {event.label}")
        else:  # an incident, an end: the main journal's own
            return
        named = main.emit(named)  # the target's name comes from a file: printable too
        for listener in list(self.listeners):
            with contextlib.suppress(Exception):
                listener(named)

    def tell(self, event: E) -> E:
        """Hand ``event`` (made printable) to every subscriber without journaling it: a
        run's progress between the lines that are journaled."""
        event = printable_record(event)
        for listener in list(self.listeners):
            with contextlib.suppress(Exception):  # (emit says a broken listener once)
                listener(event)
        return event

    def emit_quietly(self, event: E) -> E:
        """Emit an event; if even that fails (journal unwritable), the listeners (the
        screen) still get it."""
        event = printable_record(event)
        try:
            return self.emit(event)
        except Exception:
            for listener in list(self.listeners):
                with contextlib.suppress(Exception):
                    listener(event)
            return event

    def _journal_failed(self, exc: OSError) -> None:
        """The journal cannot be written (full disk, I/O error).  An experiment that is
        not recorded is not worth running: sampling ends, the load stops and knobs are no
        longer changed.  The listeners (screen, headless log) hear it first, then what
        follows (the load stopping), so they never show a stale state; the journal gets
        nothing more (no line may follow a torn one)."""
        self.journal_error = (
            f"cannot write the journal {self.journal_path}: {exc.strerror or exc}. "
            "Recording ended, the load is stopped and knobs are no longer changed; free "
            "space on that disk, or start again with another --journal path"
        )
        self.emit(Error(t=self.now(), wall=self.wall(), source="journal",
                        message=self.journal_error, gap=True))
        self.on_failure()

    # -- the events every part builds

    def error(self, source: str, message: str, *, gap: bool = False, quietly: bool = True,
              ) -> Error:
        """An error event (quietly: reaching the screen even when the journal fails)."""
        event = Error(t=self.now(), wall=self.wall(), source=source, message=message, gap=gap)
        return (self.emit_quietly if quietly else self.emit)(event)

    def note(self, text: str) -> Note:
        return self.emit(Note(t=self.now(), wall=self.wall(), text=text))

    def mark(self, label: str) -> Mark:
        return self.emit(Mark(t=self.now(), wall=self.wall(), label=label))

    def restart(self, node: str, step: str, result: str, seconds: float,
                message: str = "") -> None:
        """One step of a restart (a node going down, coming back, a rollback)."""
        self.emit_quietly(Restart(t=self.now(), wall=self.wall(), node=node, step=step,
                                  result=result, seconds=round(seconds, 3), message=message))

    def record(self, kind: Callable[Concatenate[float, float, Fields], E], /,
               *args: Fields.args, **fields: Fields.kwargs) -> E:
        """An event of ``kind`` from its fields but its times, stamped now and emitted."""
        return self.emit(kind(self.now(), self.wall(), *args, **fields))


__all__ = ["Recorder"]
