"""The incident snapshot: processlist, lock waits, oldest transaction, replication, Galera and
the error log's tail, each read with a deadline and cut to a compact size for the journal.

Every text read here (users, hosts, statements, states, log lines, a server's error) is
made printable as it is read: any database user can put an escape sequence in a statement
or, as a user name, in the error log, and this page shows both to the person watching."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from knobtop.hosts.base import Host, HostError
from knobtop.printable import printable
from knobtop.server.link import ServerError, ServerLink

# Every statement of a snapshot waits at most this long: the page must not hang on a
# server that is itself the incident.
INCIDENT_TIMEOUT = 3.0
PROCESS_ROWS = 25  # longest-running first
LOCK_ROWS = 10
STATEMENT_CHARS = 120  # statement text is cut to this on screen and in the journal
FETCH_CHARS = 2000  # read this much of a statement, so redaction sees whole literals
LOG_LINES = 20
LOG_BYTES = 64 * 1024  # the error log's tail is read from its last 64 KiB only
LOG_LINE_CHARS = 300
LOG_TIMEOUT = 5.0
# Galera status variables the page shows (receive queue, flow control, cluster status).
GALERA_VARS = (
    "wsrep_cluster_status", "wsrep_cluster_size", "wsrep_local_state_comment", "wsrep_ready",
    "wsrep_connected", "wsrep_local_recv_queue", "wsrep_local_recv_queue_avg",
    "wsrep_local_send_queue", "wsrep_flow_control_paused", "wsrep_flow_control_sent",
    "wsrep_flow_control_recv",
)

# Statements that may carry a secret in a literal: SET PASSWORD, CREATE/ALTER USER ...
# IDENTIFIED BY, GRANT ... IDENTIFIED BY, CHANGE MASTER TO MASTER_PASSWORD, PASSWORD('x'),
# AES_ENCRYPT(x, 'key'), DES_DECRYPT, ENCODE(x, 'key'), DECODE and the like.  The error
# log's "Access denied for user 'u'@'h' (using password: YES)" names no secret: its
# "password:" alone does not count (the user and host stay readable).
_SECRET_STATEMENT = re.compile(
    r"PASSWORD(?!:\s*(?:YES|NO)\))|IDENTIFIED|ENCRYPT|DECRYPT|ENCODE|DECODE|\bKEY\s*=",
    re.IGNORECASE)
# A quoted literal, or one cut short by the fetch limit (it runs to the end of the text).
_LITERAL = re.compile(r"""'(?:[^'\\]|\\.|'')*(?:'|\Z)|"(?:[^"\\]|\\.|"")*(?:"|\Z)""",
                      re.DOTALL)
_SPACE = re.compile(r"\s+")
REDACTED = "'<redacted>'"
# An error-log line about a client that went away without saying goodbye (MariaDB; MySQL
# writes the same words, with a full stop at the end).
_ABORTED = re.compile(r"Aborted connection \d+ to db: '([^']*)' user: '([^']*)' "
                      r"host: '[^']*' \(([^()]*)\)\.?\s*$")
# The load's databases: sysbench's and the built-in driver's "sbtest", a client's or an
# arm's own "sbtest_NAME" (knobtop.connect, LoadSpec.schema).
_LOAD_DATABASE = re.compile(r"sbtest(_\w+)?")
OWN_LOAD_STOP = "(knobtop's load stop)"
OWN_CONNECTION = "(knobtop's own connection)"
OWN_LABELS = (OWN_LOAD_STOP, OWN_CONNECTION)


def redact(sql: str) -> str:
    """``sql`` with every quoted literal replaced when the statement may hold a secret
    (passwords, keys); other statements are kept as they are."""
    if not _SECRET_STATEMENT.search(sql):
        return sql
    return _LITERAL.sub(REDACTED, sql)


