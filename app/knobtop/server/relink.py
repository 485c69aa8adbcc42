"""After the SSH link to a node dropped in the middle of a static change: reconnect (bounded
tries, each journaled), then read what the drop-in holds and what the server runs with, and
journal what is actually in force: the change completed, it was rolled back, or the server
is down (with its error log's tail). Without the link back, say exactly what could not be
verified and where the drop-in is."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from knobtop.hosts.base import HostError
from knobtop.printable import printable
from knobtop.server import dropin as static
from knobtop.server.dropin import FileOwner, ServerNode, Step
from knobtop.server.incident import log_line
from knobtop.server.link import ServerError

LOG_TAIL_BYTES = 4000  # of the error log, when the server is found down
LOG_TAIL_LINES = 8


class Applier(Protocol):
    """What of static.RestartApplier this uses (static imports this module)."""

    @property
    def on_step(self) -> Callable[[Step], None]: ...

    reconnect_tries: int
    settle_timeout: float
    query_timeout: float
    connect_timeout: float

    def error_log(self, node: ServerNode) -> str: ...

    async def wait_until(self, node: ServerNode, deadline: float, since: str) -> str: ...

    async def write(self, node: ServerNode, text: str, owner: FileOwner | None) -> str: ...

    async def rollback(self, node: ServerNode, previous: str | None, owner: FileOwner | None,
                       settings: Mapping[str, str | None], reason: str) -> None: ...


def _seen_to_drop(node: ServerNode, drops: int) -> bool:
    return getattr(node.host, "drops", 0) != drops or getattr(node.host, "connected", True) \
        is False


async def link_dropped(node: ServerNode, drops: int, limit: float) -> bool:
    """Did the node's SSH link drop since ``drops`` was read (``SshHost.drops``)? A link not
    seen to drop is asked once (``true``, within ``limit``): a connection whose far end died a
    moment ago (its sshd killed as the restart command answered) is only noticed when
    something goes over it, and a change must not say done, or roll back blind, over a link
    it has not heard from since. A node without a link (a local one) never drops."""
    if not hasattr(node.host, "drops"):
        return False
    if _seen_to_drop(node, drops):
        return True
    try:
        result = await node.host.run(["true"], limit=limit)
    except HostError:
        return True
    return result.returncode != 0 or _seen_to_drop(node, drops)


def drops_of(node: ServerNode) -> int:
    return int(getattr(node.host, "drops", 0))


def _shown(values: Mapping[str, str | None]) -> str:
    return printable(", ".join(f"{k}={'(none)' if v is None else v}"
                               for k, v in values.items()), newlines=False)


async def _reconnect(applier: Applier, node: ServerNode, reason: str) -> None:
    """Bounded tries to reach the node's host again, each one journaled; raises
    StaticChangeError naming what could not be verified when none succeeds."""
    started = time.monotonic()
    delay = 1.0
    for attempt in range(1, applier.reconnect_tries + 1):
        t0 = time.monotonic()
        try:
            result = await node.host.run(["true"], limit=applier.query_timeout)
            if result.returncode != 0:
                raise HostError(f"{node.host.name}: `true` failed (exit {result.returncode})")
        except HostError as exc:
            applier.on_step(static.Step(
                node.name, "reconnect", "failed", time.monotonic() - t0,
                f"attempt {attempt} of {applier.reconnect_tries}: {exc}"))
            if attempt < applier.reconnect_tries:
                await asyncio.sleep(delay)
                delay = min(delay * 2, 5.0)
            continue
        applier.on_step(static.Step(
            node.name, "reconnect", "ok", time.monotonic() - t0,
            f"the SSH link to {node.host.name} is back (attempt {attempt})"))
        return
    raise static.StaticChangeError(
        f"{reason}; the SSH link to {node.host.name} did not come back "
        f"({applier.reconnect_tries} attempts in {time.monotonic() - started:.0f} s), so "
        "knobtop could not verify which values the server runs with nor what its drop-in "
        f"holds: the drop-in is {node.dropin_path} on {node.host.name} (it may hold the new "
        f"settings; the version before this change is {node.dropin_path}.prev there). "
        "Check both there by hand",
        rolled_back=False)


async def _values(applier: Applier, node: ServerNode,
                  names: list[str]) -> tuple[dict[str, str | None] | None, str]:
    """The server's values of ``names`` once it answers (within ``settle_timeout``), or
    None and why not."""
    try:
        await applier.wait_until(node, time.monotonic() + applier.settle_timeout,
                                 f"within {applier.settle_timeout:g} s of the link coming back")
    except static.StaticChangeError as exc:
        return None, str(exc)
    link = node.link()
    try:
        async with asyncio.timeout(applier.connect_timeout + applier.query_timeout):
            await link.connect()
            return await static.read_values(link, names, timeout=applier.query_timeout), ""
    except (ServerError, TimeoutError) as exc:
        return None, str(exc) or "no answer"
    finally:
        await link.close()


async def _log_tail(applier: Applier, node: ServerNode) -> str:
    """The error log's last lines, redacted and printable as the incident page has them."""
    path = applier.error_log(node)
    if not path:
        return "its error log is not known here (the server did not name one)"
    try:
        result = await node.host.run(
            node.argv("dropin_path", ["tail", "-c", str(LOG_TAIL_BYTES), "--", path]),
            limit=15.0)
    except HostError as exc:
        return f"cannot read its error log {printable(path, newlines=False)}: {exc}"
    if result.returncode != 0:
        return (f"cannot read its error log {printable(path, newlines=False)}: "
                f"{printable(result.stderr.strip()[-200:], newlines=False)}")
    lines = [log_line(ln) for ln in result.stdout.split("\n") if ln.strip()][-LOG_TAIL_LINES:]
    return "\n".join(lines) or f"{printable(path, newlines=False)} is empty"


