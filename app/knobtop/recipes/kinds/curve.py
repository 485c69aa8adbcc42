"""``[run] kind = "curve"``: one knob swept from..to in steps, a fixed probe timed at each.

``[curve]`` names the knob (a size: ``from``, ``to``, ``step`` in bytes or with K/M/G),
the probe (an allow-listed name of ``server.probes``, never SQL) with its integer
parameters, and the session status ``counters`` whose deltas each step reads.  The run
makes the probe's table once, then for each value sets the knob (one change, journaled),
runs the probe on a new connection (which takes the global value as its own) and journals
a ``Checkpoint`` of the value, the probe's seconds and the counters' deltas; at the end it
drops the probe's database and says at which value the first counter fell to 0 for good.
The runner puts the knob back to its baseline afterwards.  A curve has no [load]: the
probe is its only work.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

from knobtop.analysis.curve import QUERIES, SECONDS, size_name, zero_line
from knobtop.journal.events import Checkpoint
from knobtop.recipes.kinds.base import count, planned_steps
from knobtop.recipes.model import Arm, Curve, parse_bytes
from knobtop.server.probes import (
    PROBE_DATABASE,
    PROBES,
    ProbeError,
    check_counters,
    check_probe,
)

if TYPE_CHECKING:
    from knobtop.recipes.kinds.base import KindReader, LoadShape, Sequencer
    from knobtop.recipes.model import Recipe, Step, Timeline
    from knobtop.tomlcheck import Table

PROBE_PARAMS = tuple(dict.fromkeys(p.name for spec in PROBES.values() for p in spec.params))
CURVE_KEYS = ("knob", "from", "to", "step", "probe", *PROBE_PARAMS, "counters")
MAX_VALUES = 200
DEFAULT_COUNTERS = ("Sort_merge_passes",)


class CurveKind:
    name: str = "curve"
    about: str = "a knob swept in steps with a probe timed at each"
    section: str | None = "curve"
    keys: tuple[str, ...] = CURVE_KEYS
    one_load: bool = False
    planned: bool = True

    def read(self, reader: KindReader, doc: Table, load: LoadShape
             ) -> tuple[tuple[Arm, ...], Timeline | Curve | None]:
        p = "curve"
        if "arm" in doc:
            raise reader.error("arm", "a curve recipe has no arms",
                               "its values are [curve] from, to and step")
        table = reader.table(doc, p)
        if table is None:
            raise reader.error(p, "missing [curve]", 'add [curve] with knob = '
                               '"sort_buffer_size", from = "32K", to = "1M", step = "32K" '
                               'and probe = "order_by_offset" (see experiments/README.md)')
        reader.check_keys(table, CURVE_KEYS, p)
        knob_name = reader.string(table, "knob", p, '"sort_buffer_size"')
        if knob_name is None:
            raise reader.error(f"{p}.knob", "missing knob", 'add knob = "sort_buffer_size"')
        sizes = [self.size(reader, table, key) for key in ("from", "to", "step")]
        low, high, step = sizes
        if step == 0:
            raise reader.error(f"{p}.step", "a step of 0 bytes", 'give step = "32K"')
        if high < low:
            raise reader.error(f"{p}.to", f"to ({high}) is below from ({low})",
                               "give to at least from")
        count = (high - low) // step + 1
        if count > MAX_VALUES:
            raise reader.error(f"{p}.step", f"{count} values from {size_name(low)} to "
                               f"{size_name(high)}",
                               f"give step = {size_name(-(-(high - low) // (MAX_VALUES - 1)))}"
                               f" or more (at most {MAX_VALUES} values)")
        values = tuple(low + i * step for i in range(count))
        (knob,) = reader.knobs({knob_name: str(low)}, f"{p}.knob")
        probe = reader.string(table, "probe", p, f'"{next(iter(PROBES))}"')
        if probe is None or probe not in PROBES:
            raise reader.error(f"{p}.probe", "missing probe" if probe is None else
                               f"unknown probe {probe!r}",
                               "write probe = " + " or ".join(f'"{n}"' for n in PROBES)
                               + " (a probe is knobtop's code: its statements are fixed)")
        params = self.params(reader, table, probe)
        counters = self.counters(reader, table)
        try:
            check_probe(probe, params, counters)
        except ProbeError as exc:
            raise reader.error(p, str(exc), "correct the probe's parameters") from None
        curve = Curve(knob, values, probe, tuple(params.items()), counters)
        arms = tuple(Arm(size_name(v), {knob: str(v)}) for v in values)
        return arms, curve

    @staticmethod
    def size(reader: KindReader, table: Table, key: str) -> int:
        dotted = f"curve.{key}"
        if key not in table:
            raise reader.error(dotted, f"missing {key}", f'give {key} = "32K" (bytes, or '
                               "with K, M or G)")
        raw = table[key]
        if isinstance(raw, bool) or not isinstance(raw, int | str):
            raise reader.wrong_type(dotted, "a size", raw, f'write {key} = "32K"')
        try:
            return parse_bytes(raw)
        except ValueError as exc:
            raise reader.error(dotted, str(exc), f'write {key} = "32K" (bytes, or with K, '
                               "M or G)") from None

    @staticmethod
    def params(reader: KindReader, table: Table, probe: str) -> dict[str, int]:
        """The probe's own parameters, each required and in its range; another probe's
        are refused."""
        spec = PROBES[probe]
        own = {param.name for param in spec.params}
        for key in PROBE_PARAMS:
            if key in table and key not in own:
                raise reader.error(f"curve.{key}", f"probe {probe} takes no {key}",
                                   f"remove it (probe {probe} takes "
                                   f"{', '.join(p.name for p in spec.params)})")
        out: dict[str, int] = {}
        for param in spec.params:
            value = reader.integer(table, param.name, "curve", lo=param.lo, hi=param.hi)
            if value is None:
                raise reader.error(f"curve.{param.name}", f"missing {param.name}",
                                   f"give {param.name} = an integer in [{param.lo}, "
                                   f"{param.hi}] ({param.about})")
            out[param.name] = value
        return out

    @staticmethod
    def counters(reader: KindReader, table: Table) -> tuple[str, ...]:
        raw = table.get("counters", list(DEFAULT_COUNTERS))
        fix = 'write counters = ["Sort_merge_passes"] (session status counters)'
        if not isinstance(raw, list) or not raw \
                or not all(isinstance(c, str) for c in raw):
            raise reader.wrong_type("curve.counters", "a list of names", raw, fix)
        try:
            check_counters(raw)
        except ProbeError as exc:
            raise reader.error("curve.counters", str(exc), fix) from None
        if len(set(c.lower() for c in raw)) != len(raw):
            raise reader.error("curve.counters", "names a counter twice", fix)
        return tuple(raw)

    def plan(self, recipe: Recipe) -> dict[str, Any]:
        curve = recipe.curve
        assert curve is not None
        return {"kind": self.name, "knob": curve.knob, "values": list(curve.values),
                "probe": curve.probe, "params": curve.probe_params,
                "counters": list(curve.counters)}

    def schedule(self, recipe: Recipe) -> list[Step]:
        return planned_steps(recipe)

    def shape(self, recipe: Recipe) -> str:
        c = recipe.curve
        assert c is not None
        return (f"curve: {c.knob} at {count(len(c.values), 'value')} "
                f"({recipe.arms[0].name} to {recipe.arms[-1].name}), probe {c.probe}")

    def readings(self, recipe: Recipe, done: int) -> tuple[int, str, float | None] | None:
        """Its values; what is left is at least the pauses between the rest."""
        assert recipe.curve is not None
        total = len(recipe.curve.values)
        return total, "values", max(total - done - 1, 0) * recipe.pause

    async def run(self, runner: Sequencer, recipe: Recipe) -> None:
        curve = recipe.curve
        assert curve is not None
        session, params = runner.session, curve.probe_params
        runner.status(f"probe {curve.probe}: making its table")
        made = await session.probe(curve.probe, "setup", params)
        runner.mark(f"probe {curve.probe}: its table in database {PROBE_DATABASE} made in "
                    f"{made.seconds:.1f} s ({', '.join(f'{k} {v:,}' for k, v in params.items())})")
        began = session.now()
        try:
            for i, (value, arm) in enumerate(zip(curve.values, recipe.arms, strict=True)):
                runner.check()
                runner.status(f"{curve.knob} = {arm.name} ({i + 1}/{len(curve.values)})")
                await runner.set_knobs(arm.knobs, f"value {arm.name}", keep_load=False)
                runner.check()
                reading = await session.probe(curve.probe, "run", params, curve.counters)
                runner.checkpoints.append(session.record(
                    Checkpoint, recipe=recipe.name, at=round(session.now() - began, 3),
                    window=reading.seconds,
                    values={curve.knob: float(value), SECONDS: reading.seconds,
                            QUERIES: float(params.get("repeats", 1)), **reading.counters}))
                if recipe.pause and i + 1 < len(curve.values):
                    await runner.countdown(recipe.pause, "pausing")
        finally:
            runner.status(f"probe {curve.probe}: dropping its database")
            try:
                await session.probe(curve.probe, "drop", params)
            except Exception as exc:  # said; the run's own outcome stays
                with contextlib.suppress(Exception):
                    runner.mark(f"probe {curve.probe}: database {PROBE_DATABASE} could not "
                                f"be dropped: {exc}")
        runner.note(f"curve {recipe.name}: "
                    + zero_line(runner.checkpoints, curve.knob, curve.counters[0]))


CURVE = CurveKind()

__all__ = ["CURVE", "CURVE_KEYS", "CurveKind"]
