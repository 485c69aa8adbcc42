"""Rounds added as a run goes (``[run] until_ci``): one more replicate round while some
cell's TPS-ratio CI is wider than +-until_ci and the rounds are under ``max_replicates``."""

from __future__ import annotations

from collections.abc import Callable

from knobtop.analysis.resultcells import Results
from knobtop.recipes.model import Recipe, Step


def wide_cells(results: Results, baseline: str, half_width: float) -> list[str]:
    """The cells (arm x threads) whose TPS ratio CI is wider than +-half_width."""
    wide = []
    for cell in results.cells.values():
        v = cell.verdict
        if cell.arm == baseline:
            continue
        if v is None or v.lo is None or v.hi is None or (v.hi - v.lo) / 2 > half_width:
            wide.append(f"{cell.arm} x{cell.threads}")
    return wide


def next_round(recipe: Recipe, steps: list[Step], results: Callable[[], Results]
               ) -> tuple[list[Step], str]:
    """The steps of one more round (none: done) and what to say of it ("": nothing, when
    the recipe adds no rounds)."""
    if recipe.until_ci is None or recipe.max_replicates is None:
        return [], ""
    rounds = max((s.replicate for s in steps if not s.calibration), default=0)
    wide = wide_cells(results(), recipe.baseline.name, recipe.until_ci)
    if not wide:
        return [], (f"every cell's CI is within +-{recipe.until_ci * 100:g}% after {rounds} "
                    "rounds: done")
    if rounds >= recipe.max_replicates:
        return [], (f"max_replicates ({recipe.max_replicates}) reached; CI still wider "
                    f"than +-{recipe.until_ci * 100:g}% in {', '.join(wide)}")
    extra = [s for s in recipe.schedule(rounds + 1) if s.replicate == rounds + 1]
    return extra, (f"round {rounds + 1} added: the CI is wider than "
                   f"+-{recipe.until_ci * 100:g}% in {', '.join(wide)}")


__all__ = ["next_round", "wide_cells"]
