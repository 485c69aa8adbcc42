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

And a Strip makes each cache only when it is first asked for: most Strips use one or two of
the seven, and a paint makes hundreds of Strips, whose caches, made up front, were
thousands of small objects a paint (``memory_growth.py --part both``, two runs each side:
RSS at start 49.7 -> 48.1 MB).
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable
from typing import Any

import textual.cache
import textual.strip
from rich.cells import cached_cell_len
from rich.segment import Segment
from textual.strip import Strip

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


#: Textual's own ``Strip.__init__``, which makes all seven caches up front.
TEXTUALS_STRIP_INIT = Strip.__init__
#: Strip's caches and their sizes, as ``TEXTUALS_STRIP_INIT`` makes them (the test of this
#: module reads them from its source).
STRIP_CACHES = {"_divide_cache": 4, "_crop_cache": 16, "_style_cache": 16, "_filter_cache": 4,
                "_line_length_cache": 4, "_crop_extend_cache": 4, "_offsets_cache": 4}


def _strip_init(self: Strip, segments: Iterable[Segment], cell_length: int | None = None) -> None:
    """``Strip.__init__`` without the caches: each is made when first asked for."""
    self._segments = list(segments)
    self._cell_length = cell_length
    self._render_cache = None
    self._link_ids = None
    self._cell_count = None


def _strip_cache(self: Strip, name: str) -> LeanFIFOCache:
    """A Strip's cache, made the first time it is asked for (``__getattr__`` is called
    only for a slot not set yet)."""
    size = STRIP_CACHES.get(name)
    if size is None:
        raise AttributeError(name)
    cache = LeanFIFOCache(size)
    object.__setattr__(self, name, cache)
    return cache


def lean_strip_caches() -> None:
    """Have every Strip made from now on make its caches when first asked for, each a
    LeanFIFOCache (idempotent). Left as it is if a Textual release no longer makes Strip's
    caches from ``textual.strip.FIFOCache``."""
    global _installed
    if _installed:
        return
    if getattr(textual.strip, "FIFOCache", None) is textual.cache.FIFOCache:
        setattr(textual.strip, "FIFOCache", LeanFIFOCache)  # noqa: B010 (a library's global)
        Strip.__init__ = _strip_init  # type: ignore[method-assign]
        Strip.__getattr__ = _strip_cache  # type: ignore[attr-defined]
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
