"""`knobtop serve` in a real headless browser (Debian's chromium driven by Playwright):
the live graphs update as the journal grows, a screenshot download arrives whole, and a
page from another origin can neither read the page nor open the viewer's websocket.

textual-serve's page draws the terminal on a canvas (xterm.js), so the test reads what the
page was sent (a hook on the page's WebSocket, installed before its scripts run) for the
numbers, and the rendered pixels (screenshots of the terminal) for the change on screen.
"""

from __future__ import annotations

import re
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from playwright.sync_api import Page, sync_playwright

from test_serve import RECORDED, followers, free_port, serving

pytestmark = pytest.mark.integration

CHROMIUM = Path("/usr/bin/chromium")  # Debian's; make test installs it (no browser download)
CSI = re.compile(r"\x1b\[[0-9;?<>=]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
# Everything the page's websockets receive, as text, in window.__screen.
HOOK = """
window.__screen = "";
const PageSocket = window.WebSocket;
window.WebSocket = class extends PageSocket {
  constructor(...args) {
    super(...args);
    this.addEventListener("message", (e) => {
      if (typeof e.data === "string") return;
      const add = (buf) => { window.__screen += new TextDecoder().decode(buf); };
      if (e.data.arrayBuffer) e.data.arrayBuffer().then(add); else add(e.data);
    });
  }
};
"""
# The foreign page: tries to read the served page and to open its websocket.
FOREIGN = """<!doctype html><title>elsewhere</title><script>
window.__result = {};
fetch("http://127.0.0.1:%(port)d/")
  .then((r) => r.text()).then((t) => { window.__result.fetch = "read " + t.length; })
  .catch((e) => { window.__result.fetch = "blocked: " + e; });
const ws = new WebSocket("ws://127.0.0.1:%(port)d/ws?width=80&height=24");
ws.binaryType = "arraybuffer";
ws.onopen = () => { window.__result.ws_open = true; };
ws.onmessage = () => { window.__result.ws_read = true; };
ws.onclose = (e) => { window.__result.ws = "closed " + e.code; };
</script>"""


def until(check: Callable[[], object], timeout: float, what: str) -> object:
    deadline = time.monotonic() + timeout
    while True:
        found = check()
        if found:
            return found
        assert time.monotonic() < deadline, f"{what}: not within {timeout:g} s"
        time.sleep(0.2)


def appending(path: Path, lines: list[bytes], every: float, stop: threading.Event) -> None:
    """Another knobtop writing its journal: one more line every ``every`` seconds."""
    for line in lines:
        if stop.wait(every):
            return
        with path.open("ab") as fh:
            fh.write(line)


@pytest.fixture
def live_journal(tmp_path: Path) -> Iterator[Path]:
    """The recorded lab journal, its first 60 lines at once and the rest as it grows."""
    lines = RECORDED.read_bytes().splitlines(keepends=True)
    path = tmp_path / "live.knobtop.jsonl"
    path.write_bytes(b"".join(lines[:60]))
    stop = threading.Event()
    writer = threading.Thread(target=appending, args=(path, lines[60:], 0.25, stop))
    writer.start()
    yield path
    stop.set()
    writer.join(10)


@pytest.fixture
def foreign_site() -> Iterator[tuple[int, dict[str, int]]]:
    """A second web server on another loopback port; ``target["port"]`` is the serve port
    its page reaches for."""
    target: dict[str, int] = {}

    class Page(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = (FOREIGN % target).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", free_port()), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1], target
    server.shutdown()
    server.server_close()


def samples_shown(page: Page) -> list[int]:
    text = CSI.sub("", page.evaluate("window.__screen"))
    return [int(n) for n in re.findall(r"(\d+) samples every", text)]


def test_serve_in_a_real_browser(live_journal: Path, tmp_path: Path,
                                 foreign_site: tuple[int, dict[str, int]]) -> None:
    assert CHROMIUM.exists(), "chromium is needed (make test installs the Debian package)"
    foreign_port, target = foreign_site
    with serving(live_journal, tmp_path / "serve.log") as (port, _proc), \
            sync_playwright() as play:
        target["port"] = port
        browser = play.chromium.launch(executable_path=str(CHROMIUM))
        try:
            context = browser.new_context(accept_downloads=True,
                                          viewport={"width": 1400, "height": 900})
            context.add_init_script(HOOK)
            page = context.new_page()
            page.goto(f"http://127.0.0.1:{port}/")
            terminal = page.locator(".textual-terminal")

            # The live graphs: the sample count the page shows grows, and so do the pixels.
            until(lambda: samples_shown(page), 90, "the first screen")
            before = terminal.screenshot()
            first = samples_shown(page)[-1]  # what was sent by the time of that picture
            until(lambda: samples_shown(page)[-1] > first + 3, 60,
                  "the sample count growing with the journal")
            # the screen itself changes, not only the stream
            until(lambda: terminal.screenshot() != before, 30, "the drawn screen changing")
            assert len(followers(live_journal)) == 1

            # A screenshot from the browser: S, and a whole SVG arrives as a download.
            page.locator(".xterm-helper-textarea").focus()  # keys, without clicking a panel
            with page.expect_download(timeout=60_000) as offered:
                page.keyboard.press("S")
            download = offered.value
            assert download.failure() is None
            assert re.fullmatch(r"knobtop-[0-9-]+\.svg", download.suggested_filename)
            svg = Path(download.path()).read_bytes()
            root = ET.fromstring(svg)  # a cut-short file is not well-formed XML
            assert root.tag.endswith("svg") and svg.rstrip().endswith(b"</svg>")
            text = svg.decode().replace("&#160;", " ")
            assert "Knobs" in text and "samples every" in text  # the panel and the status line
            assert not list(live_journal.parent.glob("*.svg"))  # nothing written here

            # A page from another origin: it can neither read the page nor the viewer.
            viewers = len(followers(live_journal))
            other = context.new_page()
            other.goto(f"http://127.0.0.1:{foreign_port}/")
            result = until(lambda: (r := other.evaluate("window.__result")).get("fetch")
                           and r.get("ws") and r, 30, "the foreign page's attempts")
            assert isinstance(result, dict)
            assert result["fetch"].startswith("blocked: TypeError"), result
            assert result["ws"].startswith("closed") and not result.get("ws_open"), result
            assert not result.get("ws_read")
            assert len(followers(live_journal)) == viewers  # no viewer started for it
        finally:
            browser.close()
    log = (tmp_path / "serve.log").read_text()
    for path in ("'/'", "'/ws'"):
        assert f"refused GET {path} from 127.0.0.1: Origin 'http://127.0.0.1:{foreign_port}' " \
            "is not this server's page" in log, log
    assert len(re.findall(r'"GET /download/\w+ HTTP/1.1" 200 ', log)) == 1
