"""The load keys of the live screen: start and stop the load, pick its workload, change its
threads, prepare its tables; each runs on the session (a follower has none: it says so)."""

from __future__ import annotations

from knobtop.load.base import WORKLOADS
from knobtop.session.port import SessionPort
from knobtop.ui.live_view import LiveViewApp
from knobtop.ui.screens.choice import ChoiceScreen
from knobtop.ui.screens.prompt import PromptScreen


class LoadKeys:
    """What the load keys do on ``app``'s session."""

    def __init__(self, app: LiveViewApp) -> None:
        self.app = app

    def toggle(self) -> None:
        """Start the load, or stop it."""
        session = self.app.need_session()
        if session is None or self.app.board is None:
            return
        self.app.run_worker(self.app._call(session.toggle_load()), group="load")

    def next_workload(self) -> None:
        """Pick the load's workload from a list."""
        session = self.app.need_session()
        if session is None:
            return
        spec = session.state().load
        choices = list(WORKLOADS)
        if spec.workload not in choices:  # the person's own .lua script
            choices.append(spec.workload)

        def chosen(workload: str | None) -> None:
            if workload is not None and workload != spec.workload:
                self._change(session, workload=workload)

        # A picker, not a cycle: each step of a cycle would start a new load phase.
        self.app.push_screen(ChoiceScreen("load workload", choices, spec.workload), chosen)

    def threads(self, factor: float) -> None:
        """The load's threads times ``factor`` (from 1 to 1024)."""
        session = self.app.need_session()
        if session is None:
            return
        spec = session.state().load
        threads = max(1, min(1024, round(spec.threads * factor)))
        if threads == spec.threads:  # a new phase for the same threads would only cut a gap
            self.app.notify(f"already at {spec.threads} thread{'s' if spec.threads > 1 else ''} "
                            f"(threads go from 1 to 1024)", timeout=4)
            return
        self._change(session, threads=threads)

    def ask_threads(self) -> None:
        """Ask for the load's threads."""
        session = self.app.need_session()
        if session is None:
            return
        spec = session.state().load

        def chosen(value: str | None) -> None:
            if value is None:
                return
            if not value.isdigit() or not 1 <= int(value) <= 1024:
                self.app.notify(f"threads must be a number from 1 to 1024, not '{value}'",
                                severity="error", markup=False)
                return
            self._change(session, threads=int(value))

        self.app.push_screen(PromptScreen("sysbench threads", "1 to 1024", str(spec.threads)),
                             chosen)

    def _change(
        self, session: SessionPort, workload: str | None = None, threads: int | None = None
    ) -> None:
        """Running load restarts as a new phase; stopped load just remembers the choice.

        The session decides which (on its own thread), not this possibly stale view."""
        running = self.app.board is not None and self.app.board.load_running

        async def change() -> None:
            spec = await self.app._call(session.change_load(workload, threads))
            if spec is not None and not running:
                self.app.notify(f"next load: {spec.workload} x{spec.threads} (press l to start)",
                                markup=False)

        self.app.run_worker(change(), group="load")

    def prepare(self) -> None:
        """Create the tables the load needs (when a run said they are missing): sysbench's,
        or LinkBench's graph."""
        session = self.app.need_session()
        if session is None:
            return
        what = session.state().load.tables_text
        self.app.notify(f"preparing {what} ...", markup=False)

        async def prepare() -> None:
            loaded = await self.app._call(session.prepare_load())
            if loaded is not None:
                self.app.notify(f"{what}: ready" if loaded else f"{what}: already there",
                                markup=False)

        self.app.run_worker(prepare(), group="load")
