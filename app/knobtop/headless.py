"""The plain-terminal front end: `--headless` sessions and `knobtop run` without --tui.

It uses a session only through its port (subscribe, state, commands), like the live screen.
One place turns Ctrl+C/SIGTERM into a stop and a run's end into an exit code and the reason
the journal's ``end`` event gives.  Text from servers, files and recipes is never markup.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, TypeVar

from rich.console import Console
from rich.text import Text

from knobtop.errors import KnobtopError
from knobtop.journal.events import (
    Change,
    End,
    Error,
    Event,
    OutsideChange,
    Phase,
    RecipeRun,
    Restart,
    Sample,
    target_of,
)
from knobtop.printable import printable
from knobtop.server.policy import reach_names

if TYPE_CHECKING:
    from pathlib import Path

    from rich.progress import Progress, TaskID

    from knobtop.analysis.results import Results
    from knobtop.load.base import LoadSpec
    from knobtop.load.sysbench_output import PrepareProgress
    from knobtop.recipes.model import Recipe
    from knobtop.recipes.orders import RunReport, TuneReport
    from knobtop.recipes.outcome import RunOutcome
    from knobtop.recipes.search import Search
    from knobtop.session.options import ScheduledChange
    from knobtop.session.port import RunOrder, SessionPort
    from knobtop.session.targets import Targets

R = TypeVar("R", bound="RunReport | TuneReport")  # a run's report, as its order gives it


def labelled(label: str, message: str) -> Text:
    """A red label and a message that is printed as it is (file names, server errors and
    profile fields may hold ``[``: they are never read as markup), its control characters
    shown as escapes (they may hold a terminal's control sequences)."""
    return Text.assemble((label, "bold red"), " ", printable(message))


class ConsoleFeedback:
    """What a session's set-up shows on the terminal (knobtop.session.build.Feedback)."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def status(self, text: str) -> contextlib.AbstractContextManager[object]:
        return self.console.status(Text(text))

    def say(self, text: str, *, highlight: bool = True) -> None:
        self.console.print(text, markup=False, highlight=highlight)

    async def prepare(
        self,
        spec: LoadSpec,
        prepare: Callable[[Callable[[PrepareProgress], None]], Awaitable[bool]],
    ) -> None:
        """Load sysbench tables (unless already there) behind a progress bar."""
        if spec.workload == "linkbench":
            await self._load_graph(spec, prepare)
            return
        with progress_bars(self.console, "{task.completed}/{task.total}",
                           transient=True) as progress:
            task = progress.add_task("Checking sysbench tables", total=spec.tables * 3)

            def on_progress(step: PrepareProgress) -> None:
                progress.update(task, advance=1, description=f"Loading {step.table}: {step.stage}")

            loaded = await prepare(on_progress)
        if loaded:
            self.console.print(f"Loaded {spec.tables} sysbench tables x {spec.table_size} rows")

    async def _load_graph(
        self,
        spec: LoadSpec,
        prepare: Callable[[Callable[[PrepareProgress], None]], Awaitable[bool]],
    ) -> None:
        """LinkBench's load phase behind a progress bar of rows, with the inserts/s of the
        last second (issue 20)."""
        import time

        from knobtop.load.linkbench import expected_rows

        nodes, links, counts = expected_rows(spec.table_size)
        total = nodes + links + counts
        last = [time.monotonic(), 0, 0.0]  # when, rows then, rows/s of the last second
        with progress_bars(self.console, "{task.completed:,}/{task.total:,} rows",
                           "{task.fields[rate]}", transient=True) as progress:
            task = progress.add_task("Checking the LinkBench graph", total=total, rate="")

            def on_progress(step: PrepareProgress) -> None:
                now = time.monotonic()
                if now - float(last[0]) >= 1.0:
                    last[2] = (step.records - int(last[1])) / (now - float(last[0]))
                    last[0], last[1] = now, step.records
                progress.update(task, completed=step.records,
                                description=f"LinkBench load phase: {step.stage}",
                                rate=f"{last[2]:,.0f} inserts/s" if last[2] else "")

            loaded = await prepare(on_progress)
        if loaded:
            self.console.print(f"Loaded the LinkBench graph: {nodes:,} nodes, {links:,} links, "
                               f"{counts:,} link counts")


def describe(event: Event) -> str | None:
    """One line for the headless log, for the events a person watching cares about."""
    if isinstance(event, Change):
        text = f"change {event.knob}: {event.old} -> {event.new} [{event.result}]"
        return f"{text} {event.message}".rstrip()
    if isinstance(event, OutsideChange):
        return f"{event.text} (between {event.since:.2f}s and {event.t:.2f}s)"
    if isinstance(event, Phase):
        return f"load {event.action}: {event.load_text} {event.message}".rstrip()
    if isinstance(event, Error):
        return f"error ({event.source}): {event.message}"
    if isinstance(event, Restart):
        return f"{event.node}: {event.step} {event.result} in {event.seconds:.1f} s {event.message}"
    return None


def plan_warnings(event: Event) -> list[str]:
    """A recipe's or a tune's warnings, journaled in its start before the first step."""
    if isinstance(event, RecipeRun) and event.action == "start":
        return [str(w) for w in event.plan.get("warnings", [])]
    return []


def plan_conditions(event: Event) -> list[str]:
    """The conditions probe's lines of a recipe's or a tune's start (server.conditions),
    each server's ("NAME: " before a further target's)."""
    if not (isinstance(event, RecipeRun) and event.action == "start"):
        return []
    from knobtop.conditions import condition_lines

    return condition_lines(event.plan)


def log_line(console: Console, event: Event) -> None:
    target = target_of(event)  # a recipe's further server (issue 19)
    where = f"{target}: " if target else ""
    for fact in plan_conditions(event):  # what the box offers, before the warnings
        console.print(f"[{event.t:8.2f}s] {where}conditions: {printable(fact)}",
                      highlight=False, markup=False)
    for warning in plan_warnings(event):  # before the first step, not after the run
        console.print(f"[{event.t:8.2f}s] {where}warning: {printable(warning)}",
                      highlight=False, markup=False)
    line = describe(event)
    if line:
        console.print(f"[{event.t:8.2f}s] {where}{line}", highlight=False, markup=False)


@contextlib.contextmanager
def stop_on_signals(stop: Callable[[], None]) -> Iterator[None]:
    """Ctrl+C and SIGTERM call ``stop`` (the run ends cleanly) while the block runs."""
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop)
    try:
        yield
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)


class Tally:
    """Samples and load phases as the events say (the summary line at the end)."""

    def __init__(self) -> None:
        self.samples = 0
        self.phases = 0

    def __call__(self, event: Event) -> None:
        if isinstance(event, Sample):
            self.samples += 1
        elif isinstance(event, Phase):
            self.phases = max(self.phases, event.phase)
        elif isinstance(event, End):
            self.samples = event.samples


async def restore_baseline(session: SessionPort, console: Console) -> None:
    """Headless --set changes go back at the end (as a recipe's do): the next session
    must not take them for its baseline.  The load stops first, so a static revert does
    not start a new phase; what was done is journaled as the quit choice."""
    try:
        if session.state().load_running:
            await session.stop_load()
        diff = await session.baseline_diff()
        if not diff:
            return
        failed = [c for c in await session.revert_to_baseline() if not c.holds]
        session.quit_choice("revert", diff)
    except (KnobtopError, TimeoutError) as exc:
        console.print(f"could not restore the baseline knobs: {printable(str(exc))}",
                      markup=False)
        return
    for change in failed:
        console.print(f"could not restore {change.knob}: {change.message}", markup=False)


async def run_headless(
    session: SessionPort,
    duration: float,
    changes: Sequence[ScheduledChange],
    start_load: bool,
    console: Console,
    *,
    allow_reach: bool = False,
) -> int:
    """Record ``duration`` seconds, making ``changes`` on their schedule; the exit code.
    ``allow_reach``: --allow-reach was given, so --set may change reach variables."""
    reach = tuple(c.knob for c in changes) if allow_reach else ()
    stop = asyncio.Event()
    tally = Tally()

    def log(event: Event) -> None:
        tally(event)
        log_line(console, event)
        if isinstance(event, Error) and event.source == "journal":
            stop.set()  # nothing can be recorded any more: end the run

    session.subscribe(log)
    reason = "duration reached"
    code = 0
    with stop_on_signals(stop.set):
        try:
            await session.open()
            console.print(f"Recording {duration:g} s to {session.state().journal_path}",
                          markup=False)
            if reach_names(reach):
                session.note("reach variables allowed: "
                             f"{', '.join(reach_names(reach))} (--set with --allow-reach)")
            if start_load:
                await session.start_load()
            started = time.monotonic()
            for change in sorted(changes, key=lambda c: c.at):
                wait = started + change.at - time.monotonic()
                if wait > 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(stop.wait(), wait)
                if stop.is_set():
                    break
                # On the command line, --set is the confirmation: static knobs restart.
                result = await session.set_knob(change.knob, change.value, restart_ok=True,
                                                reach=reach)
                if not result.holds:
                    code = 1
            remaining = started + duration - time.monotonic()
            if remaining > 0 and not stop.is_set():
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), remaining)
            if session.state().journal_error is not None:
                reason, code = "the journal could not be written", 1
            elif stop.is_set():
                reason = "interrupted"
        finally:
            state = session.state()
            if changes and state.journal_path is not None and state.journal_error is None:
                await restore_baseline(session, console)
            await session.close(reason)
    console.print(f"{tally.samples} samples, {tally.phases} load phase(s); {reason}",
                  markup=False)
    return code


def progress_bars(console: Console, *counts: str, left: bool = False,
                  transient: bool = False) -> Progress:
    """Progress bars: the task's description, the bar, ``counts`` (templates of the task's
    numbers), the time elapsed and, with ``left``, the ``left`` field (the time to go).

    Every column is plain text, so a description (a recipe's name, a server's table) is
    shown as written, never read as markup or emoji codes.  rich.progress (and the Live,
    Table and Spinner under it) is imported here, when bars are first shown: the live
    screen's processes hold this module from before the session's process forks, and
    neither draws a bar afterwards."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    return Progress(TextColumn("{task.description}", markup=False), BarColumn(),
                    *(TextColumn(c, markup=False) for c in counts), TimeElapsedColumn(),
                    *([TextColumn("{task.fields[left]}", markup=False)] if left else []),
                    console=console, transient=transient)


