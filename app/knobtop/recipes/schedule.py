"""The order of a recipe's steps: which arm runs when in each replicate round.

For each replicate round, for each arm (counterbalanced by default: A B, B A, B A, A B for
two arms, a Williams square for more; or in recipe order, or shuffled per round with
``random.Random(seed)``), for each thread count (as written, or reversed every other round,
or shuffled; ``Recipe.schedule``). Arms are the outer loop inside a round so that a static
knob costs one restart per arm visit, not one per thread count.
"""

from __future__ import annotations

import random

ORDERS: tuple[str, ...] = ("counterbalanced", "abba", "williams", "interleaved", "random")
LEVEL_ORDERS: tuple[str, ...] = ("ascending", "counterbalanced", "random")


def williams_rows(n: int) -> list[list[int]]:
    """A Williams design for ``n`` arms: rows of a Latin square in which every arm comes
    first, and directly after every other arm, equally often (2n rows when n is odd, n when
    even), so neither position nor the arm before (carry-over) favours one arm."""
    first = [0]
    lo, hi = 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    rows = [[(x + i) % n for x in first] for i in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return rows


def arm_order(order: str, n: int, round_index: int, rng: random.Random) -> list[int]:
    """The arms' order in round ``round_index`` (0-based) as indices into the recipe's arms.

    "interleaved": recipe order every round (A B, A B: a linear drift favours B).
    "abba": recipe order, then reversed, then reversed again, then recipe order (A B, B A,
    B A, A B, ...): each arm's mean position over four rounds is the same, so a linear
    drift cancels.  "williams": the rows of :func:`williams_rows` in turn.
    "counterbalanced" (the default): "abba" for two arms, "williams" for more.
    "random": a shuffle per round from ``rng`` (the recipe's seed)."""
    arms = list(range(n))
    if order == "counterbalanced":
        order = "abba" if n <= 2 else "williams"
    if order == "abba":
        return arms if round_index % 4 in (0, 3) else arms[::-1]
    if order == "williams":
        rows = williams_rows(n)
        return rows[round_index % len(rows)]
    if order == "random":
        rng.shuffle(arms)
    return arms
