"""Experiment recipes: arms of knob values, a load sweep, gates, replicates, loaded from TOML.

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
# Over 500 lines: every key of the recipe format with its own fix line, and the checks of a
# recipe against one server (the reading, parsing and generic checks are tomlcheck.py's).

from __future__ import annotations

import difflib
import math
import random
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from knobtop.analysis.plateau import LONG as PLATEAU_LONG
from knobtop.analysis.stats import min_runs_for_verdict
from knobtop.bundled import bundled_dir
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
from knobtop.server import flavors
from knobtop.server.catalog import Catalog, CatalogFacts
from knobtop.server.knobcheck import absent_problem, close_name
from knobtop.server.knobs import KnobError, validate
from knobtop.server.ndb import PARAMETER as NDB_PARAMETER
from knobtop.server.policy import risk_of
from knobtop.tomlcheck import FileError, Reader, Table, parse, read_text_file, too_deep

__all__ = [
    "APPLIES_FLAVORS",
    "BUNDLED_DIR",
    "LEVEL_ORDERS",
    "ORDERS",
    "Arm",
    "Constraint",
    "Recipe",
    "RecipeError",
    "Steady",
    "Step",
    "Waits",
    "bundled_recipes",
    "check_for_server",
    "check_for_targets",
    "load_recipe",
    "offline_warnings",
    "parse_bytes",
    "server_flavors",
    "static_knobs",
    "williams_rows",
]

# app/knobtop/recipes/recipe.py -> the repository root's experiments/ (absent when installed).
BUNDLED_DIR = bundled_dir("experiments")
README = "experiments/README.md"
APPLIES_FLAVORS: tuple[str, ...] = ("mariadb", "mysql", "ndb")
ORDERS: tuple[str, ...] = ("counterbalanced", "abba", "williams", "interleaved", "random")
LEVEL_ORDERS: tuple[str, ...] = ("ascending", "counterbalanced", "random")


def williams_rows(n: int) -> list[list[int]]:
    """A Williams design for ``n`` arms: rows of a Latin square in which every arm comes
    first, and directly after every other arm, equally often (2n rows when n is odd, n when
    even), so neither position nor the arm before (carry-over) favours one arm."""
    first = [0]
    lo, hi = 1, n - 1
    while len(first) < n:
        first.append(lo)
        lo += 1
        if len(first) < n:
            first.append(hi)
            hi -= 1
    rows = [[(x + i) % n for x in first] for i in range(n)]
    if n % 2:
        rows += [row[::-1] for row in rows]
    return rows


def arm_order(order: str, n: int, round_index: int, rng: random.Random) -> list[int]:
    """The arms' order in round ``round_index`` (0-based) as indices into the recipe's arms.

    "interleaved": recipe order every round (A B, A B: a linear drift favours B).
    "abba": recipe order, then reversed, then reversed again, then recipe order (A B, B A,
    B A, A B, ...): each arm's mean position over four rounds is the same, so a linear
    drift cancels.  "williams": the rows of :func:`williams_rows` in turn.
    "counterbalanced" (the default): "abba" for two arms, "williams" for more.
    "random": a shuffle per round from ``rng`` (the recipe's seed)."""
    arms = list(range(n))
    if order == "counterbalanced":
        order = "abba" if n <= 2 else "williams"
    if order == "abba":
        return arms if round_index % 4 in (0, 3) else arms[::-1]
    if order == "williams":
        rows = williams_rows(n)
        return rows[round_index % len(rows)]
    if order == "random":
        rng.shuffle(arms)
    return arms
MIN_DURATION = 5
MAX_REPLICATES = 100
MAX_THREADS = 1024
DEFAULT_TIMEOUT = 300.0
DEFAULT_STEADY = (30, 0.05, 0.002)  # window seconds, cv_max, slope_max

Version = tuple[int, int, int]

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")
_ARM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,15}\Z")
_TARGET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}\Z")  # a lab --name too
_KNOB_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}\Z")
_CLAUSE = re.compile(r"(>=|<=|==|>|<)\s*(\d+(?:\.\d+){0,2})\Z")
_BYTES = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\Z", re.IGNORECASE)
_MULT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_VERSION_IN = re.compile(r"(\d+)\.(\d+)\.(\d+)")

# Knob -> candidates to suggest when it is absent on a server (the first one present wins).
_EQUIVALENTS: dict[str, tuple[str, ...]] = {
    "innodb_page_cleaners": ("innodb_write_io_threads",),
    "innodb_mtflush_threads": ("innodb_page_cleaners", "innodb_write_io_threads"),
    "innodb_use_mtflush": ("innodb_page_cleaners", "innodb_write_io_threads"),
    "DiskPageBufferMemory": ("innodb_buffer_pool_size",),
}
# Knob -> a bundled recipe that does the same experiment with the equivalent knob.
_EQUIVALENT_RECIPES: dict[str, str] = {
    "innodb_write_io_threads": "flush-threads-mariadb.toml",
    "innodb_page_cleaners": "flush-threads-mysql.toml",
    "innodb_buffer_pool_size": "buffer-pool-climb.toml",
}


