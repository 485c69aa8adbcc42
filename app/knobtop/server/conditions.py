"""The conditions probe (issue 39): what the box can show, measured before a recipe or a tune.

A seed's effect lives in its conditions: doublewrite and trx_commit only matter where a sync
costs something, a buffer-pool knob only where the data does not fit. So before every run,
on the server's own host:

* **sync**: 4 KiB writes in a file of the probe's own in the datadir, each followed by
  ``fdatasync`` (median and p99 in ms);
* **read**: random 16 KiB reads with ``O_DIRECT`` (or, where the file system refuses it,
  after dropping those pages from the cache) of 8 MiB the probe wrote and synced there (not
  the server's files: InnoDB allocates ahead, and a read of an allocated, never written
  extent returns zeros without touching the device);
* the datadir's **file system** (tmpfs: every sync and read is memory's);
* **data vs pool**: the databases' data and index bytes (information_schema) against
  ``innodb_buffer_pool_size``;
* **CPUs** of the server's host, and whether a client host shares them (same boot id).

The host program is fixed code (``HOST_PROBE``) with the datadir as an argument; under a
lab's storage emulation it runs behind the same strace wrapper as the server, so it measures
what the server's calls meet. Each measurement is bounded (count and seconds), the whole
command has a deadline, and what cannot be measured is said, never guessed.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from knobtop.conditions import Conditions, latency_from
from knobtop.hosts.base import Host, HostError
from knobtop.server.link import ServerError, ServerLink

LIMIT = 30.0  # seconds for the host program (and each statement)
SYNC_OPS = 200  # fdatasyncs at most (and at most 2 s of them)
READ_OPS = 200  # 16 KiB reads at most (and at most 2 s of them)
SYSTEM_SCHEMAS = ("mysql", "information_schema", "performance_schema", "sys")
BOOT_ID = "/proc/sys/kernel/random/boot_id"

# Run on the server's host as ``python3 -I -c HOST_PROBE DATADIR SYNC_OPS READ_OPS``; prints
# one JSON object. It writes one file of its own (O_EXCL, 0600) and removes it.
HOST_PROBE = r"""
import json, mmap, os, random, socket, sys, time
d, nsync, nread = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
out = {"host": socket.gethostname(), "cpus": len(os.sched_getaffinity(0)), "problems": []}
try:
    out["boot_id"] = open("/proc/sys/kernel/random/boot_id").read().strip()
    best = ""
    for line in open("/proc/self/mountinfo"):
        f = line.split()
        mnt, fstype = f[4], f[f.index("-") + 1]
        if (d + "/").startswith(mnt.rstrip("/") + "/") and len(mnt) >= len(best):
            best, out["fs"] = mnt, fstype
except (OSError, ValueError, IndexError):
    pass
