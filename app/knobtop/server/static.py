"""Static knobs: knobtop's drop-in file, restart, wait, verify, and roll back on failure."""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePath

from knobtop.errors import KnobtopError
from knobtop.hosts.base import Host, HostError
from knobtop.hosts.execfiles import SUDO, sudo_fix, wants_password
from knobtop.server.link import QUERY_TIMEOUT, ServerError, ServerLink

DROPIN_HEADER = (
    "# Written by knobtop: static knob changes of tuning experiments.\n"
    "# knobtop rewrites this file; remove it to return to the server's own settings.\n"
)
# What marks a file as knobtop's own: only such a file (or none) is ever rewritten.
DROPIN_MARK = DROPIN_HEADER.splitlines()[0]
NEW_DROPIN_MODE = 0o644
# On top of the steps' own limits (see ``RestartApplier.phase_limit``): the drop-in's
# file transfers and the steps' bookkeeping.
SETTLE = 5.0


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


@dataclass
class RestartApplier:
    """Applies static settings node by node: write the drop-in (the previous version
    is kept), restart with the node's command, wait until it answers and is healthy,
    verify every value.  If any of that fails on a node, that node's drop-in is
    restored, it is restarted again and verified, and the change stops there (nodes
    already done keep the new value and are named in the error).

    Every step has a deadline: the restart command and the wait share ``wait_timeout``
    (how long a node may be away), each query has ``query_timeout``, and one node's
    change, like its rollback, is cut off at ``phase_limit`` whatever hangs, so
    ``apply`` returns within ``time_limit``.
    """

    nodes: Sequence[ServerNode]
    on_step: Callable[[Step], None]
    wait_timeout: float = 300.0  # restart command + back and healthy, per node
    restart_timeout: float = 300.0  # the restart command alone (within wait_timeout)
    query_timeout: float = QUERY_TIMEOUT  # each health and verify query
    connect_timeout: float = 5.0  # the verify step's connect
    last_downtime: float | None = field(default=None, init=False)

    @property
    def phase_limit(self) -> float:
        """The most one node's change (drop-in, restart, wait, verify) or its rollback takes:
        the sum of what its steps may legitimately spend, so only a hang hits it."""
        return (
            3 * self.query_timeout  # the drop-in's stat, its chown, the verify query
            + self.wait_timeout  # the restart command and the wait until healthy
            + self.connect_timeout  # the verify connect
            + SETTLE  # reading and writing the drop-in, bookkeeping
        )

    @property
    def time_limit(self) -> float:
        """The most ``apply`` takes: every node's change and one rollback."""
        return (len(self.nodes) + 1) * self.phase_limit

    async def apply(self, settings: Mapping[str, str | None]) -> None:
        """``settings``: knob -> value, or None to drop knobtop's line for it."""
        done: list[str] = []
        for node in self.nodes:
            await check_sudo(node, self.query_timeout)  # before anything changes anywhere
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
        stage = "read"
        previous: str | None = None
        owner: FileOwner | None = None
        try:
            async with asyncio.timeout(self.phase_limit):
                previous, owner = await self._read_dropin(node)
                merged = parse_dropin(previous)
                for key, value in settings.items():
                    if value is None:
                        merged.pop(key, None)
                    else:
                        merged[key] = value
                stage = "write"

                def written() -> None:  # from here on a failure must restore the old file
                    nonlocal stage
                    stage = "written"

                await self._step(node, "write_dropin",
                                 self._write(node, render_dropin(merged), owner, written))
                stage = "restart"
                expected = {k: v for k, v in settings.items() if v is not None}
                await self._restart_and_check(node, expected)
                return
        except StaticChangeError as exc:
            if stage in ("read", "write"):  # the drop-in was not replaced
                raise StaticChangeError(f"{exc}; nothing was changed", rolled_back=True) from None
            reason = str(exc)
        except TimeoutError:
            if stage == "read":
                raise StaticChangeError(
                    f"{node.name}: cannot read the drop-in {node.dropin_path} within "
                    f"{self.phase_limit:g} s; nothing was changed", rolled_back=True) from None
            # Cut off mid-write or later: put the old file back whatever got done.
            reason = (f"{node.name}: the change did not finish within {self.phase_limit:g} s "
                      "(restart, wait and verify)")
        await self._rollback(node, previous, owner, settings, reason)

    async def _restart_and_check(self, node: ServerNode, expected: Mapping[str, str]) -> None:
        down = time.monotonic()
        deadline = down + self.wait_timeout
        await self._step(node, "restart", self._restart(node, deadline))
        await self._step(node, "wait", self._wait(node, deadline))
        self.last_downtime = time.monotonic() - down
        if expected:
            await self._step(node, "verify", self._verify(node, expected))

    async def _rollback(
        self,
        node: ServerNode,
        previous: str | None,
        owner: FileOwner | None,
        settings: Mapping[str, str | None],
        reason: str,
    ) -> None:
        started = time.monotonic()
        old = parse_dropin(previous)
        try:
            async with asyncio.timeout(self.phase_limit):
                await self._write(node, previous if previous is not None else render_dropin({}),
                                  owner)
                deadline = time.monotonic() + self.wait_timeout
                await self._restart(node, deadline)
                await self._wait(node, deadline)
                check = {k: old[k] for k in settings if k in old}
                if check:
                    await self._verify(node, check)
        except (StaticChangeError, TimeoutError) as exc:
            why = str(exc) if isinstance(exc, StaticChangeError) else (
                f"{node.name}: the rollback did not finish within {self.phase_limit:g} s")
            self.on_step(Step(node.name, "rollback", "failed", time.monotonic() - started, why))
            raise StaticChangeError(
                f"{reason}; the rollback failed too: {why}. The server may be "
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
        except asyncio.CancelledError:
            # The change's deadline (or the session closing) cut this step off.
            self.on_step(Step(node.name, name, "failed", time.monotonic() - started,
                              "cut off: the change ran out of time"))
            raise
        self.on_step(Step(node.name, name, "ok", time.monotonic() - started, message))

    def _cannot_use(self, node: ServerNode, why: object) -> StaticChangeError:
        return StaticChangeError(
            f"{node.name}: cannot use the drop-in {node.dropin_path} ({why}); make it "
            "readable and writable by this user, or set dropin_path in the profile",
            rolled_back=True,
        )

    async def _read_dropin(self, node: ServerNode) -> tuple[str | None, FileOwner | None]:
        """The drop-in's text and owner, None for a file that does not exist yet; a file
        knobtop did not write (not empty, no header) is refused: rewriting it would lose
        what it holds."""
        try:
            text = (await node.host.read_file(node.dropin_path, sudo=node.dropin_sudo)
                    ).decode(errors="replace")
        except FileNotFoundError:
            return None, None
        except (OSError, HostError) as exc:
            raise self._cannot_use(node, exc) from None
        if text and not text.startswith(DROPIN_MARK):  # an empty file has nothing to lose
            raise StaticChangeError(
                f"{node.name}: {node.dropin_path} is not knobtop's drop-in (it does not start "
                "with knobtop's header), so knobtop will not rewrite it: point dropin_path at "
                "a file knobtop owns, e.g. conf.d/zz-knobtop.cnf in a directory the server "
                "reads with !includedir",
                rolled_back=True,
            )
        return text, await self._owner(node)

    async def _owner(self, node: ServerNode) -> FileOwner:
        try:
            # -L: through a symlink, the file's mode and owner (a link's own are 0777/any)
            result = await node.host.run(
                node.argv("dropin_path", ["sh", "-c", 'stat -L -c "%a %u %g" -- "$1" && id -u',
                                          "sh", str(node.dropin_path)]),
                limit=self.query_timeout,
            )
            mode, uid, gid, me = result.stdout.split()
            owner = FileOwner(int(mode, 8), int(uid), int(gid))
            running_as = int(me)
        except HostError as exc:
            raise self._cannot_use(node, exc) from None
        except ValueError:
            raise self._cannot_use(
                node, f"cannot read its mode and owner: {result.stderr.strip()[-200:]}"
            ) from None
        if running_as not in (0, owner.uid):
            raise StaticChangeError(
                f"{node.name}: {node.dropin_path} belongs to uid {owner.uid} and knobtop runs "
                f"as uid {running_as} there: rewriting it would change its owner. Run knobtop "
                "as that user, or give the file to this one",
                rolled_back=True,
            )
        return owner

    async def _write(self, node: ServerNode, text: str, owner: FileOwner | None,
                     written: Callable[[], None] | None = None) -> str:
        """Replace the drop-in and give it back to ``owner``; ``written`` is called once
        the new file is in place (a failure after that leaves it changed)."""
        mode = owner.mode if owner is not None else NEW_DROPIN_MODE
        try:
            await node.host.write_file_atomic(node.dropin_path, text.encode(), mode,
                                              sudo=node.dropin_sudo)
            if written is not None:
                written()
            if owner is not None:
                # The new file is the writer's; hand it back (a no-op when that is its owner).
                result = await node.host.run(
                    node.argv("dropin_path", [
                        "sh", "-c", 'stat -L -c "%u %g" -- "$1" | grep -qx "$2 $3" || '
                        'chown "$2:$3" -- "$1"', "sh", str(node.dropin_path),
                        str(owner.uid), str(owner.gid)]),
                    limit=self.query_timeout,
                )
                if result.returncode != 0:
                    raise HostError(f"cannot give it back to {owner.uid}:{owner.gid}: "
                                    f"{result.stderr.strip()[-200:]}")
        except (OSError, HostError) as exc:
            raise self._cannot_use(node, exc) from None
        return str(node.dropin_path)

    async def _restart(self, node: ServerNode, deadline: float) -> str:
        limit = max(1.0, min(self.restart_timeout, deadline - time.monotonic()))
        try:
            result = await node.host.run(
                node.argv("restart_command", ["sh", "-c", node.restart_command]), limit=limit)
        except HostError as exc:
            raise StaticChangeError(f"{node.name}: restart failed: {exc}",
                                    rolled_back=False) from None
        if result.returncode != 0 and "restart_command" in node.sudo and wants_password(
                result.stderr):
            user = getattr(node.host, "user", "") or "the SSH user"
            raise StaticChangeError(sudo_fix(user, node.host.name, node.sudo_commands()),
                                    rolled_back=False)
        if result.returncode != 0:
            # Whole lines (the server's error lines verbatim), the last 2000 characters' worth.
            tail = output_tail((result.stderr or result.stdout).strip(), 2000)
            raise StaticChangeError(
                f"{node.name}: the restart command failed (exit {result.returncode}): "
                f"{shlex.quote(node.restart_command)}: {tail}",
                rolled_back=False,
            )
        return node.restart_command

    async def _wait(self, node: ServerNode, deadline: float) -> str:
        """Poll until the node answers and is healthy, each attempt cut off at ``deadline``
        (a server that accepts connections but never answers cannot hold it)."""
        detail = "no answer yet"
        while (remaining := deadline - time.monotonic()) > 0:
            link = node.link()
            try:
                async with asyncio.timeout(remaining):
                    await link.connect()
                    if node.healthy is None:
                        return "answers"
                    ok, detail = await node.healthy(link)
                    if ok:
                        return detail
            except ServerError as exc:
                detail = str(exc)
            except TimeoutError:
                detail = "connected, but no answer to the health check"
            finally:
                await link.close()
            await asyncio.sleep(min(0.25, max(0.0, deadline - time.monotonic())))
        raise StaticChangeError(
            f"{node.name}: not back within {self.wait_timeout:g} s of the restart ({detail})",
            rolled_back=False,
        )

    async def _verify(self, node: ServerNode, expected: Mapping[str, str]) -> str:
        link = node.link()
        try:
            try:
                async with asyncio.timeout(self.connect_timeout):
                    await link.connect()
            except TimeoutError:
                raise ServerError(f"no connection within {self.connect_timeout:g} s") from None
            got = await read_values(link, list(expected), timeout=self.query_timeout)
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
