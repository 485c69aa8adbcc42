"""Recipe results as the seeds show them: arms x thread counts, median TPS, spread, p95,
and a verdict per cell against the baseline arm (one replicate = one sample).

Built from the journal's ``recipe`` and ``step`` events, so the runner, ``knobtop report``
and the TUI all show the same table.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from rich.table import Table
from rich.text import Text

from knobtop.analysis.stats import (
    HIGHER,
    LOWER,
    NOISE,
    PAIRED_MIN_ROUNDS,
    PAIRED_TEST,
    Verdict,
    compare_paired,
    compare_runs,
    cv,
    holm,
    iqr,
    median,
)
from knobtop.journal.events import Event, RecipeRun, StepResult

NONE = "\u2013"  # an en dash: no value


@dataclass(frozen=True, slots=True)
class Cell:
    """One arm at one thread count, over its replicates."""

    arm: str
    threads: int
    runs: tuple[float, ...]  # per replicate: the median TPS of its measured window
    median: float | None
    iqr: float | None
    cv: float | None
    p95: float | None  # median over replicates of each one's median p95 (ms)
    hit_ratio: float | None
    verdict: Verdict | None  # against the baseline arm at the same threads; None for it


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

    @property
    def baseline(self) -> str:
        return self.arms[0] if self.arms else ""


def _med(values: Iterable[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return median(got) if got else None


def build(recipe: str, arms: list[str], threads: list[int], steps: list[StepResult],
          outcome: str = "running", message: str = "", planned_steps: int = 0) -> Results:
    """Fold step results into cells; verdicts compare each arm with the first."""
    out = Results(recipe, list(arms), list(threads), list(steps), outcome, message,
                  planned_steps)
    for step in steps:  # arms or thread counts the plan did not list (a newer recipe)
        if step.arm not in out.arms:
            out.arms.append(step.arm)
        if step.threads not in out.threads:
            out.threads.append(step.threads)
    runs: dict[tuple[str, int], list[StepResult]] = {}
    for step in steps:
        runs.setdefault((step.arm, step.threads), []).append(step)
    for n in out.threads:
        base_steps = runs.get((out.baseline, n), [])
        for arm in out.arms:
            mine = runs.get((arm, n), [])
            tps = [s.tps for s in mine if s.tps is not None]
            if not mine:
                continue
            out.cells[(arm, n)] = Cell(
                arm=arm, threads=n, runs=tuple(tps),
                median=median(tps) if tps else None,
                iqr=iqr(tps) if tps else None, cv=cv(tps) if len(tps) > 1 else None,
                p95=_med(s.p95 for s in mine), hit_ratio=_med(s.hit_ratio for s in mine),
                verdict=None if arm == out.baseline else _verdict(base_steps, mine),
            )
    _holm(out)
    return out


def _rounds(steps: list[StepResult]) -> dict[int, float] | None:
    """An arm's runs by round, if each round has exactly one that measured."""
    by_round: dict[int, float] = {}
    for step in steps:
        if step.tps is None or step.replicate in by_round:
            return None
        by_round[step.replicate] = step.tps
    return by_round


def _verdict(base: list[StepResult], mine: list[StepResult]) -> Verdict:
    """Paired by round when both arms ran once in each of the same PAIRED_MIN_ROUNDS or more
    rounds (the per-round ratio and the signed-rank test); otherwise the runs as two
    samples (ratio of medians, Mann-Whitney)."""
    a, b = _rounds(base), _rounds(mine)
    if a is not None and b is not None and a.keys() == b.keys() \
            and len(a) >= PAIRED_MIN_ROUNDS:
        rounds = sorted(a)
        return compare_paired([a[r] for r in rounds], [b[r] for r in rounds])
    return compare_runs([s.tps for s in base if s.tps is not None],
                        [s.tps for s in mine if s.tps is not None])


def comparisons(results: Results) -> list[Cell]:
    """The cells with a rank test against the baseline: the family Holm corrects over."""
    return [c for c in results.cells.values() if c.verdict is not None and c.verdict.p is not None]


def _holm(results: Results) -> None:
    """More than one comparison in a table: each verdict is judged on its Holm-adjusted p,
    so a 3-arm x 4-level table does not make 8 chances of a false "higher" at 5% each."""
    family = comparisons(results)
    if len(family) < 2:
        return
    for cell, p_holm in zip(family, holm([c.verdict.p for c in family if c.verdict]),
                            strict=True):
        assert cell.verdict is not None
        results.cells[(cell.arm, cell.threads)] = replace(
            cell, verdict=cell.verdict.adjusted(p_holm))


