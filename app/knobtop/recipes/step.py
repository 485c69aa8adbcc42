"""One measured step of a recipe of arms: gates, load, warmup, plateau, window, result.

With the step's arm in place (the runner's sequencer did that), :class:`StepMeasure`

1. waits on the recipe's gates with the load stopped (gates.py);
2. starts the load at the step's threads and runs the warmup, then (``plateau``) waits for
   a steady TPS;
3. measures ``duration`` seconds: a window of the running load (with the driver's report
   for its last second, which may come a moment after), or (``[run] timed``) a load of its
   own that ends by itself with the driver's summary;
4. stops the load, journals the ``StepResult`` and pauses.
"""

from __future__ import annotations

import contextlib
import time
from typing import TYPE_CHECKING, Any, Protocol

from knobtop.journal.events import Phase, StepResult
from knobtop.load.base import LoadError
from knobtop.recipes.gates import POLL
from knobtop.recipes.tables import tables_key
from knobtop.recipes.window import detector, plateau_text

if TYPE_CHECKING:
    from knobtop.metrics.board import MetricBoard
    from knobtop.metrics.footprint import Footprint
    from knobtop.recipes.armset import ArmSetter
    from knobtop.recipes.gates import Gates
    from knobtop.recipes.model import Recipe, Step
    from knobtop.recipes.tables import Tables
    from knobtop.recipes.window import StepWindow
    from knobtop.session.port import SessionPort

LINE_GRACE = 1.5  # seconds a window waits past its end for its last second's report
LINE_POLL = 0.05
TIMED_GRACE = 30.0  # seconds a timed window's run may take beyond its duration (start-up)


class StepHost(Protocol):
    """What a step uses of the runner (RecipeRunner)."""

    recipe: Recipe
    window: StepWindow
    gates: Gates
    tables: Tables
    arms: ArmSetter
    results: list[StepResult]
    load_failed: str

    @property
    def session(self) -> SessionPort:
        """The session of the server the step's arm runs on."""

    @property
    def main(self) -> SessionPort:
        """The run's own session (its journal)."""

    @property
    def board(self) -> MetricBoard | None: ...

    @property
    def steps_planned(self) -> int: ...

    def status(self, state: str, waiting_for: str = "", phase_left: float | None = None
               ) -> None: ...

    def mark(self, label: str) -> None: ...

    def check(self) -> None: ...

    async def sleep(self, seconds: float) -> None: ...

    async def countdown(self, seconds: float, state: str) -> None: ...


