"""Recipe kinds (``[run] kind``): each one file, each a line of this registry (the kinds a
recipe file selects; the tune's, ``kinds/tune.py``, is built per run by ``knobtop tune``
and is not here)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from knobtop.recipes.kinds.arms import ARMS
from knobtop.recipes.kinds.base import FileKind, KindReader, LoadShape, RecipeKind, Sequencer
from knobtop.recipes.kinds.curve import CURVE
from knobtop.recipes.kinds.soak import SOAK
from knobtop.recipes.kinds.timeline import TIMELINE
from knobtop.recipes.model import Recipe

KINDS: dict[str, FileKind] = {
    "arms": ARMS,
    "timeline": TIMELINE,
    "soak": SOAK,
    "curve": CURVE,
}

# A kind no recipe file selects, and what the reader's refusal of it says to run instead.
NOT_IN_FILES = {"tune": "knobtop tune SEARCH.toml (a search file: the knobs, their ranges, "
                        "an objective and a budget)"}


def start_plan(recipe: Recipe, kind: RecipeKind, steps: int, warnings: Sequence[str],
               extra: Mapping[str, Any]) -> dict[str, Any]:
    """The recipe start event's plan: everything the run will do, as journaled (every
    kind's keys, then the recipe's kind's own)."""
    return {
        "path": str(recipe.path), "description": recipe.description.strip(),
        "arms": {a.name: dict(a.knobs) for a in recipe.arms},
        "arm_load": {a.name: {k: dict(v) if k.endswith("options") else v
                              for k, v in a.load.items()}
                     for a in recipe.arms if a.load},
        "threads": list(recipe.threads), "replicates": recipe.replicates,
        "duration": recipe.load.duration, "warmup": recipe.warmup, "order": recipe.order,
        "level_order": recipe.level_order, "plateau": recipe.waits.plateau,
        "calibrate": recipe.calibrate, "until_ci": recipe.until_ci,
        "max_replicates": recipe.max_replicates,
        "workload": recipe.load.workload, "instances": recipe.load.instances,
        **({"arm_target": {a.name: a.target for a in recipe.arms if a.target}}
           if recipe.targets else {}),
        **kind.plan(recipe),
        "steps": steps,
        "warnings": list(warnings),
        **({"allow_reach": list(recipe.allow_reach)} if recipe.allow_reach else {}),
        **extra,
    }


__all__ = ["KINDS", "NOT_IN_FILES", "FileKind", "KindReader", "LoadShape", "RecipeKind",
           "Sequencer", "start_plan"]
