"""A curve recipe's points (``[run] kind = "curve"``): the sizes' names and where a counter
fell to 0 for good.

Each point is a journal ``Checkpoint`` whose values hold the knob's value (bytes), the
probe's ``seconds`` for its ``queries``, and each counter's delta over them.
"""

from __future__ import annotations

from collections.abc import Sequence

from knobtop.journal.events import Checkpoint

SECONDS = "seconds"  # a point's value: the probe's queries' total time
QUERIES = "queries"  # a point's value: how many queries that time is for


def size_name(value: int) -> str:
    """"32K" for 32768, "1M" for 1048576, else the bytes."""
    for unit, size in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if value >= size and value % size == 0:
            return f"{value // size}{unit}"
    return str(value)


def curve_knob(points: Sequence[Checkpoint]) -> str:
    """The knob a curve's points swept (the first of each point's values)."""
    return next(iter(points[0].values), "") if points else ""


def curve_counters(points: Sequence[Checkpoint]) -> list[str]:
    """The counters a curve's points read, in their order."""
    knob = curve_knob(points)
    seen: dict[str, None] = {}
    for point in points:
        for key in point.values:
            if key not in (knob, SECONDS, QUERIES):
                seen.setdefault(key, None)
    return list(seen)


def zero_at(points: Sequence[Checkpoint], knob: str, counter: str) -> float | None:
    """The smallest value of ``knob`` from which ``counter`` stayed 0 to the curve's end
    (None: it was not 0 at the last value, or was never read)."""
    found: float | None = None
    for point in reversed(points):
        value, count = point.values.get(knob), point.values.get(counter)
        if value is None or count is None or count != 0:
            break
        found = value
    return found


def zero_line(points: Sequence[Checkpoint], knob: str, counter: str) -> str:
    """Where ``counter`` fell to 0 for good, in words (the run's last note, the table's)."""
    if not points:
        return "no value measured"
    at = zero_at(points, knob, counter)
    if at is not None:
        return f"{counter} fell to 0 at {knob} = {size_name(int(at))} ({int(at):,} bytes)"
    last, value = points[-1].values.get(counter), points[-1].values.get(knob)
    if last is None or value is None:
        return f"{counter} was not read at the last value"
    return (f"{counter} never fell to 0 for good (still {last:,.0f} at {knob} = "
            f"{size_name(int(value))})")


__all__ = ["QUERIES", "SECONDS", "curve_counters", "curve_knob", "size_name", "zero_at",
           "zero_line"]
