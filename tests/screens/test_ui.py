"""The live screen driven by keys (pilot) against a real server, and snapshots at two sizes."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.command import CommandList, CommandPalette
from textual.pilot import Pilot
from textual.widgets import Input

from conftest import kept_globals, show_global
from harness import paths as repo_paths
from harness.served import served_session
from harness.sshd import SshServer
from harness.ui import until
from knobtop.hosts.local import LocalHost
from knobtop.hosts.ssh import SshHost
from knobtop.journal import Change, JournalReader, Note, Phase, Restart
from knobtop.lab import Sandbox
from knobtop.load.base import LoadSpec
from knobtop.load.prepare import prepare_tables
from knobtop.load.sysbench import Sysbench
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.server.static import ServerNode
from knobtop.session.core import SessionConfig
from knobtop.ui.app import KnobtopApp
from knobtop.ui.screens.confirm import ConfirmScreen
from knobtop.ui.screens.prompt import PromptScreen
from knobtop.ui.widgets.host_panel import HostPanel
from knobtop.ui.widgets.knob_panel import KnobPanel
from knobtop.ui.widgets.metric_graph import MetricGraph
from knobtop.ui.widgets.status_bar import StatusBar

JOURNALS = repo_paths.DATA / "journals"
SMALL = LoadSpec(workload="oltp_point_select", threads=1, tables=1, table_size=1000)



def graph_text(graph: MetricGraph) -> list[str]:
    return [graph.render_line(y).text for y in range(graph.size.height)]


@pytest.mark.integration
async def test_flipping_a_knob_by_keys_draws_a_marker_on_every_graph(
    mariadb_info: ConnectionInfo, tmp_path: Path
) -> None:
    async with kept_globals(mariadb_info, "innodb_flush_log_at_trx_commit") as kept:
        journal = tmp_path / "ui.knobtop.jsonl"
        config = SessionConfig(profile="test", connection=mariadb_info, journal_path=journal,
                               interval=0.2)
        with served_session(config) as session:
            app = KnobtopApp(session)
            async with app.run_test(size=(160, 48)) as pilot:
                await until(pilot, lambda: app.board is not None and app.board.samples >= 3)
                panel = app.live.query_one(KnobPanel)
                await until(pilot, lambda: "innodb_flush_log_at_trx_commit" in panel.values)
                before = panel.values["innodb_flush_log_at_trx_commit"]
                assert before == kept["innodb_flush_log_at_trx_commit"]
                target = "2" if before != "2" else "0"
                for _ in range(panel.row_count):
                    if panel.highlighted_knob == "innodb_flush_log_at_trx_commit":
                        break
                    await pilot.press("down")
                assert panel.highlighted_knob == "innodb_flush_log_at_trx_commit"
                await pilot.press("enter")
                assert isinstance(app.screen, PromptScreen)
                app.screen.query_one(Input).value = ""
                await pilot.press("enter")  # an empty value is not a silent cancel
                assert isinstance(app.screen, PromptScreen)
                assert any("no value given" in str(n.message) for n in app._notifications)
                await pilot.press(*target, "enter")
                await until(pilot, lambda: any(m.kind == "change" for m in app.board.markers))
                assert panel.values["innodb_flush_log_at_trx_commit"] == target
                # Let the next paint happen, then every graph shows the marker column.
                version = app.board.version
                await until(pilot, lambda: app._painted >= version)
                graphs = list(app.live.query("#page-overview MetricGraph").results(MetricGraph))
                assert len(graphs) == 9
                for graph in graphs:
                    rows = graph_text(graph)[1:]
                    assert any("│" in row for row in rows), graph.id
                await pilot.press("q")
            changes = [e for e in JournalReader(journal) if isinstance(e, Change)]
            assert [(c.knob, c.old, c.new, c.result) for c in changes] == [
                ("innodb_flush_log_at_trx_commit", before, target, "ok")
            ]


@pytest.mark.integration
async def test_refused_value_is_shown_and_journaled(
    mariadb_info: ConnectionInfo, tmp_path: Path
) -> None:
    journal = tmp_path / "ui.knobtop.jsonl"
    config = SessionConfig(profile="test", connection=mariadb_info, journal_path=journal)
    with served_session(config) as session:
        app = KnobtopApp(session)
        async with kept_globals(mariadb_info, "innodb_io_capacity") as kept:
            async with app.run_test(size=(80, 24)) as pilot:
                panel = app.live.query_one(KnobPanel)
                await until(pilot, lambda: "innodb_io_capacity" in panel.values)
                while panel.highlighted_knob != "innodb_io_capacity":
                    await pilot.press("down")
                await pilot.press("enter")
                app.screen.query_one(Input).value = ""
                await pilot.press(*"10", "enter")
                await until(
                    pilot, lambda: any("not changed" in (n.title or "") for n in app._notifications)
                )
                assert not any(m.kind == "change" for m in app.board.markers)
                await pilot.press("q")
            # The refused value never reached the server.
            assert await show_global(mariadb_info, "innodb_io_capacity") == \
                kept["innodb_io_capacity"]
        refused = [e for e in JournalReader(journal) if isinstance(e, Change)]
        assert refused[0].result == "refused" and "out of range" in refused[0].message


@pytest.fixture(scope="module")
def sbtables(mariadb: Sandbox, sysbench_path: str) -> Sysbench:
    import asyncio

    info = mariadb.connection()
    driver = Sysbench(LocalHost(), mysql_socket=str(mariadb.socket), user=info.user,
                      password=info.password, database="sbtest")
    asyncio.run(prepare_tables(info, driver, SMALL))
    return driver


@pytest.mark.integration
async def test_load_keys_start_change_threads_note_and_stop(
    mariadb_info: ConnectionInfo, sbtables: Sysbench, tmp_path: Path
) -> None:
    journal = tmp_path / "load.knobtop.jsonl"
    config = SessionConfig(profile="test", connection=mariadb_info, journal_path=journal,
                           load=SMALL)
    with served_session(config, sysbench=sbtables) as session:
        app = KnobtopApp(session)
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, lambda: app.board is not None)
            await pilot.press("l")
            await until(pilot, lambda: app.board.series["load_tps"].last is not None)
            await pilot.press("plus")
            await until(pilot, lambda: app.board.load_label == "oltp_point_select x2")
            await until(pilot, lambda: app.board.series["load_tps"].last is not None)
            await pilot.press("n")
            await pilot.press(*"doubled", "enter")
            await pilot.press("l")
            await until(pilot, lambda: not app.board.load_running)
            await pilot.press("q")
        events = list(JournalReader(journal))
        phases = [(e.action, e.threads) for e in events if isinstance(e, Phase)]
        assert phases == [("start", 1), ("stop", 1), ("start", 2), ("stop", 2)]
        assert [e.text for e in events if isinstance(e, Note)] == ["doubled"]
        assert any(e.kind == "load" for e in events)


def recorded_app() -> KnobtopApp:
    """80 s of oltp_read_write x4 with io_capacity changed at 25 s and flush_log at 50 s."""
    reader = JournalReader(JOURNALS / "lab-80s.knobtop.jsonl")
    return KnobtopApp(header=reader.header, events=list(reader))


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
def test_snapshot(snap_compare, size: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    async def settle(pilot: Pilot[int]) -> None:
        await pilot.pause()
        await until(pilot, lambda: pilot.app._painted > 0)

    assert snap_compare(recorded_app(), terminal_size=size, run_before=settle)


@pytest.mark.integration
async def test_hosts_panel_lists_each_ssh_host_with_its_metrics(
    mariadb: Sandbox, ssh_target: SshServer, ssh_client: SshServer, tmp_path: Path
) -> None:
    known = tmp_path / "known_hosts"
    known.write_text(ssh_target.known_hosts_path.read_text()
                     + ssh_client.known_hosts_path.read_text())

    def host(server: SshServer, name: str) -> SshHost:
        return SshHost(f"{server.user}@{server.host}:{server.port}", name=name,
                       known_hosts=str(known), client_keys=[str(server.client_key_path)],
                       config_paths=[], agent_path=None)

    info = mariadb.connection()
    config = SessionConfig(profile="test", interval=0.3,
                           connection=ConnectionInfo(user=info.user, password=info.password,
                                                     socket=str(mariadb.socket)),
                           journal_path=tmp_path / "h.knobtop.jsonl")
    target = host(ssh_target, "db-host")
    with served_session(config, host=target, clients=(host(ssh_client, "app-host"),),
                        via=target) as session:
        app = KnobtopApp(session)
        async with app.run_test(size=(160, 48)) as pilot:
            await until(pilot, lambda: app.board is not None
                        and {"db-host", "app-host"} <= set(app.board.hosts)
                        and app.board.hosts["db-host"].get("cpu") is not None)
            version = app.board.version

            def panel_text() -> str:
                panel = app.live.query_one(HostPanel)
                return "\n".join(panel.render_line(y).text for y in range(panel.size.height))

            # (the panel grows a row per host: on a busy machine its new height can come a
            # frame after the paint that holds both rows)
            await until(pilot, lambda: app._painted >= version
                        and {"db-host", "app-host"} <= set(panel_text().split()))
            text = panel_text()
            assert "db-host" in text and "app-host" in text
            assert app.board.hosts["app-host"]["mem_used_pct"] is not None
            status = app.live.query_one(StatusBar).render_line(0).text
            assert "db-host" in status and "via ssh" in status
            await pilot.press("q")


@pytest.mark.integration
async def test_static_knob_by_keys_restarts_and_baseline_brings_it_back(tmp_path: Path) -> None:
    sandbox = Sandbox(tmp_path / "lab")
    info = sandbox.start()
    node = ServerNode(name="lab", host=LocalHost(), link=lambda: ServerLink(info),
                      restart_command=sandbox.restart_command(),
                      dropin_path=sandbox.dropin_file)
    config = SessionConfig(profile="lab", connection=info, interval=0.3, nodes=(node,),
                           journal_path=tmp_path / "s.knobtop.jsonl")
    with served_session(config) as session:
        app = KnobtopApp(session)
        try:
            async with app.run_test(size=(160, 48)) as pilot:
                await until(pilot, lambda: app.knob_catalog is not None and app.board is not None)
                # The knob picker: Ctrl+P, type, Enter opens the edit dialog for that variable.
                await pilot.press("ctrl+p")
                await until(pilot, lambda: isinstance(app.screen, CommandPalette)
                            and bool(app.screen.query(CommandList)))
                await pilot.press(*"doublewrite")

                def first_hit() -> str:
                    option = app.screen.query_one(CommandList).get_option_at_index(0)
                    return str(option.prompt)

                await until(pilot, lambda: app.screen.query_one(CommandList).option_count > 0
                            and "innodb_doublewrite" in first_hit())
                await pilot.press("enter")
                await until(pilot, lambda: isinstance(app.screen, PromptScreen))
                assert "static" in app.screen.title_text
                app.screen.query_one(Input).value = ""
                await pilot.press(*"OFF", "enter")
                await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
                assert "restarts lab once" in app.screen.details
                await pilot.press("y")
                await until(pilot, lambda: app.board.knob_values.get("innodb_doublewrite") == "OFF",
                            timeout=60)
                # The static change and the restart it caused are one marker now, tagged with
                # the restart sign (issue 14 item 4; this asserted a separate restart marker).
                assert any(m.kind == "change" and m.tag == "doublewrite=OFF ⟳"
                           for m in app.board.markers)
                await pilot.press("b")
                await until(pilot, lambda: isinstance(app.screen, ConfirmScreen))
                await pilot.press("y")
                await until(pilot, lambda: app.board.knob_values.get("innodb_doublewrite") == "ON",
                            timeout=60)
                await pilot.press("q")
        finally:
            sandbox.stop()
        steps = [(e.step, e.result) for e in JournalReader(tmp_path / "s.knobtop.jsonl")
                 if isinstance(e, Restart)]
        assert steps.count(("restart", "ok")) == 2 and steps.count(("verify", "ok")) == 2
