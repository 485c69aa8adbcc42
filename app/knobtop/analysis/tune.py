"""A tune's trials and verification from journaled events (issue 21): what ``knobtop
tune`` prints at its end and ``knobtop report`` prints from its journal.

A tune journal is a recipe journal whose recipe start says ``kind = "tune"`` (with the
search's objective, constraints and verification design: ``TuneSpec``), a ``trial``
event per search trial (number 0: the baseline's own values), and the recipe steps:
each trial's (named by its ``step``) and the verification round's (every other step).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.table import Table
from rich.text import Text

from knobtop.analysis.results import Results, build, results_markdown, results_table, run_value
from knobtop.analysis.stats import HIGHER, LOWER
from knobtop.conditions import plan_notes
from knobtop.journal.events import Event, RecipeRun, StepResult, Trial

BASE = "base"  # the verification's (and trial 0's) arm: the server's own values


def arm_name(number: int) -> str:
    return BASE if number == 0 else f"t{number}"


@dataclass(frozen=True, slots=True)
class TuneSpec:
    """What judging a tune needs of its search: the objective, the constraints and the
    verification design."""

    name: str
    direction: str  # "maximize" | "minimize"
    metric: str  # "tps" | "latency"
    threads: int
    constraints: dict[str, float] = field(default_factory=dict)
    candidates: int = 2
    replicates: int = 5
    plateau: bool = False

    def plan(self) -> dict[str, Any]:
        return {"direction": self.direction, "metric": self.metric, "threads": self.threads,
                "constraints": dict(self.constraints), "candidates": self.candidates,
                "replicates": self.replicates, "plateau": self.plateau}

    @classmethod
    def from_plan(cls, name: str, plan: dict[str, Any]) -> TuneSpec | None:
        """The spec a journal's recipe start holds (None: not a tune's)."""
        tune = plan.get("tune")
        if plan.get("kind") != "tune" or not isinstance(tune, dict):
            return None
        try:
            return cls(name=name, direction=str(tune["direction"]),
                       metric=str(tune["metric"]), threads=int(tune["threads"]),
                       constraints={str(k): float(v)
                                    for k, v in dict(tune.get("constraints", {})).items()},
                       candidates=int(tune.get("candidates", 2)),
                       replicates=int(tune.get("replicates", 5)),
                       plateau=bool(tune.get("plateau", False)))
        except (KeyError, TypeError, ValueError):
            return None

    @property
    def what(self) -> str:
        return "TPS" if self.metric == "tps" else "latency"


def measured(step: StepResult) -> dict[str, float | None]:
    """A step's figures a search scores: average TPS, the latency percentile (the timed
    window's own when it has one) and errors per second."""
    latency = step.window_pct_ms if step.window_pct_ms is not None else step.p95
    return {"tps": run_value(step), "latency_ms": latency, "err_s": step.err}


def violations(spec: TuneSpec, values: dict[str, float | None]) -> dict[str, float]:
    """How far each constraint is broken (> 0) or kept (<= 0); a figure the step did not
    measure breaks its constraint."""
    out: dict[str, float] = {}
    for key, bound in spec.constraints.items():
        if key == "latency_ms_max":
            v = values.get("latency_ms")
            out[key] = 1e9 if v is None else v - bound
        elif key == "errors_per_s_max":
            out[key] = (values.get("err_s") or 0.0) - bound
        elif key == "tps_min":
            v = values.get("tps")
            out[key] = 1e9 if v is None else bound - v
    return out


def objective_of(spec: TuneSpec, values: dict[str, float | None]) -> float | None:
    return values.get("tps" if spec.metric == "tps" else "latency_ms")


NEAR = 0.10  # numbers within 10% of each other: the same setting for a verification


