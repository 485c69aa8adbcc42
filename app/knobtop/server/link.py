"""ServerLink: one aiomysql connection to the target, its flavor and version."""

from __future__ import annotations

import asyncio
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from knobtop.errors import KnobtopError
from knobtop.lazyface import absent_while_importing


def _rsa_on_first_use(auth: Any) -> None:
    """Give PyMySQL's ``_auth`` module its RSA helper back, imported when first called.

    aiomysql and PyMySQL call ``_auth.sha2_rsa_encrypt`` through the module, so the stand-in
    set here runs in its place: it imports ``cryptography``, hands ``_auth`` the names its
    own import would have bound, puts the original back and calls it.  Without the package
    the original raises PyMySQL's own message naming it."""
    if auth._have_cryptography:
        return
    original = auth.sha2_rsa_encrypt

    def sha2_rsa_encrypt(password: bytes, salt: bytes, public_key: bytes) -> bytes:
        try:
            from cryptography.hazmat.backends import default_backend
            from cryptography.hazmat.primitives import hashes, serialization
            from cryptography.hazmat.primitives.asymmetric import padding
        except ImportError:
            return original(password, salt, public_key)  # type: ignore[no-any-return]
        auth.default_backend = default_backend
        auth.hashes = hashes
        auth.serialization = serialization
        auth.padding = padding
        auth._have_cryptography = True
        auth.sha2_rsa_encrypt = original
        return original(password, salt, public_key)  # type: ignore[no-any-return]

    auth.sha2_rsa_encrypt = sha2_rsa_encrypt


@functools.cache
def _drivers() -> tuple[Any, Any, type[Any]]:
    """aiomysql, pymysql and the cursor class, imported on first use: a process that only
    knows servers' facts (the live screen, whose session runs in another process) never
    loads the MySQL driver (about 20 MB).

    PyMySQL imports ``cryptography`` at once, only for the RSA step of ``sha256_password``
    and ``caching_sha2_password`` (a password sent over a connection without TLS, after the
    server asks for the full authentication).  It costs the session's process about 10 MB
    of RSS (6 MB of the live screen's PSS), and a MariaDB target never takes that step: the
    driver is imported with the package absent, and the RSA step imports it when it runs
    (:func:`_rsa_on_first_use`)."""
    with absent_while_importing("cryptography"):
        import aiomysql
        import pymysql
        from pymysql import _auth
    _rsa_on_first_use(_auth)

    class QuietCursor(aiomysql.Cursor):  # type: ignore[misc]
        """A cursor that leaves warnings on the server.

        aiomysql would fetch them after every statement and print them on stderr
        (over the screen); knobtop asks SHOW WARNINGS itself where it matters.
        """

        async def _show_warnings(self, conn: Any) -> None:
            return None

    return aiomysql, pymysql, QuietCursor


def _mysql_error() -> type[Exception]:
    return _drivers()[1].err.MySQLError  # type: ignore[no-any-return]


class ServerError(KnobtopError, RuntimeError):
    """The server refused or could not be reached; ``code`` is the MySQL error number."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


class QueryTimeout(ServerError):
    """A statement got no answer within its deadline; the connection was closed, since a
    half-read result must not be read as the next statement's."""

    def __init__(self, message: str, *, kind: str, limit: float) -> None:
        super().__init__(message, 2013)
        self.kind = kind
        self.limit = limit


# A round trip waits at most this long unless the caller says otherwise.
QUERY_TIMEOUT = 10.0
# Statements whose time grows with the data (DDL, bulk DML) or that block on purpose
# (MariaDB's purge-lag wait) get a long deadline by default: still a deadline.
LONG_QUERY_TIMEOUT = 3600.0
# SET may wait for the server's own work (a redo log resize under load): a minute.
SET_QUERY_TIMEOUT = 60.0
_LONG_KINDS = frozenset({
    "ALTER", "ANALYZE", "CALL", "CREATE", "DELETE", "DROP", "INSERT", "LOAD", "OPTIMIZE",
    "REPLACE", "TRUNCATE", "UPDATE",
})
_BLOCKING_SET = re.compile(r"\s*SET\s+GLOBAL\s+innodb_max_purge_lag_wait\b", re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z_]+\Z")


