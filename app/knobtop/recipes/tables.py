"""The tables every arm of a recipe runs on, prepared once per shape before the first step:
one set per server, database shape, instance count and workload (an arm with another
engine or table options, or with instances, runs on databases of its own, said in the
journal); LinkBench's load phase timed as the seed's "load ips", with mysqld's footprint
before and after it for the load columns of the post's table."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Protocol, TypeVar

if TYPE_CHECKING:
    from knobtop.load.base import LoadSpec
    from knobtop.recipes.model import Arm, Recipe
    from knobtop.session.port import SessionPort

T = TypeVar("T")
TablesKey = tuple[str, str, int, str]


def tables_key(arm: Arm, spec: LoadSpec) -> TablesKey:
    """The tables an arm's load runs on: its server, database shape, instances, workload
    (prepared once each; LinkBench's load ips are per such set)."""
    return (arm.target, spec.schema, spec.instances, spec.workload)


class TableHost(Protocol):
    """What preparing the tables uses of the runner (RecipeRunner)."""

    recipe: Recipe

    @property
    def ports(self) -> Mapping[str, SessionPort]: ...

    def check(self) -> None: ...

    def mark(self, label: str) -> None: ...

    def status(self, state: str, waiting_for: str = "") -> None: ...

    async def abortable(self, coro: Awaitable[T]) -> T: ...


class Tables:
    def __init__(self) -> None:
        self.load_ips: dict[TablesKey, float] = {}  # LinkBench's load phase, per tables
        self.load_phase: dict[TablesKey, dict[str, float]] = {}  # its readings (footprint)

    async def prepare(self, host: TableHost) -> None:
        """The tables of every arm: one set per table shape and instance count (an arm
        with another engine or table options, or with instances, runs on databases of its
        own, said in the journal)."""
        done: set[tuple[str, str, int, str]] = set()
        for arm, spec in host.recipe.arm_specs():
            key = tables_key(arm, spec)
            if key in done:
                continue
            done.add(key)
            host.check()
            own = []
            if spec.schema:
                own.append(f"tables of their own ({spec.engine or 'default engine'}"
                           + (f", {spec.table_options_sql()}" if spec.table_options else "")
                           + f"; databases ending _{spec.schema})")
            if spec.instances > 1:
                own.append(f"{spec.instances} instances, each on its own database")
            if own and len(host.recipe.arms) > 1:
                host.mark(f"arm {arm.name}: {'; '.join(own)}")
            host.status(f"preparing tables for arm {arm.name}")
            port = host.ports[arm.target]
            port.use_load(spec)
            linkbench = spec.workload == "linkbench"
            # LinkBench's load phase has costs of its own in the post's table (issue 39):
            # mysqld's footprint before and after it
            before = await host.abortable(port.footprint(False)) if linkbench else None
            began = time.monotonic()
            loaded = await host.abortable(port.prepare_load())
            if loaded and linkbench:  # the seed's "load ips" (issue 20)
                from knobtop.load.linkbench import expected_rows
                from knobtop.metrics.footprint import load_phase

                # timed before counting the rows (seconds of Python at 10M ids)
                took = max(time.monotonic() - began, 1e-3)
                after = await host.abortable(port.footprint(True))
                rows = sum(expected_rows(spec.table_size))
                self.load_ips[key] = round(rows / took, 1)
                if before is not None:
                    self.load_phase[key] = load_phase(before, after, rows, took)
                host.mark(f"arm {arm.name}: LinkBench load phase, {rows:,} rows in "
                          f"{took:.1f} s ({rows / took:,.0f} inserts/s)")


__all__ = ["TableHost", "Tables", "TablesKey", "tables_key"]
