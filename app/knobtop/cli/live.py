"""The live commands: lab, connect and run, as SessionOptions for one build_session()."""
# Just over 500 lines: the live commands' options, and the front ends that run a RunRequest
# (headless, the live screen), which map a run's end through recipes/outcome.py.

from __future__ import annotations

import argparse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from knobtop.cli.views import stderr_console, ui_config
from knobtop.errors import BadValue

if TYPE_CHECKING:
    from rich.console import Console

    from knobtop.analysis.results import Results
    from knobtop.connect import SshOptions
    from knobtop.recipes.model import Recipe, Target
    from knobtop.recipes.search import Search
    from knobtop.session.core import Session
    from knobtop.session.options import LabPlace, ServerPlace, SessionOptions
    from knobtop.session.port import SessionPort
    from knobtop.ui.app import KnobtopApp



@dataclass(frozen=True)
class RunRequest:
    """What a command asks, on the command line's side: the session's options, and what
    drives the session (a recipe, or a search and the tune it resumes) and where its
    results go. The session gets only the options (their ``checks`` check the recipe's or
    the search's knobs against its server); the front end gets the rest."""

    options: SessionOptions
    recipe: Recipe | None = None
    markdown: Path | None = None  # ``knobtop run --markdown``: the results as Markdown here
    tune: Search | None = None
    resume: Path | None = None  # ``knobtop tune --resume``: the journal of the tune resumed

def recipe_from_args(args: argparse.Namespace) -> Recipe:
    """The recipe file with the command line's overrides, checked again."""
    import dataclasses

    from knobtop.load.base import MAX_INSTANCES
    from knobtop.recipes.model import MAX_REPLICATES
    from knobtop.recipes.reader import load_recipe
    from knobtop.recipes.schedule import ORDERS

    recipe = load_recipe(args.recipe)
    reach_granted(recipe.allow_reach, str(recipe.path), args.allow_reach)
    changes: dict[str, object] = {}
    if args.order is not None:
        if args.order not in ORDERS:
            raise BadValue(f"--order {args.order}: give one of {', '.join(ORDERS)}")
        changes["order"] = args.order
    if args.replicates is not None:
        if args.replicates < 1:
            raise BadValue("--replicates must be at least 1")
        changes["replicates"] = args.replicates
    if args.step_duration is not None:
        if args.step_duration < 1:
            raise BadValue("--duration must be at least 1 second")
        changes["duration"] = args.step_duration
    if args.warmup is not None:
        if args.warmup < 0:
            raise BadValue("--warmup cannot be negative")
        changes["warmup"] = args.warmup
    if args.pause is not None:
        changes["pause"] = max(0.0, args.pause)
    if args.step_threads:
        try:
            threads = tuple(int(t) for t in args.step_threads.split(","))
        except ValueError:
            raise BadValue(f"--threads {args.step_threads}: give numbers like 4,8,16") from None
        if any(not 1 <= t <= 1024 for t in threads):
            raise BadValue("--threads: each count must be 1 to 1024")
        changes["threads"] = threads
    if args.wait_timeout is not None:
        changes["waits"] = dataclasses.replace(recipe.waits, timeout=max(1.0, args.wait_timeout))
    if args.calibrate is not None:
        if not 0 <= args.calibrate <= MAX_REPLICATES:
            raise BadValue(f"--calibrate {args.calibrate}: give 0 to {MAX_REPLICATES} rounds")
        changes["calibrate"] = args.calibrate
    if args.until_ci is not None:
        if not 0 < args.until_ci < 1:
            raise BadValue(f"--until-ci {args.until_ci:g}: give the CI's half-width as a "
                           "fraction, e.g. 0.05 for +-5%")
        changes["until_ci"] = args.until_ci
    if args.max_replicates is not None:
        changes["max_replicates"] = args.max_replicates
    if args.instances is not None:
        if not 1 <= args.instances <= MAX_INSTANCES:
            raise BadValue(f"--instances {args.instances}: give 1 to {MAX_INSTANCES}")
        changes["instances"] = args.instances
    recipe = recipe.changed(**changes)
    for arm, spec in recipe.arm_specs():
        if min(recipe.threads) < spec.instances:
            raise BadValue(f"{min(recipe.threads)} threads cannot be shared among "
                           f"{spec.instances} instances (arm {arm.name}): threads is their "
                           f"total; give --threads of at least {spec.instances}, or fewer "
                           "--instances")
    if (recipe.until_ci is None) != (recipe.max_replicates is None):
        raise BadValue("--until-ci and --max-replicates go together (or set until_ci and "
                       "max_replicates in the recipe's [run])")
    if recipe.max_replicates is not None and not \
            recipe.replicates < recipe.max_replicates <= MAX_REPLICATES:
        raise BadValue(f"--max-replicates {recipe.max_replicates}: give more than the "
                       f"replicates ({recipe.replicates}) and at most {MAX_REPLICATES}")
    return recipe