async def reconcile(
    applier: Applier,
    node: ServerNode,
    previous: str | None,
    owner: FileOwner | None,
    settings: Mapping[str, str | None],
    reason: str,
) -> None:
    """Journal what is in force after the link came back, and put things in order: returns
    when the change completed; raises StaticChangeError (``rolled_back`` true when the old
    values are in force again) otherwise. ``reason``: how the change ended, "" when all its
    steps said ok."""
    why = reason or f"{node.name}: the SSH link to {node.host.name} dropped during the change"
    await _reconnect(applier, node, why)
    started = time.monotonic()
    try:
        text: str | None = (await node.host.read_file(
            node.dropin_path, sudo=node.dropin_sudo)).decode(errors="replace")
    except FileNotFoundError:
        text = None
    except (OSError, HostError) as exc:
        raise static.StaticChangeError(
            f"{why}; the link came back but the drop-in {node.dropin_path} cannot be read "
            f"({exc}): check it there by hand", rolled_back=False) from None
    held = static.parse_dropin(text)
    old = static.parse_dropin(previous)
    expected = {k: v for k, v in settings.items() if v is not None}
    dropin_new = all(held.get(k) == v for k, v in expected.items()) and not any(
        k in held for k, v in settings.items() if v is None)
    names = list(expected) or list(settings)
    values, down = await _values(applier, node, names)
    if values is None:
        tail = await _log_tail(applier, node)
        applier.on_step(static.Step(
            node.name, "reconcile", "failed", time.monotonic() - started,
            f"the server is down after the link came back: {down}. Its error log ends:\n"
            f"{tail}"))
        # The old drop-in back, restarted, verified (or said why not).
        await applier.rollback(node, previous, owner, settings, why)
        return
    # Lines only dropped (no value to compare): what the drop-in holds is the answer.
    in_force = all(static.same_value(v, values.get(k)) for k, v in expected.items()) \
        if expected else dropin_new
    found = _shown({k: values.get(k) for k in names})
    if in_force and dropin_new:
        applier.on_step(static.Step(
            node.name, "reconcile", "ok", time.monotonic() - started,
            f"found {found} in force after the link came back; the change completed"))
        return
    if in_force:
        # The server runs with the new values but its drop-in does not hold them: the next
        # restart would lose them. Nothing is rewritten behind anyone's back; said instead.
        applier.on_step(static.Step(
            node.name, "reconcile", "failed", time.monotonic() - started,
            f"found {found} in force after the link came back, but {node.dropin_path} does "
            "not hold it"))
        raise static.StaticChangeError(
            f"{why}; found {found} in force, but the drop-in {node.dropin_path} does not "
            "hold it: a restart would lose it. Check that file by hand", rolled_back=False)
    # The old values are in force: the restart did not happen (or did not take).
    restored = ""
    if text != previous and held != old:
        try:
            await applier.write(node, previous if previous is not None
                                else static.render_dropin({}), owner)
        except static.StaticChangeError as exc:
            applier.on_step(static.Step(node.name, "reconcile", "failed",
                                        time.monotonic() - started, str(exc)))
            raise static.StaticChangeError(
                f"{why}; found {found} in force after the link came back, but the previous "
                f"drop-in could not be put back: {exc}", rolled_back=False) from None
        restored = "; the previous drop-in was put back"
    applier.on_step(static.Step(
        node.name, "reconcile", "ok", time.monotonic() - started,
        f"found {found} in force after the link came back; rolled back{restored}"))
    raise static.StaticChangeError(f"{why}; found {found} in force: rolled back",
                                   rolled_back=True)


__all__ = ["drops_of", "link_dropped", "reconcile"]
