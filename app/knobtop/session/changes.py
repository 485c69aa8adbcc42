"""How a knob change goes in: the actions' link, the server's facts, the appliers
(server/appliers: plan, every check once, then apply) and, around a restart, the load's pause,
the watched knobs' read and the dynamic values a restart forgets, put back after it.

session/knobs.py says what to change and keeps the history, the baseline and undo; every
change made here comes back to it as a Change to journal (``record``), whatever its outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from knobtop.journal.events import Change
from knobtop.journal.sanitize import printable_record
from knobtop.server.appliers.base import Outcome, Plan, planned
from knobtop.server.appliers.dropin_restart import DropinRestartApplier
from knobtop.server.appliers.ndb_rolling import NdbRollingApplier
from knobtop.server.appliers.set_global import SetGlobalApplier
from knobtop.server.catalog import Catalog, load_catalog
from knobtop.server.knobs import KnobFacts, load_facts, valid_name
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink, Tunnel
from knobtop.server.ndb import PARAMETER as NDB_PARAMETER
from knobtop.server.ndb import NdbRollingRestart
from knobtop.server.policy import risk_of
from knobtop.server.static import RestartApplier, ServerNode, Step
from knobtop.session.drift import REAPPLIED, KnownValues
from knobtop.session.loadctl import LoadController
from knobtop.session.recorder import Recorder
from knobtop.session.sampler import RestartState


class KnobChanges:
    """Carries out the changes of session/knobs.py's KnobApplier (which holds the lock)."""

    def __init__(self, recorder: Recorder, connection: ConnectionInfo, *, via: Tunnel | None,
                 knobs: tuple[str, ...], timeout: float, nodes: tuple[ServerNode, ...],
                 ndb: NdbRollingRestart | None, loads: LoadController, restarts: RestartState,
                 known: KnownValues, record: Callable[[Change], None],
                 read_watched: Callable[[], Awaitable[bool]]) -> None:
        self.recorder = recorder
        self.link = ServerLink(connection, via=via)  # the actions' link (not the sampler's)
        self.knobs = knobs  # the panel's knobs (watched for side effects)
        self.timeout = timeout
        self.loads = loads
        self.restarts = restarts
        self.known = known
        self.record = record  # journals a change and keeps what it did (KnobApplier)
        self.read_watched = read_watched  # the watched knobs read, changes outside said
        # The appliers: each plans a change (every check), then applies it.
        self.dropin = DropinRestartApplier(nodes, on_step=self._restart_step)
        self.ndb = NdbRollingApplier(ndb, on_step=self._ndb_step)
        self.catalog: Catalog | None = None  # every server variable (the knob picker's list)
        # Dynamic values this session set (and still wants): a restart forgets SET GLOBAL.
        self.dynamic_set: dict[str, str] = {}
        self._link_reused = False  # the actions' link was open before the last connect()

    @property
    def restarter(self) -> RestartApplier | None:
        return self.dropin.restarter

    async def connect(self) -> ServerLink:
        self._link_reused = self.link.connected
        if not self._link_reused:
            await self.link.connect()
        return self.link

    def event(self, start: float, knob: str, requested: str, old: str | None,
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

    async def set_one(self, name: str, value: str, *, restart_ok: bool, reason: str,
                      keep_load: bool = False) -> Change:
        """One knob through its applier's plan, then (when the plan is ready) its apply;
        journaled (``record``) whatever the outcome (the caller holds the lock)."""
        start = self.recorder.now()
        name = name.strip().lower()
        try:
            link = await self.connect()
            if name == NDB_PARAMETER.lower():
                plan = await self.ndb.plan({NDB_PARAMETER: value}, restart_ok=restart_ok)
                return await self._set_ndb(plan, reason=reason, start=start)
            facts = (await self.facts(link, [name]))[name] if valid_name(name) else None
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
            event = self.event(start, name, value, None, None, "set_global", "failed",
                               str(exc), reason)
            self.record(event)
            return event
        (knob,) = plan.knobs
        if outcome is None:  # refused before anything was sent
            event = self.event(start, knob.knob, knob.requested, knob.old, knob.old,
                               plan.method, "refused", knob.why_not or "", reason)
        else:
            event = self.event(
                start, knob.knob, knob.requested, knob.old, outcome.new.get(knob.knob),
                plan.method, outcome.result, outcome.message, reason,
                warnings=outcome.warnings, duration=round(outcome.duration, 4),
                side_effects=outcome.side_effects,
            )
        self.record(event)
        return event

    async def preview(self, name: str, value: str) -> Plan:
        """What setting ``name`` to ``value`` would do (the confirmation dialogs read it):
        the applier's plan, every check made once, nothing changed or journaled; its
        ``words`` always say what a restart of the server nodes does."""
        name = name.strip().lower()
        try:
            link = await self.connect()
            if name == NDB_PARAMETER.lower():
                plan = await self.ndb.plan({NDB_PARAMETER: value})
            else:
                facts = (await self.facts(link, [name]))[name] if valid_name(name) else None
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

    async def facts(self, link: ServerLink, names: list[str]) -> dict[str, KnobFacts]:
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
                link = await self.connect()
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

    async def set_group(self, wanted: Mapping[str, str], problems: dict[str, str], *,
                        restart_ok: bool, reason: str, keep_load: bool,
                        start: float) -> list[Change]:
        """Several knobs as one change, all or nothing (KnobApplier.set_knobs, under its
        lock): ``problems`` already found refuse them all, as does any value a plan
        refuses; else the dynamic ones by SET GLOBAL, then the static ones with one
        restart."""
        names = list(wanted)
        found: dict[str, KnobFacts] = {}
        if not problems:
            try:
                link = await self.connect()
                found = await self.facts(link, [n for n in names if valid_name(n)])
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
            out.append(await self.set_one(name, wanted[name], restart_ok=False,
                                          reason=reason))
            if not out[-1].holds:
                for done in reversed(out[:-1]):  # nothing half-applied
                    if done.old is not None:
                        await self.set_one(done.knob, done.old, restart_ok=False,
                                           reason="undo")
                return out
        if static:
            out.extend(await self.restart_with(static_plan, reason=reason, start=start,
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
        refused = self.event(start, name, requested, old, old,
                             "dropin_restart" if static else "set_global", "refused", why,
                             reason)
        self.record(refused)
        return refused

    def expected_downtime(self) -> str:
        return self.dropin.expected_downtime()

    def restart_plan(self) -> str:
        """What a static change will do, in words, for the confirmation dialog."""
        return self.dropin.restart_plan()

    async def _set_static(self, plan: Plan, *, reason: str, start: float,
                          keep_load: bool = False) -> Change:
        (knob,) = plan.knobs
        if knob.why_not is not None:
            event = self.event(start, knob.knob, knob.requested, knob.old, knob.old,
                               plan.method, "refused", knob.why_not, reason)
            self.record(event)
            return event
        return (await self.restart_with(plan, reason=reason, start=start,
                                        keep_load=keep_load))[-1]

    async def restart_with(self, plan: Plan, *, reason: str, start: float,
                            keep_load: bool = False) -> list[Change]:
        """One drop-in rewrite and one restart (per node) for every knob of ``plan``."""
        changes = {k.knob: (k.old, str(k.value)) for k in plan.knobs}
        requested = {k.knob: k.requested for k in plan.knobs}
        # What changed outside knobtop since the last read is said before a restart forgets it.
        await self.read_watched()
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
                link = await self.connect()
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
                out.append(self.event(
                    start, knob, requested.get(knob) or new, old,
                    now[knob].value if knob in now else None, "dropin_restart", result,
                    message, reason, duration=round(time.monotonic() - began, 3),
                    side_effects=lost if i == len(changes) - 1 else {}))
                self.record(out[-1])
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
                await self.set_one(knob, wanted, restart_ok=False, reason=REAPPLIED)

    def _restart_step(self, step: Step) -> None:
        self.recorder.restart(step.node, step.step, step.result, step.seconds, step.message)

    async def _set_ndb(self, plan: Plan, *, reason: str, start: float) -> Change:
        """DiskPageBufferMemory: config.ini on the management host, then every data node
        restarted one at a time (NDB has no SET GLOBAL for it)."""
        (knob,) = plan.knobs
        outcome = Outcome("refused", knob.why_not or "", {knob.knob: knob.old})
        if knob.why_not is None:
            outcome = await self.ndb.apply(plan)
        change = self.event(start, NDB_PARAMETER, knob.requested, knob.old,
                            outcome.new.get(knob.knob), plan.method, outcome.result,
                            outcome.message, reason, duration=round(outcome.duration, 3))
        self.record(change)
        return change

    def _ndb_step(self, step: str, node: int | None, status: str, seconds: float) -> None:
        self.recorder.restart("cluster" if node is None else f"ndb node {node}", step, status,
                              seconds)


async def _set_global(applier: SetGlobalApplier, name: str,
                      value: str) -> tuple[Plan, Outcome | None]:
    """The plan for a dynamic knob, and what applying it did (None: refused before)."""
    plan = await applier.plan({name: value})
    return plan, (await applier.apply(plan) if plan.ready else None)


__all__ = ["KnobChanges"]
