"""The commands that find things, from the files alone (no server, no connection):
`knobtop run --list` and `knobtop tune --list` (the bundled recipes and searches, each
with its description, conditions and estimated duration), `knobtop run NAME --plan`
(the steps in order, their times and the warnings a run would give) and
`knobtop completion bash|zsh|fish` (generated from the parser by shtab)."""

from __future__ import annotations

import argparse
import re
import sys

from knobtop.errors import BadValue
from knobtop.printable import printable
from knobtop.recipes.kinds.base import count

TYPE_CHECKING = False  # not typing.TYPE_CHECKING: importing typing costs start-up time
if TYPE_CHECKING:
    from knobtop.recipes.model import Recipe
    from knobtop.recipes.search import Search



SAFE_NAME = re.compile(r"[A-Za-z0-9._-]+")  # a bundled name that needs no quoting in a shell


def say(text: str = "") -> None:
    """One line to stdout; text from a file passes the one sanitizer (a line of it)."""
    sys.stdout.write(printable(text, newlines=False) + "\n")


def one_line(text: str) -> str:
    return " ".join(text.split())


def clock(seconds: float) -> str:
    """"0:45", "12:05", "1:02:03"."""
    s = round(seconds)
    h, rest = divmod(s, 3600)
    return f"{h}:{rest // 60:02d}:{rest % 60:02d}" if h else f"{rest // 60}:{rest % 60:02d}"


def run_command(args: argparse.Namespace) -> int:
    """`knobtop run`: --list, --plan, or the run itself (the lab or a profile's server)."""
    if args.list:
        return list_recipes()
    if args.recipe is None:
        raise BadValue("run: give a recipe, a .toml file or a bundled name "
                       "(`knobtop run --list` shows them), e.g. knobtop run doublewrite --lab")
    if args.plan:
        return print_plan(args)
    need_place(args, "run")
    from knobtop.cli.live import run_recipe

    return run_recipe(args)


def tune_command(args: argparse.Namespace) -> int:
    """`knobtop tune`: --list, or the search itself."""
    if args.list:
        return list_searches()
    if args.search is None:
        raise BadValue("tune: give a search, a .toml file or a bundled name "
                       "(`knobtop tune --list` shows them), e.g. knobtop tune commit-flush --lab")
    need_place(args, "tune")
    from knobtop.cli.live import run_tune

    return run_tune(args)


def need_place(args: argparse.Namespace, command: str) -> None:
    if not args.lab and args.profile is None:
        plan = "; or --plan to see what it would do" if command == "run" else ""
        raise BadValue(f"{command}: say where it runs: --lab (the sandbox server on "
                       f"this machine) or --profile PROFILE (a profile's server){plan}")


# --------------------------------------------------------------------------- lists


def recipe_conditions(recipe: Recipe) -> str:
    """Where and under what load a recipe runs, on one line."""
    if recipe.applies:
        runs = "runs on " + ", ".join(f"{flavor} {text}" for flavor, text in
                                      recipe.applies.items())
    else:
        runs = "runs on any server"
    if recipe.curve is not None:
        c = recipe.curve
        return f"{runs}; no load: probe {c.probe} (" + ", ".join(
            f"{k} {v:,}" for k, v in c.params) + f"); knob {c.knob}"
    threads = ",".join(str(t) for t in recipe.threads)
    load = f"{recipe.load.workload} at {threads} threads"
    if recipe.load.instances > 1:
        load += f" ({recipe.load.instances} instances)"
    load += f", {recipe.load.tables} x {recipe.load.table_size} rows"
    if recipe.load.engine:
        load += f", {recipe.load.engine}"
    parts = [runs, load]
    if recipe.targets:
        parts.append("arms on " + ", ".join(t.name for t in recipe.targets) + " too")
    if recipe.knobs:
        parts.append("knobs " + ", ".join(recipe.knobs))
    if recipe.needs:
        parts.append("needs " + recipe.needs.text())
    return "; ".join(parts)


def recipe_shape(recipe: Recipe) -> str:
    from knobtop.recipes.kinds import KINDS

    return KINDS[recipe.kind].shape(recipe)


