"""Counter snapshots to per-interval rates and derived metrics; bounded series for graphs."""

from knobtop.metrics.board import Marker, MetricBoard, Series
from knobtop.metrics.counters import SERVER_COUNTERS
from knobtop.metrics.derive import Snapshot, derive

__all__ = [
    "SERVER_COUNTERS",
    "Marker",
    "MetricBoard",
    "Series",
    "Snapshot",
    "derive",
]
