"""The one Host protocol: run a command, stream its lines, files, OS metrics."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Protocol, runtime_checkable

# Cumulative CPU seconds per field, in this order, as ``Host.cpu_times`` returns them.
HOST_CPU_FIELDS: tuple[str, ...] = (
    "user",
    "nice",
    "system",
    "idle",
    "iowait",
    "irq",
    "softirq",
    "steal",
)


class HostError(RuntimeError):
    """A host could not do what was asked; the message says which host and the fix."""


@dataclass(frozen=True, slots=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str


@runtime_checkable
class RunningCommand(Protocol):
    """A started command whose output arrives line by line."""

    @property
    def pid(self) -> int | None: ...

    def lines(self) -> AsyncIterator[str]: ...

    async def stop(self, grace: float = 3.0) -> int | None: ...

    async def wait(self) -> int: ...

    @property
    def stderr_tail(self) -> str: ...


@runtime_checkable
class Host(Protocol):
    """Where commands run: this machine or, later, an SSH destination."""

    name: str

    async def run(self, argv: Sequence[str], *, limit: float = 60.0) -> CommandResult: ...

    async def stream(self, argv: Sequence[str]) -> RunningCommand: ...

    async def which(self, program: str) -> str | None: ...

    async def read_file(self, path: PurePath) -> bytes: ...

    async def write_file_atomic(self, path: PurePath, data: bytes, mode: int = 0o600) -> None: ...

    def cpu_times(self) -> list[float]: ...

    def start_os_metrics(self, interval: float) -> None: ...

    def os_sample(self) -> list[float] | None:
        """Raw OS counters in ``procstat.OS_FIELDS`` order; None while unavailable."""
        ...

    async def close(self) -> None: ...
