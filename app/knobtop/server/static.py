"""Static knobs: knobtop's drop-in file, restart, wait, verify, and roll back on failure."""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from knobtop.hosts.base import HostError
from knobtop.hosts.execfiles import sudo_fix, wants_password
from knobtop.server import relink
from knobtop.server.dropin import (
    DROPIN_HEADER,
    DROPIN_MARK,
    NEW_DROPIN_MODE,
    FileOwner,
    ServerNode,
    StaticChangeError,
    Step,
    check_sudo,
    output_tail,
    parse_dropin,
    read_values,
    render_dropin,
    same_value,
)
from knobtop.server.link import QUERY_TIMEOUT, ServerError

# On top of the steps' own limits (see ``RestartApplier.phase_limit``): the drop-in's
# file transfers and the steps' bookkeeping.
SETTLE = 5.0

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
    # After the SSH link dropped mid-change (server/relink.py): tries to reach the host again,
    # and how long a server found not answering then is given to answer.
    reconnect_tries: int = 6
    settle_timeout: float = 30.0
    last_downtime: float | None = field(default=None, init=False)
    # Each remote node's error log as its server names it (read before its first change),
    # for the account after a dropped link when the server is then found down.
    _error_logs: dict[str, str] = field(default_factory=dict, init=False)

    @property
    def phase_limit(self) -> float:
        """The most one node's change (drop-in, restart, wait, verify) or its rollback takes:
        the sum of what its steps may legitimately spend, so only a hang hits it."""
        return (
            4 * self.query_timeout  # the drop-in's stat, its chown, the verify query, and
            # the link's check after (server/relink.py's link_dropped)
            + self.wait_timeout  # the restart command and the wait until healthy
            + self.connect_timeout  # the verify connect
            + SETTLE  # reading and writing the drop-in, bookkeeping
        )

    @property
    def time_limit(self) -> float:
        """The most ``apply`` takes: every node's change and one rollback."""
        return (len(self.nodes) + 1) * self.phase_limit + len(self.nodes) * self.relink_limit

    @property
    def relink_limit(self) -> float:
        """The most the account after a dropped link takes: the reconnect tries (with their
        pauses), reading the drop-in and the values, and a rollback."""
        return (self.reconnect_tries * (self.query_timeout + 5.0) + self.settle_timeout
                + self.phase_limit + SETTLE)

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
        drops = relink.drops_of(node)
        if not node.host.local and node.error_log is None and node.name not in self._error_logs:
            self._error_logs[node.name] = await self._find_error_log(node)
        stage, reason = "read", ""
        dropped: bool | None = None  # the link found gone (asked once: relink.link_dropped)
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
                stage = "done"
        except StaticChangeError as exc:
            # The drop-in was not replaced, unless the link dropped during the write: the
            # new file may be in place with its answer lost, so that is found out first.
            if stage == "write":
                dropped = await relink.link_dropped(node, drops, self.query_timeout)
            if stage == "read" or (stage == "write" and not dropped):
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
        if dropped is None:
            dropped = await relink.link_dropped(node, drops, self.query_timeout)
        if stage == "done":
            if dropped:  # every step said ok, over a link that went
                await self._relinked(node, previous, owner, settings, "")
            return
        if dropped:
            # What is in force is found out first: a restart may have happened or not.
            await self._relinked(node, previous, owner, settings, reason)
            return
        await self._rollback(node, previous, owner, settings, reason)

    async def _relinked(self, node: ServerNode, previous: str | None, owner: FileOwner | None,
                        settings: Mapping[str, str | None], reason: str) -> None:
        try:
            async with asyncio.timeout(self.relink_limit):
                await relink.reconcile(self, node, previous, owner, settings, reason)
        except TimeoutError:
            raise StaticChangeError(
                f"{reason or node.name}; after the SSH link dropped, finding out what is in "
                f"force did not finish within {self.relink_limit:g} s: check the server and "
                f"{node.dropin_path} on {node.host.name} by hand", rolled_back=False) from None

    async def _find_error_log(self, node: ServerNode) -> str:
        """``@@log_error`` (made absolute with ``@@datadir``), "" when the server logs to
        stderr or does not say within the query bounds (nothing depends on it)."""
        link = node.link()
        try:
            async with asyncio.timeout(self.connect_timeout + self.query_timeout):
                await link.connect()
                rows = await link.query("SELECT @@log_error, @@datadir",
                                        timeout=self.query_timeout)
        except (ServerError, TimeoutError):
            return ""
        finally:
            await link.close()
        path, datadir = (str(rows[0][0] or ""), str(rows[0][1] or "")) if rows else ("", "")
        return str(PurePosixPath(datadir) / path) if path and not path.startswith("/") else path

    def error_log(self, node: ServerNode) -> str:
        return str(node.error_log) if node.error_log is not None else (
            self._error_logs.get(node.name, ""))

    # What server/relink.py uses of the steps.
    async def wait_until(self, node: ServerNode, deadline: float, since: str) -> str:
        return await self._wait(node, deadline, since)

    async def write(self, node: ServerNode, text: str, owner: FileOwner | None) -> str:
        return await self._write(node, text, owner)

    async def rollback(self, node: ServerNode, previous: str | None, owner: FileOwner | None,
                       settings: Mapping[str, str | None], reason: str) -> None:
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

    async def _wait(self, node: ServerNode, deadline: float,
                    since: str = "") -> str:
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
            f"{node.name}: not back within {self.wait_timeout:g} s of the restart ({detail})"
            if not since else f"{node.name}: no answer {since} ({detail})",
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


__all__ = [
    "DROPIN_HEADER",
    "DROPIN_MARK",
    "NEW_DROPIN_MODE",
    "FileOwner",
    "RestartApplier",
    "ServerNode",
    "StaticChangeError",
    "Step",
    "check_sudo",
    "output_tail",
    "parse_dropin",
    "read_values",
    "render_dropin",
    "same_value",
]
