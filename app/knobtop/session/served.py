"""The session's side of its process: build the session, open it, serve it over the socket.

:func:`child` is the forked process's whole life (see :mod:`knobtop.session.process`): the
session is built on the terminal, opened, then :class:`_Server` runs calls from the screen
as tasks on the session's loop, and sends results, events and state back through a writer
thread (pickling and sending never hold the loop).  The screen gone (end of file, SIGTERM
from the kernel, SIGHUP from the terminal), the session closes and the sandbox it started
stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import pickle
import queue
import signal
import threading
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Any

from knobtop.errors import KnobtopError
from knobtop.session.port import SessionState
from knobtop.session.remote import CLOSE_DEADLINE, Ready, SessionLost
from knobtop.session.targets import Targets

if TYPE_CHECKING:
    from knobtop.journal.events import Event, Header
    from knobtop.session.build import Feedback
    from knobtop.session.core import Session
    from knobtop.session.options import SessionOptions

SAMPLER_PRIORITY = 10  # nice steps the session's process takes, where real-time is refused
MAX_QUEUED = 20_000  # samples held for a screen that does not read; beyond, they are dropped

# The port's calls the child serves (anything else is refused).
ASYNC_CALLS = frozenset({
    "open", "close", "set_knob", "set_knobs", "undo", "baseline_diff", "revert_to_baseline",
    "start_load", "stop_load", "toggle_load", "change_load", "prepare_load",
    "incident_sampling", "global_values", "wait_for_purge", "footprint", "preview_change",
    "probe", "conditions", "run_recipe",
})
SYNC_CALLS = frozenset({
    "revert_plan", "quit_choice", "note", "mark", "rebase_knobs", "use_load", "record",
    "tell", "abort_recipe",
})

_PR_SET_PDEATHSIG = 1


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

    def __init__(self, session: Session, conn: Connection,
                 others: dict[str, Session] | None = None) -> None:
        self.session = session
        # A recipe's further servers (issue 19): their sessions by name, opened and closed
        # with this one as one journal; a call names the session it is for.
        self.sessions: dict[str, Session] = {**(others or {}), "": session}
        self.group = Targets(session, others) if others else None
        if self.group is not None:  # a recipe run here drives them beside its own server
            session.runs.attach({n: p for n, p in self.group.ports.items() if n})
        self._sent_targets: dict[str, SessionState] = {}
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
        for name, session in self.sessions.items():
            if not name:
                continue
            other = session.state()  # with its catalog: sent again only when it changes
            if other != self._sent_targets.get(name):
                self._sent_targets[name] = other
                self.out.put(("tstate", name, other))

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
            except Exception as exc:  # a message that does not unpickle here: no call of
                # it can be answered, so the session ends (the screen hears its process
                # end: every call waiting fails) rather than leave a caller waiting forever
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(
                        self.session.recorder.error, "session process",
                        f"a message from the screen could not be read ({type(exc).__name__}: "
                        f"{exc}); the session ends")
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
                    self.header = await (self.group.open() if self.group is not None
                                         else self.session.open())
                except Exception as exc:
                    self.out.put(("failed", _portable(exc)))
                    return
                self.push_state()  # the screen reads state() as soon as it hears "ready"
                self.out.put(("ready", self.ready))
            self._go_ahead(loop)
            while (message := await inbox.get()) is not None:
                kind = message[0]
                if kind == "call":
                    _, cid, name, args, kwargs, *target = message
                    self.tasks[cid] = loop.create_task(
                        self._call(cid, name, args, kwargs, target[0] if target else ""))
                elif kind == "stop":
                    self.stopped.add(message[1])
                elif kind == "cancel" and message[1] in self.tasks:
                    self.tasks[message[1]].cancel()
        finally:
            # The screen quit, was killed, or this process was told to end: the session
            # closes whatever was in flight (close waits for a restart to finish). From
            # here on a second signal (the terminal's hang-up after the kernel's SIGTERM)
            # is ignored, not handed back to the default action (which would end this
            # process before it stops its sandbox) when the loop closes.
            for sig in (signal.SIGTERM, signal.SIGHUP):
                loop.remove_signal_handler(sig)
                signal.signal(sig, signal.SIG_IGN)
            if self.session.runs.running:  # the run restores the baseline, then closes
                self.session.abort_recipe()
                running = [t for t in self.tasks.values() if not t.done()]
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(CLOSE_DEADLINE):
                        await asyncio.gather(*running, return_exceptions=True)
            if not self.closed:
                # Nobody watches the terminal any more (it may be gone: writing to it
                # would fail and skip the rest): what follows goes nowhere.
                _quiet()
                with contextlib.suppress(Exception):
                    async with asyncio.timeout(CLOSE_DEADLINE):
                        await (self.group.close("the screen ended") if self.group is not None
                               else self.session.close("the screen ended"))
            for task in self.tasks.values():
                task.cancel()
            unsubscribe()
            self.out.put(None)
            await asyncio.to_thread(writer.join, 5.0)

    def _go_ahead(self, loop: asyncio.AbstractEventLoop) -> None:
        """Samples are due on a grid whatever else runs: every thread of this process
        (the sampler's loop, the journal's, the socket's) goes ahead of the screen and of
        the load, where the system allows; what it starts runs as knobtop was started."""
        from knobtop.hosts.local import SESSION_REALTIME, raise_priority, realtime_threads

        rec = self.session.recorder

        def demoted(why: str) -> None:  # in a signal handler: the journal is told later
            loop.call_soon_threadsafe(rec.error, "session process", why)

        if not realtime_threads(demoted, priority=SESSION_REALTIME):
            raise_priority(SAMPLER_PRIORITY)  # all there is without real-time rights

    async def _call(self, cid: int, name: str, args: tuple[Any, ...],
                    kwargs: dict[str, Any], target: str = "") -> None:
        try:
            if name not in ASYNC_CALLS and name not in SYNC_CALLS:
                raise KnobtopError(f"the session process has no call named {name!r}")
            session = self.sessions.get(target)
            if session is None:
                raise KnobtopError(f"the session process has no target {target!r}")
            if name == "prepare_load":
                kwargs["progress"] = lambda p: self.out.put(("progress", cid, p))
            elif name == "wait_for_purge":
                kwargs["stopped"] = lambda: cid in self.stopped
            if name == "open" and self.header is not None:
                value: Any = self.header  # opened before the screen asked
            elif name == "close" and self.group is not None:
                await self.group.close(*args, **kwargs)  # every target, then the journal
                value = None
            else:
                value = getattr(session, name)(*args, **kwargs)
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


def child(options: SessionOptions, feedback: Feedback, conn: Connection, parent: int) -> int:
    """The child's whole life: build the session, serve it, put it away; the exit code."""
    from knobtop.session.build import build_session

    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:  # the screen died before the line above took effect
        return 1
    for sig in (signal.SIGTERM, signal.SIGHUP):  # until the loop takes them
        signal.signal(sig, signal.default_int_handler)
    try:
        with contextlib.ExitStack() as stack:
            built = {name: stack.enter_context(build_session(o, feedback))
                     for name, o in options.targets}
            live = stack.enter_context(build_session(options, feedback))
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # keys belong to the screen now
            server = _Server(live.session, conn, {n: b.session for n, b in built.items()})
            server.ready = Ready(live.journal_path, live.sandbox_root, tuple(built),
                                 tuple(b.sandbox_root for b in built.values()
                                       if b.sandbox_root is not None))
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


__all__ = ["child"]
