"""Issue 14 items 2, 7, 8: quitting lists what differs from the baseline (revert / keep,
journaled); dialogs promise only what will happen; a failed start keeps its evidence;
knobs an existing datadir pins are refused before any restart."""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from rich.cells import cell_len
from textual.geometry import Region
from textual.pilot import Pilot
from textual.widgets import Button, Input

from conftest import show_global
from harness.binaries import require_binary
from harness.served import served_session
from harness.tmux import TmuxServer, pane_server
from harness.ui import until
from knobtop.hosts.local import LocalHost
from knobtop.journal import Change, JournalReader, Note, Restart
from knobtop.lab import LabError, Sandbox, previous_baseline
from knobtop.server.catalog import datadir_refusal
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.server.static import ServerNode
from knobtop.session.core import Session, SessionConfig
from knobtop.session.port import BaselineDiff
from knobtop.ui.app import KnobtopApp
from knobtop.ui.knob_picker import describe
from knobtop.ui.quit_flow import quit_details
from knobtop.ui.screens.confirm import ConfirmScreen, QuitScreen
from knobtop.ui.screens.prompt import PromptScreen

KNOB = "innodb_flush_log_at_trx_commit"


async def set_global(info: ConnectionInfo, name: str, value: str) -> None:
    link = ServerLink(info)
    await link.connect()
    try:
        await link.query(f"SET GLOBAL {name} = %s", (int(value),))
    finally:
        await link.close()


def other(value: str) -> str:
    return "2" if value != "2" else "0"


def lab_node(sandbox: Sandbox, info: ConnectionInfo) -> ServerNode:
    return ServerNode(name="lab", host=LocalHost(), link=lambda: ServerLink(info),
                      restart_command=sandbox.restart_command(), dropin_path=sandbox.dropin_file)


def notes(journal: Path) -> list[str]:
    return [e.text for e in JournalReader(journal) if isinstance(e, Note)]


async def set_through(app: KnobtopApp, knob: str, value: str) -> None:
    assert app.runner is not None and app.session is not None
    change = await asyncio.wrap_future(app.runner.submit(app.session.set_knob(knob, value)))
    assert change.result == "ok", change.message


async def open_and_set(pilot: Pilot[object], app: KnobtopApp, value: str) -> None:
    """Wait for the session's journal to open, then set KNOB to ``value`` through it."""
    await until(pilot, lambda: app.board is not None)  # the session is open
    await set_through(app, KNOB, value)


def fully_visible(app: KnobtopApp, widget: Button) -> bool:
    return Region(0, 0, *app.size).contains_region(widget.region) and widget.region.area > 0


@pytest.mark.integration
@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_lab_quit_lists_the_changed_knob_and_reverts_by_default(
    mariadb_info: ConnectionInfo, tmp_path: Path, size: tuple[int, int]
) -> None:
    before = await show_global(mariadb_info, KNOB)
    journal = tmp_path / "q.knobtop.jsonl"
    config = SessionConfig(profile="lab", connection=mariadb_info, journal_path=journal)
    with served_session(config) as session:
        app = KnobtopApp(session)
        try:
            async with app.run_test(size=size) as pilot:
                await open_and_set(pilot, app, other(before))
                await pilot.press("q")
                # the dialog up and its focus set (a loaded machine mounts it a frame later)
                await until(pilot, lambda: isinstance(app.screen, QuitScreen)
                            and app.screen.focused is not None)
                screen = app.screen
                assert isinstance(screen, QuitScreen)
                assert f"{KNOB}: {other(before)} → {before}" in screen.details
                # Only a dynamic knob differs: it goes back live, nothing restarts.
                assert "Nothing restarts" in screen.details and "downtime" not in screen.details
                assert "restart in progress" not in screen.details
                assert screen.focused is not None and screen.focused.id == "revert"
                for button in screen.query(Button):
                    assert fully_visible(app, button), (button.id, button.region, size)
                await pilot.press("enter")  # the lab's default: revert
                await until(pilot, lambda: app.return_code is not None, timeout=30)
        finally:
            await set_global(mariadb_info, KNOB, before)
        assert app.return_code == 0
        events = list(JournalReader(journal))
        reverts = [(e.knob, e.new, e.result) for e in events
                   if isinstance(e, Change) and e.reason == "revert to baseline"]
        assert reverts == [(KNOB, before, "ok")]
        assert notes(journal) == [
            f"quit: reverted to the baseline: {KNOB}={other(before)} (baseline {before})"]
        assert events[-1].kind == "end"