def near(a: dict[str, str], b: dict[str, str]) -> bool:
    """Whether two trials' values are the same setting but for numbers within ``NEAR``
    (innodb_io_capacity 1110 and 1120): verifying both would spend rounds on one idea."""
    if a.keys() != b.keys():
        return False
    for key, x in a.items():
        y = b[key]
        if x == y:
            continue
        try:
            fx, fy = float(x), float(y)
        except ValueError:
            return False
        if abs(fx - fy) > NEAR * max(abs(fx), abs(fy)):
            return False
    return True


def best_trials(spec: TuneSpec, trials: Iterable[Trial], count: int) -> list[Trial]:
    """The ``count`` best measured trials that kept the constraints, the baseline's values
    excluded, each a setting of its own (not ``near`` a better one already taken)."""
    trials = list(trials)
    base = next((t.knobs for t in trials if t.number == 0), None)
    ranked = sorted((t for t in trials if t.number > 0 and t.state == "done" and t.feasible
                     and t.objective is not None and t.knobs != base),
                    key=lambda t: t.objective or 0.0, reverse=spec.direction == "maximize")
    out: list[Trial] = []
    for t in ranked:
        if not any(near(t.knobs, o.knobs) for o in out):
            out.append(t)
    return out[:count]


def baseline_band(trials: Iterable[Trial]) -> tuple[float, float] | None:
    """The lowest and highest objective of the baseline's runs (trial 0): a trial inside
    it is not told from the baseline by the search's own runs."""
    got = [t.objective for t in trials if t.number == 0 and t.objective is not None]
    return (min(got), max(got)) if got else None


@dataclass
class Verification:
    """The verification round's table and what it recommends."""

    spec: TuneSpec
    results: Results
    knobs: dict[str, dict[str, str]]  # arm -> its knob values (the baseline's too)
    recommended: str | None  # the arm; None: the baseline was not beaten beyond noise

    def verdict(self, arm: str) -> str:
        cell = self.results.cells.get((arm, self.spec.threads))
        v = None if cell is None else (cell.verdict if self.spec.metric == "tps"
                                       else cell.lat_verdict)
        return "not measured" if v is None else v.label

    def line(self) -> str:
        """The tune's conclusion in one line (journaled as a mark, printed at the end)."""
        if self.recommended is None:
            tried = ", ".join(self.results.arms[1:]) or "no candidate"
            return (f"tune: could not beat the baseline beyond noise ({tried} against "
                    f"{BASE}: {', '.join(self.verdict(a) for a in self.results.arms[1:])})")
        cell = self.results.cells[(self.recommended, self.spec.threads)]
        v = cell.verdict if self.spec.metric == "tps" else cell.lat_verdict
        assert v is not None
        ratio = f"{v.ratio:.2f}x" if v.ratio is not None else "?"
        ci = (f" (95% CI {v.lo:.2f}-{v.hi:.2f})" if v.lo is not None and v.hi is not None
              else "")
        knobs = ", ".join(f"{k}={val}" for k, val in self.knobs[self.recommended].items())
        return (f"tune: recommend {self.recommended} ({knobs}): {self.spec.what} {ratio} the "
                f"baseline's{ci}, {v.label}")


def verification_of(spec: TuneSpec, trials: Sequence[Trial],
                    steps: Sequence[StepResult]) -> Verification | None:
    """The verification round from a tune's trials and its step results (every step that
    is not one of this journal's trials); None when it has not started."""
    trial_steps = {t.step for t in trials if not t.resumed}
    rest = [s for s in steps if s.index not in trial_steps and not s.calibration]
    if not rest:
        return None
    candidates = best_trials(spec, trials, spec.candidates)
    arms = [BASE, *(arm_name(t.number) for t in candidates)]
    base_knobs = next((t.knobs for t in trials if t.number == 0), {})
    knobs = {BASE: dict(base_knobs), **{arm_name(t.number): dict(t.knobs) for t in candidates}}
    results = build(f"{spec.name} verification", arms, [spec.threads], list(rest), "end", "",
                    len(arms) * spec.replicates, spec.replicates, spec.plateau)
    good = HIGHER if spec.metric == "tps" else LOWER
    best: tuple[float, str] | None = None
    for arm in arms[1:]:
        cell = results.cells.get((arm, spec.threads))
        v = None if cell is None else (cell.verdict if spec.metric == "tps"
                                       else cell.lat_verdict)
        if v is None or v.label != good or v.ratio is None:
            continue
        score = v.ratio if spec.metric == "tps" else -v.ratio
        if best is None or score > best[0]:
            best = (score, arm)
    return Verification(spec, results, knobs, best[1] if best else None)


