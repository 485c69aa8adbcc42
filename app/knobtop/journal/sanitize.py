"""Live events and headers made printable before they are journaled and shown.

A live event carries text from outside (a server's error message, a knob value, a remote
host's output): the recorder passes each event through :func:`printable_record` once, so
the journal and every subscriber (the screen, headless) get the same printable text.  Only
the fields whose type can hold a string are looked at (a sample's hundred counters never
are), and an event with nothing to escape is returned as it is (no copy).
"""

from __future__ import annotations

import dataclasses
import typing
from typing import Any, TypeVar

from knobtop.journal.events import Event, Header
from knobtop.printable import printable_deep

Record = TypeVar("Record", bound=Event | Header)

_KEPT = str.maketrans("", "", "\n\t")
_TEXT_FIELDS: dict[type[Any], tuple[str, ...]] = {}


def _may_hold_text(hint: Any) -> bool:
    """Whether a value of this annotation can hold a string (a dict always can: its keys)."""
    if hint is str or hint is Any:
        return True
    origin = typing.get_origin(hint)
    if origin is dict:
        return True
    return any(_may_hold_text(arg) for arg in typing.get_args(hint))


def _text_fields(cls: type[Any]) -> tuple[str, ...]:
    names = _TEXT_FIELDS.get(cls)
    if names is None:
        hints = typing.get_type_hints(cls)
        names = tuple(f.name for f in dataclasses.fields(cls) if _may_hold_text(hints[f.name]))
        _TEXT_FIELDS[cls] = names
    return names


def _clean(value: Any) -> bool:
    """True when every string in ``value`` (dict keys too) is printable (``\\n``, ``\\t``
    allowed): what :func:`knobtop.printable.printable` would leave as it is."""
    kind = type(value)
    if kind is str:
        text: str = value
        return text.isprintable() or text.translate(_KEPT).isprintable()
    if kind is dict:
        return all(_clean(k) for k in value) and _all_clean(value.values())
    if kind is list or kind is tuple:
        return _all_clean(value)
    return True


def _all_clean(values: Any) -> bool:
    # Numbers (a sample's CPU times) are passed over without a call each.
    return all(_clean(v) for v in values if type(v) in _CONTAINERS)


_CONTAINERS = frozenset({str, dict, list, tuple})


def printable_record(record: Record) -> Record:
    """``record`` (an event or a header) with every string of it made printable; the same
    object when there is nothing to escape."""
    names = _text_fields(type(record))
    dirty = [name for name in names if not _clean(getattr(record, name))]
    if not dirty:
        return record
    return dataclasses.replace(
        record, **{name: printable_deep(getattr(record, name)) for name in dirty})


__all__ = ["printable_record"]
