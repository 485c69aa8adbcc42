"""The one root of knobtop's errors.

Every part's error class derives from :class:`KnobtopError` (keeping the builtin base it had,
so ``except ValueError`` callers still work), so a front end catches knobtop's failures once:
``except KnobtopError as exc: show(str(exc))``.  The message is the whole story: it names the
thing and the fix.  This module imports nothing, so every part (``journal`` too) may use it.
"""

from __future__ import annotations


class KnobtopError(Exception):
    """A failure knobtop can explain to its user: the message names the thing and the fix."""


class BadValue(KnobtopError, ValueError):
    """A value a person gave (a flag, a destination, a time) that cannot be used; the message
    names it and the form that works."""


__all__ = ["BadValue", "KnobtopError"]
