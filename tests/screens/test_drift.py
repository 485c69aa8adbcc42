"""Changes made outside knobtop (issue 37, finding 4 and item 5): the session reads its
watched knobs on a slow schedule of its own and journals a value it did not set as
``changed outside knobtop`` with the window it happened in; the panel, the graphs, revert,
undo and quit account for it; a second knobtop session on one sandbox is refused by the
lock the lab holds. On a real sandbox; the screen ones in a real tmux pane against the real
screen and session processes (``knobtop lab``)."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import show_global
from faults.helpers import knobtop_run
from harness.cli import knobtop_argv
from harness.tmux import TmuxServer, first_hit
from knobtop.hosts.local import LocalHost
from knobtop.journal import Change, JournalReader, Note
from knobtop.journal.events import Event, OutsideChange
from knobtop.lab import Sandbox
from knobtop.labdirs import SESSION_LOCK
from knobtop.server.knobs import KnobError
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.server.static import ServerNode
from knobtop.session.core import Session, SessionConfig
from knobtop.session.drift import DRIFT_DEADLINE, DRIFT_INTERVAL

pytestmark = pytest.mark.integration

IO = "innodb_io_capacity"


@pytest.fixture(scope="module")
def lab(lab_sandbox: tuple[Sandbox, ConnectionInfo]) -> tuple[Sandbox, ConnectionInfo]:
    """conftest's module sandbox, which the sessions of this module join (and leave
    running), as the Sandbox itself."""
    return lab_sandbox


async def set_outside(info: ConnectionInfo, name: str, value: int) -> None:
    """SET GLOBAL from another client (a link of its own, not knobtop's session)."""
    link = ServerLink(info)
    await link.connect()
    try:
        await link.query(f"SET GLOBAL {name} = %s", (value,))
    finally:
        await link.close()


def events(journal: Path) -> list[Event]:
    return list(JournalReader(journal)) if journal.exists() else []


def outside(journal: Path) -> list[OutsideChange]:
    return [e for e in events(journal) if isinstance(e, OutsideChange)]


async def until_outside(journal: Path, count: int, timeout: float) -> list[OutsideChange]:
    deadline = time.monotonic() + timeout
    # the journal is a file another process (or task) writes: polled, bounded
    while len(found := outside(journal)) < count \
            and time.monotonic() < deadline:  # noqa: ASYNC110
        await asyncio.sleep(0.05)
    return found


def session_on(info: ConnectionInfo, journal: Path, every: float,
               nodes: tuple[ServerNode, ...] = ()) -> Session:
    session = Session(SessionConfig(profile="lab", connection=info, journal_path=journal,
                                    nodes=nodes), LocalHost(), None)
    session.drift.interval = every  # the slow schedule, made quick (or never) for a test
    return session


# -- the session (a real server) ---------------------------------------------------------


async def test_a_value_another_client_sets_is_journaled_with_its_window(
        lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path) -> None:
    _, info = lab
    journal = tmp_path / "o.knobtop.jsonl"
    base = await show_global(info, IO)
    session = session_on(info, journal, every=0.3)
    await session.open()
    try:
        await asyncio.sleep(0.7)  # a read or two that saw the baseline
        before = session.now()
        await set_outside(info, IO, 300)
        after = session.now()
        found = await until_outside(journal, 1, timeout=10)
        assert [(e.knob, e.old, e.new) for e in found] == [(IO, base, "300")]
        event = found[0]
        # the window: from the last read that saw the old value to the one that saw the new
        assert event.since <= after and event.t >= before and event.since < event.t
        assert event.t - event.since < 0.3 + DRIFT_DEADLINE + 1
        assert event.text == f"changed outside knobtop: {IO} {base} -> 300"
        # revert and quit account for it: marked, and left unless chosen
        diff = await session.baseline_diff()
        assert [(d.knob, d.now, d.baseline, d.outside) for d in diff] == [
            (IO, "300", base, True)]
        assert "Changed outside knobtop, left as it is unless you choose otherwise: " \
            f"{IO}." in session.revert_plan(diff)
        assert await session.revert_to_baseline() == []
        assert await show_global(info, IO) == "300"
        assert session.quit_choice("revert", diff).text == (
            f"quit: kept on the server: {IO}=300 (baseline {base}, changed outside knobtop)")
        back = await session.revert_to_baseline(outside=True)
        assert [(c.knob, c.new, c.result) for c in back] == [(IO, base, "ok")]
        assert await show_global(info, IO) == base
        await asyncio.sleep(1.0)  # later reads see knobtop's own revert: not outside
        assert len(outside(journal)) == 1
    finally:
        await session.close()
        await set_outside(info, IO, int(base))


async def test_knobtops_own_changes_are_never_taken_for_outside_ones(
        lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path) -> None:
    """The watch reads as often as it can (every 10 ms) while knobtop changes knobs, with
    side effects, in groups, undone and reverted: none of it is said to be outside."""
    _, info = lab
    journal = tmp_path / "k.knobtop.jsonl"
    base = await show_global(info, IO)
    session = session_on(info, journal, every=0.01)
    await session.open()
    try:
        for value in ("3000", "200", "5000", "1000"):  # 3000, 5000 raise io_capacity_max too
            change = await session.set_knob(IO, value)
            assert change.result == "ok", change.message
            await asyncio.sleep(0.05)
        assert any(c.side_effects for c in session.state().history)
        group = await session.set_knobs({"sort_buffer_size": "1M", IO: "700"})
        assert [c.result for c in group] == ["ok", "ok"]
        assert (await session.undo()) is not None
        assert await session.set_knob("innodb_flush_log_at_trx_commit", "zzz") is not None
        reads = session.drift.reads
        await asyncio.sleep(0.5)
        assert session.drift.reads > reads  # the watch did read in between and after
        await session.revert_to_baseline()
        await asyncio.sleep(0.5)
        assert await show_global(info, IO) == base
        assert outside(journal) == []
    finally:
        await session.close()


async def test_a_value_found_by_a_change_of_knobtops_is_said_before_that_change(
        lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path) -> None:
    _, info = lab
    journal = tmp_path / "c.knobtop.jsonl"
    base = await show_global(info, "sort_buffer_size")
    session = session_on(info, journal, every=3600)  # the watch never reads here
    await session.open()
    try:
        await set_outside(info, "sort_buffer_size", 4 << 20)
        change = await session.set_knob("sort_buffer_size", "1M")
        assert change.old == str(4 << 20)
        said = [e for e in events(journal) if isinstance(e, OutsideChange | Change)]
        assert [(type(e).__name__, e.knob, e.old, e.new) for e in said] == [
            ("OutsideChange", "sort_buffer_size", base, str(4 << 20)),
            ("Change", "sort_buffer_size", str(4 << 20), str(1 << 20))]
        assert said[0].t <= said[1].t
        assert session.knobs.known.outside == {}  # knobtop's value now
    finally:
        await session.revert_to_baseline(outside=True)
        await session.close()


async def test_undo_undoes_only_knobtops_own_change(
        lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path) -> None:
    _, info = lab
    journal = tmp_path / "u.knobtop.jsonl"
    base = await show_global(info, IO)
    session = session_on(info, journal, every=3600)
    await session.open()
    try:
        assert (await session.set_knob(IO, "1000")).result == "ok"
        await set_outside(info, IO, 300)
        last = session.state().history[-1]
        with pytest.raises(KnobError, match=r"innodb_io_capacity was changed outside knobtop "
                           r"after this change \(1000 -> 300, journaled\): undo would "
                           "overwrite it"):
            await session.undo(last)
        assert await show_global(info, IO) == "300"
        assert session.state().history[-1] == last
        assert [(e.old, e.new) for e in outside(journal)] == [("1000", "300")]
    finally:
        await session.close()
        await set_outside(info, IO, int(base))


async def test_a_restart_of_knobtops_that_forgets_an_outside_value_is_its_side_effect(
        lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path) -> None:
    """A static change restarts the server, which forgets a value set live outside knobtop:
    knobtop's doing, journaled with its change (not as a change made outside it)."""
    sandbox, info = lab
    journal = tmp_path / "r.knobtop.jsonl"
    node = ServerNode(name="lab", host=LocalHost(), link=lambda: ServerLink(info),
                      restart_command=sandbox.restart_command(),
                      dropin_path=sandbox.dropin_file)
    base = await show_global(info, IO)
    session = session_on(info, journal, every=0.3, nodes=(node,))
    await session.open()
    try:
        await set_outside(info, IO, 300)
        assert len(await until_outside(journal, 1, timeout=10)) == 1
        static = await session.set_knob("innodb_doublewrite", "OFF", restart_ok=True)
        assert static.result == "ok", static.message
        assert static.side_effects == {IO: ["300", base]}
        await asyncio.sleep(1.0)  # reads after the restart: nothing more is outside
        assert [(e.old, e.new) for e in outside(journal)] == [(base, "300")]
    finally:
        await session.revert_to_baseline(outside=True)
        await session.close()
    assert await show_global(info, "innodb_doublewrite") == "ON"


# -- the live screen as users run it: knobtop lab in a real tmux pane ---------------------


def knob_row(screen: list[str], knob: str) -> str:
    """The knob panel's row of ``knob`` (compact at 80 columns: without ``innodb_``)."""
    short = knob.removeprefix("innodb_")
    return next((row for row in screen if re.search(rf"│ (innodb_)?{short} ", row)), "")


def open_lab(tmux: TmuxServer, where: Path, journal: Path, cwd: Path) -> str:
    name = f"knobtop-{tmux.socket}"
    tmux.new_session(name, "lab", 80, 24, [
        *knobtop_argv(), "lab", "--dir", str(where), "--journal", str(journal),
        "--load", "none", "--keep-running"], cwd=cwd)
    pane = f"{name}:lab"
    tmux.wait_for(pane, lambda s: "╭─ Knobs" in "\n".join(s), timeout=300,
                  what="the live screen")
    return pane


def set_by_palette(tmux: TmuxServer, pane: str, knob: str, value: str) -> None:
    tmux.run("send-keys", "-t", pane, "C-p")
    tmux.wait_for(pane, lambda s: "Search" in "\n".join(s), timeout=30, what="the palette")
    tmux.run("send-keys", "-t", pane, "-l", knob)
    tmux.wait_for(pane, lambda s: first_hit(s) == knob, timeout=30, what=f"{knob} first")
    tmux.run("send-keys", "-t", pane, "Enter")
    tmux.wait_for(pane, lambda s: any(f"Set {knob}" in r for r in s), timeout=30,
                  what="the knob dialog")
    tmux.run("send-keys", "-t", pane, "C-u")
    tmux.run("send-keys", "-t", pane, "-l", value)
    tmux.run("send-keys", "-t", pane, "Enter")
    tmux.wait_for(pane, lambda s: f"Set {knob}" not in "\n".join(s), timeout=30,
                  what="the dialog closing")


def test_the_live_screen_journals_shows_and_quits_with_an_outside_change(
        lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path, tmux: TmuxServer) -> None:
    sandbox, info = lab
    base = asyncio.run(show_global(info, IO))
    sort_base = asyncio.run(show_global(info, "sort_buffer_size"))
    journal = tmp_path / "live.knobtop.jsonl"
    try:
        pane = open_lab(tmux, sandbox.root, journal, tmp_path)
        # knobtop's own change first: the reads after it never call it outside
        set_by_palette(tmux, pane, "sort_buffer_size", "1M")
        asyncio.run(set_outside(info, IO, 300))
        began = time.monotonic()
        found = asyncio.run(until_outside(journal, 1, timeout=DRIFT_INTERVAL + DRIFT_DEADLINE
                                          + 5))
        took = time.monotonic() - began
        assert [(e.knob, e.old, e.new) for e in found] == [(IO, base, "300")]
        assert took <= DRIFT_INTERVAL + DRIFT_DEADLINE + 2, took
        # the panel says 300; the graphs mark it apart from knobtop's changes
        tmux.wait_for(pane, lambda s: " 300 " in knob_row(s, IO)
                      and any("⚠io_cap=300" in row for row in s), timeout=10,
                      what="300 in the knob panel and the marker on the graphs")
        tmux.run("send-keys", "-t", pane, "q")
        screen = tmux.wait_for(pane, lambda s: "Revert all (a)" in "\n".join(s), timeout=30,
                               what="the quit dialog")
        text = "\n".join(screen)
        assert f"{IO}: 300 → {base}  (changed outside knobtop)" in text, text
        assert "sort_buffer_size: 1M → 2M " in text, text
        assert "sort_buffer_size: 1M → 2M  (changed" not in text
        tmux.run("send-keys", "-t", pane, "r")  # revert knobtop's own change only
        assert tmux.exit_status(pane, timeout=120) == "0"
        assert asyncio.run(show_global(info, IO)) == "300"
        assert asyncio.run(show_global(info, "sort_buffer_size")) == sort_base
        said = [e.text for e in events(journal) if isinstance(e, Note)]
        assert said[-1] == (f"quit: reverted to the baseline: sort_buffer_size=1048576 "
                            f"(baseline {sort_base}); kept on the server: {IO}=300 (baseline "
                            f"{base}, changed outside knobtop)")
        assert len(outside(journal)) == 1  # knobtop's change and revert: its own
    finally:
        asyncio.run(set_outside(info, IO, int(base)))


def test_a_second_session_on_the_sandbox_is_refused_by_the_labs_lock(
        lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path, tmux: TmuxServer) -> None:
    sandbox, _ = lab
    where = sandbox.root
    first = tmp_path / "first.knobtop.jsonl"
    pane = open_lab(tmux, where, first, tmp_path)
    holder = json.loads((where / SESSION_LOCK).read_text())
    pid = holder["pid"]
    assert Path(f"/proc/{pid}").exists() and pid != os.getpid()
    message = (f"the sandbox in {where} is in use by another knobtop session (pid {pid}: "
               "knobtop lab")
    fix = f"Quit that one first (q on its screen, or kill {pid}), or use another sandbox"
    second = knobtop_run("lab", "--dir", str(where), "--headless", "--duration", "1",
                         "--load", "none", "--keep-running", "--journal",
                         str(tmp_path / "second.knobtop.jsonl"), timeout=120)
    recipe = tmp_path / "r.toml"
    recipe.write_text('name = "r"\ndescription = "d"\n[load]\nworkload = "oltp_point_select"'
                      '\nthreads = [1]\nduration = 5\nwarmup = 0\ntables = 1\ntable_size = 100'
                      '\n[run]\nreplicates = 1\n[[arm]]\nname = "A"\nknobs = { '
                      'sort_buffer_size = "1M" }\n[[arm]]\nname = "B"\nknobs = { '
                      'sort_buffer_size = "2M" }\n')
    run = knobtop_run("run", str(recipe), "--lab", "--dir", str(where), "--journal",
                      str(tmp_path / "run.knobtop.jsonl"), timeout=120)
    for refused in (second, run):
        assert refused.returncode != 0
        said = " ".join(refused.stderr.split())
        assert message in said and fix in said, refused.stderr
        assert "Traceback" not in refused.stderr
    assert not (tmp_path / "second.knobtop.jsonl").exists()
    assert not (tmp_path / "run.knobtop.jsonl").exists()
    assert json.loads((where / SESSION_LOCK).read_text())["pid"] == pid  # still the first's
    assert not any(isinstance(e, Change) for e in events(first))  # nothing changed under it
    tmux.run("send-keys", "-t", pane, "q")
    assert tmux.exit_status(pane, timeout=120) == "0"
    assert not (where / SESSION_LOCK).exists()
    # A lock whose process is gone is stale: the next session takes it over.
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    (where / SESSION_LOCK).write_text(json.dumps({"pid": gone.pid, "start": "1",
                                                  "command": "knobtop lab"}) + "\n")
    after = knobtop_run("lab", "--dir", str(where), "--headless", "--duration", "1",
                        "--load", "none", "--keep-running", "--journal",
                        str(tmp_path / "after.knobtop.jsonl"), timeout=120)
    assert after.returncode == 0, after.stderr
    assert not (where / SESSION_LOCK).exists()
