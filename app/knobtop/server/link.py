"""ServerLink: one aiomysql connection to the target, its flavor and version."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

import aiomysql
import pymysql


class QuietCursor(aiomysql.Cursor):  # type: ignore[misc]
    """A cursor that leaves warnings on the server.

    aiomysql would fetch them after every statement and print them on stderr
    (over the screen); knobtop asks SHOW WARNINGS itself where it matters.
    """

    async def _show_warnings(self, conn: Any) -> None:
        return None


class ServerError(RuntimeError):
    """The server refused or could not be reached; ``code`` is the MySQL error number."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code


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
        self, info: ConnectionInfo, *, connect_timeout: float = 5.0, via: Tunnel | None = None
    ) -> None:
        self.info = info
        self.via = via
        self.connect_timeout = connect_timeout
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
            self._conn = await aiomysql.connect(
                host=info.host,
                port=info.port,
                user=info.user,
                password=info.password,
                unix_socket=info.socket,
                db=info.database,
                autocommit=True,
                cursorclass=QuietCursor,
                connect_timeout=self.connect_timeout,
            )
        except (TimeoutError, pymysql.err.MySQLError, OSError) as exc:
            raise describe_error(exc, self.info) from None
        rows = await self.query("SELECT VERSION(), @@version_comment")
        self.version = ServerVersion.parse(str(rows[0][0]), str(rows[0][1] or ""))
        return self.version

    async def query(self, sql: str, args: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        if self._conn is None:
            raise ServerError(f"not connected to {self.info.where}")
        async with self._lock:
            try:
                async with self._conn.cursor() as cur:
                    await cur.execute(sql, args)
                    rows = await cur.fetchall()
                    return list(rows) if rows else []
            except (TimeoutError, pymysql.err.MySQLError, OSError) as exc:
                err = describe_error(exc, self.info)
                if err.code in (2002, 2003, 2006, 2013) or isinstance(exc, OSError):
                    self._drop()
                raise err from None

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
            except (pymysql.err.MySQLError, OSError, TimeoutError):
                self._conn.close()
            self._conn = None
