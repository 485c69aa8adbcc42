"""The one shape of a knob applier: a Plan of what will be done, then its Outcome.

``plan`` reads what it needs and checks every value once (type, range, what the server
nodes allow, the policy's class of each knob); nothing changes.  ``apply`` carries out a
plan that can go ahead and says what came of it.  A Plan crosses the session's process
boundary (the screen's confirmation dialogs read it), so it holds plain values only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

from knobtop.server.knobs import KnobFacts
from knobtop.server.policy import risk_of


@dataclass(frozen=True)
class PlannedKnob:
    """One knob of a plan: what was asked, what it holds now, what would be sent."""

    knob: str
    requested: str  # as typed
    old: str | None  # its value now (None: not known)
    value: int | float | str | None = None  # the checked value to send (None: refused)
    refusal: str | None = None  # why it cannot go in as asked; nothing is done
    confirm: str | None = None  # the restart that needs a yes first (asked without one)
    risk: str = ""  # server.policy's class: "" for a performance knob, else its reach kind

    @property
    def why_not(self) -> str | None:
        """What stops this knob: a refusal, or a restart not yet confirmed."""
        return self.refusal or self.confirm


def planned(knob: str, requested: str, old: str | None, value: int | float | str | None = None,
            *,
            refusal: str | None = None, confirm: str | None = None) -> PlannedKnob:
    """A PlannedKnob with the policy's class of ``knob``."""
    return PlannedKnob(knob, requested, old, value, refusal, confirm, risk_of(knob).kind)


@dataclass(frozen=True)
class Plan:
    """What an applier will do: its method, the knobs with their checked values, whether a
    restart happens and of which nodes (``words`` says it for a dialog), and warnings."""

    method: str  # "set_global" | "dropin_restart" | "ndb_rolling_restart"
    knobs: tuple[PlannedKnob, ...]
    restart: bool = False  # the server (or the data nodes) restart for it
    nodes: tuple[str, ...] = ()  # which restart, in order
    words: str = ""  # what the restart does, in words (the confirmation dialogs say it)
    pinned: bool = False  # the existing datadir pins a knob of it: no restart would help
    warnings: tuple[str, ...] = ()
    # The watched knobs' values before (set_global: what changed with it is found after).
    before: tuple[tuple[str, str | None], ...] = ()

    @property
    def ready(self) -> bool:
        """Every knob can go in as planned (no refusal, no restart left to confirm)."""
        return all(k.why_not is None for k in self.knobs)

    @property
    def refusal(self) -> str | None:
        """The first knob's reason it cannot go ahead (a refusal or a missing yes)."""
        return next((k.why_not for k in self.knobs if k.why_not is not None), None)

    @property
    def risks(self) -> dict[str, str]:
        """The reach variables of the plan and their kind (server.policy)."""
        return {k.knob: k.risk for k in self.knobs if k.risk}

    def values(self) -> dict[str, int | float | str]:
        """knob -> checked value, for the knobs that go in."""
        return {k.knob: k.value for k in self.knobs if k.value is not None}


@dataclass
class Outcome:
    """What applying a plan did: ``result`` is "ok", "unchanged" (it held that value
    already), "refused" (the server said no) or "failed"; ``new`` what each knob holds after
    (where read back); ``side_effects`` other watched knobs the server changed with it."""

    result: str
    message: str = ""
    new: dict[str, str | None] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    duration: float = 0.0
    side_effects: dict[str, list[str | None]] = field(default_factory=dict)


class Applier(Protocol):
    """Plans a change (every check, nothing changed) and applies a plan."""

    method: str

    async def plan(self, changes: Mapping[str, str], *, restart_ok: bool = False,
                   facts: Mapping[str, KnobFacts] | None = None) -> Plan: ...

    async def apply(self, plan: Plan) -> Outcome: ...


__all__ = ["Applier", "Outcome", "Plan", "PlannedKnob", "planned"]
