"""The terminal driver's quiet input thread (knobtop.ui.quietinput): it sleeps until there is
input, until a lone Escape has waited long enough to be the Escape key, or until the screen
stops; keys, Escape and quitting work as with Textual's own."""

from __future__ import annotations

import hashlib
import inspect
import os
import selectors
import sys
import threading
import time
from pathlib import Path

import pytest
from textual import events
from textual._xterm_parser import XTermParser
from textual.drivers.linux_driver import LinuxDriver

from harness import paths as repo_paths
from harness.tmux import pane_server
from knobtop.ui.quietinput import MADE_FROM, WakingEvent, wait_for

JOURNAL = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"

# sha256 of Textual's LinuxDriver.run_input_thread as QuietLinuxDriver's copy was made from.
MADE_FROM_SOURCE = "d796af6d69db337d"


def test_the_copy_is_of_the_method_textual_runs_now() -> None:
    """A Textual release that changes LinuxDriver.run_input_thread fails this: carry the
    change over to QuietLinuxDriver.run_input_thread, then record the new digest."""
    source = inspect.getsource(LinuxDriver.run_input_thread)
    digest = hashlib.sha256(source.encode()).hexdigest()[:16]
    assert digest == MADE_FROM_SOURCE, f"Textual's method changed since {MADE_FROM}"


def test_setting_the_exit_event_wakes_a_thread_waiting_in_select() -> None:
    event = WakingEvent()
    selector = selectors.SelectSelector()
    selector.register(event.read_fd, selectors.EVENT_READ)
    try:
        assert selector.select(0) == [] and not event.is_set()
        setter = threading.Timer(0.2, event.set)
        setter.start()
        began = time.monotonic()
        woke = selector.select(30)
        setter.join()
        assert woke and event.is_set() and time.monotonic() - began < 10
        event.set()  # twice: one clear takes both back
        event.clear()
        assert selector.select(0) == [] and not event.is_set()
    finally:
        selector.close()
        event.close()


def test_the_thread_sleeps_without_deadline_unless_an_escape_is_pending() -> None:
    parser = XTermParser()
    assert wait_for(parser) is None
    assert list(parser.feed("a")) and wait_for(parser) is None
    assert list(parser.feed("\x1b")) == []  # Escape, or the start of a sequence?
    left = wait_for(parser)
    assert left is not None and 0.0 < left <= 1.0
    time.sleep(left)  # the deadline this test checks, not a wait for something else
    keys = [e.key for e in parser.tick() if isinstance(e, events.Key)]
    assert keys == ["escape"] and wait_for(parser) is None


def voluntary_switches_of_other_threads(pid: int) -> int:
    """Times the process's threads other than its main thread gave up the CPU so far."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        if tid == str(pid):
            continue
        status = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        total += int(status.split("voluntary_ctxt_switches:")[1].split()[0])
    return total


@pytest.mark.integration
def test_in_a_terminal_the_input_thread_sleeps_yet_escape_and_quit_come_at_once(
        tmp_path: Path) -> None:
    tmux = pane_server(tmp_path)
    try:
        tmux.new_session("q", "replay", 120, 40,
                         [sys.executable, "-m", "knobtop", "replay", str(JOURNAL)], tmp_path)
        tmux.wait_for("q", lambda s: "Server TPS" in "\n".join(s), 60, "the replay screen")
        pid = int(tmux.display("q", "#{pane_pid}"))
        # The replay is paused and nothing is typed: once the first frames are written, its
        # threads besides the main one sleep. Textual's input thread alone would wake ten
        # times a second, 20 times in every window of 2 s.
        quiet, deadline = False, time.monotonic() + 30
        while not quiet and time.monotonic() < deadline:
            before = voluntary_switches_of_other_threads(pid)
            time.sleep(2.0)  # the window measured
            quiet = voluntary_switches_of_other_threads(pid) - before <= 4
        assert quiet

        tmux.run("send-keys", "-t", "q", "?")
        title = "knobtop replay: keys"
        tmux.wait_for("q", lambda s: title in "\n".join(s), 20, "the help screen")
        tmux.run("send-keys", "-t", "q", "Escape")  # a lone Escape: the parser's timeout
        tmux.wait_for("q", lambda s: title not in "\n".join(s), 5, "the help screen closed")
        tmux.run("send-keys", "-t", "q", "q")
        began = time.monotonic()
        assert tmux.exit_status("q", 10) == "0"
        assert time.monotonic() - began < 5
    finally:
        tmux.kill()
