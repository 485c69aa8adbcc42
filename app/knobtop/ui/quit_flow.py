"""The live screen's quit: what the session left off its baseline is listed first, to
revert or keep (the choice is journaled); a running recipe is aborted and the session
stopped before the screen closes."""

from __future__ import annotations

import asyncio

from knobtop.errors import KnobtopError
from knobtop.server.knobs import SEED_KNOBS
from knobtop.session.port import BaselineDiff, SessionPort
from knobtop.ui.knob_edits import differences, report_change
from knobtop.ui.live_view import LiveViewApp
from knobtop.ui.screens.confirm import QuitScreen


class QuitFlow:
    """Quitting ``app``: one quit at a time (``quitting`` while it asks or closes)."""

    def __init__(self, app: LiveViewApp) -> None:
        self.app = app
        self.quitting = False

    def start(self) -> None:
        """Quit in a worker: the dialog needs the app's loop running."""
        if not self.quitting:
            # The quit dialog comes once the knobs are read: keys typed behind q wait for it.
            self.app.key_queue.hold_for(self.app.run_worker(self._quit(), name="quit",
                                                            group="quit", exclusive=True))

    async def _ask(self, session: SessionPort) -> bool:
        """Revert or keep what differs from the baseline; False when the person stays."""
        if session.state().restart_in_progress:
            self.app.set_state("quit: waiting for the restart in progress to finish ...",
                               paint=True)
        try:
            diff = await self.app._call(session.baseline_diff())
        except (TimeoutError, KnobtopError, OSError) as exc:
            self.app.notify(f"cannot read the knobs to revert them: {exc}", severity="error",
                            markup=False)
            diff = None
        if not diff:  # nothing differs, or the server does not answer (said in a notice)
            return True
        answer: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        lab = session.state().profile == "lab"
        self.app.push_screen(QuitScreen(quit_details(session, diff, lab=lab),
                                        default="revert" if lab else None,
                                        outside=any(d.outside for d in diff)),
                             answer.set_result)
        choice = await answer
        if choice is None:
            return False
        if choice in ("revert", "revert_all"):
            self.app.set_state("quitting: reverting to the baseline ...", paint=True)
            changes = await self.app._call(
                session.revert_to_baseline(outside=choice == "revert_all"))
            for change in changes or []:
                if not change.holds:
                    report_change(self.app, change)
        assert self.app.runner is not None
        await asyncio.wrap_future(self.app.runner.call(lambda: session.quit_choice(choice, diff)))
        return True

    async def _quit(self) -> None:
        app = self.app
        self.quitting = True
        try:
            if (not app.recipe_running and app.session is not None
                    and app.runner is not None and app.session.state().journal_path is not None
                    and not await self._ask(app.session)):
                return
            await self._close_and_exit()
        finally:
            self.quitting = False

    async def _close_and_exit(self) -> None:
        # Abort first: the load stops and the baseline knobs come back before closing.
        await self.app.abort_run()
        if self.app.runner is not None:
            busy = self.app.session is not None and self.app.session.state().restart_in_progress
            self.app.set_state("stopping (the restart in progress finishes first) ..." if busy
                               else "stopping ...", paint=True)
            await asyncio.to_thread(self.app.runner.stop, "quit")
        self.app.exit(0)


def quit_details(session: SessionPort, diff: list[BaselineDiff], *, lab: bool) -> str:
    """The quit dialog's text: what differs, what revert does, what keep leaves."""
    state = session.state()
    keep = keep_text(diff, lab=lab, stops=state.server_stops)
    busy = "\nA restart is in progress: it finishes first." if state.restart_in_progress else ""
    outside = ("\nRevert all (a) puts the session's baseline back for those too."
               if any(d.outside for d in diff) else "")
    return (f"{differences(diff)}\nRevert: {session.revert_plan(diff)}{outside}\n{keep}{busy}")


def keep_text(diff: list[BaselineDiff], *, lab: bool, stops: bool) -> str:
    """What Keep really leaves: a sandbox that stops takes the values set live with it (its
    drop-in file keeps the static ones); a sandbox that stays up keeps them all; the next
    lab session starts from what was kept and says so for the knobs it watches (the
    panel's); a profile's server keeps them as they are, the live ones until it restarts."""
    live = [d.knob for d in diff if d.dynamic]
    static = [d.knob for d in diff if not d.dynamic]
    if lab and not stops:
        return ("Keep leaves them on the sandbox, which stays up: the next session starts "
                f"from them{_says_so([d.knob for d in diff])}")
    if lab:
        said = "Keep: the sandbox stops when this session ends."
        if live:
            said += (f" What was set live goes with it ({', '.join(live)}): the next session "
                     "starts from the sandbox's own values (lab --keep-running keeps it up).")
        if static:
            said += (f" Its drop-in file keeps the static ones ({', '.join(static)}): the "
                     f"next session starts from them{_says_so(static)}")
        return said
    parts = [f"what was set live ({', '.join(live)}) until it restarts"] if live else []
    if static:
        parts.append(f"the static ones ({', '.join(static)}) after a restart too (knobtop's "
                     "drop-in file)")
    return "Keep leaves them on the server as they are now" + (
        f": {', '.join(parts)}." if parts else ".")


def _says_so(knobs: list[str]) -> str:
    """The end of "the next session starts from them ...": a lab session compares the
    knobs it watches (the panel's) with where the last one started, and says which
    differ; of any other knob it says nothing."""
    watched = [k for k in knobs if k in SEED_KNOBS]
    if len(watched) == len(knobs):
        return " and says so."
    if watched:
        return f" and says so of {', '.join(watched)} (the knob panel's)."
    return " (it says so only of the knob panel's knobs)."
