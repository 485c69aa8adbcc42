"""Textual's line caches made where they are used, and Rich's width cache kept to an hour
(the live screen's footprint over a day).

Every rendered line of a widget is a Textual ``Strip``, and each Strip creates seven
``FIFOCache`` objects up front (crops, divisions, styles, filters ...), each an object and
an empty dict: about 0.9 KB a Strip before anything is cached. The live screen at 160x48
holds about 2,700 Strips, most of whose caches stay empty all their life.

``lean_strip_caches()`` has Strip make ``LeanFIFOCache`` instead: the same first-in
first-out cache, whose dict exists only from the first value stored. Measured with
``bench/memory_growth.py``'s screen part (a simulated day at 160x48): RSS at start
50.5 -> 49.1 MB, at the day's end 56.6 -> 54.1 MB.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

import textual.cache
import textual.strip
from rich.cells import cached_cell_len

_installed = False


class LeanFIFOCache:
    """``textual.cache.FIFOCache``'s behaviour (the oldest key goes first once ``maxsize``
    keys are held) with the dict made on the first ``set``."""

    __slots__ = ("_cache", "_maxsize")

    def __init__(self, maxsize: int) -> None:
        self._maxsize = maxsize
        self._cache: dict[Hashable, Any] | None = None

    def get(self, key: Hashable, default: Any = None) -> Any:
        cache = self._cache
        if cache is None:
            return default
        return cache.get(key, default)

    def __getitem__(self, key: Hashable) -> Any:
        if self._cache is None:
            raise KeyError(key)
        return self._cache[key]

    def set(self, key: Hashable, value: Any) -> None:
        cache = self._cache
        if cache is None:
            self._cache = cache = {}
        elif key not in cache and len(cache) >= self._maxsize:
            del cache[next(iter(cache))]
        cache[key] = value

    __setitem__ = set

    def __contains__(self, key: Hashable) -> bool:
        return self._cache is not None and key in self._cache

    def __len__(self) -> int:
        return 0 if self._cache is None else len(self._cache)

    def __bool__(self) -> bool:
        return bool(self._cache)

    def keys(self) -> Any:
        return ({} if self._cache is None else self._cache).keys()

    def clear(self) -> None:
        self._cache = None


def lean_strip_caches() -> None:
    """Have every Strip made from now on use LeanFIFOCache (idempotent). Left as it is if
    a Textual release no longer makes Strip's caches from ``textual.strip.FIFOCache``."""
    global _installed
    if _installed:
        return
    if getattr(textual.strip, "FIFOCache", None) is textual.cache.FIFOCache:
        setattr(textual.strip, "FIFOCache", LeanFIFOCache)  # noqa: B010 (a library's global)
    _installed = True


# Rich keeps the width of every string under 512 characters it measured, up to 4,096 of
# them (``rich.cells.cached_cell_len``). The live screen measures a new status line and new
# graph figures every sample, so over a day that cache fills with strings measured once
# (about 0.8 MB of a simulated day's growth at 160x48); the screen empties it every hour
# of samples instead.
CELL_WIDTHS_KEPT_FOR = 3600  # samples


def forget_cell_widths() -> None:
    """Empty Rich's cache of measured string widths (it refills with what is still drawn)."""
    cached_cell_len.cache_clear()