class StepMeasure:
    """Runs the steps of a run, one at a time, for its runner."""

    def __init__(self, host: StepHost) -> None:
        self.host = host
        # [run] timed: the phase number of the window's run (0: about to start), its summary
        self.timed_phase: int | None = None
        self.timed_summary: dict[str, Any] | None = None
        self._footprint_said: set[str] = set()  # what the footprint could not read

    def heard(self, event: Phase) -> None:
        """A load phase of the step's server: the timed window's own run, and its end."""
        if event.action == "start" and self.timed_phase == 0:
            self.timed_phase = event.phase  # the timed window's own phase
        elif event.action == "stop" and self.timed_phase and event.phase == self.timed_phase:
            self.timed_summary = dict(event.summary)

    async def run(self, step: Step) -> None:
        host = self.host
        session, recipe = host.session, host.recipe
        host.mark(f"step {step.index + 1}/{host.steps_planned}: arm {step.arm.name} "
                  f"x{step.threads} rep {step.replicate}")
        waits = await host.gates.before_step()
        host.window.clear(detector(recipe.steady))
        host.load_failed = ""
        session.use_load(recipe.load_spec(step.threads, 0, step.arm))
        host.status("starting the load")
        await session.start_load()
        host.status("warming up")
        await host.countdown(recipe.warmup, "warming up")
        steady = False
        if recipe.waits.plateau:
            began = time.monotonic()
            steady = await host.gates.until(
                lambda: host.window.steady is not None and host.window.steady.steady,
                "a TPS plateau",
                lambda: plateau_text(host.window.steady, recipe.steady))
            waits["plateau"] = round(time.monotonic() - began, 2)
        summary: dict[str, Any] | None = None
        reports_until: float | None = None
        if recipe.timed:
            start, end, first, summary = await self._timed_window(step)
        else:
            start = session.now()
            # the driver's second now
            stamp = host.window.seconds[-1] if host.window.seconds else 0
            first = await self.footprint(False)
            await host.countdown(recipe.load.duration, "measuring")
            end = session.now()
            reports_until = await self._last_report(stamp + round(recipe.load.duration))
        last = await self.footprint(True)
        with contextlib.suppress(LoadError):
            await session.stop_load()
        host.check()
        host.results.append(self._result(step, start, end, waits, steady,
                                         (first, last), summary, reports_until))  # journaled
        if recipe.pause and step.index + 1 < host.steps_planned:
            host.status("pausing")
            await host.sleep(recipe.pause)

    async def _timed_window(self, step: Step
                            ) -> tuple[float, float, Footprint, dict[str, Any] | None]:
        """``[run] timed``: the warmup run stops and the measured window runs as a load of
        its own for ``duration`` seconds, ending by itself with the driver's summary
        (sysbench prints one only then). Returns the window's start and end, the first
        footprint, and the summary (None when the run did not end in time)."""
        host = self.host
        session, recipe = host.session, host.recipe
        with contextlib.suppress(LoadError):
            await session.stop_load()
        session.use_load(recipe.load_spec(step.threads, recipe.load.duration, step.arm))
        first = await self.footprint(False)
        self.timed_phase, self.timed_summary = 0, None  # 0: the next phase to start
        start = session.now()
        await session.start_load()
        deadline = time.monotonic() + recipe.load.duration + TIMED_GRACE
        while self.timed_summary is None and time.monotonic() < deadline:
            host.status("measuring (a timed run)",
                        f"{max(0.0, start + recipe.load.duration - session.now()):.0f} s left")
            await host.sleep(POLL)
        summary, self.timed_phase = self.timed_summary, None
        if summary is None:
            host.mark(f"the timed window of step {step.index + 1} did not end within "
                      f"{recipe.load.duration + TIMED_GRACE:g} s: no summary")
        return start, session.now(), first, summary

    async def _last_report(self, want: int) -> float | None:
        """When the driver's report for a window's last second (stamped ``want``) came,
        waiting for it when the window has ended before it: the driver's tick and the pipe
        lag the countdown by a few ms to a tenth of a second under load, and without that
        report a 2-second window held one second's transactions over two seconds, half its
        TPS. None after LINE_GRACE: a driver silent that long is stalled, and the window's
        missing seconds count as nothing done."""
        deadline = time.monotonic() + LINE_GRACE
        while ((at := self.host.window.report_time(want)) is None
               and time.monotonic() < deadline):
            await self.host.sleep(LINE_POLL)
        return at

    def _result(self, step: Step, start: float, end: float, waits: dict[str, float],
                steady: bool, footprints: tuple[Footprint, Footprint] | None = None,
                summary: dict[str, Any] | None = None,
                reports_until: float | None = None) -> StepResult:
        """The step's result (journaled): what it was, and its window's measured fields."""
        host = self.host
        recipe = host.recipe
        key = tables_key(step.arm, recipe.load_spec(step.threads, 0, step.arm))
        return host.main.record(
            StepResult, load_ips=host.tables.load_ips.get(key),
            load_phase=dict(host.tables.load_phase.get(key, {})),
            recipe=recipe.name, index=step.index, target=step.arm.target,
            replicate=step.replicate, arm=step.arm.name, threads=step.threads,
            start=start, end=end, waits=waits, steady=steady,
            pct=recipe.load.percentile,
            knobs=dict(host.arms.step_knobs),
            calibration=step.calibration,
            **host.window.fields(start, end, host.board, footprints, summary, reports_until),
        )

    async def footprint(self, sizes: bool) -> Footprint:
        """The server's own footprint now; what is missing is said once."""
        reading = await self.host.session.footprint(sizes)
        if reading.problem and reading.problem not in self._footprint_said:
            self._footprint_said.add(reading.problem)
            self.host.mark(f"server footprint: {reading.problem}")
        return reading


__all__ = ["LINE_GRACE", "LINE_POLL", "TIMED_GRACE", "StepHost", "StepMeasure"]
