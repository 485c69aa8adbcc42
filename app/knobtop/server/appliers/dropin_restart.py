"""Static knobs: knobtop's drop-in file and a restart of the server nodes (server/static.py
does the steps: write, restart, wait, verify, and the rollback on failure)."""

from __future__ import annotations

import math
import shlex
from collections.abc import Callable, Mapping, Sequence
from pathlib import PurePosixPath

from knobtop.server.appliers.base import Outcome, Plan, PlannedKnob, planned
from knobtop.server.catalog import datadir_refusal
from knobtop.server.knobs import KnobError, KnobFacts, static_value
from knobtop.server.static import RestartApplier, ServerNode, StaticChangeError, Step


def short_command(command: str) -> str:
    """``command`` for a dialog line: each long absolute path shown as ``…/NAME`` (the lab's
    restart names its Python and its sandbox by path; the words say what runs)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return command
    return " ".join(f"…/{PurePosixPath(w).name}" if w.startswith("/") and len(w) > 24 else w
                    for w in words)


class DropinRestartApplier:
    """Plans a static change (the drop-in value checked, the datadir's pins, the restart to
    confirm) and applies it: one drop-in rewrite and one restart per node for every knob of
    the plan."""

    method = "dropin_restart"

    def __init__(self, nodes: Sequence[ServerNode], on_step: Callable[[Step], None]) -> None:
        self.nodes = tuple(nodes)
        self.restarter = RestartApplier(self.nodes, on_step=on_step) if self.nodes else None

    def expected_downtime(self) -> str:
        last = self.restarter.last_downtime if self.restarter else None
        if last is None:
            return "unknown until the first restart (a few seconds for a small server)"
        # Rounded up: a 0.4 s restart is not "about 0 s" of downtime.
        return f"about {math.ceil(last)} s per node (the last restart took {last:.1f} s)"

    def restart_plan(self) -> str:
        """What a static change will do, in words, for the confirmation dialog."""
        if not self.nodes:
            return "no restart command is configured"
        names = ", ".join(n.name for n in self.nodes)
        how = "one after another, each healthy before the next" if len(
            self.nodes) > 1 else "once"
        return (f"restarts {names} {how} with `{short_command(self.nodes[0].restart_command)}`"
                f"; downtime {self.expected_downtime()}")

    def check(self, facts: KnobFacts, raw: str, *, restart_ok: bool) -> PlannedKnob:
        """``raw`` for the static knob ``facts`` names: the drop-in value, or why it cannot
        go in (no restart configured, the value, the datadir's pin), or the restart that
        needs a yes first."""
        name = facts.name
        value: str | None = None
        problem: str | None = None
        try:
            value = static_value(facts, raw)
            problem = datadir_refusal(name, facts.value, value)
        except KnobError as exc:
            problem = str(exc)
        if not self.nodes:
            problem = (f"{name} is static (read-only at runtime) and this profile has no "
                       "restart_command and dropin_path; add them to change static knobs. "
                       "Nothing was changed")
        if problem is not None:
            return planned(name, raw, facts.value, refusal=problem)
        confirm = None if restart_ok else (
            f"{name} is static: changing it {self.restart_plan()}. Confirm to go ahead; "
            "nothing was changed")
        return planned(name, raw, facts.value, value, confirm=confirm)

    def pinned(self, facts: KnobFacts, raw: str) -> bool:
        """The existing datadir pins ``facts``' knob, and ``raw`` is not what it holds."""
        try:
            return datadir_refusal(facts.name, facts.value, static_value(facts, raw)) is not None
        except KnobError:
            return False  # the refusal names what is wrong with the value

    async def plan(self, changes: Mapping[str, str], *, restart_ok: bool = False,
                   facts: Mapping[str, KnobFacts] | None = None) -> Plan:
        """``facts``: the server's facts of every knob of ``changes`` (the session reads
        them, static where its catalog knows better)."""
        assert facts is not None, "the drop-in applier plans from facts already read"
        knobs = tuple(self.check(facts[n], raw, restart_ok=restart_ok)
                      for n, raw in changes.items())
        return Plan(self.method, knobs, restart=True,
                    nodes=tuple(n.name for n in self.nodes), words=self.restart_plan(),
                    pinned=any(self.pinned(facts[n], raw) for n, raw in changes.items()))

    def plan_of(self, changes: Mapping[str, tuple[str | None, str]],
                requested: Mapping[str, str]) -> Plan:
        """A plan for values already checked (knob: old, new): what revert to the baseline
        puts back, what a group change checked knob by knob; ``requested`` what was typed."""
        return Plan(self.method, tuple(
            planned(k, requested.get(k) or new, old, new) for k, (old, new) in changes.items()),
            restart=True, nodes=tuple(n.name for n in self.nodes), words=self.restart_plan())

    async def apply(self, plan: Plan) -> Outcome:
        """Every knob of the plan in the drop-in, one restart per node; ``new`` is left
        to the caller's read after the restart (the server may not be back)."""
        assert self.restarter is not None
        try:
            await self.restarter.apply({k: str(v) for k, v in plan.values().items()})
        except StaticChangeError as exc:
            return Outcome("failed", str(exc))
        return Outcome("ok")


__all__ = ["DropinRestartApplier", "short_command"]
