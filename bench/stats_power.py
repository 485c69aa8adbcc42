"""What knobtop's verdicts can and cannot see (issue 17): seeded simulations of results
tables, judged exactly as `knobtop.analysis.results.build` judges them.

Runs per arm are drawn from a normal distribution with 10% run-to-run noise (the lab
machine's order of magnitude; REFERENCE.md section 4). For n = 5 and 8 runs per arm, as
two samples and, where the design pairs rounds, paired:

* the false-verdict rate on A/A data: the share of one-cell tables, and of 8-cell tables
  (Holm across the cells), that read "higher" or "lower" anywhere;
* the power at +10% and +20%: the share of cells reading "higher", for one comparison and
  for each cell of an 8-cell table whose every cell has the effect (Holm).

The issue's figures for the method before it (n = 5, 10% noise): +10% found 25% of the
time, +20% 70%. Prints a Markdown table; ``--json`` prints one JSON line as well.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "app"))

from knobtop.analysis.power import simulate_tables
from knobtop.analysis.stats import paired_min_rounds

NOISE = 0.10


def draw(rng: random.Random) -> float:
    return max(1e-6, rng.gauss(1.0, NOISE))


def measure(sims_one: int, sims_table: int) -> list[dict[str, Any]]:
    rows = []
    for n in (5, 8):
        for paired in (False, True):
            if paired and n < paired_min_rounds(1):
                continue  # 5 pairs: a paired p never reaches 0.05, tables compare unpaired
            seed = 1000 * n + paired
            row: dict[str, Any] = {"n": n, "design": "paired by round" if paired
                                   else "two samples"}
            aa1 = simulate_tables(draw, n, cells=1, paired=paired, sims=sims_one, seed=seed)
            aa8 = simulate_tables(draw, n, cells=8, paired=paired, sims=sims_table,
                                  seed=seed + 1)
            row["false_one"] = aa1.any_verdict
            row["false_table"] = aa8.any_verdict
            row["paired_in_table"] = paired and n >= paired_min_rounds(8)
            for effect in (0.10, 0.20):
                one = simulate_tables(draw, n, effect=effect, cells=1, paired=paired,
                                      sims=sims_one, seed=seed + 2)
                eight = simulate_tables(draw, n, effect=effect, cells=8, paired=paired,
                                        sims=sims_table, seed=seed + 3)
                row[f"power_one_{effect:.2f}"] = one.higher
                row[f"power_table_{effect:.2f}"] = eight.higher
            rows.append(row)
    return rows


def tolerance(sims: int) -> float:
    """5% plus three binomial standard errors: the most an honest 5% test shows by chance."""
    return 0.05 + 3 * math.sqrt(0.05 * 0.95 / sims)


def markdown(rows: list[dict[str, Any]], sims_one: int, sims_table: int) -> list[str]:
    lines = [f"Runs drawn with {NOISE:.0%} run-to-run noise (normal); {sims_one} one-cell and "
             f"{sims_table} 8-cell tables per figure, seeded. False verdicts must stay within "
             f"5% plus 3 binomial standard errors ({tolerance(sims_one):.1%} / "
             f"{tolerance(sims_table):.1%}).", "",
             "| runs per arm | design | A/A false verdicts, 1 cell | A/A false verdicts, "
             "8-cell table (Holm) | power +10%, 1 cell | power +20%, 1 cell | power +10%, "
             "each of 8 (Holm) | power +20%, each of 8 (Holm) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        design = r["design"]
        if r["design"] == "paired by round" and not r["paired_in_table"]:
            design += " (8-cell tables: two samples, paired from 9 rounds)"
        lines.append(f"| {r['n']} | {design} | {r['false_one']:.1%} | {r['false_table']:.1%} "
                     f"| {r['power_one_0.10']:.0%} | {r['power_one_0.20']:.0%} "
                     f"| {r['power_table_0.10']:.0%} | {r['power_table_0.20']:.0%} |")
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=3000, help="one-cell tables per figure")
    ap.add_argument("--tables", type=int, default=600, help="8-cell tables per figure")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    began = time.monotonic()
    rows = measure(args.sims, args.tables)
    took = time.monotonic() - began
    for line in markdown(rows, args.sims, args.tables):
        print(line)
    ok = all(r["false_one"] <= tolerance(args.sims) and r["false_table"] <= tolerance(args.tables)
             for r in rows)
    print(f"\n({took:.0f} s; false-verdict rates {'within' if ok else 'ABOVE'} 5% + tolerance)")
    if args.json:
        print(json.dumps({"rows": rows, "sims": args.sims, "tables": args.tables,
                          "seconds": took, "ok": ok}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
