"""Knob values as people read them: byte sizes with K/M/G, huge range bounds in short form,
and what each value of an enum-like knob means. The exact value is never lost: callers
show it beside the short form where it matters (the edit dialog)."""

from __future__ import annotations

import math

from knobtop.printable import printable

_UNITS = ((1 << 60, "E"), (1 << 50, "P"), (1 << 40, "T"), (1 << 30, "G"), (1 << 20, "M"),
          (1 << 10, "K"))

# Knobs counted in bytes whose names do not end in _size.
_BYTE_KNOBS = frozenset({"diskpagebuffermemory", "innodb_log_file_size", "max_allowed_packet",
                         "innodb_buffer_pool_chunk_size", "innodb_log_buffer_size"})

# What each value of a small-integer or enum knob does (REFERENCE.md section 1 and the
# servers' manuals). Shown in the edit dialog and the palette's description.
MEANINGS: dict[str, dict[str, str]] = {
    "innodb_flush_log_at_trx_commit": {
        "0": "write and flush the redo log about once a second (a crash loses ~1 s)",
        "1": "write and flush at every commit (durable; the default)",
        "2": "write at commit, flush about once a second (an OS crash loses ~1 s)",
        "3": "MariaDB: flush at prepare and at commit (durable, usually redundant)",
    },
    "innodb_flush_neighbors": {
        "0": "flush only the page itself (SSD)",
        "1": "also flush contiguous dirty pages of the extent",
        "2": "also flush any dirty pages of the same extent",
    },
    "innodb_doublewrite": {
        "ON": "pages go through the doublewrite buffer (torn-page safe)",
        "OFF": "no doublewrite (faster writes; torn pages possible)",
        "fast": "MariaDB 11: doublewrite without the extra fsync",
        "DETECT_AND_RECOVER": "MySQL 8.0.30+: same as ON",
        "DETECT_ONLY": "MySQL 8.0.30+: metadata only, no page contents",
    },
}


def is_byte_knob(name: str) -> bool:
    """Is this knob's value a number of bytes (shown as 128M rather than 134217728)?"""
    low = name.lower()
    return low.endswith("_size") or low.endswith("_size_max") or low in _BYTE_KNOBS


def exact_size(number: int) -> str | None:
    """``128M`` for 134217728: only when the unit divides the number exactly."""
    if number <= 0:
        return None
    for unit, suffix in _UNITS:
        if number >= unit and number % unit == 0:
            return f"{number // unit}{suffix}"
    return None


def show_value(name: str, value: str | None) -> str:
    """A knob value for a table cell: sizes in K/M/G when exact, trailing zeros dropped,
    control characters shown as escapes (a value is the server's text)."""
    if value is None:
        return "—"
    text = printable(value.removesuffix(".000000"), newlines=False)
    if is_byte_knob(name) and text.isdigit():
        return exact_size(int(text)) or text
    return text


def show_bound(number: float) -> str:
    """A range bound as a person reads it: 4294967295 -> 4G, 1.8e19 -> 16E, 5000 -> 5000.

    Bounds near a power of two (the type's maximum, ``2**32 - 1``) read as that power."""
    if not math.isfinite(number):
        return str(number)
    if number == int(number) and abs(number) < 1_000_000:
        return str(int(number))
    for unit, suffix in _UNITS:
        for candidate in (number, number + 1):
            if candidate >= unit and candidate % unit == 0:
                return f"{int(candidate // unit)}{suffix}"
    return f"{int(number):,}" if number == int(number) else f"{number:.6g}"


def meaning(name: str, value: str | None) -> str | None:
    """What ``value`` does for this knob, if knobtop knows."""
    if value is None:
        return None
    table = MEANINGS.get(name.lower())
    if table is None:
        return None
    return table.get(value.strip()) or table.get(value.strip().upper())
