"""Package faces that import a name's module only when the name is first asked for.

`from knobtop.journal import JournalReader` keeps working, but `import knobtop.journal.events`
no longer pulls in every module of the package (the command line starts in well under 0.1 s
only if nothing heavy is imported before a command needs it).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping

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


__all__ = ["lazy_names"]
