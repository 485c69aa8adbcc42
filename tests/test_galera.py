"""Node health on a real 3-node Galera cluster, a plain server, and replica status rows."""

from __future__ import annotations

import asyncio
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from harness.galera import GaleraCluster, GaleraNode
from knobtop.lab import free_port
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

    async def query(self, sql: str, args: Any = None) -> list[tuple[Any, ...]]:
        self.sent.append(sql)
        if sql.startswith("SHOW GLOBAL VARIABLES LIKE 'wsrep_on'"):
            return [] if self.version.flavor == "mysql" else [("wsrep_on", "OFF")]
        return self._replica_rows


def replica_row(io: str, sql: str, *, shift: int, error: str = "", name: str = "") -> tuple:
    row: list[Any] = [""] * (56 + shift)
    if shift:
        row[0] = name  # MariaDB Connection_name
    row[10 + shift], row[11 + shift], row[32 + shift] = io, sql, "0"
    row[35 + shift] = error  # Last_IO_Error
    return tuple(row)


async def test_replica_health_from_status_rows() -> None:
    mariadb = FakeLink("10.11.19-MariaDB", [
        replica_row("Yes", "Yes", shift=2),
        replica_row("Connecting", "Yes", shift=2, name="two", error="cannot connect"),
    ])
    health = await node_health(mariadb)  # type: ignore[arg-type]
    assert mariadb.sent[-1] == "SHOW ALL SLAVES STATUS"
    assert health == NodeHealth(
        False, "replica", "replica IO Yes, SQL Yes, 0 s behind; 'two' IO Connecting, SQL Yes: "
        "cannot connect",
    )
    mysql8 = FakeLink("8.0.36", [replica_row("Yes", "Yes", shift=0)])
    assert await node_health(mysql8) == NodeHealth(  # type: ignore[arg-type]
        True, "replica", "replica IO Yes, SQL Yes, 0 s behind"
    )
    assert mysql8.sent[-1] == "SHOW REPLICA STATUS"
    mysql57 = FakeLink("5.7.44", [])
    assert await node_health(mysql57) == NodeHealth(True, "plain", "answers")  # type: ignore[arg-type]
    assert mysql57.sent[-1] == "SHOW SLAVE STATUS"


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
    from knobtop.session import Session, SessionConfig

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
