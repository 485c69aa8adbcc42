"""Recipe journals merged into one verdict table (issue 19 part 3): the same recipe run on
different servers, or at different times, as the seeds put one row per server and each
relative to a base ("relative QPS").

Each journal's last recipe run gives one row per arm (``LABEL`` with one arm, ``LABEL:
ARM`` with several); the rows are judged against the baseline journal's first arm by the
same statistics as one run's arms (analysis.results.build: average TPS, bootstrap CI of
the ratio, rank test, Holm across the table). Journals whose recipes differ in what was
measured are refused, naming the field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from knobtop.analysis.journaldata import JournalData, phase_table
from knobtop.analysis.results import Results, build, collect
from knobtop.errors import BadValue
from knobtop.journal.events import Event, RecipeRun, StepResult
from knobtop.printable import printable

# What must be the same in every merged run's plan (the recipe's "start" event).
SAME = ("workload", "threads", "duration", "warmup", "instances", "kind")
ROUNDS = 10_000  # replicate numbers per journal, apart


def label_of(path: Path) -> str:
    """A journal's row label: its file name without ``.knobtop.jsonl``, printable."""
    name = printable(path.name, newlines=False)
    for suffix in (".knobtop.jsonl", ".jsonl"):
        if name.endswith(suffix):
            return name[: -len(suffix)]
    return name


def _plan(events: Sequence[Event]) -> dict[str, object]:
    starts = [e for e in events if isinstance(e, RecipeRun) and e.action == "start"]
    return dict(starts[-1].plan) if starts else {}


def merge_runs(journals: Sequence[tuple[str, Sequence[Event]]],
               baseline: int = 0) -> Results:
    """One table from the last recipe run of each journal (``(label, recipe events)``),
    rows judged against the first arm of journal ``baseline``."""
    if len(journals) < 2:
        raise BadValue("merging needs two or more recipe journals")
    runs: list[tuple[str, Results, dict[str, object]]] = []
    for label, events in journals:
        found = collect(events)
        if not found or not found[-1].steps:
            raise BadValue(f"{label}: no measured recipe step to merge (knobtop run records "
                           "them)")
        runs.append((label, found[-1], _plan(events)))
    order = [runs[baseline], *(r for i, r in enumerate(runs) if i != baseline)]
    base_label, base, base_plan = order[0]
    for label, results, plan in order[1:]:
        if results.recipe != base.recipe:
            raise BadValue(f"{label} ran recipe {results.recipe!r}, {base_label} ran "
                           f"{base.recipe!r}: merge runs of one recipe")
        for key in SAME:
            if plan.get(key) != base_plan.get(key):
                raise BadValue(f"{label} and {base_label} differ in {key}: "
                               f"{plan.get(key)!r} vs {base_plan.get(key)!r}; merged rows "
                               "must measure the same thing")
    rows: list[str] = []
    steps = []
    for n, (label, results, _) in enumerate(order):
        for arm in results.arms:
            row = label if len(results.arms) == 1 else f"{label}: {arm}"
            if row in rows:
                raise BadValue(f"two journals are both labelled {label!r}: rename one file")
            rows.append(row)
            # Rounds of different journals are not pairs (another server, another day):
            # their replicate numbers are kept apart, so only a journal's own arms pair.
            steps += [dataclasses.replace(s, arm=row, replicate=(n + 1) * ROUNDS + s.replicate)
                      for s in results.steps if s.arm == arm and not s.calibration]
    merged = build(base.recipe, rows, list(base.threads), steps, "end",
                   replicates=max(r.replicates for _, r, _ in order))
    return merged


PHASES = "load phases"  # the "recipe" of a table of plain journals' phases


def phase_runs(label: str, data: JournalData, number: int) -> list[StepResult]:
    """A plain journal's load phases as runs of one arm (``label``): each phase one run,
    its number the driver's median TPS (the server's where the driver reported none);
    replicate numbers apart from other journals' (``number``), so no two journals pair."""
    runs = []
    for i, phase in enumerate(phase_table(data)):
        tps = phase.load_tps if phase.load_tps is not None else phase.server_tps
        if tps is None:
            continue
        runs.append(StepResult(
            t=phase.end, wall=0.0, recipe=PHASES, index=i, arm=label,
            replicate=(number + 1) * ROUNDS + i, threads=phase.threads, start=phase.start,
            end=phase.end, tps=tps, p95=phase.p95, hit_ratio=phase.hit_ratio,
            dirty_pct=phase.dirty_pct, intervals=phase.load_intervals,
            calibration=False))
    return runs


def merge_phases(journals: Sequence[tuple[str, JournalData]], baseline: int = 0
                 ) -> dict[str, Results]:
    """Plain journals' load phases as verdict tables, one per workload (issue 19 part 4):
    a row per journal, a column per thread count, each cell the median over the journal's
    phases of that workload and threads, judged against the baseline journal's (bootstrap
    CI and rank test once both have two or more phases; Holm across the table)."""
    if len(journals) < 2:
        raise BadValue("comparing needs two or more journals")
    labels = [label for label, _ in journals]
    for label in labels:
        if labels.count(label) > 1:
            raise BadValue(f"two journals are both labelled {label!r}: rename one file")
    order = [journals[baseline], *(j for i, j in enumerate(journals) if i != baseline)]
    by_workload: dict[str, list[StepResult]] = {}
    for n, (label, data) in enumerate(order):
        spans = phase_table(data)
        for run in phase_runs(label, data, n):
            by_workload.setdefault(spans[run.index].workload, []).append(run)
    tables = {}
    for workload, runs in by_workload.items():
        threads = sorted({r.threads for r in runs})
        tables[workload] = build(PHASES, [label for label, _ in order], threads, runs, "end")
    return tables


__all__ = ["PHASES", "SAME", "label_of", "merge_phases", "merge_runs", "phase_runs"]
