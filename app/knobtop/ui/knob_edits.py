"""The knob keys of the live screen: a value typed for a knob (its reach and its restart
confirmed first), undo of the last change and revert to the session's baseline; how each
change went is said in a notice."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from functools import partial
from typing import Any

from knobtop.journal.events import Change
from knobtop.server.catalog import DATADIR_BOUND, Catalog, CatalogFacts
from knobtop.server.knobs import KnobError, validate
from knobtop.server.knobtext import MEANINGS, meaning, show_bound, show_value
from knobtop.server.policy import risk_of
from knobtop.session.port import BaselineDiff, SessionPort
from knobtop.ui.base import ScreenApp
from knobtop.ui.live_view import LiveViewApp
from knobtop.ui.screens.confirm import ConfirmScreen, RevertScreen
from knobtop.ui.screens.prompt import PromptScreen
from knobtop.ui.widgets.knob_panel import KnobPanel


class KnobEdits:
    """What the knob keys do on ``app``'s session (a follower has none: it says so)."""

    def __init__(self, app: LiveViewApp) -> None:
        self.app = app

    @property
    def catalog(self) -> Catalog | None:
        """Every server variable, for the knob picker (built by the session at open)."""
        return self.app.session.state().catalog if self.app.session is not None else None

    def edit(self, name: str) -> None:
        """Ask for a value for ``name``; static knobs also ask to confirm the restart."""
        if self.app.need_session() is None:
            return
        if self.app.recipe_running:
            self.app.notify("a recipe is running: its arms set the knobs (press a to abort it)",
                            severity="warning")
            return
        catalog = self.catalog
        panel = self.app.live.query_one(KnobPanel)
        if catalog is not None:
            facts = catalog.get(name).to_json()
            current = catalog.get(name).value
        else:
            facts = panel.facts.get(name, {})
            current = None
        if self.app.board is not None and name in self.app.board.knob_values:
            current = self.app.board.knob_values[name]
        if not facts.get("present", True):
            self.app.notify(f"{name} is absent here: {facts.get('note', '')}",
                            severity="warning", markup=False)
            return
        static = not facts.get("dynamic", True)
        title = f"Set {name}" + (" (static: needs a restart)" if static else "")
        if name.lower() in DATADIR_BOUND:
            title = f"Set {name} (fixed by the existing datadir)"
        self.app.push_screen(
            PromptScreen(title, knob_help(name, facts, current), current or "",
                         preview=partial(knob_preview, catalog.get(name)) if catalog else None),
            partial(self._confirm_reach, name, static),
        )

    def _confirm_reach(self, knob: str, static: bool, value: str | None) -> None:
        """A reach variable (server.policy) is set only after a dialog that says what it
        reaches; the change then journals its kind."""
        if value is None or self.app.session is None:
            return
        risk = risk_of(knob)
        if not risk.reach:
            self._apply_typed(knob, static, value, reach=False)
            return
        self.app.push_screen(
            ConfirmScreen(f"{risk.name} reaches beyond performance",
                          f"{risk.name} {risk.what}. Setting it to {value} gives the server "
                          "that reach, as its own OS user. It is journaled as such.",
                          yes="Set it"),
            lambda yes: self._apply_typed(knob, static, value, reach=True) if yes else None,
        )

    def _apply_typed(self, knob: str, static: bool, value: str, *, reach: bool) -> None:
        if static:
            self._confirm_static(knob, value, reach=reach)
        else:
            self._set_knob(knob, value, reach=reach)

    def _confirm_static(self, knob: str, value: str | None, *, reach: bool = False) -> None:
        if value is None or self.app.session is None:
            return
        session = self.app.session

        async def ask() -> None:
            # The session's plan: its one check of the value, and what the restart does.
            plan = await self.app._call(session.preview_change(knob, value))
            if plan is None:
                return
            if plan.pinned:
                # No restart to confirm: the session refuses it with the reason (journaled).
                self._set_knob(knob, value, reach=reach)
                return
            self.app.push_screen(
                ConfirmScreen(f"Restart for {knob} = {value}?",
                              f"{knob} is static: knobtop writes it to its drop-in file and "
                              f"{plan.words}. If the server does not come back or the value "
                              "does not take, the previous file is restored and the server "
                              "restarted again.", yes="Restart"),
                lambda yes: self._set_knob(knob, value, restart=True, reach=reach) if yes
                else None,
            )

        # Keys typed behind Enter wait for the dialog (the plan is read from the session).
        self.app.key_queue.hold_for(self.app.run_worker(ask(), group="knobs"))

    def _set_knob(self, knob: str, value: str | None, *, restart: bool = False,
                  reach: bool = False) -> None:
        if value is None or self.app.session is None:
            return
        session = self.app.session

        async def apply() -> None:
            if restart:
                self.app.notify(f"{knob}: restarting the server ...", timeout=5, markup=False)
            change = await self.app._call(session.set_knob(knob, value, restart_ok=restart,
                                                           reach=(knob,) if reach else ()))
            if change is not None:
                report_change(self.app, change)

        self.app.run_worker(apply(), group="knobs")

    def _if_yes(
        self, work: Callable[[], Coroutine[Any, Any, None]]
    ) -> Callable[[bool | None], None]:
        """A dialog callback that starts ``work`` in a worker when the answer is yes."""

        def answered(yes: bool | None) -> None:
            if yes:
                self.app.run_worker(work(), group="knobs")

        return answered

    def undo(self) -> None:
        """Take the session's last change back (a static knob's after a dialog that says
        what the restart does)."""
        session = self.app.need_session()
        if session is None:
            return
        history = session.state().history
        if not history:
            self.app.notify("nothing to undo")
            return
        last = history[-1]

        async def undo() -> None:
            change = await self.app._call(session.undo(last))
            if change is not None:
                report_change(self.app, change)

        async def ask() -> None:
            plan = await self.app._call(session.preview_change(last.knob, last.old or ""))
            if plan is not None:
                self.app.push_screen(
                    ConfirmScreen(f"Undo {last.knob} = {last.new}?",
                                  f"Back to {last.old}; {last.knob} is static, so knobtop "
                                  f"{plan.words}.", yes="Undo"),
                    self._if_yes(undo),
                )

        if last.method in ("dropin_restart", "ndb_rolling_restart"):
            self.app.key_queue.hold_for(self.app.run_worker(ask(), group="knobs"))
        else:
            self.app.run_worker(undo(), group="knobs")

    def revert_baseline(self) -> None:
        """Every knob back to the session's baseline, after a dialog that lists them."""
        session = self.app.need_session()
        if session is not None:
            # The dialog comes once the knobs are read: keys typed behind b wait for it.
            self.app.key_queue.hold_for(self.app.run_worker(self._ask_revert(session),
                                                            group="knobs"))

    async def _ask_revert(self, session: SessionPort) -> None:
        """Read what differs first, so the dialog says what goes back live and what needs
        the restart (and promises a restart only when a static knob differs)."""
        diff = await self.app._call(session.baseline_diff())
        if diff is None:
            return
        if not diff:
            self.app.notify("every knob is at the session's baseline: nothing to revert")
            return

        async def revert(outside: bool = False) -> None:
            changes = await self.app._call(session.revert_to_baseline(outside=outside))
            if changes is None:
                return
            failed = [c for c in changes if not c.holds]
            if failed:
                for change in failed:
                    report_change(self.app, change)
            elif not changes:  # only knobs changed outside knobtop differ, and they stay
                self.app.notify("none of knobtop's changes to put back; the knobs changed "
                                "outside knobtop stay as they are")
            else:
                self.app.notify(f"back to baseline: {len(changes)} knob(s) restored")

        details = f"{differences(diff)}\n{session.revert_plan(diff)}"
        if any(d.outside for d in diff):
            # Someone else's values go back only if the person says so.
            def chosen(choice: str | None) -> None:
                if choice is not None:
                    self.app.run_worker(revert(outside=choice == "all"), group="knobs")

            self.app.push_screen(RevertScreen(
                f"{details}\nKnobtop's (y) leaves those; All (a) puts the session's baseline "
                "back for them too."), chosen)
            return
        self.app.push_screen(
            ConfirmScreen("Revert every knob to the session's baseline?", details,
                          yes="Revert"),
            self._if_yes(revert),
        )