def q(ts):
    ts.sort()
    return [ts[len(ts) // 2] * 1e3, ts[min(len(ts) - 1, int(len(ts) * 0.99))] * 1e3, len(ts)]
path = os.path.join(d, ".knobtop-probe-%d" % os.getpid())
try:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
except OSError as e:
    out["problems"].append("sync and read: cannot write a file in %s (%s)" % (d, e.strerror))
    fd = None
if fd is not None:
    try:
        ts, end, block = [], time.monotonic() + 2.0, b"k" * 4096
        for i in range(nsync):
            os.pwrite(fd, block, (i % 64) * 4096)
            t = time.perf_counter(); os.fdatasync(fd); ts.append(time.perf_counter() - t)
            if time.monotonic() > end:
                break
        out["sync"] = q(ts)
        blocks = 512
        for i in range(blocks):
            os.pwrite(fd, os.urandom(16384), i * 16384)
        os.fdatasync(fd)
        how = "O_DIRECT"
        try:
            rfd = os.open(path, os.O_RDONLY | os.O_DIRECT)
        except OSError:
            how, rfd = "uncached", os.open(path, os.O_RDONLY)
        buf, ts, end = mmap.mmap(-1, 16384), [], time.monotonic() + 2.0
        try:
            for _ in range(nread):
                off = random.randrange(blocks) * 16384
                if how != "O_DIRECT":
                    os.posix_fadvise(rfd, off, 16384, os.POSIX_FADV_DONTNEED)
                t = time.perf_counter(); os.preadv(rfd, [buf], off)
                ts.append(time.perf_counter() - t)
                if time.monotonic() > end:
                    break
            out["read"] = q(ts) + [how]
        finally:
            os.close(rfd)
    except OSError as e:
        out["problems"].append("sync and read in %s: %s" % (d, e.strerror))
    finally:
        os.close(fd); os.unlink(path)
print(json.dumps(out))
"""


async def probe_conditions(host: Host, link: ServerLink, clients: Sequence[Host], *,
                wrapper: Sequence[str] = (), emulated: str = "",
                client_boot_ids: Sequence[str] = ()) -> Conditions:
    """Measure the conditions of the server behind ``link`` on ``host`` (its own machine),
    with ``clients`` the load's client hosts (``client_boot_ids``: those already known,
    e.g. this machine's when the load runs from here)."""
    problems: list[str] = []
    datadir, hostname, pool, data = await _server_facts(link, problems)
    facts: dict[str, Any] = {}
    if datadir:
        facts = await _host_facts(host, datadir, wrapper, problems)
        if hostname and facts.get("host") and facts["host"] != hostname:
            problems.append(f"the server runs on {hostname!r}, not on {host.name} "
                            f"({facts['host']!r}): its disk and CPUs are not measured")
            facts = {}
    shares: bool | None = None
    boot = facts.get("boot_id")
    if isinstance(boot, str):
        ids = list(client_boot_ids)
        for client in clients:
            try:
                result = await client.run(["cat", BOOT_ID], limit=LIMIT)
                ids.append(result.stdout.strip())
            except HostError as exc:
                problems.append(f"boot id of client {client.name}: {exc}")
        shares = boot in ids if ids else None
    return Conditions(
        sync=latency_from(facts.get("sync")), read=latency_from(facts.get("read")),
        data_bytes=data, pool_bytes=pool,
        cpus=facts["cpus"] if type(facts.get("cpus")) is int else None,
        client_shares_cpus=shares, emulated=emulated,
        fs=facts["fs"] if isinstance(facts.get("fs"), str) else "",
        problems=tuple([*problems, *(_with_fix(p, host.name) for p in facts.get("problems", ())
                                     if isinstance(p, str))]))


def _with_fix(problem: str, host: str) -> str:
    """The host program's problem, with what would let it measure."""
    if "cannot write a file in" in problem:
        return (f"{problem}: the probe writes (and removes) a file of its own in the datadir;"
                f" give the user knobtop logs in as on {host} write access to it")
    return problem


async def _server_facts(link: ServerLink,
                        problems: list[str]) -> tuple[str, str, int | None, int | None]:
    try:
        rows = await link.query("SELECT @@datadir, @@hostname, @@innodb_buffer_pool_size",
                                timeout=LIMIT)
        datadir, hostname, pool = rows[0]
        marks = ", ".join(["%s"] * len(SYSTEM_SCHEMAS))
        sizes = await link.query(
            "SELECT COALESCE(SUM(DATA_LENGTH + INDEX_LENGTH), 0) FROM information_schema.TABLES"
            f" WHERE TABLE_SCHEMA NOT IN ({marks})", SYSTEM_SCHEMAS, timeout=LIMIT)
    except ServerError as exc:
        problems.append(f"the server's datadir and sizes: {exc}")
        return "", "", None, None
    return (str(datadir or ""), str(hostname or ""),
            int(pool) if pool is not None else None, int(sizes[0][0] or 0))


async def _host_facts(host: Host, datadir: str, wrapper: Sequence[str],
                      problems: list[str]) -> dict[str, Any]:
    python = await host.which("python3")
    if python is None:
        problems.append(f"sync and read: no python3 on {host.name} to run the probe")
        return {}
    argv = [*wrapper, python, "-I", "-c", HOST_PROBE, datadir, str(SYNC_OPS), str(READ_OPS)]
    try:
        result = await host.run(argv, limit=LIMIT)
    except HostError as exc:
        problems.append(f"sync and read on {host.name}: {exc}")
        return {}
    try:
        facts = json.loads(result.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        problems.append(f"sync and read on {host.name}: the probe said "
                        f"{(result.stderr or result.stdout).strip()[-200:]!r}")
        return {}
    return facts if isinstance(facts, dict) else {}


__all__ = ["BOOT_ID", "HOST_PROBE", "probe_conditions"]
