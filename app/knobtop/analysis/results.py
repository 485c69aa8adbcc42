"""Recipe results as the seeds show them: arms x thread counts, average TPS (the seeds'
figure: transactions over the window) with the median and stall share beside it, spread,
the latency percentile, and verdicts per cell against the baseline arm on average TPS and
on latency (one replicate = one sample), Holm-corrected within each table; under them the
effect the design can detect at 80% power, and whether each cell was measured on its
plateau.

Built from the journal's ``recipe`` and ``step`` events, so the runner, ``knobtop report``
and the TUI all show the same table.
"""
# Over 500 lines: one table's cells, its verdicts and notes, and its three renderings (Rich,
# Markdown, CSV) share the cell texts; the statistics themselves live in stats.py, power.py
# and plateau.py.

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any

from rich.table import Table
from rich.text import Text

from knobtop.analysis.noiseci import CALIBRATION_SPAN, calibration_runs_needed, cv_interval
from knobtop.analysis.power import Detectable, detectable, detectable_interval
from knobtop.analysis.stats import (
    HIGHER,
    LOWER,
    NOISE,
    PAIRED_TEST,
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

NONE = "\u2013"  # an en dash: no value
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


@lru_cache(maxsize=64)
def _detectable(runs: tuple[float, ...], replicates: int, comparisons: int) -> Detectable | None:
    return detectable(runs, replicates, comparisons=comparisons)


def detectable_by_level(results: Results) -> dict[int, Detectable]:
    """Per thread count, the effect the planned replicates find at 80% power (Holm over the
    table's comparisons), from the calibration runs if there were any, else from the
    baseline cell's own runs.  Levels with fewer than 3 runs to read noise from are left
    out.  Cached: the simulation costs about 0.3 s per level."""
    family = results.family
    out: dict[int, Detectable] = {}
    for n in results.threads:
        cell = results.cells.get((results.baseline, n))
        runs = results.calibration.get(n) or (cell.runs if cell is not None else ())
        planned = results.replicates or max(
            (len(c.runs) for c in results.cells.values() if c.threads == n), default=0)
        if len(runs) < 3 or planned < 2:
            continue
        found = _detectable(tuple(runs), planned, family)
        if found is not None:
            out[n] = found
    return out


# How the power figures read: the smallest true change a test catches 8 times in 10, and
# what is said when even +100% is not caught that often (the simulation's ceiling).
CAUGHT = "caught 8 times in 10, 80% power"
TOO_NOISY = "+100%"


def detectable_note(results: Results) -> str:
    """The sentence under a table: the smallest effect its design finds at 80% power."""
    found = detectable_by_level(results)
    if not found:
        return ""
    source = ("the calibration runs (the baseline against itself)" if results.calibration
              else f"the spread of the baseline's own runs ({results.baseline})")
    first = next(iter(found.values()))
    design = (f"{first.replicates} {'paired rounds' if first.paired else 'runs per arm'}"
              + (f", Holm over {first.comparisons} comparisons" if first.comparisons > 1
                 else ""))
    parts = [f"{n} threads: " + (f"more than {TOO_NOISY}" if d.effect is None else
                                 f"+{d.effect:.0%} (CV {d.cv:.1%})" if d.cv is not None else
                                 f"+{d.effect:.0%}") for n, d in found.items()]
    return (f"Smallest change this design can detect ({CAUGHT}) with {design}, from "
            f"{source}: " + "; ".join(parts)
            + ". A smaller true change will often read \"~ noise\".")


def calibration_note(results: Results, more: tuple[int, ...] = (5, 8, 12, 20, 30)) -> str:
    """What the calibration runs say before the arms start: :func:`detectable_note` for the
    planned replicates, then what more replicates would find at the noisiest level (up to
    the first that finds +10%)."""
    note = detectable_note(results)
    if not results.calibration:
        return note
    noisiest = max(results.calibration, key=lambda n: cv(results.calibration[n]) or 0.0
                   if len(results.calibration[n]) > 1 else 0.0)
    runs = results.calibration[noisiest]
    note += _calibration_interval(results, noisiest, runs)
    planned = results.replicates
    ladder = []
    for n in more:
        if n > planned:
            found = _detectable(tuple(runs), n, results.family)
            if found is not None:
                ladder.append(f"{n} runs per arm: " + (f"more than {TOO_NOISY}"
                                                       if found.effect is None
                                                       else f"+{found.effect:.0%}"))
                if found.effect is not None and found.effect <= 0.10:
                    break
    if ladder:
        note += f" More replicates ({noisiest} threads): " + "; ".join(ladder) + "."
    return note


def _calibration_interval(results: Results, level: int, runs: tuple[float, ...]) -> str:
    """How well the calibration runs know the noise: the CV's 95% interval (chi-square) at
    the noisiest level, the detectable effect at its two ends, and, when the upper end is
    more than CALIBRATION_SPAN x the CV read, the calibration runs that would narrow it."""
    found = detectable_by_level(results).get(level)
    spread = cv(runs) if len(runs) > 1 else None
    if found is None or not spread:
        return ""
    ends = _detectable_ends(runs, found.replicates, found.comparisons)
    if ends is None:
        return ""
    lo, hi = cv_interval(spread, len(runs))
    # no "+" in this sentence: the ladder after it is read by the last "+" in the line
    effects = " and ".join("over 100%" if e is None else f"{e:.0%}" for e in ends)
    text = (f" {len(runs)} calibration runs know the noise only roughly ({level} threads: CV "
            f"{lo:.1%}-{hi:.1%} at 95%, chi-square), so the change this design can detect "
            f"there is between {effects} up.")
    if hi > CALIBRATION_SPAN * spread:
        needed = calibration_runs_needed()
        text += (f" That is wide (the CV's upper end is more than {CALIBRATION_SPAN:g}x the "
                 f"CV read): calibrate with {needed} runs or more (--calibrate {needed}) "
                 "to know it within that.")
    return text


@lru_cache(maxsize=64)
def _detectable_ends(runs: tuple[float, ...], replicates: int,
                     comparisons: int) -> tuple[float | None, float | None] | None:
    return detectable_interval(runs, replicates, comparisons=comparisons)


def _detectable_short(results: Results) -> str:
    found = [d.effect for d in detectable_by_level(results).values()]
    if not found:
        return ""
    if any(e is None for e in found):
        return (f"smallest change this design can detect: more than {TOO_NOISY} at some "
                "thread counts (too noisy for these replicates)")
    effects = sorted(e for e in found if e is not None)
    span = (f"+{effects[0]:.0%}" if round(effects[0], 2) == round(effects[-1], 2)
            else f"+{effects[0]:.0%}..+{effects[-1]:.0%}")
    return f"smallest change this design can detect: {span} ({CAUGHT})"


def tests_note(results: Results) -> str:
    """Which test each verdict used, in words."""
    used = _tests_used(results)
    words = []
    if PAIRED_TEST in used:
        words.append(f"cells with {results.paired_rounds} or more complete rounds are compared "
                     "round by round: the median of the per-round ratios B/A, its bootstrap "
                     "CI, and the Wilcoxon signed-rank test on them")
    if used - {PAIRED_TEST}:
        words.append("cells with fewer rounds (or runs without a partner in their round) "
                     "compare the runs as two samples: the ratio of medians, its bootstrap "
                     "CI, and the Mann-Whitney test" if PAIRED_TEST in used else
                     "the runs are compared as two samples: the ratio of medians, its "
                     "bootstrap CI, and the Mann-Whitney test")
    if not words:
        return ""
    text = "; ".join(words) + "."
    return text[0].upper() + text[1:]


def holm_note(results: Results, which: str = "verdict") -> str:
    """The sentence under a table whose verdicts were corrected ("" when there was one)."""
    m = len(comparisons(results, which))
    if m < 2:
        return ""
    return (f"Holm correction across the {m} comparisons of this table: p is each cell's "
            "own, (Holm ...) the adjusted one; a cell reads higher or lower only when the "
            "adjusted p is at most 0.05.")


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


# --------------------------------------------------------------------------- formatting


def fmt_tps(value: float | None) -> str:
    return NONE if value is None else f"{value:,.0f}"


def spread_text(cell: Cell) -> str:
    if cell.cv is None or cell.iqr is None:
        return f"{len(cell.runs)} run"
    return f"IQR {cell.iqr:,.0f} (CV {cell.cv:.0%}), {len(cell.runs)} runs"


def median_text(cell: Cell) -> str:
    """``median 1,250, stall 2%``: beside the average, what a stall did to it."""
    text = f"median {fmt_tps(cell.per_second)}"
    return text if cell.stall is None else f"{text}, stall {cell.stall:.0%}"


def plateau_text(results: Results, cell: Cell, flags_only: bool = False) -> str:
    """``steady`` / ``not steady 1/3, off plateau 1/3`` / ``on plateau``: "not steady" when a
    plateau wait timed out (only if the recipe waited for one), "off plateau" when a
    measured window still drifted.  ``flags_only``: "" when nothing is wrong."""
    n = len(cell.runs)
    words = []
    if results.plateau and cell.steady < n:
        words.append(f"not steady {n - cell.steady}/{n}")
    if cell.drifting:
        words.append(f"off plateau {cell.drifting}/{n}")
    if words or flags_only:
        return ", ".join(words)
    return "steady" if results.plateau else "on plateau"


def _num(value: float | None, digits: int = 1) -> str:
    if value is None:
        return NONE
    return f"{value:,.{digits}f}" if value < 100 else f"{value:,.0f}"


# (label, STEP_COSTS key, digits, unit) of the cost lines a cell shows
_PER_TXN = (("CPU", "cpu_us_txn", 0, " us"), ("r", "reads_txn", 3, ""),
            ("rKB", "rkb_txn", 2, ""), ("wKB", "wkb_txn", 2, ""))
_RATES = (("r/s", "r_s", 1, ""), ("rMB/s", "rmb_s", 2, ""), ("wMB/s", "wmb_s", 2, ""))
_SERVER = (("mysqld CPU", "mysqld_us_txn", 0, " us"), ("RSS", "rss_mb", 0, " MB"),
           ("db", "db_mb", 0, " MB"), ("datadir", "datadir_mb", 0, " MB"))


def _cost_line(cell: Cell, parts: tuple[tuple[str, str, int, str], ...]) -> str:
    if not cell.cost:
        return NONE
    return ", ".join(f"{label} {_num(cell.cost.get(key), digits)}{unit}"
                     for label, key, digits, unit in parts)


def cost_text(cell: Cell) -> str:
    """``CPU 123 us, r 0.020, rKB 0.30, wKB 1.20`` per transaction."""
    return _cost_line(cell, _PER_TXN)


def rate_text(cell: Cell) -> str:
    """``r/s 10.0, rMB/s 0.16, wMB/s 2.50``."""
    return _cost_line(cell, _RATES)


def server_text(cell: Cell) -> str:
    """``mysqld CPU 95 us, RSS 310 MB, db 24 MB, datadir 180 MB``."""
    return _cost_line(cell, _SERVER)


def disk_words(results: Results) -> str:
    """Where the disk columns come from: the datadir's device, or every whole disk."""
    disks = sorted({s.disk for s in results.steps if s.disk})
    if disks:
        return f"the datadir's device ({', '.join(disks)})"
    return "the server host's disks"


def verdict_text(cell: Cell) -> str:
    return "baseline" if cell.verdict is None else cell.verdict.text()


def lat_verdict_text(cell: Cell) -> str:
    if cell.lat_verdict is None:
        return "baseline" if cell.verdict is None else NONE
    return cell.lat_verdict.text()


def summary_line(results: Results) -> str:
    done = len(results.steps)
    planned = f"/{results.planned_steps}" if results.planned_steps else ""
    state = {"end": "finished", "running": "in progress"}.get(results.outcome, results.outcome)
    extra = f": {results.message}" if results.message and results.outcome != "end" else ""
    return f"recipe {results.recipe}: {done}{planned} steps, {state}{extra}"


_STYLE = {HIGHER: "bold green", LOWER: "bold red", NOISE: "dim"}


def fmt_ms(ms: float) -> str:
    """A latency with the digits that matter: 0.02, 1.4, 35."""
    if ms < 1:
        return f"{ms:.2f}"
    return f"{ms:.1f}" if ms < 100 else f"{ms:.0f}"


def results_table(results: Results) -> Table:
    """Rows are arms, columns thread counts; each cell: median TPS, spread, p95, verdict."""
    table = Table(title=Text(summary_line(results)), title_justify="left", show_lines=True)
    table.add_column("arm", style="bold")
    for threads in results.threads:
        table.add_column(f"{threads} threads", justify="right")
    for arm in results.arms:
        row: list[Text | str] = [Text(arm)]  # a recipe's name for it, never markup
        for threads in results.threads:
            cell = results.cells.get((arm, threads))
            if cell is None:
                row.append(NONE)
                continue
            text = Text(f"{fmt_tps(cell.median)} tps avg\n", style="bold")
            if cell.stall is not None:
                text.append(f"{median_text(cell)}\n", style="")
            text.append(f"{spread_text(cell)}\n", style="")
            p95 = NONE if cell.p95 is None else fmt_ms(cell.p95)
            text.append(f"p{cell.pct} {p95} ms", style="")
            if cell.hit_ratio is not None:
                text.append(f", hit {cell.hit_ratio:.1f}%", style="")
            flags = plateau_text(results, cell, flags_only=True)
            if flags:
                text.append(f"\n{flags}", style="bold yellow")
            label = cell.verdict.label if cell.verdict is not None else ""
            text.append(f"\n{verdict_text(cell)}", style=_STYLE.get(label, "italic"))
            if cell.lat_verdict is not None:
                lat = cell.lat_verdict
                # lower latency is the good direction: its colours swap
                style = {HIGHER: "bold red", LOWER: "bold green"}.get(lat.label, "dim")
                text.append(f"\np{cell.pct} {lat.text()}", style=style)
            row.append(text)
        table.add_row(*row)
    note = " ".join([short_note(results), *(n for n in results.condition_notes
                                            if n.startswith("Not met"))]).strip()
    if note:
        table.caption = Text(note)
        table.caption_justify = "left"
    return table


def short_note(results: Results) -> str:
    """One line under a table on screen: the test(s) behind p, and Holm's family size (the
    report's markdown says both in full)."""
    used = _tests_used(results)
    if not used:
        return ""
    tests = ("p: Wilcoxon, paired by round" if used == {PAIRED_TEST} else
             "p: Mann-Whitney" if PAIRED_TEST not in used else
             f"p: Wilcoxon paired by round ({results.paired_rounds}+ rounds), else "
             "Mann-Whitney")
    family = len(comparisons(results))
    holm_words = f"; Holm-adjusted over {family} comparisons" if family > 1 else ""
    power = _detectable_short(results)
    return tests + holm_words + (f"; {power}" if power else "")


def _md_row(cells: Iterable[object]) -> str:
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def results_markdown(results: Results) -> str:
    heads = ["arm", *(f"{t} threads" for t in results.threads)]
    lines = [f"### {summary_line(results)}", ""]

    def table(title: str, value: Callable[[Cell], str]) -> None:
        lines.extend([f"**{title}**", "", _md_row(heads), _md_row(["---"] * len(heads))])
        for arm in results.arms:
            row: list[object] = [arm]
            for threads in results.threads:
                cell = results.cells.get((arm, threads))
                row.append(NONE if cell is None else value(cell))
            lines.append(_md_row(row))
        lines.append("")

    cells = list(results.cells.values())
    pct = cells[0].pct if cells else 95
    table("Average TPS (spread over replicates)",
          lambda c: f"{fmt_tps(c.median)} ({spread_text(c)})")
    if any(c.stall is not None for c in cells):
        table("Median of per-second TPS, and the share of seconds below half of it (stall)",
              median_text)
    table(f"p{pct} latency, ms (each run's median of its per-second p{pct}; median over "
          "replicates)",
          lambda c: NONE if c.p95 is None else fmt_ms(c.p95))
    if any(c.window_pct is not None for c in cells):
        table(f"p{pct} latency over each whole measured window (the driver's own summary of "
              "the timed run), ms (median over replicates)",
              lambda c: NONE if c.window_pct is None else fmt_ms(c.window_pct))
    if any(c.hit_ratio is not None for c in cells):
        table("Buffer pool hit ratio, %",
              lambda c: NONE if c.hit_ratio is None else f"{c.hit_ratio:.2f}")
    if any(c.ndb_hit for c in cells):
        table("NDB disk page buffer hit ratio per data node, % (median over replicates)",
              lambda c: ", ".join(f"node {n} {v:.2f}" for n, v in sorted(c.ndb_hit.items()))
              or NONE)
    if any(c.history_end is not None for c in cells):
        table("History list length at the end of each step (median over replicates)",
              lambda c: NONE if c.history_end is None else f"{c.history_end:,.0f}")
    if any(c.cost for c in cells):
        where = disk_words(results)
        table(f"Per transaction: server host CPU microseconds; reads, KB read, KB written on "
              f"{where} (median over replicates)", cost_text)
        table(f"Disk rates on {where}: reads/s, read MB/s, write MB/s", rate_text)
    if any(c.cost.get(k) is not None for c in cells for k in FOOTPRINT):
        table("mysqld alone: CPU microseconds per transaction, RSS; database and datadir "
              "size at the end of the step", server_text)
    if results.plateau or any(c.drifting for c in cells):
        table("Plateau (steady: reached before measuring; off plateau: the measured window "
              "still drifted beyond its noise)", lambda c: plateau_text(results, c))
    table(f"Average TPS vs {results.baseline}: ratio [bootstrap 95% CI] and p", verdict_text)
    tests = tests_note(results)
    if tests:
        lines.extend([tests, ""])
    note = holm_note(results)
    if note:
        lines.extend([note, ""])
    if comparisons(results, "lat_verdict"):
        table(f"p{pct} latency vs {results.baseline}: ratio [bootstrap 95% CI] and p "
              "(lower is better)", lat_verdict_text)
        note = holm_note(results, "lat_verdict")
        if note:
            lines.extend([note, ""])
    lines.append("One replicate is one sample (its average TPS over the measured window, "
                 "warmup excluded: transactions / seconds, so a stalled second counts; its "
                 f"median p{pct} for latency). \"~ noise\" means the difference cannot be "
                 "told from run-to-run variation: the CI spans 1 or the rank test disagrees.")
    power = detectable_note(results)
    if power:
        lines.extend(["", power])
    for note in results.condition_notes:
        lines.extend(["", note])
    lines.append("")
    return "\n".join(lines)


CSV_FIELDS = ("recipe", "index", "replicate", "arm", "threads", "start", "end", "tps", "p95",
              "err", "hit_ratio", "dirty_pct", "intervals", "steady", "waits", "avg_tps",
              "stall", "pct", "drift", "flat", "calibration", "history_start", "history_end",
              *STEP_COSTS, "disk")


def results_csv(results: Results) -> str:
    """One row per measured step (for spreadsheets)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(CSV_FIELDS)
    for s in results.steps:
        waits = ";".join(f"{k}={v:g}" for k, v in s.waits.items())
        writer.writerow([s.recipe, s.index + 1, s.replicate, s.arm, s.threads,
                         f"{s.start:.2f}", f"{s.end:.2f}",
                         *("" if v is None else f"{v:.2f}"
                           for v in (s.tps, s.p95, s.err, s.hit_ratio, s.dirty_pct)),
                         s.intervals, int(s.steady), waits,
                         "" if s.avg_tps is None else f"{s.avg_tps:.2f}",
                         "" if s.stall is None else f"{s.stall:.4f}", s.pct,
                         "" if s.drift is None else f"{s.drift:.4f}",
                         "" if s.flat is None else int(s.flat), int(s.calibration),
                         *("" if v is None else f"{v:g}" for v in (
                             s.history_start, s.history_end,
                             *(getattr(s, k) for k in STEP_COSTS))), s.disk])
    return buf.getvalue()
