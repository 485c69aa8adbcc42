"""The incident page (key 4) live on a real mariadbd, then the same page in replay; statement
texts off keep SQL out of screen and journal."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from textual.pilot import Pilot

from harness import paths as repo_paths
from harness.served import served_session
from harness.ui import until, widget_text
from knobtop.analysis.replay import Replay
from knobtop.journal import JournalReader
from knobtop.journal.events import Incident
from knobtop.journal.index import JournalIndex
from knobtop.lab import Sandbox
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.session.core import SessionConfig
from knobtop.ui.app import KnobtopApp
from knobtop.ui.replay_app import ReplayApp
from knobtop.ui.widgets.graph_grid import GraphGrid
from knobtop.ui.widgets.incident_page import IncidentPage
from knobtop.ui.widgets.status_bar import StatusBar
from test_incident import DB, locking_links

pytestmark = pytest.mark.integration


@pytest.fixture
async def links(mariadb_info: ConnectionInfo) -> AsyncIterator[list[ServerLink]]:
    async with locking_links(mariadb_info) as made:
        yield made
SIZES = [(80, 24), (160, 48)]


def page_lines(app: KnobtopApp | ReplayApp) -> list[str]:
    """Every line of the incident page's content (also the ones scrolled out of view)."""
    return widget_text(app.live.query_one(IncidentPage).query_one("#incident-body"))


async def replay_at(replay: ReplayApp, pilot: Pilot[int], t: float) -> list[str]:
    """Move the replay's cursor to ``t``, paint, and return the incident page's lines."""
    replay.replay.seek_to(t)
    replay.paint(force=True)
    await pilot.pause()
    return page_lines(replay)


@pytest.mark.parametrize("size", SIZES)
async def test_incident_page_live_then_replay(
        size: tuple[int, int], mariadb_info: ConnectionInfo, mariadb: Sandbox,
        links: list[ServerLink], tmp_path: Path) -> None:
    journal = tmp_path / "incident.knobtop.jsonl"
    config = SessionConfig(profile="test", connection=mariadb_info, journal_path=journal,
                           interval=0.5)
    with served_session(config) as session:
        app = KnobtopApp(session)
        holder, waiter, _ = links
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
                lines = await replay_at(replay, pilot, shown.t)
                assert replay.live.query_one(IncidentPage).event == shown
                assert any(ln.split()[:1] == [str(waiter_id)] and f" {holder_id} " in f" {ln} "
                           for ln in lines)
                # At the last snapshot, the replayed page is the live one, line for line.
                assert await replay_at(replay, pilot, last.t) == live_lines
                assert replay.live.query_one(IncidentPage).event == last
                # Before the first snapshot the page says why it is empty.
                lines = await replay_at(replay, pilot, replay.replay.start)
                assert replay.live.query_one(IncidentPage).event is None
                assert "no incident snapshot at or before this point" in " ".join(lines)
        finally:
            index.close()


async def test_no_statements_keeps_sql_off_screen_and_out_of_the_journal(
        mariadb_info: ConnectionInfo, links: list[ServerLink], tmp_path: Path) -> None:
    journal = tmp_path / "quiet.knobtop.jsonl"
    config = SessionConfig(profile="test", connection=mariadb_info, journal_path=journal,
                           interval=0.5, statements=False)
    with served_session(config) as session:
        app = KnobtopApp(session)
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


RECORDED = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"


@pytest.mark.parametrize("size", SIZES)
async def test_follow_and_replay_show_the_same_incident_page(
        tmp_path: Path, size: tuple[int, int]) -> None:
    """A follower draws the page from the journaled event as the writer's screen did, and a
    replay of the same file draws it line for line the same; server text is never markup."""
    from knobtop.cli import following_app
    from knobtop.journal import JournalWriter

    reader = JournalReader(RECORDED)
    events = list(reader)
    path = tmp_path / "live.knobtop.jsonl"
    writer = JournalWriter(path, reader.header)
    for event in events[:40]:
        writer.append(event)
    t = events[39].t + 0.2
    incident = Incident(
        t=t, wall=events[39].wall + 0.2, threads=3,
        procs=[[12, "app", "shop", "Query", 31.5, "Sending data",
                "SELECT [bold]x[/bold] FROM orders WHERE note = '[red]'"],
               [13, "app", "shop", "Query", 2.0, "Updating", "UPDATE orders SET n = n + 1"],
               [9, "rep", None, "Sleep", 120.0, None, None]],
        locks=[[13, 2.0, "UPDATE orders SET n = n + 1", 12, None]],
        oldest={"thread": 12, "seconds": 31, "state": "RUNNING", "rows_locked": 4,
                "rows_modified": 1, "statement": "SELECT [bold]x[/bold] FROM orders"},
        repl=[{"name": "", "io": "Yes", "sql": "Yes", "lag": 3, "state": "Waiting for master",
               "error": ""}],
        log=["2026-11-23 20:43:52 0 [Warning] Aborted connection 3 [/]"],
        log_path="/var/log/mysql/error.log")
    try:
        app = following_app(path, history=900)
        async with app.run_test(size=size) as pilot:
            await until(pilot, lambda: app.board is not None and app._live_ready)
            await pilot.press("4")
            await pilot.pause()
            assert "no incident snapshot yet" in " ".join(page_lines(app))
            writer.append(incident)
            page = app.live.query_one(IncidentPage)
            await until(pilot, lambda: page.event == incident)
            await pilot.pause()
            followed = page_lines(app)
            text = "\n".join(followed)
            row = next(ln for ln in followed if ln.split()[:1] == ["12"])
            assert "SELECT [bold]x[/bold]" in row  # as the server sent it, not styled
            assert "thread 12, open 31 s" in text and "FROM orders" in text
            assert "[Warning] Aborted connection 3 [/]" in text
            assert "lag 3 s" in text and "Waiting for master" in text
            assert any(ln.split()[:1] == ["13"] and " 12 " in f" {ln} "
                       and "(idle in trx)" in ln for ln in followed)
            await pilot.press("q")
    finally:
        writer.close()
    index = JournalIndex(path)
    index.build()
    try:
        replay = ReplayApp(Replay(index))
        async with replay.run_test(size=size) as pilot:
            await pilot.pause()
            await pilot.press("4")
            assert await replay_at(replay, pilot, t) == followed
    finally:
        index.close()
