"""Static knobs on a real sandbox server: drop-in, restart, verify, rollback, undo, baseline."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from conftest import EventCollector, show_global
from knobtop.hosts.local import LocalHost
from knobtop.journal import Change, Error, JournalReader, Restart, Sample
from knobtop.lab import Sandbox
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.server.static import ServerNode, parse_dropin, render_dropin, same_value
from knobtop.session.core import Session, SessionConfig

pytestmark = pytest.mark.integration


def lab_session(sandbox: Sandbox, info: ConnectionInfo, journal: Path, **node: str) -> Session:
    spec = ServerNode(
        name="lab", host=LocalHost(), link=lambda: ServerLink(info),
        restart_command=node.get("restart", sandbox.restart_command()),
        dropin_path=Path(node.get("dropin", str(sandbox.dropin_file))),
    )
    config = SessionConfig(profile="lab", connection=info, journal_path=journal,
                           interval=0.25, nodes=(spec,))
    return Session(config, LocalHost(), None)


@pytest.fixture
async def lab(tmp_path: Path) -> AsyncIterator[tuple[Sandbox, ConnectionInfo]]:
    sandbox = Sandbox(tmp_path / "lab")
    info = sandbox.start()
    yield sandbox, info
    sandbox.stop()


def restarts(events: list) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(e.step, e.result) for e in events if isinstance(e, Restart)]


async def test_doublewrite_off_through_dropin_and_restart(
    lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path, collector: EventCollector
) -> None:
    sandbox, info = lab
    session = lab_session(sandbox, info, tmp_path / "j.knobtop.jsonl")
    session.listeners.append(collector)
    await session.open()
    try:
        refused = await session.set_knob("innodb_doublewrite", "OFF")
        assert refused.result == "refused" and "Confirm" in refused.message
        assert "restarts lab once" in refused.message
        assert await show_global(info, "innodb_doublewrite") == "ON"
        change = await session.set_knob("innodb_doublewrite", "OFF", restart_ok=True)
        await collector.wait_for(
            lambda ev: any(isinstance(e, Sample) and e.re for e in ev), timeout=30
        )
    finally:
        await session.close()
    assert (change.result, change.old, change.new) == ("ok", "ON", "OFF")
    assert change.method == "dropin_restart"
    assert await show_global(info, "innodb_doublewrite") == "OFF"
    assert restarts(collector.events) == [
        ("write_dropin", "ok"), ("restart", "ok"), ("wait", "ok"), ("verify", "ok")
    ]
    assert parse_dropin(sandbox.dropin_file.read_text()) == {"innodb_doublewrite": "OFF"}
    # The sampler saw the server go away (a gap) and came back on its own; it says the
    # restart was the planned one, not that the server may be down or misconfigured.
    gaps = [e for e in collector.events if isinstance(e, Error) and e.gap]
    assert gaps and all("restarting for a static knob change" in e.message for e in gaps)
    journal = list(JournalReader(tmp_path / "j.knobtop.jsonl"))
    assert restarts(journal) == restarts(collector.events)
    assert all(e.seconds >= 0 for e in journal if isinstance(e, Restart))


async def test_a_value_the_server_cannot_start_with_rolls_back(
    lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path, collector: EventCollector
) -> None:
    sandbox, info = lab
    session = lab_session(sandbox, info, tmp_path / "j.knobtop.jsonl")
    session.listeners.append(collector)
    await session.open()
    before = await show_global(info, "innodb_log_group_home_dir")
    try:
        # A valid path, but no redo log there: InnoDB aborts and mariadbd refuses to start.
        # (innodb_page_size, which did this before, is now refused before any restart.)
        # a path variable (server.policy): set as the person would, after its dialog
        change = await session.set_knob("innodb_log_group_home_dir", "/nonexistent-knobtop",
                                        restart_ok=True, reach=("innodb_log_group_home_dir",))
    finally:
        await session.close()
    assert change.result == "failed"
    assert "rolled back" in change.message and "restart command failed" in change.message
    assert change.new == before
    assert await show_global(info, "innodb_log_group_home_dir") == before  # back, answering
    steps = restarts(collector.events)
    assert steps[:2] == [("write_dropin", "ok"), ("restart", "failed")]
    assert steps[-1] == ("rollback", "ok")
    assert "innodb_log_group_home_dir" not in parse_dropin(sandbox.dropin_file.read_text())


async def test_undo_and_revert_to_baseline(
    lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path, collector: EventCollector
) -> None:
    sandbox, info = lab
    session = lab_session(sandbox, info, tmp_path / "j.knobtop.jsonl")
    session.listeners.append(collector)
    await session.open()
    try:
        base_cap = await show_global(info, "innodb_io_capacity")
        base_max = await show_global(info, "innodb_io_capacity_max")
        up = str(int(base_max) + 500)  # raises io_capacity_max as a side effect
        assert (await session.set_knob("innodb_io_capacity", up)).result == "ok"
        undone = await session.undo()
        assert undone is not None and undone.reason == "undo" and undone.new == base_cap
        assert await show_global(info, "innodb_io_capacity_max") == base_max

        assert (await session.set_knob("innodb_flush_log_at_trx_commit", "2")).result == "ok"
        assert (await session.set_knob("innodb_io_capacity", "1000")).result == "ok"
        static = await session.set_knob("innodb_doublewrite", "OFF", restart_ok=True)
        assert static.result == "ok"
        # The restart forgot the SET GLOBAL values; the session put them back.
        assert await show_global(info, "innodb_flush_log_at_trx_commit") == "2"
        assert await show_global(info, "innodb_io_capacity") == "1000"
        reapplied = [e for e in collector.events
                     if isinstance(e, Change) and e.reason == "re-applied after restart"]
        assert {c.knob for c in reapplied} == {"innodb_flush_log_at_trx_commit",
                                               "innodb_io_capacity"}
        before = len(restarts(collector.events))
        reverted = await session.revert_to_baseline()
    finally:
        await session.close()
    assert {c.knob for c in reverted} == {
        "innodb_flush_log_at_trx_commit", "innodb_io_capacity", "innodb_doublewrite"
    }
    assert all(c.result == "ok" and c.reason == "revert to baseline" for c in reverted)
    assert await show_global(info, "innodb_flush_log_at_trx_commit") == "1"
    assert await show_global(info, "innodb_io_capacity") == base_cap
    assert await show_global(info, "innodb_doublewrite") == "ON"
    # Static knobs come back with a single restart.
    assert [s for s in restarts(collector.events)[before:] if s[0] == "restart"] == [
        ("restart", "ok")
    ]


async def test_unwritable_dropin_and_failing_restart_command(
    lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path
) -> None:
    sandbox, info = lab
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("")
    session = lab_session(sandbox, info, tmp_path / "a.knobtop.jsonl",
                          dropin=str(blocker / "knobtop.cnf"))
    await session.open()
    try:
        change = await session.set_knob("innodb_doublewrite", "OFF", restart_ok=True)
    finally:
        await session.close()
    assert change.result == "failed"
    assert "cannot use the drop-in" in change.message
    assert "nothing was changed" in change.message and "dropin_path" in change.message
    assert await show_global(info, "innodb_doublewrite") == "ON"

    session = lab_session(sandbox, info, tmp_path / "b.knobtop.jsonl", restart="exit 3")
    await session.open()
    try:
        change = await session.set_knob("innodb_doublewrite", "OFF", restart_ok=True)
    finally:
        await session.close()
    assert change.result == "failed" and "exit 3" in change.message
    assert await show_global(info, "innodb_doublewrite") == "ON"  # never restarted
    assert "innodb_doublewrite" not in parse_dropin(sandbox.dropin_file.read_text())
    changes = [e for e in JournalReader(tmp_path / "b.knobtop.jsonl") if isinstance(e, Change)]
    assert changes[-1].result == "failed"


def test_dropin_round_trip_and_value_comparison() -> None:
    text = render_dropin({"innodb_doublewrite": "OFF", "innodb_log_buffer_size": "33554432"})
    assert parse_dropin(text) == {"innodb_doublewrite": "OFF",
                                  "innodb_log_buffer_size": "33554432"}
    assert parse_dropin("[client]\nuser=x\n[mysqld]\ninnodb-doublewrite = 0\n") == {
        "innodb_doublewrite": "0"
    }
    assert same_value("OFF", "0") and same_value("1", "ON") and same_value("90", "90.000000")
    assert not same_value("OFF", "ON") and not same_value("256", "257")


async def test_load_is_paused_for_the_restart_and_resumes(
    lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path, sysbench_path: str
) -> None:
    from knobtop.journal import Phase
    from knobtop.load.base import LoadSpec
    from knobtop.load.prepare import prepare_tables
    from knobtop.load.sysbench import Sysbench

    sandbox, info = lab
    small = LoadSpec(workload="oltp_point_select", threads=1, tables=1, table_size=1000)
    driver = Sysbench(LocalHost(), mysql_socket=str(sandbox.socket), user=info.user,
                      password=info.password, database="sbtest")
    await prepare_tables(info, driver, small)
    node = ServerNode(name="lab", host=LocalHost(), link=lambda: ServerLink(info),
                      restart_command=sandbox.restart_command(), dropin_path=sandbox.dropin_file)
    config = SessionConfig(profile="lab", connection=info, interval=0.25, load=small,
                           journal_path=tmp_path / "l.knobtop.jsonl", nodes=(node,))
    session = Session(config, LocalHost(), driver)
    collector = EventCollector()
    session.listeners.append(collector)
    await session.open()
    try:
        await session.start_load()
        await collector.wait_for(lambda ev: any(e.kind == "load" for e in ev), timeout=20)
        change = await session.set_knob("innodb_doublewrite", "OFF", restart_ok=True)
        loads_before = sum(1 for e in collector.events if e.kind == "load")
        await collector.wait_for(
            lambda ev: sum(1 for e in ev if e.kind == "load") > loads_before, timeout=20)
        running = driver.running
    finally:
        await session.close()
    assert change.result == "ok" and running
    phases = [(e.action, e.phase) for e in collector.events if isinstance(e, Phase)]
    # Stopped cleanly before the restart (no "failed"), a new phase after it.
    assert phases == [("start", 1), ("stop", 1), ("start", 2), ("stop", 2)]


async def test_a_static_string_value_cannot_smuggle_config_lines(
    lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path
) -> None:
    sandbox, info = lab
    session = lab_session(sandbox, info, tmp_path / "i.knobtop.jsonl")
    await session.open()
    try:
        # init_file is a static string variable: the value would go into the drop-in.
        # a reach variable, allowed as the person's dialog allows it, so that the drop-in's
        # own value check is what refuses it
        change = await session.set_knob("init_file", "/tmp/x\ninnodb_doublewrite=0",
                                        restart_ok=True, reach=("init_file",))
        comment = await session.set_knob("init_file", "/tmp/x # y", restart_ok=True,
                                         reach=("init_file",))
    finally:
        await session.close()
    assert change.result == "refused" and "one line" in change.message
    assert comment.result == "refused"
    assert not sandbox.dropin_file.exists()


async def test_quit_during_a_restart_waits_for_it_and_journals_it(
    lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path
) -> None:
    import asyncio

    sandbox, info = lab
    session = lab_session(sandbox, info, tmp_path / "q.knobtop.jsonl")
    collector = EventCollector()
    session.listeners.append(collector)
    await session.open()
    change = asyncio.create_task(
        session.set_knob("innodb_doublewrite", "OFF", restart_ok=True))
    await collector.wait_for(lambda ev: any(isinstance(e, Restart) for e in ev), timeout=30)
    await session.close("quit")  # must not tear the restart down halfway
    assert change.done() and change.result().result == "ok"
    kinds = [e.kind for e in JournalReader(tmp_path / "q.knobtop.jsonl")]
    assert kinds.index("change") < kinds.index("end")
    assert await show_global(info, "innodb_doublewrite") == "OFF"


async def test_a_knob_from_outside_the_panel_list_is_reverted_too(
    lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path
) -> None:
    sandbox, info = lab
    session = lab_session(sandbox, info, tmp_path / "o.knobtop.jsonl")
    await session.open()
    try:
        before = await show_global(info, "max_connections")
        assert (await session.set_knob("max_connections", str(int(before) + 21))).result == "ok"
        reverted = await session.revert_to_baseline()
    finally:
        await session.close()
    assert [c.knob for c in reverted] == ["max_connections"]
    assert await show_global(info, "max_connections") == before


async def test_two_static_knobs_go_in_with_one_restart_or_not_at_all(
    lab: tuple[Sandbox, ConnectionInfo], tmp_path: Path, collector: EventCollector
) -> None:
    sandbox, info = lab
    session = lab_session(sandbox, info, tmp_path / "m.knobtop.jsonl")
    session.listeners.append(collector)
    await session.open()
    try:
        lock_mode = await show_global(info, "innodb_autoinc_lock_mode")
        other = "2" if lock_mode != "2" else "1"
        changes = await session.set_knobs(
            {"innodb_doublewrite": "OFF", "innodb_autoinc_lock_mode": other,
             "innodb_io_capacity": "1234"},
            restart_ok=True, reason="arm B")
        assert [(c.knob, c.result) for c in changes] == [
            ("innodb_io_capacity", "ok"), ("innodb_doublewrite", "ok"),
            ("innodb_autoinc_lock_mode", "ok")]
        assert [c.method for c in changes] == ["set_global", "dropin_restart", "dropin_restart"]
        assert [s for s in restarts(collector.events) if s[0] == "restart"] == [("restart", "ok")]
        assert await show_global(info, "innodb_doublewrite") == "OFF"
        assert await show_global(info, "innodb_autoinc_lock_mode") == other
        assert await show_global(info, "innodb_io_capacity") == "1234"  # re-applied after it
        dropin = sandbox.dropin_file.read_text()

        refused = await session.set_knobs(
            {"innodb_io_capacity": "2000", "innodb_doublewrite": "ON",
             "innodb_autoinc_lock_mode": "7"}, restart_ok=True)
        # One static knob and a bad dynamic value: the static one is not applied either.
        one_static = await session.set_knobs(
            {"innodb_io_capacity": "lots", "innodb_doublewrite": "ON"}, restart_ok=True)
    finally:
        await session.close()
    assert {c.knob: c.result for c in refused} == {
        "innodb_io_capacity": "refused", "innodb_doublewrite": "refused",
        "innodb_autoinc_lock_mode": "refused"}
    assert "innodb_autoinc_lock_mode" in refused[0].message
    assert all("Nothing was changed" in c.message for c in refused)
    # Nothing half-applied: no second restart, the drop-in and the server as they were.
    assert [s for s in restarts(collector.events) if s[0] == "restart"] == [("restart", "ok")]
    assert sandbox.dropin_file.read_text() == dropin
    assert await show_global(info, "innodb_doublewrite") == "OFF"
    assert await show_global(info, "innodb_io_capacity") == "1234"
    assert [(c.knob, c.result) for c in one_static] == [
        ("innodb_io_capacity", "refused"), ("innodb_doublewrite", "refused")]
    assert "whole number" in one_static[0].message
    assert "innodb_io_capacity in the same change was refused" in one_static[1].message
