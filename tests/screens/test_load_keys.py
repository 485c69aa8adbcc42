"""Load keys that do what they say: `-` at one thread does nothing and says so (no new
phase), `w` opens a workload picker instead of cycling a new phase per press."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from harness.served import served_session
from harness.ui import until
from knobtop.hosts.local import LocalHost
from knobtop.journal import JournalReader, Phase
from knobtop.lab import Sandbox
from knobtop.load.base import WORKLOADS, LoadSpec
from knobtop.load.prepare import prepare_tables
from knobtop.load.sysbench import Sysbench
from knobtop.server.link import ConnectionInfo
from knobtop.session.core import SessionConfig
from knobtop.ui.app import KnobtopApp
from knobtop.ui.screens.choice import ChoiceScreen

pytestmark = pytest.mark.integration

ONE = LoadSpec(workload="oltp_point_select", threads=1, tables=1, table_size=1000)


@pytest.fixture(scope="module")
def tables(mariadb: Sandbox, sysbench_path: str) -> Sysbench:
    info = mariadb.connection()
    driver = Sysbench(LocalHost(), mysql_socket=str(mariadb.socket), user=info.user,
                      password=info.password, database="sbtest_keys")
    asyncio.run(prepare_tables(info, driver, ONE))
    return driver


async def test_minus_at_one_thread_keeps_the_phase_and_says_so(
    mariadb_info: ConnectionInfo, tables: Sysbench, tmp_path: Path
) -> None:
    journal = tmp_path / "minus.knobtop.jsonl"
    config = SessionConfig(profile="test", connection=mariadb_info, journal_path=journal,
                           load=ONE)
    with served_session(config, sysbench=tables) as session:
        app = KnobtopApp(session)
        async with app.run_test(size=(80, 24)) as pilot:
            await until(pilot, lambda: app.board is not None)
            await pilot.press("l")
            await until(pilot, lambda: app.board.series["load_tps"].last is not None)
            await pilot.press("minus")
            await until(pilot, lambda: any("already at 1 thread" in str(n.message)
                                           for n in app._notifications), timeout=5)
            await pilot.press("l")
            await until(pilot, lambda: not app.board.load_running)
            await pilot.press("q")
        phases = [(e.action, e.threads) for e in JournalReader(journal) if isinstance(e, Phase)]
        assert phases == [("start", 1), ("stop", 1)]


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_w_opens_a_workload_picker_and_changes_once(
    mariadb_info: ConnectionInfo, tables: Sysbench, tmp_path: Path, size: tuple[int, int]
) -> None:
    journal = tmp_path / "w.knobtop.jsonl"
    config = SessionConfig(profile="test", connection=mariadb_info, journal_path=journal,
                           load=ONE)
    with served_session(config, tables) as session:
        app = KnobtopApp(session)
        async with app.run_test(size=size) as pilot:
            await until(pilot, lambda: app.board is not None)
            await pilot.press("w")
            assert isinstance(app.screen, ChoiceScreen)
            shown = "\n".join(app.screen.query_one("OptionList").render_line(y).text
                              for y in range(app.screen.query_one("OptionList").size.height))
            assert all(w in shown for w in WORKLOADS) and "oltp_point_select  (now)" in shown
            await pilot.press("escape")  # keeps the workload
            assert not isinstance(app.screen, ChoiceScreen)
            await pilot.press("w")
            target = WORKLOADS.index("oltp_read_only") - WORKLOADS.index("oltp_point_select")
            await pilot.press(*(["down"] * target if target > 0 else ["up"] * -target), "enter")
            await until(pilot, lambda: any("next load: oltp_read_only x1" in str(n.message)
                                           for n in app._notifications), timeout=10)
            await pilot.press("q")
        # The load was stopped throughout: choosing remembers the workload, starts no phase.
        assert not [e for e in JournalReader(journal) if isinstance(e, Phase)]
        assert session.state().load.workload == "oltp_read_only"  # the port's reading