def bar_callbacks(bars: Progress, task: TaskID) -> Callable[[Event], None]:
    """A listener that puts a run's progress events into its bar (the step, what it waits
    for, time left) and prints its findings above the bars (never markup)."""
    from knobtop.journal.events import Progress as RunProgress
    from knobtop.recipes.runner import short_duration

    def heard(event: Event) -> None:
        if not isinstance(event, RunProgress):
            return
        if event.note:
            bars.console.print(event.note, highlight=False, markup=False)
            return
        wait = f" ({event.waiting_for})" if event.waiting_for else ""
        bars.update(task, completed=event.done, total=event.total,
                    description=f"{event.label}{wait}",
                    left=f"~{short_duration(event.seconds_left)} left")

    return heard


def subscribe_log(session: SessionPort, console: Console) -> list[str]:
    """Log the session's events as they come; returns the list the warnings the run's
    start said are added to (the end says only the ones met later)."""
    said: list[str] = []

    def log(event: Event) -> None:
        said.extend(plan_warnings(event))
        log_line(console, event)

    session.subscribe(log)
    return said


def print_warnings(console: Console, warnings: Sequence[str], said: Sequence[str]) -> None:
    """The warnings the run met on its way (those of its start were said before it)."""
    for warning in warnings:
        if warning not in said:
            console.print(f"warning: {printable(warning)}", highlight=False, markup=False)


