"""IncidentPage: what the server is doing right now, drawn from the newest ``incident`` event:
processlist, lock waits, the oldest transaction, replication, Galera and the error log."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from knobtop.analysis.times import wall_clock
from knobtop.journal.events import Incident
from knobtop.server.incident import own_part

PROCESS_SHOWN = 25


def _n(value: str | float | None, unit: str = "") -> str:
    """A number as people read it: 12, 3.4, 1,204; none as a dash."""
    if value is None:
        return "-"
    if isinstance(value, str):
        return value
    if float(value).is_integer():
        return f"{int(value):,}{unit}"
    return f"{value:.1f}{unit}"


def _s(value: str | float | None) -> str:
    return "-" if value is None else str(value)


def _table(*columns: tuple[str, dict[str, Any]]) -> Table:
    table = Table(box=None, padding=(0, 1, 0, 0), expand=True, show_edge=False,
                  header_style="bold")
    for name, opts in columns:
        table.add_column(name, no_wrap=True, overflow="ellipsis", **opts)
    return table


def _title(text: str) -> Text:
    return Text(text, style="bold underline")


def render_incident(event: Incident | None, *, waiting: str = "",
                    age: float | None = None) -> RenderableType:
    """The page for one incident event (texts are Text: never read as markup)."""
    if event is None:
        return Text(waiting or "no incident snapshot yet")
    parts: list[RenderableType] = [_summary(event, age)]
    parts += _processlist(event)
    parts += _lock_waits(event)
    parts += _oldest(event)
    parts += _replication(event)
    parts += _galera(event)
    parts += _error_log(event)
    return Group(*parts)


def _summary(event: Incident, age: float | None) -> Text:
    """The first line: when, how many connections and lock waits, the oldest transaction."""
    summary = Text()
    summary.append(f"as of {wall_clock(event.wall)}", style="bold")
    if age is not None and age >= 5:
        summary.append(f" ({age:.0f} s before the cursor)", style="dim")
    waits = len(event.locks)
    summary.append(f"  ·  {event.threads} connections  ·  {waits} lock wait"
                   f"{'' if waits == 1 else 's'}")
    if event.oldest:
        summary.append(f"  ·  oldest transaction {_n(event.oldest.get('seconds'), ' s')}")
    if not event.statements:
        summary.append("  ·  statement texts off", style="italic")
    return summary


def _processlist(event: Incident) -> list[RenderableType]:
    """The processlist, longest-running first, up to PROCESS_SHOWN rows."""
    parts: list[RenderableType] = [_title("Processlist (longest-running first)")]
    if event.procs:
        procs = _table(("id", {"justify": "right"}), ("user", {"max_width": 12}),
                       ("db", {"max_width": 12}), ("command", {"max_width": 10}),
                       ("time", {"justify": "right"}), ("state", {"max_width": 20}),
                       ("statement", {"ratio": 1, "min_width": 10}))
        for row in event.procs[:PROCESS_SHOWN]:
            cells = [*row, *([None] * 7)][:7]
            seconds = cells[4]
            procs.add_row(*(Text(c) for c in (
                _n(cells[0]), _s(cells[1]), _s(cells[2]), _s(cells[3]),
                f"{seconds:.1f}" if isinstance(seconds, float | int) else "-",
                _s(cells[5]), "" if cells[6] is None else str(cells[6]))))
        parts.append(procs)
        if event.threads > len(event.procs):
            parts.append(Text(f"... and {event.threads - len(event.procs)} more", style="dim"))
    else:
        parts.append(Text("no other connections", style="dim"))
    return parts


def _lock_waits(event: Incident) -> list[RenderableType]:
    """InnoDB lock waits: who waits, for how long, and on whom."""
    parts: list[RenderableType] = [_title("InnoDB lock waits")]
    if event.locks:
        locks = _table(("waiting", {"justify": "right"}), ("for", {"justify": "right"}),
                       ("statement", {"ratio": 1, "min_width": 8}),
                       ("blocked by", {"justify": "right"}),
                       ("its statement", {"ratio": 1, "min_width": 8}))
        # A blocker running no statement holds its locks in an open transaction.
        idle = "(idle in trx)" if event.statements else ""
        for row in event.locks:
            cells = [*row, *([None] * 5)][:5]
            locks.add_row(*(Text(c) for c in (
                _n(cells[0]), _n(cells[1], " s"), _s(cells[2]) if cells[2] else "",
                _n(cells[3]), _s(cells[4]) if cells[4] else idle)))
        parts.append(locks)
    else:
        parts.append(Text("none", style="dim"))
    return parts


def _oldest(event: Incident) -> list[RenderableType]:
    """The oldest open transaction, in one line."""
    parts: list[RenderableType] = [_title("Oldest transaction")]
    if event.oldest:
        o = event.oldest
        line = Text(f"thread {_n(o.get('thread'))}, open {_n(o.get('seconds'), ' s')}, "
                    f"{_s(o.get('state'))}, {_n(o.get('rows_locked'))} rows locked, "
                    f"{_n(o.get('rows_modified'))} modified")
        statement = o.get("statement")
        if statement:
            line.append(f": {statement}")
        parts.append(line)
    else:
        parts.append(Text("no open transaction", style="dim"))
    return parts


def _replication(event: Incident) -> list[RenderableType]:
    """A line per replication channel (no section on a server that replicates nothing)."""
    parts: list[RenderableType] = []
    if event.repl:
        parts.append(_title("Replication"))
        for ch in event.repl:
            name = f"'{ch.get('name')}' " if ch.get("name") else ""
            line = Text(f"{name}IO {_s(ch.get('io'))}, SQL {_s(ch.get('sql'))}, lag "
                        f"{_n(ch.get('lag'), ' s')}; {_s(ch.get('state'))}")
            if ch.get("error"):
                line.append(f"; error: {ch.get('error')}", style="bold")
            parts.append(line)
    return parts


def _galera(event: Incident) -> list[RenderableType]:
    """The Galera node's state and queues (no section off a Galera cluster)."""
    if not event.galera:
        return []
    g = event.galera
    return [_title("Galera"), Text(
        f"cluster {g.get('wsrep_cluster_status', '-')} size "
        f"{g.get('wsrep_cluster_size', '-')}, node {g.get('wsrep_local_state_comment', '-')}"
        f", ready {g.get('wsrep_ready', '-')}; recv queue "
        f"{g.get('wsrep_local_recv_queue', '-')} (avg "
        f"{g.get('wsrep_local_recv_queue_avg', '-')}), send queue "
        f"{g.get('wsrep_local_send_queue', '-')}; flow control paused "
        f"{g.get('wsrep_flow_control_paused', '-')}, sent "
        f"{g.get('wsrep_flow_control_sent', '-')}, received "
        f"{g.get('wsrep_flow_control_recv', '-')}")]