@pytest.mark.integration
async def test_profile_quit_asks_enter_stays_and_keep_leaves_the_value(
    mariadb_info: ConnectionInfo, tmp_path: Path
) -> None:
    before = await show_global(mariadb_info, KNOB)
    journal = tmp_path / "k.knobtop.jsonl"
    config = SessionConfig(profile="prod", connection=mariadb_info, journal_path=journal)
    with served_session(config) as session:
        app = KnobtopApp(session)
        try:
            async with app.run_test(size=(80, 24)) as pilot:
                await open_and_set(pilot, app, other(before))
                await pilot.press("q")
                # the dialog up and its focus set (a loaded machine mounts it a frame later)
                await until(pilot, lambda: isinstance(app.screen, QuitScreen)
                            and app.screen.focused is not None)
                # A profile's server: nothing is chosen for the person; Enter is Cancel.
                assert app.screen.focused is not None and app.screen.focused.id == "cancel"
                await pilot.press("enter")
                await until(pilot, lambda: not isinstance(app.screen, QuitScreen))
                assert app.return_code is None  # still running
                await pilot.press("q")
                await until(pilot, lambda: isinstance(app.screen, QuitScreen))
                await pilot.press("k")
                await until(pilot, lambda: app.return_code is not None, timeout=30)
            assert await show_global(mariadb_info, KNOB) == other(before)
        finally:
            await set_global(mariadb_info, KNOB, before)
        assert notes(journal) == [
            f"quit: kept on the server: {KNOB}={other(before)} (baseline {before})"]
        assert not [e for e in JournalReader(journal)
                    if isinstance(e, Change) and e.reason == "revert to baseline"]


@pytest.mark.integration
async def test_quit_without_changes_asks_nothing(
    mariadb_info: ConnectionInfo, tmp_path: Path
) -> None:
    config = SessionConfig(profile="lab", connection=mariadb_info,
                           journal_path=tmp_path / "n.knobtop.jsonl")
    with served_session(config) as session:
        app = KnobtopApp(session)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: app.board is not None)  # the session is open
            await pilot.press("q")
            await until(pilot, lambda: app.return_code is not None, timeout=30)
        assert notes(tmp_path / "n.knobtop.jsonl") == []


@pytest.mark.integration
async def test_revert_dialog_for_dynamic_knobs_promises_no_restart(
    mariadb: Sandbox, mariadb_info: ConnectionInfo, tmp_path: Path
) -> None:
    before = await show_global(mariadb_info, KNOB)
    config = SessionConfig(profile="lab", connection=mariadb_info,
                           nodes=(lab_node(mariadb, mariadb_info),),
                           journal_path=tmp_path / "r.knobtop.jsonl")
    with served_session(config) as session:
        app = KnobtopApp(session)
        try:
            async with app.run_test(size=(80, 24)) as pilot:
                await open_and_set(pilot, app, other(before))
                await pilot.press("b")
                await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
                details = app.screen.details  # type: ignore[attr-defined]
                assert f"Back live with SET GLOBAL, no restart: {KNOB}." in details
                assert "Nothing restarts" in details
                assert "restart" not in details.replace("no restart", "").replace(
                    "Nothing restarts", "")
                await pilot.press("y")
                await until(pilot, lambda: app.board is not None
                            and app.board.knob_values.get(KNOB) == before)
                await pilot.press("q")  # back at the baseline: no quit question
                await until(pilot, lambda: app.return_code is not None, timeout=30)
        finally:
            await set_global(mariadb_info, KNOB, before)


