"""The pieces of a static change that are data: knobtop's drop-in (its header, parsing and
rendering), a server node and its sudo, one journaled step, value comparison and reading."""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from knobtop.errors import KnobtopError
from knobtop.hosts.base import Host, HostError
from knobtop.hosts.execfiles import SUDO, sudo_fix, wants_password
from knobtop.server.link import ServerLink

DROPIN_HEADER = (
    "# Written by knobtop: static knob changes of tuning experiments.\n"
    "# knobtop rewrites this file; remove it to return to the server's own settings.\n"
)
# What marks a file as knobtop's own: only such a file (or none) is ever rewritten.
DROPIN_MARK = DROPIN_HEADER.splitlines()[0]
NEW_DROPIN_MODE = 0o644


class StaticChangeError(KnobtopError, RuntimeError):
    """A static change failed; ``rolled_back`` says whether the old state is back."""

    def __init__(self, message: str, *, rolled_back: bool) -> None:
        super().__init__(message)
        self.rolled_back = rolled_back


@dataclass(frozen=True)
class FileOwner:
    """An existing drop-in's mode and owner, kept when knobtop rewrites it."""

    mode: int
    uid: int
    gid: int


@dataclass(frozen=True)
class ServerNode:
    """One server that a static change restarts (several for a rolling restart)."""

    name: str
    host: Host
    link: Callable[[], ServerLink]  # a fresh, unconnected link to this node
    restart_command: str
    dropin_path: PurePath
    healthy: Callable[[ServerLink], Awaitable[tuple[bool, str]]] | None = None
    # What goes through ``sudo -n`` on the node's host: "restart_command", "dropin_path".
    sudo: frozenset[str] = frozenset()
    error_log: PurePath | None = None  # its tail is journaled when the server is found down

    def argv(self, key: str, argv: Sequence[str]) -> list[str]:
        """``argv``, run through ``sudo -n`` when the profile says so for ``key``."""
        return [*(SUDO if key in self.sudo else ()), *argv]

    @property
    def dropin_sudo(self) -> bool:
        return "dropin_path" in self.sudo

    def sudo_commands(self) -> list[str]:
        """What knobtop runs there through sudo, for the fix line."""
        return [*([f"sh -c {shlex.quote(self.restart_command)}"]
                  if "restart_command" in self.sudo else []),
                *(["sh (the drop-in's read, write, stat and chown)"]
                  if self.dropin_sudo else [])]


async def check_sudo(node: ServerNode, limit: float = 15.0) -> None:
    """``sudo -n true`` on the node's host when the profile uses sudo there: a sudo that
    would ask for a password is named, with the fix, before anything is changed."""
    if not node.sudo:
        return
    try:
        result = await node.host.run([*SUDO, "true"], limit=limit)
    except HostError as exc:
        raise StaticChangeError(f"{node.name}: cannot check sudo: {exc}",
                                rolled_back=True) from None
    if result.returncode == 0:
        return
    user = getattr(node.host, "user", "") or "the SSH user"
    if wants_password(result.stderr):
        raise StaticChangeError(sudo_fix(user, node.host.name, node.sudo_commands()),
                                rolled_back=True)
    raise StaticChangeError(
        f"{node.name}: sudo -n true failed on {node.host.name} "
        f"(exit {result.returncode}: {result.stderr.strip()[-200:]}); install sudo there "
        "and give that user passwordless sudo, or set sudo = false in the profile",
        rolled_back=True)


@dataclass(frozen=True)
class Step:
    """One step of a static change, journaled as a ``restart`` event."""

    node: str
    step: str  # "write_dropin" | "restart" | "wait" | "verify" | "rollback"
    result: str  # "ok" | "failed"
    seconds: float
    message: str = ""


def parse_dropin(text: str | None) -> dict[str, str]:
    """The ``[mysqld]`` settings of a knobtop drop-in (other sections are not ours)."""
    out: dict[str, str] = {}
    section = ""
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            section = line[1:-1].strip().lower()
            continue
        if section == "mysqld" and "=" in line:
            key, _, value = line.partition("=")
            out[key.strip().replace("-", "_").lower()] = value.strip()
    return out


def render_dropin(settings: Mapping[str, str]) -> str:
    lines = [DROPIN_HEADER, "[mysqld]\n"]
    lines += [f"{key} = {value}\n" for key, value in sorted(settings.items())]
    return "".join(lines)


def same_value(expected: str, actual: str | None) -> bool:
    """Does the server's reading equal what was asked (ON/1, 256M/268435456, 90/90.000000)?"""
    if actual is None:
        return False
    a, b = expected.strip().upper(), actual.strip().upper()
    if a == b:
        return True
    truth = {"ON": "1", "TRUE": "1", "OFF": "0", "FALSE": "0"}
    if truth.get(a, a) == truth.get(b, b):
        return True
    try:
        return float(a) == float(b)
    except ValueError:
        return False


async def read_values(
    link: ServerLink, names: Sequence[str], *, timeout: float | None = None
) -> dict[str, str | None]:
    rows = await link.query(
        f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({', '.join(['%s'] * len(names))})",
        list(names),
        timeout=timeout,
    )
    got = {str(k).lower(): None if v is None else str(v) for k, v in rows}
    return {n: got.get(n) for n in names}


def output_tail(text: str, limit: int) -> str:
    """The last lines of ``text`` that fit in ``limit`` characters, each one whole (a
    single longer last line is cut at its start)."""
    lines = text.splitlines()
    kept: list[str] = []
    size = 0
    for line in reversed(lines):
        size += len(line) + 1
        if size > limit and kept:
            break
        kept.append(line if size <= limit else line[-limit:])
    return "\n".join(reversed(kept))


