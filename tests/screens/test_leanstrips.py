"""The live screen's footprint (knobtop.ui.leanstrips): Textual's Strip caches made on
first use, Rich's width cache emptied every hour of samples."""

from __future__ import annotations

import inspect
import random
import re

import pytest
from rich.cells import cached_cell_len, cell_len
from rich.segment import Segment
from rich.style import Style
from textual.cache import FIFOCache
from textual.strip import Strip

from harness import paths as repo_paths
from harness.ui import until
from knobtop.journal import JournalReader, Sample
from knobtop.ui.app import KnobtopApp
from knobtop.ui.leanstrips import (
    CELL_WIDTHS_KEPT_FOR,
    STRIP_CACHES,
    TEXTUALS_STRIP_INIT,
    LeanFIFOCache,
    _strip_init,
)

RECORDED = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"


def test_it_keeps_and_drops_what_textuals_fifo_cache_does() -> None:
    rng = random.Random(7)
    lean: LeanFIFOCache = LeanFIFOCache(4)
    theirs: FIFOCache[int, int] = FIFOCache(4)
    assert lean.get(1) is None and not lean and len(lean) == 0 and 1 not in lean
    for step in range(2000):
        key = rng.randrange(12)
        if rng.random() < 0.5:
            lean[key] = theirs[key] = step
        assert lean.get(key, "none") == theirs.get(key, "none")
        assert len(lean) == len(theirs) and list(lean.keys()) == list(theirs.keys())
        if rng.random() < 0.01:
            lean.clear()
            theirs.clear()
    assert bool(lean) == bool(theirs)


def test_strips_made_once_a_screen_exists_cache_lazily_and_render_the_same() -> None:
    segments = [Segment("knob", Style(bold=True)), Segment("=", None), Segment("value")]
    before = Strip(segments)  # made with Textual's own caches
    KnobtopApp(header=None, events=[])  # the screens' base class installs the lean caches
    strip = Strip(segments)
    assert isinstance(strip._crop_cache, LeanFIFOCache)
    assert isinstance(strip._divide_cache, LeanFIFOCache)
    assert not strip._crop_cache and not strip._style_cache  # no dict until first use
    # The same results as a Strip with Textual's caches, the second time from the cache.
    assert strip.crop(2, 7) == before.crop(2, 7)
    assert strip.crop(2, 7) is strip.crop(2, 7)
    assert strip.divide([3, 6]) == before.divide([3, 6])
    assert strip.divide([3, 6]) is strip.divide([3, 6])
    styled = Style(italic=True)
    assert strip.apply_style(styled) == before.apply_style(styled)
    assert strip.apply_style(styled) is strip.apply_style(styled)
    assert strip.crop_extend(1, 12, None) == before.crop_extend(1, 12, None)
    assert strip.extend_cell_length(14) == before.extend_cell_length(14)
    assert strip.apply_offsets(1, 2) == before.apply_offsets(1, 2)
    assert strip.text == before.text == "knob=value"


def made(strip: Strip, name: str) -> bool:
    """Whether the Strip's slot holds a cache (read past Strip.__getattr__, which makes it)."""
    try:
        getattr(Strip, name).__get__(strip, Strip)
    except AttributeError:
        return False
    return True


def test_a_strip_makes_each_cache_when_first_asked_for() -> None:
    KnobtopApp(header=None, events=[])  # installs the lean caches
    strip = Strip([Segment("knob", Style(bold=True)), Segment("=value")])
    assert [name for name in STRIP_CACHES if made(strip, name)] == []
    assert strip.crop(2, 7).text == "ob=va"
    assert [name for name in STRIP_CACHES if made(strip, name)] == ["_crop_cache"]
    assert strip.crop(2, 7) is strip.crop(2, 7)  # cached in it
    with pytest.raises(AttributeError):
        strip.no_such_attribute  # noqa: B018 (only the caches are made on demand)


def test_the_caches_made_on_demand_are_the_ones_textual_makes_up_front() -> None:
    """Read from Textual's own Strip.__init__: the caches it makes and their sizes, and every
    other attribute it sets, which the lean __init__ must set too."""
    source = inspect.getsource(TEXTUALS_STRIP_INIT)
    caches = {name: int(size) for name, size in
              re.findall(r"self\.(\w+) *(?::[^=]*)?= FIFOCache\((\d+)\)", source)}
    assert caches == STRIP_CACHES
    others = set(re.findall(r"self\.(\w+) *(?::[^=]*)?= (?!FIFOCache)", source))
    lean = set(re.findall(r"self\.(\w+) = ", inspect.getsource(_strip_init)))
    assert others == lean and len(lean) == 5
    assert set(Strip.__slots__) == set(STRIP_CACHES) | lean


async def test_the_live_screen_empties_richs_width_cache_every_hour_of_samples() -> None:
    reader = JournalReader(RECORDED)
    samples = [e for e in reader if isinstance(e, Sample)]
    app = KnobtopApp(header=reader.header, events=[])
    async with app.run_test(size=(160, 48)) as pilot:
        for event in samples[:3]:
            app._from_session(event)
        await until(pilot, lambda: app.board is not None and app.board.samples == 3)
        board = app.board
        assert board is not None
        measured_once = "a status line drawn once, 3599 samples ago"
        cell_len(measured_once)
        app.paint(force=True)  # within the first hour: kept
        assert cached_cell_len.cache_info().currsize > 0
        kept = cached_cell_len.cache_info().currsize
        board.samples = CELL_WIDTHS_KEPT_FOR - 1
        app.paint(force=True)
        assert cached_cell_len.cache_info().currsize >= kept
        board.samples = CELL_WIDTHS_KEPT_FOR  # an hour of samples: emptied, then refilled
        app.paint(force=True)  # with what the screen still draws
        before = cached_cell_len.cache_info().currsize
        cell_len(measured_once)
        assert cached_cell_len.cache_info().currsize == before + 1  # it had been forgotten
        board.samples = CELL_WIDTHS_KEPT_FOR + 1
        app.paint(force=True)  # not again within the hour
        assert cached_cell_len.cache_info().currsize >= before + 1
