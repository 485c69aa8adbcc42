"""KnobtopApp: the live screen over a session (its port) running on its own thread, or over given
events; its keys, the recipe or tune it runs, and its quit.

The view of the event stream is live_view.py's; what the keys do lives beside it, a subject
each: knob_edits.py, load_keys.py, journal_notes.py, quit_flow.py, following.py."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Coroutine, Iterable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, ClassVar

from textual.binding import Binding

from knobtop.config import UiConfig
from knobtop.errors import KnobtopError
from knobtop.journal.events import Event, Header, Progress, Trial
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
from knobtop.ui.messages import JournalEvent
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
    from knobtop.analysis.tune import TuneSpec
    from knobtop.recipes.model import Recipe
    from knobtop.recipes.orders import RunReport, TuneReport
    from knobtop.recipes.outcome import RunOutcome
    from knobtop.recipes.search import Search

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
    OUTSIDE_MESSAGES = (JournalEvent,)
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
        self.targets = dict(targets or {})  # a recipe's further servers' sessions (issue 19)
        # The recipe or tune under way in the session (its events carry ``run_name``), what
        # a tune's panel shows, and what the run reported at its end
        self.run_name = ""
        self.tune_spec: TuneSpec | None = None
        self.trials: list[Trial] = []
        self.run_report: RunReport | TuneReport | None = None
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
        """Run a recipe where the session lives; its progress comes as journal events,
        its results go to the panel."""
        assert self.session is not None
        from knobtop.recipes.orders import RecipeOrder, RunReport

        self.run_name = recipe.name
        report = await self._run_to_end(self.session.run_recipe(RecipeOrder(recipe)))
        if not isinstance(report, RunReport):
            return
        self.recipe_results = report.results
        self.live.query_one(RecipePanel).show_results(report.results)
        ended = report.outcome
        self.notify(ended.message or f"recipe {recipe.name} finished",
                    title=f"recipe {ended.outcome}",
                    severity="information" if ended.outcome == "end" else "error", timeout=12,
                    markup=False)

    async def _run_to_end(self, run: Coroutine[Any, Any, RunReport | TuneReport]
                          ) -> RunReport | TuneReport | None:
        """Run a recipe or a tune through the session; its report (None when the session
        could not run it), its outcome kept as ``run_outcome``: the command's exit code once
        the screen is gone."""
        from knobtop.recipes.outcome import outcome_of

        self._recipe_future = future = self._submit(run)
        future.add_done_callback(self._run_ended)  # (first: before a quit reads the report)
        try:
            report: RunReport | TuneReport = await future
        except Exception as exc:  # the session lost, a second run refused
            self.run_outcome = outcome_of(exc)
            self._recipe_future = None  # no run is under way: the keys are the person's
            self.notify(str(exc), title="run failed", severity="error", markup=False)
            return None
        return report

    def _run_ended(self, future: asyncio.Future[RunReport | TuneReport]) -> None:
        """Keep the run's report and outcome as soon as it comes back (a quit waits for
        it, then prints what it measured)."""
        if not future.cancelled() and future.exception() is None:
            self.run_report = future.result()
            self.run_outcome = self.run_report.outcome

    async def _run_tune(self, search: Search) -> None:
        """Run a tune where the session lives: the panel shows its trials as they come
        (journal events), then the trials and the verification table."""
        assert self.session is not None
        from knobtop.recipes.orders import TuneOrder, TuneReport
        from knobtop.recipes.resume import read_prior, spec_of

        try:
            prior = read_prior(self.resume, search) if self.resume is not None else []
        except KnobtopError as exc:
            self.notify(str(exc), title="tune refused", severity="error", markup=False)
            return
        self.run_name, self.tune_spec = search.name, spec_of(search)
        report = await self._run_to_end(self.session.run_recipe(
            TuneOrder(search, prior, str(self.resume or ""))))
        if not isinstance(report, TuneReport):
            return
        ended, verification = report.outcome, report.verification
        self.recipe_results = report.results
        self.live.query_one(RecipePanel).show_tune_end(report.spec, report.trials,
                                                       verification, ended.outcome,
                                                       ended.message)
        said = verification.line() if verification is not None else ended.message
        self.notify(said or f"tune {search.name} {ended.outcome}", title=f"tune {ended.outcome}",
                    severity="information" if ended.outcome == "end" else "error", timeout=30,
                    markup=False)

    def run_event(self, event: Event) -> None:
        """A run's progress and trials, from the session's events."""
        if isinstance(event, Trial) and self.tune_spec is not None:
            self.trials.append(event)
        if not isinstance(event, Progress) or event.run != self.run_name:
            return
        if event.note:  # a finding worth reading before the run goes on (a toast)
            if self.tune is None or event.note.startswith("tune:"):
                self.notify(event.note, title=f"tune {event.run}" if self.tune is not None
                            else f"recipe {event.run}", timeout=30, markup=False)
            return
        # One can arrive after the results are shown, and must not paint over them.
        if self._live_ready and self.recipe_results is None:
            panel = self.live.query_one(RecipePanel)
            if self.tune_spec is not None:
                panel.show_tune(event, self.tune_spec, list(self.trials))
            else:
                panel.show_progress(event)

    def action_abort_recipe(self) -> None:
        if not self.recipe_running:
            self.notify("no recipe is running")
            return
        session = self.session
        assert session is not None

        def answered(yes: bool | None) -> None:
            if yes:
                self._submit(self._abort_run(session))
                self.notify("aborting: stopping the load and restoring the baseline ...")

        self.push_screen(ConfirmScreen("Abort the recipe?",
                                       "The load stops and every knob the recipe changed "
                                       "goes back to its baseline value (static ones with "
                                       "one restart).", yes="Abort"), answered)

    @staticmethod
    async def _abort_run(session: SessionPort) -> None:
        session.abort_recipe()  # (on the session's thread, as every call)

    @property
    def recipe_running(self) -> bool:
        return self._recipe_future is not None and self.recipe_results is None

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
        baseline knobs come back before the screen closes; what it measured is kept (its
        report comes back)."""
        session = self.session
        if not self.recipe_running or session is None:
            return
        self.set_state("aborting the recipe: restoring the baseline knobs ...", paint=True)
        with contextlib.suppress(Exception):
            await self._submit(self._abort_run(session))
        future = self._recipe_future
        if future is not None:
            with contextlib.suppress(Exception):
                await asyncio.wait({future}, timeout=900)  # (_run_ended keeps its report)

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
