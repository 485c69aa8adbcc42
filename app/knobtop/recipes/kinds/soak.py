"""``[run] kind = "soak"``: one arm held under one load for a long time, read at regular
checkpoints, to see whether anything drifts (TPS sagging as the checkpoint age, dirty pages
or the history list grow; a hit ratio that never settles).

``[soak]`` names the arm's knobs and how often to look: a checkpoint every ``every``
seconds through ``[load] duration`` (the hold), each reading ``metrics`` over the
``window`` seconds before it; the last one says what was still climbing or falling.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from knobtop.recipes.kinds.base import count, planned_steps
from knobtop.recipes.kinds.timeline import one_load_checks, run_one_load
from knobtop.recipes.model import Arm, Timeline

if TYPE_CHECKING:
    from knobtop.recipes.kinds.base import KindReader, LoadShape, Sequencer
    from knobtop.recipes.model import Recipe, Step
    from knobtop.tomlcheck import Table

SOAK_KEYS = ("knobs", "every", "metrics", "window")
MAX_CHECKPOINTS = 1000


class Soak:
    name: str = "soak"
    about: str = "one arm held under one load, read at regular checkpoints"
    section: str | None = "soak"
    keys: tuple[str, ...] = SOAK_KEYS
    one_load: bool = True
    planned: bool = True

    def read(self, reader: KindReader, doc: Table, load: LoadShape
             ) -> tuple[tuple[Arm, ...], Timeline | None]:
        p = "soak"
        one_load_checks(reader, doc, load, self.name)
        table = reader.table(doc, p)
        if table is None:
            raise reader.error(p, "missing [soak]", "add [soak] with every = 300 (a "
                               "checkpoint every 5 minutes) and the arm's knobs = {...}")
        reader.check_keys(table, SOAK_KEYS, p)
        hold = float(load.load.duration)
        every = reader.number(table, "every", p, lo=1.0, hi=hold, lo_open=False)
        if every is None:
            raise reader.error(f"{p}.every", "missing every",
                               f"give every = SECONDS between checkpoints, at most the "
                               f"{hold:g} s of [load] duration")
        count = int(hold // every)
        if count > MAX_CHECKPOINTS:
            raise reader.error(f"{p}.every", f"{count} checkpoints in {hold:g} s",
                               f"give every = {hold / MAX_CHECKPOINTS:g} or more (at most "
                               f"{MAX_CHECKPOINTS} checkpoints)")
        window = reader.number(table, "window", p, lo=1.0, hi=3600.0, lo_open=False)
        window = min(every, 60.0) if window is None else window
        if window > every:
            raise reader.error(f"{p}.window", f"a {window:g} s window is longer than the "
                               f"{every:g} s between checkpoints",
                               f"give window = {min(every, 60.0):g} or less")
        knobs = reader.knobs(table.get("knobs", {}), f"{p}.knobs")
        timeline = Timeline(start=knobs,
                            checkpoints=tuple(every * (i + 1) for i in range(count)),
                            metrics=reader.metric_names(table, p), window=window, actions=())
        return (Arm(self.name, dict(knobs)),), timeline

    def plan(self, recipe: Recipe) -> dict[str, Any]:
        timeline = recipe.timeline
        assert timeline is not None
        return {"kind": self.name, "checkpoints": list(timeline.checkpoints),
                "metrics": list(timeline.metrics), "actions": []}

    def schedule(self, recipe: Recipe) -> list[Step]:
        return planned_steps(recipe)

    def shape(self, recipe: Recipe) -> str:
        assert recipe.timeline is not None
        return f"soak: one load, {count(len(recipe.timeline.checkpoints), 'checkpoint')}"

    def readings(self, recipe: Recipe, done: int) -> tuple[int, str, float | None] | None:
        assert recipe.timeline is not None
        return len(recipe.timeline.checkpoints), "checkpoints", None

    async def run(self, runner: Sequencer, recipe: Recipe) -> None:
        await run_one_load(runner, recipe, self.name)


SOAK = Soak()

__all__ = ["SOAK", "SOAK_KEYS", "Soak"]
