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

import contextlib
import gc
import os
import signal
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knobtop.session.remote import Ready, RemoteSession, SessionLost

if TYPE_CHECKING:
    from knobtop.session.build import Feedback
    from knobtop.session.options import SessionOptions

EXIT_DEADLINE = 120.0  # the child stops its sandbox after the session closes


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
    # What both imported stays shared after the fork where neither writes to it: out of
    # the collector's reach, its objects are not touched by either side's collections.
    gc.freeze()
    pid = os.fork()
    if pid == 0:  # the child
        code = 1
        try:
            ours.close()
            # Imported here, not before the fork: the session's modules (Session, the
            # sampler, the recorder) are the child's alone, and importing them takes
            # ~0.1 s the screen's own imports no longer wait for (row 3c of bench/).
            from knobtop.session.served import child

            code = child(options, feedback, Connection(theirs.detach()), parent)
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
        ready = remote.ready if remote is not None else None
        roots = [] if ready is None else [
            r for r in (ready.sandbox_root, *ready.target_roots) if r is not None]
        if code != 0 and roots:
            # Killed (or crashed) before it could stop the sandboxes it started: stop them
            # here. Its load generators died with it (they carry its death signal).
            from knobtop.lab import stop_lab

            for root in roots:
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