class RecipeError(FileError):
    """A recipe cannot be used; ``file``, ``key`` (dotted), ``problem`` and ``fix`` say why.

    ``str()`` is ``"FILE: KEY: problem\\n  fix: ..."`` (``"FILE: problem ..."`` without a
    key), the same shape as ``profiles.ProfileError``.
    """


# --------------------------------------------------------------------------- versions


@dataclass(frozen=True, slots=True)
class Constraint:
    """A version constraint such as ``">=10.2.2, <10.6"``; no clauses (``"*"``) = any.

    Each clause compares the server version cut to the clause's precision, so ``<10.6``
    refuses all of 10.6.x and ``==10.6`` accepts all of 10.6.x.
    """

    text: str
    clauses: tuple[tuple[str, tuple[int, ...]], ...]

    @classmethod
    def parse(cls, text: str) -> Constraint:
        """Parse ``text``; ValueError says which clause is wrong and how it should look."""
        stripped = text.strip()
        if stripped == "*":
            return cls(stripped, ())
        if not stripped:
            raise ValueError("empty version constraint")
        clauses: list[tuple[str, tuple[int, ...]]] = []
        for raw in stripped.split(","):
            part = raw.strip()
            m = _CLAUSE.match(part)
            if m is None:
                swapped = re.fullmatch(r"(=>|=<)\s*(\d+(?:\.\d+){0,2})", part)
                single = re.fullmatch(r"=\s*(\d+(?:\.\d+){0,2})", part)
                if re.fullmatch(r"\d+(?:\.\d+){0,2}", part):
                    hint = f"a clause needs an operator: '>={part}' or '=={part}'"
                elif swapped:
                    hint = f"write '{swapped.group(1)[::-1]}{swapped.group(2)}'"
                elif single:
                    hint = f"equality is written '=={single.group(1)}'"
                elif not part:
                    hint = "an empty clause (a stray comma?)"
                else:
                    hint = "a clause is an operator (>=, >, <=, <, ==) and a version like 10.6"
                raise ValueError(f"bad clause {part!r}: {hint}")
            numbers = tuple(int(n) for n in m.group(2).split("."))
            clauses.append((m.group(1), numbers))
        return cls(stripped, tuple(clauses))

    def allows(self, version: tuple[int, ...]) -> bool:
        """True when ``version`` satisfies every clause."""
        for op, bound in self.clauses:
            have = tuple(version[: len(bound)])
            have = have + (0,) * (len(bound) - len(have))
            ok = {
                ">=": have >= bound,
                ">": have > bound,
                "<=": have <= bound,
                "<": have < bound,
                "==": have == bound,
            }[op]
            if not ok:
                return False
        return True

    def __str__(self) -> str:
        return self.text


def server_flavors(catalog: Catalog) -> list[tuple[str, Version]]:
    """The ``[applies]`` flavors this server counts as, each with the version compared.

    An SQL node of an NDB Cluster (MySQL with DiskPageBufferMemory in its catalog) is
    ``ndb`` (its NDB version from ``ndb_version_string``) and also ``mysql``.
    """
    version = catalog.version
    if version.flavor == "mysql" and _is_ndb(catalog):
        ndb_version = version.version
        raw = catalog.get("ndb_version_string").value or ""
        m = _VERSION_IN.search(raw)
        if m:
            ndb_version = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
        return [("ndb", ndb_version), ("mysql", version.version)]
    return [(version.flavor, version.version)]


def _is_ndb(catalog: Catalog) -> bool:
    return "DiskPageBufferMemory" in catalog and catalog.get("DiskPageBufferMemory").present


