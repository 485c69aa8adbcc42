"""Recipe results as cells and verdicts: arms x thread counts, each cell its replicates'
average TPS (the seeds' figure: transactions over the window) with the median, stall share,
spread and latency percentile beside it, and verdicts against the baseline arm on average
TPS and on latency (one replicate = one sample), Holm-corrected within each table.

Built from the journal's ``recipe`` and ``step`` events (``collect``), so the runner,
``knobtop report`` and the TUI all show the same table; analysis.results renders it and
analysis.resultnotes says what is under it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from knobtop.analysis.stats import (
    Verdict,
    compare_paired,
    compare_runs,
    cv,
    holm,
    iqr,
    median,
    paired_min_rounds,
)
from knobtop.conditions import plan_notes
from knobtop.journal.events import Checkpoint, Event, RecipeRun, StepResult
from knobtop.metrics.derive import EFFICIENCY
from knobtop.metrics.footprint import FOOTPRINT

# What a step costs: the host-wide columns, then the server's own (mysqld, sizes)
STEP_COSTS = (*EFFICIENCY, *FOOTPRINT)


@dataclass(frozen=True, slots=True)
class Cell:
    """One arm at one thread count, over its replicates."""

    arm: str
    threads: int
    runs: tuple[float, ...]  # per replicate: its average TPS (older journals: median TPS)
    median: float | None  # the median of runs
    iqr: float | None
    cv: float | None
    p95: float | None  # median over replicates of each one's median latency percentile (ms)
    hit_ratio: float | None
    verdict: Verdict | None  # against the baseline arm at the same threads; None for it
    per_second: float | None = None  # median over replicates of the per-second median TPS
    stall: float | None = None  # median over replicates of the stalled seconds' share
    pct: int = 95  # the latency percentile p95 holds
    lat_verdict: Verdict | None = None  # the latency percentile against the baseline's
    steady: int = 0  # replicates that reached their plateau before measuring
    drifting: int = 0  # replicates whose measured window still drifted (off the plateau)
    history_end: float | None = None  # median over replicates: the purge backlog at the end
    cost: dict[str, float] = field(default_factory=dict)  # medians of EFFICIENCY per run
    ndb_hit: dict[str, float] = field(default_factory=dict)  # per NDB data node, median
    window_pct: float | None = None  # [run] timed: the percentile over each whole window


@dataclass
class Results:
    recipe: str
    arms: list[str]  # baseline first
    threads: list[int]
    steps: list[StepResult]
    outcome: str = "running"  # "end" | "aborted" | "failed" | "running"
    message: str = ""
    planned_steps: int = 0
    cells: dict[tuple[str, int], Cell] = field(default_factory=dict)
    replicates: int = 0  # planned runs per arm (0: unknown, the runs seen count)
    plateau: bool = False  # the recipe waited for a plateau before measuring
    calibration: dict[int, tuple[float, ...]] = field(default_factory=dict)  # threads -> runs
    # A timeline recipe ([run] kind = "timeline"): its checkpoints and planned actions
    kind: str = "arms"
    one_load: bool = False  # one load read at checkpoints (a timeline, a soak): no steps
    checkpoints: list[Checkpoint] = field(default_factory=list)
    actions: list[dict[str, Any]] = field(default_factory=list)
    # What the conditions probe found at the start and what of the recipe's [conditions]
    # did not hold (conditions.plan_notes): every table of the run says them
    condition_notes: list[str] = field(default_factory=list)

    @property
    def baseline(self) -> str:
        return self.arms[0] if self.arms else ""

    @property
    def family(self) -> int:
        """The comparisons the design makes: each arm but the baseline at each thread
        count (what Holm corrects over once every cell has run)."""
        return max(1, (len(self.arms) - 1) * len(self.threads))

    @property
    def paired_rounds(self) -> int:
        """The fewest complete rounds whose cells are compared round by round."""
        return paired_min_rounds(self.family)


def _med(values: Iterable[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return median(got) if got else None


def run_value(step: StepResult) -> float | None:
    """One run's number for the verdict: its average TPS (its median in older journals)."""
    return step.avg_tps if step.avg_tps is not None else step.tps


