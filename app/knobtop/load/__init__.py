"""Load generators driven by knobtop: the LoadDriver protocol and sysbench.

Names are imported from their modules on first use (knobtop.lazyface)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from knobtop.lazyface import lazy_names

if TYPE_CHECKING:
    from knobtop.load.base import WORKLOADS, LoadDriver, LoadError, LoadExit, LoadSpec
    from knobtop.load.sysbench import Sysbench
    from knobtop.load.sysbench_output import IntervalReport, PrepareProgress, RunSummary

__getattr__ = lazy_names(__name__, {
    "WORKLOADS": "knobtop.load.base",
    "LoadDriver": "knobtop.load.base",
    "LoadError": "knobtop.load.base",
    "LoadExit": "knobtop.load.base",
    "LoadSpec": "knobtop.load.base",
    "Sysbench": "knobtop.load.sysbench",
    "IntervalReport": "knobtop.load.sysbench_output",
    "PrepareProgress": "knobtop.load.sysbench_output",
    "RunSummary": "knobtop.load.sysbench_output",
})

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
