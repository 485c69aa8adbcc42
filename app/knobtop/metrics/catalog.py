"""The one registry of what knobtop derives and draws: a row per metric.

Each row names a metric (the key of ``derive()``'s output, of the ``MetricBoard``'s series and
of a graph), its title and unit, where its value comes from, and the graph pages it is drawn
on. The lists the rest of the code used to keep by hand are made from it:
the interval metrics and the simple rates ``derive()`` computes, the board's
``SAMPLE_METRICS`` and ``LOAD_METRICS``, the graph pages of the live screen
(``ui/widgets/graph_grid.PAGES``) and the units of their titles and axes
(``ui/widgets/units.UNITS``). A new graph of a counter's rate is one row here (the redo log's
bytes per second is such a row); a metric that needs more than a sum of counter deltas gets
its row here and its lines in ``derive()``, which ``tests/screens/test_metric_catalog.py`` holds
together.

The rows are in the order the graphs appear: a page draws the rows that name it, in this
order (so a row goes where its graph should be).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

#: Where a metric's value comes from.
SOURCES = ("gauge", "interval", "load", "linkbench")
#: How a metric's values read (``ui/widgets/units.py`` has a format for each).
UNIT_KINDS = ("count", "rate", "per_second", "percent", "ms", "ms_per_second", "bytes",
              "bytes_per_second")

#: The graph pages, in their keys' order (1, 2, 3, 5; 4 is the incident page), and titles.
PAGE_TITLES: dict[str, str] = {"overview": "Overview", "innodb": "InnoDB",
                               "myrocks": "MyRocks", "linkbench": "LinkBench"}


@dataclass(frozen=True, slots=True)
class Metric:
    """One metric.

    ``source``: ``gauge`` (read from one sample), ``interval`` (two samples of one server
    run: a rate or a ratio of deltas), ``load`` (the load driver's per-second report),
    ``linkbench`` (one LinkBench operation's report, a series made when first reported).
    ``rate_of``: for an interval metric that is the per-second increase of these counters
    (summed), ``derive()`` computes it from this row alone; empty where ``derive()`` has
    lines of its own for it. ``pages``: the graph pages it is drawn on; ``titles``: a page's
    own title for it where that differs from ``title``.
    """

    name: str
    title: str
    unit: str
    source: str
    pages: tuple[str, ...] = ()
    rate_of: tuple[str, ...] = ()
    titles: Mapping[str, str] = field(default_factory=dict)

    def title_on(self, page: str) -> str:
        return self.titles.get(page, self.title)


CATALOG: tuple[Metric, ...] = (
    # MyRocks first: its page shows them before the load's graphs.
    Metric("rocks_hit_ratio", "Block cache hit", "percent", "interval", ("myrocks",)),
    Metric("rocks_stalls", "Write stalls", "per_second", "interval", ("myrocks",)),
    Metric("rocks_stall_ms", "Stall time", "ms_per_second", "interval", ("myrocks",)),
    Metric("tps", "Server TPS", "rate", "interval", ("overview",)),
    Metric("qps", "Server QPS", "rate", "interval", ("overview",)),
    Metric("load_tps", "sysbench TPS", "rate", "load", ("overview", "myrocks", "linkbench"),
           titles={"linkbench": "Requests"}),
    Metric("load_qps", "sysbench QPS", "rate", "load"),
    # The built-in LinkBench (issue 20): the post's four operations, by their short names.
    Metric("lb_gl_ops", "getlinklist", "per_second", "linkbench", ("linkbench",)),
    Metric("lb_gl_p99", "getlinklist p99", "ms", "linkbench", ("linkbench",)),
    Metric("lb_gn_ops", "getnode", "per_second", "linkbench", ("linkbench",)),
    Metric("lb_gn_p99", "getnode p99", "ms", "linkbench", ("linkbench",)),
    Metric("lb_ul_p99", "updatelink p99", "ms", "linkbench", ("linkbench",)),
    Metric("lb_un_ops", "updatenode", "per_second", "linkbench", ("linkbench",)),
    Metric("lb_un_p99", "updatenode p99", "ms", "linkbench", ("linkbench",)),
    Metric("load_p95", "sysbench p95", "ms", "load", ("overview", "myrocks")),
    Metric("load_err", "sysbench errors", "per_second", "load"),
    Metric("hit_ratio", "BP hit ratio", "percent", "interval", ("overview", "innodb")),
    Metric("dirty_pct", "Dirty pages", "percent", "gauge", ("overview", "innodb")),
    Metric("history_len", "History length", "count", "gauge", ("overview", "innodb")),
    Metric("checkpoint_age", "Checkpoint age", "bytes", "gauge", ("overview",)),
    Metric("checkpoint_pct", "Checkpoint age/max", "percent", "gauge", ("innodb",)),
    Metric("row_lock_waits", "Row lock waits", "per_second", "interval", ("innodb",),
           rate_of=("Innodb_row_lock_waits",)),
    Metric("pages_flushed", "Pages flushed", "per_second", "interval", ("innodb",),
           rate_of=("Innodb_buffer_pool_pages_flushed",)),
    Metric("data_reads", "Data reads", "per_second", "interval", ("innodb",),
           rate_of=("Innodb_data_reads",)),
    Metric("log_waits", "Log waits", "per_second", "interval", ("innodb",),
           rate_of=("Innodb_log_waits",)),
    Metric("log_written", "Redo written", "bytes_per_second", "interval", ("innodb",),
           rate_of=("Innodb_os_log_written",)),
    Metric("threads_running", "Threads running", "count", "gauge", ("innodb",)),
    Metric("cpu", "Host CPU", "percent", "interval", ("overview", "myrocks", "linkbench")),
    Metric("iowait", "Host iowait", "percent", "interval"),
)


def names(source: str, catalog: tuple[Metric, ...] | None = None) -> tuple[str, ...]:
    """The names of the rows from ``source``, in the catalog's order."""
    return tuple(m.name for m in (CATALOG if catalog is None else catalog)
                 if m.source == source)


def rates(catalog: tuple[Metric, ...] | None = None) -> tuple[Metric, ...]:
    """The interval rows ``derive()`` computes from the row alone (``rate_of``)."""
    return tuple(m for m in (CATALOG if catalog is None else catalog)
                 if m.source == "interval" and m.rate_of)


def page_rows(catalog: tuple[Metric, ...] | None = None
              ) -> dict[str, tuple[str, tuple[Metric, ...]]]:
    """Each graph page: its title and the rows drawn on it, in the catalog's order."""
    rows = CATALOG if catalog is None else catalog
    return {page: (title, tuple(m for m in rows if page in m.pages))
            for page, title in PAGE_TITLES.items()}


def check(catalog: tuple[Metric, ...]) -> list[str]:
    """What is wrong with a catalog (an empty list when nothing is): unknown sources, units
    or pages, a name given twice, ``rate_of`` on a row that is not an interval."""
    problems: list[str] = []
    seen: set[str] = set()
    for m in catalog:
        if m.name in seen:
            problems.append(f"{m.name}: listed twice")
        seen.add(m.name)
        if m.source not in SOURCES:
            problems.append(f"{m.name}: source {m.source!r} is not one of {SOURCES}")
        if m.unit not in UNIT_KINDS:
            problems.append(f"{m.name}: unit {m.unit!r} is not one of {UNIT_KINDS}")
        for page in (*m.pages, *m.titles):
            if page not in PAGE_TITLES:
                problems.append(f"{m.name}: no graph page {page!r}")
        if m.rate_of and m.source != "interval":
            problems.append(f"{m.name}: rate_of needs source 'interval'")
    return problems


__all__ = ["CATALOG", "PAGE_TITLES", "SOURCES", "UNIT_KINDS", "Metric", "check", "names",
           "page_rows", "rates"]
