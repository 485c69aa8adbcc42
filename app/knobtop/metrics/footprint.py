"""The server's own footprint over a recipe step (issue 18): the mysqld process's CPU and
RSS, the I/O of the device that holds the datadir, the datadir's bytes on disk and the
databases' size, read once at the measured window's start and once at its end
(``session.footprint`` reads them), and what they come to per transaction.

The host-wide figures (``derive.step_efficiency``) count every process and every disk;
these count mysqld and the datadir's device alone, as the LinkBench post's efficiency
table does (REFERENCE.md section 6)."""

from __future__ import annotations

from dataclasses import dataclass

# The StepResult fields these give, besides the disk columns they share with the host's.
FOOTPRINT = ("mysqld_us_txn", "rss_mb", "db_mb", "datadir_mb")
DISK_COSTS = ("reads_txn", "rkb_txn", "wkb_txn", "r_s", "rmb_s", "wmb_s")


@dataclass(frozen=True, slots=True)
class Footprint:
    """One reading. ``io`` is the datadir device's (reads, read bytes, writes, written
    bytes) since boot; ``problem`` says why a figure is missing (None fields)."""

    t: float  # session seconds when read
    pid: int | None = None
    cpu: float | None = None  # mysqld's user + system CPU seconds since it started
    rss: float | None = None  # bytes
    disk: str = ""  # the datadir's block device ("" = not found)
    io: tuple[float, float, float, float] | None = None
    datadir_bytes: float | None = None
    db_bytes: float | None = None
    problem: str = ""


def footprint_cost(first: Footprint, last: Footprint,
                   transactions: float) -> dict[str, float | str | None]:
    """What the window between two readings cost: mysqld's CPU microseconds per
    transaction (None across a restart: another process), the datadir device's reads, KB
    read and KB written per transaction and its reads/s and MB/s (keyed as the host-wide
    ones, which they replace, with ``disk`` naming the device), and the sizes at the end in
    MB."""
    out: dict[str, float | str | None] = dict.fromkeys(FOOTPRINT)
    seconds = last.t - first.t
    per_txn = transactions > 0
    if (per_txn and first.cpu is not None and last.cpu is not None and first.pid == last.pid
            and last.cpu >= first.cpu):
        out["mysqld_us_txn"] = (last.cpu - first.cpu) * 1e6 / transactions
    if (first.io is not None and last.io is not None and first.disk == last.disk
            and seconds > 0 and all(b >= a for a, b in zip(first.io, last.io, strict=True))):
        reads, rbytes, _writes, wbytes = (b - a for a, b in zip(first.io, last.io,
                                                                strict=True))
        out.update(disk=last.disk, r_s=reads / seconds, rmb_s=rbytes / seconds / 1e6,
                   wmb_s=wbytes / seconds / 1e6)
        if per_txn:
            out.update(reads_txn=reads / transactions, rkb_txn=rbytes / 1e3 / transactions,
                       wkb_txn=wbytes / 1e3 / transactions)
    for key, value in (("rss_mb", last.rss), ("db_mb", last.db_bytes),
                       ("datadir_mb", last.datadir_bytes)):
        out[key] = None if value is None else value / 1e6
    return out


def load_phase(first: Footprint, last: Footprint, rows: float,
               seconds: float) -> dict[str, float]:
    """A load phase's raw figures between two readings (the LinkBench post's load columns
    are derived from them by the table): ``rows`` inserted in ``seconds``, mysqld's CPU
    seconds over them (absent across a restart), the datadir device's ``reads``,
    ``read_bytes``, ``writes``, ``written_bytes`` over them, and at the end the
    ``db_bytes``, ``datadir_bytes`` and ``rss_bytes``; what was not read is absent."""
    out: dict[str, float] = {"rows": float(rows), "seconds": seconds}
    if (first.cpu is not None and last.cpu is not None and first.pid == last.pid
            and last.cpu >= first.cpu):
        out["cpu_s"] = last.cpu - first.cpu
    if (first.io is not None and last.io is not None and first.disk == last.disk
            and all(b >= a for a, b in zip(first.io, last.io, strict=True))):
        deltas = (b - a for a, b in zip(first.io, last.io, strict=True))
        out.update(zip(("reads", "read_bytes", "writes", "written_bytes"), deltas,
                       strict=True))
    for key, value in (("db_bytes", last.db_bytes), ("datadir_bytes", last.datadir_bytes),
                       ("rss_bytes", last.rss)):
        if value is not None:
            out[key] = value
    return out