def build(recipe: str, arms: list[str], threads: list[int], steps: list[StepResult],
          outcome: str = "running", message: str = "", planned_steps: int = 0,
          replicates: int = 0, plateau: bool = False) -> Results:
    """Fold step results into cells; verdicts compare each arm with the first.  Calibration
    steps (the baseline against itself) only feed ``calibration``."""
    out = Results(recipe, list(arms), list(threads), list(steps), outcome, message,
                  planned_steps, replicates=replicates, plateau=plateau)
    cal: dict[int, list[float]] = {}
    for step in steps:
        value = run_value(step)
        if step.calibration and value is not None:
            cal.setdefault(step.threads, []).append(value)
    out.calibration = {k: tuple(v) for k, v in cal.items()}
    steps = [s for s in steps if not s.calibration]
    for step in steps:  # arms or thread counts the plan did not list (a newer recipe)
        if step.arm not in out.arms:
            out.arms.append(step.arm)
        if step.threads not in out.threads:
            out.threads.append(step.threads)
    pair_from = out.paired_rounds
    runs: dict[tuple[str, int], list[StepResult]] = {}
    for step in steps:
        runs.setdefault((step.arm, step.threads), []).append(step)
    for n in out.threads:
        base_steps = runs.get((out.baseline, n), [])
        for arm in out.arms:
            mine = runs.get((arm, n), [])
            tps = [v for v in map(run_value, mine) if v is not None]
            if not mine:
                continue
            base = arm == out.baseline
            out.cells[(arm, n)] = Cell(
                arm=arm, threads=n, runs=tuple(tps),
                median=median(tps) if tps else None,
                iqr=iqr(tps) if tps else None, cv=cv(tps) if len(tps) > 1 else None,
                p95=_med(s.p95 for s in mine), hit_ratio=_med(s.hit_ratio for s in mine),
                verdict=None if base else _verdict(base_steps, mine, run_value, pair_from),
                per_second=_med(s.tps for s in mine), stall=_med(s.stall for s in mine),
                pct=mine[0].pct,
                lat_verdict=None if base else _verdict(base_steps, mine, _latency, pair_from),
                steady=sum(1 for s in mine if s.steady),
                drifting=sum(1 for s in mine if s.flat is False),
                history_end=_med(s.history_end for s in mine),
                cost={k: v for k in STEP_COSTS
                      if (v := _med(getattr(s, k) for s in mine)) is not None},
                ndb_hit={n: v for n in sorted({n for s in mine for n in s.ndb_hit})
                         if (v := _med(s.ndb_hit.get(n) for s in mine)) is not None},
                window_pct=_med(s.window_pct_ms for s in mine),
            )
    _holm(out, "verdict")
    _holm(out, "lat_verdict")
    return out


def _latency(step: StepResult) -> float | None:
    return step.p95


Value = Callable[[StepResult], float | None]


def _rounds(steps: list[StepResult], value: Value) -> dict[int, float] | None:
    """An arm's runs by round, if each round has exactly one that measured."""
    by_round: dict[int, float] = {}
    for step in steps:
        v = value(step)
        if v is None or step.replicate in by_round:
            return None
        by_round[step.replicate] = v
    return by_round


