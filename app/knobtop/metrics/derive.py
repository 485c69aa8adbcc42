"""Per-interval values from two raw samples: rates from deltas, ratios of deltas, gauges."""

from __future__ import annotations

import functools
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

Number = int | float


@dataclass(frozen=True, slots=True)
class Snapshot:
    """One sample, with counters by name."""

    t: float
    counters: Mapping[str, Number | None]
    host_cpu: Mapping[str, Sequence[float]] = field(default_factory=dict)
    reconnect: bool = False

    @classmethod
    def from_values(
        cls,
        t: float,
        names: Sequence[str],
        values: Sequence[Number | None],
        host_cpu: Mapping[str, Sequence[float]] | None = None,
        reconnect: bool = False,
    ) -> Snapshot:
        return cls(t, dict(zip(names, values, strict=False)), host_cpu or {}, reconnect)


def _get(snap: Snapshot, name: str) -> Number | None:
    return snap.counters.get(name)


def _delta(prev: Snapshot, cur: Snapshot, *names: str) -> Number | None:
    """Sum of the named counters' increases, or None if any is missing."""
    total: Number = 0
    before, after = prev.counters, cur.counters  # (a report derives every sample: kept lean)
    for name in names:
        a, b = before.get(name), after.get(name)
        if a is None or b is None:
            return None
        total += b - a
    return total


def _rate(prev: Snapshot, cur: Snapshot, dt: float, *names: str) -> float | None:
    d = _delta(prev, cur, *names)
    return None if d is None else d / dt


def _first(snap: Snapshot, *names: str) -> Number | None:
    for name in names:
        value = _get(snap, name)
        if value is not None:
            return value
    return None


def cpu_percent(
    prev: Sequence[float], cur: Sequence[float], fields: Sequence[str]
) -> tuple[float, float] | None:
    """(busy %, iowait %) of all CPUs over the interval, from cumulative CPU times
    laid out as ``fields`` (the journal header's ``host_fields``)."""
    deltas = [b - a for a, b in zip(prev, cur, strict=False)]
    total = sum(deltas)
    if total <= 0:
        return None
    idle = deltas[fields.index("idle")]
    iowait = deltas[fields.index("iowait")] if "iowait" in fields else 0.0
    return 100.0 * (total - idle - iowait) / total, 100.0 * iowait / total


def server_tps(prev: Snapshot, cur: Snapshot, dt: float) -> float | None:
    """Transactions per second as the server counts them.

    Explicit transactions (COMMIT/ROLLBACK statements) when the load uses
    them; otherwise autocommit statements, which only Handler_commit counts
    (Com_commit reads 0 for oltp_point_select, REFERENCE.md section 2).
    Handler_commit is not used for explicit transactions: it also counts each
    statement inside them (about 19 per oltp_read_write transaction).
    """
    explicit = _delta(prev, cur, "Com_commit", "Com_rollback")
    if explicit:
        return explicit / dt
    return _rate(prev, cur, dt, "Handler_commit", "Handler_rollback")


@functools.lru_cache(maxsize=16)
def _layout(fields: tuple[str, ...]) -> tuple[dict[str, int], int]:
    """Position of each host field, and how many lead with CPU times (one per journal)."""
    return ({name: i for i, name in enumerate(fields)},
            len([f for f in fields if f in CPU_FIELDS]))


HOST_METRICS = ("cpu", "iowait", "mem_used_pct", "read_bps", "write_bps", "iops", "load1")