def parse_bytes(value: int | str) -> int:
    """Bytes from an int or a string with an optional K/M/G/T suffix ("64M"); ValueError."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"{value} is negative")
        return value
    m = _BYTES.fullmatch(str(value).strip())
    if m is None:
        raise ValueError(f"{value!r} is not a size (a number with an optional K, M or G)")
    number = float(m.group(1)) * _MULT[m.group(2).upper()]
    if number != int(number):
        raise ValueError(f"{value!r} is not a whole number of bytes")
    return int(number)


# --------------------------------------------------------------------------- the model


@dataclass(frozen=True, slots=True)
class Arm:
    """One configuration: a short unique ``name`` and the knob values it sets.

    Values are strings as a user would type them in SET GLOBAL or my.cnf: TOML booleans
    become "ON"/"OFF", numbers their decimal text; names use the flavor table's spelling
    (lower case, except DiskPageBufferMemory).
    """

    name: str
    knobs: dict[str, str]
    # What this arm runs differently from [load] (issue 18): engine, table_options,
    # workload, options, instances, as LoadSpec fields
    load: dict[str, Any] = field(default_factory=dict)
    target: str = ""  # the server it runs on: "" the run's own, else a [targets] name

    def __hash__(self) -> int:
        return hash((self.name, tuple(self.knobs.items()), repr(sorted(self.load.items())),
                     self.target))


@dataclass(frozen=True, slots=True)
class Target:
    """A further server a recipe's arms may run on (issue 19): a profile's server, or
    (``knobtop run --lab``) a lab sandbox of this name with its own base my.cnf
    ``options``."""

    name: str
    profile: str = ""
    options: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class Waits:
    """Gates before each measured step; None/False = that gate is off.

    ``dirty_at_lwm`` waits for dirty pages % <= innodb_max_dirty_pages_pct_lwm (when the
    lwm is 0 the server uses innodb_max_dirty_pages_pct); ``dirty_pct_below`` gives the
    threshold instead.  ``timeout`` (seconds) bounds each wait.
    """

    history_below: int | None = None
    dirty_at_lwm: bool = False
    dirty_pct_below: float | None = None
    checkpoint_age_below: int | None = None
    plateau: bool = False
    timeout: float = DEFAULT_TIMEOUT

    @property
    def active(self) -> bool:
        """Whether any gate is on."""
        return (
            self.history_below is not None
            or self.dirty_at_lwm
            or self.dirty_pct_below is not None
            or self.checkpoint_age_below is not None
            or self.plateau
        )


@dataclass(frozen=True, slots=True)
class Steady:
    """The plateau detector.  ``judge = "noise"`` (the default,
    :class:`knobtop.analysis.plateau.Plateau`): over the last 2 x ``window`` one-second TPS
    samples the trend is flat against their own noise.  ``judge = "cv"`` (the older rule,
    :class:`knobtop.analysis.stats.SteadyState`): over the last ``window`` samples the
    coefficient of variation is at most ``cv_max`` and the least-squares slope, divided by
    the window's mean, at most ``slope_max`` per second (in absolute value)."""

    window: int = DEFAULT_STEADY[0]
    cv_max: float = DEFAULT_STEADY[1]
    slope_max: float = DEFAULT_STEADY[2]
    judge: str = "noise"

    @property
    def span(self) -> int:
        """Seconds of load the detector needs before it can call a plateau."""
        return self.window * (PLATEAU_LONG if self.judge == "noise" else 1)


@dataclass(frozen=True, slots=True)
class Step:
    """One measured step: ``index`` is its position in the schedule (0-based),
    ``replicate`` the round (1-based)."""

    index: int
    replicate: int
    arm: Arm
    threads: int
    calibration: bool = False  # the baseline against itself, before the arms

    @property
    def label(self) -> str:
        """A short label such as ``r2 B t16`` (``cal2 A t16`` for calibration)."""
        return f"{'cal' if self.calibration else 'r'}{self.replicate} {self.arm.name} " \
               f"t{self.threads}"


@dataclass(frozen=True, slots=True)
class Action:
    """A change at ``at`` seconds into a timeline, with the load running."""

    at: float
    knobs: dict[str, str]
    # A static change restarts the server: by default the load pauses through the restart
    # (nothing runs on a stopped server; sysbench 1.0.20 even crashes reconnecting) and
    # resumes at once, the timeline's clock running on. keep_load leaves it running: for a
    # server that stays up (an NDB SQL node while its data nodes restart) or a driver that
    # reconnects (the built-in one).
    keep_load: bool = False

    def __hash__(self) -> int:
        return hash((self.at, tuple(self.knobs.items()), self.keep_load))


# What a checkpoint can hold: the load's own TPS and latency, and the sampled metrics
# (metrics.board), and NDB's per-data-node disk page buffer hit ratio.
TIMELINE_METRICS = ("load_tps", "load_p95", "tps", "qps", "hit_ratio", "dirty_pct",
                    "history_len", "checkpoint_age", "checkpoint_pct", "threads_running",
                    "cpu", "iowait", "data_reads", "pages_flushed", "rocks_hit_ratio",
                    "ndb_hit")
DEFAULT_TIMELINE_METRICS = ("load_tps", "hit_ratio", "dirty_pct", "history_len")


