"""The session in a process of its own: the sampler and the journal writer never wait for paint.

The live screen forks one child before it imports Textual.  The child builds the session
(the sandbox, the pre-flight, table preparation: on the terminal, before the screen takes it),
then serves the :class:`~knobtop.session.port.SessionPort` over a socket pair: calls go in,
results, every journal event and the session's state come out.  The screen holds a
:class:`RemoteSession`, which *is* a SessionPort, so the app cannot tell the difference, and
a screen starved of CPU (resized, scrolled, beside a saturating load) delays only what it
shows, never a sample.

Either side may die, even by ``kill -9``:

* the screen: the kernel sends the child SIGTERM (``PR_SET_PDEATHSIG``) and its socket reads
  end of file; it closes the session (stops the load, writes ``end``) and stops a sandbox it
  started.  Load generators die with the child (they have the same death signal);
* the child: every pending call fails with :class:`SessionLost`, subscribers get an
  ``error`` event from source ``session process`` (the screen exits with its message), and
  the screen stops the sandbox the child had started.  The journal holds every line the
  child wrote (each line is written whole and flushed).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import os
import pickle
import queue
import signal
import socket
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from knobtop.errors import KnobtopError
from knobtop.session.port import LOST_SOURCE, BaselineDiff, Listener, SessionState

if TYPE_CHECKING:
    from knobtop.journal.events import (
        Change,
        Event,
        Header,
        JsonDict,
        Mark,
        Note,
        Phase,
        RecipeRun,
        StepResult,
    )
    from knobtop.load.base import LoadSpec
    from knobtop.load.sysbench_output import PrepareProgress
    from knobtop.server.variables import PurgeWait
    from knobtop.session.build import Feedback
    from knobtop.session.core import Session
    from knobtop.session.options import SessionOptions

SYNC_DEADLINE = 10.0  # a plain call (a note, a plan) answers in milliseconds
CLOSE_DEADLINE = 900.0  # close waits for a static change in flight (a restart, a rollback)
EXIT_DEADLINE = 120.0  # the child stops its sandbox after the session closes
STOPPED_POLL = 0.2  # how often a wait's "stopped?" question is asked on the screen's side
SAMPLER_PRIORITY = 10  # nice steps the session's process takes over the screen, if allowed
MAX_QUEUED = 20_000  # samples held for a screen that does not read; beyond, they are dropped

# The port's calls the child serves (anything else is refused).
ASYNC_CALLS = frozenset({
    "open", "close", "set_knob", "set_knobs", "undo", "baseline_diff", "revert_to_baseline",
    "start_load", "stop_load", "toggle_load", "change_load", "prepare_load",
    "incident_sampling", "global_values", "wait_for_purge",
})
SYNC_CALLS = frozenset({
    "restart_plan", "revert_plan", "quit_choice", "note", "mark", "use_load", "recipe_event",
    "step_result",
})

_PR_SET_PDEATHSIG = 1


class SessionLost(KnobtopError, RuntimeError):
    """The session's process ended (or stopped answering) before the screen did."""


@dataclass(frozen=True)
class Ready:
    """What the child says once its session is built."""

    journal_path: Path
    sandbox_root: Path | None  # a sandbox the child started (to stop if the child dies)


def _prctl(option: int, value: int) -> None:
    import ctypes

    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(option, value)


def _portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling, else a KnobtopError (or RuntimeError) with its words."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        if isinstance(exc, KnobtopError):
            return KnobtopError(str(exc) or type(exc).__name__)
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


# -- the child ------------------------------------------------------------------------------


