"""Counter snapshots to per-interval rates and derived metrics; bounded series for graphs.

Names are imported from their modules on first use (knobtop.lazyface)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from knobtop.lazyface import lazy_names

if TYPE_CHECKING:
    from knobtop.metrics.board import Marker, MetricBoard, Series
    from knobtop.metrics.counters import SERVER_COUNTERS
    from knobtop.metrics.derive import Snapshot, derive

__getattr__ = lazy_names(__name__, {
    "Marker": "knobtop.metrics.board",
    "MetricBoard": "knobtop.metrics.board",
    "Series": "knobtop.metrics.board",
    "SERVER_COUNTERS": "knobtop.metrics.counters",
    "Snapshot": "knobtop.metrics.derive",
    "derive": "knobtop.metrics.derive",
})

__all__ = [
    "SERVER_COUNTERS",
    "Marker",
    "MetricBoard",
    "Series",
    "Snapshot",
    "derive",
]