def _error_log(event: Incident) -> list[RenderableType]:
    """The error log's newest lines, then the problems the snapshot met."""
    parts: list[RenderableType] = [
        _title(f"Error log{f' ({event.log_path})' if event.log_path else ''}")]
    if event.log:
        parts.extend(_log_line(line) for line in event.log)
    else:
        parts.append(Text("no lines", style="dim"))
    for problem in event.problems:
        parts.append(Text(f"! {problem}", style="bold"))
    return parts


def _log_line(line: str) -> Text:
    """One error-log line; knobtop's own label first, where a narrow page still shows it
    (the server's words after it, cut at the page's edge)."""
    text, label = own_part(line)
    out = Text(no_wrap=True, overflow="ellipsis")
    if label:
        out.append(label.strip("()"), style="italic")
        out.append(" · ", style="dim")
    out.append(text)
    return out


class IncidentPage(VerticalScroll):
    """The incident page (key 4): a scrolling view of the newest incident event."""

    DEFAULT_CSS = """
    IncidentPage {
        height: 1fr;
        border: round $primary 50%;
        border-title-color: $text-accent;
    }
    IncidentPage > Static {
        width: 1fr;
    }
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.border_title = "Incident"
        self.event: Incident | None = None
        self.waiting = "sampling: the first snapshot comes within 2 s"

    def compose(self) -> Any:
        yield Static(render_incident(None, waiting=self.waiting), id="incident-body")

    def show(self, event: Incident | None, *, waiting: str = "",
             age: float | None = None) -> None:
        self.event = event
        if waiting:
            self.waiting = waiting
        for body in self.query("#incident-body").results(Static):  # none while unmounted
            body.update(render_incident(event, waiting=self.waiting, age=age))