def test_revert_plan_names_the_restart_only_for_static_knobs() -> None:
    info = ConnectionInfo(user="u", password="p", socket="/nonexistent")
    node = ServerNode(name="lab", host=LocalHost(), link=lambda: ServerLink(info),
                      restart_command="systemctl restart mariadb",
                      dropin_path=Path("/nonexistent/knobtop.cnf"))
    config = SessionConfig(profile="lab", connection=info, nodes=(node,),
                           journal_path=Path("/nonexistent/x.knobtop.jsonl"))
    session = Session(config, LocalHost(), None)
    dynamic = BaselineDiff(KNOB, "2", "1", True)
    static = BaselineDiff("innodb_doublewrite", "OFF", "ON", False)
    assert "Nothing restarts" in session.revert_plan([dynamic])
    plan = session.revert_plan([dynamic, static])
    assert f"Back live with SET GLOBAL, no restart: {KNOB}." in plan
    assert "with one restart: innodb_doublewrite;" in plan and "restarts lab once" in plan
    assert "Nothing restarts" not in plan
    assert "unknown until the first restart" in session.expected_downtime()
    assert session.restarter is not None
    session.restarter.last_downtime = 0.4  # a fast restart is not "about 0 s"
    assert session.expected_downtime().startswith("about 1 s per node")


@pytest.mark.integration
async def test_next_session_says_what_differs_from_the_previous_baseline(
    mariadb_info: ConnectionInfo, tmp_path: Path
) -> None:
    journals = tmp_path / "journals"
    before = await show_global(mariadb_info, KNOB)

    async def session_in(name: str) -> Session:
        config = SessionConfig(profile="lab", connection=mariadb_info,
                               journal_path=journals / f"{name}.knobtop.jsonl")
        session = Session(config, LocalHost(), None)
        session.previous_baseline = previous_baseline(journals, config.journal_path)
        await session.open()
        return session

    try:
        first = await session_in("lab-1")
        assert first.previous_baseline is None  # nothing before it
        await first.set_knob(KNOB, other(before))
        await first.close()  # quit with "keep"
        second = await session_in("lab-2")
        await second.close()
    finally:
        await set_global(mariadb_info, KNOB, before)
    said = notes(journals / "lab-2.knobtop.jsonl")
    assert len(said) == 1
    assert said[0].startswith("the server differs from the baseline of the previous session "
                              "(lab-1.knobtop.jsonl): ")
    assert f"{KNOB} = {other(before)} (it started from {before})" in said[0]
    assert notes(journals / "lab-1.knobtop.jsonl") == []


def test_previous_baseline_skips_what_is_not_a_journal(tmp_path: Path) -> None:
    (tmp_path / "a.knobtop.jsonl").write_text("not json\n")
    assert previous_baseline(tmp_path) is None
    assert previous_baseline(tmp_path / "missing") is None


def test_datadir_bound_knobs_are_refused_with_the_reason() -> None:
    assert datadir_refusal("innodb_page_size", "16384", "16384") is None
    why = datadir_refusal("innodb_page_size", "16384", "8192")
    assert why is not None and "existing datadir" in why and "Nothing was changed" in why
    assert datadir_refusal("lower_case_table_names", "0", "1") is not None
    assert datadir_refusal("innodb_data_file_path", "ibdata1:12M:autoextend",
                           "ibdata1:12M:autoextend:max:1G") is None
    assert datadir_refusal("innodb_data_file_path", "ibdata1:12M:autoextend",
                           "ibdata1:64M:autoextend") is not None
    assert datadir_refusal("innodb_buffer_pool_size", "1", "2") is None


