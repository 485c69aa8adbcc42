# Over 500 lines: the sequencer of a run, whose parts share its abort and failure checks;
# its checks before the first step (preflight.py), one measured step (step.py), gates
# (gates.py), window (window.py), arm setter (armset.py), tables (tables.py), added rounds
# (rounds.py) and kinds (kinds/) are apart.
"""Run a recipe through a SessionPort: arms, thread sweeps, waits, steady state, replicates.

For each step of ``Recipe.schedule()`` the runner

1. puts the step's arm in place (``Session.set_knob`` with restarts allowed, only for knobs
   whose value differs: a static knob costs one restart per arm visit);
2. with the load stopped, waits on the recipe's gates (history list length, dirty pages,
   checkpoint age), each journaled with how long it took or that it timed out;
3. starts the load, runs the warmup, then (``plateau``) waits for a steady TPS (rolling
   span: the trend judged against the noise, ``plateau.Plateau``; or the older CV and
   slope bounds, ``stats.SteadyState``);
4. measures ``duration`` seconds (with the driver's report for the last of them, which may
   come a moment after) and journals a ``StepResult`` (medians of the window, the average
   TPS and stall share, and whether the window itself was flat);
5. stops the load and pauses.

The recipe's kind (``recipes/kinds/``) drives the run through the runner's services: a
recipe of arms runs every planned step in order (``run_arm_steps``); a tune
(``kinds/tune.py``) runs one step at a time (``run_step``), adding each trial's and the
verification's as it goes (``add_steps``); a one-load kind starts its load and reads its
checkpoints.

Abort (or any failure) stops the load and puts every knob back to the session's baseline.
Everything lands in the journal: a ``recipe`` event at start and end, a mark per wait and
phase of a step, and one ``step`` event per measured step.  The runner runs where the
session lives (an order of recipes/orders.py, handed to ``SessionPort.run_recipe``), and
its progress reaches the front ends as ``progress`` events.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from knobtop.analysis.resultcells import Results, build
from knobtop.analysis.resultnotes import calibration_note
from knobtop.conditions import Conditions
from knobtop.hosts.base import HostError
from knobtop.journal.events import (
    Change,
    Checkpoint,
    Error,
    Event,
    Load,
    Phase,
    RecipeRun,
    Sample,
    StepResult,
    target_of,
)
from knobtop.load.base import LoadError, LoadSpec
from knobtop.metrics.board import MetricBoard
from knobtop.recipes.armset import ArmRefused, ArmSetter
from knobtop.recipes.gates import Gates
from knobtop.recipes.kinds import KINDS, RecipeKind, start_plan
from knobtop.recipes.model import Recipe, RecipeError, RunAborted, RunFailed, Step, Timeline
from knobtop.recipes.preflight import check_servers, probe_conditions
from knobtop.recipes.rounds import next_round
from knobtop.recipes.step import StepMeasure
from knobtop.recipes.tables import Tables
from knobtop.recipes.timeline import checkpoint_values
from knobtop.recipes.window import StepWindow
from knobtop.server.knobs import KnobError
from knobtop.server.link import ServerError
from knobtop.session.port import SessionPort, SessionState

T = TypeVar("T")


@dataclass
class Progress:
    """What the progress panel / bars show."""

    recipe: str
    total: int
    done: int = 0
    step: Step | None = None
    state: str = "starting"
    waiting_for: str = ""
    seconds_left: float = 0.0
    started: float = field(default_factory=time.monotonic)
    unit: str = "steps"  # what done/total count ("checkpoints" on a timeline)
    phase_left: float | None = None  # seconds left of a counted-down phase (warmup, window)


def short_duration(seconds: float) -> str:
    """"45 s", "12 min": how long a recipe (or what is left of it) takes, for people."""
    return f"{seconds / 60:.0f} min" if seconds >= 90 else f"{seconds:.0f} s"


def time_left(nominal: float, total: int, done: int, spent: float,
              current: float | None) -> float:
    """Seconds left in a run: ``total - done`` steps, each taking what the finished ones
    took on average (restarts, waits and plateaus included), never less than ``nominal``
    (warmup + duration + pause). ``spent`` is the finished steps' wall time, ``current``
    the time in the step under way (None between steps)."""
    per_step = max(nominal, spent / done) if done else nominal
    todo = total - done
    if todo <= 0:
        return 0.0
    if current is None:
        return todo * per_step
    return (todo - 1) * per_step + max(0.0, per_step - current)


async def first_of(coro: Awaitable[T], stop: asyncio.Event) -> asyncio.Future[T]:
    """Await ``coro`` unless ``stop`` is set first (then it is cancelled, and awaited);
    its task, done either way."""
    task = asyncio.ensure_future(coro)
    stopped = asyncio.ensure_future(stop.wait())
    try:
        await asyncio.wait({task, stopped}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        stopped.cancel()
    if not task.done():
        task.cancel()
        with contextlib.suppress(BaseException):
            await task
    return task


def _numbered(steps: list[Step], first: int = 0) -> list[Step]:
    return [dataclasses.replace(s, index=first + i) for i, s in enumerate(steps)]


class RecipeRunner:
    """Runs one recipe on an open session (on the session's event loop)."""

    def __init__(
        self,
        session: SessionPort,
        recipe: Recipe,
        *,
        on_progress: Callable[[Progress], None] | None = None,
        prepare: bool = True,
        on_note: Callable[[str], None] | None = None,
        targets: Mapping[str, SessionPort] | None = None,
        kind: RecipeKind | None = None,
        warnings: Sequence[str] = (),
    ) -> None:
        # The run's own server ("") and each further target's (issue 19); the journal,
        # the marks and the step results are the run's own session's.
        self._main = session
        self.ports: dict[str, SessionPort] = {**(targets or {}), "": session}
        self._target = ""  # the server of the arm being applied or measured
        self.recipe = recipe
        self.kind = KINDS[recipe.kind] if kind is None else kind  # (a tune's: given)
        self.on_progress = on_progress
        self.on_note = on_note  # what the run found on its way (calibration, added rounds)
        self.prepare = prepare
        self._plan: dict[str, Any] = {}  # the conditions probe's, for the recipe start
        # What the caller found before the run (a search's static knobs): journaled with the
        # recipe's own warnings in the recipe start, before the first step
        self._caller_warnings = list(warnings)
        # Knobs the server changed on its own with an arm (a side effect), and their value
        # before: put back before every step of an arm that does not name them
        self.arms = ArmSetter(recipe)
        self.steps = _numbered(self.kind.schedule(recipe))
        self._next = 0  # the index of the next step to run
        self._arm: str | None = None  # the arm in place (None: the next step sets its own)
        self.calibration_line = ""  # what the calibration found (journaled as a mark)
        self.progress = Progress(recipe.name, len(self.steps))
        self.results: list[StepResult] = []
        self.warnings: list[str] = []
        self._aborted = False
        self._abort_event: asyncio.Event | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self.boards: dict[str, MetricBoard] = {}  # one per server, for its own events
        self.window = StepWindow()  # what the current step's window is read from
        # t, hit ratio, dirty %, history length, the server host's raw OS counters
        self.tables = Tables()  # each arm's tables, prepared once per shape
        self.load_failed = ""  # why the load failed (a phase "failed"): the run cannot go on
        self._spent = 0.0  # wall seconds of the finished steps (for the time estimate)
        self._step_began: float | None = None
        self._timeline_end: float | None = None  # monotonic time a timeline's load ends
        self._last_checkpoint = ""
        self.driver = ""  # the load driver of the last phase ("sysbench", "builtin")
        self.step_measure = StepMeasure(self)  # one measured step (step.py)
        counted = self.kind.readings(recipe, 0)
        if counted is not None:  # a timeline's checkpoints, a curve's values
            self.progress.total, self.progress.unit = counted[0], counted[1]
        self.checkpoints: list[Checkpoint] = []
        self.gates = Gates(self)
        self.conditions: dict[str, Conditions] = {}  # the probe's, by server, at the start

    @property
    def session(self) -> SessionPort:
        """The session of the server the current arm runs on."""
        return self.ports[self._target]

    @property
    def main(self) -> SessionPort:
        """The run's own session: its journal holds the run."""
        return self._main

    @property
    def steps_planned(self) -> int:
        return len(self.steps)

    @property
    def board(self) -> MetricBoard | None:
        """The metrics of the server the current arm runs on."""
        return self.boards.get(self._target)

    # -- control -------------------------------------------------------------------------

    def abort(self) -> None:
        """Stop at the next check (any thread): the load stops, the baseline comes back."""
        self._aborted = True
        if self._loop is not None and self._abort_event is not None:
            self._loop.call_soon_threadsafe(self._abort_event.set)

    @property
    def aborted(self) -> bool:
        return self._aborted

    def check(self) -> None:
        if self._aborted:
            raise RunAborted(f"recipe {self.recipe.name} aborted")
        if self.load_failed:
            raise RunFailed(f"the load failed: {self.load_failed}")
        error = self._main.state().journal_error
        if error is not None:  # an unrecorded run is not worth finishing
            raise RunFailed(error)

    async def sleep(self, seconds: float) -> None:
        """Sleep unless aborted; raises RunAborted / RunFailed as soon as that happens."""
        self.check()
        assert self._abort_event is not None
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(max(0.0, seconds)):
                await self._abort_event.wait()
        self.check()

    def status(self, state: str, waiting_for: str = "", phase_left: float | None = None
               ) -> None:
        p = self.progress
        p.state, p.phase_left = state, phase_left
        p.waiting_for = waiting_for or self._last_checkpoint  # a timeline: what it last read
        nominal = self.recipe.warmup + self.recipe.load.duration + self.recipe.pause
        current = None if self._step_began is None else time.monotonic() - self._step_began
        p.seconds_left = time_left(nominal, p.total, p.done, self._spent, current)
        if self._timeline_end is not None:
            p.seconds_left = max(0.0, self._timeline_end - time.monotonic())
        counted = self.kind.readings(self.recipe, len(self.checkpoints))
        if counted is not None:
            p.done = len(self.checkpoints)
            if counted[2] is not None:
                p.seconds_left = counted[2]
        if self.on_progress is not None:
            self.on_progress(p)

    def mark(self, label: str) -> None:
        self._main.mark(label)

    def note(self, text: str) -> None:
        """A finding of the run: journaled as a mark, and told to the front end."""
        self.mark(text)
        self.tell(text)

    def tell(self, text: str) -> None:
        if self.on_note is not None:
            self.on_note(text)

    # -- events from the session -------------------------------------------------------------

    def _on_event(self, event: Event) -> None:
        target = target_of(event)
        board = self.boards.get(target)
        if board is None:
            return
        board.apply(event)
        if target != self._target:
            return  # another server's, between its arms
        if isinstance(event, Phase) and event.action == "start":
            # Several clients or instances: their per-second sum ("all") is the step's TPS.
            self.window.multi = len(event.host.split(",")) > 1
            self.driver = event.driver
        if isinstance(event, Phase):
            self.step_measure.heard(event)
        if isinstance(event, Load):
            self.window.load(event)
        elif isinstance(event, Sample):
            timeline = self.recipe.timeline
            self.window.sample(event, board, None if timeline is None else timeline.metrics)
        elif isinstance(event, Phase) and event.action == "failed":
            self.load_failed = event.message or "sysbench exited"
            if self._abort_event is not None:
                self._abort_event.set()
        elif isinstance(event, Error) and event.source == "journal" and self._abort_event:
            self._abort_event.set()  # wake the step now; _check says why

    # -- the run ---------------------------------------------------------------------------

    async def run(self) -> Results:
        """Run every step; returns the results table.  RunAborted / RunFailed after the
        baseline was restored; RecipeError before anything changed if the server does
        not suit the recipe."""
        session = self._main
        state = session.state()
        states = {name: port.state() for name, port in self.ports.items()}
        found = check_servers(self.recipe, self.ports, state, states,
                              whole=self.kind.planned)
        self.conditions, found_now = await probe_conditions(self.recipe, self.ports,
                                                            self._plan,
                                                            lab=state.profile == "lab")
        found += found_now
        # Every warning is in the recipe start (journaled, shown by every front end) before
        # the first step.
        self.warnings = [*self._caller_warnings, *(w for w in found
                                                   if w not in self._caller_warnings)]
        self._attach(state, states)
        unsubscribe = session.subscribe(self._on_event)
        recipe = self.recipe
        session.record(RecipeRun, action="start", name=recipe.name, plan=start_plan(
            recipe, self.kind, len(self.steps), self.warnings, self._plan))
        if recipe.allow_reach:
            session.note(f"reach variables allowed: {', '.join(recipe.allow_reach)} "
                         f"([allow] reach in {recipe.path} and --allow-reach)")
        outcome, message = "end", ""
        try:
            await self._run_steps()
        except RunAborted as exc:
            outcome, message = "aborted", str(exc)
            raise
        except (RunFailed, LoadError, ServerError, HostError, KnobError) as exc:
            outcome, message = "failed", str(exc)
            raise RunFailed(str(exc)) from exc
        except asyncio.CancelledError:
            outcome, message = "aborted", "cancelled"
            raise
        except BaseException as exc:
            outcome, message = "failed", f"{type(exc).__name__}: {exc}"
            raise
        finally:
            try:
                await self._restore(outcome, message)
            finally:
                unsubscribe()
        return self.results_so_far("end")

    def _attach(self, state: SessionState, states: dict[str, SessionState]) -> None:
        """What the run reads while it goes: the loop, the abort event, a board per
        server."""
        self.window.multi = len(state.load_sources) > 1  # the per-second sums are the step's TPS
        self._loop = asyncio.get_running_loop()
        self._abort_event = asyncio.Event()
        if self._aborted:
            self._abort_event.set()
        self.boards = {n: MetricBoard(st.header, target=n)
                        for n, st in states.items() if st.header}

    async def _run_steps(self) -> None:
        """Prepare the tables, then the run as the recipe's kind drives it (kinds/)."""
        if self.prepare:
            await self.tables.prepare(self)
        await self.kind.run(self, self.recipe)

    async def run_arm_steps(self) -> None:
        """Every planned step in order (and the rounds added as it goes); an arm that does
        not take fails the run."""
        while True:
            if self._next == len(self.steps):
                self._more_rounds()
                if self._next == len(self.steps):
                    break
            step = self.steps[self._next]
            await self.run_step()
            if step.calibration and (self._next == len(self.steps)
                                     or not self.steps[self._next].calibration):
                self._calibrated()

    async def run_step(self, refusable: bool = False) -> StepResult:
        """The next planned step, its arm put in place first when it differs from the last
        step's or the server has made changes of its own (a side effect to put back): the
        step runs on its arm's plan.  An arm that does not take fails the run; ArmRefused
        instead if ``refusable`` (a tune's trial): the step counts done, skipped (what took
        of it stays: the next arm sets its own)."""
        step = self.steps[self._next]
        self._next += 1
        self.check()
        self.progress.step = step
        self._step_began = began = time.monotonic()
        if step.arm.name != self._arm or self.arms.side:
            self._arm = None
            try:
                await self._apply_arm(step)
            except ArmRefused as exc:
                if not refusable:
                    raise RunFailed(str(exc)) from exc
                self._step_began = None
                self.progress.done += 1
                raise
            self._arm = step.arm.name
        await self.step_measure.run(step)
        self._spent += time.monotonic() - began
        self._step_began = None
        self.progress.done += 1
        return self.results[-1]

    def add_steps(self, steps: Sequence[Step]) -> None:
        self.steps.extend(_numbered(list(steps), len(self.steps)))
        self.progress.total = max(self.progress.total, len(self.steps))

    def set_total(self, steps: int) -> None:
        self.progress.total = steps

    def results_so_far(self, outcome: str = "running", message: str = "") -> Results:
        """The results table of the steps measured so far (all of them after ``run()``)."""
        recipe = self.recipe
        results = build(recipe.name, [a.name for a in recipe.arms], list(recipe.threads),
                        self.results, outcome, message, len(self.steps), recipe.replicates,
                        recipe.waits.plateau)
        if recipe.timeline is not None:
            results.kind, results.checkpoints = recipe.kind, list(self.checkpoints)
            results.one_load = True
            results.actions = [{"at": a.at, "knobs": a.knobs} for a in recipe.timeline.actions]
        return results

    def _calibrated(self) -> None:
        """The calibration rounds are done: journal the noise they saw and the effect the
        planned replicates can find (a mark; headless prints it, the report finds it)."""
        note = calibration_note(self.results_so_far())
        self.calibration_line = "calibration: " + (note or "too few runs to read the noise")
        self.note(self.calibration_line)

    def _more_rounds(self) -> None:
        """``until_ci``: one more round while some cell's CI is wider than +-until_ci and
        the rounds are under ``max_replicates``."""
        extra, said = next_round(self.recipe, self.steps, self.results_so_far)
        self.add_steps(extra)
        if said:
            self.note(said)

    async def abortable(self, coro: Awaitable[T]) -> T:
        """Await ``coro`` unless an abort comes first (then it is cancelled)."""
        assert self._abort_event is not None
        task = await first_of(coro, self._abort_event)
        if task.cancelled():
            self.check()
        return task.result()

    async def _restore(self, outcome: str, message: str) -> None:
        """Stop the load and bring every knob back to the session's baseline (on every
        server the arms ran on)."""
        self.progress.step = None
        self._step_began = None
        self.status("restoring the baseline knobs")
        for name, session in self.ports.items():
            where = f" on target {name}" if name else ""
            with contextlib.suppress(Exception):
                await session.stop_load()
            failed: list[Change] = []
            try:
                failed = [c for c in await session.revert_to_baseline() if not c.holds]
            except Exception as exc:  # report it; the run's own outcome must not be lost
                message = (f"{message}; restoring the baseline{where} failed: "
                           f"{exc}").lstrip("; ")
                outcome = "failed"
            if failed:
                names = ", ".join(c.knob for c in failed)
                message = f"{message}; could not restore {names}{where}".lstrip("; ")
                outcome = "failed"
        with contextlib.suppress(OSError, ValueError):
            self._main.record(RecipeRun, action=outcome, name=self.recipe.name,
                              plan={"steps_done": self.progress.done}, message=message)
        self.status("done" if outcome == "end" else outcome)

    async def _apply_arm(self, step: Step) -> None:
        self.status(f"applying arm {step.arm.name}")
        with contextlib.suppress(LoadError):
            await self.session.stop_load()
        if step.arm.target != self._target:
            self._target = step.arm.target
            self.mark(f"arm {step.arm.name} runs on "
                      + (f"target {self._target}" if self._target else "the run's own server"))
        self.check()
        await self.arms.apply(step, self.session)

    # -- a timeline ----------------------------------------------------------------------------

    async def start_one_load(self, spec: LoadSpec, length: float) -> float:
        """Start the one load of a timeline or a soak (kinds/), its series emptied; the
        session time it started at."""
        session = self.session
        self.window.clear()
        session.use_load(spec)
        self.status("starting the load")
        await session.start_load()
        t0 = session.now()
        self._step_began = time.monotonic()
        self._timeline_end = self._step_began + length
        return t0

    async def set_knobs(self, knobs: dict[str, str], what: str, keep_load: bool) -> None:
        """A one-load kind's knobs (its start, an action) as one change."""
        kind = self.recipe.kind
        changes = await self.session.set_knobs(
            knobs, restart_ok=True, keep_load=keep_load,
            reason=f"recipe {self.recipe.name}: {kind} {what}", reach=self.recipe.allow_reach)
        for change in changes:
            if not change.holds:
                raise RunFailed(f"{kind} {what}: {change.knob} = {change.requested} did not "
                                f"take: {change.message}")

    def checkpoint(self, at: float, timeline: Timeline) -> None:
        w = self.window
        values, trends = checkpoint_values(self.session.now(), timeline.window, w.tps,
                                           w.p95, w.timeline_samples,
                                           timeline.metrics)
        self.checkpoints.append(self._main.record(
            Checkpoint, recipe=self.recipe.name, at=at, window=timeline.window, values=values,
            trends=trends))
        self.progress.done = len(self.checkpoints)
        shown = ", ".join(f"{k} {'-' if v is None else f'{v:,.2f}'}"
                          + {"climbing": " ↑", "falling": " ↓"}.get(trends.get(k, ""), "")
                          for k, v in values.items())
        self._last_checkpoint = f"checkpoint {at:g} s: {shown}"
        self.status(f"{self.recipe.kind} at {at:g} s")

    async def countdown(self, seconds: float, state: str) -> None:
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            self.status(state, phase_left=left)
            await self.sleep(min(1.0, left))


__all__ = ["ArmRefused", "Progress", "RecipeError", "RecipeRunner", "RunAborted", "RunFailed"]