def reach_granted(names: tuple[str, ...], file: str, granted: bool) -> None:
    """A file's ``[allow] reach`` takes effect only with ``--allow-reach`` too."""
    if names and not granted:
        from knobtop.server.policy import risk_of

        said = "; ".join(f"{n} {risk_of(n).what}" for n in names)
        raise BadValue(f"{file} asks to set reach variables ([allow] reach): {said}. Run "
                       "again with --allow-reach to let it, or remove them from the file")


def recipe_results_so_far(app: KnobtopApp) -> Results | None:
    """A recipe the screen quit before its end: the steps it measured (its report came
    back when quit aborted it), or None when none was."""
    from knobtop.recipes.orders import RunReport

    report = app.run_report
    if not isinstance(report, RunReport) or not report.measured:
        return None
    return report.results


def run_lab(args: argparse.Namespace) -> int:
    console = stderr_console()
    if args.stop:
        from knobtop.lab import stop_lab
        from knobtop.labdirs import lab_dir_for

        with console.status("Stopping the sandbox server ..."):
            said = stop_lab(lab_dir_for(args.name, args.dir))
        console.print(said, markup=False, highlight=False)
        return 0
    return run_session(RunRequest(session_options(args, lambda: lab_place(args))), console)


def lab_place(args: argparse.Namespace) -> LabPlace:
    """Where `knobtop lab` goes: the sandbox in --dir (or the named one in it), maybe
    --fresh, with --driver and its --option base options."""
    from knobtop.labdirs import lab_dir_for
    from knobtop.session.options import LabPlace

    options = tuple(args.options)
    check_sandbox_options(options, (), "--option")
    return LabPlace(dir=lab_dir_for(args.name, args.dir), fresh=args.fresh,
                    keep_running=args.keep_running, driver=args.driver, options=options,
                    storage=args.storage)


def check_sandbox_options(options: tuple[tuple[str, str], ...], plugins: tuple[str, ...],
                          where: str) -> None:
    """Each base option is exactly a performance variable of the lab's server (with its
    plugins): said now, before a server starts for the run. The sandbox checks again."""
    from knobtop.lab_options import check_known
    from knobtop.labdirs import find_program

    server = find_program("mariadbd", "mysqld")
    if options and server is not None:  # no server: the sandbox's start says how to get one
        check_known(options, server, plugins, where)


def run_connect(args: argparse.Namespace) -> int:
    return run_session(RunRequest(session_options(args, lambda: server_place(args))),
                       stderr_console())


def server_place(args: argparse.Namespace) -> ServerPlace:
    """Where `knobtop connect` goes: a profile, or --target/--client and the MySQL flags."""
    from knobtop.session.options import ServerPlace

    if args.profile and (args.target or args.client):
        raise BadValue("give a PROFILE or --target/--client, not both")
    if not (args.profile or args.target or args.client):
        raise BadValue("say where the server is: knobtop connect PROFILE, or --target DEST")
    return ServerPlace(
        profile=args.profile, target=args.target, clients=tuple(args.client),
        mysql_user=args.mysql_user, mysql_port=args.mysql_port,
        mysql_socket=args.mysql_socket, password_env=args.password_env,
        ssh=ssh_options(args), own_tables=args.client_tables == "own",
    )


