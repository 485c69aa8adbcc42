"""The one keymap every knobtop screen shares: the binding ids all apps declare, and the check
of a config file's ``[keys]`` against them (before any screen opens).  It sits above the apps
(they never import it), so ``look`` needs none of them."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from textual.binding import Binding

from knobtop.config import ConfigError
from knobtop.ui.app import KnobtopApp
from knobtop.ui.compare_app import CompareApp
from knobtop.ui.compare_many import ManyCompareApp
from knobtop.ui.replay_app import ReplayApp


def _binding_classes() -> list[type[Any]]:
    """Every knobtop class that declares key bindings (one keymap serves all screens): each
    app names its own in ``BINDING_CLASSES``."""
    apps: list[type[Any]] = [KnobtopApp, ReplayApp, CompareApp, ManyCompareApp]
    classes = list(apps)
    for app in apps:
        classes += [c for c in app.BINDING_CLASSES if c not in classes]
    return classes


def binding_ids(classes: Iterable[type[Any]] | None = None) -> dict[str, Binding]:
    """Every binding with an id that knobtop's apps, screens and widgets declare."""
    found: dict[str, Binding] = {}
    for cls in _binding_classes() if classes is None else classes:
        for klass in cls.__mro__:
            for binding in getattr(klass, "BINDINGS", ()):
                if isinstance(binding, Binding) and binding.id:
                    found.setdefault(binding.id, binding)
    return found


def check_keymap(keys: dict[str, str], known: Iterable[str], file: str) -> None:
    known = sorted(set(known))
    for binding in keys:
        if binding not in known:
            close = difflib.get_close_matches(binding, known, n=1)
            hint = (f"did you mean '{close[0]}'?" if close
                    else "see the help screen (?) for every binding id")
            raise ConfigError(file, f"keys.{binding}", "no key binding has this id", hint)


__all__ = ["binding_ids", "check_keymap"]