@dataclass
class TuneRun:
    """One tune read back from a journal."""

    spec: TuneSpec
    trials: list[Trial]
    verification: Verification | None
    outcome: str  # the recipe run's: "end" | "aborted" | "failed" | "running"
    # the conditions probe at its start and what of [conditions] did not hold
    condition_notes: list[str] = field(default_factory=list)


def collect_tunes(events: Iterable[Event]) -> list[TuneRun]:
    """Every tune in a journal's events, in order."""
    out: list[TuneRun] = []
    spec: TuneSpec | None = None
    trials: list[Trial] = []
    steps: list[StepResult] = []
    for event in events:
        if isinstance(event, RecipeRun):
            if event.action == "start":
                spec = TuneSpec.from_plan(event.name, event.plan)
                trials, steps = [], []
                if spec is not None:
                    out.append(TuneRun(spec, trials, None, "running",
                                       plan_notes(event.plan)))
            elif spec is not None and out:
                out[-1].outcome = event.action
                out[-1].verification = verification_of(spec, trials, steps)
                spec = None
        elif spec is not None and isinstance(event, Trial):
            trials.append(event)
        elif spec is not None and isinstance(event, StepResult):
            steps.append(event)
    if spec is not None and out:  # a tune the journal ends inside (killed)
        out[-1].verification = verification_of(spec, trials, steps)
    return out


def objective_text(spec: TuneSpec, value: float | None) -> str:
    """A TPS as 12,345, a latency as 1.25 ms."""
    if value is None:
        return "-"
    return f"{value:,.0f}" if spec.metric == "tps" else f"{value:.2f} ms"


def trial_rows(spec: TuneSpec, trials: Sequence[Trial]) -> list[list[str]]:
    """One row per trial: number, knob values, objective, kept, steady, note."""
    best = best_trials(spec, trials, 1)
    rows = []
    for t in trials:
        kept = ("yes" if t.feasible else "no: " + ", ".join(t.violated)) \
            if t.state == "done" else t.state
        note = " (best)" if best and t.number == best[0].number else ""
        note += " (resumed)" if t.resumed else ""
        steady = ("yes" if t.steady else "no") if spec.plateau else "-"  # no plateau wait
        rows.append([arm_name(t.number), ", ".join(f"{k}={v}" for k, v in t.knobs.items()),
                     objective_text(spec, t.objective), kept, steady,
                     (t.message + note).strip()])
    return rows


TRIAL_HEADERS = ("trial", "knobs", "objective", "constraints kept", "steady", "note")


def trials_table(spec: TuneSpec, trials: Sequence[Trial]) -> Table:
    """The search's trials (knob values are the search file's words, never markup)."""
    goal = f"{spec.direction} {'average TPS' if spec.metric == 'tps' else 'latency'}"
    table = Table(title=Text(f"{spec.name}: {len(trials)} trials ({goal}, {spec.threads} "
                             "threads)"), title_justify="left")
    for header in TRIAL_HEADERS:
        table.add_column(header, justify="right" if header == "objective" else "left")
    for row in trial_rows(spec, trials):
        table.add_row(*(Text(c) for c in row))
    return table


def verification_table(verification: Verification) -> Table:
    """The verification round as a recipe results table, each candidate's knobs below."""
    table = results_table(verification.results)
    lines = [f"{arm}: " + ", ".join(f"{k}={v}" for k, v in knobs.items())
             for arm, knobs in verification.knobs.items()]
    caption = table.caption if isinstance(table.caption, Text) else Text(str(table.caption
                                                                              or ""))
    table.caption = Text("\n").join([caption, *(Text(line) for line in lines)])
    return table


