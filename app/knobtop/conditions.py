"""Conditions (issue 39): what a box offered a run, and what a recipe's effect needs of it.

Plain data, with no I/O: ``server/conditions.py`` measures them (the conditions probe),
recipes state their ``[conditions]`` as :class:`Needs`, the runner journals both in a
run's start, and reports read them back (text from outside: every field type-checked)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from knobtop.printable import printable


@dataclass(frozen=True)
class Latency:
    """A probe's latencies: median and p99 in ms over ``ops`` calls, and how (reads)."""

    median_ms: float
    p99_ms: float
    ops: int
    how: str = ""


@dataclass(frozen=True)
class Conditions:
    """What the box offered when a run started (every field None when not measured)."""

    sync: Latency | None = None
    read: Latency | None = None
    data_bytes: int | None = None  # the databases' data + index, information_schema's
    pool_bytes: int | None = None  # innodb_buffer_pool_size
    cpus: int | None = None  # the server host's (its affinity)
    client_shares_cpus: bool | None = None  # a load client on the server's own machine
    fs: str = ""  # the datadir's file system type (mountinfo's)
    emulated: str = ""  # a lab's storage emulation ("storage emulated: sync +2 ms")
    problems: tuple[str, ...] = ()

    @property
    def data_over_pool(self) -> float | None:
        if self.data_bytes is None or not self.pool_bytes:
            return None
        return self.data_bytes / self.pool_bytes

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["problems"] = list(self.problems)
        return {k: v for k, v in out.items() if v not in (None, "", [])}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Conditions:
        """From a journal's plan (text from outside: every field type-checked; a field of
        the wrong shape is left out, never trusted)."""
        def latency(v: Any) -> Latency | None:
            if not isinstance(v, Mapping):
                return None
            m, p, n = v.get("median_ms"), v.get("p99_ms"), v.get("ops")
            if not (isinstance(m, int | float) and isinstance(p, int | float) and _num(m)
                    and _num(p) and type(n) is int):
                return None
            how = v.get("how")
            return Latency(float(m), float(p), n, how if isinstance(how, str) else "")

        def count(v: Any) -> int | None:
            return v if type(v) is int and v >= 0 else None

        shares = data.get("client_shares_cpus")
        problems = data.get("problems")
        emulated = data.get("emulated")
        fs = data.get("fs")
        return cls(
            sync=latency(data.get("sync")), read=latency(data.get("read")),
            data_bytes=count(data.get("data_bytes")), pool_bytes=count(data.get("pool_bytes")),
            cpus=count(data.get("cpus")),
            client_shares_cpus=shares if isinstance(shares, bool) else None,
            emulated=emulated if isinstance(emulated, str) else "",
            fs=fs if isinstance(fs, str) and fs.isprintable() and len(fs) < 40 else "",
            problems=tuple(printable(p, newlines=False) for p in problems
                           if isinstance(p, str))
            if isinstance(problems, list) else ())

    def lines(self) -> list[str]:
        """For the plan, the report and the screen: one fact a line."""
        out = []
        if self.emulated:
            out.append(self.emulated)
        on = f" on {self.fs}" if self.fs else ""
        if self.sync:
            out.append(f"sync: {_ms(self.sync.median_ms)} median, {_ms(self.sync.p99_ms)} p99 "
                       f"(fdatasync of 4 KiB in the datadir{on}, {self.sync.ops} calls)")
        if self.read:
            how = "O_DIRECT" if self.read.how == "O_DIRECT" else "cache dropped"
            out.append(f"random 16 KiB read: {_ms(self.read.median_ms)} median, "
                       f"{_ms(self.read.p99_ms)} p99 ({how}, {self.read.ops} reads)")
        ratio = self.data_over_pool
        if ratio is not None and self.data_bytes is not None and self.pool_bytes is not None:
            out.append(f"data {_size(self.data_bytes)} vs buffer pool {_size(self.pool_bytes)}"
                       f" ({ratio:.2f}x)")
        if self.cpus is not None:
            shares = {True: ", shared with the load's client",
                      False: ", the load's client on other CPUs", None: ""}
            out.append(f"{self.cpus} CPUs on the server's host"
                       f"{shares[self.client_shares_cpus]}")
        out += [f"not measured: {p}" for p in self.problems]
        return out