def statement_kind(sql: str) -> str:
    """The leading keywords of ``sql`` ("SHOW GLOBAL VARIABLES", "SELECT VERSION"): enough
    to name the statement in an error, never its values."""
    words: list[str] = []
    for word in sql.split()[:3]:
        if not _WORD.match(word):
            break
        words.append(word.upper())
    return " ".join(words) or "statement"


def default_timeout(sql: str, short: float) -> float:
    """The deadline of ``sql`` when its caller gives none."""
    first = sql.split(None, 1)[0].upper() if sql.strip() else ""
    if first in _LONG_KINDS or _BLOCKING_SET.match(sql):
        return max(short, LONG_QUERY_TIMEOUT)
    if first == "SET":
        return max(short, SET_QUERY_TIMEOUT)
    return short


@dataclass(frozen=True, slots=True)
class ConnectionInfo:
    """How to reach the server.  ``password`` stays in memory: it is never journaled."""

    host: str = "127.0.0.1"
    port: int = 3306
    user: str = "root"
    password: str = field(default="", repr=False)
    socket: str | None = None
    database: str | None = None

    @property
    def where(self) -> str:
        return f"socket {self.socket}" if self.socket else f"{self.host}:{self.port}"

    def describe(self) -> dict[str, Any]:
        """What may be written down about this connection (never the password)."""
        return {"host": self.host, "port": self.port, "user": self.user, "socket": self.socket}


