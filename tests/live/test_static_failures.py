"""Each way a static change can fail, on a real sandbox server: what it says, what is left
on disk and on the server, and what the journal holds."""

from __future__ import annotations

import shlex
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import EventCollector, show_global
from knobtop.hosts.local import LocalHost
from knobtop.journal import Change, JournalReader, Restart
from knobtop.lab import Sandbox
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.server.static import DROPIN_HEADER, ServerNode, parse_dropin, render_dropin
from knobtop.session.core import Session, SessionConfig

pytestmark = pytest.mark.integration

BEFORE = render_dropin({"innodb_autoinc_lock_mode": "1"}) + "# as it was before the change\n"


@pytest.fixture
def lab(tmp_path: Path) -> Iterator[tuple[Sandbox, ConnectionInfo]]:
    sandbox = Sandbox(tmp_path / "lab")
    info = sandbox.start()
    try:
        yield sandbox, info
    finally:
        sandbox.stop()


def node(sandbox: Sandbox, info: ConnectionInfo, name: str = "lab", *,
         restart: str | None = None, dropin: Path | None = None) -> ServerNode:
    return ServerNode(name=name, host=LocalHost(), link=lambda: ServerLink(info),
                      restart_command=restart or sandbox.restart_command(),
                      dropin_path=dropin or sandbox.dropin_file)


def once_then(marker: Path, first: str, then: str) -> str:
    """A restart command that does ``first`` the first time it runs, ``then`` after."""
    m = shlex.quote(str(marker))
    return f"if [ -e {m} ]; then {then}; else touch {m}; {first}; fi"


def session_for(info: ConnectionInfo, journal: Path, *nodes: ServerNode,
                wait_timeout: float | None = None) -> Session:
    config = SessionConfig(profile="lab", connection=info, journal_path=journal,
                           interval=0.25, nodes=nodes)
    session = Session(config, LocalHost(), None)
    if wait_timeout is not None:
        assert session.restarter is not None
        session.restarter.wait_timeout = wait_timeout
    return session


async def change_doublewrite(session: Session, collector: EventCollector) -> Change:
    session.listeners.append(collector)
    await session.open()
    try:
        return await session.set_knob("innodb_doublewrite", "OFF", restart_ok=True)
    finally:
        await session.close()


def steps(events: list) -> list[tuple[str, str, str]]:  # type: ignore[type-arg]
    return [(e.node, e.step, e.result) for e in events if isinstance(e, Restart)]


def told(collector: EventCollector, journal: Path, expected: list[tuple[str, str, str]]) -> None:
    """The steps as emitted and as journaled are ``expected``; one change, failed."""
    assert steps(collector.events) == expected
    events = list(JournalReader(journal))
    assert steps(events) == expected
    assert [c.result for c in events if isinstance(c, Change)] == ["failed"]


async def test_a_value_that_did_not_take_is_rolled_back(
    lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path, collector: EventCollector
) -> None:
    sandbox, info = lab
    # A drop-in in a directory the server never reads: the restart works, the value
    # does not change.
    ignored = tmp_path / "not-included" / "knobtop.cnf"
    ignored.parent.mkdir()
    journal = tmp_path / "v.knobtop.jsonl"
    session = session_for(info, journal, node(sandbox, info, dropin=ignored))
    change = await change_doublewrite(session, collector)
    assert change.result == "failed"
    assert change.message == (
        "lab: the value did not take: innodb_doublewrite is ON (wanted OFF); rolled back")
    assert change.new == "ON"
    assert await show_global(info, "innodb_doublewrite") == "ON"
    # There was no drop-in before: knobtop's file is back to saying nothing.
    assert ignored.read_text() == render_dropin({}) and ignored.read_text().startswith(
        DROPIN_HEADER)
    expected = [("lab", "write_dropin", "ok"), ("lab", "restart", "ok"), ("lab", "wait", "ok"),
                ("lab", "verify", "failed"), ("lab", "rollback", "ok")]
    told(collector, journal, expected)


