"""Reading global variables, and MariaDB's purge wait, on links of their own.

``global_values`` reads with SHOW GLOBAL VARIABLES (information_schema's table is gone
from MySQL 8.0 and off by default in 5.7).  ``purge_wait`` runs
``SET GLOBAL innodb_max_purge_lag_wait = N`` (MariaDB 10.5.7+), which blocks until the
history list is below N; on timeout or when asked to stop it is killed (KILL QUERY from a
second link) and waited for, so nothing is left running on the server.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from knobtop.server.link import ServerError, ServerLink

PURGE_WAIT = "innodb_max_purge_lag_wait"
POLL = 0.25  # seconds between checks of the deadline and the stop flag


async def global_values(link: ServerLink, names: Sequence[str]) -> dict[str, str | None]:
    """Each name's global value (None: no such variable, or NULL), on a connected link."""
    out: dict[str, str | None] = {}
    for name in names:
        rows = await link.query("SHOW GLOBAL VARIABLES LIKE %s", (name,))
        out[name] = next((None if value is None else str(value) for found, value in rows
                          if str(found).lower() == name.lower()), None)
    return out


@dataclass(frozen=True)
class PurgeWait:
    """How a purge wait ended: ``done``, ``timeout``, ``stopped``, ``refused`` (the server
    would not run it) or ``unreachable`` (no link to ask on)."""

    outcome: str
    seconds: float
    message: str = ""  # why it was refused or unreachable


async def purge_wait(make_link: Callable[[], ServerLink], below: int, timeout: float,
                     stopped: Callable[[], bool]) -> PurgeWait:
    """Wait (at most ``timeout`` s, or until ``stopped()``) for the history list to be
    below ``below``."""
    link = make_link()
    try:
        await link.connect()
        cid = (await link.query("SELECT CONNECTION_ID()"))[0][0]
    except ServerError as exc:
        await link.close()
        return PurgeWait("unreachable", 0.0, str(exc))
    began = time.monotonic()
    task = asyncio.create_task(link.query(f"SET GLOBAL {PURGE_WAIT} = %s", (int(below),)))
    try:
        deadline = began + timeout
        while not task.done() and time.monotonic() < deadline and not stopped():
            await asyncio.wait({task}, timeout=POLL)
        if not task.done():
            killer = make_link()
            try:
                await killer.connect()
                await killer.query(f"KILL QUERY {int(cid)}")
            except ServerError:
                pass  # the statement is cancelled below either way
            finally:
                await killer.close()
            with contextlib.suppress(Exception):
                async with asyncio.timeout(10):
                    await asyncio.wait({task})
            return PurgeWait("stopped" if stopped() else "timeout", time.monotonic() - began)
        try:
            task.result()
        except ServerError as exc:
            return PurgeWait("refused", time.monotonic() - began, str(exc))
        return PurgeWait("done", time.monotonic() - began)
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
        await link.close()


__all__ = ["PURGE_WAIT", "PurgeWait", "global_values", "purge_wait"]
