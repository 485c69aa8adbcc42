"""``knobtop tune`` (issue 21) as a kind: a noise-aware search for better knob values.

A search file (``recipes.search``) names the knobs, the load, an objective, constraints
and a budget. The runner drives the tune as it drives any kind, so every trial is one
measured recipe step (gates, warmup, plateau wait, restart with rollback for static knobs,
the footprint) and lands in the journal as any step does; the kind owns the step loop:

1. the baseline (the server's own values of the searched knobs) is measured
   ``BASELINE_RUNS`` times: trial 0, its runs' band the noise trials are seen against;
2. trials, while the budget lasts: optuna's TPE sampler (seeded) proposes knob values; each
   is one step, told back with its objective, and with the constraints it broke as
   constraints (an infeasible trial is never a good score); a ``trial`` event journals
   each. Values already measured are not proposed again; a choices-only space ends when
   every combination was measured. A trial whose knobs do not take is a failed trial,
   not a failed run;
3. verification: the best ``candidates`` trials that kept the constraints run against the
   baseline in ``replicates`` counterbalanced rounds, and the recipe statistics (ratio of
   medians with its bootstrap CI, the rank test, Holm across the candidates) give each a
   verdict. The recommendation is the best candidate whose verdict is "higher" TPS (or
   "lower" latency); if none is, the tune says the baseline could not be beaten beyond
   noise.

Before the runner exists, :meth:`Tune.prepare` checks the search against the server and
reads the baseline; the runner puts the baseline back at the end, whatever happened. A
tune killed part way resumes from its journal (``prior`` trials): they are journaled again
in the new journal as ``resumed`` and told to the sampler, and only new trials are measured.

The tune is not in the registry (``KINDS``): that is the kinds a recipe file selects with
``[run] kind`` (the reader's choices and the generated reference list it), and a tune comes
from a search file instead; and a ``Tune`` is one run's (its search, the sampler, the trials
so far), where a registry line is one instance every recipe of its kind shares.
``knobtop tune`` (``recipes/orders.py``, ``TuneOrder``) builds one per run and hands it to
the runner.
"""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from knobtop.analysis.tune import (
    BASE,
    Verification,
    arm_name,
    baseline_band,
    best_trials,
    measured,
    objective_of,
    objective_text,
    verification_of,
    violations,
)
from knobtop.journal.events import StepResult, Trial
from knobtop.recipes.armset import ArmRefused
from knobtop.recipes.model import Arm, Step
from knobtop.recipes.resume import (
    interrupted_in,
    leftover_knobs,
    search_param,
    spec_of,
    tune_plan,
    values_set,
)
from knobtop.recipes.schedule import arm_order
from knobtop.recipes.search_model import Dimension, Search, SearchError, check_search

if TYPE_CHECKING:
    import optuna

    from knobtop.recipes.kinds.base import Sequencer
    from knobtop.recipes.model import Recipe
    from knobtop.session.port import SessionPort

REPEATS = 20  # proposals of an already measured combination before the search ends
BASELINE_RUNS = 2  # the baseline's runs before the trials (trial 0): their band


def verification_steps(search: Search, base: Arm, candidates: Sequence[Arm]) -> list[Step]:
    """``replicates`` rounds of the baseline and the candidates, each round in a
    counterbalanced order (A B, B A, B A, A B ... ; a Williams square for more)."""
    arms = [base, *candidates]
    rng = random.Random(search.seed)
    return [Step(0, r, arms[i], search.threads)
            for r in range(1, search.replicates + 1)
            for i in arm_order("counterbalanced", len(arms), r - 1, rng)]


