"""Pure parsers for Linux /proc text (stat, meminfo, diskstats, loadavg) into OS counters."""

from __future__ import annotations

import re

from knobtop.errors import KnobtopError
from knobtop.hosts.base import HOST_CPU_FIELDS

# Raw cumulative OS counters (plus two gauges and load), in this order, as
# ``parse_proc_snapshot`` and ``Host.os_sample`` return them.
OS_FIELDS: tuple[str, ...] = (
    *HOST_CPU_FIELDS,
    "mem_total",
    "mem_available",
    "disk_read_bytes",
    "disk_write_bytes",
    "disk_reads",
    "disk_writes",
    "load1",
)

USER_HZ = 100.0
SECTOR_BYTES = 512  # /proc/diskstats counts 512-byte sectors whatever the device's block size

# Section markers of a snapshot: a line ``@@stat`` followed by the text of /proc/stat, and so on.
SECTIONS: tuple[str, ...] = ("stat", "meminfo", "diskstats", "loadavg")
SNAPSHOT_END = "@@END"

# Block devices that are not physical disks, or that sit on top of other disks (counting
# them too would count the same I/O twice): loop, ram, zram, device-mapper, md RAID.
_VIRTUAL_DISK = re.compile(r"^(loop|ram|zram|dm-|md)\d")


class ProcParseError(KnobtopError, ValueError):
    """The text is not what the /proc file it claims to be looks like."""


def parse_stat_cpu(text: str, user_hz: float = USER_HZ) -> list[float]:
    """The aggregate ``cpu`` line of /proc/stat as seconds, in ``HOST_CPU_FIELDS`` order.

    Older kernels print fewer columns; missing ones are 0."""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            jiffies = [int(v) for v in parts[1 : 1 + len(HOST_CPU_FIELDS)]]
            jiffies += [0] * (len(HOST_CPU_FIELDS) - len(jiffies))
            return [round(j / user_hz, 2) for j in jiffies]
    raise ProcParseError("no aggregate 'cpu' line in /proc/stat text")


def parse_meminfo(text: str) -> tuple[float, float]:
    """(MemTotal, MemAvailable) in bytes from /proc/meminfo."""
    values: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if not sep:
            continue
        parts = rest.split()
        if not parts:
            continue
        scale = 1024 if len(parts) > 1 and parts[1] == "kB" else 1
        values[key.strip()] = int(parts[0]) * scale
    if "MemTotal" not in values or "MemAvailable" not in values:
        raise ProcParseError("MemTotal/MemAvailable missing from /proc/meminfo text")
    return float(values["MemTotal"]), float(values["MemAvailable"])


def _partition_suffix(base: str) -> str:
    return r"p\d+" if base[-1].isdigit() else r"\d+"


def whole_disks(names: list[str]) -> list[str]:
    """The names that count as whole physical disks, in input order.

    The rule: drop virtual/stacked devices (loop*, ram*, zram*, dm-*, md*), then drop
    partitions, recognised as another listed device's name followed by digits when that name
    ends in a letter, or by ``p`` and digits when it ends in a digit (the kernel's naming:
    sda1 of sda, nvme0n1p2 of nvme0n1, mmcblk0p1 of mmcblk0). Everything else is summed."""
    real = [n for n in names if not _VIRTUAL_DISK.match(n)]
    present = set(real)
    disks = []
    for name in real:
        is_partition = any(
            name[:cut] in present and re.fullmatch(_partition_suffix(name[:cut]), name[cut:])
            for cut in range(1, len(name))
        )
        if not is_partition:
            disks.append(name)
    return disks


def parse_diskstats(text: str) -> tuple[float, float, float, float]:
    """(read bytes, written bytes, reads completed, writes completed) summed over whole disks.

    See ``whole_disks`` for which devices count."""
    rows: dict[str, list[int]] = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 10:
            continue
        rows[parts[2]] = [int(v) for v in parts[3:10]]
    read_bytes = write_bytes = reads = writes = 0
    for name in whole_disks(list(rows)):
        f = rows[name]
        # fields after the name: reads, reads merged, sectors read, ms reading,
        # writes, writes merged, sectors written, ...
        reads += f[0]
        read_bytes += f[2] * SECTOR_BYTES
        writes += f[4]
        write_bytes += f[6] * SECTOR_BYTES
    return float(read_bytes), float(write_bytes), float(reads), float(writes)


