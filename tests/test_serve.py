"""`knobtop serve JOURNAL`: `knobtop follow JOURNAL` in a browser through textual-serve,
on loopback unless --public is given."""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import aiohttp
import pytest

from knobtop.cli import is_loopback_host
from knobtop.journal import JournalReader, Sample

RECORDED = Path(__file__).parent / "data" / "journals" / "lab-80s.knobtop.jsonl"
# Terminal escapes: CSI sequences, OSC strings, charset selection, any other ESC + char.
ANSI = re.compile(
    rb"\x1b(?:\[[0-9;?<>=$]*[ -/]*[@-~]|\][^\x07\x1b]*(?:\x07|\x1b\\)|[()][0-9A-B]|.)"
)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def knobtop(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "knobtop", *args], capture_output=True, text=True,
        timeout=timeout, env={**os.environ, "COLUMNS": "200"}, check=False,
    )


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


@pytest.fixture
def served(journal: Path, tmp_path: Path) -> Iterator[tuple[int, subprocess.Popen[bytes]]]:
    """`knobtop serve` on a free loopback port, answering HTTP (waited for, bounded)."""
    port = free_port()
    log = (tmp_path / "serve.log").open("wb")
    proc = subprocess.Popen(
        [sys.executable, "-m", "knobtop", "serve", str(journal), "--port", str(port)],
        stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            assert proc.poll() is None, (tmp_path / "serve.log").read_text()
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
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
        async with http.ws_connect(f"ws://127.0.0.1:{port}/ws?width=160&height=48") as ws:
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
        http.ws_connect(f"ws://127.0.0.1:{port}/ws?width=80&height=24") as ws,
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
        http.ws_connect(f"ws://127.0.0.1:{port}/ws?width=120&height=40") as ws,
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
    result = knobtop("serve", str(tmp_path))
    assert result.returncode == 2 and f"{tmp_path}: not a file" in result.stderr


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
