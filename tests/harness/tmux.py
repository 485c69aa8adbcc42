"""A private tmux server for tests: sessions, capture-pane, and a client attached on a pty.

Each ``TmuxServer`` runs on its own socket (``tmux -L NAME``) with its own config file, so
a test never sees or touches anyone else's tmux sessions, and ``kill()`` ends only the
server this test started (its sessions and panes with it).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import struct
import subprocess
import termios
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from signal import SIGCHLD

# The pane environment: no COLORTERM (a 256-colour terminal must not be taken for a
# truecolor one), no TMUX (this is not a nested tmux), and no COLUMNS or LINES: pytest-xdist
# sets them to 80 and 24 in its workers, and a Textual app takes them over the pane's size,
# so a resized pane would keep drawing at 80x24.
_DROP_ENV = ("COLORTERM", "TMUX", "TMUX_PANE", "COLUMNS", "LINES")


class TmuxServer:
    def __init__(self, binary: str, workdir: Path, config_lines: Sequence[str]) -> None:
        self.binary = binary
        self.socket = f"knobtop-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.config = workdir / "tmux.conf"
        self.config.write_text("".join(f"{line}\n" for line in config_lines))
        self.env = {k: v for k, v in os.environ.items() if k not in _DROP_ENV}
        self.clients: list[AttachedClient] = []

    def run(self, *args: str, check: bool = True, timeout: float = 30) -> str:
        result = subprocess.run(
            [self.binary, "-L", self.socket, "-f", str(self.config), *args],
            capture_output=True, text=True, env=self.env, timeout=timeout, check=False,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"tmux {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout

    def new_session(self, name: str, window: str, width: int, height: int,
                    command: Sequence[str], cwd: Path) -> None:
        self.run("new-session", "-d", "-s", name, "-n", window, "-x", str(width),
                 "-y", str(height), "-c", str(cwd), "--", *command)

    def new_window(self, target: str, window: str, command: Sequence[str], cwd: Path) -> None:
        self.run("new-window", "-d", "-t", f"{target}:", "-n", window, "-c", str(cwd),
                 "--", *command)

    def display(self, target: str, fmt: str) -> str:
        return self.run("display-message", "-p", "-t", target, fmt).rstrip("\n")

    def capture(self, target: str, *, escapes: bool = False) -> list[str]:
        """The visible screen of ``target``'s pane, one string per row."""
        args = ["capture-pane", "-p", "-t", target]
        if escapes:
            args.insert(1, "-e")
        return self.run(*args).rstrip("\n").split("\n")

    def wait_for(self, target: str, predicate: Callable[[list[str]], bool], timeout: float,
                 what: str) -> list[str]:
        """Poll capture-pane until ``predicate`` holds for the screen (bounded)."""
        deadline = time.monotonic() + timeout
        screen: list[str] = []
        while time.monotonic() < deadline:
            screen = self.capture(target)
            if predicate(screen):
                return screen
            time.sleep(0.2)
        raise AssertionError(
            f"{what}: not seen within {timeout:g} s; the pane shows:\n" + "\n".join(screen)
        )

    def exit_status(self, target: str, timeout: float) -> str:
        """Wait until the pane's process has exited; its status, or "signal N"."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            # pane_dead comes with the pty's end; the status once tmux has reaped it.
            dead, status, signal, server = self.display(
                target, "#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}|#{pid}"
            ).split("|")
            if dead == "1" and (status or signal):
                return status or f"signal {signal}"
            if dead == "1":
                # Debian's tmux is built with libutempter, which swaps in its own SIGCHLD
                # handler while it removes the pane's utmp record: a pane process that
                # exits just then is never reaped (tmux/tmux#311). Another SIGCHLD to
                # this test's own server makes it look again.
                os.kill(int(server), SIGCHLD)
            time.sleep(0.2)
        raise AssertionError(f"{target}: still running after {timeout:g} s; it shows:\n"
                             + "\n".join(self.capture(target)))

    def attach(self, session: str, width: int, height: int, term: str) -> AttachedClient:
        client = AttachedClient(self, session, width, height, term)
        self.clients.append(client)
        return client

    def kill(self) -> None:
        """End this test's tmux server (only its own socket) and any client attached."""
        for client in self.clients:
            client.close()
        socket_path = self.run("display-message", "-p", "#{socket_path}", check=False).strip()
        self.run("kill-server", check=False)
        if socket_path.endswith(f"/{self.socket}"):
            Path(socket_path).unlink(missing_ok=True)


class AttachedClient:
    """``tmux attach`` on a pseudo-terminal of a given size: keys written here go through
    tmux's own input parsing (escape-time included), as when a person types them."""

    def __init__(self, server: TmuxServer, session: str, width: int, height: int,
                 term: str) -> None:
        master, slave = os.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", height, width, 0, 0))
        self.master = master
        self.output = bytearray()
        self.process = subprocess.Popen(
            [server.binary, "-L", server.socket, "attach-session", "-t", session],
            stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
            env={**server.env, "TERM": term},
        )
        os.close(slave)
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        # tmux blocks once the pty buffer is full: keep reading what it draws.
        while True:
            try:
                data = os.read(self.master, 65536)
            except OSError:
                return
            if not data:
                return
            self.output.extend(data)

    def type(self, data: bytes) -> None:
        os.write(self.master, data)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
        with contextlib.suppress(OSError):
            os.close(self.master)
        self._reader.join(5)


SAMPLES = re.compile(r"(\d+) samples")


def samples_shown(screen: list[str]) -> int | None:
    """The sample count in the status bar (first row), when it fits on it."""
    m = SAMPLES.search(screen[0]) if screen else None
    return int(m.group(1)) if m else None


# What every test's tmux server is set to: a 256-colour terminal that is not truecolor, no
# status line (the pane is the whole window), dead panes kept to read their exit status;
# tmux's own defaults otherwise (escape-time included).
PANE_CONFIG = ("set -g default-terminal screen-256color", "set -g status off",
               "set -g remain-on-exit on")


def pane_server(workdir: Path) -> TmuxServer:
    """A tmux server of the test's own, set as users' panes are (see PANE_CONFIG)."""
    from harness.binaries import require_binary

    return TmuxServer(require_binary("tmux", "tmux"), workdir, PANE_CONFIG)


def open_lab(tmux: TmuxServer, where: Path, journal: Path, cwd: Path, *more: str,
             size: tuple[int, int] = (80, 24), timeout: float = 300) -> str:
    """`knobtop lab --dir WHERE --journal JOURNAL --load none --keep-running MORE` in a new
    pane of ``size`` (the real screen and session processes, as users run them), once its
    live screen shows; the pane's target."""
    import sys

    session = f"knobtop-{tmux.socket}"
    pane = f"{session}:lab"
    tmux.new_session(session, "lab", *size, [
        sys.executable, "-m", "knobtop", "lab", "--dir", str(where), "--journal",
        str(journal), "--load", "none", "--keep-running", *more], cwd=cwd)
    tmux.wait_for(pane, lambda s: "╭─ Knobs" in "\n".join(s), timeout=timeout,
                  what="the live screen")
    return pane


def first_hit(screen: list[str]) -> str | None:
    """The palette's first option under its search line."""
    rows = [row.strip() for row in screen]
    at = next((i for i, row in enumerate(rows) if row.startswith("🔎")), None)
    return next((row for row in rows[at + 1:] if row), None) if at is not None else None
