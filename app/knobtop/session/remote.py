"""The screen's side of the session's process: RemoteSession, a SessionPort over a socket.

Calls go out as messages and their answers come back (async calls as futures on the
caller's loop, plain calls within SYNC_DEADLINE); every journal event and each new
SessionState come back too.  Events that arrive before anyone listens (the session opens
before the screen starts) wait for the first subscriber.  When the child is gone every
pending call fails with :class:`SessionLost` and the subscribers hear an ``error`` event
from source ``session process`` (see :mod:`knobtop.session.process`).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import dataclasses
import itertools
import os
import threading
import time
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, Concatenate, cast

from knobtop.errors import KnobtopError
from knobtop.session.port import (
    LOST_SOURCE,
    BaselineDiff,
    Fields,
    Listener,
    Recorded,
    Report,
    RunOrder,
    SessionState,
)

if TYPE_CHECKING:
    from knobtop.conditions import Conditions
    from knobtop.journal.events import Change, Event, Header, Mark, Note, Phase, Progress
    from knobtop.load.base import LoadSpec
    from knobtop.load.sysbench_output import PrepareProgress
    from knobtop.metrics.footprint import Footprint
    from knobtop.server.appliers.base import Plan
    from knobtop.server.probes import ProbeReading
    from knobtop.server.variables import PurgeWait


SYNC_DEADLINE = 10.0  # a plain call (a note, a plan) answers in milliseconds
CLOSE_DEADLINE = 900.0  # close waits for a static change in flight (a restart, a rollback)
STOPPED_POLL = 0.2  # how often a wait's "stopped?" question is asked on the screen's side


class SessionLost(KnobtopError, RuntimeError):
    """The session's process ended (or stopped answering) before the screen did."""


@dataclass(frozen=True)
class Ready:
    """What the child says once its session is built."""

    journal_path: Path
    sandbox_root: Path | None  # a sandbox the child started (to stop if the child dies)
    targets: tuple[str, ...] = ()  # a recipe's further servers, each a session there too
    target_roots: tuple[Path, ...] = ()  # the sandboxes the child started for them


class _Pending:
    """One call waiting for its answer: a future on some loop, or a thread's event."""

    def __init__(self, name: str, loop: asyncio.AbstractEventLoop | None = None,
                 progress: Callable[[PrepareProgress], None] | None = None) -> None:
        self.name = name
        self.loop = loop
        self.future: asyncio.Future[Any] | None = loop.create_future() if loop else None
        self.done = threading.Event()
        self.outcome: tuple[bool, Any] = (False, None)
        self.progress = progress

    def settle(self, ok: bool, value: Any) -> None:
        self.outcome = (ok, value)
        self.done.set()
        if self.loop is not None:
            with contextlib.suppress(RuntimeError):  # its loop has closed
                self.loop.call_soon_threadsafe(self._settle_future)

    def _settle_future(self) -> None:
        assert self.future is not None
        if self.future.done():
            return
        ok, value = self.outcome
        if ok:
            self.future.set_result(value)
        else:
            self.future.set_exception(value)


