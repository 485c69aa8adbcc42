"""NDB's DiskPageBufferMemory: config.ini on the management host, then every data node
restarted one at a time (NDB has no SET GLOBAL for it; server/ndb.py does the steps)."""

from __future__ import annotations

import time
from collections.abc import Mapping

from knobtop.hosts.base import HostError
from knobtop.server.appliers.base import Outcome, Plan, planned
from knobtop.server.knobs import KnobError, KnobFacts, validate
from knobtop.server.ndb import PARAMETER, NdbError, NdbRollingRestart, OnStep, get_ndbd_default

# What NDB's documentation says of DiskPageBufferMemory (REFERENCE.md section 1).
NDB_FACTS = KnobFacts(name=PARAMETER, present=True, dynamic=False,
                      type="BIGINT UNSIGNED", minimum=4 << 20, maximum=float(1 << 50),
                      default="64M", note="config.ini [ndbd default]; rolling restart")


class NdbRollingApplier:
    """Plans a DiskPageBufferMemory change (the value, config.ini's value now, the rolling
    restart to confirm) and applies it with NdbRollingRestart."""

    method = "ndb_rolling_restart"

    def __init__(self, ndb: NdbRollingRestart | None, on_step: OnStep) -> None:
        self.ndb = ndb
        self.on_step = on_step

    async def plan(self, changes: Mapping[str, str], *, restart_ok: bool = False,
                   facts: Mapping[str, KnobFacts] | None = None) -> Plan:
        ((_name, raw),) = changes.items()
        ndb = self.ndb

        def refused(why: str, old: str | None = None) -> Plan:
            return Plan(self.method, (planned(PARAMETER, raw, old, refusal=why),),
                        restart=True)

        if ndb is None:
            return refused(f"{PARAMETER} is an NDB data node parameter in config.ini: add an "
                           "[ndb] table (management host, config_ini) to the profile. Nothing "
                           "was changed")
        try:
            value = validate(NDB_FACTS, raw, static_ok=True)
        except KnobError as exc:
            return refused(str(exc))
        try:
            text = (await ndb.host.read_file(ndb.config_path)).decode(errors="replace")
        except (OSError, HostError) as exc:
            return refused(f"cannot read {ndb.config_path} on {ndb.host.name}: {exc}. "
                           "Nothing was changed")
        old = get_ndbd_default(text, PARAMETER)
        confirm = None if restart_ok else (
            f"{PARAMETER} needs a rolling restart of every data node (each waits for STARTED "
            "before the next). Confirm to go ahead; nothing was changed")
        return Plan(self.method, (planned(PARAMETER, raw, old, str(value), confirm=confirm),),
                    restart=True)

    async def apply(self, plan: Plan) -> Outcome:
        ndb = self.ndb
        ((knob,),) = (plan.knobs,)
        assert ndb is not None and knob.value is not None and knob.why_not is None
        ndb.on_step = self.on_step
        began = time.monotonic()
        try:
            await ndb.run(str(knob.value))
        except NdbError as exc:
            return Outcome("failed", str(exc), {PARAMETER: knob.old},
                           duration=time.monotonic() - began)
        return Outcome("ok", "", {PARAMETER: str(knob.value)},
                       duration=time.monotonic() - began)


__all__ = ["NDB_FACTS", "NdbRollingApplier"]
