"""The experiment journal: typed events, an append-only writer and a tolerant reader."""

from knobtop.journal.events import (
    FORMAT_VERSION,
    Change,
    End,
    Error,
    Event,
    Header,
    Knobs,
    Load,
    Mark,
    Note,
    Phase,
    RecipeRun,
    Restart,
    Sample,
    StepResult,
    Unknown,
)
from knobtop.journal.reader import JournalFormatError, JournalReader
from knobtop.journal.writer import JournalWriter

__all__ = [
    "FORMAT_VERSION",
    "Change",
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
    "Phase",
    "RecipeRun",
    "Restart",
    "Sample",
    "StepResult",
    "Unknown",
]