def parse_loadavg(text: str) -> float:
    """The 1-minute load average from /proc/loadavg."""
    parts = text.split()
    if not parts:
        raise ProcParseError("empty /proc/loadavg text")
    return float(parts[0])


def split_sections(text: str) -> dict[str, str]:
    """Split ``@@name`` marked text into {name: body}."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        if line.startswith("@@"):
            current = sections.setdefault(line[2:].strip(), [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in sections.items()}


def make_snapshot(texts: dict[str, str]) -> str:
    """Join /proc texts into the ``@@name`` marked form the remote metrics loop prints."""
    return "".join(f"@@{name}\n{texts[name].rstrip(chr(10))}\n" for name in SECTIONS)


def parse_proc_snapshot(text: str, user_hz: float = USER_HZ) -> list[float]:
    """A ``@@stat``/``@@meminfo``/``@@diskstats``/``@@loadavg`` marked snapshot as a list
    of floats in ``OS_FIELDS`` order."""
    sections = split_sections(text)
    missing = [name for name in SECTIONS if name not in sections]
    if missing:
        raise ProcParseError(f"snapshot lacks section(s): {', '.join(missing)}")
    return [
        *parse_stat_cpu(sections["stat"], user_hz),
        *parse_meminfo(sections["meminfo"]),
        *parse_diskstats(sections["diskstats"]),
        parse_loadavg(sections["loadavg"]),
    ]


# -- one process and one device (issue 18: the mysqld process's own cost, the datadir's disk)


def device_numbers(st_dev: int) -> tuple[int, int]:
    """(major, minor) of a Linux ``st_dev`` (as ``stat -c %d`` prints it): glibc's
    encoding, the same on every Linux host."""
    major = ((st_dev >> 8) & 0xFFF) | ((st_dev >> 32) & ~0xFFF)
    minor = (st_dev & 0xFF) | ((st_dev >> 12) & ~0xFF)
    return major, minor


def device_counters(text: str, major: int,
                    minor: int) -> tuple[str, tuple[float, float, float, float]] | None:
    """The /proc/diskstats line of device ``major:minor`` (the partition or volume a path
    lives on, not the whole disk): (name, (reads, read bytes, writes, written bytes)); None
    when no block device has that number (tmpfs, overlay, NFS: no disk of its own)."""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 10 or not parts[0].isdigit() or not parts[1].isdigit():
            continue
        if (int(parts[0]), int(parts[1])) == (major, minor):
            f = [int(v) for v in parts[3:10]]
            return parts[2], (float(f[0]), float(f[2] * SECTOR_BYTES), float(f[4]),
                              float(f[6] * SECTOR_BYTES))
    return None


def parse_pid_stat(text: str, user_hz: float = USER_HZ) -> tuple[str, float]:
    """(command name, CPU seconds in user and system mode) from /proc/PID/stat. The name
    is in parentheses and may hold spaces and ')' itself: the fields count from the last
    ')'."""
    head, sep, rest = text.strip().rpartition(")")
    name = head.partition("(")[2]
    fields = rest.split()
    if not sep or len(fields) < 13:
        raise ProcParseError("not /proc/PID/stat text (no 'pid (comm) state ...' fields)")
    # After ')': state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
    # cmajflt utime(14) stime(15)
    return name, (int(fields[11]) + int(fields[12])) / user_hz


def parse_status_rss(text: str) -> float:
    """VmRSS of /proc/PID/status in bytes."""
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        if sep and key == "VmRSS":
            parts = rest.split()
            return float(int(parts[0]) * (1024 if parts[1:] == ["kB"] else 1))
    raise ProcParseError("no VmRSS line in /proc/PID/status text")
