"""The incident page's error-log tail labels knobtop's own aborted connections (issue 37,
finding 10): stopping sysbench cuts its clients off mid-read, and the server logs an "Aborted
connection" line for each; knobtop's own (its user on its load's database) end with "(knobtop's
load stop)", the line otherwise as the server wrote it, another user's stay as they are. On a
real sandbox with real sysbench, then on the live screen in a real tmux pane."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from harness.binaries import require_binary
from harness.tmux import pane_server
from knobtop.hosts.local import LocalHost
from knobtop.journal import JournalReader
from knobtop.journal.events import Incident
from knobtop.server.incident import IncidentReader, IncidentSnapshot
from knobtop.server.link import ConnectionInfo, ServerLink

pytestmark = pytest.mark.integration

OTHER, OTHER_PW = "colleague", "kT7-not-knobtops"
OWN_LOAD_STOP, OWN_CONNECTION = "(knobtop's load stop)", "(knobtop's own connection)"



async def query(info: ConnectionInfo, *statements: str) -> None:
    link = ServerLink(info)
    await link.connect()
    try:
        for sql in statements:
            await link.query(sql)
    finally:
        await link.close()


async def snapshot(info: ConnectionInfo) -> IncidentSnapshot:
    link = ServerLink(info)
    await link.connect()
    try:
        return await IncidentReader(link, LocalHost()).read()
    finally:
        await link.close()


def aborted_by_someone_else(where: Path, info: ConnectionInfo) -> None:
    """Another user on the load's database, killed mid-statement: an aborted connection
    that is not knobtop's."""
    asyncio.run(query(info, f"CREATE USER IF NOT EXISTS '{OTHER}'@'localhost' IDENTIFIED BY "
                            f"'{OTHER_PW}'", f"GRANT SELECT ON sbtest.* TO '{OTHER}'@'localhost'"))
    client = subprocess.Popen(
        [require_binary("mariadb", "mariadb-client"), f"--socket={where / 'mysqld.sock'}",
         f"--user={OTHER}", "--database=sbtest", "-e", "SELECT SLEEP(60)"],
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        env={**os.environ, "MYSQL_PWD": OTHER_PW})
    log = where / "error.log"
    before = log.read_text(errors="replace").count(f"user: '{OTHER}'")
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not asyncio.run(sleeping(info)):
            time.sleep(0.1)
    finally:
        client.send_signal(signal.SIGKILL)
        client.wait(timeout=30)
    deadline = time.monotonic() + 30  # the server logs it when it next reads the socket
    while log.read_text(errors="replace").count(f"user: '{OTHER}'") == before:
        assert time.monotonic() < deadline, "no aborted connection logged for the colleague"
        time.sleep(0.1)


