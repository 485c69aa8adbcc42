"""KnobtopApp: the live screen over a session (its port) running on its own thread, or over given
events; its keys, the recipe or tune it runs, and its quit.

The view of the event stream is live_view.py's; what the keys do lives beside it, a subject
each: knob_edits.py, load_keys.py, journal_notes.py, quit_flow.py, following.py."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Callable, Coroutine, Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from textual.binding import Binding

from knobtop.config import UiConfig
from knobtop.errors import KnobtopError
from knobtop.journal.events import Event, Header
from knobtop.journal.follow import JournalFollower
from knobtop.server.catalog import Catalog
from knobtop.session.port import SessionPort
from knobtop.ui.base import KnobtopBase
from knobtop.ui.following import start_following
from knobtop.ui.journal_notes import JournalNotes
from knobtop.ui.knob_edits import KnobEdits
from knobtop.ui.knob_picker import KnobProvider
from knobtop.ui.live_view import PAINT_INTERVAL, LiveViewApp
from knobtop.ui.load_keys import LoadKeys
from knobtop.ui.messages import JournalEvent, RecipeNote, RecipeProgress
from knobtop.ui.quit_flow import QuitFlow
from knobtop.ui.screens.choice import ChoiceScreen
from knobtop.ui.screens.confirm import ConfirmScreen, QuitScreen, RevertScreen
from knobtop.ui.screens.help import HelpScreen
from knobtop.ui.screens.prompt import PromptScreen
from knobtop.ui.widgets.graph_grid import GraphGrid
from knobtop.ui.widgets.incident_page import IncidentPage
from knobtop.ui.widgets.knob_panel import KnobPanel
from knobtop.ui.widgets.recipe_panel import RecipePanel

if TYPE_CHECKING:  # the runner is imported when a recipe runs: the screen starts without it
    from pathlib import Path

    from knobtop.analysis.results import Results
    from knobtop.recipes.model import Recipe
    from knobtop.recipes.outcome import RunOutcome
    from knobtop.recipes.runner import Progress, RecipeRunner
    from knobtop.recipes.search import Search
    from knobtop.recipes.tune import Tuner

# Actions that would fight a running recipe over the load or the knobs.
RECIPE_OWNS = frozenset({"toggle_load", "next_workload", "threads", "ask_threads", "prepare",
                         "undo", "revert_baseline", "focus_knobs"})
# Actions that need a session (a server to change, a journal to write): a follower hides them.
SESSION_ONLY = frozenset({"toggle_load", "next_workload", "threads", "ask_threads", "prepare",
                          "undo", "revert_baseline", "note", "mark", "abort_recipe", "edit"})


class KnobtopApp(LiveViewApp):
    """The live screen: the view of the journal event stream (LiveViewApp) with the keys
    that act on its session, the recipe or tune it runs, and the quit.

    Live: ``session`` runs on a SessionThread; its events arrive as JournalEvent messages
    and the keys call it through their parts (knob_edits, load_keys, journal_notes,
    quit_flow).  Without a session the app shows ``events`` under ``header`` (tests,
    replay), or a followed journal (``follow``).
    """

    # The screens and widgets whose bindings this app shows (one keymap serves all).
    BINDING_CLASSES: ClassVar[tuple[type[Any], ...]] = (
        ConfirmScreen, QuitScreen, RevertScreen, ChoiceScreen, HelpScreen, PromptScreen,
        KnobPanel)
    TITLE = "knobtop"
    OUTSIDE_MESSAGES = (JournalEvent, RecipeProgress, RecipeNote)
    COMMANDS = KnobtopBase.COMMANDS | {KnobProvider}
    BINDINGS = [
        Binding("q", "quit", "Quit", id="app.quit"),
        Binding("k", "focus_knobs", "Knobs", id="knob.focus"),
        Binding("l", "toggle_load", "Load", id="load.toggle"),
        Binding("w", "next_workload", "Workload", id="load.workload"),
        Binding("plus,equals_sign", "threads(2)", "Threads+", id="load.threads_up"),
        Binding("minus", "threads(0.5)", "Threads-", id="load.threads_down"),
        Binding("t", "ask_threads", "Threads", id="load.threads"),
        Binding("P", "prepare", "Prepare", id="load.prepare", show=False),
        Binding("u", "undo", "Undo", id="knob.undo"),
        Binding("b", "revert_baseline", "Baseline", id="knob.baseline"),
        Binding("n", "note", "Note", id="journal.note"),
        Binding("m", "mark", "Mark", id="journal.mark"),
        Binding("a", "abort_recipe", "Abort recipe", id="recipe.abort", show=False),
    ]

    def __init__(
        self,
        session: SessionPort | None = None,
        *,
        start_load: bool = False,
        header: Header | None = None,
        events: Iterable[Event] = (),
        follow: JournalFollower | None = None,
        recipe: Recipe | None = None,
        config: UiConfig | None = None,
        targets: Mapping[str, SessionPort] | None = None,
        tune: Search | None = None,
        resume: Path | None = None,
        realtime: bool = False,
    ) -> None:
        super().__init__(config, session=session, header=header, events=events, follow=follow)
        # `knobtop lab`/`connect`/`run --tui`: the screen's threads go ahead of the load (below
        # the session's), so a saturated machine delays neither a sample nor its paint
        self.realtime = realtime
        self.recipe = recipe
        # knobtop tune --tui (issue 21): the search the session runs, the journal it resumes
        self.tune = tune
        self.resume = resume
        self.tuner: Tuner | None = None
        self.targets = dict(targets or {})  # a recipe's further servers' sessions (issue 19)
        self.recipe_runner: RecipeRunner | None = None
        self.recipe_results: Results | None = None
        self.run_outcome: RunOutcome | None = None  # how the recipe or tune ended
        self._recipe_future: asyncio.Future[Any] | None = None
        self._unsubscribe: Callable[[], None] | None = None  # from the session's events
        self.start_load = start_load
        self.knob_edits = KnobEdits(self)
        self.load_keys = LoadKeys(self)
        self.journal_notes = JournalNotes(self)
        self.quit_flow = QuitFlow(self)

    # -- start and stop ---------------------------------------------------------

    def on_mount(self) -> None:
        self.apply_config()
        self.push_screen(self.live)
        for event in self._initial:
            self.apply_event(event)
        self.set_interval(PAINT_INTERVAL, self.paint)
        if self.follower is not None:
            start_following(self, self.follower, self._initial)
        if self.runner is not None and self.session is not None:
            self._unsubscribe = self.session.subscribe(self._from_session)
            self.runner.start()
            self.run_worker(self._open(), name="open", exclusive=True)
        if self.realtime:
            self._go_ahead()

    def _go_ahead(self) -> None:
        """Every thread the screen has now (the loop's, Textual's input and output threads,
        the session's call thread) in the real-time class one step below the session's
        process, where the system allows; threads started later are normal. A thread that
        runs too long without a pause drops the screen back to normal, and says so."""
        from knobtop.hosts.local import SCREEN_REALTIME, realtime_threads

        loop = asyncio.get_running_loop()

        def demoted(why: str) -> None:  # in a signal handler
            loop.call_soon_threadsafe(partial(self.notify, why, title="priority",
                                              severity="warning", markup=False))

        realtime_threads(demoted, priority=SCREEN_REALTIME, who="the live screen")

    def on_unmount(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _from_session(self, event: Event) -> None:
        """Called on the session's thread; post_message is thread-safe."""
        self.post_message(JournalEvent(event))

    async def _open(self) -> None:
        assert self.session is not None
        try:
            await self._submit(self.session.open())
        except (KnobtopError, OSError) as exc:
            self.exit_saying(f"knobtop: {exc}")
            return
        journal = self.session.state().journal_path
        if journal is not None:
            self._journal_name = journal.name
            self.screenshot_dir = journal.parent
        if self.live.query_one(GraphGrid).page == "incident":  # 4 was pressed while opening
            await self._call(self.session.incident_sampling(True))
        if self.recipe is not None:
            await self._run_recipe(self.recipe)
        elif self.tune is not None:
            await self._run_tune(self.tune)
        elif self.start_load:
            await self._call(self.session.start_load())

    # -- recipes ----------------------------------------------------------------

    async def _run_recipe(self, recipe: Recipe) -> None:
        """Run a recipe on the session's thread; progress and results go to the panel."""
        assert self.session is not None
        from knobtop.recipes.runner import RecipeRunner

        def progress(p: Progress) -> None:  # on the session's thread
            self.post_message(RecipeProgress(dataclasses.replace(p)))

        def note(text: str) -> None:  # on the session's thread
            self.post_message(RecipeNote(text))

        runner = self.recipe_runner = RecipeRunner(self.session, recipe, on_progress=progress,
                                                   on_note=note, targets=self.targets)
        outcome, message = await self._run_to_end(runner.run())
        self.recipe_results = runner.results_so_far(outcome, message)
        if recipe.curve is not None:  # a curve: its points are the result
            self.recipe_results.kind = recipe.kind
            self.recipe_results.checkpoints = list(runner.checkpoints)
        self.live.query_one(RecipePanel).show_results(self.recipe_results)
        self.notify(message or f"recipe {recipe.name} finished", title=f"recipe {outcome}",
                    severity="information" if outcome == "end" else "error", timeout=12,
                    markup=False)

    async def _run_to_end(self, run: Coroutine[Any, Any, object]) -> tuple[str, str]:
        """Run a recipe or a tune on the session's thread; its outcome and message (kept
        as ``run_outcome``: the command's exit code once the screen is gone)."""
        from knobtop.recipes.outcome import FINISHED, outcome_of

        self._recipe_future = self._submit(run)
        ended = FINISHED
        try:
            await self._recipe_future
        except Exception as exc:  # RunFailed, RunAborted, RecipeError (nothing changed), ...
            ended = outcome_of(exc)
        self.run_outcome = ended
        return ended.outcome, ended.message

    async def _run_tune(self, search: Search) -> None:
        """Run a tune on the session's thread: the panel shows its trials as they come,
        then the trials and the verification table."""
        assert self.session is not None
        from knobtop.analysis.results import Results
        from knobtop.recipes.tune import Tuner, read_prior

        def progress(p: Progress) -> None:  # on the session's thread
            self.post_message(RecipeProgress(dataclasses.replace(p)))

        def note(text: str) -> None:  # on the session's thread: a conclusion is a toast
            if text.startswith("tune:"):
                self.post_message(RecipeNote(text))

        try:
            prior = read_prior(self.resume, search) if self.resume is not None else []
        except KnobtopError as exc:
            self.notify(str(exc), title="tune refused", severity="error", markup=False)
            return
        tuner = self.tuner = Tuner(self.session, search, on_progress=progress, on_note=note,
                                   prior=prior, resumed_from=str(self.resume or ""))
        outcome, message = await self._run_to_end(tuner.run())
        verification = tuner.outcome.verification
        self.recipe_results = (verification.results if verification is not None
                               else Results(search.name, [], [], [], outcome, message))
        self.live.query_one(RecipePanel).show_tune_end(tuner.spec, list(tuner.trials),
                                                       verification, outcome, message)
        said = verification.line() if verification is not None else message
        self.notify(said or f"tune {search.name} {outcome}", title=f"tune {outcome}",
                    severity="information" if outcome == "end" else "error", timeout=30,
                    markup=False)

    def on_recipe_note(self, message: RecipeNote) -> None:
        # A finding worth reading before the run goes on (it is in the journal pane too).
        name = (f"tune {self.tune.name}" if self.tune is not None
                else f"recipe {self.recipe.name if self.recipe else ''}")
        self.notify(message.text, title=name, timeout=30, markup=False)

    def on_recipe_progress(self, message: RecipeProgress) -> None:
        # Progress is posted from the session's thread: one can arrive after the results
        # are shown, and must not paint over them.
        if self._live_ready and self.recipe_results is None:
            panel = self.live.query_one(RecipePanel)
            if self.tuner is not None:
                panel.show_tune(message.progress, self.tuner.spec, list(self.tuner.trials))
            else:
                panel.show_progress(message.progress)

    def action_abort_recipe(self) -> None:
        runner = self.tuner or self.recipe_runner
        if runner is None or self.recipe_results is not None:
            self.notify("no recipe is running")
            return

        def answered(yes: bool | None) -> None:
            if yes:
                runner.abort()
                self.notify("aborting: stopping the load and restoring the baseline ...")

        self.push_screen(ConfirmScreen("Abort the recipe?",
                                       "The load stops and every knob the recipe changed "
                                       "goes back to its baseline value (static ones with "
                                       "one restart).", yes="Abort"), answered)

    @property
    def recipe_running(self) -> bool:
        return (self.recipe_runner is not None or self.tuner is not None) \
            and self.recipe_results is None

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """A follower is read-only: what needs a session is neither in the footer nor in the
        help.  While a recipe runs, the load and the knobs are the recipe's: hands off."""
        if self.session is None and action in SESSION_ONLY:
            return False
        return not (self.recipe_running and action in RECIPE_OWNS)

    # -- quit (quit_flow.py) ----------------------------------------------------

    async def action_quit(self) -> None:
        """Quit; knobs this session left off its baseline are listed first, to revert
        or keep (the choice is journaled).  The dialog needs the app's loop running, so
        the quit runs as a worker."""
        self.quit_flow.start()

    async def abort_run(self) -> None:
        """Abort the recipe or tune that runs, and wait for it: the load stops and the
        baseline knobs come back before the screen closes."""
        running = self.tuner or self.recipe_runner
        if self.recipe_running and running is not None:
            self.set_state("aborting the recipe: restoring the baseline knobs ...", paint=True)
            running.abort()
            if self._recipe_future is not None:
                with contextlib.suppress(Exception):
                    await asyncio.wait({self._recipe_future}, timeout=900)

    # -- pages ------------------------------------------------------------------

    def action_page(self, page: str) -> None:
        """Live, the incident page is sampled only while it is shown."""
        super().action_page(page)
        if self.session is not None and self.runner is not None and not self.quit_flow.quitting:
            on = page == "incident"
            if on and self.live.query_one(IncidentPage).event is None:
                self.live.query_one(IncidentPage).show(None)
            self.run_worker(self._call(self.session.incident_sampling(on)),
                            group="incident")
        elif page == "incident" and self.live.query_one(IncidentPage).event is None:
            self.live.query_one(IncidentPage).show(
                None, waiting="no incident snapshot yet: the writer samples one only while "
                "its incident page (key 4) is shown")

    # -- knobs (knob_edits.py) --------------------------------------------------

    def action_focus_knobs(self) -> None:
        self.live.query_one(KnobPanel).focus()

    @property
    def knob_catalog(self) -> Catalog | None:
        """Every server variable, for the knob picker (built by the session at open)."""
        return self.knob_edits.catalog

    def on_knob_panel_edit_requested(self, message: KnobPanel.EditRequested) -> None:
        self.edit_knob(message.knob)

    def edit_knob(self, name: str) -> None:
        """Ask for a value for ``name``; static knobs also ask to confirm the restart."""
        self.knob_edits.edit(name)

    def action_undo(self) -> None:
        self.knob_edits.undo()

    def action_revert_baseline(self) -> None:
        self.knob_edits.revert_baseline()

    # -- load (load_keys.py) ----------------------------------------------------

    def action_toggle_load(self) -> None:
        self.load_keys.toggle()

    def action_next_workload(self) -> None:
        self.load_keys.next_workload()

    def action_threads(self, factor: float) -> None:
        self.load_keys.threads(factor)

    def action_ask_threads(self) -> None:
        self.load_keys.ask_threads()

    def action_prepare(self) -> None:
        """Create the tables the load needs (when a run said they are missing)."""
        self.load_keys.prepare()

    # -- notes (journal_notes.py) -----------------------------------------------

    def action_note(self) -> None:
        self.journal_notes.note()

    def action_mark(self) -> None:
        self.journal_notes.mark()