def shorten(sql: str | None, limit: int = STATEMENT_CHARS) -> str | None:
    """A statement on one line, redacted, cut to ``limit`` characters."""
    if sql is None:
        return None
    text = _SPACE.sub(" ", redact(sql)).strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class IncidentSnapshot:
    """What the incident page shows; the journal's ``incident`` event holds the same."""

    threads: int = 0  # connections in the processlist (rows beyond PROCESS_ROWS are cut)
    # [id, user, db, command, seconds, state, statement]
    procs: list[list[str | float | None]] = field(default_factory=list)
    # [waiting thread, seconds waited, waiting statement, blocking thread, blocking statement]
    locks: list[list[str | float | None]] = field(default_factory=list)
    # thread, seconds, state, rows_locked, rows_modified, statement
    oldest: dict[str, str | float | None] = field(default_factory=dict)
    # one per channel: name, io, sql, lag, state, error
    repl: list[dict[str, str | float | None]] = field(default_factory=list)
    galera: dict[str, str] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    log_path: str = ""
    statements: bool = True
    problems: list[str] = field(default_factory=list)  # parts that could not be read


def _num(value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, int):
        return value
    try:
        return round(float(value), 3)
    except (TypeError, ValueError):
        return None


def _raw(value: Any) -> str:
    """A value from the server as it is (to use, never to show); None as ""."""
    if value is None:
        return ""
    return value.decode(errors="replace") if isinstance(value, bytes) else str(value)


def _str(value: Any) -> str | None:
    """A value from the server as printable text (None stays None)."""
    return None if value is None else printable(_raw(value))


