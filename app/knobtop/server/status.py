"""The per-sample status query: one statement for status variables and INNODB_METRICS."""

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


def status_query(version: ServerVersion, counters: Sequence[str]) -> str:
    """One round trip that fetches only the named counters.

    ``counters`` mixes status variable names and ``im:NAME`` INNODB_METRICS
    names; only enabled metrics are read (MariaDB calls the column ENABLED,
    MySQL STATUS).  Asking for a short list keeps each sample to a few
    hundred bytes on the wire instead of SHOW GLOBAL STATUS's ~20 KB.
    """
    status = [c for c in counters if not c.startswith(METRIC_PREFIX)]
    metrics = [c[len(METRIC_PREFIX) :] for c in counters if c.startswith(METRIC_PREFIX)]
    if version.flavor == "mysql" and version.at_least(5, 7):
        status_table, enabled = "performance_schema.global_status", "STATUS = 'enabled'"
    else:
        status_table = "information_schema.GLOBAL_STATUS"
        enabled = "ENABLED = 1" if version.flavor == "mariadb" else "STATUS = 'enabled'"
    parts = [
        f"SELECT VARIABLE_NAME, VARIABLE_VALUE FROM {status_table} "
        f"WHERE VARIABLE_NAME IN ({_quoted(status)})"
    ]
    if metrics:
        parts.append(
            f"SELECT CONCAT('{METRIC_PREFIX}', NAME), CAST(COUNT AS CHAR) "
            f"FROM information_schema.INNODB_METRICS WHERE {enabled} "
            f"AND NAME IN ({_quoted(metrics)})"
        )
    return " UNION ALL ".join(parts)


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
        self._sql = status_query(link.version, self.counters)
        self._index = {name.lower(): i for i, name in enumerate(self.counters)}
        self._link = link

    async def poll(self) -> list[Number | None]:
        rows = await self._link.query(self._sql)
        values: list[Number | None] = [None] * len(self.counters)
        for name, raw in rows:
            i = self._index.get(str(name).lower())
            if i is not None:
                values[i] = to_number(raw)
        return values
