"""`knobtop serve`: the follow view for browsers, through textual-serve (a Textual tool,
so it lives under ui/).

textual-serve checks nothing about who opens its websocket: any web page the viewer
visits could open ``ws://127.0.0.1:PORT/ws`` from the viewer's browser and read the
session. FollowServer adds the checks: the ``Host`` of every request and the ``Origin`` of
every request that carries one (the websocket must) are this server's own address (or
``--public-url``); at most ``max_viewers`` viewers at once; the browser's terminal size
bounded; malformed websocket messages ignored.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import math
import re
import shlex
import sys
from collections.abc import AsyncGenerator, Awaitable, Callable
from pathlib import Path

from aiohttp import WSMsgType, web
from multidict import MultiDict
from rich.console import Console
from rich.text import Text
from textual_serve.app_service import AppService
from textual_serve.download_manager import DOWNLOAD_CHUNK_SIZE, DownloadManager
from textual_serve.server import Server
from yarl import URL

from knobtop.errors import BadValue
from knobtop.journal.events import Header
from knobtop.printable import printable
from knobtop.safefile import private_cwd

# The browser's terminal size, in cells: textual-serve takes it from the page's query string
# and resize messages; unbounded, a page could make the viewer allocate a huge screen.
COLUMNS = (20, 500)
ROWS = (10, 200)
DEFAULT_SIZE = (80, 24)
DEFAULT_PORTS = {"http": 80, "https": 443}
# host[:port] as in a Host header or an origin: a bracketed IPv6 literal or a DNS name / IPv4.
HOST_PORT = re.compile(r"(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::([0-9]{1,5}))?")
ORIGIN = re.compile(r"(https?)://(.+)")

Endpoint = tuple[str, str, int]  # scheme, host (normalised), port

REAP_DEADLINE = 10.0  # seconds a stopped viewer's follow process has to exit

def clamp_size(value: object, limits: tuple[int, int]) -> int | None:
    """A terminal dimension from the browser, within ``limits``; None when it is not a
    number."""
    if isinstance(value, str):
        try:
            value = int(value.strip())
        except ValueError:  # also a number with more than 4300 digits
            return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return max(limits[0], min(limits[1], int(value)))


def _norm_host(host: str) -> str:
    host = host.strip("[]").lower()
    try:
        return str(ipaddress.ip_address(host))  # one spelling per address
    except ValueError:
        return host.rstrip(".")


def parse_host_port(text: str) -> tuple[str, int | None] | None:
    """``host[:port]`` (a Host header, or an origin after its scheme), or None."""
    match = HOST_PORT.fullmatch(text)
    if match is None:
        return None
    port = int(match[2]) if match[2] is not None else None
    if port is not None and not 0 < port < 65536:
        return None
    return _norm_host(match[1]), port


def parse_origin(text: str) -> Endpoint | None:
    """An ``Origin`` header as browsers send it (scheme://host[:port], nothing more)."""
    match = ORIGIN.fullmatch(text.strip().lower())
    parsed = parse_host_port(match[2]) if match else None
    if match is None or parsed is None:
        return None
    host, port = parsed
    return match[1], host, port if port is not None else DEFAULT_PORTS[match[1]]


def served_endpoints(host: str, port: int, public_url: str | None) -> list[Endpoint]:
    """Where browsers may load this server from: http://HOST:PORT, and --public-url."""
    endpoints = [("http", _norm_host(host), port)]
    if public_url is not None:
        try:
            url = URL(public_url)
            ok = url.scheme in DEFAULT_PORTS and bool(url.host) and url.port is not None
        except ValueError:
            ok = False
        if not ok or url.host is None or url.port is None:
            raise BadValue(f"--public-url {public_url!r}: give the address browsers use, "
                             "as http://HOST:PORT or https://HOST")
        endpoints.append((url.scheme, _norm_host(url.host), url.port))
    return endpoints


def check_request(endpoints: list[Endpoint], host: str | None, origin: str | None,
                  *, need_origin: bool) -> str | None:
    """Why a request is refused (its Host or Origin is not this server), or None."""
    parsed = parse_host_port(host.strip()) if host is not None else None
    if parsed is None or not any(
        parsed[0] == h and (parsed[1] or DEFAULT_PORTS[s]) == p for s, h, p in endpoints
    ):
        return f"Host {shown(host)} is not this server"
    if origin is None:
        return "no Origin (a websocket must say which page opened it)" if need_origin else None
    if parse_origin(origin) not in endpoints:
        return f"Origin {shown(origin)} is not this server's page"
    return None


def shown(value: str | None) -> str:
    """A header value for a log line: quoted, escapes visible, not too long."""
    if value is None:
        return "(none)"
    return repr(value if len(value) <= 80 else value[:80] + "...")


def _url(endpoint: Endpoint) -> str:
    scheme, host, port = endpoint
    name = f"[{host}]" if ":" in host else host
    return f"{scheme}://{name}" + ("" if DEFAULT_PORTS[scheme] == port else f":{port}")


class OneLineLog(logging.Handler):
    """A log record as one line of plain text (never markup), its exception as its type
    and message."""

    def __init__(self, console: Console) -> None:
        super().__init__()
        self.console = console

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = record.getMessage()
            if record.exc_info and record.exc_info[1] is not None:
                error = record.exc_info[1]
                line += f": {type(error).__name__}: {error}"
            # One line each: a request's text may hold newlines and escapes.
            text = printable(line, newlines=False)
            self.console.print(Text(f"{record.levelname.lower()}: {text}"),
                               highlight=False, soft_wrap=True)
        except Exception:  # a log line never takes the server down
            self.handleError(record)


# How long a download waits for each chunk from the viewer process. textual-serve waits 4 s,
# then fails with a truncated file (its task_done() after a timed-out get() raises): a viewer
# starved on a saturated machine (the very moment someone takes a screenshot) missed it.
CHUNK_DEADLINE = 30.0


class DownloadStalled(Exception):
    """The viewer sent no chunk of a download within the deadline."""


class PatientDownloads(DownloadManager):
    """textual-serve's download manager with a longer, still bounded, wait per chunk; a
    download that stalls past it is aborted (the browser sees a failed download), never
    delivered cut short as if complete."""

    def __init__(self, deadline: float = CHUNK_DEADLINE) -> None:
        super().__init__()
        self.deadline = deadline

    async def download(self, delivery_key: str) -> AsyncGenerator[bytes, None]:
        app_service = await self._get_app_service(delivery_key)
        download = self._active_downloads[delivery_key]
        try:
            while True:
                sent = await app_service.send_meta({
                    "type": "deliver_chunk_request", "key": delivery_key,
                    "size": DOWNLOAD_CHUNK_SIZE, "name": download.name})
                if not sent:
                    raise DownloadStalled(f"the viewer of {download.file_name} has gone")
                try:
                    chunk = await asyncio.wait_for(download.incoming_chunks.get(),
                                                   self.deadline)
                except TimeoutError:
                    raise DownloadStalled(
                        f"no part of {download.file_name} came from the viewer within "
                        f"{self.deadline:g} s") from None
                if not chunk:  # the file is complete, or the viewer cancelled it
                    return
                yield chunk
        finally:
            self._active_downloads.pop(delivery_key, None)


class FollowServer(Server):
    """textual-serve's Server with the origin, host, viewer-count and size checks."""

    def __init__(self, command: str, *, host: str, port: int, public_url: str | None,
                 title: str, max_viewers: int, console: Console,
                 banner: Callable[[str], None]) -> None:
        super().__init__(command, host=host, port=port, title=title, public_url=public_url)
        self.download_manager = PatientDownloads()
        self.endpoints = served_endpoints(host, port, public_url)
        self.max_viewers = max_viewers
        self.viewers = 0  # websockets being served (each has its `knobtop follow`)
        # Each viewer's app service, until its `knobtop follow` has exited and been reaped
        # (textual-serve stops it but never waits for it: a process still unreaped when the
        # loop closes prints "Event loop is closed" from its transport's __del__)
        self._services: set[AppService] = set()
        self.out = console
        self.banner = banner

    def initialize_logging(self) -> None:
        """One plain line per log record: textual-serve's own setup prints rich
        tracebacks with local variables, so every malformed request a page sends (which
        aiohttp answers 400) would fill the terminal with a traceback."""
        handler = OneLineLog(self.out)
        logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)

    def refuse(self, request: web.Request, why: str) -> None:
        self.out.print(Text(f"knobtop serve: refused {request.method} {shown(request.path)} "
                            f"from {request.remote}: {why}"), highlight=False)

    async def _make_app(self) -> web.Application:
        app = await super()._make_app()

        @web.middleware
        async def same_origin(request: web.Request,
                              handler: Callable[[web.Request],
                                                Awaitable[web.StreamResponse]]
                              ) -> web.StreamResponse:
            hosts, origins = (request.headers.getall(name, []) for name in ("Host", "Origin"))
            why = check_request(self.endpoints, hosts[0] if hosts else None,
                                origins[0] if origins else None,
                                need_origin=request.path == "/ws")
            if len(hosts) > 1 or len(origins) > 1:
                why = f"{len(hosts)} Host and {len(origins)} Origin headers (one each at most)"
            if why is not None:
                self.refuse(request, why)
                raise web.HTTPForbidden(
                    text=f"knobtop serve: {why}. Open {_url(self.endpoints[-1])}/ "
                    "(a different address needs `knobtop serve --public-url URL`).\n")
            return await handler(request)

        app.middlewares.append(same_origin)
        return app

    async def on_startup(self, app: web.Application) -> None:
        self.banner(self.public_url)

    async def handle_websocket(self, request: web.Request) -> web.WebSocketResponse:
        if self.viewers >= self.max_viewers:
            why = f"already {self.viewers} viewers (--max-viewers {self.max_viewers})"
            self.refuse(request, why)
            raise web.HTTPServiceUnavailable(text=f"knobtop serve: {why}; try again later.\n")
        query = MultiDict(request.query)
        query["width"] = str(clamp_size(query.get("width"), COLUMNS) or DEFAULT_SIZE[0])
        query["height"] = str(clamp_size(query.get("height"), ROWS) or DEFAULT_SIZE[1])
        self.viewers += 1  # no await since the check: two upgrades cannot both pass it
        try:
            return await super().handle_websocket(
                request.clone(rel_url=request.rel_url.with_query(query)))
        finally:
            self.viewers -= 1
            await self._reap()

    async def _reap(self) -> None:
        """Wait (bounded) for the follow process of every stopped viewer, killing one that
        outlives REAP_DEADLINE, so none is left for the loop's close."""
        for service in [s for s in self._services if s._task is None]:
            process = service._process  # textual-serve's (the pinned version's) child
            self._services.discard(service)
            if process is None:
                continue
            try:
                await asyncio.wait_for(process.wait(), REAP_DEADLINE)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    process.kill()
                await process.wait()

    async def _process_messages(self, websocket: web.WebSocketResponse,
                                app_service: AppService) -> None:
        """textual-serve's message loop, taking only well-formed messages (a malformed
        one is dropped, not a traceback) and bounding resizes."""
        self._services.add(app_service)  # reaped once its viewer ends (_reap)
        async for message in websocket:
            if message.type != WSMsgType.TEXT:
                continue
            try:
                envelope = json.loads(message.data)
            except (ValueError, RecursionError):
                continue
            if not isinstance(envelope, list) or not envelope:
                continue
            kind, data = envelope[0], envelope[1] if len(envelope) > 1 else None
            if kind == "stdin" and isinstance(data, str):
                await app_service.send_bytes(data.encode("utf-8", "replace"))
            elif kind == "resize" and isinstance(data, dict):
                width = clamp_size(data.get("width"), COLUMNS)
                height = clamp_size(data.get("height"), ROWS)
                if width is not None and height is not None:
                    await app_service.set_terminal_size(width, height)
            elif kind == "ping":
                await websocket.send_json(["pong", data])
            elif kind == "blur":
                await app_service.blur()
            elif kind == "focus":
                await app_service.focus()


