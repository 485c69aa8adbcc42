"""A checked recipe: its arms, load, gates, steadiness rule, timeline and targets.

``recipes.reader`` makes one from a file; ``recipes.checks`` checks one against a server;
``recipes.schedule`` orders its arms; the runner (``recipes.runner``) follows it.

Semantics the runner follows (documented here so recipes and runner agree): the
``history_below``, ``dirty_*`` and ``checkpoint_age_below`` gates are waited for with the
load stopped, before each step starts; then the load runs ``warmup`` seconds; with
``plateau = true`` it keeps running until TPS is steady (``[steady]``), then the measured
``duration`` follows. Each wait gives up after ``timeout`` seconds, is journaled as a
timeout, and the step is measured anyway.

Versions in ``[applies]`` are compared at the precision written: ``<10.6`` refuses every
10.6.x, ``<=10.6`` and ``==10.6`` accept every 10.6.x, ``>=10.5.5`` compares all three parts.
An SQL node of an NDB Cluster (a MySQL server whose catalog has DiskPageBufferMemory) is
both ``ndb`` (compared with its NDB version, ``ndb_version_string``) and ``mysql``
(compared with the server version): an InnoDB recipe for ``mysql`` runs there too.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from knobtop.analysis.plateau import LONG as PLATEAU_LONG
from knobtop.conditions import Needs
from knobtop.errors import KnobtopError
from knobtop.load.base import LoadSpec
from knobtop.recipes.schedule import arm_order
from knobtop.server.catalog import Catalog
from knobtop.tomlcheck import FileError

APPLIES_FLAVORS: tuple[str, ...] = ("mariadb", "mysql", "ndb")
MIN_DURATION = 5
MAX_REPLICATES = 100
MAX_THREADS = 1024
DEFAULT_TIMEOUT = 300.0
DEFAULT_STEADY = (30, 0.05, 0.002)  # window seconds, cv_max, slope_max

Version = tuple[int, int, int]

_CLAUSE = re.compile(r"(>=|<=|==|>|<)\s*(\d+(?:\.\d+){0,2})\Z")
_BYTES = re.compile(r"(\d+(?:\.\d+)?)\s*([KMGT]?)(?:i?B)?\Z", re.IGNORECASE)
_MULT = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_VERSION_IN = re.compile(r"(\d+)\.(\d+)\.(\d+)")
# What Recipe.changed() hands to the recipe's LoadSpec (``threads`` is both's: the sweep)
_LOAD_FIELDS = frozenset(f.name for f in fields(LoadSpec)) - {"threads"}




class RecipeError(FileError):
    """A recipe cannot be used; ``file``, ``key`` (dotted), ``problem`` and ``fix`` say why.

    ``str()`` is ``"FILE: KEY: problem\\n  fix: ..."`` (``"FILE: problem ..."`` without a
    key), the same shape as ``profiles.ProfileError``.
    """


class RunAborted(KnobtopError):
    """The person aborted the run; the baseline was restored."""


class RunFailed(KnobtopError, RuntimeError):
    """The run could not go on (a knob did not take, the load failed); the message says why."""


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
class Curve:
    """``[run] kind = "curve"``: ``knob`` set to each of ``values`` (bytes, ascending) in
    turn; at each, the probe ``probe`` (server.probes, with ``params``) is run and timed,
    and the deltas of the session status ``counters`` over it are read."""

    knob: str
    values: tuple[int, ...]
    probe: str
    params: tuple[tuple[str, int], ...]
    counters: tuple[str, ...]

    @property
    def probe_params(self) -> dict[str, int]:
        return dict(self.params)


@dataclass(frozen=True, slots=True)
class Recipe:
    """A checked recipe; ``path`` is the file it came from."""

    path: Path
    name: str
    description: str
    applies: dict[str, str]
    why: str
    # [load]: the load every step runs. Its ``threads`` is the sweep's first count (a
    # LoadSpec runs at one count, a recipe sweeps ``threads``): load_spec() sets each
    # step's; its ``duration`` is the measured seconds of a step (a timeline's whole run)
    load: LoadSpec
    threads: tuple[int, ...]  # the sweep: every arm runs at each count
    warmup: int  # seconds of load before each measured step (not a LoadSpec's)
    waits: Waits
    steady: Steady
    replicates: int
    order: str
    seed: int
    pause: float
    arms: tuple[Arm, ...]
    level_order: str = "ascending"
    timeline: Timeline | None = None  # [run] kind = "timeline": one load, actions on it
    # [run] kind (recipes/kinds/: how it is read and run); "tune": a search's (Search.recipe,
    # kinds/tune.py), never a file's
    kind: str = "arms"
    curve: Curve | None = None  # [run] kind = "curve": a knob swept, a probe at each value
    calibrate: int = 0  # rounds of the baseline arm against itself before the arms run
    # Each measured window is a timed run of its own (after the warmup run): the driver's
    # summary gives the window's transactions and latency percentile, as the seeds read them
    timed: bool = False
    until_ci: float | None = None  # add rounds until every cell's CI is within +-until_ci
    max_replicates: int | None = None  # the cap on rounds with until_ci
    targets: tuple[Target, ...] = ()  # further servers arms run on ([targets.NAME])
    # [allow] reach: the reach variables (server.policy) the file asks to set; they are set
    # only when the command line says --allow-reach too
    allow_reach: tuple[str, ...] = ()
    # [conditions]: what the effect needs of the box, checked against the conditions
    # probe before the first step (server.conditions)
    needs: Needs = field(default_factory=Needs)

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

    def changed(self, **changes: Any) -> Recipe:
        """This recipe with ``changes`` (``dataclasses.replace``'s keywords): a LoadSpec
        field's (duration, tables, instances ...) go to :attr:`load`, the rest to the
        recipe; a new ``threads`` sweep sets ``load.threads`` to its first count."""
        load = {k: changes.pop(k) for k in list(changes) if k in _LOAD_FIELDS}
        if "threads" in changes:
            load["threads"] = changes["threads"][0]
        return replace(self, load=replace(self.load, **load), **changes)

    def load_spec(self, threads: int, duration: int, arm: Arm | None = None) -> LoadSpec:
        """The load of one step: this recipe's workload at ``threads`` for ``duration`` s,
        with what ``arm`` runs differently."""
        spec = replace(self.load, threads=threads, duration=duration)
        if arm is None or not arm.load:
            return spec
        own = replace(spec, **arm.load)
        if (own.engine, own.table_options) != (spec.engine, spec.table_options):
            own = replace(own, schema=own.shape)  # tables of its own: a database of its own
        return own

    def arm_specs(self) -> list[tuple[Arm, LoadSpec]]:
        """Each arm with its load at the first thread count (for preparing tables); none
        for a curve, whose probe makes a table of its own."""
        if self.curve is not None:
            return []
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
        if self.timeline is not None or self.curve is not None:
            return steps  # one load for the whole run, or a curve's probe: no steps
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
            return float(self.load.duration)
        if self.curve is not None:  # the pauses between values (the probe takes little)
            return max(len(self.curve.values) - 1, 0) * self.pause
        count = (self.replicates * len(self.arms) + self.calibrate) * len(self.threads)
        return count * (self.warmup + self.load.duration) + max(count - 1, 0) * self.pause
