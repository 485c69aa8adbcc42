"""A fake MySQL server that asks for the password in clear text and keeps what it gets.

It listens on a unix socket and on a loopback TCP port, greets every client with a
protocol-10 handshake naming the ``mysql_clear_password`` plugin (switching the client to
it if its answer used another), records every byte a client sends, and refuses the login.
Its loop runs in a thread of its own, so a test may block on a subprocess meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import struct
import threading
from collections.abc import Iterator
from pathlib import Path

CLEAR = b"mysql_clear_password"
# CLIENT_LONG_PASSWORD | CONNECT_WITH_DB | PROTOCOL_41 | SECURE_CONNECTION |
# MULTI_STATEMENTS | MULTI_RESULTS | PLUGIN_AUTH | PLUGIN_AUTH_LENENC_CLIENT_DATA
_CAPS = 0x1 | 0x8 | 0x200 | 0x8000 | 0x10000 | 0x20000 | 0x80000 | 0x200000
_SCRAMBLE = b"knobtop-fake-scrambl"  # 20 bytes


def _packet(seq: int, payload: bytes) -> bytes:
    return struct.pack("<I", len(payload))[:3] + bytes([seq & 0xFF]) + payload


def _handshake() -> bytes:
    body = (b"\x0a" + b"5.7.99-knobtop-fake\0" + struct.pack("<I", 1) + _SCRAMBLE[:8] + b"\0"
            + struct.pack("<H", _CAPS & 0xFFFF) + b"\x21" + struct.pack("<H", 2)
            + struct.pack("<H", _CAPS >> 16) + bytes([len(_SCRAMBLE) + 1]) + b"\0" * 10
            + _SCRAMBLE[8:] + b"\0" + CLEAR + b"\0")
    return _packet(0, body)


class FakeMysql:
    """``socket`` and ``port`` to point a client at; ``connections`` and ``received``
    (every client packet's payload) say what reached it."""

    def __init__(self, socket: Path) -> None:
        self.socket = socket
        self.port = 0
        self.connections = 0
        self.received: list[bytes] = []
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._servers: list[asyncio.Server] = []

    def saw(self, secret: str) -> bool:
        """Whether ``secret`` came in any packet (in clear text, as the plugin asks)."""
        return any(secret.encode() in data for data in self.received)

    async def _read(self, reader: asyncio.StreamReader) -> tuple[int, bytes]:
        head = await reader.readexactly(4)
        data = await reader.readexactly(int.from_bytes(head[:3], "little"))
        self.received.append(data)
        return head[3], data

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            writer.write(_handshake())
            await writer.drain()
            async with asyncio.timeout(10):
                seq, answer = await self._read(reader)
                if CLEAR not in answer:  # the client answered with its default plugin
                    writer.write(_packet(seq + 1, b"\xfe" + CLEAR + b"\0" + _SCRAMBLE + b"\0"))
                    await writer.drain()
                    seq, _password = await self._read(reader)
            error = b"\xff" + struct.pack("<H", 1045) + b"#28000Access denied (knobtop fake)"
            writer.write(_packet(seq + 1, error))
            await writer.drain()
        except (OSError, TimeoutError, asyncio.IncompleteReadError):
            pass
        finally:
            writer.close()

    async def _start(self) -> None:
        self._servers.append(await asyncio.start_unix_server(self._client, str(self.socket)))
        tcp = await asyncio.start_server(self._client, "127.0.0.1", 0)
        self.port = tcp.sockets[0].getsockname()[1]
        self._servers.append(tcp)

    async def _stop(self) -> None:
        for server in self._servers:
            server.close()
            await server.wait_closed()

    def __enter__(self) -> FakeMysql:
        self._thread.start()
        asyncio.run_coroutine_threadsafe(self._start(), self._loop).result(10)
        return self

    def __exit__(self, *exc: object) -> None:
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._stop(), self._loop).result(10)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(10)
        self._loop.close()


@contextlib.contextmanager
def fake_mysql(socket: Path) -> Iterator[FakeMysql]:
    with FakeMysql(socket) as fake:
        yield fake
