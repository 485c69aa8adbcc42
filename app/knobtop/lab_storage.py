"""The lab's storage emulation (issue 39): a sandbox server whose sync and read system calls
take longer, so the seeds' effects (trx_commit, doublewrite) can show on a box whose disk
syncs in a tenth of a millisecond.

The mechanism is strace's fault injection, on every Linux box: ``strace -f --seccomp-bpf``
stops the server only at the traced calls (fsync and fdatasync for ``sync``; pread64,
preadv and preadv2 for ``read``) and ``inject=...:delay_exit=N`` holds each one N
microseconds after it returns. Nothing else of the server is slowed. The spelling is
``sync=2ms,read=0.5ms`` (``us`` for microseconds; a bare number is milliseconds)."""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from knobtop.labdirs import LabError, find_program, read_own, write_atomic

# The system calls each emulated delay holds: what InnoDB waits on for a commit's or a
# flush's durability (sync) and for a page read it must have now (read).
SYSCALLS: dict[str, tuple[str, ...]] = {
    "sync": ("fsync", "fdatasync"),
    "read": ("pread64", "preadv", "preadv2"),
}
MAX_US = 1_000_000  # one second per call is already far past any disk worth emulating
STORAGE_FILE = "storage"  # the sandbox's own file: a restart keeps the emulation
STRACE_HINT = "install strace (sudo apt-get install -y strace)"

_VALUE = re.compile(r"(\d+(?:\.\d+)?)(ms|us)?\Z")


@dataclass(frozen=True)
class Storage:
    """Microseconds added to each sync and each read call (0: not emulated)."""

    sync_us: int = 0
    read_us: int = 0

    def __bool__(self) -> bool:
        return bool(self.sync_us or self.read_us)

    def delays(self) -> dict[str, int]:
        return {k: v for k, v in (("sync", self.sync_us), ("read", self.read_us)) if v}

    def spec(self) -> str:
        """The spelling ``parse_storage`` reads back ("sync=2ms,read=0.5ms"; "" for none)."""
        return ",".join(f"{k}={_ms(v)}ms" for k, v in self.delays().items())

    def describe(self) -> str:
        """For headers and table notes: "storage emulated: sync +2 ms, read +0.5 ms"."""
        if not self:
            return ""
        return "storage emulated: " + ", ".join(
            f"{k} +{_ms(v)} ms" for k, v in self.delays().items())

    def wrapper(self, strace: str | None = None) -> list[str]:
        """The argv prefix that runs a program under this emulation ([] for none)."""
        if not self:
            return []
        strace = strace or find_program("strace")
        if strace is None:
            raise LabError(f"--storage emulates with strace, which is not on this machine: "
                           f"{STRACE_HINT}")
        calls = [c for k in self.delays() for c in SYSCALLS[k]]
        args = [strace, "-f", "-qq", "--seccomp-bpf", "-o", os.devnull,
                "-e", f"trace={','.join(calls)}"]
        for key, us in self.delays().items():
            args += ["-e", f"inject={','.join(SYSCALLS[key])}:delay_exit={us}"]
        return [*args, "--"]


def _ms(us: int) -> str:
    return f"{us / 1000:g}"


def parse_storage(text: str) -> Storage:
    """``sync=2ms,read=0.5ms`` (either key, in any order); raises LabError naming the
    part that is wrong and the spelling."""
    spelling = "write it as sync=2ms,read=0.5ms (either key; ms or us)"
    found: dict[str, int] = {}
    for part in (p.strip() for p in text.split(",")):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in SYSCALLS:
            raise LabError(f"--storage {text!r}: {part!r} is not sync=... or read=...; "
                           f"{spelling}")
        if key in found:
            raise LabError(f"--storage {text!r} gives {key} twice")
        m = _VALUE.match(value.strip().lower())
        if m is None:
            raise LabError(f"--storage {text!r}: {value.strip()!r} is not a duration; "
                           f"{spelling}")
        us = round(float(m.group(1)) * (1 if m.group(2) == "us" else 1000))
        if not 0 <= us <= MAX_US:
            raise LabError(f"--storage {text!r}: {key} delay must be 0 to 1000 ms")
        found[key] = us
    return Storage(found.get("sync", 0), found.get("read", 0))


def saved_storage(root: Path) -> Storage:
    """The emulation the sandbox in ``root`` was started with (none if it has no file)."""
    text = (read_own(root / STORAGE_FILE) or "").strip()
    try:
        return parse_storage(text) if text else Storage()
    except LabError as exc:
        raise LabError(f"{root / STORAGE_FILE}: {exc}; remove the file") from None


def save_storage(root: Path, storage: Storage) -> None:
    write_atomic(root / STORAGE_FILE, storage.spec() + "\n")


def join_storage(root: Path, asked: Storage | None, pid: int) -> Storage:
    """The emulation of the server ``pid`` running in ``root``, which a start that joins it
    keeps: another one ``asked`` for is refused, and so is a server whose file says
    emulated but that runs without (its strace gone)."""
    running = saved_storage(root)
    if asked is not None and asked != running:
        raise LabError(
            f"the sandbox in {root} runs with --storage "
            f"{running.spec() or 'none'}, not {asked.spec() or 'none'}: stop it "
            f"(knobtop lab --stop --dir "
            f"{root}) or use another --name")
    if running and not emulation_active(pid, running):
        raise LabError(
            f"the sandbox server in {root} (pid {pid}) runs without its "
            f"{running.describe()} (its strace is gone): stop it (knobtop lab --stop "
            f"--dir {root}) and start again")
    return running


def traced_children(pid: int) -> list[int]:
    """The processes ``pid`` (a strace) started: the server it runs."""
    out: list[int] = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            text = Path(f"/proc/{pid}/task/{task}/children").read_text()
            out += [int(p) for p in text.split()]
    except OSError:
        pass
    return out


def tracer_of(pid: int) -> int:
    """The pid tracing ``pid`` (0: none), from /proc/PID/status."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def emulation_active(pid: int, storage: Storage) -> bool:
    """Whether the server ``pid`` runs under a strace (what a running sandbox's emulation
    is checked by: its file could say one thing and the process another)."""
    tracer = tracer_of(pid)
    if not tracer:
        return False
    try:
        argv: Sequence[str] = Path(f"/proc/{tracer}/cmdline").read_bytes().decode(
            errors="replace").split("\0")
    except OSError:
        return False
    wanted = storage.wrapper(argv[0] if argv else None)
    return list(argv[:len(wanted)]) == wanted


__all__ = ["STORAGE_FILE", "SYSCALLS", "Storage", "emulation_active", "join_storage",
           "parse_storage", "save_storage", "saved_storage", "traced_children", "tracer_of"]