@dataclass(frozen=True)
class Needs:
    """A recipe's ``[conditions]``: what its effect needs to show."""

    sync_ms_min: float | None = None  # a sync must take at least this (median)
    read_ms_min: float | None = None  # a random page read at least this (median)
    data_over_pool_min: float | None = None  # data at least this many times the pool
    data_over_pool_max: float | None = None  # data at most this many times the pool
    cpus_min: int | None = None  # the server's host has at least this many CPUs
    client_apart: bool = False  # the load's client on other CPUs than the server
    why: str = ""  # one line: the effect these conditions let show

    def __bool__(self) -> bool:
        return any(v not in (None, False, "") for v in asdict(self).values())

    def as_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, False, "")}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Needs:
        """From a journal's plan (text from outside: a field of the wrong type is left
        out)."""
        def bound(key: str) -> float | None:
            v = data.get(key)
            return float(v) if isinstance(v, int | float) and _num(v) and v > 0 else None

        cpus, apart, why = data.get("cpus_min"), data.get("client_apart"), data.get("why")
        return cls(sync_ms_min=bound("sync_ms_min"), read_ms_min=bound("read_ms_min"),
                   data_over_pool_min=bound("data_over_pool_min"),
                   data_over_pool_max=bound("data_over_pool_max"),
                   cpus_min=cpus if type(cpus) is int and cpus > 0 else None,
                   client_apart=apart is True,
                   why=why if isinstance(why, str) and why.isprintable() else "")

    def text(self) -> str:
        """"sync >= 1 ms, data >= 2x the buffer pool" (for --plan and run --list)."""
        parts = []
        if self.sync_ms_min is not None:
            parts.append(f"sync >= {self.sync_ms_min:g} ms")
        if self.read_ms_min is not None:
            parts.append(f"random read >= {self.read_ms_min:g} ms")
        if self.data_over_pool_min is not None:
            parts.append(f"data >= {self.data_over_pool_min:g}x the buffer pool")
        if self.data_over_pool_max is not None:
            parts.append(f"data <= {self.data_over_pool_max:g}x the buffer pool")
        if self.cpus_min is not None:
            parts.append(f">= {self.cpus_min} CPUs")
        if self.client_apart:
            parts.append("the client on other CPUs")
        return ", ".join(parts)


def unmet(needs: Needs, found: Conditions, *, lab: bool = False) -> list[str]:
    """What of ``needs`` the box does not offer, one sentence each ending in what to
    expect; a need that could not be measured is said as unknown."""
    out: list[str] = []
    effect = needs.why or "the effect"

    def latency(what: str, have: Latency | None, want: float | None, spell: str) -> None:
        if want is None:
            return
        if have is None:
            out.append(f"{what} latency was not measured; {effect} needs >= {want:g} ms: "
                       "the run cannot say whether this box can show it")
        elif have.median_ms < want:
            out.append(f"this disk {what}s in {_ms(have.median_ms)}; {effect} needs >= "
                       f"{want:g} ms: expect noise"
                       + (f" (the lab can emulate it: --storage {spell}={want:g}ms)"
                          if lab else ""))

    latency("sync", found.sync, needs.sync_ms_min, "sync")
    latency("read", found.read, needs.read_ms_min, "read")
    ratio = found.data_over_pool
    for bound, low in ((needs.data_over_pool_min, True), (needs.data_over_pool_max, False)):
        if bound is None:
            continue
        if ratio is None:
            out.append(f"the data's size against the buffer pool was not measured; {effect} "
                       f"needs it {'>=' if low else '<='} {bound:g}x")
        elif (ratio < bound) if low else (ratio > bound):
            out.append(f"the data is {ratio:.2f}x the buffer pool; {effect} needs "
                       f"{'>=' if low else '<='} {bound:g}x: expect noise")
    if needs.cpus_min is not None and found.cpus is not None and found.cpus < needs.cpus_min:
        out.append(f"the server's host has {found.cpus} CPUs; {effect} needs >= "
                   f"{needs.cpus_min}: expect a smaller effect")
    if needs.client_apart and found.client_shares_cpus:
        out.append(f"the load's client shares the server's CPUs; {effect} needs them apart: "
                   "the client's own CPU use is in every figure")
    return out


def latency_from(v: Any) -> Latency | None:
    if not isinstance(v, list) or len(v) < 3 or not all(_num(x) for x in v[:3]):
        return None
    return Latency(float(v[0]), float(v[1]), int(v[2]), str(v[3]) if len(v) > 3 else "")


def _num(v: Any) -> bool:
    return type(v) in (int, float) and math.isfinite(v)


def _ms(value: float) -> str:
    return f"{value:.2f} ms" if value < 10 else f"{value:.0f} ms"


def _size(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} B"


def condition_lines(plan: Mapping[str, Any]) -> list[str]:
    """The probe's facts of a run's start plan, one a line ("NAME: " before a further
    target's); none for a journal from before the probe."""
    found = plan.get("conditions")
    if not isinstance(found, Mapping):
        return []
    return [(f"{name}: " if name else "") + line for name, data in found.items()
            if isinstance(data, Mapping) for line in Conditions.from_json(data).lines()]


def plan_notes(plan: Mapping[str, Any]) -> list[str]:
    """A run's start plan as a table's notes: what the probe found on each server, and
    what of the recipe's [conditions] did not hold (empty for a journal from before)."""
    found = plan.get("conditions")
    if not isinstance(found, Mapping):
        return []
    raw = plan.get("needs")
    needs = Needs.from_json(raw) if isinstance(raw, Mapping) else Needs()
    out = []
    for name, data in found.items():
        if not isinstance(data, Mapping):
            continue
        c = Conditions.from_json(data)
        where = f" on {name}" if name else ""
        out.append(f"Conditions at the start{where} (measured): " + "; ".join(c.lines())
                   + ".")
        out += [f"Not met{where}: {line}." for line in unmet(needs, c)] if needs else []
    return out


__all__ = ["Conditions", "Latency", "Needs", "condition_lines", "latency_from", "plan_notes",
           "unmet"]