def list_recipes() -> int:
    from knobtop.recipes.model import RecipeError
    from knobtop.recipes.reader import bundled_recipes, load_recipe
    from knobtop.recipes.runner import short_duration

    paths = bundled_recipes()
    say(f"{len(paths)} bundled recipes (knobtop run NAME --plan shows one's steps; "
        "knobtop run NAME --lab runs it):")
    for path in paths:
        say()
        try:
            recipe = load_recipe(path)
        except RecipeError as exc:  # a bundled file is checked by the tests; still, say it
            say(f"{path.stem}  (cannot be read: {exc})")
            continue
        say(f"{recipe.name}  ~{short_duration(recipe.planned_seconds)} or more, "
            f"{recipe_shape(recipe)}")
        say(f"  {one_line(recipe.description)}")
        say(f"  conditions: {recipe_conditions(recipe)}")
    return 0


def search_seconds(search: Search) -> float:
    """A lower bound on a tune's time: its trials (or its minutes, if less), then the
    verification's rounds, each step its warmup and measured time."""
    step = search.warmup + search.load.duration
    trials = search.trials * step if search.trials is not None else None
    budget = search.minutes * 60 if search.minutes is not None else None
    spent = min(x for x in (trials, budget) if x is not None)
    return spent + (search.candidates + 1) * search.replicates * step


def list_searches() -> int:
    from knobtop.recipes.reader import BUNDLED_DIR
    from knobtop.recipes.runner import short_duration
    from knobtop.recipes.search import SearchError, load_search

    paths = sorted(p for p in (BUNDLED_DIR / "tune").glob("*.toml") if p.is_file())
    say(f"{len(paths)} bundled searches (knobtop tune NAME --lab runs one):")
    for path in paths:
        say()
        try:
            search = load_search(path)
        except SearchError as exc:
            say(f"{path.stem}  (cannot be read: {exc})")
            continue
        budget = " or ".join(
            ([f"{search.trials} trials"] if search.trials is not None else [])
            + ([f"{search.minutes:g} minutes"] if search.minutes is not None else []))
        either = " (whichever ends first)" if " or " in budget else ""
        say(f"{search.name}  ~{short_duration(search_seconds(search))} or more: {budget}"
            f"{either}, then {count(search.candidates, 'candidate')} x "
            f"{count(search.replicates, 'round')} against the baseline")
        say(f"  {one_line(search.description)}")
        load = search.load
        aim = "average TPS" if search.metric == "tps" else "latency"
        say(f"  conditions: {load.workload} at {search.threads} threads, {load.tables} x "
            f"{load.table_size} rows; {search.direction} {aim}; knobs "
            + ", ".join(search.knob_names))
    return 0


# --------------------------------------------------------------------------- plan


def plan_warnings(recipe: Recipe, args: argparse.Namespace) -> list[str]:
    """What a run says only once a server answers, as far as the file alone tells."""
    from knobtop.recipes.checks import offline_warnings

    warnings = offline_warnings(recipe)
    if recipe.allow_reach and not args.allow_reach:
        warnings.append(f"the file asks to set reach variables ({', '.join(recipe.allow_reach)})"
                        ": the run refuses to start without --allow-reach")
    if recipe.knobs and recipe.timeline is None:
        warnings.append("which of " + ", ".join(recipe.knobs) + " need a restart is known "
                        "once the server answers: a static knob restarts the server at "
                        "every arm visit, and each restart adds its time to the plan")
    if recipe.applies:
        warnings.append("the server must be " + ", ".join(
            f"{f} {t}" for f, t in recipe.applies.items())
            + (f" ({one_line(recipe.why)})" if recipe.why else "") + ", or the run is refused")
    return warnings


def print_plan(args: argparse.Namespace) -> int:
    """The plan of `knobtop run NAME`, with the command line's overrides; reads the file
    only (no server is reached, nothing is started)."""
    from knobtop.cli.live import recipe_from_args

    granted = argparse.Namespace(**{**vars(args), "allow_reach": True})
    recipe = recipe_from_args(granted)  # the overrides, checked as a run checks them
    say(f"Plan of recipe {recipe.name} ({recipe.path})")
    say(f"  {one_line(recipe.description)}")
    say(f"conditions: {recipe_conditions(recipe)}")
    step = recipe.warmup + recipe.load.duration
    if recipe.curve is not None:
        print_curve(recipe)
    elif recipe.timeline is None:
        say(f"each step: {recipe.warmup} s warmup + {recipe.load.duration} s measured"
            + (f", then {recipe.pause:g} s pause" if recipe.pause else "")
            + ("; before it, waits for: " + waits_text(recipe) if recipe.waits.active else ""))
    if recipe.timeline is not None:
        print_timeline(recipe)
    elif recipe.curve is None:
        print_steps(recipe, step)
    if recipe.needs:
        say(f"needs: {recipe.needs.text()}"
            + (f" ({recipe.needs.why})" if recipe.needs.why else "")
            + "; a run measures the box first (sync and read latency, data vs buffer pool, "
            "CPUs) and says up front what does not hold")
    warnings = plan_warnings(recipe, args)
    say()
    say(f"warnings ({len(warnings)}):" if warnings else "warnings: none")
    for w in warnings:
        say(f"  - {w}")
    return 0


