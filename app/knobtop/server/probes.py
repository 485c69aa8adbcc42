"""Probes: fixed statements a curve recipe (``[run] kind = "curve"``) times at each step.

A probe is code, named by an allow-listed name (``PROBES``) with typed integer parameters:
the recipe file never holds SQL.  Each probe works on a table of its own that it creates
and fills with deterministic data in a database of its own (``PROBE_DATABASE``), and
drops at the end; identifiers are quoted with ``sqlquote.quote_ident`` and values are
bound parameters.  Every statement has a deadline (``ServerLink.query``'s timeout).

``order_by_offset`` is seed 002's (the sort_buffer_size post): ``repeats`` queries
``SELECT ... ORDER BY k LIMIT offset, 1`` on ``rows`` rows with ``k`` unindexed, so each
one sorts the whole table; a step's reading is their total time and the deltas of the
named session status counters (``Sort_merge_passes``) over them.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from knobtop.server.link import LONG_QUERY_TIMEOUT, ServerError, ServerLink
from knobtop.sqlquote import quote_ident

PROBE_DATABASE = "knobtop_probe"
PROBE_TIMEOUT = 600.0  # seconds one probe query may take (a sort in a tiny buffer)
FILL_BATCH = 1000  # rows per INSERT while filling
PHASES = ("setup", "run", "drop")
_COUNTER = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}\Z")


class ProbeError(ServerError):
    """A probe was asked for what it does not do (an unknown name, phase or parameter)."""


@dataclass(frozen=True)
class Param:
    """One typed parameter of a probe: an integer in [lo, hi]."""

    name: str
    lo: int
    hi: int
    about: str


@dataclass(frozen=True)
class ProbeSpec:
    """What a recipe may name: the probe and its parameters (all required)."""

    name: str
    about: str
    params: tuple[Param, ...]


ORDER_BY_OFFSET = ProbeSpec(
    "order_by_offset",
    "ORDER BY an unindexed column LIMIT offset, 1 on a table of its own",
    (Param("rows", 1000, 10_000_000, "rows in the probe's table"),
     Param("offset", 0, 10_000_000, "the LIMIT's offset (below rows)"),
     Param("repeats", 1, 1000, "queries per step (timed together)")))

PROBES: dict[str, ProbeSpec] = {ORDER_BY_OFFSET.name: ORDER_BY_OFFSET}


@dataclass(frozen=True)
class ProbeReading:
    """What one phase of a probe took: its seconds and (a run) each counter's delta."""

    seconds: float
    counters: dict[str, float] = field(default_factory=dict)


def check_probe(name: str, params: Mapping[str, int], counters: Sequence[str] = ()) -> None:
    """ProbeError unless ``name`` is a probe and ``params`` are exactly its, in range."""
    spec = PROBES.get(name)
    if spec is None:
        raise ProbeError(f"no probe named {name!r} (probes: {', '.join(PROBES)})")
    known = {p.name: p for p in spec.params}
    if set(params) != set(known):
        raise ProbeError(f"probe {name} takes {', '.join(known)}, given "
                         f"{', '.join(params) or 'none'}")
    for key, value in params.items():
        p = known[key]
        if isinstance(value, bool) or not isinstance(value, int) or not p.lo <= value <= p.hi:
            raise ProbeError(f"probe {name}: {key} = {value!r} is not an integer in "
                             f"[{p.lo}, {p.hi}]")
    if name == ORDER_BY_OFFSET.name and params["offset"] >= params["rows"]:
        raise ProbeError(f"probe {name}: offset {params['offset']} is not below rows "
                         f"{params['rows']}")
    check_counters(counters)


def check_counters(counters: Sequence[str]) -> None:
    """ProbeError unless each of ``counters`` is written as a status variable's name."""
    for counter in counters:
        if not isinstance(counter, str) or not _COUNTER.match(counter):
            raise ProbeError(f"{counter!r} is not a status counter name")


def _table() -> str:
    return f"{quote_ident(PROBE_DATABASE)}.{quote_ident(ORDER_BY_OFFSET.name)}"


