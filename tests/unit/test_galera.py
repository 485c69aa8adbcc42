"""Node health on a real 3-node Galera cluster, a plain server, and replica status rows."""

from __future__ import annotations

import asyncio
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import aiomysql
import pytest

from harness import paths as repo_paths
from harness.galera import GaleraCluster, GaleraNode
from knobtop.lab import Sandbox, free_port
from knobtop.server.health import NodeHealth, node_health, wait_healthy
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink, ServerVersion

integration = pytest.mark.integration


def link_to(cluster: GaleraCluster, node: GaleraNode) -> ServerLink:
    return ServerLink(cluster.connection(node), connect_timeout=5.0)


async def health_of(cluster: GaleraCluster, node: GaleraNode) -> NodeHealth:
    link = link_to(cluster, node)
    try:
        return await node_health(link)
    finally:
        await link.close()


async def variable(cluster: GaleraCluster, node: GaleraNode, name: str) -> str:
    link = link_to(cluster, node)
    try:
        await link.connect()
        rows = await link.query("SHOW GLOBAL VARIABLES LIKE %s", (name,))
        return str(rows[0][1])
    finally:
        await link.close()


async def restart(cluster: GaleraCluster, node: GaleraNode) -> tuple[float, float]:
    """Run the node's restart command, then wait until healthy: (command s, to-Synced s)."""
    t0 = time.monotonic()
    proc = await asyncio.create_subprocess_shell(
        node.restart_command, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    out, err = await asyncio.wait_for(proc.communicate(), 180)
    assert proc.returncode == 0, f"{out.decode()}\n{err.decode()}"
    t1 = time.monotonic()
    health = await wait_healthy(lambda: link_to(cluster, node), timeout=120, poll=0.25)
    assert health == NodeHealth(True, "galera", "Synced, cluster size 3")
    return t1 - t0, time.monotonic() - t1


@integration
async def test_cluster_comes_up_with_three_synced_nodes(galera_cluster: GaleraCluster) -> None:
    print(f"cluster start timings: {galera_cluster.timings}")
    assert [n.name for n in galera_cluster.nodes] == ["n1", "n2", "n3"]
    for node in galera_cluster.nodes:
        assert node.pid() is not None
        health = await health_of(galera_cluster, node)
        assert health == NodeHealth(True, "galera", "Synced, cluster size 3"), node.name


def health_from_wsrep(status: dict[str, str]) -> NodeHealth:
    """What node_health must say, from the node's wsrep status as the mariadb client reads it
    over the node's socket (the harness, not knobtop's link)."""
    state = status["wsrep_local_state_comment"]
    ready, component = status["wsrep_ready"], status["wsrep_cluster_status"]
    parts = [state, f"cluster size {status['wsrep_cluster_size']}"]
    if component != "Primary":
        parts.append(f"component {component}")
    if ready != "ON":
        parts.append("not ready")
    healthy = state == "Synced" and ready == "ON" and component == "Primary"
    return NodeHealth(healthy, "galera", ", ".join(parts))


async def health_against_wsrep(
    cluster: GaleraCluster, node: GaleraNode
) -> tuple[NodeHealth, NodeHealth]:
    """(node_health, expected from the node's own status), with the status the same before
    and after node_health's read (retried within a deadline while it moves)."""
    deadline = time.monotonic() + 30
    while True:
        before = await asyncio.to_thread(node.status)
        got = await health_of(cluster, node)
        after = await asyncio.to_thread(node.status)
        keys = ("wsrep_local_state_comment", "wsrep_ready", "wsrep_cluster_status",
                "wsrep_cluster_size")
        if before and all(before.get(k) == after.get(k) for k in keys):
            return got, health_from_wsrep(before)
        assert time.monotonic() < deadline, f"{node.name}: wsrep status kept moving"
        await asyncio.sleep(0.2)


@integration
async def test_galera_health_is_each_nodes_own_wsrep_status(
    galera_cluster: GaleraCluster,
) -> None:
    for node in galera_cluster.nodes:
        got, expected = await health_against_wsrep(galera_cluster, node)
        assert got == expected, node.name
        assert got.healthy


@integration
async def test_a_stopped_node_leaves_two_healthy_nodes_and_rejoins(
    galera_cluster: GaleraCluster,
) -> None:
    n1, n2, _ = galera_cluster.nodes
    t0 = time.monotonic()
    n2.stop()
    stopped = time.monotonic() - t0
    try:
        assert n2.pid() is None
        health = await health_of(galera_cluster, n1)
        deadline = time.monotonic() + 30
        while health.detail != "Synced, cluster size 2" and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            health = await health_of(galera_cluster, n1)
        assert health == NodeHealth(True, "galera", "Synced, cluster size 2")
        got, expected = await health_against_wsrep(galera_cluster, n1)
        assert got == expected
        with pytest.raises(ServerError) as unreachable:
            await health_of(galera_cluster, n2)
        assert unreachable.value.code in (2002, 2003, 2013)

        t1 = time.monotonic()
        n2.start()
        progress: list[str] = []
        health = await wait_healthy(
            lambda: link_to(galera_cluster, n2), timeout=60, poll=0.25,
            on_progress=progress.append,
        )
        print(f"n2 stop {stopped:.1f} s, start to Synced {time.monotonic() - t1:.1f} s; "
              f"progress seen: {progress}")
        assert health == NodeHealth(True, "galera", "Synced, cluster size 3")
    finally:
        if not n2.running():
            n2.start()
        galera_cluster.wait_all_synced(timeout=180)


@integration
async def test_a_static_knob_through_a_dropin_and_the_restart_command(
    galera_cluster: GaleraCluster,
) -> None:
    nodes = galera_cluster.nodes
    n3 = nodes[2]
    dropin = n3.dropin_dir / "knobtop.cnf"
    dropin.write_text("[mysqld]\ninnodb_doublewrite=0\n")
    try:
        old_pid = n3.pid()
        took = await restart(galera_cluster, n3)
        assert n3.pid() not in (None, old_pid)
        values = [await variable(galera_cluster, n, "innodb_doublewrite") for n in nodes]
        assert values == ["ON", "ON", "OFF"]
    finally:
        dropin.unlink(missing_ok=True)
        back = await restart(galera_cluster, n3)
    print(f"n3 restart command / to Synced: with drop-in {took[0]:.1f}/{took[1]:.1f} s, "
          f"without {back[0]:.1f}/{back[1]:.1f} s")
    values = [await variable(galera_cluster, n, "innodb_doublewrite") for n in nodes]
    assert values == ["ON", "ON", "ON"]
    galera_cluster.wait_all_synced(timeout=60)
    for node in nodes:
        health = await health_of(galera_cluster, node)
        assert health == NodeHealth(True, "galera", "Synced, cluster size 3"), node.name


@integration
async def test_a_plain_server_is_healthy_when_it_answers(mariadb_info: ConnectionInfo) -> None:
    link = ServerLink(mariadb_info)
    try:
        assert await node_health(link) == NodeHealth(True, "plain", "answers")
    finally:
        await link.close()


async def test_wait_healthy_times_out_with_the_last_detail() -> None:
    port = free_port()
    progress: list[str] = []
    with pytest.raises(TimeoutError, match=r"cannot reach the server at 127\.0\.0\.1"):
        await wait_healthy(
            lambda: ServerLink(ConnectionInfo(port=port), connect_timeout=1.0),
            timeout=1.0, poll=0.2, on_progress=progress.append,
        )
    assert len(progress) == 1  # the same detail is reported once


class FakeLink:
    """Answers the statements node_health sends with canned rows."""

    def __init__(self, version: str, replica_rows: list[tuple[Any, ...]]) -> None:
        self.version = ServerVersion.parse(version)
        self.connected = True
        self.sent: list[str] = []
        self._replica_rows = replica_rows

    async def query(
        self, sql: str, args: Any = None, *, timeout: float | None = None
    ) -> list[tuple[Any, ...]]:
        self.sent.append(sql)
        if sql.startswith("SHOW GLOBAL VARIABLES LIKE 'wsrep_on'"):
            return [] if self.version.flavor == "mysql" else [("wsrep_on", "OFF")]
        return self._replica_rows


REPLICA_DATA = repo_paths.DATA / "replica_status"


def mariadb_replica_columns() -> list[str]:
    """SHOW ALL SLAVES STATUS column names as a real MariaDB 10.11 reports them (recorded;
    test_recorded_replica_columns_are_the_servers checks the record against the server)."""
    text = (REPLICA_DATA / "mariadb-10.11-show-all-slaves-status.columns").read_text()
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def mysql_replica_columns() -> list[str]:
    """SHOW REPLICA STATUS field names, in order, from a real MySQL 8 replica's output."""
    text = (REPLICA_DATA / "mysql-8-show-replica-status.txt").read_text()
    return [line.split(":", 1)[0].strip() for line in text.splitlines()
            if ":" in line and not line.startswith(("#", "*"))]


def replica_row(columns: list[str], **values: str) -> tuple[str, ...]:
    """A status row laid out as ``columns``, ``values`` by column name, "" elsewhere."""
    assert set(values) <= set(columns), set(values) - set(columns)
    return tuple(values.get(name, "") for name in columns)


async def test_replica_health_from_status_rows() -> None:
    cols = mariadb_replica_columns()
    mariadb = FakeLink("10.11.19-MariaDB", [
        replica_row(cols, Slave_IO_Running="Yes", Slave_SQL_Running="Yes",
                    Seconds_Behind_Master="0"),
        replica_row(cols, Connection_name="two", Slave_IO_Running="Connecting",
                    Slave_SQL_Running="Yes", Seconds_Behind_Master="0",
                    Last_IO_Error="cannot connect"),
    ])
    health = await node_health(mariadb)  # type: ignore[arg-type]
    assert mariadb.sent[-1] == "SHOW ALL SLAVES STATUS"
    assert health == NodeHealth(
        False, "replica", "replica IO Yes, SQL Yes, 0 s behind; 'two' IO Connecting, SQL Yes: "
        "cannot connect",
    )
    mysql_cols = mysql_replica_columns()
    assert len(mysql_cols) == 60 and mysql_cols[0] == "Replica_IO_State"
    running = replica_row(mysql_cols, Replica_IO_Running="Yes", Replica_SQL_Running="Yes",
                          Seconds_Behind_Source="0")
    mysql8 = FakeLink("8.0.36", [running])
    assert await node_health(mysql8) == NodeHealth(  # type: ignore[arg-type]
        True, "replica", "replica IO Yes, SQL Yes, 0 s behind"
    )
    assert mysql8.sent[-1] == "SHOW REPLICA STATUS"
    two = FakeLink("8.0.36", [running, replica_row(
        mysql_cols, Channel_Name="east", Replica_IO_Running="Yes", Replica_SQL_Running="No",
        Seconds_Behind_Source="7", Last_SQL_Error="Error 'Duplicate entry' on query")])
    assert await node_health(two) == NodeHealth(  # type: ignore[arg-type]
        False, "replica", "replica IO Yes, SQL Yes, 0 s behind; 'east' IO Yes, SQL No: "
        "Error 'Duplicate entry' on query",
    )
    mysql57 = FakeLink("5.7.44", [])
    assert await node_health(mysql57) == NodeHealth(True, "plain", "answers")  # type: ignore[arg-type]
    assert mysql57.sent[-1] == "SHOW SLAVE STATUS"


def replica_sandbox(root: Path, server_id: int, *, binlog: bool) -> Sandbox:
    """A sandbox of this test's own with a server id (and a binary log, for a master)."""
    (root / "conf.d").mkdir(parents=True)
    (root / "conf.d" / "replication.cnf").write_text(
        f"[mysqld]\nserver_id={server_id}\n" + ("log_bin=binlog\n" if binlog else ""))
    return Sandbox(root)


async def named_replica_rows(info: ConnectionInfo) -> list[dict[str, str]]:
    """SHOW ALL SLAVES STATUS read by the test: each row by the names in cursor.description."""
    async with asyncio.timeout(10):
        conn = await aiomysql.connect(host=info.host, port=info.port, user=info.user,
                                      password=info.password, autocommit=True)
        try:
            cur = await conn.cursor()
            await cur.execute("SHOW ALL SLAVES STATUS")
            names = [d[0] for d in cur.description]
            rows = await cur.fetchall()
        finally:
            conn.close()
    return [{n: "" if v is None else str(v) for n, v in zip(names, row, strict=True)}
            for row in rows]


def health_from_named(rows: list[dict[str, str]]) -> NodeHealth:
    """What node_health must say, built from the server's rows by column name."""
    parts, healthy = [], True
    for row in rows:
        io, sql = row["Slave_IO_Running"], row["Slave_SQL_Running"]
        name = f"'{row['Connection_name']}' " if row["Connection_name"] else ""
        text = f"{name}IO {io}, SQL {sql}"
        if io == "Yes" and sql == "Yes":
            text += f", {row['Seconds_Behind_Master'] or '?'} s behind"
        else:
            healthy = False
            error = "; ".join(e for e in (row["Last_IO_Error"], row["Last_SQL_Error"]) if e)
            text += f": {error}" if error else ""
        parts.append(text)
    return NodeHealth(healthy, "replica", "replica " + "; ".join(parts))


async def incident_matches_named_rows(
    info: ConnectionInfo, ready: Callable[[list[dict[str, str]]], bool]
) -> None:
    """The incident page's replication rows (read by position, like node_health) say what
    the server's own rows say by column name: each channel's IO/SQL running, lag, IO
    state and last error."""
    from knobtop.server.incident import IncidentReader

    deadline = time.monotonic() + 60
    while True:
        before = await named_replica_rows(info)
        if ready(before):
            link = ServerLink(info)
            try:
                await link.connect()
                snapshot = await IncidentReader(link, None).read()
            finally:
                await link.close()
            if await named_replica_rows(info) == before:
                break
        assert time.monotonic() < deadline, f"replica rows never settled: {before}"
        await asyncio.sleep(0.2)
    shown = {str(c["name"]): c for c in snapshot.repl}
    assert set(shown) == {row["Connection_name"] for row in before}
    for row in before:
        got = shown[row["Connection_name"]]
        lag = row["Seconds_Behind_Master"]
        error = row["Last_SQL_Error"] or row["Last_IO_Error"]
        assert (got["io"], got["sql"]) == (row["Slave_IO_Running"], row["Slave_SQL_Running"])
        assert got["lag"] == (float(lag) if lag else None)
        assert got["state"] == (row["Slave_IO_State"] or None)
        # The page shortens a message (whitespace collapsed, cut with "…" at 200).
        shown_error = str(got["error"] or "").removesuffix("…")
        assert " ".join(error.split()).startswith(shown_error)
        assert bool(got["error"]) == bool(error)


async def settled_health(
    info: ConnectionInfo, ready: Callable[[list[dict[str, str]]], bool]
) -> tuple[NodeHealth, NodeHealth]:
    """Poll until ``ready`` holds for the server's rows, then (node_health, expected) read
    with the rows unchanged around node_health's own read."""
    deadline = time.monotonic() + 60
    while True:
        before = await named_replica_rows(info)
        if ready(before):
            link = ServerLink(info)
            try:
                got = await node_health(link)
            finally:
                await link.close()
            if await named_replica_rows(info) == before:
                return got, health_from_named(before)
        assert time.monotonic() < deadline, f"replica rows never settled: {before}"
        await asyncio.sleep(0.2)


async def wait_for_table(info: ConnectionInfo, schema: str, table: str) -> None:
    link = ServerLink(info)
    await link.connect()
    try:
        deadline = time.monotonic() + 30
        while not await link.query(
            "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA=%s AND TABLE_NAME=%s",
            (schema, table),
        ):
            assert time.monotonic() < deadline, f"{schema}.{table} never replicated"
            await asyncio.sleep(0.1)
    finally:
        await link.close()


def channel(rows: list[dict[str, str]], name: str) -> dict[str, str]:
    return next((r for r in rows if r["Connection_name"] == name), {})


@integration
async def test_recorded_replica_columns_are_the_servers(mariadb_info: ConnectionInfo) -> None:
    """The recorded MariaDB column list the row tests use is what the server reports."""
    async with asyncio.timeout(10):
        conn = await aiomysql.connect(host=mariadb_info.host, port=mariadb_info.port,
                                      user=mariadb_info.user, password=mariadb_info.password)
        try:
            cur = await conn.cursor()
            await cur.execute("SHOW ALL SLAVES STATUS")  # no channels: 0 rows, full metadata
            names = [d[0] for d in cur.description]
        finally:
            conn.close()
    assert names == mariadb_replica_columns()


@integration
async def test_replica_health_matches_the_servers_named_columns(tmp_path: Path) -> None:
    """A real replica with three channel states: running (from a real master), IO failing
    (a master that is not there), SQL stopped on an error. node_health must say what the
    server's own rows say, read by column name from cursor metadata."""
    master = replica_sandbox(tmp_path / "master", 2, binlog=True)
    replica = replica_sandbox(tmp_path / "replica", 3, binlog=False)
    m_info = master.start()
    try:
        r_info = replica.start()
        try:
            await replica_scenario(m_info, r_info)
        finally:
            replica.stop()
    finally:
        master.stop()


async def replica_scenario(m_info: ConnectionInfo, r_info: ConnectionInfo) -> None:
    m, r = ServerLink(m_info), ServerLink(r_info)
    await m.connect()
    await r.connect()
    try:
        file, pos = (await m.query("SHOW MASTER STATUS"))[0][:2]
        await r.query(
            "CHANGE MASTER 'ok' TO MASTER_HOST='127.0.0.1', MASTER_PORT=%s, MASTER_USER=%s, "
            "MASTER_PASSWORD=%s, MASTER_USE_GTID=no, MASTER_LOG_FILE=%s, MASTER_LOG_POS=%s, "
            "MASTER_CONNECT_RETRY=1",
            (m_info.port, m_info.user, m_info.password, str(file), int(pos)))
        await r.query("START SLAVE 'ok'")
        got, expected = await settled_health(r_info, lambda rows: channel(rows, "ok").get(
            "Slave_IO_Running") == "Yes" and channel(rows, "ok")["Seconds_Behind_Master"] == "0")
        assert got == expected
        assert got == NodeHealth(True, "replica", "replica 'ok' IO Yes, SQL Yes, 0 s behind")
        await incident_matches_named_rows(r_info, lambda rows: channel(rows, "ok").get(
            "Slave_IO_Running") == "Yes")

        await r.query(
            "CHANGE MASTER 'gone' TO MASTER_HOST='127.0.0.1', MASTER_PORT=%s, "
            "MASTER_USER='nobody', MASTER_CONNECT_RETRY=1", (free_port(),))
        await r.query("START SLAVE 'gone'")
        got, expected = await settled_health(
            r_info, lambda rows: bool(channel(rows, "gone").get("Last_IO_Error")))
        assert got == expected and not got.healthy
        assert "'gone' IO Connecting, SQL Yes: " in got.detail
        assert "Can't connect" in got.detail or "connecting to master" in got.detail

        # The same key written on both sides: the replica's SQL thread stops on the
        # duplicate (DDL would not do: MariaDB replays it idempotently by default).
        await m.query("CREATE DATABASE knobtop_clash")
        await m.query("CREATE TABLE knobtop_clash.t (id INT PRIMARY KEY)")
        await wait_for_table(r_info, "knobtop_clash", "t")
        await r.query("INSERT INTO knobtop_clash.t VALUES (1)")
        await m.query("INSERT INTO knobtop_clash.t VALUES (1)")
        got, expected = await settled_health(
            r_info, lambda rows: channel(rows, "ok").get("Slave_SQL_Running") == "No"
            and bool(channel(rows, "ok")["Last_SQL_Error"])
            and bool(channel(rows, "gone").get("Last_IO_Error")))
        assert got == expected and not got.healthy
        assert "'ok' IO Yes, SQL No: " in got.detail and "knobtop_clash" in got.detail
        # The incident page's replication part reads the same three channel states.
        await incident_matches_named_rows(
            r_info, lambda rows: channel(rows, "ok").get("Slave_SQL_Running") == "No"
            and bool(channel(rows, "gone").get("Last_IO_Error")))
        await r.query("STOP ALL SLAVES")
    finally:
        await m.close()
        await r.close()


@integration
async def test_rolling_restart_of_a_static_knob_through_the_session(
    galera_cluster: GaleraCluster, tmp_path: Path
) -> None:
    """A static change goes node by node, each Synced before the next; revert brings all back."""
    import functools

    from conftest import EventCollector
    from knobtop.connect import node_healthy
    from knobtop.hosts.local import LocalHost
    from knobtop.journal import Restart
    from knobtop.server.static import ServerNode
    from knobtop.session.core import Session, SessionConfig

    cluster = galera_cluster
    nodes = tuple(
        ServerNode(name=n.name, host=LocalHost(),
                   link=functools.partial(ServerLink, cluster.connection(n)),
                   restart_command=n.restart_command, dropin_path=n.dropin_dir / "knobtop.cnf",
                   healthy=node_healthy)
        for n in cluster.nodes
    )
    config = SessionConfig(profile="galera", connection=cluster.connection(0), interval=0.5,
                           journal_path=tmp_path / "g.knobtop.jsonl", nodes=nodes)
    session = Session(config, LocalHost(), None)
    collector = EventCollector()
    session.listeners.append(collector)
    await session.open()
    try:
        change = await session.set_knob("innodb_doublewrite", "OFF", restart_ok=True)
        after_change = [await doublewrite(cluster.connection(n)) for n in cluster.nodes]
        reverted = await session.revert_to_baseline()
    finally:
        await session.close()
    assert change.result == "ok", change.message
    assert after_change == ["OFF", "OFF", "OFF"]
    assert [c.result for c in reverted] == ["ok"]
    assert [await doublewrite(cluster.connection(n)) for n in cluster.nodes] == ["ON"] * 3
    steps = [(e.node, e.step) for e in collector.events if isinstance(e, Restart)]
    names = [n.name for n in cluster.nodes]
    one_pass = [(n, s) for n in names for s in ("write_dropin", "restart", "wait", "verify")]
    assert steps == one_pass * 2  # the change, then the revert: node by node, in order
    for node in cluster.nodes:  # nobody left out of sync
        link = ServerLink(cluster.connection(node))
        health = await node_health(link)
        await link.close()
        assert health.healthy and "Synced" in health.detail


async def doublewrite(info: ConnectionInfo) -> str:
    link = ServerLink(info)
    await link.connect()
    try:
        rows = await link.query("SHOW GLOBAL VARIABLES LIKE 'innodb_doublewrite'")
        return str(rows[0][1])
    finally:
        await link.close()
