"""Keys in a text field applied in the order they were typed (a Textual 8 workaround).

Textual's ``Input`` inserts printable keys in its own key handler, but its editing keys
(backspace, delete, arrows, home/end, ctrl+u, enter ...) are bindings: the key event
bubbles up to the app, which then runs the binding back on the field. Keys that arrive in
one burst (tmux ``send-keys BSpace 1 0 0 0 Enter``, a paste, a laggy SSH link, a fast
typist) are all forwarded to the field first, so ``200`` + BSpace 1 0 0 0 became
``200100`` instead of ``201000``: the backspace ran after the keys that followed it. In a
knob dialog that applies the wrong value to a server.

``keep_key_order()`` makes every ``Input`` (knobtop's dialogs and the command palette's
field alike) run its own non-priority bindings in its key handler, in arrival order.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from textual import events
from textual.binding import BindingsMap
from textual.widgets import Input

_KeyHandler = Callable[[Input, events.Key], Awaitable[None]]
_installed = False


def keep_key_order() -> None:
    """Patch ``Input`` once per process (idempotent)."""
    global _installed
    if _installed:
        return
    original: _KeyHandler = Input._on_key
    # Input's own editing keys only: the scrolling keys every widget inherits (up, down,
    # page up ...) stay with the app's binding chain, which skips an action that does not
    # apply and offers the key to the screen (the palette's list takes up/down that way).
    editing = BindingsMap(Input.BINDINGS).key_to_bindings

    async def _on_key_in_order(self: Input, event: events.Key) -> None:
        if not event.is_printable:
            for binding in editing.get(event.key, ()):
                if binding.priority:
                    continue  # the app ran priority bindings before forwarding the key
                if await self.app.run_action(binding.action, self):
                    event.stop()
                    event.prevent_default()
                    return
        await original(self, event)

    patched: Any = _on_key_in_order
    setattr(Input, "_on_key", patched)  # noqa: B010 (a method of a library class)
    _installed = True
