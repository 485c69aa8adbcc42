"""The /proc parsers, on text recorded from a real machine (tests/data/proc/*.txt)."""

from __future__ import annotations

import re
from pathlib import Path

import psutil
import pytest

from harness import paths as repo_paths
from knobtop.hosts.base import HOST_CPU_FIELDS
from knobtop.hosts.local import LocalHost
from knobtop.hosts.procstat import (
    OS_FIELDS,
    SECTIONS,
    ProcParseError,
    device_counters,
    device_numbers,
    make_snapshot,
    parse_diskstats,
    parse_loadavg,
    parse_meminfo,
    parse_pid_stat,
    parse_proc_snapshot,
    parse_stat_cpu,
    parse_status_rss,
    whole_disks,
)
from knobtop.metrics.derive import EFFICIENCY, step_efficiency
from knobtop.metrics.footprint import Footprint, footprint_cost

PROC = repo_paths.DATA / "proc"


def recorded(name: str) -> str:
    return (PROC / f"{name}.txt").read_text()


def test_os_fields_extend_cpu_fields() -> None:
    assert OS_FIELDS[: len(HOST_CPU_FIELDS)] == HOST_CPU_FIELDS
    assert len(OS_FIELDS) == len(set(OS_FIELDS)) == len(HOST_CPU_FIELDS) + 7


def test_stat_cpu_line_in_seconds() -> None:
    text = recorded("stat")
    m = re.search(r"^cpu +((?:\d+ ?)+)$", text, re.MULTILINE)
    assert m is not None
    jiffies = [int(v) for v in m.group(1).split()][:8]
    assert parse_stat_cpu(text) == [round(j / 100, 2) for j in jiffies]
    assert parse_stat_cpu(text, user_hz=250) == [round(j / 250, 2) for j in jiffies]
    # the per-cpu lines add up to the aggregate one (sanity of the recorded text itself)
    per_cpu = [line.split()[1:9] for line in text.splitlines() if re.match(r"cpu\d", line)]
    assert [sum(int(row[i]) for row in per_cpu) for i in range(8)] == pytest.approx(
        jiffies, abs=len(per_cpu) * 2
    )


def test_stat_without_cpu_line_is_an_error() -> None:
    with pytest.raises(ProcParseError):
        parse_stat_cpu("intr 1 2 3\nctxt 5\n")


def test_meminfo_in_bytes() -> None:
    text = recorded("meminfo")
    total = re.search(r"^MemTotal:\s+(\d+) kB$", text, re.MULTILINE)
    avail = re.search(r"^MemAvailable:\s+(\d+) kB$", text, re.MULTILINE)
    assert total is not None and avail is not None
    assert parse_meminfo(text) == (int(total.group(1)) * 1024, int(avail.group(1)) * 1024)


def test_diskstats_sums_whole_disks_only() -> None:
    text = recorded("diskstats")
    names = [line.split()[2] for line in text.splitlines()]
    disks = whole_disks(names)
    assert disks, "the recorded machine has at least one disk"
    assert not any(n.startswith(("loop", "ram", "zram", "dm-", "md")) for n in disks)
    # independently: the 4th/6th/8th/10th columns of each kept disk's row
    reads = read_sectors = writes = write_sectors = 0
    for line in text.splitlines():
        cols = line.split()
        if cols[2] in disks:
            reads += int(cols[3])
            read_sectors += int(cols[5])
            writes += int(cols[7])
            write_sectors += int(cols[9])
    assert parse_diskstats(text) == (read_sectors * 512, write_sectors * 512, reads, writes)


def test_whole_disk_rule() -> None:
    names = [
        "loop0", "ram0", "zram0", "sda", "sda1", "sda2", "sdb", "nvme0n1", "nvme0n1p1",
        "nvme0n10", "mmcblk0", "mmcblk0p1", "dm-0", "md127", "vda", "vda1", "sr0",
    ]  # fmt: skip
    assert whole_disks(names) == ["sda", "sdb", "nvme0n1", "nvme0n10", "mmcblk0", "vda", "sr0"]


