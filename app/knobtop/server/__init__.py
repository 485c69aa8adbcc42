"""The target server: connection, version, status polling, knob facts and appliers."""

from knobtop.server.knobs import (
    SEED_KNOBS,
    ChangeOutcome,
    KnobError,
    KnobFacts,
    SetGlobalApplier,
    load_facts,
    validate,
)
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink, ServerVersion
from knobtop.server.status import StatusPoller, status_query

__all__ = [
    "SEED_KNOBS",
    "ChangeOutcome",
    "ConnectionInfo",
    "KnobError",
    "KnobFacts",
    "ServerError",
    "ServerLink",
    "ServerVersion",
    "SetGlobalApplier",
    "StatusPoller",
    "load_facts",
    "status_query",
    "validate",
]
