"""headless.py through the port alone: a stand-in session that has nothing but port methods.

Real sessions (sandbox server, sysbench) are in test_lab_headless.py; here the front end's own
logic: the log lines, the summary from the events, --set on schedule, the changes put back.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from knobtop.headless import Tally, describe, run_headless
from knobtop.journal.events import Change, End, Event, Note, Phase, Sample
from knobtop.session.options import ScheduledChange
from knobtop.session.port import SessionState


class PortOnly:
    """What SessionPort offers headless, and nothing else (an attribute it reached for
    behind the port would be an AttributeError here)."""

    def __init__(self) -> None:
        self.listeners: list[Callable[[Event], None]] = []
        self.running = False
        self.opened = False
        self.set: list[tuple[str, str]] = []
        self.reverted = False
        self.closed: str | None = None

    def _emit(self, event: Event) -> None:
        for listener in self.listeners:
            listener(event)

    def state(self) -> SessionState:
        return SessionState(
            profile="fake", journal_path=Path("/j.knobtop.jsonl") if self.opened else None,
            journal_error=None, header=None, catalog=None, history=(), load=None,
            load_running=self.running, load_sources=(), restart_in_progress=False)

    def subscribe(self, listener: Callable[[Event], None]) -> Callable[[], None]:
        self.listeners.append(listener)
        return lambda: self.listeners.remove(listener)

    async def open(self) -> None:
        self.opened = True
        for t in range(3):
            self._emit(Sample(t=float(t), wall=0.0, v=[]))

    async def start_load(self) -> Phase:
        self.running = True
        phase = Phase(t=1.0, wall=0.0, action="start", phase=1, driver="d", workload="w",
                      threads=4)
        self._emit(phase)
        return phase

    async def stop_load(self) -> None:
        self.running = False

    async def set_knob(self, name: str, value: str, **_: Any) -> Change:
        self.set.append((name, value))
        change = Change(t=2.0, wall=0.0, knob=name, requested=value, old="1", new=value,
                        method="SET GLOBAL", result="ok")
        self._emit(change)
        return change

    async def baseline_diff(self) -> list[str]:
        return [name for name, _ in self.set]

    async def revert_to_baseline(self) -> list[Change]:
        self.reverted = True
        return []

    def quit_choice(self, choice: str, diff: list[str]) -> Note:
        return Note(t=3.0, wall=0.0, text=f"{choice} {diff}")

    async def close(self, reason: str = "quit") -> None:
        self.closed = reason
        self._emit(End(t=3.0, wall=0.0, reason=reason, samples=5))


def test_headless_uses_the_port_only(capsys: pytest.CaptureFixture[str]) -> None:
    port = PortOnly()
    console = Console(stderr=True, soft_wrap=True)
    change = ScheduledChange(0.0, "sort_buffer_size", "1M")
    code = asyncio.run(run_headless(port, 0.05, [change], True, console))  # type: ignore[arg-type]
    err = capsys.readouterr().err
    assert code == 0 and port.closed == "duration reached"
    assert port.set == [("sort_buffer_size", "1M")] and port.reverted and not port.running
    assert "Recording 0.05 s to /j.knobtop.jsonl" in err
    assert "change sort_buffer_size: 1 -> 1M [ok]" in err
    # The summary counts what the events said: the End event's samples, the phases seen.
    assert "5 samples, 1 load phase(s); duration reached" in err


def test_tally_and_describe() -> None:
    tally = Tally()
    for event in (Sample(t=0.0, wall=0.0, v=[]),
                  Phase(t=0.0, wall=0.0, action="failed", phase=2, driver="d", workload="w",
                        threads=1, message="no tables")):
        tally(event)
    assert (tally.samples, tally.phases) == (1, 2)
    assert describe(Sample(t=0.0, wall=0.0, v=[])) is None
    assert describe(Phase(t=0.0, wall=0.0, action="failed", phase=2, driver="d",
                          workload="w", threads=1, message="no tables")) == (
        "load failed: w x1 no tables")
