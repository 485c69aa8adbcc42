"""A recipe step's arm put in place on its server, only where the server differs: every
knob of the arm in one change (a static one costs one restart per arm visit); what the
server changed on its own with another arm's values (a side effect, such as
innodb_io_capacity_max raised with innodb_io_capacity) back to its baseline first; and the
server's values checked against the arm's plan before the step is measured."""

from __future__ import annotations

from typing import TYPE_CHECKING

from knobtop.errors import KnobtopError
from knobtop.server.knobs import KnobError, validate
from knobtop.server.static import same_value

if TYPE_CHECKING:
    from knobtop.recipes.model import Recipe, Step
    from knobtop.session.port import SessionPort


class ArmRefused(KnobtopError, RuntimeError):
    """An arm's knobs did not take (the server refused a value, or a restart with it
    failed and was rolled back)."""


class ArmSetter:
    def __init__(self, recipe: Recipe) -> None:
        self.recipe = recipe
        # Knobs the server changed on its own with an arm (a side effect), and their value
        # before: put back before every step of an arm that does not name them
        self.side: dict[str, str | None] = {}
        self.arm_side: dict[str, dict[str, str]] = {}  # arm -> its side effects' values
        self.step_knobs: dict[str, str | None] = {}  # as read before the step (journaled)

    async def apply(self, step: Step, session: SessionPort) -> None:
        """Put ``step``'s arm in place through ``session`` (its server's), the load
        stopped; ArmRefused when a knob does not take or the server differs after."""
        catalog = session.state().catalog
        assert catalog is not None
        reason = f"recipe {self.recipe.name}: arm {step.arm.name}"
        await self._reset_side_effects(step, session, reason)
        present = [k for k in step.arm.knobs if catalog.get(k).present]
        values = await session.global_values(present)
        todo: dict[str, str] = {}
        wanted: dict[str, str] = {}
        for knob, value in step.arm.knobs.items():
            facts = catalog.get(knob)
            try:
                wanted[knob] = str(validate(facts, value, static_ok=True))
            except KnobError:
                wanted[knob] = value
            if not same_value(wanted[knob], values.get(knob)):
                todo[knob] = value
        if todo:
            # All of the arm's static knobs go in through one restart.
            changes = await session.set_knobs(todo, restart_ok=True, reason=reason,
                                              reach=self.recipe.allow_reach)
            plan = self.arm_side.setdefault(step.arm.name, {})
            for change in changes:
                if not change.holds:
                    raise ArmRefused(f"arm {step.arm.name}: {change.knob} = "
                                     f"{change.requested} did not take: {change.message}")
                if change.new is not None:
                    wanted[change.knob] = change.new  # as the server took it (rounded ...)
                for knob, (old, new) in change.side_effects.items():
                    self.side.setdefault(knob, old)
                    if new is not None:
                        plan[knob] = new  # the server's own rule for this arm's values
        await self._check_plan(step, session, present, wanted)

    def side_plan(self, step: Step) -> dict[str, str]:
        """The side-effect knobs this arm does not name, and the value each should have
        under it: what the server set with this arm's own values, else the baseline."""
        plan = self.arm_side.get(step.arm.name, {})
        return {k: plan.get(k, base) for k, base in self.side.items()
                if k not in step.arm.knobs and base is not None}

    async def _reset_side_effects(self, step: Step, session: SessionPort, reason: str
                                  ) -> None:
        """What the server changed on its own with another arm (innodb_io_capacity_max
        raised with innodb_io_capacity) goes back to its baseline before this arm's knobs
        go in: then the arm's values meet the server as they would from the baseline (and
        the server's rule, if it applies, raises it again)."""
        wanted = self.side_plan(step)
        if not wanted:
            return
        now = await session.global_values(list(wanted))
        for knob, value in wanted.items():
            base = self.side[knob]
            if base is not None and not same_value(value, now.get(knob)) \
                    and not same_value(base, now.get(knob)):
                await session.set_knobs({knob: base}, restart_ok=False,
                                        reason=f"{reason}: back to the baseline",
                                        reach=self.recipe.allow_reach)

    async def _check_plan(self, step: Step, session: SessionPort, present: list[str],
                          wanted: dict[str, str]) -> None:
        """The server holds the arm's values before the step is measured (a change from
        outside, or one the server adjusted, leaves it unmeasured); the values read, side
        effects included, go into the step's journal line."""
        side = self.side_plan(step)
        values = await session.global_values([*present, *side])
        self.step_knobs = dict(values)
        wrong = [f"{k} = {values.get(k)}, not {want}"
                 for k, want in [*((k, wanted[k]) for k in present), *side.items()]
                 if not same_value(want, values.get(k))]
        if wrong:
            raise ArmRefused(f"arm {step.arm.name}: the server differs from the arm's plan "
                             f"({'; '.join(wrong)}): the step is not measured")


__all__ = ["ArmRefused", "ArmSetter"]
