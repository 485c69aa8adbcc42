"""Reading a recipe file: every key of the format checked, with a fix for each refusal.

A recipe is a TOML file (``experiments/README.md`` documents every key with a complete,
annotated example; ``experiments/*.toml`` are the bundled ones)::

    name = "doublewrite"                  # required: letters, digits, . _ -
    description = "What it shows"         # required
    [applies]                             # optional; absent = any server
    mariadb = ">=10.1"                    # clauses >=, >, <=, <, ==, comma-separated; "*" = any
    mysql = ">=5.5, <8.0.30"
    ndb = ">=7.0"                         # an SQL node of an NDB Cluster (its NDB version)
    why = "shown when a server is refused"
    [load]
    workload = "oltp_read_write"          # one of WORKLOADS, or an absolute .lua path
    threads = [4, 8, 16]                  # a sweep (list) or one int
    duration = 60                         # measured seconds per step, >= 5
    warmup = 10                           # seconds run first and trimmed, >= 0
    tables = 4
    table_size = 100000
    [wait]                                # optional gates before each measured step
    history_below = 10000
    [run]
    replicates = 3
    order = "counterbalanced"             # A B, B A, B A, A B (Williams for 3+ arms);
                                          # or "abba", "williams", "interleaved", "random"
    level_order = "ascending"             # or "counterbalanced", "random" (per round)
    [[arm]]                               # two or more; the first is the baseline
    name = "A"
    knobs = { innodb_doublewrite = "ON" }
    [[arm]]
    name = "B"
    knobs = { innodb_doublewrite = "OFF" }

Rules a file is checked against by ``load_recipe`` (each refusal is a ``RecipeError``
naming the file, the dotted key, e.g. ``arm[1].knobs.innodb_doublewrite``, and a fix):
unknown keys (with the close match suggested), wrong types, out-of-range numbers,
fewer than two arms, duplicate arm names, an arm without knobs, arms that name different
knobs (every arm names the same knobs: the runner sets each of them for each arm, so
nothing is left "unchanged" by accident), bad version constraints, unknown workloads.

Versions in ``[applies]`` are compared at the precision written: ``<10.6`` refuses every
10.6.x, ``<=10.6`` and ``==10.6`` accept every 10.6.x, ``>=10.5.5`` compares all three parts.

An SQL node of an NDB Cluster (a MySQL server whose catalog has DiskPageBufferMemory) is
both ``ndb`` (compared with its NDB version, ``ndb_version_string``) and ``mysql``
(compared with the server version): an InnoDB recipe for ``mysql`` runs there too.

``check_for_server`` then checks the recipe against one server's catalog: the
``[applies]`` table, that every knob exists there, and every value against the knob's
type and range (``knobs.validate``); it returns warnings for things that run but may
mislead (ignored knobs, knobs of unknown static-ness, one replicate, ...).
``static_knobs`` names the knobs that need a restart to change.

Schedule: for each replicate round, for each arm (counterbalanced by default: A B, B A,
B A, A B for two arms, a Williams square for more; or in recipe order, or shuffled per
round with ``random.Random(seed)``), for each thread count (as written, or reversed every
other round, or shuffled). Arms are the outer loop inside a round so
that a static knob costs one restart per arm visit, not one per thread count.

Semantics the runner follows (documented here so recipes and runner agree): the
``history_below``, ``dirty_*`` and ``checkpoint_age_below`` gates are waited for with the
load stopped, before each step starts; then the load runs ``warmup`` seconds; with
``plateau = true`` it keeps running until TPS is steady (``[steady]``), then the measured
``duration`` follows. Each wait gives up after ``timeout`` seconds, is journaled as a
timeout, and the step is measured anyway.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import NamedTuple

from knobtop.bundled import bundled_dir
from knobtop.load.base import LoadError
from knobtop.recipes.kinds import KINDS, NOT_IN_FILES
from knobtop.recipes.kinds.timeline import ACTION_KEYS, TIMELINE_KEYS
from knobtop.recipes.model import (
    APPLIES_FLAVORS,
    DEFAULT_TIMELINE_METRICS,
    MAX_REPLICATES,
    MIN_DURATION,
    TIMELINE_METRICS,
    Arm,
    Constraint,
    Curve,
    Recipe,
    RecipeError,
    Timeline,
)
from knobtop.recipes.read_arms import ArmReader
from knobtop.recipes.read_load import README, LoadTable
from knobtop.recipes.schedule import LEVEL_ORDERS, ORDERS
from knobtop.tomlcheck import Table, close_hint, parse, read_text_file, too_deep

# The repository root's experiments/ (package data when installed).
BUNDLED_DIR = bundled_dir("experiments")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")


# --------------------------------------------------------------------------- TOML reader

_TOP_KEYS = ("name", "description", "applies", "load", "wait", "steady", "run", "arm",
             "timeline", "soak", "curve", "targets", "allow", "conditions")
_TIMELINE_KEYS, _ACTION_KEYS = TIMELINE_KEYS, ACTION_KEYS  # (kinds/timeline.py's)
_APPLIES_KEYS = (*APPLIES_FLAVORS, "why")
_RUN_KEYS = ("replicates", "order", "level_order", "seed", "pause", "calibrate", "until_ci",
             "max_replicates", "kind", "timed")


class _Run(NamedTuple):
    """The checked [run] table (None: not given)."""

    replicates: int | None
    order: str
    level_order: str
    seed: int | None
    pause: float | None
    calibrate: int | None
    until_ci: float | None
    max_replicates: int | None
    kind: str
    timed: bool


class _Reader(ArmReader):
    """Checks one parsed recipe document and builds a Recipe, raising RecipeError: the
    sections of its own here, [load], [wait], [steady] (read_load.py) and [[arm]],
    [targets], [allow] (read_arms.py) by the classes it builds on."""

    error_type = RecipeError

    def recipe(self, doc: Table, path: Path) -> Recipe:
        """A Recipe from the whole document, each section checked in turn."""
        self.check_keys(doc, _TOP_KEYS, "")
        allow_reach = self.allow(doc)
        name = self.recipe_name(doc)
        description = self.req_string(
            doc, "description", "", '"what the experiment shows and what to watch"'
        )
        applies, why = self.applies(doc)
        run = self.table(doc, "run") or {}
        spec = self.load_table(doc) if run.get("kind") != "curve" else self.no_load(doc)
        waits = self.waits(self.table(doc, "wait") or {})
        steady = self.steady(self.table(doc, "steady") or {}, waits)
        self.check_keys(run, _RUN_KEYS, "run")
        r = self.run_keys(run, spec)
        arms, own = self.arms_or_timeline(doc, spec, r.kind)
        timeline = own if isinstance(own, Timeline) else None
        curve = own if isinstance(own, Curve) else None
        targets = self.targets(doc, arms, own is not None)
        recipe = Recipe(
            path=path,
            name=name,
            description=description,
            applies=applies,
            why=why,
            load=spec.load,
            threads=spec.threads,
            warmup=spec.warmup,
            waits=waits,
            steady=steady,
            replicates=3 if r.replicates is None else r.replicates,
            order=r.order,
            level_order=r.level_order,
            seed=1 if r.seed is None else r.seed,
            pause=0.0 if r.pause is None else r.pause,
            arms=arms,
            timeline=timeline,
            kind=r.kind,
            curve=curve,
            timed=r.timed,
            calibrate=r.calibrate or 0,
            until_ci=r.until_ci,
            max_replicates=r.max_replicates,
            targets=targets,
            allow_reach=allow_reach,
            needs=self.conditions(doc),
        )
        self.adaptive(recipe, "until_ci" in run, "max_replicates" in run)
        self.loads_fit(recipe)
        return recipe

    def recipe_name(self, doc: Table) -> str:
        """``name``: a short name of letters, digits, '.', '_' and '-'."""
        name = self.req_string(doc, "name", "", '"doublewrite" (letters, digits, . _ -)')
        if not _NAME.match(name):
            raise self.error(
                "name",
                f"{name!r} is not a recipe name",
                "use letters, digits, '.', '_' and '-' (up to 64), e.g. "
                f'name = "{_slug(name) or "my-recipe"}"',
            )
        return name

    def load_table(self, doc: Table) -> LoadTable:
        """``[load]``, which every recipe has."""
        load = self.table(doc, "load")
        if load is None:
            raise self.error(
                "load",
                "missing [load] table",
                f'add [load] with workload = "oltp_read_write", threads, duration (see {README})',
            )
        return self.load(load)

    def no_load(self, doc: Table) -> LoadTable:
        """A curve's: no [load] (its probe is its work); the fields a Recipe holds."""
        if "load" in doc:
            raise self.error("load", "a curve runs its probe, not a load",
                             "remove [load]: the probe's table is [curve] rows")
        return self.load({"workload": "oltp_read_only", "threads": [1],
                          "duration": MIN_DURATION})

    def run_keys(self, run: Table, spec: LoadTable) -> _Run:
        """``[run]`` (its keys already checked): replicates, their order, and the kind."""
        replicates = self.integer(run, "replicates", "run", lo=1, hi=MAX_REPLICATES)
        order = self.choice(run, "order", ORDERS, "counterbalanced: A B, B A, B A, A B ... "
                            "for two arms, a Williams square for more")
        level_order = self.choice(run, "level_order", LEVEL_ORDERS, "the thread sweep as "
                                  "written, reversed every other round, or shuffled")
        seed = self.integer(run, "seed", "run", lo=0, hi=2**63 - 1)
        pause = self.number(run, "pause", "run", lo=0.0, hi=3600.0, lo_open=False)
        calibrate = self.integer(run, "calibrate", "run", lo=0, hi=MAX_REPLICATES)
        until_ci = self.number(run, "until_ci", "run", lo=0.0, hi=1.0, lo_open=True)
        max_replicates = self.integer(run, "max_replicates", "run", lo=1, hi=MAX_REPLICATES)
        given = run.get("kind")
        if isinstance(given, str) and given in NOT_IN_FILES:  # a tune's (kinds/tune.py)
            raise self.error("run.kind", f"a recipe file is not of kind {given!r}: its "
                             "steps come as it goes, from a search file",
                             f"run {NOT_IN_FILES[given]}, or write kind = "
                             + " or ".join(f'"{k}"' for k in KINDS))
        kind = self.choice(run, "kind", tuple(KINDS),
                           ", or ".join(k.about for k in KINDS.values()))
        timed = bool(self.boolean(run, "timed", "run"))
        if timed and KINDS[kind].one_load:
            raise self.error("run.timed", f"a {kind}'s load runs once, from start to end",
                             "remove timed (it times each step of a recipe of arms)")
        if spec.load.workload == "linkbench" and not KINDS[kind].one_load:
            # Each window a run of its own: its per-operation percentiles are the driver's
            # over the whole window, not a median of per-second ones (issue 20).
            timed = True
        return _Run(replicates, order, level_order, seed, pause, calibrate, until_ci,
                    max_replicates, kind, timed)

    def arms_or_timeline(self, doc: Table, spec: LoadTable, kind: str
                         ) -> tuple[tuple[Arm, ...], Timeline | Curve | None]:
        """What the recipe's kind reads (kinds/): ``[[arm]]`` of a recipe of arms; its own
        table (``[timeline]``, ``[soak]``) of a kind that runs one load as one arm; a
        curve's ``[curve]`` (an arm per value)."""
        for other in KINDS.values():
            if other.section is not None and other.name != kind and other.section in doc:
                raise self.error(other.section,
                                 f"a [{other.section}] table in a recipe of {kind}",
                                 f'add kind = "{other.name}" to [run], or remove '
                                 f"[{other.section}]")
        return KINDS[kind].read(self, doc, spec)

    def loads_fit(self, recipe: Recipe) -> None:
        """The load of every step, [load]'s and each arm's own, passes LoadSpec's checks."""
        try:
            recipe.load_spec(max(recipe.threads), recipe.warmup + recipe.load.duration).check()
        except LoadError as exc:  # a rule of LoadSpec not mirrored above
            raise self.error("load", str(exc), f"correct [load] (see {README})") from None
        for i, arm in enumerate(recipe.arms):
            if "instances" in arm.load:
                self.instances_fit(arm.load["instances"], recipe.threads,
                                   f"arm[{i}].load.instances")
            try:
                recipe.load_spec(max(recipe.threads), recipe.load.duration, arm).check()
            except LoadError as exc:
                raise self.error(f"arm[{i}].load", str(exc),
                                 f"correct the arm's load (see {README})") from None

    def metric_names(self, table: Table, p: str) -> tuple[str, ...]:
        """``metrics``: names among TIMELINE_METRICS (the defaults when not given)."""
        metrics = table.get("metrics", list(DEFAULT_TIMELINE_METRICS))
        if not isinstance(metrics, list) or not metrics or not all(
                isinstance(m, str) for m in metrics):
            raise self.wrong_type(f"{p}.metrics", "a list of metric names", metrics,
                                  'write metrics = ["load_tps", "hit_ratio"]')
        for i, name in enumerate(metrics):
            if name not in TIMELINE_METRICS:
                raise self.error(f"{p}.metrics[{i}]", f"unknown metric {name!r}",
                                 f"{close_hint(name, TIMELINE_METRICS)}use "
                                 f"{', '.join(TIMELINE_METRICS)}")
        return tuple(metrics)

    def seconds_list(self, table: Table, key: str, p: str, most: float) -> tuple[float, ...]:
        """A non-empty ascending list of seconds in (0, most]."""
        fix = f"write {key} = [60, 300, 600] (seconds from the load's start, up to {most:g})"
        value = table.get(key)
        if value is None:
            raise self.error(f"{p}.{key}", f"missing {key}", fix)
        if not isinstance(value, list) or not value:
            raise self.wrong_type(f"{p}.{key}", "a list of seconds", value, fix)
        out: list[float] = []
        for i, item in enumerate(value):
            if isinstance(item, bool) or not isinstance(item, int | float):
                raise self.wrong_type(f"{p}.{key}[{i}]", "a number of seconds", item, fix)
            if not 0 < item <= most or (out and item <= out[-1]):
                raise self.error(f"{p}.{key}[{i}]", f"{item:g} s is out of order or outside "
                                 f"the {most:g} s timeline", fix)
            out.append(float(item))
        return tuple(out)

    def applies(self, doc: Table) -> tuple[dict[str, str], str]:
        table = self.table(doc, "applies")
        if table is None:
            return {}, ""
        self.check_keys(table, _APPLIES_KEYS, "applies")
        out: dict[str, str] = {}
        for flavor in [key for key in table if key in APPLIES_FLAVORS]:  # file order
            text = self.string(table, flavor, "applies", '">=10.1" (or "*" for any version)')
            if text is None:
                continue
            try:
                Constraint.parse(text)
            except ValueError as exc:
                raise self.error(
                    f"applies.{flavor}",
                    f"version constraint {text!r}: {exc}",
                    'write clauses such as ">=10.2.2, <10.6" (operators >=, >, <=, <, ==; '
                    'comma between clauses), or "*" for any version',
                ) from None
            out[flavor] = text
        why = self.string(table, "why", "applies", '"the knob was removed in MariaDB 10.6"')
        if not out:
            raise self.error(
                "applies",
                "lists no flavor, so it would refuse every server",
                'add mariadb = ">=10.1", mysql = ">=5.7" and/or ndb = ">=7.0", '
                "or remove [applies] to run anywhere",
            )
        return out, why or ""

    def adaptive(self, recipe: Recipe, until: bool, cap: bool) -> None:
        """``until_ci`` and ``max_replicates`` go together, the cap above the replicates."""
        if until and not cap:
            raise self.error("run.until_ci", "until_ci needs a cap on the rounds it may add",
                             f"add max_replicates = {2 * recipe.replicates} to [run]")
        if cap and not until:
            raise self.error("run.max_replicates", "max_replicates only caps until_ci",
                             "add until_ci = 0.05 to [run] (keep adding rounds until every "
                             "cell's CI is within +-5%), or delete max_replicates")
        if recipe.max_replicates is not None and recipe.max_replicates <= recipe.replicates:
            raise self.error("run.max_replicates",
                             f"max_replicates ({recipe.max_replicates}) must be more than "
                             f"replicates ({recipe.replicates}), or no round could be added",
                             f"make max_replicates at least {recipe.replicates + 1}")


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")[:64]


