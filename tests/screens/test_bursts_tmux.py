"""Keys typed in one burst with the key that opens a dialog go to that dialog, in order
(issue 37, item 3): each burst is one ``tmux send-keys`` call, so the screen reads it in
one go, as from a paste or a laggy SSH link. The real screen and session processes of
``knobtop lab``, over their socket, in one real tmux pane shared by the module's checks
(in file order), against one sandbox; every effect is read from the server and the
journal."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest

from conftest import show_global
from harness.cli import knobtop_argv
from harness.tmux import TmuxServer, pane_server
from knobtop.journal import Change, JournalReader
from knobtop.journal.events import Event, Mark, Note, Phase
from knobtop.server.link import ConnectionInfo

pytestmark = pytest.mark.integration
T = TypeVar("T")


@dataclass
class LabScreen:
    tmux: TmuxServer
    pane: str
    journal: Path
    info: ConnectionInfo

    def send(self, *keys: str) -> None:
        """One burst: every key in one send-keys call (text that is no key name is typed
        as it is)."""
        self.tmux.run("send-keys", "-t", self.pane, *keys)

    def events(self) -> list[Event]:
        return list(JournalReader(self.journal)) if self.journal.exists() else []

    def changes(self) -> list[tuple[str, str | None, str, str]]:
        return [(e.knob, e.new, e.result, e.reason) for e in self.events()
                if isinstance(e, Change)]

    def wait_until(self, what: str, found: Callable[[], T | None], timeout: float = 30) -> T:
        """Poll until ``found`` returns something (bounded); the pane is in the error."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = found()
            if value:
                return value
            time.sleep(0.2)
        raise AssertionError(f"{what}: not seen within {timeout:g} s; the pane shows:\n"
                             + "\n".join(self.tmux.capture(self.pane)))

    def new_changes(self, before: int, count: int = 1) -> list[tuple[str, str | None, str, str]]:
        return self.wait_until(f"{count} new change(s) in the journal",
                               lambda: self.changes()[before:]
                               if len(self.changes()) >= before + count else None)

    def server(self, knob: str) -> str:
        return asyncio.run(show_global(self.info, knob))




@pytest.fixture(scope="module")
def screen(lab: tuple[Path, ConnectionInfo],
           tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabScreen]:
    """The lab's live screen at 160x48 with a slow sysbench load running (a threads or
    workload change journals a new phase), the knob panel's cursor on io_capacity."""
    where, info = lab
    tmp = tmp_path_factory.mktemp("bursts")
    tmux = pane_server(tmp)
    journal = tmp / "bursts.knobtop.jsonl"
    try:
        session = f"knobtop-{tmux.socket}"
        tmux.new_session(session, "lab", 160, 48, [
            *knobtop_argv(), "lab", "--dir", str(where), "--journal", str(journal),
            "--load", "oltp_point_select", "--threads", "1", "--rate", "5", "--tables", "1",
            "--table-size", "100", "--keep-running"], cwd=tmp)
        lab_screen = LabScreen(tmux, f"{session}:lab", journal, info)
        tmux.wait_for(lab_screen.pane, lambda s: any(
            r.partition("│ innodb_io_capacity ")[2].split()[:1] == ["200"] for r in s),
            timeout=300, what="the live screen with its knobs")
        lab_screen.wait_until("the load running", lambda: any(
            isinstance(e, Phase) and e.action == "start" for e in lab_screen.events()),
            timeout=120)
        # The cursor to io_capacity (the fifth knob), and a dialog seen open and closed: the
        # screen takes keys.
        lab_screen.send("Down", "Down", "Down", "Down")
        lab_screen.send("Enter")
        tmux.wait_for(lab_screen.pane, lambda s: any(
            "Set innodb_io_capacity" in r and "_max" not in r for r in s), timeout=30,
            what="io_capacity's dialog")
        lab_screen.send("Escape")
        tmux.wait_for(lab_screen.pane, lambda s: "Set innodb" not in "\n".join(s), timeout=30,
                      what="the dialog closed")
        yield lab_screen
    finally:
        tmux.kill()


