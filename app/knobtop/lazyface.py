"""Package faces that import a name's module only when the name is first asked for.

`from knobtop.journal import JournalReader` keeps working, but `import knobtop.journal.events`
no longer pulls in every module of the package (the command line starts in well under 0.1 s
only if nothing heavy is imported before a command needs it).
"""

from __future__ import annotations

import _imp
import contextlib
import importlib
import sys
from collections.abc import Callable, Iterator, Mapping

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs 4 ms of start-up
if TYPE_CHECKING:
    from typing import Any


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package``: each name of ``where`` (name -> module)
    is imported from its module on first use, then kept in the package's namespace."""

    def getattr_(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        setattr(importlib.import_module(package), name, value)
        return value

    return getattr_


@contextlib.contextmanager
def absent_while_importing(package: str) -> Iterator[None]:
    """Import something that would import ``package`` only for a part of it never used here.

    While the block runs the package reads as absent (``sys.modules`` holds None for it), so
    a ``try: import package`` in what is imported takes its ``except ImportError`` path; it
    runs under the import lock so that no other thread's import sees that.  A process that
    has already imported the package keeps it as it is."""
    _imp.acquire_lock()
    try:
        if package in sys.modules:
            yield
            return
        sys.modules[package] = None  # type: ignore[assignment]
        try:
            yield
        finally:
            held: object = sys.modules.get(package, sys)
            if held is None:  # still the stand-in: nothing imported the package meanwhile
                del sys.modules[package]
    finally:
        _imp.release_lock()


__all__ = ["absent_while_importing", "lazy_names"]