def ssh_options(args: argparse.Namespace) -> SshOptions:
    from knobtop.connect import SshOptions

    return SshOptions(known_hosts=args.known_hosts, accept_new=args.accept_new,
                      identities=tuple(args.identity), config=args.ssh_config)


def session_options(
    args: argparse.Namespace, where: Callable[[], LabPlace | ServerPlace]
) -> SessionOptions:
    """`knobtop lab` and `knobtop connect`: the options their flags say."""
    from knobtop.load.base import LoadSpec
    from knobtop.session.options import SessionOptions

    if args.headless and args.duration is None:
        raise BadValue("--headless needs --duration SECONDS")
    if args.changes and not args.headless:
        raise BadValue("--set is for --headless runs; in the live screen press k to edit knobs")
    from knobtop.server.policy import risk_of

    for change in args.changes:
        risk = risk_of(change.knob)
        if risk.reach and not args.allow_reach:
            raise BadValue(f"--set {change.knob}: {risk.name} {risk.what}; add --allow-reach "
                           "to set it")
        if args.duration is not None and change.at >= args.duration:
            raise BadValue(f"--set {change.text}: {change.at:g} s is not before the run's end "
                           f"(--duration {args.duration:g}), so it would never be made; give "
                           "an earlier time, or a longer --duration")
    load = LoadSpec(workload=args.load if args.load != "none" else "oltp_read_write",
                    threads=args.threads, tables=args.tables, table_size=args.table_size,
                    rate=args.rate, rand_type=args.rand_type, percentile=args.percentile,
                    prepared=not args.no_ps, duration=args.phase_seconds)
    load.check()
    return SessionOptions(
        where=where(), load=load, start_load=args.load != "none", journal=args.journal,
        interval=args.interval, statements=args.statements, cleanup=args.cleanup,
        headless=args.headless, duration=args.duration, changes=tuple(args.changes),
        targets=(), allow_reach=args.allow_reach, checks=(),
    )


def recipe_options(args: argparse.Namespace, recipe: Recipe) -> SessionOptions:
    """`knobtop run`: the session a recipe asks for, on the lab or a profile's server
    (every option a value: what lab and connect would take by default where the recipe
    says nothing)."""
    from knobtop.session.options import LabPlace, ServerPlace, SessionOptions

    where: LabPlace | ServerPlace
    if args.lab:
        from knobtop.labdirs import lab_dir_for

        check_sandbox_options(tuple(args.options), recipe_plugins(recipe), "--option")
        where = LabPlace(dir=lab_dir_for(args.name, args.dir), fresh=False,
                         keep_running=False, driver=args.driver,
                         plugins=recipe_plugins(recipe), options=tuple(args.options),
                         storage=args.storage)
    else:
        where = ServerPlace(profile=args.profile, target=None, clients=(), mysql_user="root",
                            mysql_port=3306, mysql_socket=None, password_env=None,
                            ssh=ssh_options(args), own_tables=args.client_tables == "own")
    load = recipe.load_spec(recipe.threads[0], 0)  # as the recipe says (issue 18: prepared
    load.check()                                   # statements were forced on)
    import functools

    from knobtop.recipes.checks import check_server

    options = SessionOptions(
        where=where, load=load, start_load=recipe.load.workload != "none", journal=args.journal,
        interval=args.interval, statements=True, cleanup=False, headless=not args.tui,
        duration=recipe.planned_seconds, changes=(), targets=(),
        allow_reach=args.allow_reach, checks=(functools.partial(check_server, recipe, target=""),),
    )
    if not recipe.targets:
        return options
    import dataclasses

    # Each further target's session: built like the run's own, its events go to the run's
    # journal (so it has no journal path of its own to check); it checks the recipe's arms
    # on that server when it answers.
    targets = tuple(
        (t.name, dataclasses.replace(
            options, where=target_place(args, recipe, t, where), journal=None,
            checks=(functools.partial(check_server, recipe, target=t.name),)))
        for t in recipe.targets)
    return dataclasses.replace(options, targets=targets)