def trials_chart(spec: TuneSpec, trials: Sequence[Trial], width: int = 60,
                 height: int = 6) -> Text:
    """The objective of each trial as a dot per column (the latest that fit ``width``),
    over the baseline runs' band (░): a dot inside the band is not told from the baseline
    by the search's own runs. ● kept the constraints (the best in bold green), ✗ broke
    one; a failed trial is · at the bottom."""
    band = baseline_band(trials)
    shown = [t for t in trials if t.number > 0][-max(1, (width - 10) // 2):]
    values = [t.objective for t in shown if t.objective is not None]
    values += list(band or ())
    out = Text(no_wrap=True, overflow="ellipsis")
    if not values:
        out.append(f"{spec.what}: no trial measured yet", style="dim")
        return out
    lo, hi = min(values), max(values)
    if hi - lo < 1e-9:
        lo, hi = lo - 1, hi + 1
    step = (hi - lo) / height
    best = best_trials(spec, trials, 1)

    def row_of(v: float) -> int:  # 0 = top
        return min(height - 1, max(0, int((hi - v) / step)))

    band_rows = set(range(row_of(band[1]), row_of(band[0]) + 1)) if band else set()
    label = objective_text(spec, hi), objective_text(spec, lo)
    pad = max(len(label[0]), len(label[1]))
    for r in range(height):
        axis = label[0] if r == 0 else label[1] if r == height - 1 else ""
        out.append(f"{axis:>{pad}} ┤" if axis else " " * pad + " │", style="dim")
        for t in shown:
            if t.objective is None:
                mark, style = ("·", "dim") if r == height - 1 else (" ", "")
            elif row_of(t.objective) == r:
                mark = "●" if t.feasible else "✗"
                style = ("bold green" if best and t.number == best[0].number
                         else "" if t.feasible else "red")
            else:
                mark, style = ("░", "dim") if r in band_rows else (" ", "")
            out.append(" " + mark, style=style)
        if r in band_rows and r == min(band_rows) and band is not None:
            out.append(f"  baseline {objective_text(spec, band[0])}-"
                       f"{objective_text(spec, band[1])}", style="dim")
        out.append("\n")
    first = shown[0].number if shown else 1
    out.append(" " * pad + f"  trials {first}-{shown[-1].number if shown else 0}", style="dim")
    return out


def tune_markdown(run: TuneRun) -> str:
    """A tune for `knobtop report`: the trials, the verification table, the conclusion."""
    spec = run.spec
    out = [f"## Tune {spec.name}", "",
           f"{len(run.trials)} trials, {spec.direction} "
           f"{'average TPS' if spec.metric == 'tps' else 'latency'} at {spec.threads} "
           f"threads; the run {run.outcome}.", "",
           "| " + " | ".join(TRIAL_HEADERS) + " |",
           "| " + " | ".join("---" for _ in TRIAL_HEADERS) + " |"]
    out += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |"
            for row in trial_rows(spec, run.trials)]
    v = run.verification
    if v is None:
        out += ["", "No verification round (the tune ended before it)."]
    else:
        out += ["", "### Verification against the baseline", "",
                results_markdown(v.results), ""]
        out += [f"- {arm}: " + ", ".join(f"{k}={val}" for k, val in knobs.items())
                for arm, knobs in v.knobs.items()]
        out += ["", v.line()]
    for note in run.condition_notes:
        out += ["", note]
    return "\n".join(out) + "\n"


__all__ = ["BASE", "TuneRun", "TuneSpec", "Verification", "arm_name", "baseline_band",
           "best_trials",
           "collect_tunes", "measured", "objective_of", "objective_text", "trials_chart",
           "trials_table",
           "tune_markdown",
           "verification_of", "verification_table", "violations"]