@dataclass(frozen=True, slots=True)
class Timeline:
    """``[run] kind = "timeline"``: the load runs once, without stopping, for
    ``[load] duration`` seconds while ``actions`` happen; ``metrics`` are read at each of
    ``checkpoints`` (seconds from the load's start), each over the ``window`` seconds
    before it. ``start`` knobs are set before the load starts."""

    start: dict[str, str]
    checkpoints: tuple[float, ...]
    metrics: tuple[str, ...]
    window: float
    actions: tuple[Action, ...]

    def __hash__(self) -> int:
        return hash((tuple(self.start.items()), self.checkpoints, self.metrics, self.window,
                     self.actions))


@dataclass(frozen=True, slots=True)
class Recipe:
    """A checked recipe; ``path`` is the file it came from."""

    path: Path
    name: str
    description: str
    applies: dict[str, str]
    why: str
    workload: str
    threads: tuple[int, ...]
    duration: int
    warmup: int
    tables: int
    table_size: int
    rate: int
    rand_type: str
    percentile: int
    waits: Waits
    steady: Steady
    replicates: int
    order: str
    seed: int
    pause: float
    arms: tuple[Arm, ...]
    level_order: str = "ascending"
    prepared: bool = True  # sysbench prepared statements (false: --db-ps-mode=disable)
    engine: str = ""  # the tables' storage engine ("" = the server's default)
    options: tuple[tuple[str, str], ...] = ()  # more sysbench --key=value
    instances: int = 1  # sysbench processes at once per client; threads are their total
    table_options: tuple[tuple[str, str], ...] = ()  # CREATE TABLE options of the tables
    timeline: Timeline | None = None  # [run] kind = "timeline": one load, actions on it
    calibrate: int = 0  # rounds of the baseline arm against itself before the arms run
    # Each measured window is a timed run of its own (after the warmup run): the driver's
    # summary gives the window's transactions and latency percentile, as the seeds read them
    timed: bool = False
    until_ci: float | None = None  # add rounds until every cell's CI is within +-until_ci
    max_replicates: int | None = None  # the cap on rounds with until_ci
    targets: tuple[Target, ...] = ()  # further servers arms run on ([targets.NAME])
    loaders: int = 0  # LinkBench's load phase connections (0: the first thread count)
    # [allow] reach: the reach variables (server.policy) the file asks to set; they are set
    # only when the command line says --allow-reach too
    allow_reach: tuple[str, ...] = ()

    @property
    def baseline(self) -> Arm:
        """The first arm ("A"): ratios are reported against it."""
        return self.arms[0]

    @property
    def knobs(self) -> list[str]:
        """Every knob named by any arm, in first-seen order."""
        seen: dict[str, None] = {}
        for arm in self.arms:
            for knob in arm.knobs:
                seen.setdefault(knob, None)
        return list(seen)

    def load_spec(self, threads: int, duration: int, arm: Arm | None = None) -> LoadSpec:
        """The load of one step: this recipe's workload at ``threads`` for ``duration`` s,
        with what ``arm`` runs differently."""
        spec = LoadSpec(
            workload=self.workload,
            threads=threads,
            tables=self.tables,
            table_size=self.table_size,
            duration=duration,
            rate=self.rate,
            rand_type=self.rand_type,
            percentile=self.percentile,
            prepared=self.prepared,
            engine=self.engine,
            options=self.options,
            instances=self.instances,
            table_options=self.table_options,
            loaders=self.loaders,
        )
        if arm is None or not arm.load:
            return spec
        own = replace(spec, **arm.load)
        if (own.engine, own.table_options) != (spec.engine, spec.table_options):
            own = replace(own, schema=own.shape)  # tables of its own: a database of its own
        return own

    def arm_specs(self) -> list[tuple[Arm, LoadSpec]]:
        """Each arm with its load at the first thread count (for preparing tables)."""
        return [(arm, self.load_spec(self.threads[0], 0, arm)) for arm in self.arms]

    def schedule(self, rounds: int | None = None) -> list[Step]:
        """The full run order (``rounds`` replicate rounds, ``replicates`` by default; the
        first rounds are the same whatever ``rounds`` is, so adaptive rounds extend it).

        For each replicate round (1-based), for each arm in the round's order
        (:func:`arm_order`: counterbalanced by default; "random" shuffles with one
        ``random.Random(seed)``), for each thread count in the round's level order
        ("ascending" as written; "counterbalanced": as written, then reversed, every other
        round; "random": shuffled per round by a second ``random.Random(seed + 1)``).
        Arms are the outer loop inside a round, so a static knob costs one restart per arm
        visit rather than one per thread count.
        """
        rng = random.Random(self.seed)
        levels_rng = random.Random(self.seed + 1)
        steps: list[Step] = []
        if self.timeline is not None:
            return steps  # one load for the whole run: no steps
        for replicate in range(1, (self.replicates if rounds is None else rounds) + 1):
            levels = list(self.threads)
            if self.level_order == "counterbalanced" and replicate % 2 == 0:
                levels.reverse()
            elif self.level_order == "random":
                levels_rng.shuffle(levels)
            for i in arm_order(self.order, len(self.arms), replicate - 1, rng):
                for threads in levels:
                    steps.append(Step(len(steps), replicate, self.arms[i], threads))
        return steps

    def calibration_schedule(self) -> list[Step]:
        """``calibrate`` rounds of the baseline arm at every thread count (in the order the
        levels are written), marked as calibration: they come before :meth:`schedule`."""
        return [Step(0, r, self.baseline, t, calibration=True)
                for r in range(1, self.calibrate + 1) for t in self.threads]

    @property
    def planned_seconds(self) -> float:
        """A lower bound on the run time: warmups, measured time and pauses (no waits,
        plateaus, restarts or table preparation)."""
        if self.timeline is not None:
            return float(self.duration)
        count = (self.replicates * len(self.arms) + self.calibrate) * len(self.threads)
        return count * (self.warmup + self.duration) + max(count - 1, 0) * self.pause

    def check_server(self, catalog: Catalog, target: str = "") -> list[str]:
        """This recipe against the server of ``target`` ("": the run's own) as soon as it
        answers: the arms that run there (or the timeline) are checked as
        ``check_for_server`` does; RecipeError names the knob, the close match and the fix.
        Returns the warnings (the runner says them before its first step)."""
        if not self.targets:
            return check_for_server(self, catalog)
        return check_for_targets(self, {target: catalog})