def target_place(args: argparse.Namespace, recipe: Recipe, target: Target,
                 main: LabPlace | ServerPlace) -> LabPlace | ServerPlace:
    """Where a recipe's further target is (issue 19): a profile's server, or with --lab
    the named sandbox of the target's name inside the lab's directory (--dir's, else the
    default one), with the target's base options."""
    from knobtop.labdirs import lab_dir_for
    from knobtop.session.options import LabPlace, ServerPlace

    if target.profile:
        return ServerPlace(profile=target.profile, target=None, clients=(), mysql_user="root",
                           mysql_port=3306, mysql_socket=None, password_env=None,
                           ssh=ssh_options(args), own_tables=args.client_tables == "own")
    if not isinstance(main, LabPlace):
        raise BadValue(f"target {target.name} of recipe {recipe.name} is a lab sandbox (it "
                       "has options, no profile): run it with --lab, or give "
                       f"[targets.{target.name}] profile = \"PROFILE\"")
    check_sandbox_options(target.options, main.plugins,
                          f"{recipe.path}: [targets.{target.name}] options:")
    place = lab_dir_for(target.name, args.dir)
    if main.dir is not None and place.resolve() == main.dir.resolve():
        raise BadValue(f"target {target.name} would be the run's own sandbox ({place}): give "
                       "the run another --name, or rename the target")
    return LabPlace(dir=place, fresh=False, keep_running=False, driver=args.driver,
                    plugins=main.plugins, options=target.options, storage=main.storage)


# Engines a recipe may ask for that the lab's mariadbd loads as a plugin.
ENGINE_PLUGINS = {"rocksdb": "ha_rocksdb"}


def recipe_plugins(recipe: Recipe) -> tuple[str, ...]:
    """The plugins the lab's sandbox needs for the engines of a recipe's tables."""
    engines = {spec.engine.lower() for _, spec in recipe.arm_specs()}
    return tuple(sorted(ENGINE_PLUGINS[e] for e in engines if e in ENGINE_PLUGINS))


def run_recipe(args: argparse.Namespace) -> int:
    """`knobtop run`: the lab or a profile's session, driven by a recipe."""
    from knobtop.recipes.runner import short_duration

    console = stderr_console()
    recipe = recipe_from_args(args)
    if recipe.curve is not None:
        c = recipe.curve
        console.print(f"Curve {recipe.name}: {c.knob} at {len(c.values)} values "
                      f"({recipe.arms[0].name} to {recipe.arms[-1].name}), probe {c.probe} "
                      f"at each, at least {short_duration(recipe.planned_seconds)}",
                      highlight=False, markup=False)
        return run_session(recipe_request(args, recipe), console)
    if recipe.timeline is not None:
        tl = recipe.timeline
        console.print(f"Timeline {recipe.name}: one load ({recipe.load.workload} x"
                      f"{recipe.threads[0]}) for {short_duration(recipe.load.duration)}, "
                      f"{len(tl.actions)} actions, checkpoints at "
                      + ", ".join(f"{c:g}" for c in tl.checkpoints) + " s",
                      highlight=False, markup=False)
        return run_session(recipe_request(args, recipe), console)
    steps = len(recipe.schedule())
    calibration = len(recipe.calibration_schedule())
    first = (f"{calibration} calibration steps (the baseline against itself), then "
             if calibration else "")
    more = (f"; more rounds, up to {recipe.max_replicates}, until every CI is within "
            f"+-{recipe.until_ci * 100:g}%" if recipe.until_ci is not None else "")
    console.print(f"Recipe {recipe.name}: {first}{len(recipe.arms)} arms x "
                  f"{len(recipe.threads)} thread counts x {recipe.replicates} replicates = "
                  f"{steps} steps, at least {short_duration(recipe.planned_seconds)}{more}",
                  highlight=False, markup=False)
    if recipe.load.instances > 1:
        levels = ", ".join(recipe.load_spec(t, 0).threads_text() for t in recipe.threads)
        console.print(f"{recipe.load.instances} sysbench instances at once on each client, each "
                      f"on its own database; threads are their total: {levels}",
                      highlight=False, markup=False)
    return run_session(recipe_request(args, recipe), console)