# --------------------------------------------------------------------------- loading


def bundled_recipes() -> list[Path]:
    """The bundled recipes (``experiments/*.toml``, shipped inside the package), sorted by
    name."""
    try:
        return sorted(p for p in BUNDLED_DIR.glob("*.toml") if p.is_file())
    except OSError:
        return []


def _resolve(path: Path | str) -> Path:
    """A path as given; a bare NAME (no '/', no '.toml') is a bundled recipe's name."""
    name = str(path)  # the command line hands a Path: `knobtop run doublewrite`
    if "/" not in name and not name.endswith(".toml"):
        bundled = BUNDLED_DIR / f"{name}.toml"
        if bundled.is_file():
            return bundled
    return Path(path).expanduser()


def load_recipe(path: Path | str) -> Recipe:
    """Read and check one recipe file on its own (no server involved).

    ``path`` is a file, or the NAME of a bundled recipe ("doublewrite").  Raises
    RecipeError naming the file, the dotted key and a fix.
    """
    resolved = _resolve(path)
    shown = str(resolved)
    bundled = ", ".join(p.stem for p in bundled_recipes())
    try:
        text, _mode = read_text_file(
            resolved, lambda key, problem, fix: RecipeError(shown, key, problem, fix),
            "recipe file", "give a .toml recipe file")
    except FileNotFoundError:
        fix = "give the path of a recipe .toml file"
        if bundled:
            fix += f", or the name of a bundled one: {bundled}"
        raise RecipeError(shown, None, "recipe file not found", fix) from None
    doc = parse(text, lambda key, problem, fix: RecipeError(shown, key, problem, fix), README)
    try:
        return _Reader(shown, text).recipe(doc, resolved)
    except RecursionError:  # a check or a message walking a deeply nested value
        raise too_deep(lambda key, problem, fix: RecipeError(shown, key, problem, fix)) from None


__all__ = ["BUNDLED_DIR", "README", "bundled_recipes", "load_recipe"]
