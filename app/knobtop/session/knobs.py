"""The knob applier: every knob change of a session, journaled whatever its outcome.

Dynamic knobs go in by SET GLOBAL, validated first against the server's own facts.  Static
ones go through the drop-in file and a restart of the server nodes (waited for, verified,
rolled back on failure), NDB's DiskPageBufferMemory through config.ini and a rolling restart.
It keeps the session's baseline (the values at the start), the history undo takes back,
the dynamic values a restart would forget (put back after it), and what it knows of the
watched knobs, so a value changed outside knobtop is journaled as such.  One change (or one
read of the watched knobs) at a time, under one lock.
"""
# About 600 lines: dynamic, static (drop-in + restart) and NDB changes, undo, revert and the
# reads that find changes made outside knobtop share the baseline, history, known values and
# the lock that keeps them apart; the known values and the words are in drift.py and
# baseline.py.

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Collection, Mapping
from typing import Any

from knobtop.journal.events import Change, Note
from knobtop.journal.sanitize import printable_record
from knobtop.load.base import LoadError
from knobtop.server.appliers.base import Outcome, Plan, planned
from knobtop.server.appliers.dropin_restart import DropinRestartApplier
from knobtop.server.appliers.ndb_rolling import NdbRollingApplier
from knobtop.server.appliers.set_global import SetGlobalApplier
from knobtop.server.catalog import Catalog, load_catalog
from knobtop.server.knobs import KnobError, KnobFacts, global_values_now, load_facts, valid_name
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink, Tunnel
from knobtop.server.ndb import PARAMETER as NDB_PARAMETER
from knobtop.server.ndb import NdbRollingRestart
from knobtop.server.policy import normal, refusal, risk_of
from knobtop.server.static import RestartApplier, ServerNode, Step
from knobtop.session.baseline import quit_text, revert_plan
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
        self.link = ServerLink(connection, via=via)  # the actions' link (not the sampler's)
        self.knobs = knobs  # the panel's knobs
        self.timeout = timeout
        self.nodes = nodes
        self.ndb = ndb
        self.loads = loads
        self.restarts = restarts
        # The appliers (server/appliers): each plans a change (every check), then applies it.
        self.dropin = DropinRestartApplier(nodes, on_step=self._restart_step)
        self.ndb_applier = NdbRollingApplier(ndb, on_step=self._ndb_step)
        self.knob_facts: dict[str, KnobFacts] = {}
        self.catalog: Catalog | None = None  # every server variable (the knob picker's list)
        self.history: list[Change] = []  # applied changes, newest last (for undo)
        # Dynamic values this session set (and still wants): a restart forgets SET GLOBAL.
        self.dynamic_set: dict[str, str] = {}
        self.baseline: dict[str, str | None] = {}
        self.side_knobs: set[str] = set()  # knobs the server changed with another's change
        # What knobtop knows of the watched knobs, and those changed outside it (drift.py)
        self.known = KnownValues(recorder)
        self.lock = asyncio.Lock()
        self._link_reused = False  # the actions' link was open before the last _link()

    @property
    def restarter(self) -> RestartApplier | None:
        return self.dropin.restarter

    async def load(self) -> None:
        """The panel knobs' facts and the whole catalog, from the server."""
        await self.link.connect()
        self.knob_facts = await load_facts(self.link, self.knobs)
        self.catalog = await load_catalog(self.link)
        # The catalog knows more (flavor notes such as "ignored since 10.5.5").
        self.knob_facts = {k: self.catalog.get(k) for k in self.knobs}

    def start_baseline(self) -> dict[str, str | None]:
        self.baseline = {k: f.value for k, f in self.knob_facts.items()}
        self.known.start({k: f.value for k, f in self.knob_facts.items() if f.present})
        return dict(self.baseline)

    async def _link(self) -> ServerLink:
        self._link_reused = self.link.connected
        if not self._link_reused:
            await self.link.connect()
        return self.link

    def _event(self, start: float, knob: str, requested: str, old: str | None,
               new: str | None, method: str, result: str, message: str, reason: str,
               **more: Any) -> Change:
        """The one place a change event is built (made printable at once: the history and
        the caller keep what the journal holds, not a server's raw message; a reach
        variable's says its kind)."""
        reach = risk_of(knob).kind if result == "ok" else ""
        return printable_record(Change(
            t=start, wall=self.recorder.wall(), knob=knob, requested=requested, old=old,
            new=new, method=method, result=result, message=message, reason=reason,
            reach=reach, **more))

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
                refused = self._event(self.recorder.now(), name, value, None, None,
                                      "set_global", "refused", f"{error}. Nothing was changed",
                                      reason)
                self._record(refused)
                return refused
            return await self._set_knob(name, value, restart_ok=restart_ok, reason=reason,
                                        keep_load=keep_load)

    async def _set_knob(self, name: str, value: str, *, restart_ok: bool, reason: str,
                        keep_load: bool = False) -> Change:
        start = self.recorder.now()
        name = name.strip().lower()
        try:
            link = await self._link()
            if name == NDB_PARAMETER.lower():
                plan = await self.ndb_applier.plan({NDB_PARAMETER: value}, restart_ok=restart_ok)
                return await self._set_ndb(plan, reason=reason, start=start)
            facts = (await self._facts(link, [name]))[name] if valid_name(name) else None
            if facts is not None and facts.present and not facts.dynamic:
                plan = await self.dropin.plan({name: value}, restart_ok=restart_ok,
                                              facts={name: facts})
                return await self._set_static(plan, reason=reason, start=start,
                                              keep_load=keep_load)
            plan, outcome = await asyncio.wait_for(
                _set_global(SetGlobalApplier(link, self.knobs), name, value), self.timeout)
        except (ServerError, TimeoutError) as exc:
            if isinstance(exc, TimeoutError):
                await self.link.close()
                exc = ServerError(
                    f"the server did not answer within {self.timeout:g} s; the change may or "
                    "may not have been applied: check the knob panel"
                )
            event = self._event(start, name, value, None, None, "set_global", "failed",
                                str(exc), reason)
            self._record(event)
            return event
        (knob,) = plan.knobs
        if outcome is None:  # refused before anything was sent
            event = self._event(start, knob.knob, knob.requested, knob.old, knob.old,
                                plan.method, "refused", knob.why_not or "", reason)
        else:
            event = self._event(
                start, knob.knob, knob.requested, knob.old, outcome.new.get(knob.knob),
                plan.method, outcome.result, outcome.message, reason,
                warnings=outcome.warnings, duration=round(outcome.duration, 4),
                side_effects=outcome.side_effects,
            )
        self._record(event)
        return event

    async def preview(self, name: str, value: str) -> Plan:
        """What setting ``name`` to ``value`` would do (the confirmation dialogs read it):
        the applier's plan, every check made once, nothing changed or journaled; its
        ``words`` always say what a restart of the server nodes does."""
        name = name.strip().lower()
        async with self.lock:
            try:
                link = await self._link()
                if name == NDB_PARAMETER.lower():
                    plan = await self.ndb_applier.plan({NDB_PARAMETER: value})
                else:
                    facts = (await self._facts(link, [name]))[name] if valid_name(name) else None
                    if facts is not None and facts.present and not facts.dynamic:
                        plan = await self.dropin.plan({name: value}, facts={name: facts})
                    else:
                        plan = await asyncio.wait_for(
                            SetGlobalApplier(link, self.knobs).plan({name: value}), self.timeout)
            except (ServerError, TimeoutError) as exc:
                if isinstance(exc, TimeoutError):
                    await self.link.close()
                plan = Plan(SetGlobalApplier.method, (planned(
                    name, value, None, refusal=f"cannot read the knob's facts from the server: "
                    f"{exc or 'no answer'}"),))
        return plan if plan.words else dataclasses.replace(plan, words=self.restart_plan())

    async def _facts(self, link: ServerLink, names: list[str]) -> dict[str, KnobFacts]:
        """The server's facts for ``names``, static where the catalog knows better.

        A read only, before anything is changed: when a link kept from earlier gets no
        answer, a new link reads them once more (within the same deadline again), and the
        journal says so; a server that answers neither fails the change with the first
        link's failure."""
        try:
            found = await asyncio.wait_for(load_facts(link, names), self.timeout)
        except (ServerError, TimeoutError) as exc:
            if not self._link_reused:
                raise
            began = time.monotonic()
            await self.link.close()
            try:
                link = await self._link()
                found = await asyncio.wait_for(load_facts(link, names), self.timeout)
            except (ServerError, TimeoutError):
                await self.link.close()
                raise exc from None  # the server answers no link: the first failure says it
            why = str(exc) or f"no answer within {self.timeout:g} s"
            self.recorder.error("server", f"the actions' link kept from earlier failed "
                                f"reading {', '.join(names)} ({why}); a new link read them "
                                f"in {time.monotonic() - began:.2f} s and the change went on")
        for name, facts in found.items():
            known = self.catalog.get(name) if self.catalog is not None else None
            if facts.present and facts.dynamic and known is not None and known.present \
                    and not known.dynamic and known.mode == "static":
                # MySQL's variable tables do not say; the catalog's flavor table does.
                found[name] = dataclasses.replace(facts, dynamic=False)
        return found

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
            found: dict[str, KnobFacts] = {}
            problems: dict[str, str] = {}
            refusals = {n: why for n in names if (why := _reach_refusal(n, reach))}
            if self.recorder.journal_error is not None:
                problems = dict.fromkeys(names, self.recorder.journal_error)
            elif refusals:
                problems = refusals
            else:
                try:
                    link = await self._link()
                    found = await self._facts(link, [n for n in names if valid_name(n)])
                except (ServerError, TimeoutError) as exc:
                    await self.link.close()
                    problems = dict.fromkeys(
                        names, f"cannot read the knobs' facts from the server: {exc}")
            static = [n for n in names if (f := found.get(n)) and f.present and not f.dynamic]
            dynamic = [n for n in names if n in found and n not in static
                       and n != NDB_PARAMETER.lower()]
            static_plan = await self.dropin.plan({n: wanted[n] for n in static},
                                                 restart_ok=restart_ok, facts=found)
            checks = {k.knob: k for k in static_plan.knobs}
            checks.update((k.knob, k) for k in (await SetGlobalApplier(self.link).plan(
                {n: wanted[n] for n in dynamic}, facts=found)).knobs)
            for name in names if not problems else []:
                check = checks.get(name)
                if check is None:  # NDB's parameter, or not a variable name
                    problems[name] = (f"{name} cannot be changed together with other knobs "
                                      "(it is not a server variable): change it on its own")
                elif check.why_not is not None:
                    problems[name] = check.why_not
            if problems:
                return [self._refuse_in_group(name, wanted[name], found.get(name), problems,
                                              start, reason) for name in names]
            out: list[Change] = []
            for name in dynamic:
                out.append(await self._set_knob(name, wanted[name], restart_ok=False,
                                                reason=reason))
                if not out[-1].holds:
                    for done in reversed(out[:-1]):  # nothing half-applied
                        if done.old is not None:
                            await self._set_knob(done.knob, done.old, restart_ok=False,
                                                 reason="undo")
                    return out
            if static:
                out.extend(await self._restart_with(static_plan, reason=reason, start=start,
                                                    keep_load=keep_load))
            return out

    def _refuse_in_group(self, name: str, requested: str, facts: KnobFacts | None,
                         problems: dict[str, str], start: float, reason: str) -> Change:
        """The refusal of one knob of a set_knobs call that is not applied."""
        old = facts.value if facts is not None else None
        static = facts is not None and facts.present and not facts.dynamic
        why = problems.get(name) or (
            f"not applied: {', '.join(problems)} in the same change was refused")
        if "nothing was changed" not in why.lower():
            why = f"{why}. Nothing was changed"
        refused = self._event(start, name, requested, old, old,
                              "dropin_restart" if static else "set_global", "refused", why,
                              reason)
        self._record(refused)
        return refused

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
                        self.dynamic_set.pop(knob, None)
                    else:
                        self.dynamic_set[knob] = new
        self.recorder.emit(event)
        self.known.after_change(event)

    # -- static knobs: the drop-in and a restart

    @property
    def restart_in_progress(self) -> bool:
        """A static change's restart (or its rollback) is running now."""
        return self.restarts.restarting

    def expected_downtime(self) -> str:
        return self.dropin.expected_downtime()

    def restart_plan(self) -> str:
        """What a static change will do, in words, for the confirmation dialog."""
        return self.dropin.restart_plan()

    async def _set_static(self, plan: Plan, *, reason: str, start: float,
                          keep_load: bool = False) -> Change:
        (knob,) = plan.knobs
        if knob.why_not is not None:
            event = self._event(start, knob.knob, knob.requested, knob.old, knob.old,
                                plan.method, "refused", knob.why_not, reason)
            self._record(event)
            return event
        return (await self._restart_with(plan, reason=reason, start=start,
                                         keep_load=keep_load))[-1]

    async def _restart_with(self, plan: Plan, *, reason: str, start: float,
                            keep_load: bool = False) -> list[Change]:
        """One drop-in rewrite and one restart (per node) for every knob of ``plan``."""
        changes = {k.knob: (k.old, str(k.value)) for k in plan.knobs}
        requested = {k.knob: k.requested for k in plan.knobs}
        # What changed outside knobtop since the last read is said before a restart forgets it.
        await self._read_watched()
        began = time.monotonic()
        out: list[Change] = []
        # The load pauses through the restart unless told to keep running (a driver that
        # reconnects, or a server that stays up while others restart).
        async with contextlib.nullcontext() if keep_load else self.loads.paused():
            self.restarts.restarting = True
            self.restarts.count += 1
            try:
                outcome = await self.dropin.apply(plan)
            finally:
                self.restarts.restarting = False
            result, message = outcome.result, outcome.message
            await self.link.close()  # the server restarted under it
            now: dict[str, KnobFacts] = {}
            link: ServerLink | None = None
            watched = self.known.names()
            try:
                link = await self._link()
                now = await load_facts(link, list(dict.fromkeys([*changes, *watched])))
            except (ServerError, TimeoutError) as exc:
                # Journal what happened even if the server is not back: never lose the story.
                result = "failed"
                message = f"{message}; the server does not answer after it: {exc}".lstrip("; ")
                self.known.forget(watched)
            # Watched knobs the restart put back on its own (a value set live outside
            # knobtop is forgotten): the restart's side effects, knobtop's doing. The
            # dynamic values this session set are re-applied below.
            lost = {k: [self.known.values.get(k), now[k].value] for k in watched
                    if k in now and now[k].present and k not in changes
                    and k not in self.dynamic_set and now[k].value != self.known.values.get(k)}
            for i, (knob, (old, new)) in enumerate(changes.items()):
                out.append(self._event(
                    start, knob, requested.get(knob) or new, old,
                    now[knob].value if knob in now else None, "dropin_restart", result,
                    message, reason, duration=round(time.monotonic() - began, 3),
                    side_effects=lost if i == len(changes) - 1 else {}))
                self._record(out[-1])
            if link is not None:
                # Dynamic values first, so the resumed load runs with the session's settings.
                with contextlib.suppress(ServerError, TimeoutError):
                    await self._reapply_dynamic(link)
                    self.catalog = await load_catalog(link)
        return out

    async def _reapply_dynamic(self, link: ServerLink) -> None:
        """After a restart, put back the dynamic values this session had set."""
        if not self.dynamic_set:
            return
        now = await load_facts(link, list(self.dynamic_set))
        for knob, wanted in list(self.dynamic_set.items()):
            if now[knob].present and now[knob].value != wanted:
                await self._set_knob(knob, wanted, restart_ok=False, reason=REAPPLIED)

    def _restart_step(self, step: Step) -> None:
        self.recorder.restart(step.node, step.step, step.result, step.seconds, step.message)

    # -- NDB: config.ini and a rolling restart

    async def _set_ndb(self, plan: Plan, *, reason: str, start: float) -> Change:
        """DiskPageBufferMemory: config.ini on the management host, then every data node
        restarted one at a time (NDB has no SET GLOBAL for it)."""
        (knob,) = plan.knobs
        outcome = Outcome("refused", knob.why_not or "", {knob.knob: knob.old})
        if knob.why_not is None:
            outcome = await self.ndb_applier.apply(plan)
        change = self._event(start, NDB_PARAMETER, knob.requested, knob.old,
                             outcome.new.get(knob.knob), plan.method, outcome.result,
                             outcome.message, reason, duration=round(outcome.duration, 3))
        self._record(change)
        return change

    def _ndb_step(self, step: str, node: int | None, status: str, seconds: float) -> None:
        self.recorder.restart("cluster" if node is None else f"ndb node {node}", step, status,
                              seconds)

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
                link = await self._link()
                values = await global_values_now(link, names)
        except TimeoutError:
            await self.link.close()  # a statement cut off mid-way leaves the link unusable
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
            undone = await self._set_knob(last.knob, last.old, restart_ok=True, reason="undo")
            if undone.holds:
                self.history.remove(last)
            # What the server changed along with it (io_capacity_max after io_capacity),
            # unless someone changed that outside knobtop since.
            for knob, (old, _new) in last.side_effects.items():
                if old is not None and undone.holds and knob not in self.known.outside:
                    await self._set_knob(knob, old, restart_ok=False, reason="undo")
            return undone

    async def _differ(self) -> dict[str, KnobFacts]:
        """The knobs whose value on the server now is not this session's baseline (a value
        found changed outside knobtop on the way is journaled as such)."""
        link = await self._link()
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
                    out.append(await self._set_knob(knob, target, restart_ok=False,
                                                    reason="revert to baseline"))
                else:
                    static[knob] = (facts.value, target)
            if static:
                out.extend(await self._restart_with(
                    self.dropin.plan_of(static, {}), reason="revert to baseline",
                    start=self.recorder.now()))
            self.history.clear()
            return out


async def _set_global(applier: SetGlobalApplier, name: str,
                      value: str) -> tuple[Plan, Outcome | None]:
    """The plan for a dynamic knob, and what applying it did (None: refused before)."""
    plan = await applier.plan({name: value})
    return plan, (await applier.apply(plan) if plan.ready else None)


__all__ = ["KNOB_TIMEOUT", "KnobApplier"]
