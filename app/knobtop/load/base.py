"""The LoadDriver protocol: start a workload, report each interval, stop."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Protocol

from knobtop.load.sysbench_output import IntervalReport, RunSummary

WORKLOADS: tuple[str, ...] = ("oltp_read_write", "oltp_point_select")


class LoadError(RuntimeError):
    """The load could not start or died; the message says what and the fix."""


@dataclass(frozen=True, slots=True)
class LoadSpec:
    workload: str = "oltp_read_write"
    threads: int = 4
    tables: int = 4
    table_size: int = 10000
    duration: int = 0  # seconds; 0 = until stopped

    def check(self) -> None:
        if self.workload not in WORKLOADS:
            raise LoadError(
                f"unknown workload '{self.workload}'; choose one of {', '.join(WORKLOADS)}"
            )
        if not 1 <= self.threads <= 1024:
            raise LoadError(f"threads must be between 1 and 1024, not {self.threads}")


@dataclass(frozen=True, slots=True)
class LoadExit:
    """How a run ended: return code, the summary if it got that far, the first fatal error."""

    returncode: int | None
    summary: RunSummary | None
    error: str
    stopped: bool  # True when knobtop stopped it


ReportCallback = Callable[[IntervalReport], None]
ExitCallback = Callable[[LoadExit], Awaitable[None]]


class LoadDriver(Protocol):
    name: str
    host_name: str

    @property
    def running(self) -> bool: ...

    async def start(
        self, spec: LoadSpec, on_report: ReportCallback, on_exit: ExitCallback
    ) -> None: ...

    async def stop(self) -> LoadExit | None: ...
