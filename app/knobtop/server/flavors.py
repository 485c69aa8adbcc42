"""Bundled per-flavor, per-version facts about the seed knobs (REFERENCE.md sections 0-1)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

Version = tuple[int, int, int]
Mode = Literal["dynamic", "static", "absent", "ignored"]

MYSQL = "mysql"
MARIADB = "mariadb"
NDB = "ndb"

K = 1 << 10
M = 1 << 20
G = 1 << 30
U32 = float((1 << 32) - 1)


@dataclass(frozen=True, slots=True)
class Span:
    """One stretch of versions [since, until) of one flavor where a knob behaves one way."""

    flavor: str
    since: Version
    until: Version | None
    mode: Mode
    note: str = ""
    default: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    type: str = ""

    def covers(self, version: Version) -> bool:
        return self.since <= version and (self.until is None or version < self.until)


@dataclass(frozen=True, slots=True)
class FlavorFact:
    """What the flavor table says about ``knob`` on one flavor and version."""

    knob: str
    flavor: str
    version: Version
    mode: Mode
    note: str = ""
    default: str | None = None
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] = ()
    type: str = ""

    @property
    def present(self) -> bool:
        return self.mode != "absent"

    @property
    def dynamic(self) -> bool:
        return self.mode == "dynamic"

    @property
    def ignored(self) -> bool:
        return self.mode == "ignored"


def _span(flavor: str) -> Callable[..., Span]:
    def make(
        since: Version,
        until: Version | None,
        mode: Mode,
        note: str = "",
        *,
        default: str | None = None,
        minimum: float | None = None,
        maximum: float | None = None,
        choices: tuple[str, ...] = (),
        type: str = "",
    ) -> Span:
        return Span(flavor, since, until, mode, note, default, minimum, maximum, choices, type)

    return make


_my = _span(MYSQL)
_mdb = _span(MARIADB)
_ndb = _span(NDB)

_ONOFF = ("OFF", "ON")
_BOOL = "BOOLEAN"
_UINT = "INT UNSIGNED"
_BIG = "BIGINT UNSIGNED"
_BP_CHUNKS = (
    "resized online in chunks of innodb_buffer_pool_chunk_size (128M); "
    "the size is rounded to chunk x instances"
)
_BP_MAX = (
    "growth is capped by the read-only innodb_buffer_pool_size_max "
    "(read @@innodb_buffer_pool_size_max: the docs disagree on its default)"
)
_BP128 = {"default": str(128 * M), "type": _BIG}
_MTFLUSH_GONE = "removed in 10.3.2"
_ONLY_MARIADB_MT = "MariaDB 10.1-10.2 only"
_NDB_PARAM = "an NDB data-node parameter (config.ini [ndbd default]), not a server variable"
_IO_NOTE = "since 10.5 each thread allows 256 x value in-flight async I/O"
_IO_ES = (
    "; the Enterprise Server docs say dynamic from ES 10.5.3-1, "
    "which conflicts with the community docs (unverified)"
)
_PURGE_LAG_WAIT = "SET GLOBAL innodb_max_purge_lag_wait=0 blocks until history is purged"


def _io_threads(name: str) -> list[Span]:
    common: dict[str, object] = {"minimum": 1, "maximum": 64, "type": _UINT}
    # SYSTEM_VARIABLES on 10.11.19: innodb_write_io_threads takes 2-64 (read: 1-64).
    mariadb_11 = {**common, "minimum": 2} if name == "innodb_write_io_threads" else common
    mysql = [_my((5, 5, 0), None, "static", default="4", **common)]
    if name == "innodb_read_io_threads":
        mysql = [
            _my((5, 5, 0), (8, 4, 0), "static", default="4", **common),
            _my((8, 4, 0), None, "static", "8.4 default: max(4, CPUs / 2)", **common),
        ]
    return [
        *mysql,
        _mdb((10, 1, 0), (10, 5, 0), "static", default="4", **common),
        _mdb((10, 5, 0), (10, 11, 0), "static", _IO_NOTE + _IO_ES, default="4", **common),
        _mdb((10, 11, 0), None, "dynamic", "dynamic from 10.11; " + _IO_NOTE, default="4",
             **mariadb_11),
    ]


def _mtflush(name: str) -> list[Span]:
    if name == "innodb_mtflush_threads":
        kw: dict[str, object] = {"default": "8", "minimum": 1, "maximum": 64, "type": _UINT}
    else:
        kw = {"default": "OFF", "choices": _ONOFF, "type": _BOOL}
    return [
        _my((5, 5, 0), None, "absent", _ONLY_MARIADB_MT),
        _mdb((10, 1, 0), (10, 3, 2), "static", "removed in 10.3.2", **kw),
        _mdb((10, 3, 2), None, "absent", _MTFLUSH_GONE),
    ]


def _buffer_pool_size() -> list[Span]:
    dyn_note = "dynamic since 10.2.2"
    capped = f"{dyn_note}; {_BP_MAX}"
    return [
        _my((5, 5, 0), (5, 7, 5), "static", "dynamic from 5.7.5", **_BP128),
        _my((5, 7, 5), None, "dynamic", _BP_CHUNKS, **_BP128),
        _mdb((10, 1, 0), (10, 2, 2), "static", "dynamic from 10.2.2", **_BP128),
        _mdb((10, 2, 2), (10, 11, 12), "dynamic", dyn_note, **_BP128),
        _mdb((10, 11, 12), (11, 0, 0), "dynamic", capped, **_BP128),
        _mdb((11, 0, 0), (11, 4, 6), "dynamic", dyn_note, **_BP128),
        _mdb((11, 4, 6), (11, 5, 0), "dynamic", capped, **_BP128),
        _mdb((11, 5, 0), (11, 8, 2), "dynamic", dyn_note, **_BP128),
        _mdb((11, 8, 2), None, "dynamic", capped, **_BP128),
    ]


def _max_purge_lag_wait() -> list[Span]:
    added = "added in 10.5.7 and backported to 10.2.35, 10.3.26 and 10.4.16"
    return [
        _my((5, 5, 0), None, "absent", "MariaDB only (10.5.7+)"),
        _mdb((10, 1, 0), (10, 2, 35), "absent", added),
        _mdb((10, 2, 35), (10, 3, 0), "dynamic", _PURGE_LAG_WAIT, type=_BIG),
        _mdb((10, 3, 0), (10, 3, 26), "absent", added),
        _mdb((10, 3, 26), (10, 4, 0), "dynamic", _PURGE_LAG_WAIT, type=_BIG),
        _mdb((10, 4, 0), (10, 4, 16), "absent", added),
        _mdb((10, 4, 16), (10, 5, 0), "dynamic", _PURGE_LAG_WAIT, type=_BIG),
        _mdb((10, 5, 0), (10, 5, 7), "absent", added),
        _mdb((10, 5, 7), None, "dynamic", _PURGE_LAG_WAIT, type=_UINT),
    ]


TABLE: dict[str, tuple[Span, ...]] = {
    "innodb_thread_concurrency": (
        _my((5, 5, 0), None, "dynamic", default="0", minimum=0, maximum=1000, type=_UINT),
        _mdb((10, 1, 0), (10, 5, 5), "dynamic", default="0", minimum=0, maximum=1000,
             type=_UINT),
        _mdb((10, 5, 5), (10, 6, 0), "ignored", "ignored since 10.5.5; removed in 10.6.0",
             default="0", minimum=0, maximum=1000, type=_UINT),
        _mdb((10, 6, 0), None, "absent", "removed in 10.6.0 (ignored since 10.5.5)"),
    ),
    "innodb_doublewrite": (
        _my((5, 5, 0), (8, 0, 30), "static", "enum with more values from 8.0.30", default="ON",
            choices=_ONOFF, type=_BOOL),
        _my((8, 0, 30), None, "dynamic",
            "changes only among the enabled values at runtime (ON, DETECT_AND_RECOVER, "
            "DETECT_ONLY); ON <-> OFF needs a restart. DETECT_AND_RECOVER = ON; "
            "DETECT_ONLY writes metadata only",
            default="ON", choices=("ON", "OFF", "DETECT_AND_RECOVER", "DETECT_ONLY"),
            type="ENUM"),
        _mdb((10, 1, 0), (11, 0, 6), "static", "dynamic enum OFF/ON/fast from 11.0.6",
             default="ON", choices=_ONOFF, type=_BOOL),
        _mdb((11, 0, 6), None, "dynamic",
             "enum OFF/ON/fast since 11.0.6 (MDEV-33545); which minor of each later 11.x "
             "series has it (unverified)",
             default="ON", choices=("OFF", "ON", "fast"), type="ENUM"),
    ),
    "innodb_page_cleaners": (
        _my((5, 5, 0), (5, 7, 4), "absent", "added in MySQL 5.7.4"),
        _my((5, 7, 4), (5, 7, 8), "static", "clamped to innodb_buffer_pool_instances",
            default="1", minimum=1, maximum=64, type=_UINT),
        _my((5, 7, 8), (8, 4, 0), "static", "clamped to innodb_buffer_pool_instances",
            default="4", minimum=1, maximum=64, type=_UINT),
        _my((8, 4, 0), None, "static",
            "clamped to innodb_buffer_pool_instances; 8.4 default (unverified)",
            minimum=1, maximum=64, type=_UINT),
        _mdb((10, 1, 0), (10, 2, 2), "absent", "added in 10.2.2"),
        _mdb((10, 2, 2), (10, 3, 3), "static", "dynamic from 10.3.3", type=_UINT),
        _mdb((10, 3, 3), (10, 5, 0), "dynamic", "ignored from 10.5, removed in 10.6.0",
             type=_UINT),
        _mdb((10, 5, 0), (10, 6, 0), "ignored", "ignored since 10.5; removed in 10.6.0",
             type=_UINT),
        _mdb((10, 6, 0), None, "absent", "removed in 10.6.0 (ignored since 10.5)"),
    ),
    "innodb_mtflush_threads": tuple(_mtflush("innodb_mtflush_threads")),
    "innodb_use_mtflush": tuple(_mtflush("innodb_use_mtflush")),
    "innodb_read_io_threads": tuple(_io_threads("innodb_read_io_threads")),
    "innodb_write_io_threads": tuple(_io_threads("innodb_write_io_threads")),
    "innodb_purge_threads": (
        _my((5, 5, 0), (5, 6, 0), "static", "5.5 range 0-1, default 0 (unverified)",
            default="0", minimum=0, maximum=1, type=_UINT),
        _my((5, 6, 0), (5, 7, 0), "static", "5.6 default 1 (unverified)", default="1",
            type=_UINT),
        _my((5, 7, 0), (8, 4, 0), "static", default="4", minimum=1, maximum=32, type=_UINT),
        _my((8, 4, 0), None, "static", "8.4 default: 1 with <= 16 CPUs, else 4",
            minimum=1, maximum=32, type=_UINT),
        _mdb((10, 1, 0), (10, 2, 0), "static", "10.1 default (unverified)", default="4",
             minimum=1, maximum=32, type=_UINT),
        _mdb((10, 2, 0), (10, 7, 1), "static",
             "dynamic from 10.7.1 (MDEV-26520); Enterprise Server 10.5 is already dynamic",
             default="4", minimum=1, maximum=32, type=_UINT),
        _mdb((10, 7, 1), None, "dynamic", "dynamic since 10.7.1 (MDEV-26520)", default="4",
             minimum=1, maximum=32, type=_UINT),
    ),
    "innodb_buffer_pool_size": tuple(_buffer_pool_size()),
    "innodb_buffer_pool_instances": (
        _my((5, 5, 0), (5, 6, 0), "static", default="1", minimum=1, maximum=64, type=_UINT),
        _my((5, 6, 0), (8, 4, 0), "static", "default 8, or 1 if the buffer pool is < 1G",
            default="8", minimum=1, maximum=64, type=_UINT),
        _my((8, 4, 0), None, "static",
            "8.4 default: 1 if the buffer pool is <= 1G, else min(pool / chunk / 2, CPUs / 4)",
            minimum=1, maximum=64, type=_UINT),
        _mdb((10, 1, 0), (10, 5, 1), "static", "ignored from 10.5.1, removed in 10.6.0",
             default="8", type=_UINT),
        _mdb((10, 5, 1), (10, 6, 0), "ignored", "ignored since 10.5.1; removed in 10.6.0",
             type=_UINT),
        _mdb((10, 6, 0), None, "absent", "removed in 10.6.0 (ignored since 10.5.1)"),
    ),
    "innodb_flush_log_at_trx_commit": (
        _my((5, 5, 0), None, "dynamic", default="1", minimum=0, maximum=2,
            choices=("0", "1", "2"), type=_UINT),
        _mdb((10, 1, 0), None, "dynamic", default="1", minimum=0, maximum=3,
             choices=("0", "1", "2", "3"), type=_BIG),
    ),
    "innodb_io_capacity": (
        _my((5, 5, 0), (8, 4, 0), "dynamic", default="200", minimum=100, type=_BIG),
        _my((8, 4, 0), None, "dynamic", default="10000", minimum=100, type=_BIG),
        _mdb((10, 1, 0), None, "dynamic",
             "seen on 10.11: a value above innodb_io_capacity_max is accepted with warning "
             "1210 and silently raises the max",
             default="200", minimum=100, maximum=U32, type=_BIG),
    ),
    "innodb_io_capacity_max": (
        _my((5, 5, 0), (5, 6, 0), "absent", "added in MySQL 5.6"),
        _my((5, 6, 0), None, "dynamic",
            "default max(2000, 2 x innodb_io_capacity) (unverified)", type=_BIG),
        _mdb((10, 1, 0), None, "dynamic", "default max(2000, 2 x innodb_io_capacity)",
             type=_BIG),
    ),
    "innodb_max_dirty_pages_pct": (
        _my((5, 5, 0), (8, 0, 0), "dynamic", default="75", type="DOUBLE"),
        _my((8, 0, 0), None, "dynamic", default="90", type="DOUBLE"),
        _mdb((10, 1, 0), (10, 5, 7), "dynamic", default="75", minimum=0, maximum=99.999,
             type="DOUBLE"),
        _mdb((10, 5, 7), None, "dynamic", default="90", minimum=0, maximum=99.999,
             type="DOUBLE"),
    ),
    "innodb_max_dirty_pages_pct_lwm": (
        _my((5, 5, 0), (5, 6, 0), "absent", "added in MySQL 5.6"),
        _my((5, 6, 0), (8, 0, 0), "dynamic", default="0", type="DOUBLE"),
        _my((8, 0, 0), None, "dynamic", default="10", type="DOUBLE"),
        _mdb((10, 1, 0), None, "dynamic", '0 means "use innodb_max_dirty_pages_pct"',
             default="0", type="DOUBLE"),
    ),
    "innodb_adaptive_flushing": (
        _my((5, 5, 0), None, "dynamic", default="ON", choices=_ONOFF, type=_BOOL),
        _mdb((10, 1, 0), None, "dynamic", default="ON", choices=_ONOFF, type=_BOOL),
    ),
    "innodb_flush_neighbors": (
        _my((5, 5, 0), (5, 6, 0), "absent", "added in MySQL 5.6"),
        _my((5, 6, 0), (8, 0, 0), "dynamic", default="1", minimum=0, maximum=2,
            choices=("0", "1", "2"), type=_UINT),
        _my((8, 0, 0), None, "dynamic", default="0", minimum=0, maximum=2,
            choices=("0", "1", "2"), type=_UINT),
        _mdb((10, 1, 0), None, "dynamic", default="1", minimum=0, maximum=2,
             choices=("0", "1", "2"), type=_BIG),
    ),
    "innodb_lru_scan_depth": (
        _my((5, 5, 0), (5, 6, 0), "absent", "added in MySQL 5.6"),
        _my((5, 6, 0), None, "dynamic", "per buffer pool instance", default="1024",
            minimum=100, type=_BIG),
        _mdb((10, 1, 0), (10, 5, 7), "dynamic", "per buffer pool instance", default="1024",
             type=_BIG),
        _mdb((10, 5, 7), None, "dynamic", default="1536", type=_BIG),
    ),
    "sort_buffer_size": (
        _my((5, 5, 0), (5, 6, 0), "dynamic", "global and session; 5.5 default (unverified)",
            default=str(2 * M), type=_BIG),
        _my((5, 6, 0), None, "dynamic", "global and session", default=str(256 * K),
            type=_BIG),
        _mdb((10, 1, 0), None, "dynamic", "global and session", default=str(2 * M),
             type=_BIG),
    ),
    "innodb_max_purge_lag_wait": tuple(_max_purge_lag_wait()),
    "performance_schema": (
        _my((5, 5, 0), None, "static",
            "setup_timers removed in 8.0; instruments and consumers are dynamic via setup_*",
            choices=_ONOFF, type=_BOOL),
        _mdb((10, 1, 0), None, "static",
             "setup_timers deprecated in 10.5, removed in 12.0; instruments and consumers "
             "are dynamic via setup_*",
             choices=_ONOFF, type=_BOOL),
    ),
    "DiskPageBufferMemory": (
        _ndb((7, 0, 0), None, "static",
             "config.ini [ndbd default]; takes effect only after a rolling restart of all "
             "data nodes (restart ndb_mgmd with --reload first, then each data node, waiting "
             "for STARTED); max 1024G per a 2018 ConfigInfo.cpp, newer max (unverified)",
             default="64M", minimum=float(4 * M), maximum=float(1024 * G), type=_BIG),
        _my((5, 5, 0), None, "absent", _NDB_PARAM),
        _mdb((10, 1, 0), None, "absent", _NDB_PARAM),
    ),
}

# Knob names are case-insensitive for lookups (DiskPageBufferMemory keeps its spelling).
_BY_LOWER: dict[str, str] = {name.lower(): name for name in TABLE}


def canonical(knob: str) -> str | None:
    """The table's spelling of ``knob``, or None if the table does not know it."""
    return _BY_LOWER.get(knob.strip().lower())