class IncidentReader:
    """Reads one snapshot per ``read()`` over its own link (never the sampler's)."""

    def __init__(self, link: ServerLink, host: Host | None, *, statements: bool = True,
                 timeout: float = INCIDENT_TIMEOUT, no_host: str = "",
                 log_path: str | None = None) -> None:
        self.link = link
        self.host = host  # where the server's error log can be read; None: nowhere
        self.no_host = no_host  # why there is no such host (shown instead of the log)
        self.statements = statements
        self.timeout = timeout
        self._log_path = log_path  # the error log on ``host``; None: the server says
        self._wsrep: bool | None = None  # Galera: known after the first snapshot

    @property
    def _mariadb(self) -> bool:
        return self.link.version is not None and self.link.version.flavor == "mariadb"

    def _info(self, column: str) -> str:
        """The statement column, or NULL when statement texts are off (never fetched)."""
        if not self.statements:
            return "NULL"
        return f"LEFT({column}, {FETCH_CHARS})"

    def _text(self, value: Any) -> str | None:
        # Redacted before it is made printable: an escape must not hide a literal's quote.
        if not self.statements or value is None:
            return None
        return shorten(printable(redact(_raw(value))))

    async def _query(self, sql: str) -> list[tuple[Any, ...]]:
        if not self.link.connected:
            await self.link.connect()
        return await self.link.query(sql, timeout=self.timeout)

    def empty(self, problem: str) -> IncidentSnapshot:
        """A snapshot that only says why nothing could be read."""
        return IncidentSnapshot(statements=self.statements, problems=[problem])

    async def read(self) -> IncidentSnapshot:
        """One snapshot; a part that cannot be read is named in ``problems``. Raises
        ServerError only when the server cannot be reached at all."""
        if not self.link.connected:
            await self.link.connect()
        problems: list[str] = []
        parts: dict[str, Any] = {}
        for name, reader in (("processlist", self._processlist), ("lock waits", self._locks),
                             ("oldest transaction", self._oldest),
                             ("replication", self._replication), ("galera", self._galera)):
            try:
                parts[name] = await reader()
            except ServerError as exc:
                problems.append(f"{name}: {printable(str(exc), newlines=False)}")
        threads, procs = parts.get("processlist", (0, []))
        log, log_path = await self._log(problems)
        return IncidentSnapshot(
            threads=threads, procs=procs, locks=parts.get("lock waits", []),
            oldest=parts.get("oldest transaction", {}), repl=parts.get("replication", []),
            galera=parts.get("galera", {}), log=log, log_path=log_path,
            statements=self.statements, problems=problems)

    async def _processlist(self) -> tuple[int, list[list[str | float | None]]]:
        seconds = "TIME_MS / 1000" if self._mariadb else "TIME"
        rows = await self._query(
            f"SELECT ID, USER, DB, COMMAND, {seconds}, STATE, {self._info('INFO')} "
            "FROM information_schema.PROCESSLIST WHERE ID <> CONNECTION_ID() "
            f"ORDER BY COMMAND = 'Sleep', {seconds} DESC")
        procs: list[list[str | float | None]] = [
            [_num(r[0]), _str(r[1]), _str(r[2]), _str(r[3]), _num(r[4]), _str(r[5]),
             self._text(r[6])] for r in rows[:PROCESS_ROWS]]
        return len(rows), procs

    async def _locks(self) -> list[list[str | float | None]]:
        if self._mariadb:
            waits = ("information_schema.INNODB_LOCK_WAITS w "
                     "JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id "
                     "JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id")
        else:
            waits = ("performance_schema.data_lock_waits w "
                     "JOIN information_schema.INNODB_TRX r "
                     "ON r.trx_id = w.REQUESTING_ENGINE_TRANSACTION_ID "
                     "JOIN information_schema.INNODB_TRX b "
                     "ON b.trx_id = w.BLOCKING_ENGINE_TRANSACTION_ID")
        rows = await self._query(
            "SELECT r.trx_mysql_thread_id, TIMESTAMPDIFF(SECOND, r.trx_wait_started, NOW()), "
            f"{self._info('r.trx_query')}, b.trx_mysql_thread_id, {self._info('b.trx_query')} "
            f"FROM {waits} ORDER BY r.trx_wait_started LIMIT {LOCK_ROWS}")
        return [[_num(r[0]), _num(r[1]), self._text(r[2]), _num(r[3]), self._text(r[4])]
                for r in rows]

    async def _oldest(self) -> dict[str, str | float | None]:
        rows = await self._query(
            "SELECT trx_mysql_thread_id, TIMESTAMPDIFF(SECOND, trx_started, NOW()), trx_state, "
            f"trx_rows_locked, trx_rows_modified, {self._info('trx_query')} "
            "FROM information_schema.INNODB_TRX ORDER BY trx_started, trx_id LIMIT 1")
        if not rows:
            return {}
        r = rows[0]
        return {"thread": _num(r[0]), "seconds": _num(r[1]), "state": _str(r[2]),
                "rows_locked": _num(r[3]), "rows_modified": _num(r[4]),
                "statement": self._text(r[5])}

    async def _replication(self) -> list[dict[str, str | float | None]]:
        version = self.link.version
        if self._mariadb:
            sql, shift = "SHOW ALL SLAVES STATUS", 2  # Connection_name, Slave_SQL_State first
        elif version is not None and version.at_least(8, 0, 22):
            sql, shift = "SHOW REPLICA STATUS", 0
        else:
            sql, shift = "SHOW SLAVE STATUS", 0
        rows = await self._query(sql)
        out: list[dict[str, str | float | None]] = []
        for r in rows:
            # Columns by position (the same in MySQL and MariaDB after the shift):
            # 0 IO state, 10/11 IO/SQL running, 32 seconds behind, 35/37 last IO/SQL error.
            def col(i: int, row: tuple[Any, ...] = r) -> Any:
                return row[i + shift] if i + shift < len(row) else None
            error = _str(col(37)) or _str(col(35)) or ""  # shortened: redacted there
            out.append({"name": _str(r[0]) if shift else "", "io": _str(col(10)),
                        "sql": _str(col(11)), "lag": _num(col(32)),
                        "state": _str(col(0)), "error": shorten(error, 200)})
        return out

    async def _galera(self) -> dict[str, str]:
        # MariaDB has wsrep_% status variables even without Galera: only wsrep_on says.
        if self._wsrep is None:
            on = await self._query("SHOW GLOBAL VARIABLES LIKE 'wsrep\\_on'")
            self._wsrep = bool(on) and str(on[0][1]).upper() == "ON"
        if not self._wsrep:
            return {}
        rows = await self._query("SHOW GLOBAL STATUS LIKE 'wsrep%'")
        found = {str(r[0]).lower(): _str(r[1]) or "" for r in rows}
        if "wsrep_cluster_status" not in found:
            return {}
        return {name: found[name] for name in GALERA_VARS if name in found}

    async def _log(self, problems: list[str]) -> tuple[list[str], str]:
        """The last lines of the server's error log, read through its host."""
        if self.host is None:
            if self.no_host:
                problems.append(f"error log: {self.no_host}")
            return [], ""
        try:
            if self._log_path is None:
                rows = await self._query("SELECT @@log_error, @@datadir")
                # As the server names them (tail must find the file); shown printable.
                path, datadir = (_raw(rows[0][0]), _raw(rows[0][1])) if rows else ("", "")
                if path and not path.startswith("/"):
                    path = str(PurePosixPath(datadir) / path)
                self._log_path = path
        except ServerError as exc:
            problems.append(f"error log: {printable(str(exc), newlines=False)}")
            return [], ""
        if not self._log_path:
            problems.append("error log: the server logs to stderr (log_error is empty), "
                            "so there is no file to show")
            return [], ""
        path = printable(self._log_path, newlines=False)
        try:
            result = await self.host.run(["tail", "-c", str(LOG_BYTES), "--", self._log_path],
                                         limit=LOG_TIMEOUT)
        except HostError as exc:
            problems.append(f"error log {path}: {printable(str(exc), newlines=False)}")
            return [], path
        if result.returncode != 0:
            why = result.stderr.strip().splitlines()[-1:] or ["tail failed"]
            problems.append(f"error log {path} on {self.host.name}: "
                            f"{printable(why[0], newlines=False)}")
            return [], path
        # Only \n ends a line: str.splitlines() would also cut at \r, \x1c-\x1e and \x85,
        # which a user name in an "Access denied" line may hold.
        lines = result.stdout.split("\n")
        if len(result.stdout.encode()) >= LOG_BYTES and lines:
            lines = lines[1:]  # the first line is probably cut by the byte limit
        user = self.link.info.user
        tail = [_log_line(ln, user) for ln in lines if ln.strip()][-LOG_LINES:]
        return tail, path