@pytest.mark.integration
async def test_page_size_is_marked_in_the_palette_and_refused_before_a_restart(
    tmp_path: Path, catalog: object
) -> None:
    from knobtop.server.catalog import Catalog

    assert isinstance(catalog, Catalog)
    assert "fixed by the existing datadir" in describe(catalog.get("innodb_page_size"))
    assert "fixed by the existing datadir" not in describe(catalog.get("innodb_doublewrite"))
    sandbox = Sandbox(tmp_path / "lab")
    info = sandbox.start()
    journal = tmp_path / "p.knobtop.jsonl"
    config = SessionConfig(profile="lab", connection=info, nodes=(lab_node(sandbox, info),),
                           journal_path=journal)
    with served_session(config) as session:
        app = KnobtopApp(session)
        try:
            pid = sandbox.running_pid()
            async with app.run_test(size=(80, 24)) as pilot:
                await until(pilot, lambda: app.knob_catalog is not None)
                app.edit_knob("innodb_page_size")
                await until(pilot, lambda: isinstance(app.screen, PromptScreen)
                            and bool(app.screen.query(Input)))
                assert "fixed by the existing datadir" in app.screen.title_text  # type: ignore[attr-defined]
                app.screen.query_one(Input).value = ""
                await pilot.press(*"8192", "enter")
                # Refused with the reason; no restart dialog, no restart.
                await until(pilot, lambda: any("not changed" in (n.title or "")
                                               for n in app._notifications))
                assert not isinstance(app.screen, ConfirmScreen)
                await pilot.press("q")
                await until(pilot, lambda: app.return_code is not None, timeout=30)
            # Headless --set confirms restarts up front: refused all the same, no restart.
            headless = Session(dataclasses.replace(config, journal_path=tmp_path / "h.jsonl"),
                               LocalHost(), None)
            await headless.open()
            try:
                change = await headless.set_knob("innodb_page_size", "65536", restart_ok=True)
            finally:
                await headless.close()
            assert change.result == "refused" and "existing datadir" in change.message
            assert sandbox.running_pid() == pid
        finally:
            sandbox.stop()
        refused = [e for e in JournalReader(journal) if isinstance(e, Change)]
        assert [(c.knob, c.result) for c in refused] == [("innodb_page_size", "refused")]
        assert "cannot change on an existing datadir" in refused[0].message
        assert not [e for e in JournalReader(journal) if e.kind == "restart"]
        assert not sandbox.dropin_file.exists() or \
            "page_size" not in sandbox.dropin_file.read_text()


@pytest.mark.integration
def test_failed_start_keeps_the_log_and_quotes_its_error_lines(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "lab")
    sandbox.start()
    sandbox.stop()
    first_start = sandbox.error_log.read_text()
    assert "ready for connections" in first_start
    bad = sandbox.dropin_dir / "bad.cnf"
    bad.write_text("[mysqld]\ninnodb_page_size=8k\n")  # the datadir was made with 16k
    with pytest.raises(LabError) as failed:
        Sandbox.existing(sandbox.root).start(timeout=60)
    message = str(failed.value)
    knobtop_line, *server_lines = message.splitlines()
    assert knobtop_line.startswith("the sandbox server exited at start; its [ERROR] lines in ")
    log = sandbox.error_log.read_text()
    assert log.startswith(first_start)  # the earlier start's lines are still there
    assert server_lines and all("[ERROR]" in line for line in server_lines)
    for line in server_lines:  # verbatim: each is a whole line of the log
        assert line in log.splitlines()
    assert log.count("---- knobtop lab: server start at ") == 2
    bad.unlink()
    again = Sandbox.existing(sandbox.root)
    again.start()
    try:
        assert again.error_log.read_text().startswith(log)
    finally:
        again.stop()


@pytest.mark.integration
def test_lab_stop_stops_the_sandbox_and_says_so_when_none_runs(tmp_path: Path) -> None:
    root = tmp_path / "lab"

    def lab_stop() -> str:
        done = subprocess.run([sys.executable, "-m", "knobtop", "lab", "--dir", str(root),
                               "--stop"], capture_output=True, text=True, timeout=120,
                              check=False)
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        return " ".join(done.stderr.split())

    assert lab_stop() == f"no sandbox server is running in {root}"
    sandbox = Sandbox(root)
    sandbox.start()
    pid = sandbox.running_pid()
    assert pid is not None
    try:
        assert f"stopped the sandbox server in {root} (pid {pid})" in lab_stop()
        assert sandbox.running_pid() is None
    finally:
        sandbox.stop()
    assert lab_stop() == f"no sandbox server is running in {root}"


@pytest.fixture
def tmux(tmp_path: Path) -> Iterator[TmuxServer]:
    server = pane_server(tmp_path)
    yield server
    server.kill()
    Sandbox(tmp_path / "lab").stop()  # if a failed test left it up