def _verdict(base: list[StepResult], mine: list[StepResult], value: Value,
             pair_from: int) -> Verdict | None:
    """Paired by round when both arms ran once in each of the same ``pair_from`` or more
    rounds (the per-round ratio and the signed-rank test; see ``paired_min_rounds``);
    otherwise the runs as two samples (ratio of medians, Mann-Whitney).  None when no run
    has the value."""
    a, b = _rounds(base, value), _rounds(mine, value)
    if a is not None and b is not None and a.keys() == b.keys() and len(a) >= pair_from:
        rounds = sorted(a)
        return compare_paired([a[r] for r in rounds], [b[r] for r in rounds])
    xa = [v for v in map(value, base) if v is not None]
    xb = [v for v in map(value, mine) if v is not None]
    if not xa and not xb:
        return None
    return compare_runs(xa, xb)


def comparisons(results: Results, which: str = "verdict") -> list[Cell]:
    """The cells with a rank test against the baseline (on average TPS, or with
    ``which="lat_verdict"`` on latency): the family Holm corrects over."""
    found = []
    for c in results.cells.values():
        v: Verdict | None = getattr(c, which)
        if v is not None and v.p is not None:
            found.append(c)
    return found


def _holm(results: Results, which: str) -> None:
    """More than one comparison in a table: each verdict is judged on its Holm-adjusted p,
    so a 3-arm x 4-level table does not make 8 chances of a false "higher" at 5% each.
    Each verdict table (average TPS, latency) is its own family, on purpose: each answers
    its own question (tune recommends on one), and at fixed client threads latency mostly
    restates TPS (Little's law), so one family would halve alpha for a second look at much
    the same data. With independent noise the two tables together give a false verdict
    somewhere in at most 1 - 0.95^2 of A/A runs (docs/reference/recipes.md; a test
    simulates it)."""
    family = comparisons(results, which)
    if len(family) < 2:
        return
    verdicts: list[Verdict] = [getattr(c, which) for c in family]
    for cell, verdict, p_holm in zip(family, verdicts, holm([v.p for v in verdicts]),
                                     strict=True):
        key = (cell.arm, cell.threads)
        now = results.cells[key]
        results.cells[key] = (replace(now, verdict=verdict.adjusted(p_holm))
                              if which == "verdict" else
                              replace(now, lat_verdict=verdict.adjusted(p_holm)))


def _tests_used(results: Results) -> set[str]:
    return {c.verdict.test for c in comparisons(results) if c.verdict is not None}


def collect(events: Iterable[Event]) -> list[Results]:
    """Every recipe run in a journal, in order (the last one may still be running); a
    tune's (``analysis.tune.collect_tunes``) is not a table of arms and is left out."""
    found: list[Results] = []
    current: Results | None = None
    steps: list[StepResult] = []

    def close(outcome: str, message: str) -> None:
        nonlocal current, steps
        if current is not None:
            built = build(current.recipe, current.arms, current.threads, steps, outcome,
                          message, current.planned_steps, current.replicates, current.plateau)
            built.kind, built.actions = current.kind, current.actions
            built.one_load = current.one_load
            built.checkpoints = current.checkpoints
            built.condition_notes = current.condition_notes
            found.append(built)
        current, steps = None, []

    for event in events:
        if isinstance(event, RecipeRun):
            if event.action == "start":
                close("running", "")
                plan = event.plan
                if plan.get("kind") == "tune":
                    continue
                current = Results(event.name, list(plan.get("arms", {})),
                                  [int(t) for t in plan.get("threads", [])], [],
                                  planned_steps=int(plan.get("steps", 0)),
                                  replicates=int(plan.get("replicates", 0)),
                                  plateau=bool(plan.get("plateau", False)),
                                  kind=str(plan.get("kind", "arms")),
                                  one_load="checkpoints" in plan,
                                  actions=list(plan.get("actions", [])),
                                  condition_notes=plan_notes(plan))
            elif current is not None and event.name == current.recipe:
                close(event.action, event.message)
        elif isinstance(event, StepResult) and current is not None \
                and event.recipe == current.recipe:
            steps.append(event)
        elif isinstance(event, Checkpoint) and current is not None \
                and event.recipe == current.recipe:
            current.checkpoints.append(event)
    close("running", "")
    return found
