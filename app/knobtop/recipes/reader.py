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
# Over 600 lines: the reader of every key of the recipe format, each with its own fix line
# (the reading, parsing and generic checks are tomlcheck.py's); issue 38 moves its typed
# accessors into tomlcheck, shared with profiles.py's reader.

from __future__ import annotations

import difflib
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from knobtop.bundled import bundled_dir
from knobtop.conditions import Needs
from knobtop.load.base import (
    ENGINE_NAME,
    MAX_INSTANCES,
    RAND_TYPES,
    TIME_CAP,
    WORKLOADS,
    LoadError,
    LoadSpec,
    OptionRefused,
)
from knobtop.recipes.kinds import KINDS
from knobtop.recipes.kinds.timeline import ACTION_KEYS, TIMELINE_KEYS
from knobtop.recipes.model import (
    APPLIES_FLAVORS,
    DEFAULT_STEADY,
    DEFAULT_TIMELINE_METRICS,
    DEFAULT_TIMEOUT,
    MAX_REPLICATES,
    MAX_THREADS,
    MIN_DURATION,
    TIMELINE_METRICS,
    Arm,
    Constraint,
    Curve,
    Recipe,
    RecipeError,
    Steady,
    Target,
    Timeline,
    Waits,
    parse_bytes,
)
from knobtop.recipes.schedule import LEVEL_ORDERS, ORDERS
from knobtop.server import flavors
from knobtop.server.ndb import PARAMETER as NDB_PARAMETER
from knobtop.server.policy import risk_of
from knobtop.tomlcheck import Reader, Table, parse, read_text_file, too_deep

# The repository root's experiments/ (package data when installed).
BUNDLED_DIR = bundled_dir("experiments")
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
_ARM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,15}\Z")
_TARGET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}\Z")  # a lab --name too
_KNOB_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}\Z")
README = "experiments/README.md"


# --------------------------------------------------------------------------- TOML reader

_TOP_KEYS = ("name", "description", "applies", "load", "wait", "steady", "run", "arm",
             "timeline", "soak", "curve", "targets", "allow", "conditions")
_ALLOW_KEYS = ("reach",)
CONDITIONS_KEYS = ("sync_ms_min", "read_ms_min", "data_over_pool_min", "data_over_pool_max",
                   "cpus_min", "client_apart", "why")
_TARGET_KEYS = ("profile", "options")
_TIMELINE_KEYS, _ACTION_KEYS = TIMELINE_KEYS, ACTION_KEYS  # (kinds/timeline.py's)
_APPLIES_KEYS = (*APPLIES_FLAVORS, "why")
_LOAD_KEYS = (
    "workload",
    "threads",
    "duration",
    "warmup",
    "tables",
    "table_size",
    "rate",
    "rand_type",
    "percentile",
    "prepared",
    "engine",
    "options",
    "instances",
    "table_options",
    "maxid1",  # LinkBench (issue 20): its graph's nodes, requesters and loaders
    "requesters",
    "loaders",
)
LINKBENCH_KEYS = ("maxid1", "requesters", "loaders")
# What an arm may run differently from [load] (arm.load = { engine = "RocksDB" }).
ARM_LOAD_KEYS = ("workload", "engine", "table_options", "options", "instances")
_WAIT_KEYS = (
    "history_below",
    "dirty_at_lwm",
    "dirty_pct_below",
    "checkpoint_age_below",
    "plateau",
    "timeout",
)
_STEADY_KEYS = ("window", "cv_max", "slope_max", "judge")
JUDGES = ("noise", "cv")
_RUN_KEYS = ("replicates", "order", "level_order", "seed", "pause", "calibrate", "until_ci",
             "max_replicates", "kind", "timed")
_ARM_KEYS = ("name", "knobs", "load", "target")


class _Load(NamedTuple):
    """The checked [load] table."""

    workload: str
    threads: tuple[int, ...]
    duration: int
    warmup: int
    tables: int
    table_size: int
    rate: int
    rand_type: str
    percentile: int
    prepared: bool
    engine: str
    options: tuple[tuple[str, str], ...]
    instances: int
    table_options: tuple[tuple[str, str], ...]
    loaders: int = 0


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


