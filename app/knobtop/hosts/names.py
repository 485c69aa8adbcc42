"""Host names resolved before an SSH connection, fast and with the fix (issue 40).

A name that does not resolve used to fail only when asyncssh's own connect gave up (32 s
with a resolver that does not answer) as "Name or service not known; is sshd running
there?". Here the name is looked up first, in a thread of its own bounded by
RESOLVE_LIMIT (getaddrinfo cannot be cancelled: a daemon thread is left to finish on its
own, so neither the event loop's executor nor the process's exit waits for it), and a
failure names the name, where it came from (the profile's file and line, the ssh config's
HostName) and what to check.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import re
import socket
import threading
from pathlib import Path

from knobtop.hosts.base import HostError

RESOLVE_LIMIT = 2.5  # seconds; a resolver answers a name it knows in milliseconds
RESOLV_CONF = Path("/etc/resolv.conf")


def is_address(name: str) -> bool:
    try:
        ipaddress.ip_address(name.strip("[]"))
    except ValueError:
        return False
    return True


def nameservers(conf: Path = RESOLV_CONF) -> list[str]:
    """The DNS servers /etc/resolv.conf lists (for the message), or []."""
    try:
        text = conf.read_text(errors="replace")
    except OSError:
        return []
    return re.findall(r"^\s*nameserver\s+(\S+)", text, re.M)


def config_line(paths: list[Path], alias: str, hostname: str) -> str:
    """" (HostName in ~/.ssh/config line 12, for Host db1)": where an ssh config turned
    ``alias`` into ``hostname``, or ""."""
    for path in paths:
        try:
            lines = path.expanduser().read_text(errors="replace").splitlines()
        except OSError:
            continue
        for number, line in enumerate(lines, start=1):
            words = line.split("#", 1)[0].replace("=", " ").split()
            if len(words) == 2 and words[0].lower() == "hostname" and words[1] == hostname:
                return f"HostName in {path} line {number}, for Host {alias}"
    return ""


def _lookup(name: str, port: int, done: asyncio.Future[None],
            loop: asyncio.AbstractEventLoop) -> None:
    def settle(exc: BaseException | None) -> None:
        if done.done():
            return
        if exc is None:
            done.set_result(None)
        else:
            done.set_exception(exc)

    try:
        socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        found: BaseException | None = exc
    else:
        found = None
    with contextlib.suppress(RuntimeError):  # the loop closed while the resolver waited
        loop.call_soon_threadsafe(settle, found)


async def check_resolves(name: str, port: int, origin: str, *,
                         limit: float = RESOLVE_LIMIT) -> None:
    """Raise HostError naming ``name``, ``origin`` and the fix unless ``name`` resolves
    within ``limit`` seconds; an address literal passes at once."""
    if is_address(name):
        return
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()
    threading.Thread(target=_lookup, args=(name, port, done, loop), daemon=True,
                     name=f"resolve {name}").start()
    said = f" ({origin})" if origin else ""
    try:
        async with asyncio.timeout(limit):
            await done
    except socket.gaierror as exc:
        if exc.errno == socket.EAI_AGAIN:
            servers = ", ".join(nameservers()) or "none listed"
            raise HostError(
                f"host name {name!r}{said} cannot be looked up now: {exc.strerror} (DNS "
                f"servers in {RESOLV_CONF}: {servers}). Check that one is reachable from "
                f"this machine (`getent hosts {name}`), or write the IP address"
            ) from None
        raise HostError(
            f"host name {name!r}{said} does not resolve: {exc.strerror}. Check its "
            f"spelling there; `getent hosts {name}` on this machine must print an address "
            "(add it to /etc/hosts or DNS, or write the IP address instead)"
        ) from None
    except TimeoutError:
        servers = ", ".join(nameservers()) or "none listed"
        raise HostError(
            f"host name {name!r}{said}: no answer from the resolver within {limit:g} s "
            f"(DNS servers in {RESOLV_CONF}: {servers}). Check that a DNS server is "
            "reachable from this machine (`getent hosts NAME`), or write the IP address"
        ) from None
    except OSError as exc:
        raise HostError(f"host name {name!r}{said} cannot be looked up: {exc}") from None


__all__ = ["RESOLVE_LIMIT", "check_resolves", "config_line", "is_address", "nameservers"]