async def run_to_end(console: Console, what: str, session: SessionPort,
                     run: Callable[[], Awaitable[RunReport | TuneReport]],
                     open_: Callable[[], Awaitable[object]],
                     close: Callable[[str], Awaitable[None]]) -> int:
    """Open, run a recipe or a tune to its end through the session (Ctrl+C/SIGTERM abort
    it), close with the reason; the exit code: 0 finished, 2 refused (nothing changed),
    130 aborted, 1 failed (the run restored the baseline either way)."""
    from knobtop.recipes.model import RecipeError
    from knobtop.recipes.outcome import FINISHED, outcome_of

    ended = FINISHED
    with stop_on_signals(session.abort_recipe):
        try:
            await open_()
            console.print(f"Journal: {session.state().journal_path}", markup=False)
            try:
                ended = (await run()).outcome
            except RecipeError as exc:  # (a run's refusal comes in its report)
                ended = outcome_of(exc)
            say_outcome(console, what, ended)
        finally:
            await close(ended.reason(what))
    return ended.code


def say_outcome(console: Console, what: str, ended: RunOutcome) -> None:
    """How a run that did not finish ended, in a line."""
    from knobtop.recipes.outcome import RESTORED

    if ended.outcome == "refused":
        console.print(labelled("knobtop:", ended.message), highlight=False)
    elif ended.outcome == "aborted":
        console.print("Aborted: the load was stopped and the baseline knobs restored.")
    elif ended.outcome == "failed":
        console.print(labelled(f"{what.capitalize()} failed:",
                               f"{ended.message} ({RESTORED})"), highlight=False)