def waits_text(recipe: Recipe) -> str:
    w = recipe.waits
    gates = [text for on, text in (
        (w.history_below is not None, f"history list below {w.history_below}"),
        (w.dirty_at_lwm, "dirty pages at the low-water mark"),
        (w.dirty_pct_below is not None, f"dirty pages below {w.dirty_pct_below}%"),
        (w.checkpoint_age_below is not None, f"checkpoint age below {w.checkpoint_age_below}"),
        (w.plateau, "a steady plateau"),
    ) if on]
    return ", ".join(gates) + f" (each at most {w.timeout:g} s)"


def print_steps(recipe: Recipe, step: float) -> None:
    from knobtop.recipes.runner import short_duration

    schedule = recipe.calibration_schedule() + recipe.schedule()
    more = (f"; then more rounds, up to {recipe.max_replicates}, until every CI is within "
            f"+-{recipe.until_ci * 100:g}%" if recipe.until_ci is not None else "")
    say(f"order: {recipe.order}, seed {recipe.seed}; {recipe_shape(recipe)}"
        + (f", after {recipe.calibrate} calibration rounds" if recipe.calibrate else "")
        + more)
    say()
    say(f"{count(len(schedule), 'step')}, about {short_duration(recipe.planned_seconds)} at least "
        "(gates, plateaus, restarts and preparing the tables add to it):")
    for n, s in enumerate(schedule):
        start = n * (step + recipe.pause)
        kind = "calibration " if s.calibration else ""
        knobs = " ".join(f"{k}={v}" for k, v in s.arm.knobs.items()) or "(server's own)"
        where = f" on {s.arm.target}" if s.arm.target else ""
        say(f"  {n + 1:3d}. {clock(start):>8}  {kind}round {s.replicate}  arm {s.arm.name}"
            f"{where}  {s.threads} threads  {knobs}")


def print_curve(recipe: Recipe) -> None:
    c = recipe.curve
    assert c is not None
    say(f"{recipe_shape(recipe)}; at each value: {c.knob} set, then the probe's queries "
        f"timed on a new connection, and the deltas of {', '.join(c.counters)}"
        + (f", then {recipe.pause:g} s pause" if recipe.pause else ""))
    say("values: " + ", ".join(a.name for a in recipe.arms))


def print_timeline(recipe: Recipe) -> None:
    from knobtop.recipes.runner import short_duration

    tl = recipe.timeline
    assert tl is not None
    say(f"one load for {short_duration(recipe.load.duration)}; start with "
        + (" ".join(f"{k}={v}" for k, v in tl.start.items()) or "the server's own values"))
    say()
    if tl.actions:
        say(f"{count(len(tl.actions), 'action')}:")
    for a in tl.actions:
        say(f"  {clock(a.at):>8}  " + " ".join(f"{k}={v}" for k, v in a.knobs.items()))
    say("checkpoints at " + ", ".join(clock(c) for c in tl.checkpoints))


# --------------------------------------------------------------------------- completion


def completion(args: argparse.Namespace) -> int:
    """The shell completion script of the whole parser, for bash, zsh or fish (shtab); the
    recipe of `run` and the search of `tune` complete to the bundled names and to files."""
    import shtab

    from knobtop.cli.parser import build_parser
    from knobtop.recipes.reader import BUNDLED_DIR, bundled_recipes

    parser = build_parser()
    subs = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    bash = ""  # the functions bash calls for the names (zsh and fish take the words)
    for command, names in (
        ("run", [p.stem for p in bundled_recipes()]),
        ("tune", sorted(p.stem for p in (BUNDLED_DIR / "tune").glob("*.toml"))),
    ):
        words = " ".join(n for n in names if SAFE_NAME.fullmatch(n))
        function = f"_knobtop_{command}_names"
        bash += f'{function}() {{\n  compgen -W "{words}" -- "$1"\n  compgen -f -- "$1"\n}}\n'
        positional = next(a for a in subs.choices[command]._actions if not a.option_strings)
        positional.complete = {"bash": function, "zsh": f"({words})", "fish": words}
    script = shtab.complete(parser, shell=args.shell, preamble=bash if args.shell == "bash" else "")
    sys.stdout.write(script if script.endswith("\n") else script + "\n")
    return 0