class _Server:
    """The child's side: one session, calls from the socket, events and state to it."""

    def __init__(self, session: Session, conn: Connection) -> None:
        self.session = session
        self.conn = conn
        self.out: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.tasks: dict[int, asyncio.Task[None]] = {}
        self.stopped: set[int] = set()
        self.closed = False
        self.dropped = 0
        self._sent_state: SessionState | None = None
        self.ready: Ready | None = None  # said once the session is open
        self.header: Header | None = None
        self._sent_catalog: object = None

    # -- out
    def _write(self) -> None:
        """The writer thread: pickling and sending never hold the session's loop."""
        while (item := self.out.get()) is not None:
            try:
                self.conn.send(item)
            except (OSError, ValueError):
                return  # the screen is gone; the reader sees it too

    def push_state(self) -> None:
        state = self.session.state()
        if state.catalog is not self._sent_catalog:
            self._sent_catalog = state.catalog
            self.out.put(("catalog", state.catalog))
        bare = dataclasses.replace(state, catalog=None)
        if bare != self._sent_state:
            self._sent_state = bare
            self.out.put(("state", bare, self.session.recorder.t0))

    def on_event(self, event: Event) -> None:
        from knobtop.journal.events import Sample

        if isinstance(event, Sample) and self.out.qsize() > MAX_QUEUED:
            self.dropped += 1  # the screen stopped reading; the journal has it
            return
        self.out.put(("event", event))
        self.push_state()

    # -- in
    def _read(self, loop: asyncio.AbstractEventLoop, inbox: asyncio.Queue[Any]) -> None:
        """The reader thread: each message onto the loop; None at end of file."""
        while True:
            try:
                message = self.conn.recv()
            except (EOFError, OSError):
                message = None
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(inbox.put_nowait, message)
            if message is None:
                return

    async def serve(self) -> None:
        loop = asyncio.get_running_loop()
        inbox: asyncio.Queue[Any] = asyncio.Queue()
        for sig in (signal.SIGTERM, signal.SIGHUP):  # told to end; the terminal closed
            loop.add_signal_handler(sig, inbox.put_nowait, None)
        writer = threading.Thread(target=self._write, name="knobtop-send", daemon=True)
        writer.start()
        threading.Thread(target=self._read, args=(loop, inbox), name="knobtop-receive",
                         daemon=True).start()
        unsubscribe = self.session.subscribe(self.on_event)
        try:
            if self.ready is not None:
                # Open now, while the screen is still starting: the first samples are
                # taken meanwhile and wait in the screen's RemoteSession for its listener.
                try:
                    self.header = await self.session.open()
                except Exception as exc:
                    self.out.put(("failed", _portable(exc)))
                    return
                self.push_state()  # the screen reads state() as soon as it hears "ready"
                self.out.put(("ready", self.ready))
            while (message := await inbox.get()) is not None:
                kind = message[0]
                if kind == "call":
                    _, cid, name, args, kwargs = message
                    self.tasks[cid] = loop.create_task(self._call(cid, name, args, kwargs))
                elif kind == "stop":
                    self.stopped.add(message[1])
                elif kind == "cancel" and message[1] in self.tasks:
                    self.tasks[message[1]].cancel()
        finally:
            # The screen quit, was killed, or this process was told to end: the session
            # closes whatever was in flight (close waits for a restart to finish).
            if not self.closed:
                # Nobody watches the terminal any more (it may be gone: writing to it
                # would fail and skip the rest): what follows goes nowhere.
                _quiet()
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(CLOSE_DEADLINE):
                        await self.session.close("the screen ended")
            for task in self.tasks.values():
                task.cancel()
            unsubscribe()
            self.out.put(None)
            await asyncio.to_thread(writer.join, 5.0)

    async def _call(self, cid: int, name: str, args: tuple[Any, ...],
                    kwargs: dict[str, Any]) -> None:
        try:
            if name not in ASYNC_CALLS and name not in SYNC_CALLS:
                raise KnobtopError(f"the session process has no call named {name!r}")
            if name == "prepare_load":
                kwargs["progress"] = lambda p: self.out.put(("progress", cid, p))
            elif name == "wait_for_purge":
                kwargs["stopped"] = lambda: cid in self.stopped
            if name == "open" and self.header is not None:
                value: Any = self.header  # opened before the screen asked
            else:
                value = getattr(self.session, name)(*args, **kwargs)
                if name in ASYNC_CALLS:
                    value = await value
            if name == "close":
                self.closed = True
        except asyncio.CancelledError:
            self.push_state()
            self.out.put(("raise", cid, SessionLost(f"{name} was cancelled")))
        except Exception as exc:
            self.push_state()
            self.out.put(("raise", cid, _portable(exc)))
        else:
            self.push_state()  # before the result: the caller reads state() right after
            self.out.put(("result", cid, value))
        finally:
            self.tasks.pop(cid, None)
            self.stopped.discard(cid)


def _quiet() -> None:
    """Point this process's stdout and stderr at /dev/null."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)


def _child(options: SessionOptions, feedback: Feedback, conn: Connection, parent: int) -> int:
    """The child's whole life: build the session, serve it, put it away; the exit code."""
    from knobtop.hosts.local import raise_priority
    from knobtop.session.build import build_session

    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the screen died before the line above took effect
        return 1
    for sig in (signal.SIGTERM, signal.SIGHUP):  # until the loop takes them
        signal.signal(sig, signal.default_int_handler)
    try:
        with build_session(options, feedback) as live:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # keys belong to the screen now
            # Samples are due on a grid whatever else runs: this process goes ahead of
            # the screen and of the load where the system allows (root, CAP_SYS_NICE);
            # what it starts runs at the priority knobtop was given.
            raise_priority(SAMPLER_PRIORITY)
            server = _Server(live.session, conn)
            server.ready = Ready(live.journal_path, live.sandbox_root)
            try:
                asyncio.run(server.serve())
            finally:
                # The session is closed; what is left (stopping the sandbox) is bounded
                # and must not be cut short by a second signal (the terminal's hang-up).
                for sig in (signal.SIGTERM, signal.SIGHUP):
                    signal.signal(sig, signal.SIG_IGN)
    except KeyboardInterrupt:
        return 130
    except BaseException as exc:
        with contextlib.suppress(OSError, ValueError):
            conn.send(("failed", _portable(exc)))
        return 2
    return 0


