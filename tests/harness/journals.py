"""Fold a recorded journal into a MetricBoard, keeping the events a test looks at."""

from __future__ import annotations

from pathlib import Path

from knobtop.journal import JournalReader, Load, Phase, Sample
from knobtop.metrics import MetricBoard


def board_of(journal: Path) -> tuple[MetricBoard, list[Sample], list[Load], list[Phase]]:
    """The board after every event, and the samples, load reports and phases in order."""
    reader = JournalReader(journal)
    board = MetricBoard(reader.header)
    samples: list[Sample] = []
    loads: list[Load] = []
    phases: list[Phase] = []
    for event in reader:
        board.apply(event)
        if isinstance(event, Sample):
            samples.append(event)
        elif isinstance(event, Load):
            loads.append(event)
        elif isinstance(event, Phase):
            phases.append(event)
    return board, samples, loads, phases
