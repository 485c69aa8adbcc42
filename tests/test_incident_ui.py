"""The incident page (key 4) live on a real mariadbd, then the same page in replay; statement
texts off keep SQL out of screen and journal."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harness.ui import until, widget_text
from knobtop.hosts.local import LocalHost
from knobtop.journal import JournalReader
from knobtop.journal.events import Incident
from knobtop.journal.index import JournalIndex
from knobtop.journal.replay import Replay
from knobtop.lab import Sandbox
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.session import Session, SessionConfig
from knobtop.ui.app import KnobtopApp
from knobtop.ui.replay_app import ReplayApp
from knobtop.ui.widgets.graph_grid import GraphGrid
from knobtop.ui.widgets.incident_page import IncidentPage
from knobtop.ui.widgets.status_bar import StatusBar

pytestmark = pytest.mark.integration
DB = "incident_ui"
SIZES = [(80, 24), (160, 48)]


def page_lines(app: KnobtopApp | ReplayApp) -> list[str]:
    """Every line of the incident page's content (also the ones scrolled out of view)."""
    return widget_text(app.live.query_one(IncidentPage).query_one("#incident-body"))


@pytest.fixture
async def links(mariadb_info: ConnectionInfo) -> AsyncIterator[list[ServerLink]]:
    made = [ServerLink(mariadb_info) for _ in range(2)]
    for link in made:
        await link.connect()
    await made[0].query(f"CREATE DATABASE IF NOT EXISTS {DB}")
    await made[0].query(f"CREATE TABLE IF NOT EXISTS {DB}.t (id INT PRIMARY KEY, v INT) "
                        "ENGINE=InnoDB")
    await made[0].query(f"INSERT IGNORE INTO {DB}.t VALUES (1, 0)")
    yield made
    for link in made:
        await link.close()


@pytest.mark.parametrize("size", SIZES)
async def test_incident_page_live_then_replay(
        size: tuple[int, int], mariadb_info: ConnectionInfo, mariadb: Sandbox,
        links: list[ServerLink], tmp_path: Path) -> None:
    journal = tmp_path / "incident.knobtop.jsonl"
    config = SessionConfig(profile="test", connection=mariadb_info, journal_path=journal,
                           interval=0.5)
    app = KnobtopApp(Session(config, LocalHost(), driver=None))
    holder, waiter = links
    waiter_id = (await waiter.query("SELECT CONNECTION_ID()"))[0][0]
    holder_id = (await holder.query("SELECT CONNECTION_ID()"))[0][0]
    blocked: asyncio.Task[object] | None = None
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.board is not None and app.board.samples >= 2)
        assert not any(e.kind == "incident" for e in JournalReader(journal))
        await pilot.press("4")
        grid = app.live.query_one(GraphGrid)
        assert grid.page == "incident" and app.live.query_one(IncidentPage).display
        await holder.query("BEGIN")
        await holder.query(f"UPDATE {DB}.t SET v = v + 1 WHERE id = 1")
        blocked = asyncio.create_task(
            waiter.query(f"UPDATE {DB}.t SET v = v + 2 WHERE id = 1", timeout=60))
        try:
            page = app.live.query_one(IncidentPage)
            await until(pilot, lambda: page.event is not None and bool(page.event.locks))
            await pilot.pause()
            lines = page_lines(app)
            text = "\n".join(lines)
            assert "Incident" in "".join(widget_text(app.live.query_one(StatusBar)))
            # The lock wait: the waiter, blocked by the holder, and the waiting statement.
            row = next(ln for ln in lines if ln.split()[:1] == [str(waiter_id)]
                       and f" {holder_id} " in f" {ln} ")
            assert "UPDATE" in row
            assert f"thread {holder_id}, open" in text  # the oldest transaction
            # The error log's tail: its last line (cut to the page's width) is there.
            assert page.event is not None
            log = Path(page.event.log_path).read_text(errors="replace").splitlines()
            last_log = [ln for ln in log if ln.strip()][-1]
            assert any(last_log[:30] in ln for ln in lines), last_log
            shown = page.event
        finally:
            await holder.query("ROLLBACK")
            if blocked is not None:
                await asyncio.wait_for(blocked, 30)
        # Leaving the page stops the sampling: no incident after the next samples.
        await pilot.press("1")
        await pilot.pause(0.5)
        count = sum(e.kind == "incident" for e in JournalReader(journal))
        assert app.board is not None
        samples = app.board.samples
        await until(pilot, lambda: app.board is not None and app.board.samples >= samples + 5)
        assert sum(e.kind == "incident" for e in JournalReader(journal)) == count
        await pilot.press("4")  # the page keeps the last snapshot until the next one
        await pilot.pause()
        last = page.event
        live_lines = page_lines(app)
        await pilot.press("1")
        await pilot.pause(0.3)
        await pilot.press("q")
        await until(pilot, lambda: not app.is_running, timeout=30)
    incidents = [e for e in JournalReader(journal) if isinstance(e, Incident)]
    assert shown in incidents
    assert last is not None and last == incidents[-1] and last != shown
    # Replay: the same page at the moment of that snapshot.
    index = JournalIndex(journal)
    index.build()
    try:
        replay = ReplayApp(Replay(index))
        async with replay.run_test(size=size) as pilot:
            await pilot.pause()
            await pilot.press("4")
            replay.replay.seek_to(shown.t)
            replay.paint(force=True)
            await pilot.pause()
            assert replay.live.query_one(IncidentPage).event == shown
            lines = page_lines(replay)
            assert any(ln.split()[:1] == [str(waiter_id)] and f" {holder_id} " in f" {ln} "
                       for ln in lines)
            # At the last snapshot, the replayed page is the live one, line for line.
            replay.replay.seek_to(last.t)
            replay.paint(force=True)
            await pilot.pause()
            assert replay.live.query_one(IncidentPage).event == last
            assert page_lines(replay) == live_lines
            # Before the first snapshot the page says why it is empty.
            replay.replay.seek_to(replay.replay.start)
            replay.paint(force=True)
            await pilot.pause()
            assert replay.live.query_one(IncidentPage).event is None
            assert "no incident snapshot at or before this point" in " ".join(
                page_lines(replay))
    finally:
        index.close()