@dataclass(frozen=True, slots=True)
class ServerVersion:
    flavor: str  # "mariadb" | "mysql"
    version: tuple[int, int, int]
    text: str

    @property
    def short(self) -> str:
        return ".".join(str(p) for p in self.version)

    def at_least(self, *version: int) -> bool:
        return self.version >= tuple(version)

    @classmethod
    def parse(cls, text: str, comment: str = "") -> ServerVersion:
        m = re.match(r"(\d+)\.(\d+)\.(\d+)", text)
        numbers = (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else (0, 0, 0)
        flavor = "mariadb" if "mariadb" in (text + comment).lower() else "mysql"
        return cls(flavor, numbers, text)


def describe_error(exc: BaseException, info: ConnectionInfo) -> ServerError:
    """Turn a driver exception into a message that names the server and the fix."""
    code = exc.args[0] if exc.args and isinstance(exc.args[0], int) else None
    text = str(exc.args[1]) if len(exc.args) > 1 else str(exc)
    if code in (2002, 2003, 2013, 2006) or isinstance(exc, OSError | asyncio.TimeoutError):
        return ServerError(
            f"cannot reach the server at {info.where}: {text}. Is it running, and is "
            "the host/port (or socket) right?",
            code,
        )
    if code == 1045:
        return ServerError(
            f"the server at {info.where} refused user '{info.user}': wrong password or "
            "missing grant. Check the profile's user and password source.",
            code,
        )
    return ServerError(f"server error {code}: {text}" if code else text, code)


class Tunnel(Protocol):
    """Something that can open a local unix socket reaching a remote address (an SshHost)."""

    name: str

    async def forward(
        self, *, host: str | None = None, port: int | None = None, path: str | None = None
    ) -> str: ...


class ServerLink:
    """A single connection with a query helper; errors become ``ServerError``.

    With ``via``, ``info`` is the server as seen from that host and each
    connect goes through a fresh-or-reused SSH port forward (TCP, or to the
    unix socket when ``info.socket`` is set).
    """

    def __init__(
        self,
        info: ConnectionInfo,
        *,
        connect_timeout: float = 5.0,
        query_timeout: float = QUERY_TIMEOUT,
        via: Tunnel | None = None,
    ) -> None:
        self.info = info
        self.via = via
        self.connect_timeout = connect_timeout
        self.query_timeout = query_timeout
        self.version: ServerVersion | None = None
        self._conn: Any = None
        self._lock = asyncio.Lock()

    @property
    def connected(self) -> bool:
        return self._conn is not None and not self._conn.closed

    async def connect(self) -> ServerVersion:
        """Connect and read the version, all within ``connect_timeout``.

        aiomysql's own timeout covers only the TCP connect; a port that accepts
        but never greets (wrong service, stalled server) would hang forever.
        """
        try:
            async with asyncio.timeout(self.connect_timeout):
                return await self._connect()
        except TimeoutError:
            self._drop()
            raise ServerError(
                f"the server at {self.info.where} did not answer within "
                f"{self.connect_timeout:g} s: is that port a MySQL/MariaDB server, and is it "
                "responsive?",
                2013,
            ) from None

    async def _endpoint(self) -> ConnectionInfo:
        if self.via is None:
            return self.info
        from knobtop.hosts.base import HostError

        try:
            if self.info.socket:
                local = await self.via.forward(path=self.info.socket)
            else:
                local = await self.via.forward(host=self.info.host, port=self.info.port)
        except HostError as exc:
            raise ServerError(f"no tunnel to the server via {self.via.name}: {exc}", 2003) from None
        return replace(self.info, socket=local)  # a socket in a private (0700) directory

    async def _connect(self) -> ServerVersion:
        self._drop()
        info = await self._endpoint()
        try:
            aiomysql, _pymysql, cursor = _drivers()
            self._conn = await aiomysql.connect(
                host=info.host,
                port=info.port,
                user=info.user,
                password=info.password,
                unix_socket=info.socket,
                db=info.database,
                autocommit=True,
                cursorclass=cursor,
                connect_timeout=self.connect_timeout,
            )
        except (TimeoutError, _mysql_error(), OSError) as exc:
            raise describe_error(exc, self.info) from None
        rows = await self.query("SELECT VERSION(), @@version_comment")
        self.version = ServerVersion.parse(str(rows[0][0]), str(rows[0][1] or ""))
        return self.version

    async def query(
        self, sql: str, args: Sequence[Any] | None = None, *, timeout: float | None = None
    ) -> list[tuple[Any, ...]]:
        """Run one statement and return its rows, within ``timeout`` seconds (by default
        ``query_timeout``; DDL, bulk DML and blocking waits get ``LONG_QUERY_TIMEOUT``).

        On expiry the connection is closed and ``QueryTimeout`` names the statement's kind
        and the limit: a server that accepts but never answers cannot hold a caller.
        """
        if self._conn is None:
            raise ServerError(f"not connected to {self.info.where}")
        limit = default_timeout(sql, self.query_timeout) if timeout is None else timeout
        conn = None  # set once this statement has the connection to itself
        try:
            # the wait for a link another statement is using counts against ``limit`` too
            async with asyncio.timeout(limit), self._lock:
                conn = self._conn
                if conn is None:  # dropped while this statement waited
                    raise ServerError(f"not connected to {self.info.where}")
                cur = await conn.cursor()
                await cur.execute(sql, args)
                rows = await cur.fetchall()
                await cur.close()
                return list(rows) if rows else []
        except TimeoutError:
            kind = statement_kind(sql)
            if conn is None:  # never sent: the statement holding the link goes on
                raise QueryTimeout(
                    f"the connection to {self.info.where} stayed busy with another statement "
                    f"for {limit:g} s, so {kind} was not sent",
                    kind=kind, limit=limit,
                ) from None
            if self._conn is conn:
                self._drop()
            raise QueryTimeout(
                f"the server at {self.info.where} did not answer {kind} within {limit:g} s "
                "(the connection was closed): is it overloaded, stopped or hung?",
                kind=kind, limit=limit,
            ) from None
        except (_mysql_error(), OSError) as exc:
            err = describe_error(exc, self.info)
            if err.code in (2002, 2003, 2006, 2013) or isinstance(exc, OSError):
                self._drop()
            raise err from None
        except BaseException:
            # Cancelled from outside (a caller's own deadline, an abort) after the statement
            # had the link: its answer may be half read, and the next statement would read
            # the rest as its own (or wait for bytes that never come), so the link goes.
            if conn is not None and self._conn is conn:
                self._drop()
            raise

    async def warnings(self) -> list[str]:
        rows = await self.query("SHOW WARNINGS")
        return [f"{row[0]} {row[1]}: {row[2]}" for row in rows]

    def _drop(self) -> None:
        if self._conn is not None:
            self._conn.close()
        self._conn = None

    async def close(self) -> None:
        if self._conn is not None:
            try:
                await asyncio.wait_for(self._conn.ensure_closed(), 2.0)
            except (_mysql_error(), OSError, TimeoutError):
                self._conn.close()
            self._conn = None