def host_metrics(
    prev: Sequence[float] | None, cur: Sequence[float], fields: Sequence[str], dt: float
) -> dict[str, float | None]:
    """One host's OS view over the interval: CPU busy and iowait %, memory used %,
    disk bytes per second and IO operations per second, 1-minute load.

    ``fields`` names the positions (the journal header's ``host_fields``);
    fields a journal lacks come out as None.
    """
    index, cpu_n = _layout(tuple(fields))

    def value(snap: Sequence[float], name: str) -> float | None:
        i = index.get(name)
        return snap[i] if i is not None and i < len(snap) else None

    def rate(*names: str) -> float | None:
        if prev is None or dt <= 0:
            return None
        total = 0.0
        for name in names:
            a, b = value(prev, name), value(cur, name)
            if a is None or b is None or b < a:
                return None
            total += b - a
        return total / dt

    out: dict[str, float | None] = dict.fromkeys(HOST_METRICS)
    if prev is not None and "idle" in index:
        pct = cpu_percent(prev[:cpu_n], cur[:cpu_n], fields[:cpu_n])
        if pct is not None:
            out["cpu"], out["iowait"] = pct
    total, available = value(cur, "mem_total"), value(cur, "mem_available")
    if total and available is not None:
        out["mem_used_pct"] = 100.0 * (total - available) / total
    out["read_bps"] = rate("disk_read_bytes")
    out["write_bps"] = rate("disk_write_bytes")
    out["iops"] = rate("disk_reads", "disk_writes")
    out["load1"] = value(cur, "load1")
    return out


ROCKS_METRICS = ("rocks_hit_ratio", "rocks_stalls", "rocks_stall_ms")
# Metrics that need a previous sample of the same server run.
EFFICIENCY = ("cpu_us_txn", "reads_txn", "rkb_txn", "wkb_txn", "r_s", "rmb_s", "wmb_s")


def step_efficiency(first: Sequence[float], last: Sequence[float], fields: Sequence[str],
                    transactions: float, seconds: float) -> dict[str, float | None]:
    """What a measured window cost one host, from its raw OS counters at the window's first
    and last sample (laid out as ``fields``, the header's ``host_fields``) and the
    transactions the load ran between them: busy CPU microseconds per transaction (all
    CPUs' time but idle and iowait), disk reads, KB read and KB written per transaction,
    and reads/s, read and write MB/s over the ``seconds`` between the two samples (the
    seed posts' efficiency columns, REFERENCE.md sections 5-6).  None where a counter is
    missing, went backwards, or nothing ran."""
    index, cpu_n = _layout(tuple(fields))
    out: dict[str, float | None] = dict.fromkeys(EFFICIENCY)

    def delta(*names: str) -> float | None:
        total = 0.0
        for name in names:
            i = index.get(name)
            if i is None or i >= len(first) or i >= len(last) or last[i] < first[i]:
                return None
            total += last[i] - first[i]
        return total

    if seconds <= 0:
        return out
    per_txn = transactions > 0
    if cpu_n and "idle" in index:
        cpu = [b - a for a, b in zip(first[:cpu_n], last[:cpu_n], strict=False)]
        busy = sum(cpu) - cpu[index["idle"]] - (cpu[index["iowait"]] if "iowait" in index
                                                else 0.0)
        if per_txn and busy >= 0:
            out["cpu_us_txn"] = busy * 1e6 / transactions
    reads, rbytes, wbytes = delta("disk_reads"), delta("disk_read_bytes"), delta(
        "disk_write_bytes")
    if reads is not None:
        out["r_s"] = reads / seconds
        out["reads_txn"] = reads / transactions if per_txn else None
    if rbytes is not None:
        out["rmb_s"] = rbytes / seconds / 1e6
        out["rkb_txn"] = rbytes / 1e3 / transactions if per_txn else None
    if wbytes is not None:
        out["wmb_s"] = wbytes / seconds / 1e6
        out["wkb_txn"] = wbytes / 1e3 / transactions if per_txn else None
    return out


# The metrics that need two samples of one server run (all None without them), and the
# ones of them that are a counter's rate, computed from their catalog row alone; read from
# the catalog as it is when derive() runs (a row added before the first sample counts).
_from_catalog: tuple[object, tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]] = (
    None, (), ())