class _Reader(Reader):
    """Checks one parsed recipe document and builds a Recipe, raising RecipeError."""

    error_type = RecipeError
    allow_reach: frozenset[str] = frozenset()  # [allow] reach, once read (allow)
    # [load]'s workload, once read: an arm's load options are checked against it unless
    # the arm names a workload of its own
    load_workload: str = WORKLOADS[0]

    def allow(self, doc: Table) -> tuple[str, ...]:
        """``[allow] reach = ["general_log"]``: the reach variables (server.policy) the file
        may set, each checked to be one; read before any knob."""
        table = self.table(doc, "allow") or {}
        self.check_keys(table, _ALLOW_KEYS, "allow")
        raw = table.get("reach", [])
        fix = 'write reach = ["general_log"] (the variables\' names, as SHOW VARIABLES prints)'
        if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
            raise self.wrong_type("allow.reach", "a list of variable names", raw, fix)
        names: list[str] = []
        for i, name in enumerate(raw):
            risk = risk_of(name)
            if not _KNOB_NAME.match(risk.name) or not risk.reach:
                raise self.error(f"allow.reach[{i}]", f"{name!r} is not a reach variable "
                                 "(one that names a file, opens the network, loads a plugin, "
                                 "runs SQL, changes logins or starts writing files)",
                                 "remove it: other variables need no permission")
            if risk.name not in names:
                names.append(risk.name)
        self.allow_reach = frozenset(names)
        return tuple(names)

    def check_reach(self, knob: str, dotted: str) -> None:
        """A reach variable (server.policy) only where ``[allow] reach`` lists it."""
        risk = risk_of(knob)
        if risk.reach and risk.name not in self.allow_reach:
            raise self.error(f"{dotted}{self.line_of(knob)}",
                             f"{risk.name} {risk.what}: a file may not set it without "
                             "permission",
                             f'list it under [allow] reach = ["{risk.name}"] in the file and '
                             "run with --allow-reach, or remove it")

    def table(self, doc: Table, key: str, prefix: str = "") -> Table | None:
        if key not in doc:
            return None
        value = doc[key]
        if not isinstance(value, dict):
            dotted = self.dotted(prefix, key)
            raise self.wrong_type(dotted, "a table", value, f"write it as a [{dotted}] table")
        return value

    def string(self, table: Table, key: str, prefix: str, example: str) -> str | None:
        if key not in table:
            return None
        value = table[key]
        dotted = self.dotted(prefix, key)
        if not isinstance(value, str):
            raise self.wrong_type(dotted, "a string", value, f"write {key} = {example}")
        if not value.strip():
            raise self.error(dotted, "is empty", f"write {key} = {example}")
        return value.strip()

    def choice(self, run: Table, key: str, allowed: tuple[str, ...], means: str,
               prefix: str = "run") -> str:
        """``[prefix] key``, one of ``allowed`` (the first is the default)."""
        choices = " or ".join(f'"{o}"' for o in allowed)
        value = self.string(run, key, prefix, choices) or allowed[0]
        if value not in allowed:
            raise self.error(f"{prefix}.{key}", f"unknown {key.replace('_', ' ')} {value!r}",
                             f"write {key} = {choices} ({means})")
        return value

    def req_string(self, table: Table, key: str, prefix: str, example: str) -> str:
        value = self.string(table, key, prefix, example)
        if value is None:
            raise self.error(self.dotted(prefix, key), f"missing {key}", f"add {key} = {example}")
        return value

    def integer(
        self, table: Table, key: str, prefix: str, *, lo: int, hi: int, unit: str = ""
    ) -> int | None:
        if key not in table:
            return None
        value = table[key]
        dotted = self.dotted(prefix, key)
        what = f" ({unit})" if unit else ""
        example = f"write {key} = {max(lo, min(hi, 10))}{what}"
        if isinstance(value, bool) or not isinstance(value, int):
            if isinstance(value, float) and value.is_integer():
                fix = f"write {key} = {int(value)} (a whole number, no decimal point)"
            elif isinstance(value, str) and value.strip().isdigit():
                fix = f"write {key} = {value.strip()} (a number, no quotes)"
            else:
                fix = f"{example}, a whole number"
            raise self.wrong_type(dotted, "an integer", value, fix)
        if not lo <= value <= hi:
            raise self.error(
                dotted, f"{value} is out of range {lo}-{hi}", f"use a value from {lo} to {hi}"
            )
        return value

    def number(
        self, table: Table, key: str, prefix: str, *, lo: float, hi: float, lo_open: bool
    ) -> float | None:
        if key not in table:
            return None
        value = table[key]
        dotted = self.dotted(prefix, key)
        if isinstance(value, bool) or not isinstance(value, int | float):
            if isinstance(value, str):
                fix = f"write {key} = {value.strip()} (a number, no quotes)"
            else:
                fix = f"write {key} = a number"
            raise self.wrong_type(dotted, "a number", value, fix)
        number = float(value)
        low_ok = number > lo if lo_open else number >= lo
        if not math.isfinite(number) or not low_ok or number > hi:
            side = "more than" if lo_open else "at least"
            raise self.error(
                dotted,
                f"{value} is out of range",
                f"use a number {side} {_fmt(lo)} and at most {_fmt(hi)}",
            )
        return number

    def conditions(self, doc: Table) -> Needs:
        """``[conditions]``: what the effect needs of the box (server.conditions.Needs),
        checked against the probe's figures before the first step."""
        p = "conditions"
        table = self.table(doc, p) or {}
        self.check_keys(table, CONDITIONS_KEYS, p)

        def ms(key: str) -> float | None:
            return self.number(table, key, p, lo=0.0, hi=1000.0, lo_open=True)

        def ratio(key: str) -> float | None:
            return self.number(table, key, p, lo=0.0, hi=1000.0, lo_open=True)

        low, high = ratio("data_over_pool_min"), ratio("data_over_pool_max")
        if low is not None and high is not None and low > high:
            raise self.error(f"{p}.data_over_pool_min", f"{_fmt(low)} is above "
                             f"data_over_pool_max = {_fmt(high)}", "give a min below the max")
        return Needs(
            sync_ms_min=ms("sync_ms_min"), read_ms_min=ms("read_ms_min"),
            data_over_pool_min=low, data_over_pool_max=high,
            cpus_min=self.integer(table, "cpus_min", p, lo=1, hi=4096),
            client_apart=bool(self.boolean(table, "client_apart", p)),
            why=self.string(table, "why", p, '"the commit\'s redo sync"') or "")

    def boolean(self, table: Table, key: str, prefix: str) -> bool | None:
        if key not in table:
            return None
        value = table[key]
        if not isinstance(value, bool):
            fix = f"write {key} = true or {key} = false (no quotes)"
            raise self.wrong_type(self.dotted(prefix, key), "a boolean", value, fix)
        return value

    # ---- sections

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
            workload=spec.workload,
            threads=spec.threads,
            duration=spec.duration,
            warmup=spec.warmup,
            tables=spec.tables,
            table_size=spec.table_size,
            rate=spec.rate,
            rand_type=spec.rand_type,
            percentile=spec.percentile,
            prepared=spec.prepared,
            engine=spec.engine,
            options=spec.options,
            instances=spec.instances,
            table_options=spec.table_options,
            loaders=spec.loaders,
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

    def load_table(self, doc: Table) -> _Load:
        """``[load]``, which every recipe has."""
        load = self.table(doc, "load")
        if load is None:
            raise self.error(
                "load",
                "missing [load] table",
                f'add [load] with workload = "oltp_read_write", threads, duration (see {README})',
            )
        return self.load(load)

    def no_load(self, doc: Table) -> _Load:
        """A curve's: no [load] (its probe is its work); the fields a Recipe holds."""
        if "load" in doc:
            raise self.error("load", "a curve runs its probe, not a load",
                             "remove [load]: the probe's table is [curve] rows")
        return self.load({"workload": "oltp_read_only", "threads": [1],
                          "duration": MIN_DURATION})

    def run_keys(self, run: Table, spec: _Load) -> _Run:
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
        kind = self.choice(run, "kind", tuple(KINDS),
                           ", or ".join(k.about for k in KINDS.values()))
        timed = bool(self.boolean(run, "timed", "run"))
        if timed and KINDS[kind].one_load:
            raise self.error("run.timed", f"a {kind}'s load runs once, from start to end",
                             "remove timed (it times each step of a recipe of arms)")
        if spec.workload == "linkbench" and not KINDS[kind].one_load:
            # Each window a run of its own: its per-operation percentiles are the driver's
            # over the whole window, not a median of per-second ones (issue 20).
            timed = True
        return _Run(replicates, order, level_order, seed, pause, calibrate, until_ci,
                    max_replicates, kind, timed)

    def arms_or_timeline(self, doc: Table, spec: _Load, kind: str
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
            recipe.load_spec(max(recipe.threads), recipe.warmup + recipe.duration).check()
        except LoadError as exc:  # a rule of LoadSpec not mirrored above
            raise self.error("load", str(exc), f"correct [load] (see {README})") from None
        for i, arm in enumerate(recipe.arms):
            if "instances" in arm.load:
                self.instances_fit(arm.load["instances"], recipe.threads,
                                   f"arm[{i}].load.instances")
            try:
                recipe.load_spec(max(recipe.threads), recipe.duration, arm).check()
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
                close = difflib.get_close_matches(name, TIMELINE_METRICS, n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}? " if close else ""
                raise self.error(f"{p}.metrics[{i}]", f"unknown metric {name!r}",
                                 f"{hint}use {', '.join(TIMELINE_METRICS)}")
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

    def load(self, table: Table) -> _Load:
        p = "load"
        self.check_keys(table, _LOAD_KEYS, p)
        workload = self.workload(self.req_string(table, "workload", p, '"oltp_read_write"'), p)
        self.load_workload = workload
        duration = self.integer(table, "duration", p, lo=MIN_DURATION, hi=TIME_CAP, unit="seconds")
        if duration is None:
            raise self.error(
                f"{p}.duration", "missing duration", "add duration = 60 (measured seconds per step)"
            )
        warmup = self.integer(table, "warmup", p, lo=0, hi=TIME_CAP, unit="seconds")
        tables = self.integer(table, "tables", p, lo=1, hi=100_000)
        table_size = self.integer(table, "table_size", p, lo=1, hi=10**12)
        rate = self.integer(table, "rate", p, lo=0, hi=10**9, unit="transactions per second")
        percentile = self.integer(table, "percentile", p, lo=1, hi=100)
        rand_type = self.string(table, "rand_type", p, '"uniform"') or "uniform"
        prepared = self.boolean(table, "prepared", p)
        engine = self.engine(table, p)
        if rand_type not in RAND_TYPES:
            raise self.error(
                f"{p}.rand_type",
                f"unknown rand_type {rand_type!r}",
                f"use one of {', '.join(RAND_TYPES)}",
            )
        instances = self.integer(table, "instances", p, lo=1, hi=MAX_INSTANCES) or 1
        loaders = 0
        if workload == "linkbench":  # maxid1 nodes, requesters and loaders (issue 20)
            table_size, loaders, threads = self.linkbench(table, table_size, p)
        else:
            for key in LINKBENCH_KEYS:
                if key in table:
                    raise self.error(f"{p}.{key}", f"{key} is LinkBench's",
                                     'remove it, or write workload = "linkbench"')
            threads = self.threads(table)
        self.instances_fit(instances, threads, f"{p}.threads")
        spec = LoadSpec()
        return _Load(
            workload=workload,
            threads=threads,
            duration=duration,
            warmup=0 if warmup is None else warmup,
            tables=spec.tables if tables is None else tables,
            table_size=spec.table_size if table_size is None else table_size,
            rate=0 if rate is None else rate,
            rand_type=rand_type,
            percentile=spec.percentile if percentile is None else percentile,
            prepared=True if prepared is None else prepared,
            engine=engine,
            options=self.options(table, p, workload),
            instances=instances,
            table_options=self.table_options(table, p),
            loaders=loaders,
        )

    def linkbench(self, table: Table, table_size: int | None, p: str
                  ) -> tuple[int, int, tuple[int, ...]]:
        """LinkBench's [load]: maxid1 (its nodes; default 10,000), requesters (the request
        phase's connections, as threads) and loaders (the load phase's)."""
        if table_size is not None:
            raise self.error(f"{p}.table_size", "LinkBench's graph size is maxid1",
                             "write maxid1 = 10000 instead of table_size")
        maxid1 = self.integer(table, "maxid1", p, lo=100, hi=10**10) or 10_000
        loaders = self.integer(table, "loaders", p, lo=1, hi=16) or 0
        if "requesters" in table and "threads" in table:
            raise self.error(f"{p}.requesters", "requesters and threads are the same thing",
                             "give one of them (requesters, as LinkBench calls it)")
        threads = self.threads(table, "requesters" if "requesters" in table else "threads")
        return maxid1, loaders, threads

    def instances_fit(self, instances: int, threads: tuple[int, ...], key: str) -> None:
        if min(threads) < instances:
            raise self.error(key, f"{min(threads)} threads cannot be shared among "
                             f"{instances} instances",
                             "threads is the total of all instances on a client: give every "
                             "level at least one thread per instance")

    def engine(self, table: Table, p: str) -> str:
        engine = self.string(table, "engine", p, '"InnoDB"') or ""
        if engine and not ENGINE_NAME.fullmatch(engine):
            raise self.error(f"{p}.engine", f"{engine!r} is not a storage engine name",
                             'write engine = "InnoDB" or "RocksDB", or leave it out for the '
                             "server's default")
        return engine

    def workload(self, workload: str, p: str) -> str:
        if workload.endswith(".lua"):
            if not workload.startswith("/") or any(c.isspace() for c in workload):
                raise self.error(
                    f"{p}.workload",
                    f"custom workload {workload!r} is not an absolute path without spaces",
                    "give the absolute path of the .lua script on the client host",
                )
        elif workload not in WORKLOADS:
            close = difflib.get_close_matches(workload, WORKLOADS, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise self.error(
                f"{p}.workload",
                f"unknown workload {workload!r}",
                f"{hint}use one of {', '.join(WORKLOADS)}, or an absolute .lua path",
            )
        return workload

    def options(self, table: Table, p: str, workload: str) -> tuple[tuple[str, str], ...]:
        """``[load] options = { point_selects = 1, skip_trx = true }``: more sysbench
        arguments for ``workload``, each checked as LoadSpec.check_options checks them
        (the options ``workload`` takes, issue 36)."""
        return self.pairs(table, p, "options",
                          "options = { point_selects = 1, skip_trx = true }",
                          lambda pairs: LoadSpec(workload=workload,
                                                 options=pairs).check_options(),
                          ("on", "off"))

    def table_options(self, table: Table, p: str) -> tuple[tuple[str, str], ...]:
        """``table_options = { KEY_BLOCK_SIZE = 8, ROW_FORMAT = "COMPRESSED" }``: what
        CREATE TABLE gets, each checked as LoadSpec.check_table_options checks them."""
        return self.pairs(table, p, "table_options",
                          'table_options = { KEY_BLOCK_SIZE = 8, ROW_FORMAT = "COMPRESSED" }',
                          lambda pairs: LoadSpec(table_options=pairs).check_table_options(),
                          ("1", "0"))

    def pairs(self, table: Table, p: str, name: str, example: str,
              check: Callable[[tuple[tuple[str, str], ...]], None],
              booleans: tuple[str, str]) -> tuple[tuple[str, str], ...]:
        """A TOML table of name = plain value (true/false as ``booleans``), each pair
        checked by ``check`` (a LoadError becomes this file's error at its key)."""
        key = f"{p}.{name}"
        value = table.get(name)
        if value is None:
            return ()
        if not isinstance(value, dict):
            raise self.wrong_type(key, "a table", value, f"write {example}")
        out: list[tuple[str, str]] = []
        for item, raw in value.items():
            if isinstance(raw, bool):
                text = booleans[0] if raw else booleans[1]
            elif isinstance(raw, int | float | str):
                text = str(raw)
            else:
                raise self.wrong_type(f"{key}.{item}", "a number, string or true/false", raw,
                                      f"write {example}")
            try:
                check(((str(item), text),))
            except OptionRefused as exc:  # names its own fix
                raise self.error(f"{key}.{item}", exc.problem, exc.fix) from None
            except LoadError as exc:
                raise self.error(f"{key}.{item}", str(exc),
                                 f"correct it or remove it from {name} ({README})") from None
            out.append((str(item), text))
        return tuple(out)

    def arm_load(self, table: Table, p: str) -> dict[str, Any]:
        """``load = { engine = "RocksDB" }`` of an arm: the [load] fields it runs
        differently, checked as in [load]."""
        value = table.get("load")
        example = 'load = { engine = "RocksDB" } or load = { table_options = { ... } }'
        if value is None:
            return {}
        key = f"{p}.load"
        if not isinstance(value, dict):
            raise self.wrong_type(key, "a table", value, f"write {example}")
        self.check_keys(value, ARM_LOAD_KEYS, key)
        out: dict[str, Any] = {}
        if "workload" in value:
            out["workload"] = self.workload(
                self.req_string(value, "workload", key, '"oltp_read_only"'), key)
        if "engine" in value:
            out["engine"] = self.engine(value, key)
        if "options" in value:
            out["options"] = self.options(value, key,
                                          out.get("workload", self.load_workload))
        if "table_options" in value:
            out["table_options"] = self.table_options(value, key)
        if "instances" in value:
            out["instances"] = self.integer(value, "instances", key, lo=1, hi=MAX_INSTANCES)
        return out

    def threads(self, table: Table, name: str = "threads") -> tuple[int, ...]:
        key = f"load.{name}"
        fix = f"write {name} = 8 (one level) or {name} = [4, 8, 16] (a sweep)"
        if name not in table:
            raise self.error(key, f"missing {name}", f"add {fix.removeprefix('write ')}")
        value = table[name]
        items = value if isinstance(value, list) else [value]
        if not items:
            raise self.error(key, "is an empty list", fix)
        out: list[int] = []
        for i, item in enumerate(items):
            where = f"{key}[{i}]" if isinstance(value, list) else key
            if isinstance(item, bool) or not isinstance(item, int):
                raise self.wrong_type(where, "an integer or a list of integers", item, fix)
            if not 1 <= item <= MAX_THREADS:
                raise self.error(
                    where,
                    f"{item} threads is out of range 1-{MAX_THREADS}",
                    f"use 1 to {MAX_THREADS} threads",
                )
            if item in out:
                raise self.error(where, f"{item} is listed twice", "list each thread count once")
            out.append(item)
        return tuple(out)

    def waits(self, table: Table) -> Waits:
        p = "wait"
        self.check_keys(table, _WAIT_KEYS, p)
        # 0: until the history list is empty (the seed sweeps' gate); N: below N
        history = self.integer(table, "history_below", p, lo=0, hi=2**63 - 1)
        at_lwm = self.boolean(table, "dirty_at_lwm", p) or False
        dirty = self.number(table, "dirty_pct_below", p, lo=0.0, hi=100.0, lo_open=True)
        if at_lwm and dirty is not None:
            raise self.error(
                f"{p}.dirty_pct_below",
                "is given together with dirty_at_lwm = true; they are two forms of one gate",
                "keep one: dirty_at_lwm = true (the server's lwm) or dirty_pct_below = 5.0",
            )
        checkpoint: int | None = None
        if "checkpoint_age_below" in table:
            raw = table["checkpoint_age_below"]
            dotted = f"{p}.checkpoint_age_below"
            fix = 'write checkpoint_age_below = "64M" (K, M, G allowed) or a number of bytes'
            if isinstance(raw, bool) or not isinstance(raw, int | str):
                raise self.wrong_type(dotted, "a size", raw, fix)
            try:
                checkpoint = parse_bytes(raw)
            except ValueError as exc:
                raise self.error(dotted, str(exc), fix) from None
            if checkpoint < 1:
                raise self.error(dotted, "must be at least 1 byte", fix)
        plateau = self.boolean(table, "plateau", p) or False
        timeout = self.number(table, "timeout", p, lo=0.0, hi=float(TIME_CAP), lo_open=True)
        return Waits(
            history_below=history,
            dirty_at_lwm=at_lwm,
            dirty_pct_below=dirty,
            checkpoint_age_below=checkpoint,
            plateau=plateau,
            timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
        )

    def steady(self, table: Table, waits: Waits) -> Steady:
        p = "steady"
        self.check_keys(table, _STEADY_KEYS, p)
        window = self.integer(table, "window", p, lo=5, hi=3600, unit="seconds")
        cv_max = self.number(table, "cv_max", p, lo=0.0, hi=1.0, lo_open=True)
        slope_max = self.number(table, "slope_max", p, lo=0.0, hi=1.0, lo_open=True)
        # A recipe written before issue 17 that sets cv_max or slope_max keeps its rule.
        older = cv_max is not None or slope_max is not None
        judges = tuple(reversed(JUDGES)) if older and "judge" not in table else JUDGES
        judge = self.choice(table, "judge", judges, "the trend against its own noise over "
                            "2 x window, or the older CV and slope bounds over one window", p)
        if judge == "noise" and older:
            which = "cv_max" if cv_max is not None else "slope_max"
            raise self.error(f"{p}.{which}", f"{which} is a bound of the older plateau rule "
                             '(judge = "cv"); judge = "noise" weighs the trend against the '
                             "noise instead", f'delete {which}, or write judge = "cv"')
        steady = Steady(
            window=DEFAULT_STEADY[0] if window is None else window,
            cv_max=DEFAULT_STEADY[1] if cv_max is None else cv_max,
            slope_max=DEFAULT_STEADY[2] if slope_max is None else slope_max,
            judge=judge,
        )
        if waits.plateau and steady.span > waits.timeout:
            span = (f"the plateau is judged over 2 x window = {steady.span} s"
                    if judge == "noise" else f"the plateau window ({steady.span} s) is")
            raise self.error(
                f"{p}.window" if window is not None else "wait.timeout",
                f"{span} longer than wait.timeout "
                f"({_fmt(waits.timeout)} s), so a plateau could never be seen in time",
                f"make wait.timeout at least {steady.span}, or shorten steady.window",
            )
        return steady

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

    def targets(self, doc: Table, arms: tuple[Arm, ...], timeline: bool) -> tuple[Target, ...]:
        """``[targets.NAME]``: the further servers arms name with ``target = "NAME"``."""
        raw = self.table(doc, "targets")
        fix = ('write [targets.NAME] with profile = "PROFILE" (a server of ~/.config/knobtop/'
               'profiles), or options = { innodb_flush_log_at_trx_commit = 2 } for a lab '
               "sandbox of that name (knobtop run --lab)")
        targets: list[Target] = []
        if raw is not None and timeline:
            raise self.error("targets", "a timeline, soak or curve recipe runs on one server",
                             "remove [targets] (arms on other servers compare step by step)")
        for name, table in (raw or {}).items():
            p = f"targets.{name}"
            if not _TARGET_NAME.match(name):
                raise self.error(p, f"{name!r} is not a target name",
                                 "use up to 32 letters, digits, _ and -, starting with a letter "
                                 "or digit, e.g. [targets.trx2]")
            if not isinstance(table, dict):
                raise self.wrong_type(p, "a table", table, fix)
            self.check_keys(table, _TARGET_KEYS, p)
            profile = self.string(table, "profile", p, '"db-57"') or ""
            options = self.target_options(table.get("options", {}), f"{p}.options")
            if profile and options:
                raise self.error(f"{p}.options", "a profile's server has its own my.cnf",
                                 "give profile (a server) or options (a lab sandbox), not both")
            targets.append(Target(name, profile, options))
        names = {t.name for t in targets}
        for i, arm in enumerate(arms):
            if arm.target and arm.target not in names:
                known = ", ".join(sorted(names)) or "none"
                raise self.error(f"arm[{i}].target", f"no [targets.{arm.target}] table "
                                 f"(targets: {known})", f"add [targets.{arm.target}], "
                                 "or correct the name")
        used = {arm.target for arm in arms}
        for target in targets:
            if target.name not in used:
                raise self.error(f"targets.{target.name}", "no arm runs on it",
                                 f'give an arm target = "{target.name}", or remove it')
        return tuple(targets)

    def target_options(self, raw: object, p: str) -> tuple[tuple[str, str], ...]:
        """A lab target's base my.cnf options, as mariadbd's option-file reader takes them;
        never a reach variable (the lab checks each against its server's own variables when
        it builds the sandbox)."""
        from knobtop.lab_options import check_option, option_reach
        from knobtop.labdirs import LabError

        if not isinstance(raw, dict):
            raise self.wrong_type(p, "a table", raw,
                                  "write options = { innodb_flush_log_at_trx_commit = 2 }")
        out: list[tuple[str, str]] = []
        for key, value in raw.items():
            if isinstance(value, bool):
                text = "ON" if value else "OFF"
            elif isinstance(value, int | float | str):
                text = str(value)
            else:
                raise self.wrong_type(f"{p}.{key}", "a string, number or boolean", value,
                                      f'write {key} = "VALUE"')
            risk = option_reach(key)
            if risk is not None:
                raise self.error(f"{p}.{key}", f"{risk.name} {risk.what}, so a lab sandbox's "
                                 "options may not set it", "remove it: the lab sets its own "
                                 "listener, paths, plugins and logins; give performance "
                                 "variables only, or a profile for a server of your own")
            try:
                check_option(key, text)
            except LabError as exc:
                raise self.error(f"{p}.{key}", str(exc).removeprefix("--option "),
                                 "correct the option (a name and a plain value)") from None
            out.append((key, text))
        return tuple(out)

    def arms(self, value: object, on_servers: bool = False) -> tuple[Arm, ...]:
        """The [[arm]] tables (``on_servers``: the recipe has [targets], so an arm may
        differ only in the server it runs on)."""
        fix = "write each arm as an [[arm]] table (double brackets) with name and knobs"
        example = '[[arm]]\n  name = "A"\n  knobs = { innodb_doublewrite = "ON" }'
        if value is None:
            raise self.error("arm", "no [[arm]] tables", f"add at least two, e.g. {example}")
        if not isinstance(value, list):
            raise self.wrong_type("arm", "an array of tables ([[arm]])", value, fix)
        arms: list[Arm] = []
        seen: dict[str, int] = {}
        for i, item in enumerate(value):
            p = f"arm[{i}]"
            if not isinstance(item, dict):
                raise self.wrong_type(p, "a table", item, fix)
            arm = self.arm(item, p, on_servers)
            if arm.name in seen:
                raise self.error(
                    f"{p}.name",
                    f"name {arm.name!r} is already used by arm[{seen[arm.name]}]",
                    "give each arm a distinct name",
                )
            seen[arm.name] = i
            arms.append(arm)
        if len(arms) < 2:
            raise self.error(
                "arm",
                f"{len(arms)} arm; an experiment compares at least two",
                "add another [[arm]] with the values to compare against the baseline "
                "(the first arm)",
            )
        if not on_servers and not any(arm.load for arm in arms):
            for i, arm in enumerate(arms):
                if not arm.knobs:  # then every arm would run the same thing
                    raise self.error(f"arm[{i}].knobs", "names no knob",
                                     'write knobs = { innodb_doublewrite = "OFF" } (one or '
                                     'more knob = value), or give an arm load = { engine = '
                                     '"RocksDB" } to compare tables or loads')
        self.same_knobs(arms)
        return tuple(arms)

    def arm(self, table: Table, p: str, on_servers: bool = False) -> Arm:
        self.check_keys(table, _ARM_KEYS, p)
        name = self.req_string(table, "name", p, '"A" (short and unique)')
        if not _ARM_NAME.match(name):
            raise self.error(
                f"{p}.name",
                f"{name!r} is not a short arm name",
                "use up to 16 letters, digits, '.', '_', '+' or '-', e.g. \"B\" or \"bp-256M\"",
            )
        knob_fix = 'write knobs = { innodb_doublewrite = "OFF" } (one or more knob = value)'
        load = self.arm_load(table, p)
        target = self.string(table, "target", p, '"trx2" (a [targets.trx2] table)') or ""
        if "knobs" not in table and not load and not on_servers:
            raise self.error(
                f"{p}.knobs", "missing knobs", f"add {knob_fix.removeprefix('write ')}, or "
                'load = { engine = "RocksDB" } for an arm that differs in its tables or load'
            )
        return Arm(name=name, knobs=self.knobs(table.get("knobs", {}), f"{p}.knobs"),
                   load=load, target=target)

    def knobs(self, raw: object, p: str) -> dict[str, str]:
        """A ``knobs = { name = value }`` table: names checked and made canonical, values
        as strings (see knob_value)."""
        knob_fix = 'write knobs = { innodb_doublewrite = "OFF" } (one or more knob = value)'
        if not isinstance(raw, dict):
            raise self.wrong_type(p, "a table", raw, knob_fix)
        knobs: dict[str, str] = {}
        written: dict[str, str] = {}
        for key, value in raw.items():
            dotted = f"{p}.{key}"
            if not _KNOB_NAME.match(key):
                raise self.error(
                    dotted,
                    f"{key!r} is not a server variable name",
                    "write the variable name as SHOW VARIABLES prints it, e.g. sort_buffer_size",
                )
            knob = flavors.canonical(key) or key.lower()
            self.check_reach(knob, dotted)
            if knob in knobs:
                raise self.error(
                    dotted,
                    f"names the same knob as {written[knob]!r} (names ignore case)",
                    "keep one of them",
                )
            knobs[knob] = self.knob_value(value, dotted, key)
            written[knob] = key
        if NDB_PARAMETER in knobs and len(knobs) > 1:
            raise self.error(
                f"{p}.{written[NDB_PARAMETER]}",
                f"{NDB_PARAMETER} is a data-node parameter changed by its own rolling restart; "
                "it cannot go in with server variables",
                f"make {NDB_PARAMETER} the only knob of the recipe (one recipe per kind)",
            )
        return knobs

    def knob_value(self, value: object, dotted: str, key: str) -> str:
        if isinstance(value, bool):
            return "ON" if value else "OFF"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.error(dotted, f"{value} is not a finite number", "give a number")
            return repr(value)
        if isinstance(value, str):
            if not value.strip():
                raise self.error(dotted, "is empty", f'write {key} = "VALUE", e.g. "ON" or "64M"')
            return value.strip()
        raise self.wrong_type(
            dotted,
            "a string, number or boolean",
            value,
            f'write {key} = "VALUE" (e.g. "ON", "64M" or 4)',
        )

    def same_knobs(self, arms: list[Arm]) -> None:
        """Every arm names the knobs of the baseline (arm[0]), no more, no fewer."""
        base = arms[0]
        for i, arm in enumerate(arms[1:], start=1):
            for knob, value in base.knobs.items():
                if knob not in arm.knobs:
                    raise self.error(
                        f"arm[{i}].knobs.{knob}",
                        f"missing: the baseline arm {base.name!r} sets it, arm {arm.name!r} "
                        "does not (every arm names the same knobs)",
                        f'add {knob} = "{value}" to arm {arm.name!r} (the baseline value keeps '
                        "it unchanged), or remove it from every arm",
                    )
            for knob in arm.knobs:
                if knob not in base.knobs:
                    raise self.error(
                        f"arm[{i}].knobs.{knob}",
                        f"not set by the baseline arm {base.name!r} (every arm names the "
                        "same knobs)",
                        f"add {knob} to every arm (the baseline first), or remove it here",
                    )


def _fmt(x: float) -> str:
    return str(int(x)) if x == int(x) else str(x)


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