class RemoteSession:
    """A SessionPort whose session runs in the child process (see the module's words)."""

    def __init__(self, conn: Connection, pid: int, ready: Ready) -> None:
        self.conn = conn
        self.pid = pid
        self.ready = ready
        self.journal_path = ready.journal_path
        self.lost: str | None = None
        self._state: SessionState | None = None
        self._catalog: Any = None
        self._t0 = time.monotonic()
        self._ids = itertools.count(1)
        self._pending: dict[int, _Pending] = {}
        self._listeners: list[Listener] = []
        # Events that came before anyone listened (the session opens before the screen
        # starts): the first subscriber hears them first, in order.
        self._early: list[Event] | None = []
        self._dispatching = threading.RLock()
        self._loop: asyncio.AbstractEventLoop | None = None  # where listeners are called
        self._send_lock = threading.Lock()
        self._lock = threading.Lock()
        self._reader: threading.Thread | None = None
        # A recipe's further servers (issue 19): their state by name, and which one this
        # handle speaks for ("" the run's own; ``view`` makes the others' handles).
        self._target_states: dict[str, SessionState] = {}
        self.target = ""

    def view(self, target: str) -> RemoteSession:
        """The handle of one of the child's further targets: the same socket, pending
        calls and listeners; its calls go to that target's session, its state is that
        session's."""
        if target not in self.ready.targets:
            raise KnobtopError(f"the session process has no target {target!r}")
        other = copy.copy(self)
        other.target = target
        return other

    # -- the socket
    def take(self, message: tuple[Any, ...]) -> None:
        """One message from the child (the reader thread; also before it starts)."""
        kind = message[0]
        if kind == "state":
            self._state, self._t0 = message[1], message[2]
        elif kind == "tstate":
            self._target_states[message[1]] = message[2]
        elif kind == "catalog":
            self._catalog = message[1]
        elif kind == "event":
            loop = self._loop
            if loop is None:
                self._dispatch(message[1])
            else:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self._dispatch, message[1])
        elif kind in ("result", "raise"):
            with self._lock:
                pending = self._pending.pop(message[1], None)
            if pending is not None:
                pending.settle(kind == "result", message[2])
        elif kind == "progress":
            pending = self._pending.get(message[1])
            if pending is not None and pending.progress is not None:
                pending.progress(message[2])

    def start_reading(self) -> None:
        self._reader = threading.Thread(target=self._read, name="knobtop-session-receive",
                                        daemon=True)
        self._reader.start()

    def _read(self) -> None:
        while True:
            try:
                message = self.conn.recv()
            except (EOFError, OSError):
                break
            self.take(message)
        self._lose(self._ended_how())

    def _ended_how(self) -> str:
        """Why the child is gone, as its exit status says (waited for briefly, without
        reaping it: session_process's end does that)."""
        info = None
        deadline = time.monotonic() + 2.0
        while info is None and time.monotonic() < deadline:
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            except ChildProcessError:
                break
            if info is None:
                time.sleep(0.02)
        how = "ended"
        if info is not None and info.si_code in (os.CLD_KILLED, os.CLD_DUMPED):
            how = f"was killed by signal {info.si_status}"
        elif info is not None:
            how = f"exited with status {info.si_status}"
        return (f"the session process (pid {self.pid}) {how}: nothing more is sampled; "
                f"the journal {self.journal_path} keeps what it wrote")

    def _lose(self, why: str) -> None:
        from knobtop.journal.events import Error

        if self.lost is not None:
            return
        self.lost = why
        with self._lock:
            pending = list(self._pending.values())
            self._pending.clear()  # shared with the targets' views
        for p in pending:
            p.settle(False, SessionLost(why))
        event = Error(t=self.now(), wall=round(time.time(), 3), source=LOST_SOURCE,
                      message=why)
        loop = self._loop
        if loop is None:
            self._dispatch(event)
        else:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._dispatch, event)

    def _send(self, message: tuple[Any, ...]) -> None:
        if self.lost is not None:
            raise SessionLost(self.lost)
        try:
            with self._send_lock:
                self.conn.send(message)
        except (OSError, ValueError) as exc:
            raise SessionLost(f"the session process (pid {self.pid}) cannot be reached: "
                              f"{exc}") from None

    def _dispatch(self, event: Event) -> None:
        with self._dispatching:
            if self._early is not None:
                self._early.append(event)
                return
            for listener in list(self._listeners):
                listener(event)

    async def _call(self, name: str, *args: Any,
                    progress: Callable[[PrepareProgress], None] | None = None,
                    stopped: Callable[[], bool] | None = None, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        cid = next(self._ids)
        pending = _Pending(name, loop, progress)
        assert pending.future is not None
        with self._lock:
            self._pending[cid] = pending
        try:
            self._send(("call", cid, name, args, kwargs, self.target))
        except SessionLost:
            with self._lock:
                self._pending.pop(cid, None)
            raise
        watcher = loop.create_task(self._watch(cid, stopped)) if stopped is not None else None
        try:
            return await pending.future
        except asyncio.CancelledError:
            with contextlib.suppress(SessionLost):
                self._send(("cancel", cid))
            raise
        finally:
            if watcher is not None:
                watcher.cancel()

    async def _watch(self, cid: int, stopped: Callable[[], bool]) -> None:
        """Ask ``stopped()`` here and tell the child once it says yes."""
        while not stopped():  # noqa: ASYNC110 - a caller's predicate, not an event of ours
            await asyncio.sleep(STOPPED_POLL)
        with contextlib.suppress(SessionLost):
            self._send(("stop", cid))

    def _call_sync(self, name: str, /, *args: Any, **kwargs: Any) -> Any:
        cid = next(self._ids)
        pending = _Pending(name)
        with self._lock:
            self._pending[cid] = pending
        self._send(("call", cid, name, args, kwargs, self.target))
        if not pending.done.wait(SYNC_DEADLINE):
            with self._lock:
                self._pending.pop(cid, None)
            raise SessionLost(f"the session process (pid {self.pid}) did not answer "
                              f"{name} within {SYNC_DEADLINE:.0f} s")
        ok, value = pending.outcome
        if not ok:
            raise value
        return value

    # -- SessionPort
    def state(self) -> SessionState:
        if self.target:
            return self._target_states[self.target]
        assert self._state is not None  # the child sends its state before it says ready
        return dataclasses.replace(self._state, catalog=self._catalog)

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        with self._dispatching:
            self._listeners.append(listener)
            early, self._early = self._early, None
            for event in early or ():
                listener(event)

        def unsubscribe() -> None:
            with contextlib.suppress(ValueError):
                self._listeners.remove(listener)

        return unsubscribe

    def now(self) -> float:
        return round(time.monotonic() - self._t0, 4)

    async def open(self) -> Header:
        self._loop = asyncio.get_running_loop()  # listeners hear events on the opener's loop
        return cast("Header", await self._call("open"))

    async def close(self, reason: str = "quit") -> None:
        if self.lost is None:
            async with asyncio.timeout(CLOSE_DEADLINE):
                await self._call("close", reason)

    async def set_knob(self, name: str, value: str, *, restart_ok: bool = False,
                       reason: str = "", reach: Collection[str] = ()) -> Change:
        return cast("Change", await self._call("set_knob", name, value, restart_ok=restart_ok,
                                               reason=reason, reach=tuple(reach)))

    async def set_knobs(self, knobs: Mapping[str, str], *, restart_ok: bool = False,
                        reason: str = "", keep_load: bool = False,
                        reach: Collection[str] = ()) -> list[Change]:
        return cast("list[Change]", await self._call("set_knobs", dict(knobs),
                                                     restart_ok=restart_ok, reason=reason,
                                                     keep_load=keep_load, reach=tuple(reach)))

    async def undo(self, expected: Change | None = None) -> Change | None:
        return cast("Change | None", await self._call("undo", expected))

    async def baseline_diff(self) -> list[BaselineDiff]:
        return cast("list[BaselineDiff]", await self._call("baseline_diff"))

    async def revert_to_baseline(self, outside: bool = False) -> list[Change]:
        return cast("list[Change]", await self._call("revert_to_baseline", outside))

    async def preview_change(self, knob: str, value: str) -> Plan:
        return cast("Plan", await self._call("preview_change", knob, value))

    def revert_plan(self, diff: list[BaselineDiff]) -> str:
        return cast(str, self._call_sync("revert_plan", diff))

    def quit_choice(self, choice: str, diff: list[BaselineDiff]) -> Note:
        return cast("Note", self._call_sync("quit_choice", choice, diff))

    async def start_load(self, workload: str | None = None,
                         threads: int | None = None) -> Phase:
        return cast("Phase", await self._call("start_load", workload, threads))

    async def stop_load(self) -> None:
        await self._call("stop_load")

    async def toggle_load(self) -> None:
        await self._call("toggle_load")

    async def change_load(self, workload: str | None = None,
                          threads: int | None = None) -> LoadSpec:
        return cast("LoadSpec", await self._call("change_load", workload, threads))

    async def prepare_load(self,
                           progress: Callable[[PrepareProgress], None] | None = None) -> bool:
        return cast(bool, await self._call("prepare_load", progress=progress))

    def note(self, text: str) -> Note:
        return cast("Note", self._call_sync("note", text))

    def mark(self, label: str) -> Mark:
        return cast("Mark", self._call_sync("mark", label))

    def rebase_knobs(self, values: Mapping[str, str], why: str) -> Note:
        return cast("Note", self._call_sync("rebase_knobs", dict(values), why))

    async def incident_sampling(self, on: bool) -> None:
        await self._call("incident_sampling", on)

    def use_load(self, spec: LoadSpec) -> LoadSpec:
        return cast("LoadSpec", self._call_sync("use_load", spec))

    async def global_values(self, names: Sequence[str]) -> dict[str, str | None]:
        return cast("dict[str, str | None]", await self._call("global_values", list(names)))

    async def wait_for_purge(self, below: int, timeout: float,
                             stopped: Callable[[], bool]) -> PurgeWait:
        return cast("PurgeWait", await self._call("wait_for_purge", below, timeout,
                                                  stopped=stopped))

    def record(self, kind: Callable[Concatenate[float, float, Fields], Recorded], /,
               *args: Fields.args, **fields: Fields.kwargs) -> Recorded:
        # The kind goes by name (a class pickles as its module and name), its fields by
        # value; the session's process checks the kind, stamps, journals and returns it.
        return cast("Recorded", self._call_sync("record", kind, *args, **fields))

    async def footprint(self, sizes: bool = False) -> Footprint:
        return cast("Footprint", await self._call("footprint", sizes))

    async def probe(self, name: str, phase: str, params: Mapping[str, int],
                    counters: Sequence[str] = ()) -> ProbeReading:
        return cast("ProbeReading", await self._call("probe", name, phase, dict(params),
                                                     list(counters)))

    async def conditions(self) -> Conditions:
        return cast("Conditions", await self._call("conditions"))

    def tell(self, kind: Callable[Concatenate[float, float, Fields], Progress], /,
             *args: Fields.args, **fields: Fields.kwargs) -> Progress:
        return cast("Progress", self._call_sync("tell", kind, *args, **fields))

    async def run_recipe(self, order: RunOrder[Report]) -> Report:
        # The order goes by value (its fields pickled); it runs in the session's process,
        # its progress comes back as events, its report as the call's result.
        return cast("Report", await self._call("run_recipe", order))

    def abort_recipe(self) -> None:
        self._call_sync("abort_recipe")


__all__ = ["CLOSE_DEADLINE", "Ready", "RemoteSession", "SessionLost"]