# --------------------------------------------------------------------------- TOML reader

_TOP_KEYS = ("name", "description", "applies", "load", "wait", "steady", "run", "arm",
             "timeline", "targets", "allow")
_ALLOW_KEYS = ("reach",)
_TARGET_KEYS = ("profile", "options")
_TIMELINE_KEYS = ("start", "checkpoints", "metrics", "window", "action")
_ACTION_KEYS = ("at", "knobs", "keep_load")
KINDS = ("arms", "timeline")
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
        self.check_keys(doc, _TOP_KEYS, "")
        allow_reach = self.allow(doc)
        name = self.req_string(doc, "name", "", '"doublewrite" (letters, digits, . _ -)')
        if not _NAME.match(name):
            raise self.error(
                "name",
                f"{name!r} is not a recipe name",
                "use letters, digits, '.', '_' and '-' (up to 64), e.g. "
                f'name = "{_slug(name) or "my-recipe"}"',
            )
        description = self.req_string(
            doc, "description", "", '"what the experiment shows and what to watch"'
        )
        applies, why = self.applies(doc)
        load = self.table(doc, "load")
        if load is None:
            raise self.error(
                "load",
                "missing [load] table",
                f'add [load] with workload = "oltp_read_write", threads, duration (see {README})',
            )
        spec = self.load(load)
        waits = self.waits(self.table(doc, "wait") or {})
        steady = self.steady(self.table(doc, "steady") or {}, waits)
        run = self.table(doc, "run") or {}
        self.check_keys(run, _RUN_KEYS, "run")
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
        kind = self.choice(run, "kind", KINDS, "arms compared step by step, or one load "
                           "with actions at given times")
        timed = bool(self.boolean(run, "timed", "run"))
        if timed and kind == "timeline":
            raise self.error("run.timed", "a timeline's load runs once, from start to end",
                             "remove timed (it times each step of a recipe of arms)")
        if spec.workload == "linkbench" and kind != "timeline":
            # Each window a run of its own: its per-operation percentiles are the driver's
            # over the whole window, not a median of per-second ones (issue 20).
            timed = True
        timeline = None
        if kind == "timeline":
            timeline = self.timeline(doc, spec)
            arms: tuple[Arm, ...] = (Arm("timeline", dict(timeline.start)),)
        else:
            if "timeline" in doc:
                raise self.error("timeline", "a [timeline] table in a recipe of arms",
                                 'add kind = "timeline" to [run], or remove [timeline]')
            arms = self.arms(doc.get("arm"), on_servers="targets" in doc)
        targets = self.targets(doc, arms, timeline is not None)
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
            replicates=3 if replicates is None else replicates,
            order=order,
            level_order=level_order,
            seed=1 if seed is None else seed,
            pause=0.0 if pause is None else pause,
            arms=arms,
            timeline=timeline,
            timed=timed,
            calibrate=calibrate or 0,
            until_ci=until_ci,
            max_replicates=max_replicates,
            targets=targets,
            allow_reach=allow_reach,
        )
        self.adaptive(recipe, "until_ci" in run, "max_replicates" in run)
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
        return recipe

    def timeline(self, doc: Table, spec: _Load) -> Timeline:
        """``[timeline]`` of a ``kind = "timeline"`` recipe (no arms, one thread count)."""
        p = "timeline"
        if "arm" in doc:
            raise self.error("arm", "a timeline recipe has no arms",
                             "its changes are [[timeline.action]] tables (at = SECONDS, knobs "
                             "= {...}); its starting knobs [timeline] start = {...}")
        if len(spec.threads) != 1:
            raise self.error("load.threads", f"a timeline runs one load: {len(spec.threads)} "
                             "thread counts", "give one, e.g. threads = 8")
        table = self.table(doc, p)
        if table is None:
            raise self.error(p, "missing [timeline]",
                             "add [timeline] with checkpoints = [60, 300] and "
                             "[[timeline.action]] tables (see experiments/README.md)")
        self.check_keys(table, _TIMELINE_KEYS, p)
        duration = float(spec.duration)
        checkpoints = self.seconds_list(table, "checkpoints", p, duration)
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
        window = self.number(table, "window", p, lo=1.0, hi=3600.0, lo_open=False)
        raw = table.get("action", [])
        if not isinstance(raw, list):
            raise self.wrong_type(f"{p}.action", "an array of tables ([[timeline.action]])",
                                  raw, "write each change as [[timeline.action]] with at and "
                                  "knobs")
        actions: list[Action] = []
        for i, item in enumerate(raw):
            q = f"{p}.action[{i}]"
            if not isinstance(item, dict):
                raise self.wrong_type(q, "a table", item, "write [[timeline.action]]")
            self.check_keys(item, _ACTION_KEYS, q)
            at = self.number(item, "at", q, lo=0.0, hi=duration, lo_open=False)
            if at is None or at >= duration:
                raise self.error(f"{q}.at", "missing at" if at is None else
                                 f"{at:g} s is not inside the {duration:g} s timeline",
                                 f"give at = SECONDS from the load's start, below {duration:g}")
            if "knobs" not in item:
                raise self.error(f"{q}.knobs", "missing knobs",
                                 'add knobs = { innodb_buffer_pool_size = "512M" }')
            knobs = self.knobs(item["knobs"], f"{q}.knobs")
            if not knobs:
                raise self.error(f"{q}.knobs", "names no knob",
                                 'write knobs = { innodb_buffer_pool_size = "512M" }')
            actions.append(Action(at, knobs, bool(self.boolean(item, "keep_load", q))))
        return Timeline(start=self.knobs(table.get("start", {}), f"{p}.start"),
                        checkpoints=checkpoints, metrics=tuple(metrics),
                        window=10.0 if window is None else window,
                        actions=tuple(sorted(actions, key=lambda a: a.at)))

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
            raise self.error("targets", "a timeline recipe runs on one server",
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


# --------------------------------------------------------------------------- one server


def _describe_server(catalog: Catalog) -> str:
    kinds = server_flavors(catalog)
    if kinds[0][0] == "ndb":
        ndb_v = ".".join(str(n) for n in kinds[0][1])
        return f"an SQL node of an NDB Cluster (ndb {ndb_v}, mysql {catalog.version.short})"
    return f"{catalog.version.flavor} {catalog.version.short}"


def _check_applies(recipe: Recipe, catalog: Catalog) -> None:
    if not recipe.applies:
        return
    kinds = server_flavors(catalog)
    listed = [(flavor, version) for flavor, version in kinds if flavor in recipe.applies]
    if any(Constraint.parse(recipe.applies[f]).allows(v) for f, v in listed):
        return
    wanted = ", ".join(f"{flavor} {text}" for flavor, text in recipe.applies.items())
    key = f"applies.{listed[0][0]}" if listed else "applies"
    problem = f"refuses this server, {_describe_server(catalog)}: it applies to {wanted}"
    if recipe.why:
        problem += f" ({recipe.why})"
    names = [p.stem for p in bundled_recipes() if p.stem != recipe.name]
    fix = "run it against a server that [applies] accepts"
    if names:
        fix += f", or pick another recipe ({', '.join(names)})"
    raise RecipeError(str(recipe.path), key, problem, fix)


def _absent_problem(knob: str, catalog: Catalog) -> str:
    """Why ``knob`` is refused here: the catalog's note, and the name most like it."""
    return absent_problem(catalog, knob, _describe_server(catalog)) or ""


def _absent_fix(knob: str, catalog: Catalog, where: str = "in every arm") -> str:
    close = close_name(catalog, knob)
    if close is not None:
        return f"write {close} instead of {knob} {where}"
    for candidate in _EQUIVALENTS.get(knob, ()):
        if candidate in catalog and catalog.get(candidate).present:
            other = _EQUIVALENT_RECIPES.get(candidate)
            see = f" (the bundled {other} does that)" if other else ""
            return (
                f"this server's nearest equivalent is {candidate}: use it in every arm "
                f"instead{see}, or remove {knob} from every arm"
            )
    return (
        f"remove {knob} from every arm (or remove the arms that compare it), "
        "or run the recipe on a server that has it"
    )


def check_for_server(recipe: Recipe, catalog: Catalog, *, whole: bool = True) -> list[str]:
    """Check ``recipe`` against one server's catalog; returns warnings, raises RecipeError.

    Refusals: the server is not accepted by ``[applies]`` (the message names the flavor,
    the version and the recipe's ``why``); a knob is absent on this server (the catalog's
    note says why; the fix names this server's equivalent when there is an obvious one);
    a value fails ``knobs.validate`` (type, range, block size); an innodb_buffer_pool_size
    above the server's read-only innodb_buffer_pool_size_max.
    Warnings: knobs the server accepts but ignores, knobs whose static-ness is unknown,
    dynamic knobs whose note says some changes need a restart, arms that set identical
    values, fewer than two replicates (no verdict), and gates that would not gate.
    """
    file = str(recipe.path)
    _check_applies(recipe, catalog)
    if recipe.timeline is not None:
        return _check_timeline(recipe, recipe.timeline, catalog)
    warnings: list[str] = []
    facts: dict[str, CatalogFacts] = {}
    for knob in recipe.knobs:
        fact = catalog.get(knob)
        if not fact.present:
            i = next(n for n, arm in enumerate(recipe.arms) if knob in arm.knobs)
            raise RecipeError(file, f"arm[{i}].knobs.{knob}", _absent_problem(knob, catalog),
                              _absent_fix(knob, catalog, "in every arm"))
        facts[knob] = fact
    resolved: list[dict[str, object]] = []
    for i, arm in enumerate(recipe.arms):
        values: dict[str, object] = {}
        for knob, raw in arm.knobs.items():
            try:
                values[knob] = validate(facts[knob], raw, static_ok=True)
            except KnobError as exc:
                raise RecipeError(
                    file,
                    f"arm[{i}].knobs.{knob}",
                    f"arm {arm.name!r}: {exc}",
                    f"change {knob} in arm {arm.name!r} to a value this server accepts",
                ) from None
        _check_pool_max(recipe, catalog, i, arm, values)
        resolved.append(values)
    for knob, fact in facts.items():
        if fact.ignored:
            warnings.append(
                f"{knob} is accepted but ignored on this server ({fact.note}): "
                "expect the arms to measure the same"
            )
        if fact.mode == "unknown":
            warnings.append(
                f"whether {knob} can change at runtime is unknown on this server: knobtop "
                "tries SET GLOBAL and restarts the server if it is refused"
            )
        elif fact.mode == "dynamic" and "restart" in fact.note:
            warnings.append(f"{knob}: {fact.note}")
    for i, values in enumerate(resolved):
        for j in range(i):
            # the same knob values and the same load (arms may differ in tables instead)
            if resolved[j] == values and recipe.arms[j].load == recipe.arms[i].load \
                    and recipe.arms[j].target == recipe.arms[i].target:
                warnings.append(
                    f"arms {recipe.arms[j].name!r} and {recipe.arms[i].name!r} set the same "
                    "values on this server: an A/A comparison (it measures noise)"
                )
    if whole:  # not one server's part of a table (check_for_targets judges the whole)
        warnings.extend(_replicate_warnings(recipe))
    warnings.extend(_gate_warnings(recipe, catalog))
    return warnings


def check_for_targets(recipe: Recipe, catalogs: Mapping[str, Catalog]) -> list[str]:
    """``check_for_server`` for a recipe whose arms run on several servers (issue 19):
    each server's arms against its own catalog ("" is the run's own server); the
    replicates are judged once, for the whole table."""
    warnings: list[str] = []
    for name, catalog in catalogs.items():
        arms = tuple(a for a in recipe.arms if a.target == name)
        if not arms:
            continue
        try:
            found = check_for_server(replace(recipe, arms=arms), catalog, whole=False)
        except RecipeError as exc:
            where = f"target {name}" if name else "the run's own server"
            raise RecipeError(exc.file, exc.key, f"{exc.problem} ({where})", exc.fix) from None
        warnings.extend(w for w in found if w not in warnings)
    warnings.extend(_replicate_warnings(recipe))
    return warnings


def _replicate_warnings(recipe: Recipe) -> list[str]:
    """Too few replicates for any verdict in this recipe's table."""
    warnings: list[str] = []
    family = (len(recipe.arms) - 1) * len(recipe.threads)
    needed = min_runs_for_verdict(family)
    if recipe.replicates < 2:
        warnings.append(
            f"replicates = {recipe.replicates}: one run per arm gives numbers but no "
            "verdict (a difference needs at least 2 replicates, 5 are better)"
        )
    elif recipe.replicates < needed and family > 1:
        warnings.append(
            f"replicates = {recipe.replicates}: with {family} comparisons in the table "
            f"(Holm), no cell can read higher or lower below {needed} runs per arm; "
            f"use replicates = {max(needed, 8)} or fewer arms or thread counts"
        )
    return warnings


def _check_timeline(recipe: Recipe, timeline: Timeline, catalog: Catalog) -> list[str]:
    """A timeline's start knobs and actions against the server, as arms' are."""
    warnings: list[str] = []
    sets = [("timeline.start", timeline.start),
            *((f"timeline.action[{i}].knobs", a.knobs) for i, a in enumerate(timeline.actions))]
    for key, knobs in sets:
        for knob, raw in knobs.items():
            fact = catalog.get(knob)
            if not fact.present:
                raise RecipeError(str(recipe.path), f"{key}.{knob}",
                                  _absent_problem(knob, catalog),
                                  _absent_fix(knob, catalog, f"in {key}"))
            try:
                validate(fact, raw, static_ok=True)
            except KnobError as exc:
                raise RecipeError(str(recipe.path), f"{key}.{knob}", str(exc),
                                  f"change {knob} to a value this server accepts") from None
            if fact.ignored:
                warnings.append(f"{knob} is accepted but ignored on this server "
                                f"({fact.note})")
    return warnings


def _check_pool_max(
    recipe: Recipe, catalog: Catalog, i: int, arm: Arm, values: Mapping[str, object]
) -> None:
    size = values.get("innodb_buffer_pool_size")
    if not isinstance(size, int) or "innodb_buffer_pool_size_max" not in catalog:
        return
    cap_fact = catalog.get("innodb_buffer_pool_size_max")
    try:
        cap = int(cap_fact.value or "")
    except ValueError:
        return
    if cap_fact.present and 0 < cap < size:
        raise RecipeError(
            str(recipe.path),
            f"arm[{i}].knobs.innodb_buffer_pool_size",
            f"arm {arm.name!r}: {arm.knobs['innodb_buffer_pool_size']} is above this server's "
            f"innodb_buffer_pool_size_max ({cap} bytes, read-only), so the resize would fail",
            f"start the server with innodb_buffer_pool_size_max >= {size}, or lower the arm",
        )


def _gate_warnings(recipe: Recipe, catalog: Catalog) -> list[str]:
    out: list[str] = []
    waits = recipe.waits
    if waits.dirty_at_lwm and "innodb_max_dirty_pages_pct_lwm" in catalog:
        lwm = catalog.get("innodb_max_dirty_pages_pct_lwm").value
        try:
            low = float(lwm or "nan")
        except ValueError:
            low = math.nan
        if low == 0:
            limit = catalog.get("innodb_max_dirty_pages_pct").value or "?"
            out.append(
                "wait.dirty_at_lwm: innodb_max_dirty_pages_pct_lwm is 0 on this server, which "
                f"means innodb_max_dirty_pages_pct ({limit}), so the gate barely waits; "
                "write wait.dirty_pct_below = 5.0 for a real gate"
            )
    out.extend(_steady_warnings(recipe))
    return out


def _steady_warnings(recipe: Recipe) -> list[str]:
    if not recipe.waits.plateau and recipe.steady != Steady():
        return ["[steady] is set but wait.plateau is false, so it is not used"]
    return []


def offline_warnings(recipe: Recipe) -> list[str]:
    """The warnings the file alone gives (a run says them once the server answers, with
    the server's own): too few replicates for a verdict, [steady] without a plateau."""
    if recipe.timeline is not None:
        return []
    return _replicate_warnings(recipe) + _steady_warnings(recipe)


def static_knobs(recipe: Recipe, catalog: Catalog) -> list[str]:
    """The recipe's knobs that need a restart to change on this server (recipe order).

    A knob counts when the catalog says it is not dynamic: "static", and also "unknown"
    (MySQL without facts: SET GLOBAL may be refused, so plan for a restart).  Absent
    knobs are left out (``check_for_server`` refuses them).  Arms do not need to differ
    in such a knob for it to be listed: its value still goes into the config file.
    """
    out: list[str] = []
    for knob in recipe.knobs:
        fact = catalog.get(knob)
        if fact.present and not fact.dynamic:
            out.append(knob)
    return out
