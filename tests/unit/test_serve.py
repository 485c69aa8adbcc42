"""`knobtop serve JOURNAL`: `knobtop follow JOURNAL` in a browser through textual-serve,
on loopback unless --public is given."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable, Iterator
from html import escape as html_escape
from pathlib import Path

import aiohttp
import pytest

from harness import paths as repo_paths
from harness.cli import knobtop
from knobtop.cli import is_loopback_host
from knobtop.journal import JournalReader, Sample

RECORDED = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"
# Terminal escapes: CSI sequences, OSC strings, charset selection, any other ESC + char.
ANSI = re.compile(
    rb"\x1b(?:\[[0-9;?<>=$]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-B]|.)"
)


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


async def eventually(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g} s"
        await asyncio.sleep(0.2)


def followers(journal: Path) -> list[int]:
    """Live `knobtop follow JOURNAL` processes (the ones serve starts per browser)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if b"follow" in cmd and str(journal).encode() in cmd and state != "Z":
            found.append(int(pid))
    return found


async def until_drawn(ws: aiohttp.ClientWebSocketResponse,
                      done: Callable[[bytes], bool]) -> list[str]:
    """Read the viewer's output until ``done(screen text)``; returns the text messages."""
    raw = b""
    texts: list[str] = []
    async with asyncio.timeout(90):
        while not done(ANSI.sub(b"", raw)):  # whole, so no escape is cut in two
            msg = await ws.receive()
            assert msg.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), msg
            if msg.type == aiohttp.WSMsgType.BINARY:
                raw += msg.data
            else:
                texts.append(msg.data)
    return texts


@pytest.fixture
def journal(tmp_path: Path) -> Path:
    path = tmp_path / "lab-80s.knobtop.jsonl"
    shutil.copyfile(RECORDED, path)
    return path


