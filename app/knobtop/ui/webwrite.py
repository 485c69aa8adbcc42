"""Whole packets to textual-serve (`knobtop serve`'s viewers).

Textual's WebDriver (8.2.8) frames every packet to its parent on stdout, a pipe, with a
single ``os.write``: the app's writer thread sends screen updates and its input thread
sends a download's chunks (up to 64 KB), with no lock between them. A write larger than
the pipe's atomic size may be split and interleaved with the other thread's, and on a
non-blocking pipe that is full it writes part of the packet and drops the rest. Either way
the parent's framing breaks: CI saw a screenshot download end cut short in the middle of
the SVG on a busy machine. :func:`whole_writer` writes each packet completely, one at a
time.
"""

from __future__ import annotations

import os
import select
import threading
from collections.abc import Callable


def whole_writer(fd: int) -> Callable[[bytes], int]:
    """An ``os.write`` for ``fd`` that writes all of each packet before the next one
    (waiting for room on a full non-blocking pipe) and lets one thread write at a time."""
    lock = threading.Lock()

    def write(data: bytes) -> int:
        view = memoryview(data)
        with lock:
            while view:
                try:
                    done = os.write(fd, view)
                except BlockingIOError:
                    select.select([], [fd], [], 1.0)  # room again, or look again in 1 s
                    continue
                view = view[done:]
        return len(data)

    return write


def harden(driver: object) -> bool:
    """Give a WebDriver the whole-packet writer; False for any other driver."""
    import sys

    # The app's driver was imported to be made: a process whose driver module is not
    # loaded has no WebDriver (and the terminal's screen need not load its 9 modules).
    if "textual.drivers.web_driver" not in sys.modules:
        return False
    from textual.drivers.web_driver import WebDriver

    if not isinstance(driver, WebDriver):
        return False
    driver._write = whole_writer(driver.fileno)  # type: ignore[assignment]
    return True
