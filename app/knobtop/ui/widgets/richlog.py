"""Textual's RichLog, imported without the ``attrs`` package.

RichLog imports ``rich.pretty``, which imports ``attrs`` (there through textual-serve's
aiohttp) only to pretty-print attrs classes.  The panes write Rich Text, never such objects,
and ``attrs`` costs the live screen's process about 0.4 MB.
"""

from __future__ import annotations

from knobtop.lazyface import absent_while_importing

with absent_while_importing("attr"):
    from textual.widgets import RichLog

__all__ = ["RichLog"]
