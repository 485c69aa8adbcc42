"""Which tests are live (integration): the marker follows from what a test uses.

A test is live when it sits in ``tests/live/``, when its fixture closure holds a fixture that
starts (or stops) a real part (mariadbd, sshd, sysbench, tmux, a Galera cluster), or when
its own body builds one.  A fixture is live when it is declared so (:func:`live_part`) or
when its body builds a part (one of :data:`LIVE_CALLS`); fixtures built on it count too,
since a test's closure includes them.  The first two mark the test; the third, a test that
builds a part in its own body without the marker, fails collection (its file should say
``pytestmark = pytest.mark.integration``)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

from harness.paths import TESTS

F = TypeVar("F", bound=Callable[..., object])

# What builds a real part in a test's or a fixture's body.
LIVE_CALLS = ("Sandbox(", "SshServer(", "GaleraCluster(", "TmuxServer(", "pane_server(")
LIVE_FOLDER = TESTS / "live"
_DECLARED = "__knobtop_live_part__"


def live_part(function: F) -> F:
    """Declare a fixture live whose body does not show it (it calls a helper that starts
    the part, or needs a real binary such as sysbench); under ``@pytest.fixture``."""
    setattr(function, _DECLARED, True)
    return function


@functools.cache
def _calls_in(function: object) -> tuple[str, ...]:
    try:
        source = inspect.getsource(function)  # type: ignore[arg-type]
    except (OSError, TypeError):
        return ()
    return tuple(call.rstrip("(") for call in LIVE_CALLS if call in source)


def _is_live_fixture(function: object) -> bool:
    return bool(getattr(function, _DECLARED, False) or _calls_in(function))


def live_fixtures(item: pytest.Item) -> list[str]:
    """The live fixtures in the test's closure, by name."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return []
    return sorted(name for name, defs in info.name2fixturedefs.items()
                  if any(_is_live_fixture(d.func) for d in defs))


def live_calls(item: pytest.Item) -> list[str]:
    """The parts the test's own body builds."""
    function = getattr(item, "function", None)
    return [] if function is None else list(_calls_in(function))


def in_live_folder(item: pytest.Item) -> bool:
    return Path(str(item.path)).resolve().is_relative_to(LIVE_FOLDER)


def mark_live(items: list[pytest.Item]) -> list[str]:
    """Give the integration marker to the tests of tests/live/ and to those that use a live
    fixture; return those that build a part in their own body without the marker."""
    unmarked = []
    for item in items:
        if item.get_closest_marker("integration") is not None:
            continue
        if in_live_folder(item) or live_fixtures(item):
            item.add_marker(pytest.mark.integration)
        elif calls := live_calls(item):
            unmarked.append(f"{item.nodeid} (builds {', '.join(sorted(set(calls)))})")
    return unmarked
