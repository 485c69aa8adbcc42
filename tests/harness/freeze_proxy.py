"""A loopback TCP relay in front of a real server whose open connections can be frozen:
their bytes stop moving both ways while the sockets stay open (a link gone silent: a
stateful firewall or NAT that dropped it, a hung middlebox), and connections made after
that pass as before."""

from __future__ import annotations

import asyncio
import contextlib


class FreezeProxy:
    def __init__(self, host: str, port: int) -> None:
        self.target = (host, port)
        self.port = 0
        self._server: asyncio.Server | None = None
        self._live: list[asyncio.Event] = []  # one per connection: set while it may move
        self._writers: list[asyncio.StreamWriter] = []
        self._pumps: list[asyncio.Task[None]] = []

    async def start(self) -> int:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self.port

    def freeze_open_connections(self) -> int:
        """Stop every connection open now from moving another byte; how many there were."""
        for live in self._live:
            live.clear()
        return len(self._live)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        up_reader, up_writer = await asyncio.open_connection(*self.target)
        live = asyncio.Event()
        live.set()
        self._live.append(live)
        self._writers += [writer, up_writer]

        async def pump(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(ConnectionError, asyncio.CancelledError):
                while data := await src.read(65536):
                    await live.wait()  # frozen: held here, never delivered
                    dst.write(data)
                    await dst.drain()
            with contextlib.suppress(ConnectionError, OSError):
                dst.close()

        self._pumps += [asyncio.create_task(pump(reader, up_writer)),
                        asyncio.create_task(pump(up_reader, writer))]

    async def close(self) -> None:
        for task in self._pumps:
            task.cancel()
        await asyncio.gather(*self._pumps, return_exceptions=True)
        for writer in self._writers:
            writer.close()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()
