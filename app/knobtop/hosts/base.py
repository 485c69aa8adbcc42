"""The one Host protocol: run a command, stream its lines, files, OS metrics."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Protocol, runtime_checkable

from knobtop.errors import BadValue, KnobtopError

# Cumulative CPU seconds per field, in this order, as ``Host.cpu_times`` returns them.
HOST_CPU_FIELDS: tuple[str, ...] = (
    "user",
    "nice",
    "system",
    "idle",
    "iowait",
    "irq",
    "softirq",
    "steal",
)


_HOST = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.-]*\Z")
_USER = re.compile(r"[A-Za-z0-9_.][A-Za-z0-9_.$-]*\Z")


def parse_destination(text: str) -> tuple[str | None, str, int | None]:
    """Split an SSH destination ``[ssh://][user@]host[:port]`` (``[v6]:port`` too, or an
    ssh-config alias) into (user, host, port); missing parts are None.

    Raises ``ValueError`` saying what is wrong.
    """
    text = text.removeprefix("ssh://")
    if not text:
        raise BadValue("empty destination")
    if any(ch.isspace() for ch in text):
        raise BadValue(f"destination {text!r} contains whitespace")
    user: str | None = None
    rest = text
    if "@" in text:
        user, _, rest = text.rpartition("@")
        if not user:
            raise BadValue(f"destination {text!r} has an empty user before '@'")
        if not _USER.match(user):
            raise BadValue(f"destination {text!r}: {user!r} is not a valid user name")
    port_text: str | None = None
    if rest.startswith("["):
        close = rest.find("]")
        if close < 0:
            raise BadValue(f"destination {text!r}: '[' without a closing ']'")
        host = rest[1:close]
        after = rest[close + 1 :]
        if after:
            if not after.startswith(":"):
                raise BadValue(f"destination {text!r}: unexpected {after!r} after ']'")
            port_text = after[1:]
        try:
            ipaddress.IPv6Address(host)
        except ValueError:
            raise BadValue(f"destination {text!r}: {host!r} is not an IPv6 address") from None
    elif rest.count(":") > 1:
        # A bare IPv6 address, as OpenSSH takes it: no port (brackets are needed for one).
        try:
            host = str(ipaddress.IPv6Address(rest))
        except ValueError:
            raise BadValue(
                f"destination {text!r}: not an IPv6 address; write [v6addr]:port"
            ) from None
    else:
        host, sep, port_part = rest.partition(":")
        if sep:
            port_text = port_part
        if not host:
            raise BadValue(f"destination {text!r} has no host")
        if not _HOST.match(host):
            raise BadValue(f"destination {text!r}: {host!r} is not a valid host name or alias")
    port: int | None = None
    if port_text is not None:
        if not port_text.isascii() or not port_text.isdigit():
            raise BadValue(f"destination {text!r}: port {port_text!r} is not a number")
        port = int(port_text)
        if not 1 <= port <= 65535:
            raise BadValue(f"destination {text!r}: port {port} is out of range 1-65535")
    return user, host, port


class HostError(KnobtopError, RuntimeError):
    """A host could not do what was asked; the message says which host and the fix."""


@dataclass(frozen=True, slots=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


@runtime_checkable
class RunningCommand(Protocol):
    """A started command whose output arrives line by line."""

    @property
    def pid(self) -> int | None: ...

    def lines(self) -> AsyncIterator[str]: ...

    async def stop(self, grace: float = 3.0) -> int | None: ...

    async def wait(self) -> int: ...

    @property
    def stderr_tail(self) -> str: ...


@runtime_checkable
class Host(Protocol):
    """Where commands run: this machine or an SSH destination."""

    name: str
    local: bool  # this machine: its facts and files are read directly
    # Called with ("down" | "up", reason) when the way to the host is lost or back.
    on_state: Callable[[str, str], None] | None

    async def run(self, argv: Sequence[str], *, limit: float = 60.0) -> CommandResult: ...

    async def stream(self, argv: Sequence[str]) -> RunningCommand: ...

    async def which(self, program: str) -> str | None: ...

    async def read_file(self, path: PurePath, *, sudo: bool = False) -> bytes: ...

    async def write_file_atomic(
        self, path: PurePath, data: bytes, mode: int = 0o600, *, sudo: bool = False
    ) -> None:
        """``sudo``: through ``sudo -n`` (an SSH host's profile says ``sudo = true``)."""
        ...

    def cpu_times(self) -> list[float]: ...

    def start_os_metrics(self, interval: float) -> None: ...

    def os_sample(self) -> list[float] | None:
        """Raw OS counters in ``procstat.OS_FIELDS`` order; None while unavailable."""
        ...

    async def close(self) -> None: ...
