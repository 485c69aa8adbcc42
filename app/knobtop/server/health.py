"""Node health after a restart: Galera Synced, replica threads running, or a plain server up."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from knobtop.server.link import ServerError, ServerLink

HealthKind = Literal["galera", "replica", "plain"]

# Galera refuses most statements until the node has joined: "WSREP has not yet prepared
# node for application use" (ER_UNKNOWN_COM_ERROR).
_WSREP_NOT_READY = 1047
_THREAD_STATES = {"Yes", "No", "Connecting", "Preparing"}


@dataclass(frozen=True, slots=True)
class NodeHealth:
    healthy: bool
    kind: HealthKind
    detail: str  # e.g. "Synced, cluster size 3" or "Joining: receiving State Transfer"


@dataclass(frozen=True, slots=True)
class _ReplicaColumns:
    """Positions in the replica status row (the link returns rows without column names)."""

    statement: str
    io: int
    sql: int
    behind: int
    io_error: int
    sql_error: int
    channel: int  # MariaDB's Connection_name; MySQL 5.7+'s Channel_Name


# SHOW SLAVE STATUS / SHOW REPLICA STATUS share the layout (MySQL 5.6+, MariaDB):
# ..., Slave_IO_Running (10), Slave_SQL_Running (11), ..., Seconds_Behind_Master (32), ...,
# Last_IO_Error (35), ..., Last_SQL_Error (37).  MariaDB's SHOW ALL SLAVES STATUS puts
# Connection_name and Slave_SQL_State first, shifting everything by two.  MySQL 5.7+ has
# Channel_Name at 55.
_MARIADB = _ReplicaColumns("SHOW ALL SLAVES STATUS", 12, 13, 34, 37, 39, 0)
_MYSQL_REPLICA = _ReplicaColumns("SHOW REPLICA STATUS", 10, 11, 32, 35, 37, 55)
_MYSQL_SLAVE = _ReplicaColumns("SHOW SLAVE STATUS", 10, 11, 32, 35, 37, 55)


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


async def _pairs(link: ServerLink, sql: str, timeout: float | None) -> dict[str, str]:
    rows = await link.query(sql, timeout=timeout)
    return {_text(row[0]).lower(): _text(row[1]) for row in rows}


async def _galera_health(link: ServerLink, timeout: float | None) -> NodeHealth:
    status = await _pairs(
        link,
        "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_local_state_comment', "
        "'wsrep_ready', 'wsrep_cluster_status', 'wsrep_cluster_size')",
        timeout,
    )
    state = status.get("wsrep_local_state_comment") or "unknown state"
    ready = status.get("wsrep_ready", "")
    component = status.get("wsrep_cluster_status", "")
    healthy = state == "Synced" and ready == "ON" and component == "Primary"
    parts = [state, f"cluster size {status.get('wsrep_cluster_size') or '?'}"]
    if component != "Primary":
        parts.append(f"component {component or 'unknown'}")
    if ready != "ON":
        parts.append("not ready")
    return NodeHealth(healthy, "galera", ", ".join(parts))


def _replica_columns(link: ServerLink) -> _ReplicaColumns:
    version = link.version
    if version is None or version.flavor == "mariadb":
        return _MARIADB
    return _MYSQL_REPLICA if version.at_least(8, 0, 22) else _MYSQL_SLAVE


def _replica_health(rows: Sequence[tuple[Any, ...]], cols: _ReplicaColumns) -> NodeHealth:
    healthy = True
    parts: list[str] = []
    for row in rows:
        if len(row) <= max(cols.sql, cols.io):
            return NodeHealth(False, "replica", f"unexpected {cols.statement} row: {row!r}")
        io, sql = _text(row[cols.io]), _text(row[cols.sql])
        if io not in _THREAD_STATES or sql not in _THREAD_STATES:
            return NodeHealth(
                False, "replica", f"unexpected {cols.statement} layout (IO {io!r}, SQL {sql!r})"
            )
        channel = _text(row[cols.channel]) if len(row) > cols.channel else ""
        running = io == "Yes" and sql == "Yes"
        healthy = healthy and running
        name = f"'{channel}' " if channel else ""
        text = f"{name}IO {io}, SQL {sql}"
        if running:
            behind = _text(row[cols.behind]) if len(row) > cols.behind else ""
            text += f", {behind or '?'} s behind"
        else:
            errors = [_text(row[i]) for i in (cols.io_error, cols.sql_error) if len(row) > i]
            error = "; ".join(e for e in errors if e)
            if error:
                text += f": {error}"
        parts.append(text)
    return NodeHealth(healthy, "replica", "replica " + "; ".join(parts))


async def node_health(link: ServerLink, *, timeout: float | None = None) -> NodeHealth:
    """Classify the server behind ``link`` and say whether it is fit to take load again.

    Connects the link if needed; a server that cannot be reached raises ``ServerError``,
    and one that does not answer a query within ``timeout`` (the link's own query
    deadline by default) raises ``QueryTimeout``.
    """
    try:
        if not link.connected:
            await link.connect()
        wsrep = await _pairs(link, "SHOW GLOBAL VARIABLES LIKE 'wsrep_on'", timeout)
        if wsrep.get("wsrep_on", "").upper() == "ON":
            return await _galera_health(link, timeout)
    except ServerError as exc:
        if exc.code == _WSREP_NOT_READY:
            return NodeHealth(False, "galera", f"not ready yet: {exc}")
        raise
    cols = _replica_columns(link)
    try:
        rows = await link.query(cols.statement, timeout=timeout)
    except ServerError as exc:
        if exc.code in (2002, 2003, 2006, 2013):
            raise
        # No REPLICATION CLIENT / SLAVE MONITOR grant: it answers, which is all we can tell.
        return NodeHealth(True, "plain", f"answers (replica status unreadable: {exc})")
    if rows:
        return _replica_health(rows, cols)
    return NodeHealth(True, "plain", "answers")


async def wait_healthy(
    make_link: Callable[[], ServerLink],
    *,
    timeout: float,
    poll: float = 0.5,
    on_progress: Callable[[str], None] | None = None,
) -> NodeHealth:
    """Poll ``node_health`` until healthy, reconnecting with a fresh link from ``make_link``
    whenever the node drops or refuses (it may be restarting).

    ``on_progress`` gets each new detail as it changes.  Raises ``TimeoutError`` naming the
    last detail when the node is not healthy within ``timeout`` seconds.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    link: ServerLink | None = None
    last = "not checked yet"
    try:
        while True:
            remaining = deadline - loop.time()
            try:
                async with asyncio.timeout(max(remaining, 0.1)):
                    if link is None or not link.connected:
                        if link is not None:
                            await link.close()
                        link = make_link()
                        await link.connect()
                    health = await node_health(link)
                if health.healthy:
                    return health
                detail = f"{health.kind}: {health.detail}"
            except ServerError as exc:
                detail = str(exc)
                if link is not None:
                    await link.close()
                    link = None
            except TimeoutError:
                detail = f"no answer before the deadline (last: {last})"
                if link is not None:
                    await link.close()
                    link = None
            if detail != last and on_progress is not None:
                on_progress(detail)
            last = detail
            remaining = deadline - loop.time()
            if remaining <= 0:
                raise TimeoutError(f"not healthy within {timeout:g} s: {last}")
            await asyncio.sleep(min(poll, remaining))
    finally:
        if link is not None:
            await link.close()
