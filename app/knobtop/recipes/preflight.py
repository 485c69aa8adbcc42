"""What a run checks and measures before its first step: its sessions open, its targets
there, the recipe's checks against each server (its warnings), and the conditions probe
of every server (into the start's plan; what ``[conditions]`` needs and the box does not
offer, as more warnings)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from knobtop.conditions import Conditions, unmet
from knobtop.errors import KnobtopError
from knobtop.recipes.checks import check_for_server, check_for_targets
from knobtop.recipes.model import Recipe, RunFailed
from knobtop.session.port import SessionPort, SessionState


def check_servers(recipe: Recipe, ports: Mapping[str, SessionPort], state: SessionState,
                  states: Mapping[str, SessionState], *, whole: bool) -> list[str]:
    """Refuse a run whose sessions are not open or whose arms name a target without
    one; then what the recipe's checks against the server(s) found (its warnings).
    ``whole``: the steps are known before the run (a tune's come as it goes, and it
    judges its replicates itself)."""
    for name, st in states.items():
        if st.catalog is None or st.header is None:
            raise RunFailed("open the session before running a recipe"
                            + (f" (target {name})" if name else ""))
    missing = sorted({a.target for a in recipe.arms} - set(ports))
    if missing:
        raise RunFailed(f"no session for target {', '.join(missing)}")
    assert state.catalog is not None
    if len(ports) > 1:
        return check_for_targets(
            recipe, {n: st.catalog for n, st in states.items() if st.catalog})
    return check_for_server(recipe, state.catalog, whole=whole)


async def probe_conditions(recipe: Recipe, ports: Mapping[str, SessionPort],
                           plan: dict[str, Any], *, lab: bool
                           ) -> tuple[dict[str, Conditions], list[str]]:
    """The conditions probe of every server of the run (server.conditions), put in the
    start's ``plan``; and what the recipe's [conditions] need and the box does not offer,
    as warnings (before the first step, like every other)."""
    found: dict[str, Conditions] = {}
    for name, port in ports.items():
        try:
            found[name] = await port.conditions()
        except KnobtopError as exc:  # the server, a host, the lab's strace
            found[name] = Conditions(problems=(f"the probe failed: {exc}",))
    plan["conditions"] = {n: c.as_json() for n, c in found.items()}
    needs = recipe.needs
    if not needs:
        return found, []
    plan["needs"] = needs.as_json()
    return found, [(f"{name}: " if name else "") + line
                   for name, c in found.items() for line in unmet(needs, c, lab=lab)]


__all__ = ["check_servers", "probe_conditions"]
