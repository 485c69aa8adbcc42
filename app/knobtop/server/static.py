"""Static knobs: knobtop's drop-in file, restart, wait, verify, and roll back on failure."""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

from knobtop.hosts.base import Host, HostError
from knobtop.server.link import ServerError, ServerLink

DROPIN_HEADER = (
    "# Written by knobtop: static knob changes of tuning experiments.\n"
    "# knobtop rewrites this file; remove it to return to the server's own settings.\n"
)


class StaticChangeError(RuntimeError):
    """A static change failed; ``rolled_back`` says whether the old state is back."""

    def __init__(self, message: str, *, rolled_back: bool) -> None:
        super().__init__(message)
        self.rolled_back = rolled_back


@dataclass(frozen=True)
class ServerNode:
    """One server that a static change restarts (several for a rolling restart)."""

    name: str
    host: Host
    link: Callable[[], ServerLink]  # a fresh, unconnected link to this node
    restart_command: str
    dropin_path: PurePath
    healthy: Callable[[ServerLink], Awaitable[tuple[bool, str]]] | None = None


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


async def read_values(link: ServerLink, names: Sequence[str]) -> dict[str, str | None]:
    rows = await link.query(
        f"SHOW GLOBAL VARIABLES WHERE Variable_name IN ({', '.join(['%s'] * len(names))})",
        list(names),
    )
    got = {str(k).lower(): None if v is None else str(v) for k, v in rows}
    return {n: got.get(n) for n in names}