def serve_follow(path: Path, header: Header | None, *, host: str, port: int, public: bool,
                 public_url: str | None, history: float, console: Console,
                 max_viewers: int = 8) -> None:
    """Serve `knobtop follow PATH` to browsers until interrupted (checks done by the CLI)."""
    # -P and a private working directory: no module planted where serve was started from
    command = "cd " + shlex.quote(private_cwd()) + " && exec " + shlex.join(
        [sys.executable, "-P", "-m", "knobtop", "follow", str(path.resolve()),
         "--history", f"{history:g}"])
    host = host.strip("[]")
    url = public_url
    if url is None and ":" in host:  # an IPv6 literal needs its brackets
        url = f"http://[{host}]:{port}"

    def banner(served_url: str) -> None:
        # The path and profile are the user's and the journal's text: never markup, and
        # printable (a path may hold a control sequence).
        what = printable(f"the newest journal in {path}" if header is None
                         else f"{path} (profile {header.profile})", newlines=False)
        console.print(Text(f"knobtop serve: following {what} "
                           f"at {served_url}  (Ctrl+C stops; at most {max_viewers} "
                           "viewers)"), highlight=False)
        if public:
            console.print(Text.assemble(("Public:", "bold yellow"),
                                        f" anyone who can reach {host} port {port} "
                                        "watches this session."), highlight=False)
        if host in ("0.0.0.0", "::") and public_url is None:
            # The page tells the browser where its websocket is: 0.0.0.0 works only here.
            console.print(Text.assemble(("Note:", "bold yellow"),
                                        " browsers on other machines need "
                                        f"--public-url http://THIS-HOST:{port}"),
                          highlight=False)

    server = FollowServer(command, host=host, port=port, public_url=url,
                          title=f"knobtop follow {path.name}", max_viewers=max_viewers,
                          console=console, banner=banner)
    server.serve()