def _value_text(dim: Dimension, value: Any, block: int = 1) -> str:
    """A proposed value as the knob's text; an integer knob that takes only multiples of
    ``block`` (join_buffer_size: 128) gets the nearest one inside the range."""
    if dim.choices:
        return str(value)
    if dim.integer:
        number = int(value)
        if block > 1 and dim.low is not None and dim.high is not None:
            lo, hi = -(-int(dim.low) // block) * block, int(dim.high) // block * block
            number = min(hi, max(lo, round(number / block) * block))
        return str(number)
    return f"{float(value):g}"


def _distributions(search: Search) -> dict[str, optuna.distributions.BaseDistribution]:
    from optuna.distributions import (
        BaseDistribution,
        CategoricalDistribution,
        FloatDistribution,
        IntDistribution,
    )

    out: dict[str, BaseDistribution] = {}
    for dim in search.knobs:
        if dim.choices:
            out[dim.name] = CategoricalDistribution(list(dim.choices))
        elif dim.integer:
            assert dim.low is not None and dim.high is not None
            out[dim.name] = IntDistribution(int(dim.low), int(dim.high), log=dim.log)
        else:
            assert dim.low is not None and dim.high is not None
            out[dim.name] = FloatDistribution(dim.low, dim.high, log=dim.log)
    return out


def combinations(search: Search) -> int | None:
    """How many knob value combinations a choices-only space has (None: a range)."""
    total = 1
    for dim in search.knobs:
        if not dim.choices:
            return None
        total *= len(dim.choices)
    return total


class Tune:
    """The tune of one search: a kind per run (its sampler and its trials so far)."""

    name: str = "tune"
    one_load: bool = False
    planned: bool = False  # its trials come as it goes

    def __init__(self, search: Search, *, prior: Sequence[Trial] = (),
                 resumed_from: str = "") -> None:
        self.search = search
        self.spec = spec_of(search)
        self.prior = list(prior)
        self.resumed_from = resumed_from
        self.trials: list[Trial] = []  # this run's, the resumed ones first
        self.verification: Verification | None = None
        self.warnings: list[str] = []  # the search's against the server (prepare)
        self._study: optuna.Study | None = None
        self._blocks: dict[str, int] = {}  # a knob's step (the server's block size)
        self._began = 0.0
        walls = [t.wall for t in self.prior]
        self._prior_seconds = max(walls) - min(walls) if walls else 0.0

    # -- before the runner -----------------------------------------------------------------

    async def prepare(self, session: SessionPort) -> Recipe:
        """The search against the server (its warnings), the knobs' block sizes, the
        baseline as the server holds it, the sampler; the recipe the runner runs.
        SearchError before anything changed."""
        search = self.search
        catalog = session.state().catalog
        if catalog is None:
            raise SearchError(str(search.path), None, "the session is not open",
                              "open the session before tuning")
        self.warnings = check_search(search, catalog)
        self._blocks = {d.name: catalog.get(d.name).block_size or 1 for d in search.knobs}
        values = await session.global_values(search.knob_names)
        base = {k: v for k, v in values.items() if v is not None}
        journal = Path(self.resumed_from) if self.resumed_from else None
        left = leftover_knobs(
            self.prior, base,
            values_set(journal, search.knob_names) if journal else (),
            interrupted_in(journal, search.knob_names) if journal else ())
        if left:
            # A killed tune leaves its last trial's values on the server: where the server
            # holds one of the journal's trial values, the baseline is the one that tune
            # measured, and the end brings that back. Elsewhere it is the server's, as read.
            now = ", ".join(f"{k} = {base[k]}" for k in sorted(left))
            session.rebase_knobs(left, f"the baseline of the tune resumed from "
                                 f"{self.resumed_from} (the server had {now}, a value of "
                                 "that tune's trials)")
            base.update(left)
        self._study = self._new_study()
        self._began = time.monotonic()
        return search.recipe(Arm(BASE, base))

    def planned_steps(self) -> int:
        """The steps the tune plans in all: the baseline's runs (unless resumed), the
        trials left of the budget (10 more than done when it is minutes only), the
        verification."""
        search, known = self.search, [*self.prior, *self.trials]
        trials = search.trials if search.trials is not None else len(known) + 10
        fresh = max(0, trials - sum(1 for t in known if t.number > 0))
        base = 0 if any(t.number == 0 for t in known) else BASELINE_RUNS
        return base + fresh + (search.candidates + 1) * search.replicates

    # -- the kind --------------------------------------------------------------------------

    def plan(self, recipe: Recipe) -> dict[str, Any]:
        return tune_plan(self.search)

    def schedule(self, recipe: Recipe) -> list[Step]:
        """The baseline's runs (a resumed tune's were measured by the journal it
        resumes)."""
        if self.prior:
            return []
        return [Step(r - 1, r, recipe.baseline, self.search.threads)
                for r in range(1, BASELINE_RUNS + 1)]

    def readings(self, recipe: Recipe, done: int) -> tuple[int, str, float | None] | None:
        return None  # its steps

    async def run(self, runner: Sequencer, recipe: Recipe) -> None:
        """The baseline's runs, the trials while the budget lasts, the verification."""
        base = recipe.baseline
        runs = [await self._measure(runner, 0, None, base) for _ in list(runner.steps)]
        self._copy_prior(runner)
        for result in runs:
            if result is not None:
                self._record(runner, (0, None, base), "done", result)
        while (asked := self._ask() if self._budget_left() else None) is not None:
            trial, knobs = asked
            number = max((t.number for t in self.trials), default=0) + 1
            arm = Arm(arm_name(number), knobs)
            runner.add_steps([Step(0, 1, arm, self.search.threads)])
            result = await self._measure(runner, number, trial, arm)
            if result is not None:
                self._record(runner, (number, trial, arm), "done", result)
        await self._verify(runner, base)

    async def _measure(self, runner: Sequencer, number: int,
                       asked: optuna.trial.Trial | None, arm: Arm) -> StepResult | None:
        """The next step, a trial's; its arm refused: noted, the trial failed, None."""
        try:
            return await runner.run_step(refusable=True)
        except ArmRefused as exc:
            runner.note(str(exc))
            self._record(runner, (number, asked, arm), "failed", None, str(exc))
            return None

    async def _verify(self, runner: Sequencer, base: Arm) -> None:
        candidates = best_trials(self.spec, self.trials, self.search.candidates)
        if not candidates:
            runner.note("tune: no trial kept the constraints and was measured: nothing to "
                        "verify")
            return
        arms = [Arm(arm_name(t.number), dict(t.knobs)) for t in candidates]
        runner.note(f"tune: verification of {', '.join(a.name for a in arms)} against "
                    f"{BASE}, {self.search.replicates} counterbalanced rounds")
        steps = verification_steps(self.search, base, arms)
        runner.add_steps(steps)
        runner.set_total(len(runner.steps))
        results: list[StepResult] = []
        for _ in steps:
            try:
                results.append(await runner.run_step(refusable=True))
            except ArmRefused as exc:  # the round goes on without it
                runner.note(str(exc))
        self.verification = verification_of(self.spec, self.trials, results)
        if self.verification is not None:
            runner.note(self.verification.line())

    # -- the sampler -----------------------------------------------------------------------

    def _new_study(self) -> optuna.Study:
        import optuna

        optuna.logging.set_verbosity(optuna.logging.WARNING)
        budget = self.search.trials or 30
        sampler = optuna.samplers.TPESampler(
            seed=self.search.seed, n_startup_trials=min(10, max(3, budget // 3)))
        direction = (optuna.study.StudyDirection.MAXIMIZE
                     if self.search.direction == "maximize"
                     else optuna.study.StudyDirection.MINIMIZE)
        return optuna.create_study(direction=direction, sampler=sampler)

    def _tell_known(self, trial: Trial) -> None:
        """A trial measured before this process (resumed) or the baseline, told to the
        sampler when its values lie in the search space."""
        import optuna

        assert self._study is not None
        params = {d.name: search_param(d, trial.knobs.get(d.name, "")) for d in self.search.knobs}
        if any(v is None for v in params.values()):
            return
        ok = trial.state == "done" and trial.objective is not None
        self._study.add_trial(optuna.trial.create_trial(
            state=optuna.trial.TrialState.COMPLETE if ok else optuna.trial.TrialState.FAIL,
            value=trial.objective if ok else None, params=params,
            distributions=_distributions(self.search),
            constraints=(violations(self.spec, trial.values) or None) if ok else None))

    def _copy_prior(self, runner: Sequencer) -> None:
        """The resumed journal's trials, into this journal after its recipe start (where
        the report reads a tune's trials), and to the sampler."""
        for t in self.prior:
            fields = {f: getattr(t, f) for f in ("tune", "number", "arm", "knobs",
                                                 "objective", "values", "feasible",
                                                 "violated", "steady", "step", "state",
                                                 "message")}
            fields["from_journal"] = t.from_journal or self.resumed_from
            trial = runner.session.record(Trial, **fields, resumed=True)
            self.trials.append(trial)
            self._tell_known(trial)
        if self.prior:
            runner.tell(f"resumed {len(self.prior)} trials from {self.resumed_from}")

    def _budget_left(self) -> bool:
        search = self.search
        done = sum(1 for t in self.trials if t.number > 0)
        if search.trials is not None and done >= search.trials:
            return False
        spent = time.monotonic() - self._began + self._prior_seconds
        return search.minutes is None or spent < search.minutes * 60

    def _ask(self) -> tuple[optuna.trial.Trial, dict[str, str]] | None:
        """The sampler's next proposal not measured yet (None: none left)."""
        import optuna

        assert self._study is not None
        seen = [t.knobs for t in self.trials if t.number > 0]
        space = combinations(self.search)
        if space is not None and len({tuple(sorted(k.items())) for k in seen}) >= space:
            return None
        dists = _distributions(self.search)
        for _ in range(REPEATS):
            trial = self._study.ask(dists)
            knobs = {d.name: _value_text(d, trial.params[d.name], self._blocks.get(d.name, 1))
                     for d in self.search.knobs}
            if knobs not in seen:
                return trial, knobs
            self._study.tell(trial, state=optuna.trial.TrialState.FAIL)  # not run again
        return None

    def _record(self, runner: Sequencer,
                pending: tuple[int, optuna.trial.Trial | None, Arm], state: str,
                step: StepResult | None, message: str = "") -> None:
        """A trial's ``trial`` event (the baseline's runs: each trial 0, asked None), told
        to the sampler and, measured, to the front end."""
        import optuna

        number, asked, arm = pending
        spec = self.spec
        values = measured(step) if step is not None else {}
        objective = objective_of(spec, values) if step is not None else None
        broken = violations(spec, values) if step is not None else {}
        violated = [k for k, v in broken.items() if v > 0]
        trial = runner.session.record(
            Trial, tune=self.search.name, number=number, arm=arm.name, knobs=dict(arm.knobs),
            objective=None if objective is None else round(objective, 3),
            values={k: None if v is None else round(v, 3) for k, v in values.items()},
            feasible=state == "done" and not violated, violated=violated,
            steady=bool(step.steady) if step is not None else False,
            step=step.index if step is not None else -1, state=state, message=message)
        self.trials.append(trial)
        if asked is None:  # the baseline
            self._tell_known(trial)
            band = baseline_band(self.trials)
            if objective is not None and band is not None:
                runner.tell(f"baseline run: {spec.what} {objective_text(spec, objective)} "
                            f"(runs so far {objective_text(spec, band[0])}-"
                            f"{objective_text(spec, band[1])}: the noise band trials are "
                            "seen against)")
            return
        assert self._study is not None
        if state != "done" or objective is None:
            self._study.tell(asked, state=optuna.trial.TrialState.FAIL)
            return
        for key, amount in broken.items():
            asked.set_constraint(key, amount)
        self._study.tell(asked, objective)
        best = best_trials(spec, self.trials, 1)
        kept = "" if not violated else f" (broke {', '.join(violated)})"
        lead = (f"; best so far {best[0].arm} {objective_text(spec, best[0].objective)}"
                if best else "")
        runner.tell(f"trial {number}: {spec.what} {objective_text(spec, objective)}"
                    f"{kept}{lead}")


__all__ = ["BASELINE_RUNS", "Tune", "combinations", "verification_steps"]
