"""Load generators driven by knobtop: the LoadDriver protocol and sysbench."""

from knobtop.load.base import WORKLOADS, LoadDriver, LoadError, LoadExit, LoadSpec
from knobtop.load.sysbench import Sysbench
from knobtop.load.sysbench_output import IntervalReport, PrepareProgress, RunSummary

__all__ = [
    "WORKLOADS",
    "IntervalReport",
    "LoadDriver",
    "LoadError",
    "LoadExit",
    "LoadSpec",
    "PrepareProgress",
    "RunSummary",
    "Sysbench",
]
