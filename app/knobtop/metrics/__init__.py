"""Counter snapshots to per-interval rates and derived metrics; bounded series for graphs.

Names are imported from their modules on first use (knobtop.lazyface)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from knobtop.lazyface import lazy_names

# Imported now, not on first use: the function ``derive`` has its module's name, and once
# that module is imported the package's attribute would be the module, not the function
# (derive.py imports nothing heavy).
from knobtop.metrics.derive import Snapshot, derive

if TYPE_CHECKING:
    from knobtop.metrics.board import Marker, MetricBoard, Series
    from knobtop.metrics.counters import SERVER_COUNTERS

__getattr__ = lazy_names(__name__, {
    "Marker": "knobtop.metrics.board",
    "MetricBoard": "knobtop.metrics.board",
    "Series": "knobtop.metrics.board",
    "SERVER_COUNTERS": "knobtop.metrics.counters",
})

__all__ = [
    "SERVER_COUNTERS",
    "Marker",
    "MetricBoard",
    "Series",
    "Snapshot",
    "derive",
]