async def test_no_statements_keeps_sql_off_screen_and_out_of_the_journal(
        mariadb_info: ConnectionInfo, links: list[ServerLink], tmp_path: Path) -> None:
    journal = tmp_path / "quiet.knobtop.jsonl"
    config = SessionConfig(profile="test", connection=mariadb_info, journal_path=journal,
                           interval=0.5, statements=False)
    app = KnobtopApp(Session(config, LocalHost(), driver=None))
    sleeper = links[0]
    sleeper_id = (await sleeper.query("SELECT CONNECTION_ID()"))[0][0]
    marker = "knobtop_private_marker_77"
    task: asyncio.Task[object] | None = None
    try:
        async with app.run_test(size=(160, 48)) as pilot:
            # 4 at once (the session may still be opening; the page's sampling follows).
            await pilot.press("4")
            page = app.live.query_one(IncidentPage)
            await until(pilot, lambda: page.event is not None)
            await pilot.press("1")
            task = asyncio.create_task(sleeper.query(f"SELECT SLEEP(6), '{marker}'",
                                                     timeout=30))
            # The page is in the palette too, under its binding id.
            entry = next(e for e in app.palette_actions() if e[0] == "Incident page")
            assert "view.incident" in entry[1] and "key 4" in entry[1]
            await entry[2]()  # what the palette runs when it is picked
            await pilot.pause()
            assert app.live.query_one(GraphGrid).page == "incident"
            await until(pilot, lambda: page.event is not None and any(
                p[0] == sleeper_id and p[3] == "Query" for p in page.event.procs))
            await pilot.pause()
            text = "\n".join(page_lines(app))
            assert "statement texts off" in text
            assert any(ln.split()[:1] == [str(sleeper_id)] and "Query" in ln
                       for ln in page_lines(app))
            assert marker not in text and "SLEEP" not in text
            await pilot.press("q")
            await until(pilot, lambda: not app.is_running, timeout=30)
    finally:
        if task is not None:
            await asyncio.wait_for(task, 30)
    written = journal.read_text()
    assert '"ev":"incident"' in written.replace(" ", "")
    assert marker not in written and "SLEEP" not in written
