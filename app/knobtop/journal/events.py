"""Typed journal events and their one-line JSON encoding."""
# Over 700 lines (a single-subject file, tests/unit/test_sizes.py): every event type of the
# journal format and the one encoder and checker they share; splitting the types from their
# encoding would split the format.

from __future__ import annotations

import dataclasses
import operator
import reprlib
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

import orjson

from knobtop.errors import KnobtopError

FORMAT_VERSION = 1

JsonDict = dict[str, Any]


class _ByValue:
    """Equality, hash and repr of the journal's types, from their dataclass fields.

    A dataclass's own three are compiled from source generated for each type as the module
    is imported: for the 19 types here, about a fifth of the module's import, which every
    report and replay pays before it reads a line.  These three read the same fields and
    give the same answers: equal when of the same type with equal fields compared
    (``compare``), the hash of the tuple of those hashed (``hash``), and
    ``Note(t=1.0, wall=2.0, text='x')`` of those shown (``repr``)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            compared = _by_value(type(self))[0]
            return compared(self) == compared(other)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(_by_value(type(self))[1](self))

    @reprlib.recursive_repr()
    def __repr__(self) -> str:
        shown = ", ".join(f"{name}={getattr(self, name)!r}"
                          for name in _by_value(type(self))[2])
        return f"{self.__class__.__qualname__}({shown})"


_Values = Callable[[Any], tuple[Any, ...]]
_BY_VALUE: dict[type[Any], tuple[_Values, _Values, tuple[str, ...]]] = {}


def _by_value(cls: type[Any]) -> tuple[_Values, _Values, tuple[str, ...]]:
    """The fields of ``cls`` compared, hashed (as tuples of an instance's values) and
    shown (names), as dataclasses chooses them for its own methods."""
    found = _BY_VALUE.get(cls)
    if found is None:
        fields = dataclasses.fields(cls)
        hashed = [f.name for f in fields if (f.compare if f.hash is None else f.hash)]
        found = (_values([f.name for f in fields if f.compare]), _values(hashed),
                 tuple(f.name for f in fields if f.repr))
        _BY_VALUE[cls] = found
    return found


def _values(names: list[str]) -> _Values:
    if len(names) > 1:
        return operator.attrgetter(*names)  # (a tuple, given more than one name)
    return lambda obj: tuple(getattr(obj, name) for name in names)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Event(_ByValue):
    """Base of every journal line after the header.

    ``t`` is monotonic seconds since the session started (for rates and
    ordering); ``wall`` is Unix time (for people and for joining journals).
    """

    kind: ClassVar[str] = "event"
    t: float
    wall: float


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Header(_ByValue):
    """First line of a journal: what, where and when, plus the sample layout."""

    kind: ClassVar[str] = "header"
    format: int
    knobtop: str
    profile: str
    started_wall: float
    interval: float
    server: JsonDict = field(default_factory=dict)
    hosts: JsonDict = field(default_factory=dict)
    counters: list[str] = field(default_factory=list)
    host_fields: list[str] = field(default_factory=list)
    # Recipes whose arms run on other servers (issue 19): each further target by name,
    # {"profile", "server", "hosts"} as above; its events carry ``target`` = that name.
    targets: JsonDict = field(default_factory=dict)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Sample(Event):
    """Raw server counters (aligned with the header's ``counters``) and host CPU times.

    ``lat`` is how long the poll took; ``re`` marks the first sample after a
    (re)connect, from which no rate may be derived.
    """

    kind: ClassVar[str] = "sample"
    v: list[int | float | None]
    lat: float = 0.0
    host: dict[str, list[float]] = field(default_factory=dict)
    re: bool = False
    # NDB SQL nodes only: per data node [page_requests_direct_return, page_requests_wait_io].
    ndb: dict[str, list[int]] = field(default_factory=dict)
    target: str = ""  # "": the header's server; else one of the header's ``targets``


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Load(Event):
    """One interval report from a load driver (sysbench's per-second line)."""

    kind: ClassVar[str] = "load"
    src: str
    s: int
    thds: int
    tps: float
    qps: float
    r: float
    w: float
    o: float
    pct: int
    lat: float
    err: float
    reconn: float
    target: str = ""
    # The built-in LinkBench (issue 20): per operation [ops/s, p50, p95, p99, max] (ms)
    ops: dict[str, list[float]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Change(Event):
    """A knob change attempt: what was asked, what the server holds now, how it went."""

    kind: ClassVar[str] = "change"
    knob: str
    requested: str
    old: str | None
    new: str | None
    method: str
    result: str  # "ok" | "unchanged" (it held that value already) | "refused" | "failed"
    message: str = ""
    warnings: list[str] = field(default_factory=list)
    duration: float = 0.0
    side_effects: dict[str, list[str | None]] = field(default_factory=dict)
    reason: str = ""  # "" for a person's change, "undo", "revert to baseline"
    target: str = ""
    # A reach variable (server.policy: names a file, opens the network, ...) changed with
    # permission: its kind ("path", "network", ...); "" for a performance variable.
    reach: str = ""

    @property
    def holds(self) -> bool:
        """The server holds the value asked for: set now ("ok") or already ("unchanged")."""
        return self.result in ("ok", "unchanged")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class OutsideChange(Event):
    """A watched knob changed outside knobtop (another client's SET GLOBAL, another
    session, a restart knobtop did not make): knobtop last saw ``old`` at ``since``
    (journal time) and found ``new`` at ``t``, so it changed in between. knobtop did not
    change that knob in that window (its own changes are ``change`` events)."""

    kind: ClassVar[str] = "outside"
    knob: str
    old: str | None
    new: str | None
    since: float
    target: str = ""

    @property
    def text(self) -> str:
        """``changed outside knobtop: innodb_io_capacity 200 -> 300``"""
        return f"changed outside knobtop: {self.knob} {self.old} -> {self.new}"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Restart(Event):
    """One step of a static change on one server node, with how long it took."""

    kind: ClassVar[str] = "restart"
    node: str
    step: str  # write_dropin | restart | wait | verify | rollback | reconnect | reconcile
    result: str  # ok | failed
    seconds: float
    message: str = ""
    target: str = ""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Phase(Event):
    """Load started, stopped or failed; threads and workload of that phase."""

    kind: ClassVar[str] = "phase"
    action: str  # "start" | "stop" | "failed"
    phase: int
    driver: str
    workload: str
    threads: int
    host: str = "local"
    message: str = ""
    summary: JsonDict = field(default_factory=dict)
    target: str = ""

    @property
    def load_text(self) -> str:
        """``oltp_read_write x64``, with ``in 8 instances`` when a start ran several."""
        instances = self.summary.get("instances")
        more = f" in {instances} instances" if isinstance(instances, int) and instances > 1 \
            else ""
        return f"{self.workload} x{self.threads}{more}"


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Knobs(Event):
    """Snapshot of knob facts and values (at start, and after a reconnect)."""

    kind: ClassVar[str] = "knobs"
    values: dict[str, str | None]
    facts: dict[str, JsonDict] = field(default_factory=dict)
    target: str = ""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Note(Event):
    kind: ClassVar[str] = "note"
    text: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Mark(Event):
    kind: ClassVar[str] = "mark"
    label: str


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Error(Event):
    """Something went wrong that the user should see; ``source`` says which part."""

    kind: ClassVar[str] = "error"
    source: str
    message: str
    gap: bool = False


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class End(Event):
    kind: ClassVar[str] = "end"
    reason: str
    samples: int = 0


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class RecipeRun(Event):
    """A recipe run started, ended, was aborted or failed; ``plan`` describes it."""

    kind: ClassVar[str] = "recipe"
    action: str  # "start" | "end" | "aborted" | "failed"
    name: str
    plan: JsonDict = field(default_factory=dict)  # path, arms, threads, replicates, ...
    message: str = ""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class StepResult(Event):
    """One measured step of a recipe: an arm at a thread count, one replicate.

    ``start``/``end`` bound the measured window (warmup and waits excluded); ``tps``,
    ``p95`` and the rest are medians over its per-second load reports and samples.
    ``avg_tps`` is transactions over the window's seconds (a stalled second counts as 0),
    ``stall`` the share of seconds below half the median; ``p95`` holds the latency
    percentile ``pct`` the load asked for (the name predates ``pct``); ``drift`` and
    ``flat`` describe the measured window's own trend (``analysis.plateau``);
    ``calibration`` marks a run of the baseline against itself before the arms."""

    kind: ClassVar[str] = "step"
    recipe: str
    index: int
    replicate: int
    arm: str
    threads: int
    start: float
    end: float
    tps: float | None
    p95: float | None
    err: float | None = None
    hit_ratio: float | None = None
    dirty_pct: float | None = None
    intervals: int = 0
    waits: dict[str, float] = field(default_factory=dict)  # gate -> seconds waited
    steady: bool = False  # the TPS plateau was reached before measuring
    avg_tps: float | None = None
    stall: float | None = None
    pct: int = 95
    # The arm's knobs and the server's side effects, as read before the step (the runner
    # puts back what is not the arm's first)
    knobs: dict[str, str | None] = field(default_factory=dict)
    drift: float | None = None
    flat: bool | None = None
    calibration: bool = False
    # History list length at the window's first and last sample (the purge backlog), and
    # what the window cost the server's host per transaction (metrics.derive.step_efficiency)
    history_start: float | None = None
    history_end: float | None = None
    cpu_us_txn: float | None = None
    reads_txn: float | None = None
    rkb_txn: float | None = None
    wkb_txn: float | None = None
    r_s: float | None = None
    rmb_s: float | None = None
    wmb_s: float | None = None
    # The server's own (metrics.footprint): mysqld's CPU per transaction, its RSS and the
    # databases' and datadir's size at the window's end; ``disk`` names the datadir's
    # device when the disk columns above are its own ("" = every whole disk of the host)
    mysqld_us_txn: float | None = None
    rss_mb: float | None = None
    db_mb: float | None = None
    datadir_mb: float | None = None
    disk: str = ""
    # [run] timed: the window's own run summary (several instances: transactions summed,
    # the worst instance's percentile and maximum, the mean latency over all)
    window_txn: int | None = None
    window_pct_ms: float | None = None
    window_avg_ms: float | None = None
    window_max_ms: float | None = None
    # NDB: each data node's disk page buffer hit ratio over the window (%, the median of
    # its per-sample ratios); the InnoDB hit_ratio above is the SQL node's own
    ndb_hit: dict[str, float] = field(default_factory=dict)
    target: str = ""  # the arm's server: "" the header's, else one of its ``targets``
    # LinkBench (issue 20): per operation over the timed window [count, p50, p95, p99,
    # max, mean] (ms), from one sketch of every latency
    ops: dict[str, list[float]] = field(default_factory=dict)
    load_ips: float | None = None  # LinkBench: its load phase's inserts/s for these tables
    # LinkBench: its load phase's readings for these tables (metrics.footprint.load_phase:
    # rows, seconds, and mysqld's CPU seconds, the datadir device's reads / bytes read /
    # writes / bytes written over the load, the databases' and datadir's bytes and mysqld's
    # RSS at its end; a figure that could not be read is absent)
    load_phase: dict[str, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Checkpoint(Event):
    """A timeline recipe's checkpoint: ``at`` seconds after its load started, each of
    ``values`` over the ``window`` seconds before it (``load_tps``: transactions / seconds,
    a second without load counting 0; sampled metrics: their mean; ``ndb_hit@NODE``: a
    data node's disk page buffer hit ratio), and ``trends`` of those that still move
    ("climbing" or "falling" beyond their noise over the last 2 x window seconds).

    A curve recipe's point is one too: ``at`` seconds after its first value, ``window``
    the seconds its probe took, ``values`` the knob's value (bytes, first), ``seconds``,
    ``queries`` and each counter's delta over the probe."""

    kind: ClassVar[str] = "checkpoint"
    recipe: str
    at: float
    window: float
    values: dict[str, float | None] = field(default_factory=dict)
    trends: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Trial(Event):
    """One trial of a ``knobtop tune`` search (issue 21): the knob values measured in the
    recipe step ``step`` (number 0: the baseline's own values), the ``objective`` the
    search scores (average TPS, or the latency percentile in ms; None when the step did
    not measure it), every measured ``values`` (tps, latency_ms, err_s), whether it kept
    the search's constraints (``violated`` names those it broke), whether the TPS reached
    its plateau before measuring, and ``state`` ("done", or "failed" with ``message``
    when the knobs did not take). ``resumed``: copied from the journal a resumed search
    continued (``from_journal``), not measured in this one."""

    kind: ClassVar[str] = "trial"
    tune: str
    number: int
    arm: str
    knobs: dict[str, str]
    objective: float | None
    values: dict[str, float | None] = field(default_factory=dict)
    feasible: bool = True
    violated: list[str] = field(default_factory=list)
    steady: bool = False
    step: int = -1
    state: str = "done"
    message: str = ""
    resumed: bool = False
    from_journal: str = ""


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Progress(Event):
    """How far a recipe or tune run is (``run`` names it): ``done`` of ``total`` ``unit``
    (steps, checkpoints, values), what it does (``state``) and waits for, about how many
    seconds are left of the run (and of the current phase: ``phase_left``), the step under
    way (``step`` -1: none; its arm, the arm's knobs, threads and replicate), and ``note``,
    a finding of the run said to whoever watches (calibration, an added round, a trial).

    The session journals one when the step, the count or the state changes, or with a
    note; the seconds ticking down in between reach the front ends without a line."""

    kind: ClassVar[str] = "progress"
    run: str
    done: int
    total: int
    unit: str = "steps"
    state: str = ""
    waiting_for: str = ""
    seconds_left: float = 0.0
    phase_left: float | None = None
    step: int = -1
    arm: str = ""
    knobs: dict[str, str] = field(default_factory=dict)
    threads: int = 0
    replicate: int = 0
    note: str = ""

    @property
    def doing(self) -> str:
        """"warming up, 4 s left": the state, with what is left of a counted-down phase."""
        if self.phase_left is None:
            return self.state
        return f"{self.state}, {self.phase_left:.0f} s left"

    @property
    def label(self) -> str:
        """"step 3/12: arm base x8 rep 1 — warming up, 4 s left", or what it does alone."""
        if self.step < 0:
            return self.doing
        return (f"step {self.step + 1}/{self.total}: arm {self.arm} x{self.threads} "
                f"rep {self.replicate} — {self.doing}")


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Incident(Event):
    """What the incident page showed (sampled only while it is shown): the processlist,
    InnoDB lock waits, the oldest transaction, replication, Galera, the error log's tail.

    Compact rows: ``procs`` [id, user, db, command, seconds, state, statement], ``locks``
    [waiting thread, seconds waited, its statement, blocking thread, its statement].
    Statements are shortened and secrets' literals redacted; with ``statements`` false
    they were never read (null)."""

    kind: ClassVar[str] = "incident"
    threads: int = 0
    procs: list[list[str | float | None]] = field(default_factory=list)
    locks: list[list[str | float | None]] = field(default_factory=list)
    oldest: dict[str, str | float | None] = field(default_factory=dict)
    repl: list[dict[str, str | float | None]] = field(default_factory=list)
    galera: dict[str, str] = field(default_factory=dict)
    log: list[str] = field(default_factory=list)
    log_path: str = ""
    statements: bool = True
    problems: list[str] = field(default_factory=list)


@dataclass(frozen=True, slots=True, eq=False, repr=False)
class Unknown(Event):
    """An event type this knobtop does not know (written by a newer one)."""

    kind: ClassVar[str] = "unknown"
    type: str
    data: JsonDict = field(default_factory=dict)


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (Sample, Load, Change, OutsideChange, Restart, Phase, Knobs, Note, Mark, Error,
                End, RecipeRun, StepResult, Incident, Checkpoint, Trial, Progress)
}

_FIELDS: dict[type[Any], tuple[str, ...]] = {}


def _field_names(cls: type[Any]) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls))
        _FIELDS[cls] = names
    return names


def to_dict(obj: Event | Header) -> JsonDict:
    """The JSON object for one journal line; ``ev`` names the type.  An event of the
    header's own server leaves ``target`` out (a one-server journal reads as before)."""
    out: JsonDict = {"ev": obj.kind}
    for name in _field_names(type(obj)):
        out[name] = getattr(obj, name)
    for key in _LEFT_OUT_EMPTY:  # newer fields, written only when they say something
        if key in out and not out[key]:
            del out[key]
    return out


_LEFT_OUT_EMPTY = ("target", "ops")


def target_of(event: Event) -> str:
    """The server an event is about: "" for the header's, else a ``targets`` name."""
    return getattr(event, "target", "")


class EventDecodeError(KnobtopError, ValueError):
    pass


class NewerFormatError(EventDecodeError):
    """A journal written by a newer knobtop, in a format this one cannot read."""


# -- field checks --------------------------------------------------------------------------
# Every decoded field is checked against its annotation, so nothing past the decoder meets
# a list where it expects a number. Checks are built once per event type and run only when
# a line is decoded (the index reads lines on demand), so opening a journal stays fast.

Check = Callable[[Any], bool]


def _is_int(v: Any) -> bool:
    return type(v) is int


def _is_number(v: Any) -> bool:
    return type(v) is float or type(v) is int


def _is_str(v: Any) -> bool:
    return type(v) is str


def _is_bool(v: Any) -> bool:
    return type(v) is bool


def _is_none(v: Any) -> bool:
    return v is None


def _any(_v: Any) -> bool:
    return True


def _list_of(item: Check) -> Check:
    return lambda v: type(v) is list and all(item(x) for x in v)


def _dict_of(item: Check) -> Check:
    return lambda v: type(v) is dict and all(item(x) for x in v.values())


def _one_of(checks: list[Check]) -> Check:
    return lambda v: any(c(v) for c in checks)


_SIMPLE: dict[Any, tuple[Check, str]] = {
    int: (_is_int, "integer"),
    float: (_is_number, "number"),
    str: (_is_str, "string"),
    bool: (_is_bool, "boolean"),
    type(None): (_is_none, "null"),
    Any: (_any, "value"),
}
# The exact Python types each simple annotation accepts (bool is not an int here): a union
# of them, and a list of such a union, is checked by type membership, in C, not per value
# through Python calls: a sample's counters are a list of a hundred numbers each second.
_TYPES: dict[Any, frozenset[type]] = {
    int: frozenset({int}), float: frozenset({int, float}), str: frozenset({str}),
    bool: frozenset({bool}), type(None): frozenset({type(None)}),
}


def _types_of(hint: Any) -> frozenset[type] | None:
    """The types a value of ``hint`` may have, when that alone decides it (else None)."""
    if hint in _TYPES:
        return _TYPES[hint]
    if typing.get_origin(hint) in (types.UnionType, typing.Union):
        parts = [_types_of(a) for a in typing.get_args(hint)]
        if all(part is not None for part in parts):
            return frozenset().union(*(part for part in parts if part is not None))
    return None


def _checker(hint: Any) -> tuple[Check, list[str]]:
    """A check for a value of type ``hint`` (as the dataclasses declare them) and the
    nouns that name what it accepts (one per member of a union)."""
    if hint in _SIMPLE:
        check, noun = _SIMPLE[hint]
        return check, [noun]
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is list:
        check, nouns = _checker(args[0])
        allowed = _types_of(args[0])
        if allowed is not None:
            return (lambda v: type(v) is list and allowed.issuperset(map(type, v))), [
                f"list of {_plural(nouns)}"]
        return _list_of(check), [f"list of {_plural(nouns)}"]
    if origin is dict:
        check, nouns = _checker(args[1])
        if check is _any:
            return (lambda v: type(v) is dict), ["object"]
        return _dict_of(check), [f"object of {_plural(nouns)}"]
    if origin in (types.UnionType, typing.Union):
        parts = [_checker(a) for a in args]
        nouns = [n for _, ns in parts for n in ns]
        if "number" in nouns and "integer" in nouns:  # a number takes integers too
            nouns.remove("integer")
        allowed = _types_of(hint)
        if allowed is not None:
            return (lambda v: type(v) in allowed), nouns
        return _one_of([c for c, _ in parts]), nouns
    raise TypeError(f"no journal check for {hint!r}")


def _plural(nouns: list[str]) -> str:
    # "list of strings" -> "lists of strings"; "number" -> "numbers"
    return " or ".join(n.replace(" of ", "s of ", 1) if " of " in n else n + "s"
                       for n in nouns)


def _singular(nouns: list[str]) -> str:
    return " or ".join(n if n == "null" else ("an " if n[0] in "aeiou" else "a ") + n
                       for n in nouns)


_CHECKS: dict[type[Any], tuple[tuple[str, Check, str], ...]] = {}


def _checks(cls: type[Any]) -> tuple[tuple[str, Check, str], ...]:
    checks = _CHECKS.get(cls)
    if checks is None:
        hints = typing.get_type_hints(cls)
        checks = tuple((name, check, _singular(nouns)) for name in _field_names(cls)
                       for check, nouns in [_checker(hints[name])])
        _CHECKS[cls] = checks
    return checks


def _shown(value: Any) -> str:
    """A wrong value as it stands in the file (JSON), cut short."""
    text = orjson.dumps(value).decode()
    return text if len(text) <= 40 else text[:37] + "..."


def _decode(cls: type[Any], data: JsonDict, what: str) -> dict[str, Any]:
    """The fields of ``cls`` from ``data``, each checked; EventDecodeError names the first
    wrong or missing one: ``field X should be Y``."""
    kwargs: dict[str, Any] = {}
    for f_name, check, want in _checks(cls):
        if f_name in data:
            value = data[f_name]
            if not check(value):
                raise EventDecodeError(
                    f"field {f_name} should be {want} ({what} has {_shown(value)})")
            kwargs[f_name] = value
    return kwargs


def header_from_dict(data: JsonDict) -> Header:
    if data.get("ev") != "header":
        raise EventDecodeError("the first line is not a knobtop journal header")
    version = data.get("format")
    if type(version) is int and version > FORMAT_VERSION:
        raise NewerFormatError(
            f"written by a newer knobtop: format {version}, this knobtop reads up to "
            f"{FORMAT_VERSION}; upgrade knobtop")
    if type(version) is int and version < 1:
        raise EventDecodeError(f"field format should be 1 to {FORMAT_VERSION} (header has "
                               f"{version})")
    kwargs = _decode(Header, data, "the header")
    if kwargs.get("interval", 1.0) <= 0:
        raise EventDecodeError(
            f"field interval should be above 0 (the header has {kwargs['interval']!r})")
    try:
        return Header(**kwargs)
    except TypeError as exc:
        raise EventDecodeError(f"header is missing fields: {exc}") from None


def event_from_dict(data: JsonDict) -> Event:
    kind = data.get("ev")
    if not isinstance(kind, str) or not kind:
        raise EventDecodeError("line has no event type ('ev')")
    t = data.get("t")
    wall = data.get("wall")
    if not isinstance(t, int | float) or not isinstance(wall, int | float) or not (
            _is_number(t) and _is_number(wall)):
        raise EventDecodeError(f"{kind} event has no numeric 't' and 'wall'")
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        rest = {k: v for k, v in data.items() if k not in ("ev", "t", "wall")}
        return Unknown(t=float(t), wall=float(wall), type=kind, data=rest)
    kwargs = _decode(cls, data, f"{'an' if kind[0] in 'aeiou' else 'a'} {kind} event")
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise EventDecodeError(f"{kind} event is missing fields: {exc}") from None