def _catalogued() -> tuple[tuple[str, ...], tuple[tuple[str, tuple[str, ...]], ...]]:
    """The catalog's interval metrics and its rates as (name, counters), remade only when
    the catalog is another one."""
    global _from_catalog
    from knobtop.metrics import catalog  # (here: a report's rows need none of it)

    if _from_catalog[0] is not catalog.CATALOG:
        _from_catalog = (catalog.CATALOG, catalog.names("interval"),
                         tuple((m.name, m.rate_of) for m in catalog.rates()))
    return _from_catalog[1], _from_catalog[2]
# MyRocks' status variables among the sampled counters (all absent without the plugin).
ROCKS_COUNTERS = (
    "Rocksdb_block_cache_hit",
    "Rocksdb_block_cache_miss",
    "Rocksdb_stall_total_stops",
    "Rocksdb_stall_total_slowdowns",
    "Rocksdb_stall_micros",
)


def has_rocksdb(snap: Snapshot) -> bool:
    """The sample came from a server with MyRocks loaded (a MyRocks counter has a value)."""
    return any(_get(snap, name) is not None for name in ROCKS_COUNTERS)


def rocks_metrics(prev: Snapshot, cur: Snapshot, dt: float) -> dict[str, float | None]:
    """MyRocks over the interval (REFERENCE.md sections 0c and 2); all None without it.

    ``rocks_hit_ratio``: block cache hits / (hits + misses), in %; None when the
    interval read no blocks.  ``rocks_stalls``: write stall events (stops plus
    slowdowns) per second.  ``rocks_stall_ms``: milliseconds spent stalled per
    second of wall time.
    """
    hit = _delta(prev, cur, "Rocksdb_block_cache_hit")
    lookups = _delta(prev, cur, "Rocksdb_block_cache_hit", "Rocksdb_block_cache_miss")
    ratio = None
    if hit is not None and lookups is not None and 0 <= hit <= lookups and lookups > 0:
        ratio = 100.0 * hit / lookups
    stall_us = _rate(prev, cur, dt, "Rocksdb_stall_micros")
    return {
        "rocks_hit_ratio": ratio,
        "rocks_stalls": _rate(
            prev, cur, dt, "Rocksdb_stall_total_stops", "Rocksdb_stall_total_slowdowns"
        ),
        "rocks_stall_ms": None if stall_us is None else stall_us / 1000.0,
    }


CPU_FIELDS = frozenset(
    ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")
)


# What ``derive(brief=True)`` computes: the columns of a report's rows.
BRIEF_METRICS = ("tps", "qps", "hit_ratio", "dirty_pct", "history_len", "checkpoint_age",
                 "cpu", "iowait", "threads_running")


