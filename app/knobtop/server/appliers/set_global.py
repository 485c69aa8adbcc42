"""Dynamic knobs: SET GLOBAL, read back, the warnings and what changed with it.

The variable name is interpolated only after it matched the server's own catalog; the
value is always sent as a bound parameter.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence

from knobtop.server.appliers.base import Outcome, Plan, PlannedKnob, planned
from knobtop.server.knobs import SEED_KNOBS, KnobError, KnobFacts, load_facts, valid_name, validate
from knobtop.server.link import ServerError, ServerLink


def checked(facts: KnobFacts, raw: str) -> PlannedKnob:
    """``raw`` for the dynamic knob ``facts`` names, checked (or refused with the reason)."""
    try:
        return planned(facts.name, raw, facts.value, validate(facts, raw))
    except KnobError as exc:
        return planned(facts.name, raw, facts.value, refusal=str(exc))


class SetGlobalApplier:
    """Applies a dynamic knob: plan (read its facts and the watched knobs', check the
    value), then SET GLOBAL, read back, surface warnings and side effects."""

    method = "set_global"

    def __init__(self, link: ServerLink, watched: Sequence[str] = SEED_KNOBS) -> None:
        self.link = link
        self.watched = tuple(watched)

    async def plan(self, changes: Mapping[str, str], *, restart_ok: bool = False,
                   facts: Mapping[str, KnobFacts] | None = None) -> Plan:
        """One knob, read from the server with the watched knobs; or, with ``facts``
        already read, each of ``changes`` checked against them (nothing read)."""
        if facts is not None:
            return Plan(self.method, tuple(checked(facts[n], raw) for n, raw in changes.items()))
        ((name, raw),) = changes.items()
        name = name.strip().lower()
        if not valid_name(name):
            return Plan(self.method, (planned(
                name, raw, None,
                refusal=f"'{name}' is not a server variable name; pick one from the knob panel"),))
        watched = tuple(dict.fromkeys((*self.watched, name)))
        before = await load_facts(self.link, watched)
        return Plan(self.method, (checked(before[name], raw),),
                    before=tuple((k, before[k].value) for k in watched))

    async def apply(self, plan: Plan) -> Outcome:
        ((knob,),) = (plan.knobs,)
        name, value = knob.knob, knob.value
        assert value is not None and knob.why_not is None, "apply a plan that is ready"
        start = time.monotonic()
        try:
            await self.link.query(f"SET GLOBAL {name} = %s", (value,))
            warnings = await self.link.warnings()
        except ServerError as exc:
            after = await self._read_back(name)
            reason = f"the server refused it: {exc}"
            if exc.code == 1238:
                reason = (f"{name} is read-only at runtime on this server (static): it needs "
                          "a restart; nothing was changed")
            return Outcome("refused", reason, {name: after},
                           duration=time.monotonic() - start)
        before = dict(plan.before)
        after_all = await load_facts(self.link, list(before))
        new = after_all[name].value
        side = {
            k: [old, after_all[k].value]
            for k, old in before.items()
            if k != name and old != after_all[k].value
        }
        message = ""
        if side:
            message = "also changed: " + ", ".join(f"{k} {a} -> {b}" for k, (a, b) in side.items())
        # Asked for what it held: journaled as such, not as a change (issue 37: a burst's
        # keys lost on the way applied 200 -> 200, and the journal said "ok").
        result = "ok" if side or new != knob.old else "unchanged"
        if result == "unchanged":
            message = f"{name} was {new} already: nothing changed"
        return Outcome(result, message, {name: new}, warnings, time.monotonic() - start, side)

    async def _read_back(self, name: str) -> str | None:
        try:
            return (await load_facts(self.link, [name]))[name].value
        except ServerError:
            return None


__all__ = ["SetGlobalApplier", "checked"]