def row_values(i: int) -> tuple[int, int, str]:
    """Row ``i`` of the probe's table: its id, a sort key scattered deterministically
    (Knuth's multiplicative hash), and 60 characters of padding derived from it."""
    k = (i * 2654435761) % 2**31
    return i, k, (f"{k:08x}" * 8)[:60]


async def _setup(link: ServerLink, rows: int) -> None:
    await link.query(f"DROP DATABASE IF EXISTS {quote_ident(PROBE_DATABASE)}")
    await link.query(f"CREATE DATABASE {quote_ident(PROBE_DATABASE)}")
    await link.query(f"CREATE TABLE {_table()} (id INT NOT NULL PRIMARY KEY, "
                     "k INT NOT NULL, pad CHAR(60) NOT NULL) ENGINE=InnoDB")
    for first in range(1, rows + 1, FILL_BATCH):
        batch = [row_values(i) for i in range(first, min(rows, first + FILL_BATCH - 1) + 1)]
        await link.query(f"INSERT INTO {_table()} (id, k, pad) VALUES "
                         + ", ".join(["(%s, %s, %s)"] * len(batch)),
                         [v for row in batch for v in row])
    # Fresh statistics: right after the fill the server's row estimate can be far off,
    # and a sort sizes its buffer by it (a buffer of a few KB whatever sort_buffer_size is)
    await link.query(f"ANALYZE TABLE {_table()}")
    # Read once so the timed queries find the table in the buffer pool.
    await link.query(f"SELECT COUNT(*) FROM {_table()}", timeout=PROBE_TIMEOUT)


async def session_counters(link: ServerLink, names: Sequence[str]) -> dict[str, float]:
    """The link's own session status counters ``names`` (absent ones left out)."""
    if not names:
        return {}
    rows = await link.query("SHOW SESSION STATUS WHERE Variable_name IN ("
                            + ", ".join(["%s"] * len(names)) + ")", list(names))
    lower = {n.lower(): n for n in names}
    out: dict[str, float] = {}
    for found, value in rows:
        name = lower.get(str(found).lower())
        if name is not None:
            try:
                out[name] = float(value)
            except (TypeError, ValueError):
                continue
    return out


async def _run(link: ServerLink, offset: int, repeats: int,
               counters: Sequence[str]) -> ProbeReading:
    before = await session_counters(link, counters)
    sql = f"SELECT id, k, pad FROM {_table()} ORDER BY k LIMIT %s, 1"
    began = time.monotonic()
    for _ in range(repeats):
        await link.query(sql, (offset,), timeout=PROBE_TIMEOUT)
    seconds = time.monotonic() - began
    after = await session_counters(link, counters)
    return ProbeReading(round(seconds, 4), {name: after[name] - before[name]
                                            for name in counters
                                            if name in after and name in before})


async def run_probe(link: ServerLink, name: str, phase: str, params: Mapping[str, int],
                    counters: Sequence[str] = ()) -> ProbeReading:
    """One phase of probe ``name`` on a connected link (a new one: its session variables
    are the server's global values now): ``setup`` creates and fills its table, ``run``
    times its queries and reads the counters' deltas, ``drop`` drops its database."""
    check_probe(name, params, counters)
    if phase not in PHASES:
        raise ProbeError(f"no probe phase {phase!r} (phases: {', '.join(PHASES)})")
    began = time.monotonic()
    if phase == "setup":
        await _setup(link, params["rows"])
    elif phase == "run":
        return await _run(link, params["offset"], params["repeats"], counters)
    else:
        await link.query(f"DROP DATABASE IF EXISTS {quote_ident(PROBE_DATABASE)}",
                         timeout=LONG_QUERY_TIMEOUT)
    return ProbeReading(round(time.monotonic() - began, 4))


__all__ = ["ORDER_BY_OFFSET", "PHASES", "PROBES", "PROBE_DATABASE", "Param", "ProbeError",
           "ProbeReading", "ProbeSpec", "check_counters", "check_probe", "row_values", "run_probe",
           "session_counters"]