def set_in_tmux(tmux: TmuxServer, pane: str, knob: str, value: str) -> None:
    """The palette, the knob's dialog, a value and Enter, as a person types them."""
    tmux.run("send-keys", "-t", pane, "C-p")
    tmux.wait_for(pane, lambda s: "Search" in "\n".join(s), timeout=30, what="the palette")
    tmux.run("send-keys", "-t", pane, "-l", knob)

    def first_hit(screen: list[str]) -> str | None:
        rows = [row.strip() for row in screen]
        at = next((i for i, row in enumerate(rows) if row.startswith("🔎")), None)
        return next((row for row in rows[at + 1:] if row), None) if at is not None else None

    tmux.wait_for(pane, lambda s: first_hit(s) == knob, timeout=30, what=f"{knob} first")
    tmux.run("send-keys", "-t", pane, "Enter")
    tmux.wait_for(pane, lambda s: any(f"Set {knob}" in row for row in s), timeout=30,
                  what=f"the dialog for {knob}")
    tmux.run("send-keys", "-t", pane, "BSpace", *value, "Enter")
    tmux.wait_for(pane, lambda s: f"Set {knob}" not in "\n".join(s), timeout=30,
                  what="the dialog closing")


@pytest.mark.integration
def test_quit_dialog_in_tmux_at_80x24_reverts_and_keep_is_said_next_time(
    tmp_path: Path, tmux: TmuxServer
) -> None:
    require_binary("mariadbd", "mariadb-server")
    lab_dir = tmp_path / "lab"
    session = f"knobtop-{tmux.socket}"

    def lab(n: int, *extra: str) -> tuple[str, Path]:
        journal = lab_dir / "journals" / f"lab-{n}.knobtop.jsonl"
        tmux.new_session(f"{session}-{n}", "lab", 80, 24, [
            sys.executable, "-m", "knobtop", "lab", "--dir", str(lab_dir),
            "--journal", str(journal), "--load", "none", *extra], cwd=tmp_path)
        pane = f"{session}-{n}:lab"
        assert tmux.display(pane, "#{window_width}x#{window_height}") == "80x24"
        tmux.wait_for(pane, lambda s: "MariaDB" in s[0] and "╭─ Knobs" in "\n".join(s),
                      timeout=300, what="the live screen")
        return pane, journal

    def changes(journal: Path) -> list[tuple[str, str | None, str]]:
        return [(e.knob, e.new, e.reason) for e in JournalReader(journal)
                if isinstance(e, Change) and e.result == "ok"]

    def wait_change(journal: Path, count: int) -> None:
        deadline = time.monotonic() + 30
        while len(changes(journal)) < count and time.monotonic() < deadline:
            time.sleep(0.2)

    # 1: set a knob, q: the dialog lists it at 80x24 and Enter reverts (the lab's default).
    pane, first = lab(1)
    set_in_tmux(tmux, pane, "innodb_io_capacity", "1234")
    wait_change(first, 1)
    tmux.run("send-keys", "-t", pane, "q")
    screen = tmux.wait_for(pane, lambda s: "Revert (r)" in "\n".join(s), timeout=30,
                           what="the quit dialog")
    text = "\n".join(screen)
    assert len(screen) == 24 and all(cell_len(row) <= 80 for row in screen)
    assert "differ from the session's baseline" in text
    assert "innodb_io_capacity: 1234 → 200" in text, text
    assert "Keep (k)" in text and "Cancel (c)" in text and "Nothing restarts" in text
    tmux.run("send-keys", "-t", pane, "Enter")
    assert tmux.exit_status(pane, timeout=120) == "0"
    assert changes(first) == [("innodb_io_capacity", "1234", ""),
                              ("innodb_io_capacity", "200", "revert to baseline")]
    assert Sandbox(lab_dir).running_pid() is None

    # 2: the sandbox stays up (--keep-running) and k keeps the value on it ...
    pane, second = lab(2, "--keep-running")
    set_in_tmux(tmux, pane, "innodb_io_capacity", "1234")
    wait_change(second, 1)
    tmux.run("send-keys", "-t", pane, "q")
    tmux.wait_for(pane, lambda s: "Revert (r)" in "\n".join(s), timeout=30,
                  what="the quit dialog")
    tmux.run("send-keys", "-t", pane, "k")
    assert tmux.exit_status(pane, timeout=120) == "0"
    assert notes(second) == ["quit: kept on the server: innodb_io_capacity=1234 "
                             "(baseline 200)"]
    assert Sandbox(lab_dir).running_pid() is not None

    # 3: ... and the next lab says the server is not where the last session started.
    pane, third = lab(3)
    tmux.wait_for(pane, lambda s: "the server differs from" in "\n".join(s),
                  timeout=30, what="the notice in the journal pane")
    said = notes(third)
    assert len(said) == 1 and "(lab-2.knobtop.jsonl)" in said[0]
    assert "innodb_io_capacity = 1234 (it started from 200)" in said[0]
    tmux.run("send-keys", "-t", pane, "q")  # its baseline is 1234: nothing to ask
    assert tmux.exit_status(pane, timeout=120) == "0"


