"""``knobtop tune`` (issue 21): a noise-aware search for better knob values.

A search file (``recipes.search``) names the knobs, the load, an objective, constraints
and a budget. The tune runs through the recipe runner on an open session, so every trial
is one measured recipe step (gates, warmup, plateau wait, restart with rollback for
static knobs, the footprint) and lands in the journal as any step does:

1. the baseline (the server's own values of the searched knobs) is measured once: trial 0;
2. trials: optuna's TPE sampler (seeded) proposes knob values; each is measured and told
   back with its objective, and with the constraints it broke as constraints (an
   infeasible trial is never a good score); a ``trial`` event journals each. Values
   already measured are not proposed again; a choices-only space ends when every
   combination was measured;
3. verification: the best ``candidates`` trials that kept the constraints run against the
   baseline in ``replicates`` counterbalanced rounds, and the recipe statistics (ratio of
   medians with its bootstrap CI, the rank test, Holm across the candidates) give each a
   verdict. The recommendation is the best candidate whose verdict is "higher" TPS (or
   "lower" latency); if none is, the tune says the baseline could not be beaten beyond
   noise.

The runner puts the baseline back at the end, whatever happened. A tune killed part way
resumes from its journal (``prior`` trials): they are journaled again in the new journal
as ``resumed`` and told to the sampler, and only new trials are measured.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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
from knobtop.recipes.model import Arm, Step
from knobtop.recipes.resume import (
    interrupted_in,
    leftover_knobs,
    prior_trials,
    read_prior,
    search_param,
    spec_of,
    tune_plan,
    values_set,
)
from knobtop.recipes.runner import Progress, RecipeRunner
from knobtop.recipes.schedule import arm_order
from knobtop.recipes.search import Dimension, Search, SearchError, check_search
from knobtop.session.port import SessionPort

if TYPE_CHECKING:
    import optuna

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


@dataclass
class TuneOutcome:
    trials: list[Trial] = field(default_factory=list)
    verification: Verification | None = None
    warnings: list[str] = field(default_factory=list)


class Tuner:
    """Runs one search on an open session (on the session's event loop)."""

    def __init__(self, session: SessionPort, search: Search, *,
                 on_progress: Callable[[Progress], None] | None = None,
                 on_note: Callable[[str], None] | None = None,
                 prior: Sequence[Trial] = (), resumed_from: str = "") -> None:
        self.session = session
        self.search = search
        self.spec = spec_of(search)
        self.on_progress = on_progress
        self.on_note = on_note
        self.prior = list(prior)
        self.resumed_from = resumed_from
        self.outcome = TuneOutcome()
        self.runner: RecipeRunner | None = None
        self._study: optuna.Study | None = None
        self._pending: tuple[int, optuna.trial.Trial | None, Arm] | None = None
        self._seen = 0  # the runner's results already recorded as trials
        self._to_copy: list[Trial] = []  # a resumed journal's trials, not journaled yet
        self._blocks: dict[str, int] = {}  # a knob's step (the server's block size)
        self._phase = "search"
        self._base: Arm | None = None
        self._began = 0.0
        self._prior_seconds = 0.0
        self._aborted = False

    @property
    def trials(self) -> list[Trial]:
        return self.outcome.trials

    def abort(self) -> None:
        """Stop at the next check (any thread): the load stops, the baseline comes back."""
        self._aborted = True
        if self.runner is not None:
            self.runner.abort()

    async def run(self) -> TuneOutcome:
        """The search, then the verification; RunAborted / RunFailed after the baseline
        was restored, SearchError before anything changed."""
        search, session = self.search, self.session
        catalog = session.state().catalog
        if catalog is None:
            raise SearchError(str(search.path), None, "the session is not open",
                              "open the session before tuning")
        self.outcome.warnings = check_search(search, catalog)
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
        self._base = Arm(BASE, base)
        self._study = self._new_study()
        runner = RecipeRunner(session, search.recipe(self._base), on_progress=self.on_progress,
                              on_note=self.on_note, more_steps=self._more,
                              on_arm_refused=self._refused, plan_extra=tune_plan(search),
                              warnings=self.outcome.warnings)
        self.runner = runner
        if self._aborted:
            runner.abort()
        self._began = time.monotonic()
        self._resume(runner)
        runner.progress.total = self._planned_steps()
        try:
            await runner.run()
        finally:  # the search's, the runner's and what the run met on its way
            self.outcome.warnings = runner.warnings or self.outcome.warnings
        return self.outcome

    # -- the sampler ---------------------------------------------------------------------

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

    def _resume(self, runner: RecipeRunner) -> None:
        if not self.prior:
            # The baseline twice: the band of its runs is the noise trials are seen against.
            base = runner.steps[0].arm
            runner.steps = [Step(r - 1, r, base, self.search.threads)
                            for r in range(1, BASELINE_RUNS + 1)]
            self._pending = (0, None, base)
            return
        runner.steps = []  # the baseline was measured by the journal resumed
        walls = [t.wall for t in self.prior]
        self._prior_seconds = max(walls) - min(walls) if walls else 0.0
        self._to_copy = list(self.prior)  # journaled once the run has started (_more)

    def _copy_prior(self) -> None:
        """The resumed journal's trials, into this journal after its recipe start (where
        the report reads a tune's trials), and to the sampler."""
        for t in self._to_copy:
            fields = {f: getattr(t, f) for f in ("tune", "number", "arm", "knobs",
                                                 "objective", "values", "feasible",
                                                 "violated", "steady", "step", "state",
                                                 "message")}
            fields["from_journal"] = t.from_journal or self.resumed_from
            self._keep(self.session.record(Trial, **fields, resumed=True))
        if self._to_copy and self.on_note is not None:
            self.on_note(f"resumed {len(self._to_copy)} trials from {self.resumed_from}")
        self._to_copy = []

    def _keep(self, trial: Trial) -> None:
        self.trials.append(trial)
        self._tell_known(trial)

    def _budget_left(self) -> bool:
        search = self.search
        done = sum(1 for t in self.trials if t.number > 0)
        if search.trials is not None and done >= search.trials:
            return False
        spent = time.monotonic() - self._began + self._prior_seconds
        return search.minutes is None or spent < search.minutes * 60

    def _planned_steps(self) -> int:
        search, known = self.search, [*self.prior, *self.trials]
        trials = search.trials if search.trials is not None else len(known) + 10
        fresh = max(0, trials - sum(1 for t in known if t.number > 0))
        base = 0 if any(t.number == 0 for t in known) else BASELINE_RUNS
        return base + fresh + (search.candidates + 1) * search.replicates

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

    # -- the runner's hooks ----------------------------------------------------------------

    def _record(self, state: str, step: StepResult | None, message: str = "") -> None:
        import optuna

        assert self._pending is not None
        number, asked, arm = self._pending
        if number != 0:  # the baseline's runs all record as trial 0
            self._pending = None
        search, spec = self.search, self.spec
        values = measured(step) if step is not None else {}
        objective = objective_of(spec, values) if step is not None else None
        broken = violations(spec, values) if step is not None else {}
        violated = [k for k, v in broken.items() if v > 0]
        trial = self.session.record(
            Trial, tune=search.name, number=number, arm=arm.name, knobs=dict(arm.knobs),
            objective=None if objective is None else round(objective, 3),
            values={k: None if v is None else round(v, 3) for k, v in values.items()},
            feasible=state == "done" and not violated, violated=violated,
            steady=bool(step.steady) if step is not None else False,
            step=step.index if step is not None else -1, state=state, message=message)
        self.trials.append(trial)
        if asked is None:  # the baseline
            self._tell_known(trial)
            band = baseline_band(self.trials)
            if self.on_note is not None and objective is not None and band is not None:
                self.on_note(f"baseline run: {spec.what} {objective_text(spec, objective)} "
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
        if self.on_note is not None:
            kept = "" if not violated else f" (broke {', '.join(violated)})"
            lead = (f"; best so far {best[0].arm} {objective_text(spec, best[0].objective)}"
                    if best else "")
            self.on_note(f"trial {number}: {spec.what} {objective_text(spec, objective)}"
                         f"{kept}{lead}")

    def _refused(self, step: Step, message: str) -> None:
        if self._pending is not None and self._pending[2].name == step.arm.name:
            self._record("failed", None, message)

    def _more(self) -> list[Step]:
        runner = self.runner
        assert runner is not None and self._base is not None
        self._copy_prior()
        if self._pending is not None:  # the pending trial's steps were the last measured
            name = self._pending[2].name
            mine = [r for r in runner.results[self._seen:] if r.arm == name]
            if self._pending[0] == 0:
                for result in mine:
                    self._record("done", result)
                self._pending = None
            elif mine:
                self._record("done", mine[-1])
            else:
                self._record("failed", None, "not measured")
        self._seen = len(runner.results)
        if self._phase == "search":
            asked = self._ask() if self._budget_left() else None
            if asked is not None:
                trial, knobs = asked
                number = max((t.number for t in self.trials), default=0) + 1
                arm = Arm(arm_name(number), knobs)
                self._pending = (number, trial, arm)
                return [Step(0, 1, arm, self.search.threads)]
            self._phase = "verify"
            candidates = best_trials(self.spec, self.trials, self.search.candidates)
            if not candidates:
                self._say("tune: no trial kept the constraints and was measured: nothing "
                          "to verify")
                return []
            arms = [Arm(arm_name(t.number), dict(t.knobs)) for t in candidates]
            self._say(f"tune: verification of {', '.join(a.name for a in arms)} against "
                      f"{BASE}, {self.search.replicates} counterbalanced rounds")
            steps = verification_steps(self.search, self._base, arms)
            runner.progress.total = runner.progress.done + len(steps)
            return steps
        if self._phase == "verify":
            self._phase = "done"
            verification = verification_of(self.spec, self.trials, runner.results)
            self.outcome.verification = verification
            if verification is not None:
                self._say(verification.line())
        return []

    def _say(self, text: str) -> None:
        self.session.mark(text)
        if self.on_note is not None:
            self.on_note(text)


__all__ = ["TuneOutcome", "Tuner", "prior_trials", "read_prior", "spec_of", "tune_plan",
           "verification_steps"]
