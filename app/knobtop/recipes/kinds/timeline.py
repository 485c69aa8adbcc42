"""``[run] kind = "timeline"``: one load from start to end, with changes at given times.

``[timeline]`` holds the knobs set before the load starts, the ``[[timeline.action]]``
changes made while it runs (at seconds from its start), and the checkpoints at which the
named metrics are read over the window before each.  The recipe runs as one arm of its
start knobs.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from knobtop.recipes.kinds.base import count, planned_steps
from knobtop.recipes.model import Action, Arm, Timeline
from knobtop.recipes.timeline import still_moving

if TYPE_CHECKING:
    from knobtop.recipes.kinds.base import KindReader, LoadShape, Sequencer
    from knobtop.recipes.model import Recipe, Step
    from knobtop.tomlcheck import Table

TIMELINE_KEYS = ("start", "checkpoints", "metrics", "window", "action")
ACTION_KEYS = ("at", "knobs", "keep_load")


def one_load_checks(reader: KindReader, doc: Table, load: LoadShape, kind: str) -> None:
    """A recipe that runs one load has no arms and one thread count."""
    if "arm" in doc:
        raise reader.error("arm", f"a {kind} recipe has no arms",
                           "its changes are [[timeline.action]] tables (at = SECONDS, knobs "
                           "= {...}); its starting knobs [timeline] start = {...}"
                           if kind == "timeline" else
                           f"its knobs are [{kind}] knobs = {{...}}")
    if len(load.threads) != 1:
        raise reader.error("load.threads", f"a {kind} runs one load: {len(load.threads)} "
                           "thread counts", "give one, e.g. threads = 8")


class TimelineKind:
    name: str = "timeline"
    about: str = "one load with actions at given times"
    section: str | None = "timeline"
    keys: tuple[str, ...] = TIMELINE_KEYS
    one_load: bool = True
    planned: bool = True

    def read(self, reader: KindReader, doc: Table, load: LoadShape
             ) -> tuple[tuple[Arm, ...], Timeline | None]:
        """``[timeline]`` (no arms, one thread count)."""
        p = "timeline"
        one_load_checks(reader, doc, load, self.name)
        table = reader.table(doc, p)
        if table is None:
            raise reader.error(p, "missing [timeline]",
                               "add [timeline] with checkpoints = [60, 300] and "
                               "[[timeline.action]] tables (see experiments/README.md)")
        reader.check_keys(table, TIMELINE_KEYS, p)
        duration = float(load.load.duration)
        checkpoints = reader.seconds_list(table, "checkpoints", p, duration)
        metrics = reader.metric_names(table, p)
        window = reader.number(table, "window", p, lo=1.0, hi=3600.0, lo_open=False)
        timeline = Timeline(start=reader.knobs(table.get("start", {}), f"{p}.start"),
                            checkpoints=checkpoints, metrics=metrics,
                            window=10.0 if window is None else window,
                            actions=tuple(sorted(self.actions(reader, table, duration),
                                                 key=lambda a: a.at)))
        return (Arm("timeline", dict(timeline.start)),), timeline

    @staticmethod
    def actions(reader: KindReader, table: Table, duration: float) -> list[Action]:
        """``[[timeline.action]]``: each a change at a time inside the load."""
        p = "timeline"
        raw = table.get("action", [])
        if not isinstance(raw, list):
            raise reader.wrong_type(f"{p}.action", "an array of tables ([[timeline.action]])",
                                    raw, "write each change as [[timeline.action]] with at "
                                    "and knobs")
        actions: list[Action] = []
        for i, item in enumerate(raw):
            q = f"{p}.action[{i}]"
            if not isinstance(item, dict):
                raise reader.wrong_type(q, "a table", item, "write [[timeline.action]]")
            reader.check_keys(item, ACTION_KEYS, q)
            at = reader.number(item, "at", q, lo=0.0, hi=duration, lo_open=False)
            if at is None or at >= duration:
                raise reader.error(f"{q}.at", "missing at" if at is None else
                                   f"{at:g} s is not inside the {duration:g} s timeline",
                                   f"give at = SECONDS from the load's start, below "
                                   f"{duration:g}")
            if "knobs" not in item:
                raise reader.error(f"{q}.knobs", "missing knobs",
                                   'add knobs = { innodb_buffer_pool_size = "512M" }')
            knobs = reader.knobs(item["knobs"], f"{q}.knobs")
            if not knobs:
                raise reader.error(f"{q}.knobs", "names no knob",
                                   'write knobs = { innodb_buffer_pool_size = "512M" }')
            actions.append(Action(at, knobs, bool(reader.boolean(item, "keep_load", q))))
        return actions

    def plan(self, recipe: Recipe) -> dict[str, Any]:
        timeline = recipe.timeline
        assert timeline is not None
        return {"kind": self.name, "checkpoints": list(timeline.checkpoints),
                "metrics": list(timeline.metrics),
                "actions": [{"at": a.at, "knobs": a.knobs, "keep_load": a.keep_load}
                            for a in timeline.actions]}

    def schedule(self, recipe: Recipe) -> list[Step]:
        return planned_steps(recipe)

    def shape(self, recipe: Recipe) -> str:
        assert recipe.timeline is not None
        return f"timeline: one load, {count(len(recipe.timeline.actions), 'action')}"

    def readings(self, recipe: Recipe, done: int) -> tuple[int, str, float | None] | None:
        assert recipe.timeline is not None
        return len(recipe.timeline.checkpoints), "checkpoints", None

    async def run(self, runner: Sequencer, recipe: Recipe) -> None:
        await run_one_load(runner, recipe, "timeline")


async def run_one_load(runner: Sequencer, recipe: Recipe, what: str) -> None:
    """One load for ``[load] duration`` seconds: the start knobs first, then the actions at
    their times (each in a task of its own, so a restart never delays a checkpoint), the
    checkpoints on schedule, and whether anything still moves."""
    timeline = recipe.timeline
    assert timeline is not None
    session = runner.session
    if timeline.start:
        runner.status("setting the start knobs")
        await runner.set_knobs(timeline.start, "start", keep_load=False)
    t0 = await runner.start_one_load(recipe.load_spec(recipe.threads[0], 0),
                                     float(recipe.load.duration))
    plan: list[tuple[float, int, Action | float]] = [
        *((a.at, 0, a) for a in timeline.actions),
        *((c, 1, c) for c in timeline.checkpoints)]
    tasks: list[asyncio.Task[None]] = []
    try:
        for at, _, item in sorted(plan, key=lambda p: (p[0], p[1])):
            await runner.countdown(t0 + at - session.now(), f"{what} at {at:g} s")
            if isinstance(item, Action):
                tasks.append(asyncio.create_task(act(runner, item)))
            else:
                runner.checkpoint(item, timeline)
        await runner.countdown(t0 + recipe.load.duration - session.now(), f"{what}: last part")
        for task in tasks:
            await task  # an action's failure is the run's (raised here)
    finally:
        for task in tasks:
            task.cancel()
    if runner.checkpoints:
        last = runner.checkpoints[-1]
        moving = still_moving(last.at, last.trends)
        runner.note(f"{what} {recipe.name}: {moving or 'every metric settled'}")


async def act(runner: Sequencer, action: Action) -> None:
    runner.mark(f"timeline action at {action.at:g} s: "
                + ", ".join(f"{k}={v}" for k, v in action.knobs.items()))
    if action.keep_load and runner.driver == "sysbench":
        runner.note(f"timeline action at {action.at:g} s keeps a sysbench load running: "
                    "if it restarts the server the load runs on, sysbench 1.0 will crash "
                    "reconnecting (use --driver builtin); an NDB data node restart is "
                    "fine")
    await runner.set_knobs(action.knobs, f"action at {action.at:g} s", action.keep_load)


TIMELINE = TimelineKind()

__all__ = ["ACTION_KEYS", "TIMELINE", "TIMELINE_KEYS", "TimelineKind", "one_load_checks",
           "run_one_load"]
