"""Dynamic knob changes on a real mariadbd: applied, refused, journaled; nothing half-done."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import kept_globals, show_global
from knobtop.hosts.local import LocalHost
from knobtop.journal import Change, JournalReader
from knobtop.server.knobs import KnobError, KnobFacts, load_facts, validate
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.session.core import Session, SessionConfig

pytestmark = pytest.mark.integration


@pytest.fixture
async def session(mariadb_info: ConnectionInfo, tmp_path: Path):  # type: ignore[no-untyped-def]
    config = SessionConfig(
        profile="test", connection=mariadb_info, journal_path=tmp_path / "k.knobtop.jsonl"
    )
    s = Session(config, LocalHost(), driver=None)
    await s.open()
    yield s
    await s.close()


def journaled_changes(session: Session) -> list[Change]:
    assert session.journal is not None
    return [e for e in JournalReader(session.journal.path) if isinstance(e, Change)]


async def test_set_global_happy_path_reads_back(
    session: Session, mariadb_info: ConnectionInfo
) -> None:
    async with kept_globals(mariadb_info, "innodb_flush_log_at_trx_commit") as kept:
        before = kept["innodb_flush_log_at_trx_commit"]
        target = "2" if before != "2" else "0"
        change = await session.set_knob("innodb_flush_log_at_trx_commit", target)
        assert change.result == "ok"
        assert change.old == before and change.new == target
        assert await show_global(mariadb_info, "innodb_flush_log_at_trx_commit") == target
        assert journaled_changes(session)[-1] == change


async def test_warnings_and_side_effects_are_surfaced(
    session: Session, mariadb_info: ConnectionInfo
) -> None:
    # Restored in this order: the capacity first, so the max never sits below it.
    async with kept_globals(mariadb_info, "innodb_io_capacity", "innodb_io_capacity_max") as kept:
        cap_max = kept["innodb_io_capacity_max"]
        above = str(int(cap_max) + 1000)
        change = await session.set_knob("innodb_io_capacity", above)
        assert change.result == "ok" and change.new == above
        # MariaDB accepts it with warning 1210 and silently raises the max.
        assert any("1210" in w for w in change.warnings)
        new_max = await show_global(mariadb_info, "innodb_io_capacity_max")
        assert change.side_effects["innodb_io_capacity_max"] == [cap_max, new_max]
        assert "innodb_io_capacity_max" in change.message


@pytest.mark.parametrize(
    ("knob", "value", "says"),
    [
        ("innodb_io_capacity", "50", "out of range; use a value from 100 to"),
        ("innodb_io_capacity", "lots", "takes a whole number"),
        ("innodb_flush_log_at_trx_commit", "7", "out of range; use a value from 0 to 3"),
        ("innodb_adaptive_flushing", "maybe", "is ON or OFF"),
        ("innodb_buffer_pool_size", "300000001", "must be a multiple of 1048576"),
    ],
)
async def test_bad_values_are_refused_before_the_server_sees_them(
    session: Session, mariadb_info: ConnectionInfo, knob: str, value: str, says: str
) -> None:
    async with kept_globals(mariadb_info, knob) as kept:
        before = kept[knob]
        change = await session.set_knob(knob, value)
        assert change.result == "refused"
        assert says in change.message and knob in change.message
        assert change.new == before
        assert await show_global(mariadb_info, knob) == before
        assert journaled_changes(session)[-1].result == "refused"


async def test_unknown_variable_is_refused_by_name(session: Session) -> None:
    change = await session.set_knob("innodb_thread_concurrency", "8")
    assert change.result == "refused"
    assert "does not exist on this server" in change.message
    assert "removed in MariaDB 10.6.0" in change.message
    nonsense = await session.set_knob("innodb_made_up_knob", "1")
    assert nonsense.result == "refused" and "does not exist" in nonsense.message
    injection = await session.set_knob("x; DROP DATABASE sbtest", "1")
    assert injection.result == "refused" and "not a server variable name" in injection.message
    assert [c.result for c in journaled_changes(session)] == ["refused"] * 3


async def test_read_only_variable_is_refused_and_unchanged(
    session: Session, mariadb_info: ConnectionInfo
) -> None:
    before = await show_global(mariadb_info, "innodb_doublewrite")
    # This session has no restart command: even a confirmed static change is refused.
    change = await session.set_knob("innodb_doublewrite", "OFF", restart_ok=True)
    assert change.result == "refused"
    assert "static (read-only at runtime)" in change.message
    assert "restart_command" in change.message and "Nothing was changed" in change.message
    assert await show_global(mariadb_info, "innodb_doublewrite") == before
    assert journaled_changes(session)[-1].knob == "innodb_doublewrite"


async def test_facts_come_from_the_server(mariadb_info: ConnectionInfo) -> None:
    link = ServerLink(mariadb_info)
    await link.connect()
    try:
        facts = await load_facts(link, ["innodb_io_capacity", "innodb_doublewrite", "nope_x"])
    finally:
        await link.close()
    assert facts["innodb_io_capacity"].status == "dynamic"
    assert facts["innodb_io_capacity"].minimum == 100
    assert facts["innodb_doublewrite"].status == "static"
    assert facts["nope_x"].status == "absent"


def test_size_suffixes_and_enum_case() -> None:
    pool = KnobFacts(name="innodb_buffer_pool_size", present=True, dynamic=True,
                     type="BIGINT UNSIGNED", minimum=2097152, maximum=2**63, block_size=1048576)
    assert validate(pool, "256M") == 256 * 1024 * 1024
    assert validate(pool, "1G") == 1 << 30
    with pytest.raises(KnobError):
        validate(pool, "1.5K")
    enum = KnobFacts(name="innodb_flush_method", present=True, dynamic=True, type="ENUM",
                     choices=("fsync", "O_DSYNC", "O_DIRECT"))
    assert validate(enum, "o_direct") == "O_DIRECT"