async def sleeping(info: ConnectionInfo) -> bool:
    link = ServerLink(info)
    await link.connect()
    try:
        rows = await link.query("SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                                f"WHERE USER = '{OTHER}' AND INFO LIKE 'SELECT SLEEP%'")
        return bool(rows and int(rows[0][0]))
    finally:
        await link.close()


def test_the_error_log_tail_labels_knobtops_own_load_stop(
        lab: tuple[Path, ConnectionInfo], tmp_path: Path, sysbench_path: str) -> None:
    where, info = lab
    run = subprocess.run(
        [sys.executable, "-m", "knobtop", "lab", "--dir", str(where), "--headless",
         "--duration", "3", "--journal", str(tmp_path / "load.knobtop.jsonl"), "--load",
         "oltp_point_select", "--tables", "1", "--table-size", "150", "--threads", "2",
         "--keep-running"], capture_output=True, text=True, timeout=300, check=False,
        stdin=subprocess.DEVNULL)
    assert run.returncode == 0, run.stderr
    aborted_by_someone_else(where, info)
    snap = asyncio.run(snapshot(info))
    written = [ln for ln in (where / "error.log").read_text(errors="replace").splitlines()
               if ln.strip()]
    ours = [ln for ln in snap.log if f"user: '{info.user}'" in ln and "db: 'sbtest'" in ln
            and "Aborted connection" in ln]
    assert len(ours) >= 2, snap.log  # one per sysbench thread
    for line in ours:
        assert line.endswith(f") {OWN_LOAD_STOP}"), line
        assert line.removesuffix(f" {OWN_LOAD_STOP}") in written  # the line itself as it is
    theirs = [ln for ln in snap.log if f"user: '{OTHER}'" in ln]
    assert len(theirs) == 1 and theirs[0] in written, snap.log  # not labelled


def test_the_live_incident_page_shows_the_label(
        lab: tuple[Path, ConnectionInfo], tmp_path: Path, sysbench_path: str) -> None:
    where, _info = lab
    journal = tmp_path / "page.knobtop.jsonl"
    tmux = pane_server(tmp_path)
    try:
        name = f"knobtop-{tmux.socket}"
        pane = f"{name}:live"
        tmux.new_session(name, "live", 160, 48, [
            sys.executable, "-m", "knobtop", "lab", "--dir", str(where), "--journal",
            str(journal), "--load", "oltp_point_select", "--tables", "1", "--table-size",
            "150", "--threads", "2", "--keep-running"], cwd=tmp_path)
        tmux.wait_for(pane, lambda s: "▶ oltp_point_select x2" in s[0], timeout=300,
                      what="the load running")
        tmux.run("send-keys", "-t", pane, "l")  # stop it: sysbench's clients are cut off
        tmux.wait_for(pane, lambda s: "load stopped" in s[0], timeout=60,
                      what="the load stopped")
        tmux.run("send-keys", "-t", pane, "4")
        # The label comes first on the page: a long line is cut at the page's edge.
        shown = "knobtop's load stop · "
        screen = tmux.wait_for(pane, lambda s: shown in "\n".join(s), timeout=60,
                               what="the label on the incident page")
        labelled = [row for row in screen if shown in row]
        assert all("Aborted connection" in row and "db: 'sbtest'" in row
                   for row in labelled), labelled
        assert not any(shown in row for row in screen if "'unauthenticated'" in row)
        tmux.run("send-keys", "-t", pane, "q")
        assert tmux.exit_status(pane, timeout=120) == "0"
    finally:
        tmux.kill()
    # The journal's incident events hold the labelled lines: replay shows the same page.
    logs = [ln for e in JournalReader(journal) if isinstance(e, Incident) for ln in e.log]
    assert any(ln.endswith(OWN_LOAD_STOP) for ln in logs)


@pytest.mark.parametrize(("line", "label"), [
    ("2026-11-28 22:57:04 10 [Warning] Aborted connection 10 to db: 'sbtest' user: 'knobtop' "
     "host: 'localhost' (Got an error reading communication packets)", OWN_LOAD_STOP),
    ("2026-11-28 22:57:04 11 [Warning] Aborted connection 11 to db: 'sbtest_app1' user: "
     "'knobtop' host: 'app1' (Got an error writing communication packets)", OWN_LOAD_STOP),
    # MySQL 8's words end with a full stop
    ("2026-11-28T22:57:04.1Z 12 [Note] [MY-010914] [Server] Aborted connection 12 to db: "
     "'sbtest' user: 'knobtop' host: 'localhost' (Got an error reading communication "
     "packets).", OWN_LOAD_STOP),
    ("2026-11-28 22:57:04 13 [Warning] Aborted connection 13 to db: 'unconnected' user: "
     "'knobtop' host: 'localhost' (Got an error reading communication packets)",
     OWN_CONNECTION),
    ("2026-11-28 22:57:04 14 [Warning] Aborted connection 14 to db: 'sbtest' user: 'knobtop' "
     "host: 'localhost' (Got timeout reading communication packets)", OWN_CONNECTION),
    ("2026-11-28 22:57:04 15 [Warning] Aborted connection 15 to db: 'sbtest' user: "
     "'knobtop2' host: 'localhost' (Got an error reading communication packets)", ""),
    ("2026-11-28 22:57:04 16 [Warning] Aborted connection 16 to db: 'unconnected' user: "
     "'unauthenticated' host: 'localhost' (This connection closed normally without "
     "authentication)", ""),
    ("2026-11-28 22:57:04 17 [Warning] Access denied for user 'knobtop'@'localhost' (using "
     "password: YES)", ""),
], ids=["sysbench-read", "own-db-write", "mysql8", "no-db", "timeout", "other-user",
        "unauthenticated", "not-aborted"])
def test_only_knobtops_own_aborted_connections_are_labelled(line: str, label: str) -> None:
    from knobtop.server.incident import _log_line, own_label, own_part

    assert own_label(line, "knobtop") == label
    shown = _log_line(line, "knobtop")
    assert own_part(shown) == (line, label)