def report_change(app: ScreenApp, change: Change) -> None:
    """Say how a knob change went: its values and warnings, or why it did not take."""
    what = f"{change.reason}: " if change.reason else ""
    if change.result == "unchanged":
        app.notify(f"{what}{change.message}", markup=False)
    elif change.result == "ok":
        extra = f"\n{change.message}" if change.message else ""
        warn = "\n".join(change.warnings)
        app.notify(f"{what}{change.knob}: {change.old} → {change.new}{extra}\n{warn}".rstrip(),
                   severity="warning" if change.warnings else "information", markup=False)
    else:
        app.notify(change.message, title=f"{what}{change.knob} not changed",
                   severity="error", timeout=12, markup=False)


def differences(diff: list[BaselineDiff]) -> str:
    """One line per knob: its value now and the baseline it goes back to; a value set
    outside knobtop says so."""
    return "\n".join(f"{d.knob}: {show_value(d.knob, d.now)} → "
                     f"{show_value(d.knob, d.baseline)}"
                     + ("  (changed outside knobtop)" if d.outside else "") for d in diff)


def knob_help(name: str, facts: dict[str, Any], current: str | None) -> str:
    """The dialog's help: the value now (exact beside the short form), type, range or
    choices, default, and what each value means where knobtop knows."""
    shown = show_value(name, current)
    parts = [f"now {shown}" + (f" ({current})" if current and shown != current else "")]
    if facts.get("type"):
        parts.append(str(facts["type"]).lower())
    if facts.get("choices"):
        parts.append("one of " + ", ".join(facts["choices"]))
    elif facts.get("min") is not None:
        lo, hi = facts["min"], facts["max"]
        parts.append(f"{show_bound(lo)} to {show_bound(hi) if hi is not None else '?'}")
    if facts.get("default") is not None:
        parts.append(f"default {show_value(name, str(facts['default']))}")
    lines = [" · ".join(parts)]
    lines += [f"{value}: {what}" for value, what in MEANINGS.get(name.lower(), {}).items()]
    return "\n".join(lines)


def knob_preview(facts: CatalogFacts, raw: str) -> str:
    """What Enter applies for the text typed so far, or why the server side would refuse."""
    if not raw.strip():
        return "type a value"
    try:
        value = str(validate(facts, raw, static_ok=True))
    except KnobError as exc:
        return f"not valid: {exc}"
    shown = show_value(facts.name, value)
    text = f"applies {facts.name} = {value}" + (f" ({shown})" if shown != value else "")
    what = meaning(facts.name, value)
    return text + (f": {what}" if what else "")
