"""Custom Textual widgets for knobtop's live screens."""

from knobtop.ui.widgets.metric_graph import MetricGraph

__all__ = ["MetricGraph"]
