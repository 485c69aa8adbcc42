"""The conditions probe of a session's server (server.conditions), from what the session
knows: its target host and link, the load's client hosts (one of them the target's own
machine in the lab), whether its built-in load runs from this machine, and a lab's storage
emulation (the probe runs behind the server's strace command, so it meets the same
delays)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from pathlib import Path

from knobtop.conditions import Conditions
from knobtop.hosts.base import Host
from knobtop.lab_storage import Storage
from knobtop.server.conditions import BOOT_ID, probe_conditions
from knobtop.server.link import ServerLink


async def session_conditions(host: Host, clients: tuple[Host, ...], link: Callable[[], ServerLink],
                             *, load_here: bool, storage: Storage | None) -> Conditions:
    """Measure on a new link; ``clients`` the hosts the load runs on (the target's own
    among them when it shares its CPUs), ``load_here`` the load runs in this process."""
    here: list[str] = []
    if load_here:
        with contextlib.suppress(OSError):
            here.append((await asyncio.to_thread(Path(BOOT_ID).read_text)).strip())
    storage = storage or Storage()
    server = link()
    await server.connect()
    try:
        return await probe_conditions(host, server, clients, client_boot_ids=here,
                                      wrapper=storage.wrapper(), emulated=storage.describe())
    finally:
        await server.close()


__all__ = ["session_conditions"]