def recipe_request(args: argparse.Namespace, recipe: Recipe) -> RunRequest:
    """`knobtop run`: the recipe's session, driven by the recipe, results to --markdown."""
    return RunRequest(recipe_options(args, recipe), recipe=recipe, markdown=args.markdown)


def run_tune(args: argparse.Namespace) -> int:
    """`knobtop tune`: the lab or a profile's session, driven by a search (headless)."""
    import dataclasses

    from knobtop.analysis.tune import BASE
    from knobtop.recipes.model import Arm
    from knobtop.recipes.resume import read_prior
    from knobtop.recipes.runner import short_duration
    from knobtop.recipes.search import MAX_TRIALS, load_search

    console = stderr_console()
    search = load_search(args.search)
    reach_granted(search.allow_reach, str(search.path), args.allow_reach)
    if args.trials is not None:
        if not 1 <= args.trials <= MAX_TRIALS:
            raise BadValue(f"--trials {args.trials}: give 1 to {MAX_TRIALS}")
        search = dataclasses.replace(search, trials=args.trials)
    if args.minutes is not None:
        if not 0 < args.minutes <= 7 * 24 * 60:
            raise BadValue(f"--minutes {args.minutes:g}: give more than 0, at most a week")
        search = dataclasses.replace(search, minutes=args.minutes)
    if args.step_duration is not None:
        if not 1 <= args.step_duration <= 86400:
            raise BadValue(f"--duration {args.step_duration}: give 1 to 86400 seconds")
        search = dataclasses.replace(search, load=dataclasses.replace(
            search.load, duration=args.step_duration))
    if args.warmup is not None:
        if not 0 <= args.warmup <= 3600:
            raise BadValue(f"--warmup {args.warmup}: give 0 to 3600 seconds")
        search = dataclasses.replace(search, warmup=args.warmup)
    if args.replicates is not None:
        from knobtop.recipes.search import MAX_VERIFY_REPLICATES, MIN_VERIFY_REPLICATES

        if not MIN_VERIFY_REPLICATES <= args.replicates <= MAX_VERIFY_REPLICATES:
            raise BadValue(f"--replicates {args.replicates}: give {MIN_VERIFY_REPLICATES} to "
                           f"{MAX_VERIFY_REPLICATES} (fewer runs can never pass the rank test)")
        search = dataclasses.replace(search, replicates=args.replicates)
    prior = read_prior(args.resume, search) if args.resume is not None else []
    recipe = search.recipe(Arm(BASE, {}))  # the session's load and tables
    step = search.warmup + search.load.duration
    budget = " and ".join(
        ([f"{search.trials} trials"] if search.trials is not None else [])
        + ([f"{search.minutes:g} minutes"] if search.minutes is not None else []))
    console.print(
        f"Tune {search.name}: {len(search.knobs)} knobs, {search.direction} "
        f"{'average TPS' if search.metric == 'tps' else 'latency'} at {search.threads} "
        f"threads; budget {budget} (each trial at least {short_duration(step)}), then "
        f"{search.candidates} candidates x {search.replicates} rounds against the baseline "
        f"(at least {short_duration((search.candidates + 1) * search.replicates * step)})"
        + (f"; resuming {len(prior)} trials of {args.resume}" if args.resume else ""),
        highlight=False, markup=False)
    ns = argparse.Namespace(**vars(args), markdown=None, client_tables="shared")
    options = dataclasses.replace(recipe_options(ns, recipe), checks=(search.check_server,))
    return run_session(RunRequest(options, tune=search, resume=args.resume), console)