@contextlib.contextmanager
def serving(journal: Path, log_path: Path, *args: str, host: str = "127.0.0.1",
            port: int | None = None) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """`knobtop serve JOURNAL ARGS` on ``port`` (a free one) of ``host``, answering TCP
    (waited for, bounded); stopped, with every viewer it left, at the end."""
    port = port or free_port(host)
    log = log_path.open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "knobtop", "serve", str(journal), "--port", str(port),
         "--host", f"[{host}]" if ":" in host else host, *args],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        env={**os.environ, "COLUMNS": "300"},  # log lines unwrapped
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, log_path.read_text()
            try:
                socket.create_connection((host, port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "knobtop serve did not listen in 60 s"
                time.sleep(0.2)
        yield port, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)  # its own session: serve and its viewers
                proc.wait(10)
        log.close()
        for pid in followers(journal):  # a viewer left behind fails the test below
            os.kill(pid, signal.SIGKILL)


@pytest.fixture
def served(journal: Path, tmp_path: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """`knobtop serve` on a free loopback port, answering HTTP (waited for, bounded)."""
    with serving(journal, tmp_path / "serve.log") as started:
        yield started


async def test_serve_shows_the_follow_screen_in_a_browser(
    served: tuple[int, subprocess.Popen[bytes]], journal: Path, tmp_path: Path
) -> None:
    port, proc = served
    base = f"http://127.0.0.1:{port}"
    async with aiohttp.ClientSession() as http:
        async with http.get(f"{base}/") as page:
            assert page.status == 200
            assert page.content_type == "text/html"
            html = await page.text()
        # The page loads textual's web client and points it at this server's websocket.
        assert f'src="{base}/static/js/textual.js"' in html
        assert f"ws://127.0.0.1:{port}/ws" in html
        async with http.get(f"{base}/static/js/textual.js") as script:
            assert script.status == 200 and len(await script.read()) > 10_000

        # What the browser does next: open the websocket; serve starts `knobtop follow`.
        samples = sum(isinstance(e, Sample) for e in JournalReader(journal))
        async with http.ws_connect(f"ws://127.0.0.1:{port}/ws?width=160&height=48",
                                   origin=base) as ws:
            await until_drawn(ws, lambda screen: b"MariaDB 10.11" in screen
                              and f"{samples} samples".encode() in screen and b"Knobs" in screen)
            assert len(followers(journal)) == 1
            await ws.send_json(["stdin", "q"])  # a key from the browser: the viewer quits
            async with asyncio.timeout(30):
                while not ws.closed:
                    msg = await ws.receive()
                    if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                        break
    await eventually(lambda: not followers(journal), 30, "knobtop follow ending after q")

    proc.send_signal(signal.SIGTERM)  # Ctrl+C or a service stop
    assert proc.wait(30) == 0
    log = (tmp_path / "serve.log").read_text()
    assert f"following {journal}" in log and f"http://127.0.0.1:{port}" in log


async def test_closing_the_browser_ends_its_viewer(
    served: tuple[int, subprocess.Popen[bytes]], journal: Path
) -> None:
    port, proc = served
    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(f"ws://127.0.0.1:{port}/ws?width=80&height=24",
                        origin=f"http://127.0.0.1:{port}") as ws,
    ):
        await eventually(lambda: bool(followers(journal)), 90, "a viewer starting")
        async with asyncio.timeout(90):
            assert (await ws.receive()).type == aiohttp.WSMsgType.BINARY  # it draws
    await eventually(lambda: not followers(journal), 30, "the viewer ending with its tab")
    assert proc.poll() is None  # the server keeps serving


async def test_a_browser_screenshot_is_a_download_not_a_file_here(
    served: tuple[int, subprocess.Popen[bytes]], journal: Path
) -> None:
    port, _proc = served
    keys: list[str] = []

    def offered(texts: list[str]) -> bool:
        keys.extend(json.loads(t)[1] for t in texts if "deliver_file_start" in t)
        return bool(keys)

    async with (
        aiohttp.ClientSession() as http,
        http.ws_connect(f"ws://127.0.0.1:{port}/ws?width=120&height=40",
                        origin=f"http://127.0.0.1:{port}") as ws,
    ):
        await until_drawn(ws, lambda screen: b"Knobs" in screen)
        await ws.send_json(["stdin", "S"])
        async with asyncio.timeout(60):
            while not offered([m.data for m in [await ws.receive()]
                               if m.type == aiohttp.WSMsgType.TEXT]):
                pass
        async with http.get(f"http://127.0.0.1:{port}/download/{keys[0]}") as download:
            assert download.status == 200
            assert download.content_type == "image/svg+xml"
            assert "attachment; filename=knobtop-" in download.headers["Content-Disposition"]
            svg = await download.text()
    assert svg.startswith("<svg") and "Knobs" in svg.replace("&#160;", " ")
    assert not list(journal.parent.glob("*.svg"))  # nothing written on the watched machine


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.0.2.10"])
def test_a_non_loopback_host_needs_public(journal: Path, host: str) -> None:
    result = knobtop("serve", str(journal), "--host", host, "--port", str(free_port()))
    assert result.returncode == 2
    assert f"--host {host} is not a loopback address" in result.stderr
    assert "anyone who can reach" in result.stderr and "--public" in result.stderr
    assert "Traceback" not in result.stderr


def test_a_missing_or_foreign_journal_is_refused(tmp_path: Path) -> None:
    missing = tmp_path / "nope.knobtop.jsonl"
    result = knobtop("serve", str(missing))
    assert result.returncode == 2
    assert f"{missing}: no such file" in result.stderr
    other = tmp_path / "notes.txt"
    other.write_text("hello\n")
    result = knobtop("serve", str(other))
    assert result.returncode == 2
    assert f"{other}:1:" in result.stderr and "not a knobtop journal" in result.stderr
    # A folder is served (each viewer follows its newest journal); --latest wants one.
    result = knobtop("serve", "--latest", str(other))
    assert result.returncode == 2 and f"{other} is a file; --latest follows" in result.stderr
    result = knobtop("serve")
    assert result.returncode == 2 and "or --latest" in result.stderr


def test_a_port_in_use_is_refused(journal: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        result = knobtop("serve", str(journal), "--port", str(port))
    assert result.returncode == 2
    assert f"cannot listen on 127.0.0.1 port {port}" in result.stderr


def test_loopback_hosts() -> None:
    assert all(map(is_loopback_host, ["127.0.0.1", "127.0.0.2", "::1", "[::1]", "localhost"]))
    assert not any(map(is_loopback_host, ["0.0.0.0", "::", "10.1.2.3", "192.0.2.10"]))


WS_HANDSHAKE = (b"Upgrade: websocket\r\nConnection: Upgrade\r\n"
                b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n")


def raw_status(port: int, path: bytes, headers: bytes) -> int:
    """The status of one hand-written HTTP request (for header bytes aiohttp's client
    will not send: control characters, non-UTF-8, a header twice)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
        conn.sendall(b"GET " + path + b" HTTP/1.1\r\n" + headers + b"\r\n")
        reply = b""
        while b"\r\n" not in reply:
            chunk = conn.recv(4096)
            assert chunk, f"no answer to {headers!r}"
            reply += chunk
    return int(reply.split(b" ", 2)[1])


async def refused_ws(http: aiohttp.ClientSession, url: str, status: int,
                     origin: str | None = None, host: str | None = None) -> str:
    """Open the websocket as a browser on ``origin`` would; it must be refused."""
    with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
        async with http.ws_connect(url, origin=origin,
                                   headers={"Host": host} if host is not None else None):
            pass
    assert refused.value.status == status, (origin, host)
    return str(refused.value)


async def test_a_page_from_another_origin_cannot_open_the_viewer(
    served: tuple[int, subprocess.Popen[bytes]], journal: Path, tmp_path: Path
) -> None:
    """A page on any site can make the browser open ws://127.0.0.1:PORT/ws (browsers do
    not apply the same-origin policy to websockets) and read the session; DNS rebinding
    (evil.example resolving to 127.0.0.1) reaches the page and websocket with a foreign
    Host. Every such request gets 403 and starts no `knobtop follow`."""
    port, _proc = served
    me = f"http://127.0.0.1:{port}"
    other = port + 1 if port < 65535 else port - 1
    origins = [
        "https://evil.example", "null", "", "file://", f"http://127.0.0.1:{other}",
        f"https://127.0.0.1:{port}", f"ws://127.0.0.1:{port}", f"http://localhost:{port}",
        f"http://127.0.0.2:{port}", f"http://[::1]:{port}", f"http://0x7f.1:{port}",
        f"http://127.0.0.1.evil.example:{port}", f"http://127.0.0.1:{port}.evil.example",
        f"http://evil.example/{me}", f"http://user@127.0.0.1:{port}", f"{me}/", f"{me}:{port}",
        f"http://127.0.0.1:{port}0", "http://127.0.0.1", "https://evil.example" + "a" * 4000,
    ]
    hosts = [
        f"evil.example:{port}", f"127.0.0.1:{other}", "127.0.0.1", f"localhost:{port}",
        f"127.0.0.1:{port}@evil.example", f"evil.example:{port}/127.0.0.1:{port}", "",
        f"[::1]:{port}", f"127.1:{port}", f"127.0.0.1:{port}:{port}", "127.0.0.1:99999",
        f"127.0.0.1.evil.example:{port}", "evil.example" + "a" * 4000,
    ]
    tried = 0
    async with aiohttp.ClientSession() as http:
        ws_url = f"ws://127.0.0.1:{port}/ws?width=80&height=24"
        for origin in origins:  # the websocket, from pages elsewhere
            await refused_ws(http, ws_url, 403, origin=origin)
            assert not followers(journal), origin
        await refused_ws(http, ws_url, 403)  # no Origin at all: not a browser's page
        for host in hosts:  # DNS rebinding: the page and the websocket under a foreign name
            async with http.get(f"{me}/", headers={"Host": host}) as page:
                assert page.status == 403, host
                text = await page.text()
                assert "is not this server" in text and f"Open {me}/" in text
            await refused_ws(http, ws_url, 403, origin=me, host=host)
            assert not followers(journal), host
        for origin in origins[:3]:  # the page itself fetched from another origin
            async with http.get(f"{me}/", headers={"Origin": origin}) as page:
                assert page.status == 403, origin
        for path in ("/static/js/textual.js", "/download/x"):  # every route is guarded
            async with http.get(f"{me}{path}", headers={"Host": "evil.example"}) as page:
                assert page.status == 403, path
        tried += len(origins) + 1 + 2 * len(hosts) + 3 + 2
        # What aiohttp's client will not send: control characters, bytes that are not
        # UTF-8, the right header and a foreign one together.
        good = f"Host: 127.0.0.1:{port}\r\nOrigin: {me}\r\n".encode()
        raw = [
            f"Host: 127.0.0.1:{port}\r\nOrigin: \x1b[2J\x1b]0;pwned\x07\r\n".encode(),
            f"Host: 127.0.0.1:{port}\r\nOrigin: http://\xff\xfe:{port}\r\n".encode("latin-1"),
            good + b"Origin: https://evil.example\r\n",
            b"Origin: https://evil.example\r\n" + good,
            good + b"Host: evil.example\r\n",
            f"Host: 127.0.0.1:{port}\x1b[31m\r\nOrigin: {me}\r\n".encode(),
            f"Origin: {me}\r\n".encode(),  # no Host at all
        ]
        for headers in raw:
            assert raw_status(port, b"/ws", headers + WS_HANDSHAKE) in (400, 403), headers
            assert not followers(journal), headers
        tried += len(raw)
        # The same hand-written request with this server's Host and Origin is a viewer:
        # so the refusals above are the checks, not a malformed request.
        with socket.create_connection(("127.0.0.1", port), timeout=30) as conn:
            conn.sendall(b"GET /ws?width=80&height=24 HTTP/1.1\r\n" + good + WS_HANDSHAKE
                         + b"\r\n")
            assert conn.recv(4096).startswith(b"HTTP/1.1 101 ")
            await eventually(lambda: len(followers(journal)) == 1, 60, "the raw viewer")
        await eventually(lambda: not followers(journal), 30, "it ending with its socket")

        # The page as a browser loads it (no Origin on a top-level GET), then its websocket.
        async with http.get(f"{me}/") as page:
            assert page.status == 200
        async with http.ws_connect(ws_url, origin=me) as ws:
            await until_drawn(ws, lambda screen: b"Knobs" in screen)
            assert len(followers(journal)) == 1
    log = (tmp_path / "serve.log").read_text()
    assert log.count("knobtop serve: refused") >= tried - len(raw)  # the parser's 400s aside
    assert "Origin 'https://evil.example' is not this server's page" in log
    assert "no Origin (a websocket must say which page opened it)" in log
    assert "\x1b[2J" not in log and "Traceback" not in log


async def test_viewers_over_the_cap_are_refused(journal: Path, tmp_path: Path) -> None:
    with serving(journal, tmp_path / "serve.log", "--max-viewers", "2") as (port, _proc):
        me = f"http://127.0.0.1:{port}"
        url = f"ws://127.0.0.1:{port}/ws?width=80&height=24"
        async with aiohttp.ClientSession() as http, contextlib.AsyncExitStack() as viewers:
            first = await viewers.enter_async_context(http.ws_connect(url, origin=me))
            await viewers.enter_async_context(http.ws_connect(url, origin=me))
            await eventually(lambda: len(followers(journal)) == 2, 60, "two viewers")
            for _ in range(3):
                why = await refused_ws(http, url, 503, origin=me)
                assert len(followers(journal)) == 2
            assert "503" in why
            async with http.get(f"{me}/") as page:  # the page still loads; its socket waits
                assert page.status == 200
            await first.close()
            await eventually(lambda: len(followers(journal)) == 1, 30, "the first ending")
            async with http.ws_connect(url, origin=me) as third:  # room again
                await until_drawn(third, lambda screen: b"Knobs" in screen)
                assert len(followers(journal)) == 2
    log = (tmp_path / "serve.log").read_text()
    assert log.count("already 2 viewers (--max-viewers 2)") == 3 and "Traceback" not in log


def screen_size(raw: bytes) -> tuple[int, int]:
    """Columns and rows the viewer's output covers: Textual places every line with a
    cursor move (CSI row;col H); a line runs to its next move."""
    parts = re.split(rb"\x1b\[(\d+);(\d+)H", raw)
    columns = rows = 0
    for i in range(1, len(parts) - 2, 3):
        row, col, text = int(parts[i]), int(parts[i + 1]), parts[i + 2]
        rows = max(rows, row)
        shown = ANSI.sub(b"", text).decode("utf-8", "replace").rstrip("\n")
        columns = max(columns, col - 1 + len(shown))
    return columns, rows


async def drawn_at(ws: aiohttp.ClientWebSocketResponse, size: tuple[int, int]) -> None:
    """Read the viewer's output until it draws a whole screen of ``size``: Textual sends
    each frame as one message, a whole screen from row 1, column 1."""
    async with asyncio.timeout(60):
        while True:
            msg = await ws.receive()
            assert msg.type in (aiohttp.WSMsgType.BINARY, aiohttp.WSMsgType.TEXT), msg
            if (msg.type == aiohttp.WSMsgType.BINARY and msg.data.startswith(b"\x1b[1;1H")
                    and screen_size(msg.data) == size):
                return


def environment(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(p.decode().split("=", 1) for p in pairs if b"=" in p)


async def test_the_browser_cannot_make_the_viewer_huge(
    served: tuple[int, subprocess.Popen[bytes]], journal: Path, tmp_path: Path
) -> None:
    """Width and height come from the page (query string, resize messages): bounded to
    20..500 columns and 10..200 rows; malformed messages are dropped, not tracebacks."""
    port, proc = served
    me = f"http://127.0.0.1:{port}"
    queries = [  # (width, height) as the page sends them -> the terminal the viewer gets
        ("1000000000", "-5", "500", "10"),
        ("abc", "1e999", "80", "24"),
        ("9" * 5000, "NaN", "80", "24"),
        ("-0", "201", "20", "200"),
    ]
    async with aiohttp.ClientSession() as http:
        for width, height, columns, rows in queries:
            async with http.ws_connect(f"ws://127.0.0.1:{port}/ws?width={width}"
                                       f"&height={height}", origin=me) as ws:
                await eventually(lambda: len(followers(journal)) == 1, 60, "a viewer")
                env = environment(followers(journal)[0])
                assert (env["COLUMNS"], env["ROWS"]) == (columns, rows), (width, height)
                if width == "1000000000":
                    await drawn_at(ws, (500, 10))
                    # Resizes are bounded too, both ways.
                    await ws.send_json(["resize", {"width": -7, "height": 10**12}])
                    await drawn_at(ws, (20, 200))
                    garbage: list[object] = [
                        "not json", "[", "[]", "{}", "null", '"resize"', "[1, 2]",
                        "[" * 100_000 + "]" * 100_000,
                        ["resize"], ["resize", None], ["resize", [1, 2]],
                        ["resize", {"width": "wide", "height": 30}],
                        ["resize", {"width": True, "height": False}],
                        ["resize", {"width": 1e308 * 10, "height": 30}],
                        ["resize", {"width": None}], ["stdin"], ["stdin", 5],
                        ["stdin", {"a": 1}], ["stdin", "\ud800"], ["ping"], ["blur", 1],
                        [None, None], [["nested"]], ["unknown", 1],
                    ]
                    for message in garbage:
                        if isinstance(message, str):
                            await ws.send_str(message)
                        else:
                            await ws.send_str(json.dumps(message))
                    await ws.send_bytes(b"\x00\xff binary")
                    await ws.send_json(["resize", {"width": 10**9, "height": "3"}])
                    await drawn_at(ws, (500, 10))
                    await ws.send_json(["resize", {"width": 90.0, "height": 25}])
                    await drawn_at(ws, (90, 25))
            await eventually(lambda: not followers(journal), 30, "the viewer ending")
    assert proc.poll() is None
    log = (tmp_path / "serve.log").read_text()
    assert "Traceback" not in log and "Error" not in log, log


def test_serve_on_ipv6_loopback(journal: Path, tmp_path: Path) -> None:
    """`--host '[::1]'` (as it is written in URLs) listens on ::1 and serves the viewer
    there. This machine must have ::1: the test fails, not skips, without it."""
    assert socket.has_ipv6, "this Python has no IPv6: the test needs ::1 on lo"
    with socket.socket(socket.AF_INET6) as probe:
        probe.bind(("::1", 0))  # OSError here: no ::1 on lo, which the test needs

    async def visit(port: int) -> None:
        me = f"http://[::1]:{port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{me}/") as page:
                assert page.status == 200
                assert f"ws://[::1]:{port}/ws" in await page.text()
            await refused_ws(http, f"ws://[::1]:{port}/ws", 403,
                             origin=f"http://127.0.0.1:{port}")
            async with http.ws_connect(f"ws://[::1]:{port}/ws?width=100&height=30",
                                       origin=me) as ws:
                await until_drawn(ws, lambda screen: b"Knobs" in screen)
                peer = ws.get_extra_info("peername")
                assert peer is not None and peer[0] == "::1"

    with serving(journal, tmp_path / "serve.log", host="::1") as (port, _proc):
        asyncio.run(visit(port))
    log = (tmp_path / "serve.log").read_text()
    assert f"at http://[::1]:{port}" in log


def test_the_public_url_is_the_page_the_browser_may_come_from(
    journal: Path, tmp_path: Path
) -> None:
    """Behind a name or proxy: --public-url is the allowed origin and host."""
    async def visit(port: int) -> None:
        public = f"http://knobtop.example:{port}"
        async with aiohttp.ClientSession() as http:
            url = f"ws://127.0.0.1:{port}/ws?width=100&height=30"
            host = f"knobtop.example:{port}"
            async with http.get(f"http://127.0.0.1:{port}/", headers={"Host": host}) as page:
                assert page.status == 200
                assert f"ws://knobtop.example:{port}/ws" in await page.text()
            await refused_ws(http, url, 403, origin=f"http://knobtop.example:{port + 1}",
                             host=host)
            await refused_ws(http, url, 403, origin="https://evil.example", host=host)
            async with http.ws_connect(url, origin=public, headers={"Host": host}) as ws:
                await until_drawn(ws, lambda screen: b"Knobs" in screen)

    port = free_port()
    with serving(journal, tmp_path / "serve.log", "--public-url",
                 f"http://knobtop.example:{port}", port=port):
        asyncio.run(visit(port))


@pytest.mark.parametrize("profile", ["x[/]", "[link=https://evil.example]click[/link]",
                                     "[bold red]boom", "\\[/]"])
def test_a_journal_profile_is_printed_as_text(journal: Path, tmp_path: Path,
                                              profile: str) -> None:
    lines = journal.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    header["profile"] = profile
    odd = tmp_path / "[bold]odd[link=x]<img src=x onerror=alert(1)>.knobtop.jsonl"
    odd.write_text(json.dumps(header) + "\n" + "".join(lines[1:]))
    with serving(odd, tmp_path / "serve.log") as (port, proc):
        deadline = time.monotonic() + 30
        while "following" not in (tmp_path / "serve.log").read_text():
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.1)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as page:
            html = page.read().decode()
    # The file name is the page's title: text, not HTML (aiohttp_jinja2 escapes it; this
    # guards against a textual-serve that stops doing so).
    assert "<img" not in html
    assert f"knobtop follow {html_escape(odd.name)}" in html
    log = (tmp_path / "serve.log").read_text()
    assert f"following {odd} (profile {profile}) at http://127.0.0.1:{port}" in log, log
    assert "Traceback" not in log and "MarkupError" not in log


@pytest.mark.parametrize(("args", "message"), [
    (["--max-viewers", "0"], "--max-viewers 0: give 1 or more"),
    (["--max-viewers", "-3"], "--max-viewers -3: give 1 or more"),
    (["--public-url", "knobtop.example:8000"], "--public-url 'knobtop.example:8000': give"),
    (["--public-url", "ftp://knobtop.example"], "--public-url 'ftp://knobtop.example': give"),
    (["--public-url", "http://[/]:99999"], "--public-url 'http://[/]:99999': give"),
])
def test_bad_serve_options_are_refused(journal: Path, args: list[str], message: str) -> None:
    result = knobtop("serve", str(journal), "--port", str(free_port()), *args)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr


async def test_serve_a_folder_follows_its_newest_journal(journal: Path, tmp_path: Path) -> None:
    """`knobtop serve DIR`: each viewer runs `knobtop follow DIR`, which shows the newest
    journal there (by its header's start, not its name)."""
    folder = tmp_path / "journals"
    folder.mkdir()
    lines = journal.read_text().splitlines(keepends=True)
    header = json.loads(lines[0])
    older = dict(header, started_wall=header["started_wall"] - 3600, profile="older")
    (folder / "z-older.knobtop.jsonl").write_text(json.dumps(older) + "\n")
    newest = folder / "a-newest.knobtop.jsonl"
    shutil.copyfile(journal, newest)
    samples = sum(isinstance(e, Sample) for e in JournalReader(newest))
    with serving(folder, tmp_path / "serve.log") as (port, proc):
        base = f"http://127.0.0.1:{port}"
        async with aiohttp.ClientSession() as http:
            async with http.get(f"{base}/") as page:
                assert page.status == 200
                assert f"knobtop follow {folder.name}" in await page.text()
            async with http.ws_connect(f"ws://127.0.0.1:{port}/ws?width=160&height=48",
                                       origin=base) as ws:
                await until_drawn(ws, lambda screen: f"{samples} samples".encode() in screen
                                  and newest.name.encode() in screen)
                assert len(followers(folder)) == 1
                await ws.send_json(["stdin", "q"])
                async with asyncio.timeout(30):
                    while not ws.closed:
                        msg = await ws.receive()
                        if msg.type in (aiohttp.WSMsgType.CLOSE, aiohttp.WSMsgType.CLOSED):
                            break
        await eventually(lambda: not followers(folder), 30, "knobtop follow ending after q")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(30) == 0
    log = (tmp_path / "serve.log").read_text()
    assert f"following the newest journal in {folder} at http://127.0.0.1:{port}" in log, log


class SlowViewer:
    """The app-service end of a download: answers each chunk request after ``delay`` s
    (a viewer starved on a busy machine), ``chunks`` then the empty end-of-file chunk."""

    def __init__(self, manager: object, chunks: list[bytes], delay: float) -> None:
        self.manager, self.chunks, self.delay = manager, [*chunks, b""], delay
        self.app_service_id = "viewer"

    async def send_meta(self, meta: dict[str, object]) -> bool:
        async def answer() -> None:
            await asyncio.sleep(self.delay)
            await self.manager.chunk_received(str(meta["key"]), self.chunks.pop(0))  # type: ignore[attr-defined]
        asyncio.get_running_loop().create_task(answer())
        return True


async def _download(deadline: float, delay: float) -> tuple[list[bytes], BaseException | None]:
    from knobtop.ui.serve import PatientDownloads
    manager = PatientDownloads(deadline)
    viewer = SlowViewer(manager, [b"<svg>", b"</svg>"], delay)
    await manager.create_download(app_service=viewer, delivery_key="k",  # type: ignore[arg-type]
                                  file_name="knobtop-shot.svg", open_method="download",
                                  mime_type="image/svg+xml")
    got: list[bytes] = []
    try:
        async for chunk in manager.download("k"):
            got.append(chunk)
    except Exception as e:  # the outcome is what the test looks at
        return got, e
    finally:
        assert "k" not in manager._active_downloads  # forgotten whatever happened
    return got, None


async def test_a_download_waits_for_a_slow_viewer_and_never_ends_cut_short() -> None:
    # Answers slower than textual-serve's own 4 s would still be within our deadline; in
    # proportion here: 0.3 s answers against a 1 s deadline arrive whole.
    got, error = await _download(deadline=1.0, delay=0.3)
    assert error is None and b"".join(got) == b"<svg></svg>"
    # A viewer that never answers in time: the download fails (the browser shows a failed
    # download) naming the file, instead of delivering what came so far as the whole file.
    got, error = await _download(deadline=0.2, delay=0.6)
    assert got == [] and error is not None
    assert "knobtop-shot.svg" in str(error) and "0.2 s" in str(error)


def test_the_viewer_reaping_reads_what_the_pinned_textual_serve_has() -> None:
    """FollowServer._reap reads textual-serve's AppService._process and ._task (its stop()
    sets _task to None): if a new textual-serve renames them, this says so."""
    import inspect

    from textual_serve.app_service import AppService

    source = inspect.getsource(AppService)
    assert "self._process: Process | None = None" in source
    assert "self._task = None" in inspect.getsource(AppService.stop)
