"""SessionPort.record: a recipe run's events, stamped by the session; any other kind refused."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from knobtop.errors import KnobtopError
from knobtop.hosts.local import LocalHost
from knobtop.journal.events import (
    Change,
    Checkpoint,
    Event,
    Note,
    Progress,
    RecipeRun,
    Sample,
    StepResult,
    Trial,
)
from knobtop.server.link import ConnectionInfo
from knobtop.session.core import Session, SessionConfig
from knobtop.session.port import RECORDED


def unopened(tmp_path: Path) -> tuple[Session, list[Event]]:
    """A session that was never opened (no server: nothing is journaled) and what it says."""
    config = SessionConfig(profile="lab", connection=ConnectionInfo(port=9),
                           journal_path=tmp_path / "r.knobtop.jsonl")
    session = Session(config, LocalHost(), None)
    heard: list[Event] = []
    session.subscribe(heard.append)
    return session, heard


def test_the_allow_list_is_a_recipe_runs_five_kinds() -> None:
    # (its progress joined the four when the run moved into the session's process)
    assert (RecipeRun, StepResult, Checkpoint, Trial, Progress) == RECORDED


def test_tell_hands_a_runs_progress_to_the_listeners_without_a_journal_line(
        tmp_path: Path) -> None:
    session, heard = unopened(tmp_path)
    line = session.record(Progress, run="r", done=1, total=4, state="warming up", step=0,
                          arm="base", threads=8, replicate=1)
    tick = session.tell(Progress, run="r", done=1, total=4, state="warming up",
                        phase_left=3.0, step=0, arm="base", threads=8, replicate=1)
    assert heard == [line, tick]
    assert tick.label == "step 1/4: arm base x8 rep 1 — warming up, 3 s left"
    assert line.t <= tick.t
    with pytest.raises(KnobtopError, match="only a run's progress can be told"):
        session.tell(Note, text="hello")  # type: ignore[arg-type]
    assert heard == [line, tick]


def test_record_stamps_the_fields_it_is_given_and_says_it(tmp_path: Path) -> None:
    session, heard = unopened(tmp_path)
    before = time.time()
    start = session.record(RecipeRun, action="start", name="r", plan={"steps": 2})
    point = session.record(Checkpoint, recipe="r", at=5.0, window=2.0, values={"tps": 1.5})
    trial = session.record(Trial, tune="t", number=1, arm="a", knobs={"k": "1"},
                           objective=None)
    assert heard == [start, point, trial]
    assert (start.action, start.name, start.plan, start.message) == ("start", "r",
                                                                    {"steps": 2}, "")
    assert point.values == {"tps": 1.5} and trial.knobs == {"k": "1"}
    assert all(0 <= e.t <= session.now() and before - 1 <= e.wall <= time.time() + 1
               for e in heard)
    assert start.t <= point.t <= trial.t


@pytest.mark.parametrize(("kind", "fields"), [
    (Sample, {"v": [1]}),
    (Note, {"text": "hello"}),
    (Change, {"knob": "k", "requested": "1", "old": "0", "new": "1", "method": "set",
              "result": "ok"}),
    (Event, {}),
    (dict, {}),
])
def test_record_refuses_the_sessions_own_kinds(tmp_path: Path, kind: Any,
                                              fields: dict[str, Any]) -> None:
    session, heard = unopened(tmp_path)
    with pytest.raises(KnobtopError, match=r"a recipe run cannot record .* only RecipeRun"):
        session.record(kind, **fields)
    assert heard == []