def test_diskstats_partitions_are_not_double_counted() -> None:
    text = (
        "   8       0 sda 100 0 800 0 50 0 400 0 0 0 0 0 0 0 0 0 0\n"
        "   8       1 sda1 90 0 700 0 40 0 300 0 0 0 0 0 0 0 0 0 0\n"
        " 259       0 nvme0n1 10 0 80 0 5 0 40 0 0 0 0 0 0 0 0 0 0\n"
        " 259       1 nvme0n1p1 9 0 70 0 4 0 30 0 0 0 0 0 0 0 0 0 0\n"
        " 253       0 dm-0 99 0 790 0 49 0 399 0 0 0 0 0 0 0 0 0 0\n"
    )
    assert parse_diskstats(text) == (880 * 512, 440 * 512, 110, 55)


def test_loadavg_one_minute() -> None:
    text = recorded("loadavg")
    assert parse_loadavg(text) == float(text.split(" ", 1)[0])


def test_snapshot_in_os_fields_order() -> None:
    texts = {name: recorded(name) for name in SECTIONS}
    values = parse_proc_snapshot(make_snapshot(texts))
    assert len(values) == len(OS_FIELDS)
    expected = [
        *parse_stat_cpu(texts["stat"]),
        *parse_meminfo(texts["meminfo"]),
        *parse_diskstats(texts["diskstats"]),
        parse_loadavg(texts["loadavg"]),
    ]
    assert values == expected
    by_name = dict(zip(OS_FIELDS, values, strict=True))
    assert 0 < by_name["mem_available"] <= by_name["mem_total"]


def test_snapshot_missing_section_is_an_error() -> None:
    texts = {name: recorded(name) for name in SECTIONS}
    snapshot = make_snapshot(texts).replace("@@loadavg", "@@other")
    with pytest.raises(ProcParseError, match="loadavg"):
        parse_proc_snapshot(snapshot)


def test_local_os_sample_matches_live_proc() -> None:
    sample = LocalHost().os_sample()
    live = parse_proc_snapshot(
        make_snapshot({name: Path(f"/proc/{name}").read_text() for name in SECTIONS})
    )
    assert len(sample) == len(OS_FIELDS)
    got = dict(zip(OS_FIELDS, sample, strict=True))
    want = dict(zip(OS_FIELDS, live, strict=True))
    assert got["mem_total"] == want["mem_total"] == psutil.virtual_memory().total
    assert sum(sample[:8]) == pytest.approx(sum(live[:8]), rel=0.01)
    for name in ("disk_read_bytes", "disk_write_bytes", "disk_reads", "disk_writes"):
        assert got[name] <= want[name], name  # psutil read first; counters only grow
        assert got[name] == pytest.approx(want[name], rel=0.05), name


# --- a measured window's cost per transaction (issue 18 part 2) ----------------------------


def test_step_efficiency_from_two_recorded_snapshots() -> None:
    """Two real snapshots 2 s apart (tests/data/proc/step): busy CPU, disk reads and bytes
    per transaction, checked against the raw lines by hand."""
    step = PROC / "step"

    def snap(which: str) -> list[float]:
        return parse_proc_snapshot(make_snapshot(
            {name: (step / f"{name}-{which}.txt").read_text() for name in SECTIONS}))

    first, last = snap("a"), snap("b")
    cpu_a = [int(v) for v in (step / "stat-a.txt").read_text().split("\n")[0].split()[1:9]]
    cpu_b = [int(v) for v in (step / "stat-b.txt").read_text().split("\n")[0].split()[1:9]]
    d = [b - a for a, b in zip(cpu_a, cpu_b, strict=True)]
    busy_s = (sum(d) - d[3] - d[4]) / 100  # user nice system IDLE IOWAIT irq softirq steal

    def vda(which: str) -> list[int]:
        for line in (step / f"diskstats-{which}.txt").read_text().splitlines():
            parts = line.split()
            if parts[2] == "vda":
                return [int(v) for v in parts[3:]]
        raise AssertionError("no vda line")

    da, db = vda("a"), vda("b")
    reads, rsect, wsect = db[0] - da[0], db[2] - da[2], db[6] - da[6]
    txns, seconds = 5000.0, 2.0
    cost = step_efficiency(first, last, OS_FIELDS, txns, seconds)
    assert set(cost) == set(EFFICIENCY)
    assert busy_s > 0 and cost["cpu_us_txn"] == pytest.approx(busy_s * 1e6 / txns)
    assert cost["reads_txn"] == pytest.approx(reads / txns)
    assert cost["rkb_txn"] == pytest.approx(rsect * 512 / 1e3 / txns)
    assert cost["wkb_txn"] == pytest.approx(wsect * 512 / 1e3 / txns)
    assert wsect > 0 and cost["wmb_s"] == pytest.approx(wsect * 512 / seconds / 1e6)
    assert cost["r_s"] == pytest.approx(reads / seconds)
    # nothing ran: rates but no per-transaction figures; counters going back: nothing
    idle = step_efficiency(first, last, OS_FIELDS, 0.0, seconds)
    assert idle["cpu_us_txn"] is None and idle["wmb_s"] == cost["wmb_s"]
    back = step_efficiency(last, first, OS_FIELDS, txns, seconds)
    assert back["reads_txn"] is None and back["wmb_s"] is None


