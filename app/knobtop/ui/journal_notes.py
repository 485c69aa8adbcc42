"""The note and mark keys of the live screen: a line of text, or a numbered mark, written to
the session's journal (a follower has none: it says so)."""

from __future__ import annotations

from knobtop.ui.live_view import LiveViewApp
from knobtop.ui.screens.prompt import PromptScreen


class JournalNotes:
    """Notes and marks for ``app``'s journal; marks are numbered from 1 in each screen."""

    def __init__(self, app: LiveViewApp) -> None:
        self.app = app
        self._marks = 0

    def note(self) -> None:
        """Ask for a note; an empty one is not written."""
        session = self.app.need_session()
        if session is None:
            return

        def write(text: str | None) -> None:
            if text and self.app.runner is not None:
                self.app.runner.call(lambda: session.note(text))

        self.app.push_screen(PromptScreen("Note for the journal"), write)

    def mark(self) -> None:
        """Write the next mark ("mark 1", "mark 2", ...)."""
        session = self.app.need_session()
        if session is None or self.app.runner is None:
            return
        self._marks += 1
        label = f"mark {self._marks}"
        self.app.runner.call(lambda: session.mark(label))
