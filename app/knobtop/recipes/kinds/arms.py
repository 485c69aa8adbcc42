"""``[run] kind = "arms"`` (the default): arms compared step by step.

Each ``[[arm]]`` is a set of knob values; the schedule (model.Recipe.schedule: replicates,
counterbalanced orders, thread levels) visits every arm at every thread count, and the
runner measures each step in a window of its own.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from knobtop.recipes.kinds.base import count, planned_steps

if TYPE_CHECKING:
    from knobtop.recipes.kinds.base import KindReader, LoadShape, Sequencer
    from knobtop.recipes.model import Arm, Recipe, Step, Timeline
    from knobtop.tomlcheck import Table


class Arms:
    name: str = "arms"
    about: str = "arms compared step by step"
    section: str | None = None
    keys: tuple[str, ...] = ()
    one_load: bool = False
    planned: bool = True

    def read(self, reader: KindReader, doc: Table, load: LoadShape
             ) -> tuple[tuple[Arm, ...], Timeline | None]:
        return reader.arms(doc.get("arm"), on_servers="targets" in doc), None

    def plan(self, recipe: Recipe) -> dict[str, Any]:
        return {}  # the plan's arms, threads and replicates are every kind's keys

    def schedule(self, recipe: Recipe) -> list[Step]:
        return planned_steps(recipe)

    def shape(self, recipe: Recipe) -> str:
        return (f"{count(len(recipe.arms), 'arm')} x "
                f"{count(len(recipe.threads), 'thread count')} x "
                f"{count(recipe.replicates, 'replicate')}")

    def readings(self, recipe: Recipe, done: int) -> tuple[int, str, float | None] | None:
        return None  # its steps

    async def run(self, runner: Sequencer, recipe: Recipe) -> None:
        await runner.run_arm_steps()


ARMS = Arms()

__all__ = ["ARMS", "Arms"]
