"""Per-sample status: status variables and INNODB_METRICS in as few round trips as possible."""

from __future__ import annotations

from collections.abc import Sequence

from knobtop.server.link import ServerLink, ServerVersion

METRIC_PREFIX = "im:"
Number = int | float


def _quoted(names: Sequence[str]) -> str:
    for name in names:
        if not name.replace("_", "").isalnum():
            raise ValueError(f"not a counter name: {name!r}")
    return ", ".join(f"'{n}'" for n in names)


def _metrics_query(enabled: str, metrics: Sequence[str]) -> str:
    return (
        f"SELECT CONCAT('{METRIC_PREFIX}', NAME), CAST(COUNT AS CHAR) "
        f"FROM information_schema.INNODB_METRICS WHERE {enabled} "
        f"AND NAME IN ({_quoted(metrics)})"
    )


def status_queries(version: ServerVersion, counters: Sequence[str]) -> tuple[str, ...]:
    """The statements that fetch only the named counters: one round trip where the server
    allows it.

    ``counters`` mixes status variable names and ``im:NAME`` INNODB_METRICS names; only
    enabled metrics are read (MariaDB calls the column ENABLED, MySQL STATUS).  Asking for
    a short list keeps each sample to a few hundred bytes on the wire instead of SHOW
    GLOBAL STATUS's ~20 KB.

    MySQL 5.7+ gets SHOW GLOBAL STATUS ... WHERE plus a separate metrics SELECT: its
    information_schema.GLOBAL_STATUS is gone (or disabled by show_compatibility_56), and
    performance_schema.global_status leaves out every Com_xxx counter (MySQL and MariaDB
    manuals: "does not collect statistics for Com_xxx"; seen on MariaDB 10.11 with
    performance_schema=ON), so it would sample no Com_select or Com_commit at all.
    """
    status = [c for c in counters if not c.startswith(METRIC_PREFIX)]
    metrics = [c[len(METRIC_PREFIX) :] for c in counters if c.startswith(METRIC_PREFIX)]
    if version.flavor == "mysql" and version.at_least(5, 7):
        queries = [f"SHOW GLOBAL STATUS WHERE Variable_name IN ({_quoted(status)})"]
        if metrics:
            queries.append(_metrics_query("STATUS = 'enabled'", metrics))
        return tuple(queries)
    enabled = "ENABLED = 1" if version.flavor == "mariadb" else "STATUS = 'enabled'"
    parts = [
        "SELECT VARIABLE_NAME, VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS "
        f"WHERE VARIABLE_NAME IN ({_quoted(status)})"
    ]
    if metrics:
        parts.append(_metrics_query(enabled, metrics))
    return (" UNION ALL ".join(parts),)


def status_query(version: ServerVersion, counters: Sequence[str]) -> str:
    """The one statement for servers that read status and metrics in one round trip
    (MariaDB, MySQL before 5.7); MySQL 5.7+ needs ``status_queries``."""
    queries = status_queries(version, counters)
    if len(queries) != 1:
        raise ValueError(f"{version.flavor} {version.short} needs {len(queries)} statements; "
                         "use status_queries")
    return queries[0]


def to_number(raw: object) -> Number | None:
    if raw is None:
        return None
    if isinstance(raw, int | float):
        return raw
    text = raw.decode() if isinstance(raw, bytes) else str(raw)
    try:
        return int(text)
    except ValueError:
        try:
            return float(text)
        except ValueError:
            return None


class StatusPoller:
    """Reads the counters in the journal header's order (``None`` where absent)."""

    def __init__(self, link: ServerLink, counters: Sequence[str]) -> None:
        if link.version is None:
            raise ValueError("connect the link before building a poller")
        self.counters = tuple(counters)
        self._queries = status_queries(link.version, self.counters)
        self._index = {name.lower(): i for i, name in enumerate(self.counters)}
        self._link = link

    async def poll(self) -> list[Number | None]:
        rows = [row for sql in self._queries for row in await self._link.query(sql)]
        values: list[Number | None] = [None] * len(self.counters)
        for name, raw in rows:
            i = self._index.get(str(name).lower())
            if i is not None:
                values[i] = to_number(raw)
        return values
