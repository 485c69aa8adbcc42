"""The knob applier: every knob change of a session, journaled whatever its outcome.

It says what to change and keeps what the changes did: the session's baseline (the values at
the start), the history undo takes back, and what it knows of the watched knobs, so a value
changed outside knobtop is journaled as such.  How a change goes in (SET GLOBAL, the drop-in
and a restart, NDB's rolling restart; the dynamic values a restart forgets, put back after
it) is session/changes.py's, through server/appliers.  One change (or one read of the
watched knobs) at a time, under one lock.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Collection, Mapping

from knobtop.journal.events import Change, Note
from knobtop.load.base import LoadError
from knobtop.server.appliers.base import Plan
from knobtop.server.appliers.set_global import SetGlobalApplier
from knobtop.server.catalog import Catalog, load_catalog
from knobtop.server.knobs import KnobError, KnobFacts, global_values_now, load_facts
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink, Tunnel
from knobtop.server.ndb import NdbRollingRestart
from knobtop.server.policy import normal, refusal, risk_of
from knobtop.server.static import RestartApplier, ServerNode
from knobtop.session.baseline import quit_text, revert_plan
from knobtop.session.changes import KnobChanges
from knobtop.session.drift import DRIFT_DEADLINE, REAPPLIED, KnownValues
from knobtop.session.loadctl import LoadController
from knobtop.session.port import BaselineDiff
from knobtop.session.recorder import Recorder
from knobtop.session.sampler import RestartState

KNOB_TIMEOUT = 120.0  # generous: a buffer-pool resize may take a while


def _reach_refusal(name: str, allowed: Collection[str]) -> str | None:
    """Why ``name`` may not be set by this call (a reach variable it was not allowed)."""
    risk = risk_of(name)
    if not risk.reach or risk.name in {normal(a) for a in allowed}:
        return None
    return refusal(name, "this change", "set it from the live screen, which asks first, "
                   "or list it under [allow] reach in the recipe and run with --allow-reach")


class KnobApplier:
    def __init__(self, recorder: Recorder, connection: ConnectionInfo, *, via: Tunnel | None,
                 knobs: tuple[str, ...], timeout: float, nodes: tuple[ServerNode, ...],
                 ndb: NdbRollingRestart | None, loads: LoadController,
                 restarts: RestartState) -> None:
        self.recorder = recorder
        self.knobs = knobs  # the panel's knobs
        self.restarts = restarts
        self.knob_facts: dict[str, KnobFacts] = {}
        self.history: list[Change] = []  # applied changes, newest last (for undo)
        self.baseline: dict[str, str | None] = {}
        self.side_knobs: set[str] = set()  # knobs the server changed with another's change
        # What knobtop knows of the watched knobs, and those changed outside it (drift.py)
        self.known = KnownValues(recorder)
        self.lock = asyncio.Lock()
        self.changes = KnobChanges(recorder, connection, via=via, knobs=knobs, timeout=timeout,
                                   nodes=nodes, ndb=ndb, loads=loads, restarts=restarts,
                                   known=self.known, record=self._record,
                                   read_watched=self._read_watched)

    @property
    def link(self) -> ServerLink:
        """The actions' link (not the sampler's)."""
        return self.changes.link

    @property
    def catalog(self) -> Catalog | None:
        """Every server variable (the knob picker's list), read again after each restart."""
        return self.changes.catalog

    @property
    def restarter(self) -> RestartApplier | None:
        return self.changes.restarter

    async def load(self) -> None:
        """The panel knobs' facts and the whole catalog, from the server."""
        await self.link.connect()
        self.knob_facts = await load_facts(self.link, self.knobs)
        catalog = self.changes.catalog = await load_catalog(self.link)
        # The catalog knows more (flavor notes such as "ignored since 10.5.5").
        self.knob_facts = {k: catalog.get(k) for k in self.knobs}

    def start_baseline(self) -> dict[str, str | None]:
        self.baseline = {k: f.value for k, f in self.knob_facts.items()}
        self.known.start({k: f.value for k, f in self.knob_facts.items() if f.present})
        return dict(self.baseline)

    # -- one knob

    async def set_knob(self, name: str, value: str, *, restart_ok: bool = False,
                       reason: str = "", keep_load: bool = False,
                       reach: Collection[str] = ()) -> Change:
        """Validate and apply a knob; refusals and failures are journaled like successes.

        Dynamic knobs go through SET GLOBAL.  Static ones need ``restart_ok`` (the
        person confirmed the restart) and server nodes with a restart command: they
        go through the drop-in, a restart, a wait and a check, rolled back on failure.
        A reach variable (server.policy) needs its name in ``reach``.
        """
        async with self.lock:
            error = self.recorder.journal_error
            if error is None:
                error = _reach_refusal(name, reach)
            if error is not None:  # a change that cannot be recorded, or not allowed
                refused = self.changes.event(
                    self.recorder.now(), name, value, None, None, "set_global", "refused",
                    f"{error}. Nothing was changed", reason)
                self._record(refused)
                return refused
            return await self.changes.set_one(name, value, restart_ok=restart_ok,
                                              reason=reason, keep_load=keep_load)

    async def preview(self, name: str, value: str) -> Plan:
        """What setting ``name`` to ``value`` would do (the confirmation dialogs read it):
        the applier's plan, every check made once, nothing changed or journaled; its
        ``words`` always say what a restart of the server nodes does."""
        async with self.lock:
            return await self.changes.preview(name, value)

    # -- several knobs as one change

    async def set_knobs(self, values: Mapping[str, str], *, restart_ok: bool = False,
                        reason: str = "", keep_load: bool = False,
                        reach: Collection[str] = ()) -> list[Change]:
        """Several knobs as one change (a recipe arm), all or nothing.

        Every value is checked first; if one is refused, none is applied. Then the dynamic
        ones go in by SET GLOBAL and all the static ones through a single drop-in rewrite and
        restart (two static knobs cost one restart, not two). A dynamic one that fails puts
        back those already set, and no restart follows.
        """
        if len(values) == 1:
            ((name, value),) = values.items()
            return [await self.set_knob(name, value, restart_ok=restart_ok, reason=reason,
                                        keep_load=keep_load, reach=reach)]
        names = [n.strip().lower() for n in values]
        wanted = dict(zip(names, values.values(), strict=True))
        async with self.lock:
            start = self.recorder.now()
            problems: dict[str, str] = {}
            refusals = {n: why for n in names if (why := _reach_refusal(n, reach))}
            if self.recorder.journal_error is not None:
                problems = dict.fromkeys(names, self.recorder.journal_error)
            elif refusals:
                problems = refusals
            return await self.changes.set_group(wanted, problems, restart_ok=restart_ok,
                                                reason=reason, keep_load=keep_load,
                                                start=start)

    def _record(self, event: Change) -> None:
        """Journal a change (whatever its outcome) and keep what it did: the baseline of a
        knob it touched first, the history undo takes back, the values knobtop knows. A value
        it found that knobtop did not know was changed outside knobtop: said first."""
        self.known.before_change(event)
        if event.result == "ok" and event.knob not in self.baseline:
            # A knob outside the panel's list: its value before the first change is its
            # baseline, so revert-to-baseline brings it back too.
            self.baseline[event.knob] = event.old
        if event.result == "ok":
            # What the server changed with it (io_capacity_max after io_capacity) goes back
            # on revert too, after the knobs that caused it (see revert_to_baseline).
            for knob, (old, _new) in event.side_effects.items():
                self.baseline.setdefault(knob, old)
                self.side_knobs.add(knob)
        if event.result == "ok":
            changed = {event.knob: event.new}
            changed.update({k: v[1] for k, v in event.side_effects.items()})
            for knob, new in changed.items():
                if knob in self.knob_facts:
                    self.knob_facts[knob] = dataclasses.replace(self.knob_facts[knob],
                                                                value=new)
            if event.reason not in ("undo", REAPPLIED):
                self.history.append(event)
            if event.method == SetGlobalApplier.method:
                for knob, new in changed.items():
                    if new is None or new == self.baseline.get(knob):
                        self.changes.dynamic_set.pop(knob, None)
                    else:
                        self.changes.dynamic_set[knob] = new
        self.recorder.emit(event)
        self.known.after_change(event)

    @property
    def restart_in_progress(self) -> bool:
        """A static change's restart (or its rollback) is running now."""
        return self.restarts.restarting

    def expected_downtime(self) -> str:
        return self.changes.expected_downtime()

    def restart_plan(self) -> str:
        """What a static change will do, in words, for the confirmation dialog."""
        return self.changes.restart_plan()

    # -- changes made outside knobtop

    async def watch_round(self) -> bool:
        """The drift watch's read of the watched knobs; skipped (False) while a change of
        knobtop's is in flight (its own reads see the values; the next round reads again)."""
        if self.lock.locked() or self.recorder.failure is not None:
            return False
        async with self.lock:
            return await self._read_watched()

    async def _read_watched(self, names: list[str] | None = None) -> bool:
        """Read the watched knobs (or ``names`` of them) in one statement, within
        DRIFT_DEADLINE, and journal those changed outside knobtop (the caller holds the
        lock); False when the server did not answer (tried again later)."""
        names = self.known.names() if names is None else names
        if not names:
            return False
        sent = self.recorder.now()
        try:
            async with asyncio.timeout(DRIFT_DEADLINE):
                link = await self.changes.connect()
                values = await global_values_now(link, names)
        except TimeoutError:
            await self.changes.link.close()  # a statement cut off mid-way leaves the link unusable
            return False
        except ServerError:
            return False
        self.known.found(values, sent)
        return True

    # -- undo and the baseline

    async def undo(self, expected: Change | None = None) -> Change | None:
        """Put the last change of knobtop's (not itself an undo) back; static ones restart
        again. A knob changed outside knobtop since is not overwritten: the undo is refused
        (KnobError), or for a side effect, that one is left as it is.

        ``expected`` is the change the person confirmed; if another one landed since,
        nothing is done (they confirmed something else). It is compared by value: the
        screen holds a copy that crossed the process boundary, never this object."""
        async with self.lock:
            if not self.history:
                return None
            last = self.history[-1]
            if expected is not None and last != expected:
                raise LoadError("the last change is not the one you confirmed; press u again")
            if last.old is None:
                return None
            touched = [k for k in (last.knob, *last.side_effects) if k in self.known.values]
            await self._read_watched(touched)
            outside = self.known.outside.get(last.knob)
            if outside is not None:
                raise KnobError(
                    f"{last.knob} was changed outside knobtop after this change ({outside.old} "
                    f"-> {outside.new}, journaled): undo would overwrite it, so nothing was "
                    "changed. Set it from the knob panel, or revert to the baseline (b) and "
                    "choose there")
            undone = await self.changes.set_one(last.knob, last.old, restart_ok=True, reason="undo")
            if undone.holds:
                self.history.remove(last)
            # What the server changed along with it (io_capacity_max after io_capacity),
            # unless someone changed that outside knobtop since.
            for knob, (old, _new) in last.side_effects.items():
                if old is not None and undone.holds and knob not in self.known.outside:
                    await self.changes.set_one(knob, old, restart_ok=False, reason="undo")
            return undone

    async def _differ(self) -> dict[str, KnobFacts]:
        """The knobs whose value on the server now is not this session's baseline (a value
        found changed outside knobtop on the way is journaled as such)."""
        link = await self.changes.connect()
        names = sorted(k for k in self.baseline if self.baseline[k] is not None)
        if not names:
            return {}
        sent = self.recorder.now()
        now = await load_facts(link, names)
        self.known.found({k: f.value for k, f in now.items() if f.present}, sent)
        return {k: now[k] for k in names if now[k].present and now[k].value != self.baseline[k]}

    async def baseline_diff(self) -> list[BaselineDiff]:
        """What differs from the session's baseline now (for the quit and revert dialogs),
        each knob holding a value set outside knobtop marked so."""
        async with self.lock:
            differ = await self._differ()
        return [BaselineDiff(k, f.value, self.baseline[k], f.dynamic,
                             outside=k in self.known.outside) for k, f in differ.items()]

    def revert_plan(self, diff: list[BaselineDiff]) -> str:
        return revert_plan(diff, self.restart_plan())

    def quit_choice(self, choice: str, diff: list[BaselineDiff]) -> Note:
        """Journal what was done at quit about the knobs that differ from the baseline."""
        return self.recorder.note(quit_text(choice, diff))

    async def revert_to_baseline(self, outside: bool = False) -> list[Change]:
        """Every knob this session changed back to its value at the start; all static
        ones together, with a single restart. A knob holding a value set outside knobtop
        goes back only with ``outside`` (the person chose it)."""
        async with self.lock:
            differ = await self._differ()
            if not outside:
                differ = {k: f for k, f in differ.items() if k not in self.known.outside}
            if not differ:
                return []
            out: list[Change] = []
            static: dict[str, tuple[str | None, str]] = {}
            # The knobs that caused side effects first: innodb_io_capacity_max goes back to
            # 2000 only once innodb_io_capacity is below it again.
            for knob, facts in sorted(differ.items(), key=lambda kv: kv[0] in self.side_knobs):
                target = self.baseline[knob]
                assert target is not None
                if facts.dynamic:
                    out.append(await self.changes.set_one(knob, target, restart_ok=False,
                                                          reason="revert to baseline"))
                else:
                    static[knob] = (facts.value, target)
            if static:
                out.extend(await self.changes.restart_with(
                    self.changes.dropin.plan_of(static, {}), reason="revert to baseline",
                    start=self.recorder.now()))
            self.history.clear()
            return out


__all__ = ["KNOB_TIMEOUT", "KnobApplier"]
