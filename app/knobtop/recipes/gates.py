"""A recipe's waits before each measured step (``[wait]``), with the load stopped: the
history list (MariaDB's own purge wait where it has one, else the samples), dirty pages,
the checkpoint age; each journaled with how long it took or that it timed out.

The three gates of the samples are one table (``GATES``) read by one loop: the metric, the
goal and the progress in words, and the test of a fresh sample against the limit.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from knobtop.load.base import LoadError
from knobtop.server.variables import PURGE_WAIT

if TYPE_CHECKING:
    from knobtop.metrics.board import MetricBoard
    from knobtop.recipes.model import Recipe, Waits
    from knobtop.session.port import SessionPort

POLL = 0.25  # seconds between checks of a gate or the abort flag


def history_goal(below: float) -> str:
    """What a history gate waits for, in words: below N, or (0) an empty history."""
    return f"history length < {below}" if below else "history length 0"


class GateHost(Protocol):
    """What the gates use of the runner (RecipeRunner)."""

    recipe: Recipe
    warnings: list[str]

    @property
    def session(self) -> SessionPort: ...

    @property
    def board(self) -> MetricBoard | None: ...

    @property
    def aborted(self) -> bool: ...

    def status(self, state: str, waiting_for: str = "") -> None: ...

    def mark(self, label: str) -> None: ...

    def check(self) -> None: ...

    async def sleep(self, seconds: float) -> None: ...


@dataclass(frozen=True)
class Gate:
    """One wait on a sampled metric: ``key`` in the step's ``waits``."""

    key: str
    metric: str
    limit: Callable[[Waits], float | None]
    goal: Callable[[float], str]
    shown: Callable[[str], str]
    ok: Callable[[float, float], bool]


GATES = (
    # below = 0: until it is 0 (Callaghan's gate)
    Gate("history", "history_len", lambda w: w.history_below, history_goal,
         lambda v: f"history length {v}", lambda v, lim: v < lim or v <= 0),
    Gate("dirty", "dirty_pct", lambda w: w.dirty_pct_below, lambda lim: f"dirty pages <= {lim:g}%",
         lambda v: f"dirty {v}%", lambda v, lim: v <= lim),
    Gate("checkpoint", "checkpoint_age", lambda w: w.checkpoint_age_below,
         lambda lim: f"checkpoint age < {lim} B", lambda v: f"checkpoint age {v} B",
         lambda v, lim: v < lim),
)


class Gates:
    def __init__(self, host: GateHost) -> None:
        self.host = host
        self.purge_refused = False  # the server would not run its purge wait: poll

    async def before_step(self) -> dict[str, float]:
        """The recipe's waits before a measured step, with the load stopped: how long
        each took, by gate."""
        host = self.host
        waits = host.recipe.waits
        out: dict[str, float] = {}
        if not (waits.dirty_at_lwm or any(g.limit(waits) is not None for g in GATES)):
            return out  # (a plateau is waited for with the load running: not here)
        with contextlib.suppress(LoadError):
            await host.session.stop_load()
        for gate in GATES:
            limit = gate.limit(waits)
            if gate.key == "dirty" and waits.dirty_at_lwm:
                limit = await self._dirty_lwm()
            if limit is None:
                continue
            began = time.monotonic()
            if gate.key != "history" or not await self._purge_wait(int(limit)):
                await self._sampled(gate, limit)
            out[gate.key] = round(time.monotonic() - began, 2)
        return out

    async def _sampled(self, gate: Gate, limit: float) -> None:
        board = self.host.board
        assert board is not None
        since = board.samples

        def ok() -> bool:
            value = self._fresh(gate.metric, since)
            return value is not None and gate.ok(value, limit)

        await self.until(ok, gate.goal(limit), lambda: gate.shown(self._value(gate.metric)))

    async def until(self, ok: Callable[[], bool], what: str,
                    status: Callable[[], str]) -> bool:
        """Poll ``ok`` until true or the recipe's wait timeout; journal how it went."""
        host = self.host
        timeout = host.recipe.waits.timeout
        began = time.monotonic()
        while not ok():
            waited = time.monotonic() - began
            if waited >= timeout:
                host.mark(f"wait for {what} timed out after {waited:.0f} s ({status()}); "
                          "measuring anyway")
                return False
            host.status(f"waiting for {what}", status())
            await host.sleep(POLL)
        host.mark(f"waited {time.monotonic() - began:.1f} s for {what}")
        return True

    def _fresh(self, metric: str, since: int) -> float | None:
        """The metric from a sample taken after the wait began (never a stale one)."""
        board = self.host.board
        if board is None or board.samples <= since:
            return None
        return board.latest.get(metric)

    def _value(self, metric: str) -> str:
        board = self.host.board
        value = board.latest.get(metric) if board is not None else None
        return "?" if value is None else f"{value:,.1f}"

    async def _dirty_lwm(self) -> float:
        """innodb_max_dirty_pages_pct_lwm, or innodb_max_dirty_pages_pct when it is 0."""
        values = await self.host.session.global_values(
            ["innodb_max_dirty_pages_pct_lwm", "innodb_max_dirty_pages_pct"])
        lwm, top = values["innodb_max_dirty_pages_pct_lwm"], values["innodb_max_dirty_pages_pct"]
        value = float(lwm or 0)
        return value if value > 0 else float(top or 90)

    async def _purge_wait(self, below: int) -> bool:
        """MariaDB 10.5.7+: SET GLOBAL innodb_max_purge_lag_wait blocks until the history
        is below ``below``.  Killed (KILL QUERY) on timeout or abort.  False when the server
        has no such variable or refuses it (then the caller polls the samples)."""
        host = self.host
        catalog = host.session.state().catalog
        if self.purge_refused or catalog is None or not catalog.get(PURGE_WAIT).present:
            return False
        host.status("waiting for purge", f"{PURGE_WAIT} = {below}")
        waited = await host.session.wait_for_purge(below, host.recipe.waits.timeout,
                                                   lambda: host.aborted)
        if waited.outcome == "unreachable":
            return False
        if waited.outcome == "refused":  # the server will not run it: poll from now on
            self.purge_refused = True
            host.warnings.append(f"{PURGE_WAIT} refused ({waited.message}); polling instead")
            return False
        if waited.outcome in ("timeout", "stopped"):
            host.check()
            host.mark(f"wait for {history_goal(below)} ({PURGE_WAIT}) timed out after "
                      f"{waited.seconds:.0f} s; measuring anyway")
        else:
            host.mark(f"waited {waited.seconds:.1f} s for {history_goal(below)} "
                      f"({PURGE_WAIT})")
        return True


__all__ = ["GATES", "POLL", "Gate", "GateHost", "Gates", "history_goal"]
