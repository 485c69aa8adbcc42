"""A recipe or a tune as a value, run where the session lives (``SessionPort.run_recipe``).

A front end builds an order from what it was asked (a ``Recipe``, a ``Search``) and hands
it to its session: headless runs it in its own process, the live screen in the session's
process (the order crosses the socket by value, as a pickle of its fields).  The run's
progress goes out as journal events (``Progress``, with the run's own ``recipe``, ``step``,
``checkpoint`` and ``trial`` lines), so every front end, and ``knobtop follow``, reads it
the same way; what the order returns is the run's report: how it ended
(``recipes.outcome``, the one mapping) and what it measured.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from knobtop.analysis.resultcells import Results
from knobtop.journal.events import Checkpoint, Progress, Trial
from knobtop.recipes.model import Recipe
from knobtop.recipes.outcome import FINISHED, RunOutcome, outcome_of
from knobtop.recipes.runner import Progress as RunProgress
from knobtop.recipes.runner import RecipeRunner
from knobtop.recipes.search import Search
from knobtop.session.port import SessionPort

if TYPE_CHECKING:  # (they import rich: a recipe's run in the session's process needs none)
    from knobtop.analysis.tune import TuneSpec, Verification


class ProgressTeller:
    """A runner's progress as ``Progress`` events of ``port``: journaled when the step, the
    count or the state changes (and with each note), told without a line in between."""

    def __init__(self, port: SessionPort, run: str) -> None:
        self.port = port
        self.run = run
        self._said: tuple[Any, ...] | None = None
        self._last: dict[str, Any] = {"run": run, "done": 0, "total": 0}

    def progress(self, p: RunProgress) -> None:
        step = p.step
        fields: dict[str, Any] = {
            "run": p.recipe, "done": p.done, "total": p.total, "unit": p.unit,
            "state": p.state, "waiting_for": p.waiting_for,
            "seconds_left": round(p.seconds_left, 1),
            "phase_left": None if p.phase_left is None else round(p.phase_left, 1),
        }
        if step is not None:
            fields.update(step=step.index, arm=step.arm.name, knobs=dict(step.arm.knobs),
                          threads=step.threads, replicate=step.replicate)
        self._last = fields
        key = (p.done, p.total, p.unit, p.state, fields.get("step", -1))
        if key != self._said:
            self._said = key
            self.port.record(Progress, **fields)
        else:
            self.port.tell(Progress, **fields)

    def note(self, text: str) -> None:
        """A finding of the run, for whoever watches (journaled with the progress)."""
        self.port.record(Progress, **{**self._last, "note": text})


@dataclass
class RunReport:
    """What a recipe run measured, and how it ended."""

    outcome: RunOutcome
    results: Results  # the table so far (a curve's or a timeline's: its checkpoints too)
    measured: int = 0  # steps measured (0: no table to show)
    warnings: list[str] = field(default_factory=list)
    checkpoints: list[Checkpoint] = field(default_factory=list)


class _Order:
    """What both orders do where they run: keep an abort that comes before the run has
    started (a tune's: while it prepares), and map how the run ended (recipes/outcome.py,
    the one mapping)."""

    _running: RecipeRunner | None = None  # (set where it runs; never sent across the socket)
    _aborted = False

    async def _run_to_end(self, running: RecipeRunner) -> RunOutcome:
        self._running = running
        if self._aborted:
            running.abort()
        try:
            await running.run()
        except Exception as exc:  # RunFailed, RunAborted, RecipeError (nothing changed), ...
            return outcome_of(exc)
        return FINISHED

    def abort(self) -> None:
        self._aborted = True
        if self._running is not None:
            self._running.abort()


@dataclass
class RecipeOrder(_Order):
    """Run ``recipe`` (``prepare``: its tables made first, where they are missing)."""

    recipe: Recipe
    prepare: bool = True

    async def run(self, port: SessionPort, targets: Mapping[str, SessionPort]) -> RunReport:
        recipe = self.recipe
        teller = ProgressTeller(port, recipe.name)
        runner = RecipeRunner(port, recipe, on_progress=teller.progress, on_note=teller.note,
                              prepare=self.prepare, targets=dict(targets) or None)
        ended = await self._run_to_end(runner)
        results = runner.results_so_far(ended.outcome, ended.message)
        if recipe.curve is not None:  # a curve: its points are the result
            results.kind = recipe.kind
        if recipe.curve is not None or runner.checkpoints:
            results.checkpoints = list(runner.checkpoints)
        return RunReport(ended, results, len(runner.results), list(runner.warnings),
                         list(runner.checkpoints))


@dataclass
class TuneReport:
    """What a tune found, and how it ended."""

    outcome: RunOutcome
    spec: TuneSpec
    trials: list[Trial] = field(default_factory=list)
    verification: Verification | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def results(self) -> Results:
        """The verification's table (a tune that did not get there: an empty one)."""
        if self.verification is not None:
            return self.verification.results
        return Results(self.spec.name, [], [], [], self.outcome.outcome, self.outcome.message)


@dataclass
class TuneOrder(_Order):
    """Run the search ``search`` (``prior``: trials of the journal ``resumed_from``)."""

    search: Search
    prior: Sequence[Trial] = ()
    resumed_from: str = ""

    async def run(self, port: SessionPort, targets: Mapping[str, SessionPort]) -> TuneReport:
        from knobtop.recipes.kinds.tune import Tune

        tune = Tune(self.search, prior=self.prior, resumed_from=self.resumed_from)
        try:
            recipe = await tune.prepare(port)  # what it runs; SearchError: nothing changed
        except Exception as exc:
            return TuneReport(outcome_of(exc), tune.spec, warnings=list(tune.warnings))
        teller = ProgressTeller(port, self.search.name)
        runner = RecipeRunner(port, recipe, kind=tune, on_progress=teller.progress,
                              on_note=teller.note, warnings=tune.warnings)
        runner.set_total(tune.planned_steps())
        ended = await self._run_to_end(runner)
        # the search's warnings, the runner's and what the run met on its way
        return TuneReport(ended, tune.spec, list(tune.trials), tune.verification,
                          list(runner.warnings or tune.warnings))


__all__ = ["ProgressTeller", "RecipeOrder", "RunReport", "TuneOrder", "TuneReport"]
