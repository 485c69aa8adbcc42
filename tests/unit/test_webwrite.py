"""knobtop serve's viewers write each packet whole (ui.webwrite): two threads writing big
framed packets into a non-blocking pipe that a slow reader drains must not lose or mix a
byte (Textual's single os.write did, and a screenshot download ended cut short)."""

from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import threading
import time

from knobtop.ui.webwrite import whole_writer


def frame(kind: bytes, payload: bytes) -> bytes:
    return kind + len(payload).to_bytes(4, "big") + payload


def test_two_threads_big_packets_into_a_full_nonblocking_pipe_arrive_whole() -> None:
    read_fd, write_fd = os.pipe()
    flags = fcntl.fcntl(write_fd, fcntl.F_GETFL)
    fcntl.fcntl(write_fd, fcntl.F_SETFL, flags | os.O_NONBLOCK)  # as a full pipe refuses
    write = whole_writer(write_fd)
    sent = {kind: [bytes([n % 251]) * (70_000 + n * 977) for n in range(12)]
            for kind in (b"D", b"P")}
    got = bytearray()

    def reader() -> None:
        while True:
            time.sleep(0.002)  # slower than the writers: the pipe fills up
            chunk = os.read(read_fd, 16384)
            if not chunk:
                return
            got.extend(chunk)

    def writer(kind: bytes) -> None:
        for payload in sent[kind]:
            assert write(frame(kind, payload)) == len(payload) + 5

    threads = [threading.Thread(target=writer, args=(k,)) for k in sent]
    drain = threading.Thread(target=reader)
    drain.start()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    os.close(write_fd)
    drain.join(timeout=60)
    os.close(read_fd)
    received: dict[bytes, list[bytes]] = {b"D": [], b"P": []}
    at = 0
    while at < len(got):
        kind, size = bytes(got[at:at + 1]), int.from_bytes(got[at + 1:at + 5], "big")
        received[kind].append(bytes(got[at + 5:at + 5 + size]))
        at += 5 + size
    assert at == len(got)
    assert received == sent  # every packet whole, each thread's in its order


def test_harden_gives_a_web_driver_the_whole_writer_and_leaves_others() -> None:
    """The terminal's screen does not load Textual's web driver to ask (9 modules of the
    live screen's process); a WebDriver, whose module its app loaded to make it, is hardened."""
    import json

    code = ("import json, sys\n"
            "from knobtop.ui.webwrite import harden\n"
            "print(json.dumps([harden(object()), 'textual.drivers.web_driver' in sys.modules]))")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60, check=True)
    assert json.loads(run.stdout) == [False, False]

    from textual.drivers.web_driver import WebDriver

    from knobtop.ui.webwrite import harden

    driver = WebDriver.__new__(WebDriver)  # its own __init__ wants an app and stdout
    driver.fileno = 1
    assert harden(driver)
    assert driver._write.__qualname__.startswith("whole_writer")
