"""SessionThread: a Session on its own event loop in its own thread."""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from knobtop.session.port import SessionPort

T = TypeVar("T")


class SessionThread:
    """Runs a Session on its own event loop in its own thread.

    The screen's loop can be busy painting while load saturates the box; the
    sampler must not wait for it.  Calls cross over with ``submit``; events
    come back through the session's listeners (called on this thread).
    """

    def __init__(self, session: SessionPort) -> None:
        self.session = session
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._run, name="knobtop-session", daemon=True)
        self._started = False

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_forever()

    def start(self) -> None:
        if not self._started:
            self._thread.start()
            self._started = True

    def submit(self, coro: Coroutine[Any, Any, T]) -> concurrent.futures.Future[T]:
        return asyncio.run_coroutine_threadsafe(coro, self._loop)

    def call(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        async def wrapper() -> T:
            return fn()

        return self.submit(wrapper())

    def stop(self, reason: str = "quit", timeout: float = 900.0) -> None:
        """Close the session (waiting for a knob change in flight) and end the thread."""
        if not self._started:
            return
        try:
            self.submit(self.session.close(reason)).result(timeout)
        except Exception:
            pass
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=5)
            self._started = False
            if not self._thread.is_alive():
                self._loop.close()


__all__ = ["SessionThread"]
