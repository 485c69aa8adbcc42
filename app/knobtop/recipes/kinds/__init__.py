"""Recipe kinds (``[run] kind``): each one file, each a line of this registry."""

from __future__ import annotations

from knobtop.recipes.kinds.arms import ARMS
from knobtop.recipes.kinds.base import KindReader, LoadShape, RecipeKind, Sequencer
from knobtop.recipes.kinds.curve import CURVE
from knobtop.recipes.kinds.soak import SOAK
from knobtop.recipes.kinds.timeline import TIMELINE

KINDS: dict[str, RecipeKind] = {
    "arms": ARMS,
    "timeline": TIMELINE,
    "soak": SOAK,
    "curve": CURVE,
}

__all__ = ["KINDS", "KindReader", "LoadShape", "RecipeKind", "Sequencer"]
