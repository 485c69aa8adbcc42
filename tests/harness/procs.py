"""Finding this machine's live sysbench processes by a marker on their command line."""

from __future__ import annotations

import os
from pathlib import Path


def sysbench_processes(marker: str) -> dict[int, str]:
    """pid -> command line of each running (not zombie) sysbench whose argv has ``marker``."""
    found: dict[int, str] = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if cmd.startswith("sysbench ") and marker in cmd and state != "Z":
            found[int(pid)] = cmd
    return found


def device_of(path: Path) -> str:
    """The /proc/diskstats name of the block device ``path`` is on ("" if none), read by
    the test itself."""
    st = os.stat(path)
    for line in Path("/proc/diskstats").read_text().splitlines():
        major, minor, name = line.split()[:3]
        if (int(major), int(minor)) == (os.major(st.st_dev), os.minor(st.st_dev)):
            return name
    return ""