@dataclass
class RestartApplier:
    """Applies static settings node by node: write the drop-in (the previous version
    is kept), restart with the node's command, wait until it answers and is healthy,
    verify every value.  If any of that fails on a node, that node's drop-in is
    restored, it is restarted again and verified, and the change stops there (nodes
    already done keep the new value and are named in the error)."""

    nodes: Sequence[ServerNode]
    on_step: Callable[[Step], None]
    wait_timeout: float = 180.0
    restart_timeout: float = 300.0
    last_downtime: float | None = field(default=None, init=False)

    async def apply(self, settings: Mapping[str, str | None]) -> None:
        """``settings``: knob -> value, or None to drop knobtop's line for it."""
        done: list[str] = []
        for node in self.nodes:
            try:
                await self._apply_node(node, settings)
            except StaticChangeError as exc:
                if done:
                    raise StaticChangeError(
                        f"{exc} (already changed, not rolled back: {', '.join(done)})",
                        rolled_back=exc.rolled_back,
                    ) from None
                raise
            done.append(node.name)

    async def _apply_node(self, node: ServerNode, settings: Mapping[str, str | None]) -> None:
        try:
            previous = await self._read_dropin(node)
        except StaticChangeError as exc:
            raise StaticChangeError(f"{exc}; nothing was changed", rolled_back=True) from None
        merged = parse_dropin(previous)
        for key, value in settings.items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        try:
            await self._step(node, "write_dropin", self._write(node, render_dropin(merged)))
        except StaticChangeError as exc:
            raise StaticChangeError(f"{exc}; nothing was changed", rolled_back=True) from None
        expected = {k: v for k, v in settings.items() if v is not None}
        try:
            await self._restart_and_check(node, expected)
        except StaticChangeError as exc:
            await self._rollback(node, previous, settings, str(exc))

    async def _restart_and_check(self, node: ServerNode, expected: Mapping[str, str]) -> None:
        down = time.monotonic()
        await self._step(node, "restart", self._restart(node))
        await self._step(node, "wait", self._wait(node))
        self.last_downtime = time.monotonic() - down
        if expected:
            await self._step(node, "verify", self._verify(node, expected))

    async def _rollback(
        self,
        node: ServerNode,
        previous: str | None,
        settings: Mapping[str, str | None],
        reason: str,
    ) -> None:
        started = time.monotonic()
        old = parse_dropin(previous)
        try:
            await self._write(node, previous if previous is not None else render_dropin({}))
            await self._restart(node)
            await self._wait(node)
            check = {k: old[k] for k in settings if k in old}
            if check:
                await self._verify(node, check)
        except StaticChangeError as exc:
            self.on_step(Step(node.name, "rollback", "failed", time.monotonic() - started,
                              str(exc)))
            raise StaticChangeError(
                f"{reason}; the rollback failed too: {exc}. The server may be "
                f"down: check it and {node.dropin_path} by hand",
                rolled_back=False,
            ) from None
        self.on_step(Step(node.name, "rollback", "ok", time.monotonic() - started,
                          "previous drop-in restored, server restarted with it"))
        raise StaticChangeError(f"{reason}; rolled back", rolled_back=True)

    async def _step(self, node: ServerNode, name: str, work: Awaitable[str]) -> None:
        started = time.monotonic()
        try:
            message = await work
        except StaticChangeError as exc:
            self.on_step(Step(node.name, name, "failed", time.monotonic() - started, str(exc)))
            raise
        self.on_step(Step(node.name, name, "ok", time.monotonic() - started, message))

    async def _read_dropin(self, node: ServerNode) -> str | None:
        try:
            return (await node.host.read_file(node.dropin_path)).decode(errors="replace")
        except FileNotFoundError:
            return None
        except (OSError, HostError) as exc:
            raise StaticChangeError(
                f"{node.name}: cannot use the drop-in {node.dropin_path} ({exc}); make it "
                "readable and writable by this user, or set dropin_path in the profile",
                rolled_back=True,
            ) from None

    async def _write(self, node: ServerNode, text: str) -> str:
        try:
            await node.host.write_file_atomic(node.dropin_path, text.encode(), 0o644)
        except (OSError, HostError) as exc:
            raise StaticChangeError(
                f"{node.name}: cannot use the drop-in {node.dropin_path} ({exc}); make it "
                "readable and writable by this user, or set dropin_path in the profile",
                rolled_back=True,
            ) from None
        return str(node.dropin_path)

    async def _restart(self, node: ServerNode) -> str:
        try:
            result = await node.host.run(
                ["sh", "-c", node.restart_command], limit=self.restart_timeout
            )
        except HostError as exc:
            raise StaticChangeError(f"{node.name}: restart failed: {exc}",
                                    rolled_back=False) from None
        if result.returncode != 0:
            tail = (result.stderr or result.stdout).strip()[-400:]
            raise StaticChangeError(
                f"{node.name}: the restart command failed (exit {result.returncode}): "
                f"{shlex.quote(node.restart_command)}: {tail}",
                rolled_back=False,
            )
        return node.restart_command

    async def _wait(self, node: ServerNode) -> str:
        deadline = time.monotonic() + self.wait_timeout
        detail = "no answer yet"
        while time.monotonic() < deadline:
            link = node.link()
            try:
                await link.connect()
                if node.healthy is None:
                    return "answers"
                ok, detail = await node.healthy(link)
                if ok:
                    return detail
            except ServerError as exc:
                detail = str(exc)
            finally:
                await link.close()
            await asyncio.sleep(0.25)
        raise StaticChangeError(
            f"{node.name}: not back within {self.wait_timeout:g} s ({detail})", rolled_back=False
        )

    async def _verify(self, node: ServerNode, expected: Mapping[str, str]) -> str:
        link = node.link()
        try:
            await link.connect()
            got = await read_values(link, list(expected))
        except ServerError as exc:
            raise StaticChangeError(f"{node.name}: cannot verify: {exc}",
                                    rolled_back=False) from None
        finally:
            await link.close()
        wrong = {k: got[k] for k, v in expected.items() if not same_value(v, got[k])}
        if wrong:
            shown = ", ".join(f"{k} is {v} (wanted {expected[k]})" for k, v in wrong.items())
            raise StaticChangeError(f"{node.name}: the value did not take: {shown}",
                                    rolled_back=False)
        return ", ".join(f"{k}={got[k]}" for k in expected)
