"""Messages the UI passes around; events arrive from the session thread as JournalEvent."""

from __future__ import annotations

from typing import TYPE_CHECKING

from textual.message import Message

if TYPE_CHECKING:  # the live screen imports the recipe runner only when a recipe runs
    from knobtop.journal.events import Event
    from knobtop.recipes.runner import Progress


class JournalEvent(Message):
    """One journal event, posted (thread-safely) by the session's listener."""

    def __init__(self, event: Event) -> None:
        super().__init__()
        self.event = event


class RecipeProgress(Message):
    """A copy of the running recipe's progress, posted from the session thread."""

    def __init__(self, progress: Progress) -> None:
        super().__init__()
        self.progress = progress


class RecipeNote(Message):
    """What the running recipe found on its way (the calibration line, an added round),
    posted from the session thread."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