def test_enter_and_a_value_in_one_burst_set_that_value(screen: LabScreen) -> None:
    """The issue's burst: the dialog opens with 200 selected, 1000 replaces it."""
    before = len(screen.changes())
    screen.send("Enter", "1", "0", "0", "0", "Enter")
    assert screen.new_changes(before) == [("innodb_io_capacity", "1000", "ok", "")]
    assert screen.server("innodb_io_capacity") == "1000"


def test_the_value_it_holds_is_journaled_unchanged_not_ok(screen: LabScreen) -> None:
    before = len(screen.changes())
    screen.send("Enter", "Enter")  # the dialog opens with 1000: Enter asks for 1000 again
    assert screen.new_changes(before) == [("innodb_io_capacity", "1000", "unchanged", "")]
    change = [e for e in screen.events() if isinstance(e, Change)][-1]
    assert change.message == "innodb_io_capacity was 1000 already: nothing changed"
    # Said in a notice; the journal pane lists the change from 200 only.
    shown = screen.tmux.wait_for(screen.pane, lambda s: "nothing changed" in "\n".join(s),
                                 timeout=30, what="the notice")
    assert "innodb_io_capacity=1000 (was 200)" in "\n".join(shown)
    assert "(was 1000)" not in "\n".join(shown)


def test_a_note_and_a_mark_typed_behind_n_are_journaled_in_order(screen: LabScreen) -> None:
    screen.send("n", "typed in one burst", "Enter", "m")

    def note_then_mark() -> list[tuple[str, str]] | None:
        got = [(e.kind, e.text if isinstance(e, Note) else e.label) for e in screen.events()
               if isinstance(e, Note | Mark)]
        return got if len(got) >= 2 else None

    assert screen.wait_until("a note and a mark", note_then_mark) == [
        ("note", "typed in one burst"), ("mark", "mark 1")]


def test_threads_and_a_workload_typed_behind_t_and_w_start_their_phases(
        screen: LabScreen) -> None:
    """The threads dialog opens with 1 selected (8 replaces it); the workload picker with
    the running one highlighted (Down picks the next)."""
    screen.send("t", "8", "Enter")
    started = screen.wait_until("a phase of 8 threads", lambda: [
        e for e in screen.events() if isinstance(e, Phase) and e.action == "start"
        and e.threads == 8])
    assert started[0].workload == "oltp_point_select"
    screen.send("w", "Down", "Enter")
    started = screen.wait_until("a phase of the next workload", lambda: [
        e for e in screen.events() if isinstance(e, Phase) and e.action == "start"
        and e.workload == "oltp_read_only"])
    assert started[0].threads == 8


def test_the_palette_typed_in_one_burst_opens_the_knobs_dialog(screen: LabScreen) -> None:
    """Ctrl+P, a knob's name, Enter (its first hit: that knob's dialog), a value, Enter."""
    before = len(screen.changes())
    screen.send("C-p", "innodb_io_capacity_max", "Enter", "3000", "Enter")
    assert screen.new_changes(before) == [("innodb_io_capacity_max", "3000", "ok", "")]
    assert screen.server("innodb_io_capacity_max") == "3000"


def test_revert_typed_behind_b_answers_its_dialog(screen: LabScreen) -> None:
    """b reads what differs before its dialog opens: the y typed behind it waits for it."""
    before = len(screen.changes())
    screen.send("b", "y")
    reverted = screen.new_changes(before, 2)
    assert sorted(reverted) == [("innodb_io_capacity", "200", "ok", "revert to baseline"),
                                ("innodb_io_capacity_max", "2000", "ok", "revert to baseline")]
    assert screen.server("innodb_io_capacity") == "200"


def test_quit_typed_behind_a_change_reverts_it_and_quits(screen: LabScreen) -> None:
    """A change, then q (which reads what differs before its dialog opens) and r."""
    before = len(screen.changes())
    screen.send("Enter", "500", "Enter", "q", "r")
    assert screen.tmux.exit_status(screen.pane, timeout=120) == "0"
    assert screen.changes()[before:] == [
        ("innodb_io_capacity", "500", "ok", ""),
        ("innodb_io_capacity", "200", "ok", "revert to baseline")]
    assert screen.server("innodb_io_capacity") == "200"
    notes = [e.text for e in screen.events() if isinstance(e, Note)]
    assert notes[-1].startswith("quit: reverted to the baseline")