def run_session(request: RunRequest, console: Console) -> int:
    """Build the session the request's options ask for and run it in its front end:
    headless in this process, the live screen with the session in a process of its own (so
    no sample waits for paint)."""
    from knobtop.headless import ConsoleFeedback

    options = request.options
    if options.headless:
        import contextlib

        from knobtop.session.build import build_session

        with contextlib.ExitStack() as stack:
            others = {name: stack.enter_context(build_session(o, ConsoleFeedback(console)))
                      for name, o in options.targets}
            live = stack.enter_context(build_session(options, ConsoleFeedback(console)))
            code = headless(request, live.session, console,
                            {n: t.session for n, t in others.items()})
            console.print(f"Journal: {live.journal_path}", markup=False)
        return code
    from knobtop.session.process import session_process

    def screen_imports() -> None:
        import knobtop.ui.app  # noqa: F401 - while the session's process builds its session

    with session_process(options, ConsoleFeedback(console), screen_imports) as remote:
        targets = {name: remote.session.view(name) for name in remote.session.ready.targets}
        code = live_screen(request, remote.session, console, targets)
        console.print(f"Journal: {remote.journal_path}", markup=False)
    return code


def headless(request: RunRequest, session: Session, console: Console,
             others: dict[str, Session] | None = None) -> int:
    """Headless recording, with or without a recipe (and its further targets' sessions);
    the exit code."""
    import asyncio

    options = request.options
    from knobtop.headless import run_headless, run_recipe_headless
    from knobtop.session.targets import Targets

    if request.tune is not None:
        from knobtop.headless import run_tune_headless

        return asyncio.run(run_tune_headless(session, request.tune, console, request.resume))
    recipe = request.recipe
    if recipe is not None:
        group = Targets(session, others) if others else None
        if group is not None:  # the recipe's run drives them beside its own server
            session.runs.attach({n: p for n, p in group.ports.items() if n})
        code, results = asyncio.run(run_recipe_headless(session, recipe, console, group))
        write_markdown(request.markdown, results, console)
        return code
    assert options.duration is not None  # session_options refuses --headless without it
    return asyncio.run(run_headless(session, options.duration, options.changes,
                                    options.start_load, console, allow_reach=options.allow_reach))


def live_screen(request: RunRequest, session: SessionPort, console: Console,
                targets: Mapping[str, SessionPort] | None = None) -> int:
    """The live screen on a session, with or without a recipe (and its further servers'
    sessions); the exit code."""
    from knobtop.ui.app import KnobtopApp

    recipe = request.recipe

    if request.tune is not None:
        app = KnobtopApp(session, tune=request.tune, resume=request.resume, config=ui_config(),
                         realtime=True)
    elif recipe is None:
        app = KnobtopApp(session, start_load=request.options.start_load, config=ui_config(),
                         realtime=True)
    else:
        app = KnobtopApp(session, recipe=recipe, config=ui_config(), targets=targets,
                         realtime=True)
    try:
        app.run()
    finally:
        if app.runner is not None:
            app.runner.stop("quit")  # no-op after a normal quit
    from knobtop.recipes.orders import TuneReport

    tuned = app.run_report
    if isinstance(tuned, TuneReport):  # the screen is gone: the tune's tables stay on the terminal
        from knobtop.analysis.tune import trials_table, verification_table

        if tuned.trials:
            console.print(trials_table(tuned.spec, tuned.trials))
        if tuned.verification is not None:
            console.print(verification_table(tuned.verification))
            console.print(tuned.verification.line(), highlight=False, markup=False)
    if recipe is not None:
        # The screen is gone: the results stay on the terminal (the table `run` prints
        # headless; arm names are the recipe's words, never markup).
        from knobtop.analysis.seedtables import run_renderable

        results = app.recipe_results or recipe_results_so_far(app)
        if results is not None:
            console.print(run_renderable(results))
            write_markdown(request.markdown, results, console)
    if app.run_outcome is not None:  # the same exit code as headless (recipes/outcome.py)
        return app.run_outcome.code
    return app.return_code or 0


def write_markdown(path: Path | None, results: Results | None, console: Console) -> None:
    """`knobtop run --markdown FILE`: the results table as Markdown (none: nothing)."""
    if path is None or results is None:
        return
    from knobtop.analysis.seedtables import run_markdown

    path.write_text(run_markdown(results))
    console.print(f"Markdown: {path}", markup=False)
