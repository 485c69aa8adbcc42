"""How each graphed metric's values read: its unit, and the format of its title and y axis.

A format per unit kind, given to each metric by its row in ``knobtop.metrics.catalog``, so
"History length 0" reads as the count it is, not "0.00", a steady QPS reads "1", percentages
carry "%" and bytes "B".
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from knobtop.metrics.catalog import CATALOG
from knobtop.ui.widgets.metric_graph import default_fmt


def fmt_number(value: float) -> str:
    """Three significant digits with a K/M/G/T suffix, no trailing zeros: 0 -> "0",
    1.0 -> "1", 0.5 -> "0.5", 1200 -> "1.2K", 1234 -> "1.23K"."""
    text = default_fmt(value)
    number = text.rstrip("KMGT")
    suffix = text[len(number):]
    if "." in number:
        number = number.rstrip("0").rstrip(".")
    return ("0" if number in ("", "-", "-0") else number) + suffix


def fmt_pct(value: float) -> str:
    """A percentage's value in the title: one decimal ("99.3")."""
    return f"{value:.1f}"


@dataclass(frozen=True, slots=True)
class Unit:
    """How a metric's values read: ``fmt`` and ``suffix`` for the latest value in the title
    ("99.3" "%"), ``axis`` for the y labels and the title's range ("0-100")."""

    kind: str  # count | rate | percent | ms | bytes
    suffix: str = ""
    fmt: Callable[[float], str] = fmt_number
    axis: Callable[[float], str] = fmt_number


COUNT = Unit("count")  # history length, threads: "0", "338", "1.2K"
RATE = Unit("rate")  # TPS, QPS: the title says "per second" already
PER_SECOND = Unit("rate", "/s")
PERCENT = Unit("percent", "%", fmt_pct)
MS = Unit("ms", " ms")
MS_PER_SECOND = Unit("ms", " ms/s")
BYTES = Unit("bytes", "B")  # SI: "1.2MB" (the axis' nice numbers are decimal)

BYTES_PER_SECOND = Unit("bytes", "B/s")

#: A format for each of the catalog's unit kinds (metrics/catalog.py UNIT_KINDS).
BY_KIND: dict[str, Unit] = {
    "count": COUNT, "rate": RATE, "per_second": PER_SECOND, "percent": PERCENT, "ms": MS,
    "ms_per_second": MS_PER_SECOND, "bytes": BYTES, "bytes_per_second": BYTES_PER_SECOND,
}
#: Each catalogued metric's unit, by its name.
UNITS: dict[str, Unit] = {m.name: BY_KIND[m.unit] for m in CATALOG}
#: The host panel's OS metrics (derive.HOST_METRICS) that a graph may name too.
UNITS.setdefault("mem_used_pct", PERCENT)


def unit_of(metric: str) -> Unit:
    """The unit of ``metric``; LinkBench's per-operation series (``lb_SHORT_ops``,
    ``lb_SHORT_p99``) by their suffix; a plain number for anything else."""
    if metric in UNITS:
        return UNITS[metric]
    if metric.startswith("lb_"):
        if metric.endswith("_ops"):
            return PER_SECOND
        if metric.endswith("_p99"):
            return MS
    return COUNT


__all__ = ["UNITS", "Unit", "fmt_number", "fmt_pct", "unit_of"]