# -- the screen's side ----------------------------------------------------------------------


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

    # -- the socket
    def take(self, message: tuple[Any, ...]) -> None:
        """One message from the child (the reader thread; also before it starts)."""
        kind = message[0]
        if kind == "state":
            self._state, self._t0 = message[1], message[2]
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
            pending, self._pending = list(self._pending.values()), {}
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
            self._send(("call", cid, name, args, kwargs))
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

    def _call_sync(self, name: str, *args: Any, **kwargs: Any) -> Any:
        cid = next(self._ids)
        pending = _Pending(name)
        with self._lock:
            self._pending[cid] = pending
        self._send(("call", cid, name, args, kwargs))
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
                       reason: str = "") -> Change:
        return cast("Change", await self._call("set_knob", name, value, restart_ok=restart_ok,
                                               reason=reason))

    async def set_knobs(self, knobs: Mapping[str, str], *, restart_ok: bool = False,
                        reason: str = "") -> list[Change]:
        return cast("list[Change]", await self._call("set_knobs", dict(knobs),
                                                     restart_ok=restart_ok, reason=reason))

    async def undo(self, expected: Change | None = None) -> Change | None:
        return cast("Change | None", await self._call("undo", expected))

    async def baseline_diff(self) -> list[BaselineDiff]:
        return cast("list[BaselineDiff]", await self._call("baseline_diff"))

    async def revert_to_baseline(self) -> list[Change]:
        return cast("list[Change]", await self._call("revert_to_baseline"))

    def restart_plan(self) -> str:
        return cast(str, self._call_sync("restart_plan"))

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

    def recipe_event(self, action: str, name: str, plan: JsonDict | None = None,
                     message: str = "") -> RecipeRun:
        return cast("RecipeRun", self._call_sync("recipe_event", action, name, plan, message))

    def step_result(self, **fields: Any) -> StepResult:
        return cast("StepResult", self._call_sync("step_result", **fields))


@dataclass(frozen=True)
class RemoteLive:
    """A session running in its own process, as the screen holds it."""

    session: RemoteSession
    journal_path: Path


@contextlib.contextmanager
def session_process(options: SessionOptions, feedback: Feedback,
                    meanwhile: Callable[[], object] = lambda: None) -> Iterator[RemoteLive]:
    """Fork the session's process, run ``meanwhile`` here (the screen's imports: the two
    start in parallel), wait until its session is built and open (it may ask on the
    terminal meanwhile), and yield the screen's handle on it.  At the end the socket
    closes: the child closes the session (if the screen did not), stops its sandbox and
    exits."""
    ours, theirs = socket.socketpair()
    parent = os.getpid()
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            ours.close()
            code = _child(options, feedback, Connection(theirs.detach()), parent)
        finally:
            os._exit(code)
    theirs.close()
    conn = Connection(ours.detach())
    remote: RemoteSession | None = None
    try:
        meanwhile()
        remote = _wait_ready(conn, pid)
        remote.start_reading()
        yield RemoteLive(remote, remote.journal_path)
    finally:
        _hang_up(conn)
        code = _wait_child(pid)
        root = remote.ready.sandbox_root if remote is not None else None
        if code != 0 and root is not None:
            # Killed (or crashed) before it could stop the sandbox it started: stop it
            # here. Its load generators died with it (they carry its death signal).
            from knobtop.lab import stop_lab

            with contextlib.suppress(Exception):
                feedback.say(stop_lab(root), highlight=False)


def _hang_up(conn: Connection) -> None:
    """End the socket for both sides now.  close() alone would not: the reader thread's
    blocked recv keeps the socket open, and the child would never hear end of file."""
    with contextlib.suppress(OSError):
        sock = socket.socket(fileno=os.dup(conn.fileno()))
        try:
            sock.shutdown(socket.SHUT_RDWR)
        finally:
            sock.close()
    with contextlib.suppress(OSError):
        conn.close()


def _wait_ready(conn: Connection, pid: int) -> RemoteSession:
    """Messages until ``ready`` (the session is built) or ``failed`` (its error, raised)."""
    pending: list[tuple[Any, ...]] = []
    try:
        while True:
            try:
                message = conn.recv()
            except (EOFError, OSError):
                raise SessionLost("the session process ended before its session was built "
                                  "(see the lines above)") from None
            if message[0] == "failed":
                raise message[1]
            if message[0] == "ready":
                ready: Ready = message[1]
                break
            pending.append(message)
    except KeyboardInterrupt:
        _hang_up(conn)
        _wait_child(pid)
        raise
    remote = RemoteSession(conn, pid, ready)
    for message in pending:
        remote.take(message)
    return remote


def _wait_child(pid: int) -> int:
    """Reap the child and return its exit code (negative: the signal that ended it); past
    EXIT_DEADLINE it is killed (it had its chance to close)."""
    deadline = time.monotonic() + EXIT_DEADLINE
    while True:
        try:
            done, status = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return 0
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.05)


__all__ = ["RemoteLive", "RemoteSession", "SessionLost", "session_process"]