async def test_a_server_not_back_within_the_wait_is_rolled_back(
    lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path, collector: EventCollector
) -> None:
    sandbox, info = lab
    sandbox.dropin_file.write_text(BEFORE)
    stop_only = (f"{shlex.quote(sys.executable)} -c "
                 + shlex.quote("from pathlib import Path; from knobtop.lab import "
                               f"Sandbox; Sandbox.existing(Path({str(sandbox.root)!r})).stop()"))
    restart = once_then(tmp_path / "stopped-once", stop_only, sandbox.restart_command())
    journal = tmp_path / "w.knobtop.jsonl"
    session = session_for(info, journal, node(sandbox, info, restart=restart), wait_timeout=8.0)
    change = await change_doublewrite(session, collector)
    assert (tmp_path / "stopped-once").exists()
    assert change.result == "failed"
    assert change.message.startswith("lab: not back within 8 s of the restart (")
    assert change.message.endswith("; rolled back")
    assert "cannot reach the server" in change.message  # the last thing the wait saw
    assert sandbox.dropin_file.read_text() == BEFORE
    assert await show_global(info, "innodb_doublewrite") == "ON"  # up again, old value
    expected = [("lab", "write_dropin", "ok"), ("lab", "restart", "ok"),
                ("lab", "wait", "failed"), ("lab", "rollback", "ok")]
    told(collector, journal, expected)


async def test_a_rollback_that_fails_too_says_so_and_names_the_file(
    lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path, collector: EventCollector
) -> None:
    sandbox, info = lab
    sandbox.dropin_file.write_text(BEFORE)
    journal = tmp_path / "r.knobtop.jsonl"
    session = session_for(info, journal, node(sandbox, info, restart="echo nope >&2; exit 3"))
    change = await change_doublewrite(session, collector)
    assert change.result == "failed"
    failed = "lab: the restart command failed (exit 3): 'echo nope >&2; exit 3': nope"
    assert change.message == (
        f"{failed}; the rollback failed too: {failed}. The server may be down: check it "
        f"and {sandbox.dropin_file} by hand")
    # The old file went back before the rollback's restart failed; the server never went down.
    assert sandbox.dropin_file.read_text() == BEFORE
    assert await show_global(info, "innodb_doublewrite") == "ON"
    expected = [("lab", "write_dropin", "ok"), ("lab", "restart", "failed"),
                ("lab", "rollback", "failed")]
    told(collector, journal, expected)


async def test_nodes_already_changed_are_named_when_a_later_node_fails(
    lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path, collector: EventCollector
) -> None:
    sandbox, info = lab
    # Two nodes of one server (each with its own drop-in): the first changes and stays
    # changed; the second's restart fails once, so it alone is rolled back.
    second_dropin = sandbox.dropin_dir / "zz-second.cnf"
    second = node(sandbox, info, "second", dropin=second_dropin,
                  restart=once_then(tmp_path / "failed-once", "exit 3",
                                    sandbox.restart_command()))
    journal = tmp_path / "n.knobtop.jsonl"
    session = session_for(info, journal, node(sandbox, info, "first"), second)
    change = await change_doublewrite(session, collector)
    assert change.result == "failed"
    assert change.message.startswith("second: the restart command failed (exit 3)")
    assert change.message.endswith("; rolled back (already changed, not rolled back: first)")
    assert parse_dropin(sandbox.dropin_file.read_text()) == {"innodb_doublewrite": "OFF"}
    assert second_dropin.read_text() == render_dropin({})
    assert change.new == "OFF"
    assert await show_global(info, "innodb_doublewrite") == "OFF"  # the first node's change
    expected = [("first", "write_dropin", "ok"), ("first", "restart", "ok"),
                ("first", "wait", "ok"), ("first", "verify", "ok"),
                ("second", "write_dropin", "ok"), ("second", "restart", "failed"),
                ("second", "rollback", "ok")]
    told(collector, journal, expected)
