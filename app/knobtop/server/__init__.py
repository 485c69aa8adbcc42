"""The target server: connection, version, status polling, knob facts and appliers.

Names are imported from their modules on first use (knobtop.lazyface)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from knobtop.lazyface import lazy_names

if TYPE_CHECKING:
    from knobtop.server.appliers.base import Outcome, Plan
    from knobtop.server.appliers.set_global import SetGlobalApplier
    from knobtop.server.knobs import SEED_KNOBS, KnobError, KnobFacts, load_facts, validate
    from knobtop.server.link import ConnectionInfo, ServerError, ServerLink, ServerVersion
    from knobtop.server.status import StatusPoller, status_query

__getattr__ = lazy_names(__name__, {
    "SEED_KNOBS": "knobtop.server.knobs",
    "Outcome": "knobtop.server.appliers.base",
    "Plan": "knobtop.server.appliers.base",
    "KnobError": "knobtop.server.knobs",
    "KnobFacts": "knobtop.server.knobs",
    "SetGlobalApplier": "knobtop.server.appliers.set_global",
    "load_facts": "knobtop.server.knobs",
    "validate": "knobtop.server.knobs",
    "ConnectionInfo": "knobtop.server.link",
    "ServerError": "knobtop.server.link",
    "ServerLink": "knobtop.server.link",
    "ServerVersion": "knobtop.server.link",
    "StatusPoller": "knobtop.server.status",
    "status_query": "knobtop.server.status",
})

__all__ = [
    "SEED_KNOBS",
    "ConnectionInfo",
    "KnobError",
    "KnobFacts",
    "Outcome",
    "Plan",
    "ServerError",
    "ServerLink",
    "ServerVersion",
    "SetGlobalApplier",
    "StatusPoller",
    "load_facts",
    "status_query",
    "validate",
]
