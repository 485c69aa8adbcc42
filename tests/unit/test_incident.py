"""The incident snapshot on a real mariadbd: processlist, lock waits, oldest transaction, the
error log's tail, statement texts off, secrets redacted; the session samples it only on demand."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import EventCollector
from harness.galera import GaleraCluster
from harness.sshd import SshServer, make_host
from knobtop.hosts.local import LocalHost
from knobtop.journal import JournalReader
from knobtop.journal.events import Incident, event_from_dict, to_dict
from knobtop.lab import Sandbox
from knobtop.printable import printable
from knobtop.server.incident import (
    REDACTED,
    IncidentReader,
    IncidentSnapshot,
    own_part,
    redact,
    shorten,
)
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.session.core import Session, SessionConfig

DB = "incident_t"
SECRET = "hunter2-incident-secret"

# -- redaction (no server) ----------------------------------------------------------------

SECRET_STATEMENTS = [
    f"SET PASSWORD FOR 'app'@'%' = PASSWORD('{SECRET}')",
    f"set password = password('{SECRET}')",
    f"ALTER USER app IDENTIFIED BY '{SECRET}'",
    f"CREATE USER 'x'@'localhost' IDENTIFIED BY \"{SECRET}\"",
    f"GRANT ALL ON *.* TO x IDENTIFIED BY '{SECRET}'",
    f"CHANGE MASTER TO MASTER_HOST='h', MASTER_PASSWORD='{SECRET}'",
    f"SELECT AES_ENCRYPT('data', '{SECRET}')",
    f"SELECT AES_DECRYPT(c, '{SECRET}') FROM t",
    f"ALTER USER app IDENTIFIED BY '{SECRET}\\' still secret'",
    f"ALTER USER app IDENTIFIED BY 'it''s {SECRET}'",
    f"ALTER USER app IDENTIFIED BY '{SECRET}",  # cut short by the fetch limit
    f"ALTER USER app\n  IDENTIFIED\tBY '{SECRET}'",
    f"ALTER USER app IDENTIFIED VIA ed25519 USING PASSWORD('{SECRET}')",
    f"INSERT INTO t VALUES (ENCRYPT('{SECRET}'))",
    # Issue 36: ENCODE/DECODE keys were not redacted.
    f"SELECT ENCODE('data', '{SECRET}')",
    f"SELECT decode(c, '{SECRET}') FROM t",
    f"SELECT DES_ENCRYPT('data', '{SECRET}')",
    f"SELECT DES_DECRYPT(c, '{SECRET}') FROM t",
    f"SELECT AES_DECRYPT(c, \"{SECRET}\") FROM t",
]


@pytest.mark.parametrize("sql", SECRET_STATEMENTS)
def test_secret_literals_are_redacted(sql: str) -> None:
    out = redact(sql)
    assert SECRET not in out
    assert REDACTED in out
    cut = shorten(sql, 40)
    assert cut is not None and SECRET[:10] not in cut and len(cut) <= 40


def test_plain_statements_keep_their_text() -> None:
    sql = "SELECT c FROM sbtest1 WHERE id = 'abc'"
    assert redact(sql) == sql
    assert shorten("SELECT  1\n  FROM dual") == "SELECT 1 FROM dual"
    long = "SELECT " + "x, " * 100
    cut = shorten(long, 30)
    assert cut is not None and len(cut) == 30 and cut.endswith("…")
    assert shorten(None) is None


def test_incident_event_round_trips_and_rejects_wrong_types() -> None:
    event = Incident(t=1.0, wall=2.0, threads=3, procs=[[7, "u", None, "Query", 1.5, "x", "S"]],
                     oldest={"thread": 7, "seconds": 3}, log=["a line"], statements=False)
    assert event_from_dict(to_dict(event)) == event
    from knobtop.journal.events import EventDecodeError
    bad: dict[str, Any]
    for bad in ({"procs": [[[1]]]}, {"log": "x"}, {"oldest": []}, {"statements": "no"},
                {"galera": {"a": 1}}, {"threads": 1.5}):
        with pytest.raises(EventDecodeError):
            event_from_dict({**to_dict(event), **bad})


# -- on a real server ---------------------------------------------------------------------

async def until(check: Callable[[], Awaitable[Any]], timeout: float = 20) -> Any:
    """Poll ``check`` until it returns something truthy (or fail at the deadline)."""
    deadline = time.monotonic() + timeout
    while True:
        got = await check()
        if got:
            return got
        assert time.monotonic() < deadline, "condition not met in time"
        await asyncio.sleep(0.1)


@contextlib.asynccontextmanager
async def locking_links(info: ConnectionInfo) -> AsyncIterator[list[ServerLink]]:
    """Three connections, and a row ({DB}.t id 1) for two of them to fight over."""
    made = [ServerLink(info) for _ in range(3)]
    try:
        for link in made:
            await link.connect()
        await made[0].query(f"CREATE DATABASE IF NOT EXISTS {DB}")
        await made[0].query(f"CREATE TABLE IF NOT EXISTS {DB}.t (id INT PRIMARY KEY, v INT) "
                            "ENGINE=InnoDB")
        await made[0].query(f"INSERT IGNORE INTO {DB}.t VALUES (1, 0)")
        yield made
    finally:
        for link in made:
            await link.close()


@pytest.fixture
async def links(mariadb_info: ConnectionInfo) -> AsyncIterator[list[ServerLink]]:
    async with locking_links(mariadb_info) as made:
        yield made


@pytest.mark.integration
async def test_blocked_transaction_shows_in_lock_waits_and_oldest(
        links: list[ServerLink], mariadb_info: ConnectionInfo) -> None:
    holder, waiter, reader_link = links
    await holder.query("BEGIN")
    await holder.query(f"UPDATE {DB}.t SET v = v + 1 WHERE id = 1")
    holder_id = (await holder.query("SELECT CONNECTION_ID()"))[0][0]
    waiter_id = (await waiter.query("SELECT CONNECTION_ID()"))[0][0]
    blocked = asyncio.create_task(
        waiter.query(f"UPDATE {DB}.t SET v = v + 2 WHERE id = 1", timeout=60))
    reader = IncidentReader(reader_link, LocalHost())
    try:
        async def locked() -> IncidentSnapshot | None:
            snap = await reader.read()
            return snap if snap.locks else None
        snap = await until(locked)
        wait = snap.locks[0]
        assert wait[0] == waiter_id and wait[3] == holder_id
        assert wait[2] == f"UPDATE {DB}.t SET v = v + 2 WHERE id = 1"
        assert snap.oldest["thread"] == holder_id
        assert snap.oldest["state"] == "RUNNING"
        assert snap.problems == [], snap.problems
    finally:
        await holder.query("ROLLBACK")
        await asyncio.wait_for(blocked, 30)

    async def cleared() -> bool:  # InnoDB refreshes its I_S transaction cache every 0.1 s
        snap = await reader.read()
        return snap.locks == [] and snap.oldest == {}
    await until(cleared)


@pytest.mark.integration
async def test_long_sleep_tops_the_processlist_and_statements_can_be_off(
        links: list[ServerLink]) -> None:
    sleeper, _, reader_link = links
    sleeper_id = (await sleeper.query("SELECT CONNECTION_ID()"))[0][0]
    sql = f"SELECT SLEEP(4), PASSWORD('{SECRET}')"
    task = asyncio.create_task(sleeper.query(sql, timeout=30))
    try:
        reader = IncidentReader(reader_link, LocalHost())

        async def slept() -> IncidentSnapshot | None:
            snap = await reader.read()
            top = snap.procs[0] if snap.procs else None
            return snap if top is not None and top[0] == sleeper_id \
                and isinstance(top[4], float) and top[4] > 0.5 else None
        snap = await until(slept)
        top = snap.procs[0]
        assert top[3] == "Query"
        assert isinstance(top[6], str) and top[6].startswith("SELECT SLEEP(4), PASSWORD(")
        assert SECRET not in repr(snap)
        assert snap.threads >= 2  # the sleeper and the holder/waiter links (not the reader)
        ids = [p[0] for p in snap.procs]
        assert (await reader_link.query("SELECT CONNECTION_ID()"))[0][0] not in ids
        off = await IncidentReader(reader_link, LocalHost(), statements=False).read()
        assert off.statements is False
        assert [p[0] for p in off.procs][:1] == [sleeper_id]
        assert all(p[6] is None for p in off.procs)
        assert "SLEEP" not in repr(off)
    finally:
        await asyncio.wait_for(task, 30)


@pytest.mark.integration
async def test_error_log_tail(links: list[ServerLink], mariadb: Sandbox) -> None:
    reader = IncidentReader(links[2], LocalHost())
    snap = await reader.read()
    path = Path(snap.log_path)
    assert path.is_file()
    lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    assert snap.log, snap.problems
    # Each line as the page shows it: secrets' literals redacted, made printable (a user
    # name with an escape sequence lands in this log: issue 36).
    last = printable(redact(lines[-1]), newlines=False)
    shown, _label = own_part(snap.log[-1])  # a line of knobtop's own is labelled at its end
    assert shown == last[:300] or shown.endswith("…")
    assert len(snap.log) == min(20, len(lines))
    # No host that can read it: the page says why instead.
    snap = await IncidentReader(links[2], None, no_host="no SSH to it").read()
    assert snap.log == [] and "error log: no SSH to it" in snap.problems


@pytest.mark.integration
async def test_error_log_lines_are_redacted_and_printable(links: list[ServerLink],
                                                          tmp_path: Path) -> None:
    """Issue 36: error-log lines reached the page raw (an escape sequence in a user name
    retitled the terminal) and unredacted (a statement the server quotes, with its key)."""
    log = tmp_path / "error.log"
    log.write_bytes(
        b"2025-01-01 7 [Warning] Access denied for user 'U\x1b]2;PWNED\x07\xc2\x9b2J'@'h' "
        b"(using password: YES)\n"
        b"2025-01-01 8 [ERROR] Query: SELECT ENCODE('data', '" + SECRET.encode() + b"')\n"
        b"2025-01-01 9 [Note] cr\rnel\xc2\x85u\xe2\x80\xaeend\n")
    snap = await IncidentReader(links[2], LocalHost(), log_path=str(log)).read()
    assert snap.log == [
        "2025-01-01 7 [Warning] Access denied for user 'U\\x1b]2;PWNED\\x07\\x9b2J'@'h' "
        "(using password: YES)",
        f"2025-01-01 8 [ERROR] Query: SELECT ENCODE({REDACTED}, {REDACTED})",
        "2025-01-01 9 [Note] cr\\rnel\\x85u\\u202eend",
    ]
    assert snap.log_path == str(log)


@pytest.mark.integration
async def test_session_samples_only_on_demand_and_keeps_secrets_out(
        mariadb_info: ConnectionInfo, links: list[ServerLink], tmp_path: Path,
        collector: EventCollector) -> None:
    path = tmp_path / "s.knobtop.jsonl"
    config = SessionConfig(profile="test", connection=mariadb_info, journal_path=path,
                           statements=False)
    session = Session(config, LocalHost(), None)
    session.listeners.append(collector)
    await session.open()
    sleeper = links[0]
    task = asyncio.create_task(sleeper.query(f"SELECT SLEEP(3), PASSWORD('{SECRET}')",
                                             timeout=30))
    try:
        await collector.wait_for(lambda ev: sum(e.kind == "sample" for e in ev) >= 2,
                                 timeout=20)
        assert not any(e.kind == "incident" for e in collector.events)
        await session.incident_sampling(True)
        await collector.wait_for(lambda ev: sum(e.kind == "incident" for e in ev) >= 2,
                                 timeout=20)
        await session.incident_sampling(False)
        count = sum(e.kind == "incident" for e in collector.events)
        seen = len(collector.events)
        await collector.wait_for(lambda ev: len(ev) >= seen + 3, timeout=20)  # samples go on
        assert sum(e.kind == "incident" for e in collector.events) == count
    finally:
        await session.close()
        await asyncio.wait_for(task, 30)
    incidents = [e for e in collector.events if isinstance(e, Incident)]
    times = [e.t for e in incidents]
    assert all(b - a >= 1.9 for a, b in itertools.pairwise(times)), times
    assert all(not e.statements for e in incidents)
    assert any(p[3] == "Query" for e in incidents for p in e.procs)
    text = path.read_text()
    assert '"ev":"incident"' in text.replace(" ", "")
    assert "SLEEP" not in text and SECRET not in text
    journaled = [e for e in JournalReader(path).events() if isinstance(e, Incident)]
    assert journaled == incidents


@pytest.mark.integration
async def test_galera_state_only_where_galera_runs(
        galera_cluster: GaleraCluster, links: list[ServerLink]) -> None:
    plain = await IncidentReader(links[2], None).read()
    assert plain.galera == {}  # MariaDB has wsrep_% variables without Galera too
    node = galera_cluster.nodes[0]
    link = ServerLink(galera_cluster.connection(node))
    try:
        snap = await IncidentReader(link, LocalHost()).read()
    finally:
        await link.close()
    g = snap.galera
    assert g["wsrep_cluster_status"] == "Primary"
    assert g["wsrep_cluster_size"] == str(len(galera_cluster.nodes))
    assert g["wsrep_local_state_comment"] == "Synced"
    for name in ("wsrep_local_recv_queue", "wsrep_flow_control_paused",
                 "wsrep_flow_control_sent"):
        assert name in g
    assert Path(snap.log_path) == node.error_log and snap.log, snap.problems
    assert snap.repl == []


@pytest.mark.integration
async def test_error_log_tail_over_ssh(ssh_target: SshServer, links: list[ServerLink]) -> None:
    """A remote target's log is read through its SshHost (here sshd on 127.0.0.2 reaching the
    sandbox's log): the same lines as reading it locally; a missing file is named."""
    host = make_host(ssh_target)
    try:
        local = await IncidentReader(links[2], LocalHost()).read()
        remote = await IncidentReader(links[2], host).read()
        assert remote.log and remote.problems == []
        assert remote.log_path == local.log_path
        assert remote.log[-3:] == local.log[-3:]
        reader = IncidentReader(links[2], host)
        reader._log_path = "/nonexistent/knobtop/error.log"
        missing = await reader.read()
        assert missing.log == []
        assert any("/nonexistent/knobtop/error.log" in p and host.name in p
                   for p in missing.problems), missing.problems
    finally:
        await host.close()


@pytest.mark.parametrize("command", ["lab", "connect"])
def test_no_statements_option(command: str) -> None:
    from knobtop.cli import build_parser

    parser = build_parser()
    extra = ["--target", "db.example"] if command == "connect" else []
    assert parser.parse_args([command, *extra]).statements is True
    assert parser.parse_args([command, *extra, "--no-statements"]).statements is False
