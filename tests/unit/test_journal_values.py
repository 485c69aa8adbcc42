"""The journal's types compare, hash and show as dataclasses' own methods would.

Their ``__eq__``, ``__hash__`` and ``__repr__`` are one shared set (events._ByValue), not
generated per type: every type, with every field, against a dataclass of the same fields
that has dataclasses' own."""

from __future__ import annotations

import dataclasses
import itertools
import types
import typing
from pathlib import Path
from typing import Any

import pytest

from harness import paths as repo_paths
from knobtop.journal import JournalReader
from knobtop.journal import events as ev

TYPES: list[type[Any]] = [ev.Header, *ev.EVENT_TYPES.values(), ev.Unknown]
SIMPLE = {int: 3, float: 2.5, str: "x", bool: True, type(None): None}


def value_for(hint: Any) -> Any:
    """A value of the annotation ``hint`` (the first member of a union)."""
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        return value_for(typing.get_args(hint)[0])
    if origin is list:
        return [value_for(typing.get_args(hint)[0])]
    if origin is dict:
        return {"k": value_for(typing.get_args(hint)[1])}
    return SIMPLE.get(hint, "any")


def one_of_each(cls: type[Any]) -> Any:
    hints = typing.get_type_hints(cls)
    return cls(**{f.name: value_for(hints[f.name]) for f in dataclasses.fields(cls)})


def reference(obj: Any) -> Any:
    """``obj``'s values in a dataclass of the same name and fields with dataclasses' own
    eq, hash and repr."""
    cls = type(obj)
    ref = dataclasses.make_dataclass(cls.__name__, [f.name for f in dataclasses.fields(cls)],
                                     frozen=True)
    ref.__qualname__ = cls.__qualname__
    return ref(**{f.name: getattr(obj, f.name) for f in dataclasses.fields(cls)})


def instances() -> list[Any]:
    found = [one_of_each(cls) for cls in TYPES]
    for path in sorted((repo_paths.DATA / "journals").glob("*.knobtop.jsonl")):
        reader = JournalReader(Path(path))
        found += [reader.header, *reader]
    return found


def hash_or_error(obj: Any) -> object:
    try:
        return hash(obj)
    except TypeError as exc:
        return str(exc)


def test_every_type_is_a_frozen_slotted_dataclass_without_its_own_three() -> None:
    for cls in TYPES:
        assert "__slots__" in cls.__dict__, cls
        assert not {"__eq__", "__hash__", "__repr__"} & set(cls.__dict__), cls
        obj = one_of_each(cls)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(obj, dataclasses.fields(obj)[0].name, 1.0)


def test_eq_hash_and_repr_are_the_dataclass_ones() -> None:
    every = instances()
    assert {type(x) for x in every} == set(TYPES)
    for obj in every:
        ref = reference(obj)
        assert repr(obj) == repr(ref)
        assert hash_or_error(obj) == hash_or_error(ref)
        same = dataclasses.replace(obj)
        assert same == obj
        assert not same != obj  # noqa: SIM202 (__ne__ too)
        assert obj.__eq__(reference(obj)) is NotImplemented
        for f in dataclasses.fields(obj):  # one field changed: not equal, as the reference
            other = dataclasses.replace(obj, **{f.name: ["changed"]})
            assert (other == obj) is (reference(other) == ref) is False, f.name
    for a, b in itertools.pairwise(every):  # other types, other values
        assert (a == b) is (type(a) is type(b) and reference(a) == reference(b))