async def run_with_bars(bars: Progress, task: TaskID, what: str, session: SessionPort,
                        order: RunOrder[R], open_: Callable[[], Awaitable[object]],
                        close: Callable[[str], Awaitable[None]]
                        ) -> tuple[int, R | None, list[str]]:
    """Run ``order`` through the session to its end (run_to_end), its events logged above
    the bars and its progress in ``task``: the exit code, the run's report (None when it
    did not run) and the warnings its start said."""
    report: R | None = None

    async def run() -> R:
        nonlocal report
        report = await session.run_recipe(order)
        return report

    said = subscribe_log(session, bars.console)
    unsubscribe = session.subscribe(bar_callbacks(bars, task))
    try:
        code = await run_to_end(bars.console, what, session, run, open_, close)
    finally:
        unsubscribe()
    return code, report, said


async def run_recipe_headless(
    session: SessionPort, recipe: Recipe, console: Console, targets: Targets | None = None
) -> tuple[int, Results | None]:
    """Run the recipe with progress bars and print the results table.  Returns the exit
    code (0 when it finished) and the results (None when no step ran).

    Only port methods are used here: the run itself is the session's
    (``SessionPort.run_recipe``; its further servers are the session's targets)."""
    from knobtop.analysis.results import results_table
    from knobtop.recipes.orders import RecipeOrder

    with progress_bars(console, "{task.completed}/{task.total} {task.fields[unit]}",
                       left=True) as bars:
        line = recipe.timeline
        task = bars.add_task(recipe.name, total=len(recipe.schedule())
                             + len(recipe.calibration_schedule()) if line is None
                             else len(line.checkpoints), left="",
                             unit="steps" if line is None else "checkpoints")
        if recipe.curve is not None:  # its bar counts the values measured
            bars.update(task, total=len(recipe.curve.values), unit="values")
        code, report, said = await run_with_bars(
            bars, task, "recipe", session, RecipeOrder(recipe, prepare=True),
            targets.open if targets is not None else session.open,
            targets.close if targets is not None else session.close)
    if report is None:
        return code, None
    print_warnings(console, report.warnings, said)
    results = report.results
    if recipe.curve is not None:  # a curve: its points are the result
        from knobtop.analysis.seedtables import curve

        if results.checkpoints:
            console.print(curve(results).rich())
        return code, results
    if report.checkpoints:  # a timeline: its checkpoints are the result
        from knobtop.analysis.seedtables import timeline

        console.print(timeline(results).rich())
        return code, results
    if not report.measured:
        return code, None
    console.print(results_table(results))
    return code, results


async def run_tune_headless(session: SessionPort, search: Search, console: Console,
                            resume: Path | None = None) -> int:
    """Run a tune with a progress bar, a line per trial, and print the trials and the
    verification table; the exit code (0 when it finished)."""
    from knobtop.analysis.tune import trials_table, verification_table
    from knobtop.recipes.orders import TuneOrder
    from knobtop.recipes.resume import read_prior

    prior = read_prior(resume, search) if resume is not None else []
    with progress_bars(console, "{task.completed}/{task.total} steps", left=True) as bars:
        task = bars.add_task(search.name, total=None, left="")
        code, report, said = await run_with_bars(
            bars, task, "tune", session, TuneOrder(search, prior, str(resume or "")),
            session.open, session.close)
    if report is None:
        return code
    print_warnings(console, report.warnings, said)
    if report.trials:
        console.print(trials_table(report.spec, report.trials))
    verification = report.verification
    if verification is not None:
        console.print(verification_table(verification))
        console.print(verification.line(), highlight=False, markup=False)
    return code


__all__ = ["ConsoleFeedback", "describe", "labelled", "restore_baseline", "run_headless",
           "run_recipe_headless", "run_tune_headless"]
