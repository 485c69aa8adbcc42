"""The live session: one experiment against one server, and the port front ends use.

Names are imported from their modules on first use (knobtop.lazyface)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from knobtop.lazyface import lazy_names

if TYPE_CHECKING:
    from knobtop.load.prepare import prepare_all, prepare_tables, tables_ready
    from knobtop.server.knobs import static_value
    from knobtop.session.core import Session, SessionConfig, SessionError
    from knobtop.session.port import BaselineDiff, SessionPort, SessionState
    from knobtop.session.thread import SessionThread

__getattr__ = lazy_names(__name__, {
    "Session": "knobtop.session.core",
    "SessionConfig": "knobtop.session.core",
    "SessionError": "knobtop.session.core",
    "BaselineDiff": "knobtop.session.port",
    "static_value": "knobtop.server.knobs",
    "SessionPort": "knobtop.session.port",
    "SessionState": "knobtop.session.port",
    "SessionThread": "knobtop.session.thread",
    "prepare_all": "knobtop.load.prepare",
    "prepare_tables": "knobtop.load.prepare",
    "tables_ready": "knobtop.load.prepare",
})

__all__ = ["BaselineDiff", "Session", "SessionConfig", "SessionError", "SessionPort",
           "SessionState", "SessionThread", "prepare_all", "prepare_tables", "static_value",
           "tables_ready"]