def own_label(line: str, user: str) -> str:
    """Why an error-log line is knobtop's own doing, as a label for its end; "" when it is
    not. An aborted connection of knobtop's own user (the one its sampler, its knob links
    and its load log in as) is its own: on a load database, cut off mid-read or mid-write,
    it is its load stopping (sysbench's clients end without saying goodbye)."""
    m = _ABORTED.search(line)
    if m is None or m.group(2) != user:
        return ""
    # Cut off mid-read or mid-write (the client was killed), not timed out.
    stopped = re.search(r"error (reading|writing) communication packets", m.group(3))
    return OWN_LOAD_STOP if stopped and _LOAD_DATABASE.fullmatch(m.group(1)) \
        else OWN_CONNECTION


def own_part(line: str) -> tuple[str, str]:
    """A tail line and its knobtop's-own label apart: (the line as the server wrote it, the
    label, or "" when it has none)."""
    for label in OWN_LABELS:
        if line.endswith(f" {label}"):
            return line[: -len(label) - 1], label
    return line, ""


def _log_line(line: str, user: str = "") -> str:
    """One error-log line for the page and the journal: its secrets' literals redacted (a
    statement the server quotes), made printable, cut to LOG_LINE_CHARS; a line of
    knobtop's own doing labelled so at its end (the line itself unchanged)."""
    text = printable(redact(line), newlines=False)
    text = text if len(text) <= LOG_LINE_CHARS else text[: LOG_LINE_CHARS - 1] + "…"
    label = own_label(line, user) if user else ""
    return f"{text} {label}" if label else text


log_line = _log_line  # server/relink.py journals a down server's tail the same way
