"""Times as knobtop writes them (mm:ss since the start, UTC clock) and as people type them
(seconds, mm:ss, h:mm:ss, FROM-TO ranges)."""

from __future__ import annotations

import math
import re
import time
from datetime import UTC, datetime

from knobtop.errors import KnobtopError


class TimeError(KnobtopError, ValueError):
    """A time or range that cannot be read; the message shows the forms that can."""


def wall_clock(wall: float) -> str:
    """A wall-clock time (seconds since the epoch) as HH:MM:SS, UTC."""
    return time.strftime("%H:%M:%S", time.gmtime(wall))


def fmt_rel(t: float) -> str:
    """Seconds since the session started as mm:ss (h:mm:ss from one hour on)."""
    sign = "-" if t < 0 else ""
    total = int(abs(t))
    hours, rest = divmod(total, 3600)
    minutes, seconds = divmod(rest, 60)
    if hours:
        return f"{sign}{hours}:{minutes:02d}:{seconds:02d}"
    return f"{sign}{minutes:02d}:{seconds:02d}"


def fmt_utc(wall: float, with_date: bool = False) -> str:
    stamp = datetime.fromtimestamp(wall, UTC)
    return stamp.strftime("%Y-%m-%d %H:%M:%S UTC" if with_date else "%H:%M:%S")


_TIME = r"(?:\d+(?::\d{1,2}){0,2}(?:\.\d+)?)"
_RANGE = re.compile(rf"^\s*({_TIME})?\s*(?:-|\.\.)\s*({_TIME})?\s*$")


def parse_time(text: str) -> float:
    """Seconds from "75", "75.5", "1:15" or "1:01:15"."""
    parts = text.strip().split(":")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        raise TimeError(f"not a time: {text!r} (use seconds, mm:ss or h:mm:ss)") from None
    seconds = 0.0
    for v in values:
        seconds = seconds * 60 + v
    if not math.isfinite(seconds):  # "nan", "inf", a thousand digits
        raise TimeError(f"not a time: {text!r} (use seconds, mm:ss or h:mm:ss)")
    return seconds


def parse_range(text: str) -> tuple[float | None, float | None]:
    """A time range "FROM-TO" (either side may be empty): "0-50", "50-", "1:00..2:30"."""
    match = _RANGE.match(text)
    if not match or (match.group(1) is None and match.group(2) is None):
        raise TimeError(f"not a time range: {text!r} (use FROM-TO, e.g. 0:30-1:00 or 50-)")
    lo = parse_time(match.group(1)) if match.group(1) else None
    hi = parse_time(match.group(2)) if match.group(2) else None
    if lo is not None and hi is not None and hi <= lo:
        raise TimeError(f"empty time range: {text!r}")
    return lo, hi
