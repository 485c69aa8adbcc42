"""Command palette provider: every action of the screen by name, with its key."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

from textual.command import DiscoveryHit, Hit, Hits, Provider


class ActionsProvider(Provider):
    """Lists ``app.palette_actions()``: (name, help, callback) triples."""

    def _actions(self) -> list[tuple[str, str, Callable[[], Any]]]:
        get = getattr(self.app, "palette_actions", None)
        return list(get()) if get is not None else []

    async def discover(self) -> Hits:
        for name, help_text, callback in self._actions():
            yield DiscoveryHit(name, callback, help=help_text)

    async def search(self, query: str) -> Hits:
        matcher = self.matcher(query)
        for name, help_text, callback in self._actions():
            score = matcher.match(name)
            if score > 0:
                yield Hit(score, matcher.highlight(name), callback, help=help_text)


def binding_actions(app: Any, bindings: Any, keymap: dict[str, str]) -> list[
        tuple[str, str, Callable[[], Any]]]:
    """Palette entries for key bindings that the app currently allows."""
    out: list[tuple[str, str, Callable[[], Any]]] = []
    for binding in bindings:
        if not binding.description or not binding.id:
            continue
        action = binding.action
        name = action.split("(", 1)[0]
        if app.check_action(name, ()) is False:
            continue
        keys = keymap.get(binding.id, binding.key)
        key = app.get_key_display(type(binding)(keys.split(",")[0], action))
        out.append((binding.description, f"key {key} · {binding.id}",
                    partial(app.run_action, action)))
    return out
