"""Screen updates that render only what changed (knobtop.ui.dirtyrender): each update the
replay screen makes while it plays, seeks, changes pages, shows its help and is resized puts
on the terminal exactly what Textual's own partial update would have."""

from __future__ import annotations

from typing import Any

import pytest
from rich.cells import cell_len
from rich.segment import ControlType, Segment
from textual._compositor import ChopsUpdate, Compositor

from harness import paths as repo_paths
from harness.ui import until
from knobtop.cli import replay_for
from knobtop.ui.dirtyrender import DirtyOnlyCompositor
from knobtop.ui.replay_app import ReplayApp

JOURNALS = repo_paths.DATA / "journals"

Cells = dict[tuple[int, int], tuple[str, Any]]


def terminal_cells(update: ChopsUpdate) -> Cells:
    """What a terminal shows where the update writes: (x, y) -> (character, style)."""
    cells: Cells = {}
    x = y = 0
    segments: list[Segment] = list(update.__rich_console__(None, None))  # type: ignore[arg-type]
    for text, style, control in segments:
        if control:
            for code in control:
                if code[0] == ControlType.CURSOR_MOVE_TO:
                    x, y = int(code[1]), int(code[2])
            continue
        if text == "\n":  # between spans; each span starts with a cursor move
            continue
        for char in text:
            cells[(x, y)] = (char, style)
            x += cell_len(char)
    return cells


def span_cells(update: ChopsUpdate) -> set[tuple[int, int]]:
    return {(x, y) for y, x1, x2 in update.spans for x in range(x1, x2)}


class Checked:
    """Every partial update the screens make, drawn both ways and compared."""

    def __init__(self) -> None:
        self.updates = 0
        self.partial = 0  # updates that changed less than a fifth of the screen
        self.differ: list[str] = []

    def compare(self, compositor: Compositor) -> ChopsUpdate | None:
        regions = set(compositor._dirty_regions)
        ours = DIRTY_ONLY(compositor)  # first, as the screen runs it
        compositor._dirty_regions.update(regions)
        theirs = Compositor.render_partial_update(compositor)
        if ours is None or theirs is None:
            if ours is not theirs:
                self.differ.append(f"{regions}: ours {ours!r}, Textual's {theirs!r}")
            return ours
        self.updates += 1
        width, height = compositor.size
        if len(span_cells(theirs)) * 5 < width * height:
            self.partial += 1
        mine, textuals = terminal_cells(ours), terminal_cells(theirs)
        if set(mine) != span_cells(theirs) or mine != textuals:
            wrong = sorted(k for k in set(mine) | set(textuals) if mine.get(k) != textuals.get(k))
            self.differ.append(f"{len(wrong)} cells differ, first {wrong[:5]} "
                               f"(ours {[mine.get(k) for k in wrong[:3]]}, "
                               f"Textual's {[textuals.get(k) for k in wrong[:3]]})")
        return ours


DIRTY_ONLY = DirtyOnlyCompositor.render_partial_update


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_each_update_of_a_playing_replay_shows_what_textuals_would(
        size: tuple[int, int], monkeypatch: pytest.MonkeyPatch) -> None:
    checked = Checked()
    monkeypatch.setattr(DirtyOnlyCompositor, "render_partial_update",
                        lambda compositor: checked.compare(compositor))
    replay = replay_for(JOURNALS / "lab-read-write.knobtop.jsonl")
    app = ReplayApp(replay)
    try:
        async with app.run_test(size=size) as pilot:
            assert isinstance(app.screen._compositor, DirtyOnlyCompositor)
            await until(pilot, lambda: app.frame is not None)
            keys = ["right"] * 8 + ["right_square_bracket", "2", "right", "1", "left",
                                    "question_mark", "escape", "comma", "full_stop"]
            for key in keys:
                await pilot.press(key)
                await pilot.pause()
            await pilot.resize_terminal(size[0] // 2 + 17, size[1] - 3)
            for key in ["home"] + ["right"] * 8:
                await pilot.press(key)
                await pilot.pause()
            await pilot.press("q")
    finally:
        replay.index.close()
    assert checked.differ == []
    assert checked.updates >= 20 and checked.partial >= 10, (checked.updates, checked.partial)