def derive(
    prev: Snapshot | None, cur: Snapshot, host_fields: Sequence[str] = (), *,
    brief: bool = False,
) -> dict[str, float | None]:
    """Everything the live screen plots, for the interval ending at ``cur``.

    Rates need a previous sample from the same server run: none across a
    reconnect or when Uptime went backwards (the server restarted).  Gauges
    (dirty %, history length, checkpoint age) only need ``cur``.  ``brief``: only
    BRIEF_METRICS, the same values, for a report that derives every sample of a journal.
    """
    out: dict[str, float | None] = {}
    pages_total = _get(cur, "Innodb_buffer_pool_pages_total")
    dirty = _get(cur, "Innodb_buffer_pool_pages_dirty")
    out["dirty_pct"] = (
        100.0 * dirty / pages_total if dirty is not None and pages_total else None
    )
    hll = _first(cur, "Innodb_history_list_length", "im:trx_rseg_history_len")
    out["history_len"] = None if hll is None else float(hll)
    age = _first(cur, "Innodb_checkpoint_age", "im:log_lsn_checkpoint_age")
    out["checkpoint_age"] = None if age is None else float(age)
    max_age = _get(cur, "Innodb_checkpoint_max_age")
    out["checkpoint_pct"] = (
        100.0 * age / max_age if age is not None and max_age else None
    )  # of the capacity before InnoDB must flush synchronously
    running = _get(cur, "Threads_running")
    out["threads_running"] = None if running is None else float(running)

    comparable = prev is not None and not cur.reconnect and cur.t > prev.t
    if prev is not None and comparable:
        up_a, up_b = _get(prev, "Uptime"), _get(cur, "Uptime")
        if up_a is not None and up_b is not None and up_b < up_a:
            comparable = False
    interval, rates = _catalogued()
    if prev is None or not comparable:
        for key in interval:
            out[key] = None
        return out

    dt = cur.t - prev.t
    out["tps"] = server_tps(prev, cur, dt)
    out["qps"] = _rate(prev, cur, dt, "Questions")
    requests = _delta(prev, cur, "Innodb_buffer_pool_read_requests")
    reads = _delta(prev, cur, "Innodb_buffer_pool_reads")
    hit = None
    if requests is not None and reads is not None and requests > 0:
        hit = 100.0 * (1.0 - reads / requests)
    out["hit_ratio"] = hit
    if brief:  # CPU of the first host that has it, as below, without the rest
        out["cpu"] = out["iowait"] = None
        index, cpu_n = _layout(tuple(host_fields))
        for host, snap in cur.host_cpu.items():
            before = prev.host_cpu.get(host)
            if before is not None and "idle" in index:
                pct = cpu_percent(before[:cpu_n], snap[:cpu_n], host_fields[:cpu_n])
                if pct is not None:
                    out["cpu"], out["iowait"] = pct
                    break
        return out
    for name, counters in rates:
        out[name] = _rate(prev, cur, dt, *counters)
    out.update(rocks_metrics(prev, cur, dt))
    out["cpu"] = out["iowait"] = None
    for host, snap in cur.host_cpu.items():
        per_host = host_metrics(prev.host_cpu.get(host), snap, host_fields, dt)
        for key, value in per_host.items():
            out[f"{key}@{host}"] = value
        if out["cpu"] is None:  # the first host listed is the target's
            out["cpu"], out["iowait"] = per_host["cpu"], per_host["iowait"]
    return out


# The counters derive(brief=True) reads, in the order BriefDeriver.step unpacks them.
_BRIEF_COUNTERS = (
    "Innodb_buffer_pool_pages_total", "Innodb_buffer_pool_pages_dirty",
    "Innodb_history_list_length", "im:trx_rseg_history_len",
    "Innodb_checkpoint_age", "im:log_lsn_checkpoint_age", "Innodb_checkpoint_max_age",
    "Threads_running", "Uptime", "Com_commit", "Com_rollback", "Handler_commit",
    "Handler_rollback", "Questions", "Innodb_buffer_pool_read_requests",
    "Innodb_buffer_pool_reads",
)
#: What BriefDeriver.step returns, in order.
BRIEF_ROW = ("tps", "qps", "hit_ratio", "dirty_pct", "history_len", "checkpoint_age", "cpu",
             "threads_running")


def _sub(a: Number | None, b: Number | None) -> Number | None:
    """_delta of one counter: ``0 + (b - a)`` exactly as it sums (so -0.0 comes out 0.0)."""
    if a is None or b is None:
        return None
    return 0 + (b - a)