def lookup(flavor: str, version: Version, knob: str) -> FlavorFact | None:
    """The flavor table's fact for ``knob`` on ``flavor`` ``version``; None if it has none.

    Versions older than the flavor's documented floor get the oldest span, with a note
    that it is unverified for that version.
    """
    name = canonical(knob)
    if name is None:
        return None
    spans = [s for s in TABLE[name] if s.flavor == flavor]
    if not spans:
        return None
    span = next((s for s in spans if s.covers(version)), None)
    note_extra = ""
    if span is None:
        oldest = min(spans, key=lambda s: s.since)
        if version >= oldest.since:
            return None
        span = oldest
        floor = ".".join(str(p) for p in oldest.since)
        note_extra = f"(unverified before {flavor} {floor})"
    note = "; ".join(p for p in (span.note, note_extra) if p)
    return FlavorFact(
        knob=name,
        flavor=flavor,
        version=version,
        mode=span.mode,
        note=note,
        default=span.default,
        minimum=span.minimum,
        maximum=span.maximum,
        choices=span.choices,
        type=span.type,
    )


def knobs(flavor: str | None = None) -> list[str]:
    """The knobs the table has facts for (for ``flavor`` only, if given)."""
    return [n for n, spans in TABLE.items() if flavor is None or any(s.flavor == flavor
                                                                      for s in spans)]
