"""Typed journal events and their one-line JSON encoding."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, ClassVar

FORMAT_VERSION = 1

JsonDict = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Event:
    """Base of every journal line after the header.

    ``t`` is monotonic seconds since the session started (for rates and
    ordering); ``wall`` is Unix time (for people and for joining journals).
    """

    kind: ClassVar[str] = "event"
    t: float
    wall: float


@dataclass(frozen=True, slots=True)
class Header:
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


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class Change(Event):
    """A knob change attempt: what was asked, what the server holds now, how it went."""

    kind: ClassVar[str] = "change"
    knob: str
    requested: str
    old: str | None
    new: str | None
    method: str
    result: str  # "ok" | "refused" | "failed"
    message: str = ""
    warnings: list[str] = field(default_factory=list)
    duration: float = 0.0
    side_effects: dict[str, list[str | None]] = field(default_factory=dict)
    reason: str = ""  # "" for a person's change, "undo", "revert to baseline"


@dataclass(frozen=True, slots=True)
class Restart(Event):
    """One step of a static change on one server node, with how long it took."""

    kind: ClassVar[str] = "restart"
    node: str
    step: str  # write_dropin | restart | wait | verify | rollback
    result: str  # ok | failed
    seconds: float
    message: str = ""


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class Knobs(Event):
    """Snapshot of knob facts and values (at start, and after a reconnect)."""

    kind: ClassVar[str] = "knobs"
    values: dict[str, str | None]
    facts: dict[str, JsonDict] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Note(Event):
    kind: ClassVar[str] = "note"
    text: str


@dataclass(frozen=True, slots=True)
class Mark(Event):
    kind: ClassVar[str] = "mark"
    label: str


@dataclass(frozen=True, slots=True)
class Error(Event):
    """Something went wrong that the user should see; ``source`` says which part."""

    kind: ClassVar[str] = "error"
    source: str
    message: str
    gap: bool = False


@dataclass(frozen=True, slots=True)
class End(Event):
    kind: ClassVar[str] = "end"
    reason: str
    samples: int = 0


@dataclass(frozen=True, slots=True)
class RecipeRun(Event):
    """A recipe run started, ended, was aborted or failed; ``plan`` describes it."""

    kind: ClassVar[str] = "recipe"
    action: str  # "start" | "end" | "aborted" | "failed"
    name: str
    plan: JsonDict = field(default_factory=dict)  # path, arms, threads, replicates, ...
    message: str = ""


@dataclass(frozen=True, slots=True)
class StepResult(Event):
    """One measured step of a recipe: an arm at a thread count, one replicate.

    ``start``/``end`` bound the measured window (warmup and waits excluded); the
    numbers are medians over its per-second load reports and samples."""

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


@dataclass(frozen=True, slots=True)
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


@dataclass(frozen=True, slots=True)
class Unknown(Event):
    """An event type this knobtop does not know (written by a newer one)."""

    kind: ClassVar[str] = "unknown"
    type: str
    data: JsonDict = field(default_factory=dict)


EVENT_TYPES: dict[str, type[Event]] = {
    cls.kind: cls
    for cls in (Sample, Load, Change, Restart, Phase, Knobs, Note, Mark, Error, End, RecipeRun,
                StepResult, Incident)
}

_FIELDS: dict[type[Any], tuple[str, ...]] = {}


def _field_names(cls: type[Any]) -> tuple[str, ...]:
    names = _FIELDS.get(cls)
    if names is None:
        names = tuple(f.name for f in dataclasses.fields(cls))
        _FIELDS[cls] = names
    return names


def to_dict(obj: Event | Header) -> JsonDict:
    """The JSON object for one journal line; ``ev`` names the type."""
    out: JsonDict = {"ev": obj.kind}
    for name in _field_names(type(obj)):
        out[name] = getattr(obj, name)
    return out


class EventDecodeError(ValueError):
    pass


def header_from_dict(data: JsonDict) -> Header:
    if data.get("ev") != "header":
        raise EventDecodeError("the first line is not a knobtop journal header")
    kwargs = {k: data[k] for k in _field_names(Header) if k in data}
    try:
        return Header(**kwargs)
    except TypeError as exc:
        raise EventDecodeError(f"header is missing fields: {exc}") from None


def event_from_dict(data: JsonDict) -> Event:
    kind = data.get("ev")
    if not isinstance(kind, str):
        raise EventDecodeError("line has no event type ('ev')")
    t = data.get("t")
    wall = data.get("wall")
    if not isinstance(t, int | float) or not isinstance(wall, int | float):
        raise EventDecodeError(f"{kind} event has no numeric 't' and 'wall'")
    cls = EVENT_TYPES.get(kind)
    if cls is None:
        rest = {k: v for k, v in data.items() if k not in ("ev", "t", "wall")}
        return Unknown(t=float(t), wall=float(wall), type=kind, data=rest)
    names = _field_names(cls)
    kwargs = {k: data[k] for k in names if k in data}
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise EventDecodeError(f"{kind} event is missing fields: {exc}") from None
