"""Messages the UI passes around; events arrive from the session thread as JournalEvent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:
    from knobtop.journal.events import Event


class JournalEvent(Message):
    """One journal event, posted (thread-safely) by the session's listener."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event
