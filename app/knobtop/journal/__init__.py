"""The experiment journal: typed events, an append-only writer and a tolerant reader.

Names are imported from their modules on first use (knobtop.lazyface)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from knobtop.lazyface import lazy_names

if TYPE_CHECKING:
    from knobtop.journal.events import (
        FORMAT_VERSION,
        Change,
        Checkpoint,
        End,
        Error,
        Event,
        Header,
        Knobs,
        Load,
        Mark,
        Note,
        OutsideChange,
        Phase,
        Progress,
        RecipeRun,
        Restart,
        Sample,
        StepResult,
        Trial,
        Unknown,
    )
    from knobtop.journal.reader import JournalFormatError, JournalReader
    from knobtop.journal.writer import JournalWriter

__getattr__ = lazy_names(__name__, {
    "FORMAT_VERSION": "knobtop.journal.events",
    "Change": "knobtop.journal.events",
    "End": "knobtop.journal.events",
    "Error": "knobtop.journal.events",
    "Event": "knobtop.journal.events",
    "Header": "knobtop.journal.events",
    "Knobs": "knobtop.journal.events",
    "Load": "knobtop.journal.events",
    "Mark": "knobtop.journal.events",
    "Note": "knobtop.journal.events",
    "OutsideChange": "knobtop.journal.events",
    "Phase": "knobtop.journal.events",
    "Progress": "knobtop.journal.events",
    "RecipeRun": "knobtop.journal.events",
    "Restart": "knobtop.journal.events",
    "Sample": "knobtop.journal.events",
    "StepResult": "knobtop.journal.events",
    "Checkpoint": "knobtop.journal.events",
    "Trial": "knobtop.journal.events",
    "Unknown": "knobtop.journal.events",
    "JournalFormatError": "knobtop.journal.reader",
    "JournalReader": "knobtop.journal.reader",
    "JournalWriter": "knobtop.journal.writer",
})

__all__ = [
    "FORMAT_VERSION",
    "Change",
    "Checkpoint",
    "End",
    "Error",
    "Event",
    "Header",
    "JournalFormatError",
    "JournalReader",
    "JournalWriter",
    "Knobs",
    "Load",
    "Mark",
    "Note",
    "OutsideChange",
    "Phase",
    "Progress",
    "RecipeRun",
    "Restart",
    "Sample",
    "StepResult",
    "Trial",
    "Unknown",
]
