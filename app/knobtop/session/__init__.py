"""The live session: one experiment against one server, and the port front ends use."""

from knobtop.session.core import (
    BaselineDiff,
    Session,
    SessionConfig,
    SessionError,
    SessionThread,
    prepare_all,
    prepare_tables,
    static_value,
    tables_ready,
)
from knobtop.session.port import SessionPort, SessionState

__all__ = ["BaselineDiff", "Session", "SessionConfig", "SessionError", "SessionPort",
           "SessionState", "SessionThread", "prepare_all", "prepare_tables", "static_value",
           "tables_ready"]
