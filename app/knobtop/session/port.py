"""SessionPort: all a front end (the Textual app, headless, the recipe runner) may use of a session.

Commands run on the session's event loop (through :class:`~knobtop.session.core.SessionThread`
when the front end lives on another thread).  ``state()`` returns a frozen snapshot that is safe
to read from any thread; ``subscribe()`` hands every journal event, after it is written, to a
listener and returns the function that stops it.  Nothing else of a session is a front end's
business: its attributes, links and drivers are private to ``session/``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Concatenate, ParamSpec, Protocol, TypeVar

from knobtop.errors import KnobtopError
from knobtop.journal.events import Checkpoint, Progress, RecipeRun, StepResult, Trial

if TYPE_CHECKING:
    from knobtop.conditions import Conditions
    from knobtop.journal.events import Change, Event, Header, Mark, Note, Phase
    from knobtop.load.base import LoadSpec
    from knobtop.load.sysbench_output import PrepareProgress
    from knobtop.metrics.footprint import Footprint
    from knobtop.server.appliers.base import Plan
    from knobtop.server.catalog import Catalog
    from knobtop.server.probes import ProbeReading
    from knobtop.server.variables import PurgeWait

Listener = Callable[["Event"], None]

# The source of the error event a front end hears when the session's process is gone.
LOST_SOURCE = "session process"

# The events a recipe run records through its session (``SessionPort.record``): its start
# and end, a step's result, a checkpoint, a trial, its progress. Every other kind (samples,
# changes, load, notes...) is the session's own, and ``record`` refuses it.
Recorded = TypeVar("Recorded", RecipeRun, StepResult, Checkpoint, Trial, Progress)
RECORDED: tuple[type[Event], ...] = Recorded.__constraints__
Fields = ParamSpec("Fields")
Report = TypeVar("Report", covariant=True)


class RunOrder(Protocol[Report]):
    """A recipe or tune run as a value (recipes/orders.py): the front end hands it to
    ``SessionPort.run_recipe``, which runs it where the session lives (its own process
    behind the live screen) and returns its ``Report``; its progress reaches every front
    end as journal events (``Progress``, the run's own ``recipe``/``step``/``trial``)."""

    async def run(self, port: SessionPort, targets: Mapping[str, SessionPort]) -> Report: ...

    def abort(self) -> None: ...


def check_recorded(kind: object) -> None:
    """Refuse ``kind`` unless a recipe run may record it (RECORDED)."""
    if kind not in RECORDED:
        name = getattr(kind, "kind", None) or getattr(kind, "__name__", repr(kind))
        allowed = ", ".join(f"{k.__name__} ({k.kind})" for k in RECORDED)
        raise KnobtopError(f"a recipe run cannot record a {name} event: the session records "
                           f"only {allowed} for it; the others are the session's own")


@dataclass(frozen=True)
class BaselineDiff:
    """One knob whose server value is not the session's baseline."""

    knob: str
    now: str | None
    baseline: str | None
    dynamic: bool
    outside: bool = False  # its value now was set outside knobtop (revert leaves it unless chosen)


@dataclass(frozen=True)
class SessionState:
    """What a front end may know of a session at one moment (a copy: it never changes)."""

    profile: str  # the profile's name ("lab" for a sandbox)
    journal_path: Path | None  # None before open() or with --no-journal
    journal_error: str | None  # set when the journal could not be written: nothing is recorded
    header: Header | None  # the journal's header (server, hosts) once open
    catalog: Catalog | None  # every server variable, for the knob picker
    history: tuple[Change, ...]  # applied changes, newest last (what undo takes back)
    load: LoadSpec  # the load P/L/T act on: the one running or planned, else the profile's
    load_running: bool
    load_sources: tuple[str, ...]  # the client hosts driving load; >1: Load events per host + "all"
    restart_in_progress: bool
    # The server stops when this session ends (a sandbox it started, without --keep-running):
    # what was set live is lost with it, the drop-in file's values stay
    server_stops: bool = False


class SessionPort(Protocol):
    """The commands, the snapshot and the event subscription of one live session."""

    def state(self) -> SessionState: ...

    def subscribe(self, listener: Listener) -> Callable[[], None]: ...

    def now(self) -> float: ...

    async def open(self) -> Header: ...

    async def close(self, reason: str = "quit") -> None: ...

    # -- knobs
    # ``reach``: the reach variables (server.policy) the caller may set: the person
    # confirmed them in a dialog, or a file's [allow] reach with --allow-reach. Any other
    # reach variable is refused (journaled).
    async def set_knob(self, name: str, value: str, *, restart_ok: bool = False,
                       reason: str = "", reach: Collection[str] = ()) -> Change: ...

    async def set_knobs(self, knobs: Mapping[str, str], *, restart_ok: bool = False,
                        reason: str = "", keep_load: bool = False,
                        reach: Collection[str] = ()) -> list[Change]: ...

    async def undo(self, expected: Change | None = None) -> Change | None: ...

    async def baseline_diff(self) -> list[BaselineDiff]: ...

    # ``outside``: knobs holding a value set outside knobtop go back too (the person chose)
    async def revert_to_baseline(self, outside: bool = False) -> list[Change]: ...

    # What setting ``knob`` to ``value`` would do (the applier's plan: the value checked once,
    # the restart and its words, the datadir's pins); nothing is changed or journaled.
    async def preview_change(self, knob: str, value: str) -> Plan: ...

    def revert_plan(self, diff: list[BaselineDiff]) -> str: ...

    def quit_choice(self, choice: str, diff: list[BaselineDiff]) -> Note: ...

    # -- load
    async def start_load(self, workload: str | None = None,
                         threads: int | None = None) -> Phase: ...

    async def stop_load(self) -> None: ...

    async def toggle_load(self) -> None: ...

    async def change_load(self, workload: str | None = None,
                          threads: int | None = None) -> LoadSpec: ...

    async def prepare_load(self,
                           progress: Callable[[PrepareProgress], None] | None = None) -> bool: ...

    # -- the record
    def note(self, text: str) -> Note: ...

    def mark(self, label: str) -> Mark: ...

    def rebase_knobs(self, values: Mapping[str, str], why: str) -> Note: ...

    async def incident_sampling(self, on: bool) -> None: ...

    # -- what a recipe run needs
    def use_load(self, spec: LoadSpec) -> LoadSpec: ...

    async def global_values(self, names: Sequence[str]) -> dict[str, str | None]: ...

    async def wait_for_purge(self, below: int, timeout: float,
                             stopped: Callable[[], bool]) -> PurgeWait: ...

    # One of a recipe run's events (RECORDED), from its fields but its times: the session
    # stamps it (``t``, ``wall``), journals it, hands it to its subscribers and returns it.
    # ``record(RecipeRun, action="start", name=...)``; any other kind is refused.
    def record(self, kind: Callable[Concatenate[float, float, Fields], Recorded], /,
               *args: Fields.args, **fields: Fields.kwargs) -> Recorded: ...

    async def footprint(self, sizes: bool = False) -> Footprint: ...

    # A curve recipe's probe (server.probes): one phase of it on a new link of its own
    async def probe(self, name: str, phase: str, params: Mapping[str, int],
                    counters: Sequence[str] = ()) -> ProbeReading: ...

    # What the box offers before a run (server.conditions: sync and read latency of the
    # datadir, data vs buffer pool, CPUs), measured now; nothing is journaled by it
    async def conditions(self) -> Conditions: ...

    # A run's progress between the lines ``record(Progress, ...)`` journals (the seconds
    # ticking down): stamped and handed to the subscribers, not journaled
    def tell(self, kind: Callable[Concatenate[float, float, Fields], Progress], /,
             *args: Fields.args, **fields: Fields.kwargs) -> Progress: ...

    # -- runs: one at a time, where the session lives
    async def run_recipe(self, order: RunOrder[Report]) -> Report: ...

    # Stop the run under way at its next check (its load stops, the baseline comes back);
    # nothing when none runs
    def abort_recipe(self) -> None: ...


__all__ = ["LOST_SOURCE", "RECORDED", "BaselineDiff", "Fields", "Listener", "Recorded",
           "Report", "RunOrder", "SessionPort", "SessionState", "check_recorded"]