@pytest.mark.integration
async def test_a_failed_restart_journals_the_servers_error_lines_verbatim(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "lab")
    info = sandbox.start()
    journal = tmp_path / "f.knobtop.jsonl"
    config = SessionConfig(profile="lab", connection=info, nodes=(lab_node(sandbox, info),),
                           journal_path=journal)
    session = Session(config, LocalHost(), None)
    await session.open()
    try:
        # a path variable (server.policy): set as the person would, after its dialog
        change = await session.set_knob("innodb_log_group_home_dir", "/nonexistent-knobtop",
                                        restart_ok=True, reach=("innodb_log_group_home_dir",))
    finally:
        await session.close()
        sandbox.stop()
    assert change.result == "failed"
    steps = [e for e in JournalReader(journal) if isinstance(e, Restart)]
    failed = next(e for e in steps if (e.step, e.result) == ("restart", "failed"))
    lines = failed.message.splitlines()
    said = [i for i, line in enumerate(lines)
            if "knobtop lab: the sandbox server exited at start; its [ERROR] lines" in line]
    assert said, failed.message  # knobtop's own line, whole, before the server's
    server = lines[said[0] + 1:]
    log = sandbox.error_log.read_text().splitlines()
    assert server and server[-1].endswith("[ERROR] Aborting")
    assert all(line in log for line in server)  # verbatim lines of the server's log
    # The rollback is knobtop's own journal line, apart from the server's words.
    assert [(e.result, e.message) for e in steps if e.step == "rollback"] == [
        ("ok", "previous drop-in restored, server restarted with it")]


def test_quit_text_mentions_a_restart_in_progress_only_while_one_runs() -> None:
    info = ConnectionInfo(user="u", password="p", socket="/nonexistent")
    config = SessionConfig(profile="lab", connection=info,
                           journal_path=Path("/nonexistent/x.knobtop.jsonl"))
    session = Session(config, LocalHost(), None)
    diff = [BaselineDiff("innodb_buffer_pool_size", "268435456", "134217728", True)]
    idle = quit_details(session, diff, lab=True)
    assert "innodb_buffer_pool_size: 256M → 128M" in idle
    assert "restart" not in idle.replace("Nothing restarts", "").replace("no restart", "")
    assert "the next session starts from them" in idle
    session.restarts.restarting = True  # what _restart_with sets while the restarter runs
    assert quit_details(session, diff, lab=False).endswith(
        "A restart is in progress: it finishes first.")
    assert "as they are now" in quit_details(session, diff, lab=False)


@pytest.mark.integration
def test_headless_set_changes_go_back_at_the_end(tmp_path: Path) -> None:
    root = tmp_path / "lab"
    journal = tmp_path / "h.knobtop.jsonl"
    done = subprocess.run(
        [sys.executable, "-m", "knobtop", "lab", "--dir", str(root), "--headless",
         "--duration", "3", "--load", "none", "--keep-running", "--journal", str(journal),
         "--set", "innodb_io_capacity=1234@1"],
        capture_output=True, text=True, timeout=300, check=False)
    sandbox = Sandbox.existing(root)
    try:
        assert done.returncode == 0, done.stderr
        changes = [(e.knob, e.new, e.reason) for e in JournalReader(journal)
                   if isinstance(e, Change)]
        assert changes == [("innodb_io_capacity", "1234", ""),
                           ("innodb_io_capacity", "200", "revert to baseline")]
        assert notes(journal) == [
            "quit: reverted to the baseline: innodb_io_capacity=1234 (baseline 200)"]
        sandbox.port = int((root / "port").read_text())
        assert asyncio.run(show_global(sandbox.connection(), "innodb_io_capacity")) == "200"
    finally:
        sandbox.stop()
