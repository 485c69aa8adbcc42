"""Textual's terminal driver, with an input thread that sleeps until there is input.

Textual's ``LinuxDriver`` reads the terminal in a thread that wakes ten times a second
(``select`` with a 0.1 s timeout) to see whether a lone Escape has waited long enough to be
the Escape key rather than the start of a sequence, and whether it has been asked to stop.
On the idle live screen those wake-ups were 10 of the screen process's 18 a second and,
measured with py-spy, about a tenth of its CPU.

``QuietLinuxDriver`` waits for input, for the moment a pending sequence times out, or for
the driver to stop (its exit event writes to a pipe the thread also waits on), whichever
comes first. The rest of ``run_input_thread`` is Textual 8.2's, as written there: reading,
decoding and parsing are unchanged. ``tests/screens/test_quietinput.py`` notes when a Textual
release changes the method this one was made from.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
from codecs import getincrementaldecoder
from typing import Any

from textual._loop import loop_last
from textual._parser import ParseError
from textual._time import get_time
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

MADE_FROM = "textual 8.2 LinuxDriver.run_input_thread"


class WakingEvent(threading.Event):
    """A threading.Event that also makes a pipe readable while it is set, so a thread in
    ``select`` sees it at once."""

    def __init__(self) -> None:
        super().__init__()
        self.read_fd, self._write_fd = os.pipe()
        os.set_blocking(self.read_fd, False)
        os.set_blocking(self._write_fd, False)

    def set(self) -> None:
        super().set()
        with contextlib.suppress(BlockingIOError):  # already readable
            os.write(self._write_fd, b"x")

    def clear(self) -> None:
        super().clear()
        try:
            while os.read(self.read_fd, 512):
                pass
        except BlockingIOError:
            pass

    def close(self) -> None:
        os.close(self.read_fd)
        os.close(self._write_fd)


def wait_for(parser: XTermParser) -> float | None:
    """How long the input thread may sleep: until a pending sequence times out, if one is."""
    if not hasattr(parser, "_timeout_time"):  # not the parser this was made for: Textual's
        return 0.1
    deadline: float | None = parser._timeout_time
    if deadline is None:
        return None
    return max(0.0, deadline - get_time())


class QuietLinuxDriver(LinuxDriver):
    """LinuxDriver whose input thread wakes only when there is something to do."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.exit_event: WakingEvent = WakingEvent()

    def close(self) -> None:
        super().close()
        self.exit_event.close()

    def run_input_thread(self) -> None:
        """Wait for input and dispatch events (Textual's, with the timeout above)."""
        selector = selectors.SelectSelector()
        selector.register(self.fileno, selectors.EVENT_READ)
        selector.register(self.exit_event.read_fd, selectors.EVENT_READ)

        fileno = self.fileno
        EVENT_READ = selectors.EVENT_READ

        parser = XTermParser(self._debug)
        feed = parser.feed
        tick = parser.tick

        decode = getincrementaldecoder("utf-8")().decode
        read = os.read

        def process_selector_events(
            selector_events: list[tuple[selectors.SelectorKey, int]],
            final: bool = False,
        ) -> None:
            selector_events = [(key, mask) for key, mask in selector_events if key.fd == fileno]
            for last, (_selector_key, mask) in loop_last(selector_events):
                if mask & EVENT_READ:
                    unicode_data = decode(read(fileno, 1024 * 4), final=final and last)
                    if not unicode_data:
                        # This can occur if the stdin is piped
                        break
                    for event in feed(unicode_data):
                        self.process_message(event)
            for event in tick():
                self.process_message(event)

        try:
            while not self.exit_event.is_set():
                process_selector_events(selector.select(wait_for(parser)))
            selector.unregister(self.fileno)
            process_selector_events(selector.select(0.1), final=True)

        finally:
            selector.close()
            try:
                for _event in feed(""):
                    pass
            except (EOFError, ParseError):
                pass
