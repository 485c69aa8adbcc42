"""Every key binding of the live screen as the code declares it: the app's own (with its
base's), and those of every screen and widget under ``knobtop.ui.screens`` and
``knobtop.ui.widgets`` (its dialogs and panels), found by walking those packages, so a
dialog added later is found without being listed anywhere."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

from textual.binding import Binding

import knobtop.ui.screens
import knobtop.ui.widgets
from knobtop.ui.app import KnobtopApp


def declared(cls: type[Any]) -> list[Binding]:
    """The bindings ``cls`` and its knobtop bases declare (not Textual's own)."""
    return [b for klass in cls.__mro__ if klass.__module__.startswith("knobtop.")
            for b in vars(klass).get("BINDINGS", ()) if isinstance(b, Binding)]


def dialog_classes() -> list[type[Any]]:
    """The classes of the live screen's dialogs and widgets that declare bindings."""
    found: list[type[Any]] = []
    for package in (knobtop.ui.screens, knobtop.ui.widgets):
        for info in pkgutil.iter_modules(package.__path__, f"{package.__name__}."):
            module = importlib.import_module(info.name)
            for _name, cls in inspect.getmembers(module, inspect.isclass):
                if cls.__module__ == info.name and declared(cls) and cls not in found:
                    found.append(cls)
    return found


def live_screen_bindings() -> dict[str, Binding]:
    """Binding id -> binding, for the live screen and every dialog and widget it shows."""
    out: dict[str, Binding] = {}
    for cls in (KnobtopApp, *dialog_classes()):
        for binding in declared(cls):
            assert binding.id, f"{cls.__name__}: the binding {binding.key!r} has no id"
            out.setdefault(binding.id, binding)
    return out
