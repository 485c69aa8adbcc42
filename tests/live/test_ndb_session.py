"""DiskPageBufferMemory through the session: confirmation, journal, config.ini (NDB replayed).

No NDB binaries exist here: the management host replays the manual's documented output
(tests/data/ndb, see test_ndb.py); the SQL side is the real sandbox mariadbd.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import EventCollector
from knobtop.hosts.local import LocalHost
from knobtop.journal import Change, JournalReader, Restart
from knobtop.server.link import ConnectionInfo
from knobtop.server.ndb import get_ndbd_default
from knobtop.session.core import Session, SessionConfig
from test_ndb import CONFIG, DOWN, RELOAD, SHOW, STARTED_MGMD, STOP, doc, make, status

pytestmark = pytest.mark.integration


def healthy_script() -> dict[str, list[tuple[int, str]]]:
    return {
        "SHOW": [SHOW, DOWN, SHOW],
        "1 STOP": [STOP],
        RELOAD: [STARTED_MGMD],
        "2 RESTART": [(0, doc("restart_node.txt", node=2))],
        "2 STATUS": [status("status_starting.txt", 2), status("status_started.txt", 2)],
        "3 RESTART": [(0, doc("restart_node.txt", node=3))],
        "3 STATUS": [status("status_starting.txt", 3), status("status_started.txt", 3)],
    }


async def test_disk_page_buffer_memory_needs_confirmation_then_rolls_through_nodes(
    mariadb_info: ConnectionInfo, tmp_path: Path
) -> None:
    host, ndb, _ = make(healthy_script())
    journal = tmp_path / "n.knobtop.jsonl"
    config = SessionConfig(profile="ndb", connection=mariadb_info, journal_path=journal,
                           ndb=ndb)
    session = Session(config, LocalHost(), None)
    collector = EventCollector()
    session.listeners.append(collector)
    await session.open()
    try:
        asked = await session.set_knob("DiskPageBufferMemory", "256M")
        assert asked.result == "refused" and "rolling restart" in asked.message
        assert host.log == [f"read {CONFIG}"]  # nothing ran before the confirmation
        bad = await session.set_knob("DiskPageBufferMemory", "1M", restart_ok=True)
        assert bad.result == "refused" and "out of range" in bad.message
        done = await session.set_knob("DiskPageBufferMemory", "256M", restart_ok=True)
    finally:
        await session.close()
    assert (done.result, done.method, done.new) == ("ok", "ndb_rolling_restart", "268435456")
    assert get_ndbd_default(host.files[CONFIG].decode(), "DiskPageBufferMemory") == "268435456"
    nodes = [e.node for e in collector.events if isinstance(e, Restart) and e.step == "restart"]
    assert nodes == ["ndb node 2", "ndb node 3"]
    changes = [e for e in JournalReader(journal) if isinstance(e, Change)]
    assert [c.result for c in changes] == ["refused", "refused", "ok"]


async def test_without_an_ndb_table_the_profile_is_named(
    mariadb_info: ConnectionInfo, tmp_path: Path
) -> None:
    config = SessionConfig(profile="x", connection=mariadb_info,
                           journal_path=tmp_path / "x.knobtop.jsonl")
    session = Session(config, LocalHost(), None)
    await session.open()
    try:
        change = await session.set_knob("DiskPageBufferMemory", "256M", restart_ok=True)
    finally:
        await session.close()
    assert change.result == "refused" and "[ndb]" in change.message