class BriefDeriver:
    """``derive(prev, cur, host_fields, brief=True)`` for a journal's samples in order, from
    their raw counter lists (laid out as the header's ``counters``) without a Snapshot and a
    dict of every counter per sample: a report derives each of the 86,400 samples of a day.

    The same arithmetic in the same order as derive's, so the same values to the last bit
    (tests/unit/test_report_fast.py holds the two side by side).  ``step`` may raise what derive
    would raise on a malformed sample (a host's CPU list shorter than its fields); the caller
    then asks derive itself (``snapshot`` gives the Snapshots), which says what is wrong."""

    def __init__(self, names: Sequence[str], host_fields: Sequence[str]) -> None:
        self.names = tuple(names)
        self.host_fields = host_fields
        self.index, self.cpu_n = _layout(tuple(host_fields))
        self.cpu_fields = host_fields[:self.cpu_n]
        self.has_idle = "idle" in self.index
        fields = list(self.cpu_fields)
        self.idle_i = fields.index("idle") if "idle" in fields else None
        self.io_i = fields.index("iowait") if "iowait" in fields else None
        self._pickers: dict[int, Callable[[list[Number | None]], tuple[Number | None, ...]]] = {}
        # The previous sample: t, its picked counters, its host CPU times
        self.prev: tuple[float, tuple[Number | None, ...], Mapping[str, Sequence[float]]] | None
        self.prev = None

    def _picker(self, n: int) -> Callable[[list[Number | None]], tuple[Number | None, ...]]:
        """The brief counters out of a list of ``n`` values (plus a None at its end, where
        a counter the list does not reach is read): dict(zip(names, values)) keeps the last
        of a repeated name and stops at the shorter of the two."""
        where: dict[str, int] = {}
        for i, name in enumerate(self.names[:n]):
            where[name] = i
        return operator.itemgetter(*(where.get(name, n) for name in _BRIEF_COUNTERS))

    def step(self, t: float, values: list[Number | None],
             host_cpu: Mapping[str, Sequence[float]], reconnect: bool
             ) -> tuple[float | None, ...]:
        """The BRIEF_ROW values of the interval ending at this sample; it becomes the
        previous one (also when this raises)."""
        picker = self._pickers.get(len(values))
        if picker is None:
            picker = self._pickers[len(values)] = self._picker(len(values))
        cur = picker([*values, None])
        prev, self.prev = self.prev, (t, cur, host_cpu)
        (pages_total, dirty, hll_a, hll_b, age_a, age_b, max_age, running, uptime, com_c,
         com_r, h_c, h_r, questions, requests_c, reads_c) = cur
        dirty_pct = 100.0 * dirty / pages_total if dirty is not None and pages_total else None
        hll = hll_a if hll_a is not None else hll_b
        age = age_a if age_a is not None else age_b
        if age is not None and max_age:
            100.0 * age / max_age  # derive's checkpoint_pct: not a report column
        gauges = (dirty_pct, None if hll is None else float(hll),
                  None if age is None else float(age),
                  None if running is None else float(running))
        if prev is None or reconnect or not t > prev[0]:
            return None, None, None, *gauges[:3], None, gauges[3]
        p_t, p, p_host = prev
        if p[8] is not None and uptime is not None and uptime < p[8]:
            return None, None, None, *gauges[:3], None, gauges[3]
        dt = t - p_t
        explicit = _sub(p[9], com_c)
        if explicit is not None:
            second = _sub(p[10], com_r)
            explicit = None if second is None else explicit + second
        if explicit:
            tps: float | None = explicit / dt
        else:
            handler = _sub(p[11], h_c)
            if handler is not None:
                second = _sub(p[12], h_r)
                handler = None if second is None else handler + second
            tps = None if handler is None else handler / dt
        asked = _sub(p[13], questions)
        qps = None if asked is None else asked / dt
        requests, reads = _sub(p[14], requests_c), _sub(p[15], reads_c)
        hit = None
        if requests is not None and reads is not None and requests > 0:
            hit = 100.0 * (1.0 - reads / requests)
        cpu = None
        if self.has_idle:
            cpu_n, idle_i, io_i = self.cpu_n, self.idle_i, self.io_i
            for host, snap in host_cpu.items():
                before = p_host.get(host)
                if before is None:
                    continue
                if idle_i is None:  # "idle" past the CPU fields: cpu_percent as it is
                    pct = cpu_percent(before[:cpu_n], snap[:cpu_n], self.cpu_fields)
                    if pct is None:
                        continue
                    cpu = pct[0]
                    break
                # cpu_percent, written out with the fields' places found once
                deltas = [b - a for a, b in zip(before[:cpu_n], snap[:cpu_n], strict=False)]
                total = sum(deltas)
                if total <= 0:
                    continue
                idle = deltas[idle_i]
                iowait = deltas[io_i] if io_i is not None else 0.0
                cpu = 100.0 * (total - idle - iowait) / total
                break
        return tps, qps, hit, *gauges[:3], cpu, gauges[3]