# -- the server's own footprint (issue 18): one process, one device


def test_a_device_number_splits_as_the_kernel_encodes_it() -> None:
    import os
    for major, minor in ((254, 0), (8, 17), (259, 3), (7, 1000), (4095, 1048575)):
        assert device_numbers(os.makedev(major, minor)) == (major, minor)


def test_the_datadir_device_line_is_read_alone() -> None:
    a = device_counters(recorded("step/diskstats-a"), 254, 0)
    assert a is not None
    name, (reads, rbytes, writes, wbytes) = a
    assert name == "vda"
    # vda's line: 1275172 reads, 42352466 sectors read, 650559 writes, 14938192 written
    assert (reads, rbytes, writes, wbytes) == (1275172, 42352466 * 512, 650559,
                                               14938192 * 512)
    assert device_counters(recorded("step/diskstats-a"), 0, 45) is None  # tmpfs: none


def test_mysqld_cpu_and_rss_from_its_proc_files() -> None:
    name, cpu = parse_pid_stat(recorded("mysqld/stat-idle"))
    fields = recorded("mysqld/stat-idle").split(") ")[1].split()
    assert name == "mariadbd"
    assert cpu == (int(fields[11]) + int(fields[12])) / 100
    rss_kb = re.search(r"VmRSS:\s+(\d+) kB", recorded("mysqld/status-idle"))
    assert rss_kb is not None
    assert parse_status_rss(recorded("mysqld/status-idle")) == int(rss_kb[1]) * 1024
    # A command name with a space and a ')' in it: the fields count from the last ')'.
    odd = recorded("mysqld/stat-idle").replace("(mariadbd)", "(my sql) d)", 1)
    assert parse_pid_stat(odd) == ("my sql) d", cpu)
    with pytest.raises(ProcParseError):
        parse_pid_stat("1234")
    with pytest.raises(ProcParseError):
        parse_status_rss("Name:\tmariadbd\n")


def test_footprint_cost_per_transaction_and_its_limits() -> None:
    a = device_counters(recorded("step/diskstats-a"), 254, 0)
    b = device_counters(recorded("step/diskstats-b"), 254, 0)
    assert a is not None and b is not None
    first = Footprint(t=10.0, pid=7, cpu=100.0, rss=3e8, disk="vda", io=a[1])
    last = Footprint(t=20.0, pid=7, cpu=102.5, rss=3.1e8, disk="vda", io=b[1],
                     datadir_bytes=2.5e8, db_bytes=4e7)
    cost = footprint_cost(first, last, transactions=5000)
    assert cost["mysqld_us_txn"] == pytest.approx(2.5e6 / 5000)
    assert cost["disk"] == "vda"
    assert cost["r_s"] == pytest.approx((1275220 - 1275172) / 10)
    assert cost["rkb_txn"] == pytest.approx((42355946 - 42352466) * 512 / 1e3 / 5000)
    assert cost["wmb_s"] == pytest.approx((14946456 - 14938192) * 512 / 10 / 1e6)
    assert (cost["rss_mb"], cost["db_mb"], cost["datadir_mb"]) == (310.0, 40.0, 250.0)
    # A restart in between (another pid) or a device that changed: no figure, not a wrong one
    restarted = footprint_cost(first, Footprint(t=20.0, pid=8, cpu=1.0), 5000)
    assert restarted["mysqld_us_txn"] is None and "r_s" not in restarted
    assert footprint_cost(first, last, transactions=0)["mysqld_us_txn"] is None