def _tests_used(results: Results) -> set[str]:
    return {c.verdict.test for c in comparisons(results) if c.verdict is not None}


def tests_note(results: Results) -> str:
    """Which test each verdict used, in words."""
    used = _tests_used(results)
    words = []
    if PAIRED_TEST in used:
        words.append(f"cells with {PAIRED_MIN_ROUNDS} or more complete rounds are compared "
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


def holm_note(results: Results) -> str:
    """The sentence under a table whose verdicts were corrected ("" when there was one)."""
    m = len(comparisons(results))
    if m < 2:
        return ""
    return (f"Holm correction across the {m} comparisons of this table: p is each cell's "
            "own, (Holm ...) the adjusted one; a cell reads higher or lower only when the "
            "adjusted p is at most 0.05.")


def collect(events: Iterable[Event]) -> list[Results]:
    """Every recipe run in a journal, in order (the last one may still be running)."""
    found: list[Results] = []
    current: Results | None = None
    steps: list[StepResult] = []

    def close(outcome: str, message: str) -> None:
        nonlocal current, steps
        if current is not None:
            found.append(build(current.recipe, current.arms, current.threads, steps, outcome,
                               message, current.planned_steps))
        current, steps = None, []

    for event in events:
        if isinstance(event, RecipeRun):
            if event.action == "start":
                close("running", "")
                plan = event.plan
                current = Results(event.name, list(plan.get("arms", {})),
                                  [int(t) for t in plan.get("threads", [])], [],
                                  planned_steps=int(plan.get("steps", 0)))
            elif current is not None and event.name == current.recipe:
                close(event.action, event.message)
        elif isinstance(event, StepResult) and current is not None \
                and event.recipe == current.recipe:
            steps.append(event)
    close("running", "")
    return found


# --------------------------------------------------------------------------- formatting


def fmt_tps(value: float | None) -> str:
    return NONE if value is None else f"{value:,.0f}"


def spread_text(cell: Cell) -> str:
    if cell.cv is None or cell.iqr is None:
        return f"{len(cell.runs)} run"
    return f"IQR {cell.iqr:,.0f} (CV {cell.cv:.0%}), {len(cell.runs)} runs"


def verdict_text(cell: Cell) -> str:
    return "baseline" if cell.verdict is None else cell.verdict.text()


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
            text = Text(f"{fmt_tps(cell.median)} tps\n", style="bold")
            text.append(f"{spread_text(cell)}\n", style="")
            p95 = NONE if cell.p95 is None else fmt_ms(cell.p95)
            text.append(f"p95 {p95} ms", style="")
            if cell.hit_ratio is not None:
                text.append(f", hit {cell.hit_ratio:.1f}%", style="")
            label = cell.verdict.label if cell.verdict is not None else ""
            text.append(f"\n{verdict_text(cell)}", style=_STYLE.get(label, "italic"))
            row.append(text)
        table.add_row(*row)
    note = short_note(results)
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
             f"p: Wilcoxon paired by round ({PAIRED_MIN_ROUNDS}+ rounds), else Mann-Whitney")
    family = len(comparisons(results))
    holm_words = f"; Holm-adjusted over {family} comparisons" if family > 1 else ""
    return tests + holm_words


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

    table("Median TPS (spread over replicates)",
          lambda c: f"{fmt_tps(c.median)} ({spread_text(c)})")
    table("p95 latency, ms (median over replicates)",
          lambda c: NONE if c.p95 is None else fmt_ms(c.p95))
    if any(c.hit_ratio is not None for c in results.cells.values()):
        table("Buffer pool hit ratio, %",
              lambda c: NONE if c.hit_ratio is None else f"{c.hit_ratio:.2f}")
    table(f"TPS vs {results.baseline}: ratio [bootstrap 95% CI] and p", verdict_text)
    tests = tests_note(results)
    if tests:
        lines.extend([tests, ""])
    lines.append("One replicate is one sample (its median TPS over the measured window, "
                 "warmup excluded). \"~ noise\" means the difference cannot be told from "
                 "run-to-run variation: the CI spans 1 or the rank test disagrees.")
    note = holm_note(results)
    if note:
        lines.extend(["", note])
    lines.append("")
    return "\n".join(lines)


CSV_FIELDS = ("recipe", "index", "replicate", "arm", "threads", "start", "end", "tps", "p95",
              "err", "hit_ratio", "dirty_pct", "intervals", "steady", "waits")


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
                         s.intervals, int(s.steady), waits])
    return buf.getvalue()
