"""What a recipe kind is: how its file is read, what its start event plans, and how it runs.

A kind (``[run] kind = "..."``) is one file in this package and a line in its registry
(``kinds/__init__.py``).  The reader asks the recipe's kind for its arms (and, for a kind
that runs one load with checkpoints, its ``Timeline``); the runner asks it for the steps it
knows before the run (``schedule``), writes the kind's part of the start event's plan and
hands the run to ``run``, which drives the runner's services (``Sequencer``): setting
knobs, waiting, starting the load, taking checkpoints, and steps: every planned step in
order (``run_arm_steps``), or one step at a time (``run_step``) with the steps it decides
as it goes (``add_steps``).

A recipe file plans its steps (``planned``).  The tune (``kinds/tune.py``, ``knobtop
tune``) is the kind whose steps come as it goes, from a search file: the runner drives it
as any other (``RecipeKind``), but no recipe file selects it, so it is no ``FileKind`` (the
registry's, which a recipe file is read with) and is not in the registry (the module says
why).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from knobtop.journal.events import Checkpoint, StepResult
    from knobtop.load.base import LoadSpec
    from knobtop.recipes.model import Arm, Curve, Recipe, Step, Timeline
    from knobtop.session.port import SessionPort
    from knobtop.tomlcheck import FileError, Table


def planned_steps(recipe: Recipe) -> list[Step]:
    """A recipe file's steps: its calibration rounds, then its schedule (none for a kind
    of one load or a curve)."""
    return [*recipe.calibration_schedule(), *recipe.schedule()]


def count(n: int, thing: str) -> str:
    """"1 arm", "2 arms"."""
    return f"{n} {thing}" if n == 1 else f"{n} {thing}s"


class LoadShape(Protocol):
    """What a kind reads of ``[load]`` (as the reader checked it, read_load.LoadTable): the
    load and its thread sweep."""

    @property
    def load(self) -> LoadSpec: ...

    @property
    def threads(self) -> tuple[int, ...]: ...


class KindReader(Protocol):
    """The recipe reader's checks a kind reads its table with (reader._Reader): each
    names the key and the fix in its error, as every other key's are."""

    def error(self, key: str | None, problem: str, fix: str) -> FileError: ...

    def wrong_type(self, dotted: str, expected: str, value: object, fix: str
                   ) -> FileError: ...

    def table(self, doc: Table, key: str, prefix: str = "") -> Table | None: ...

    def check_keys(self, table: Table, known: Sequence[str], prefix: str) -> None: ...

    def number(self, table: Table, key: str, prefix: str, *, lo: float, hi: float,
               lo_open: bool) -> float | None: ...

    def boolean(self, table: Table, key: str, prefix: str) -> bool | None: ...

    def string(self, table: Table, key: str, prefix: str, example: str) -> str | None: ...

    def integer(self, table: Table, key: str, prefix: str, *, lo: int, hi: int,
                unit: str = "") -> int | None: ...

    def knobs(self, raw: object, p: str) -> dict[str, str]: ...

    def seconds_list(self, table: Table, key: str, p: str, most: float
                     ) -> tuple[float, ...]: ...

    def metric_names(self, table: Table, p: str) -> tuple[str, ...]: ...

    def arms(self, value: object, on_servers: bool = False) -> tuple[Arm, ...]: ...


class Sequencer(Protocol):
    """The runner's services a kind drives (RecipeRunner)."""

    recipe: Recipe
    checkpoints: list[Checkpoint]
    driver: str  # the load driver of the last phase ("sysbench", "builtin")
    steps: list[Step]  # every step planned or run so far, by index

    @property
    def session(self) -> SessionPort: ...

    def status(self, state: str, waiting_for: str = "") -> None:
        """What the run is doing now (the progress every front end shows)."""

    def note(self, text: str) -> None:
        """A finding of the run: journaled as a mark, and told to the front end."""

    def tell(self, text: str) -> None:
        """A finding told to the front end only (the event it is about is journaled)."""

    def check(self) -> None:
        """RunAborted / RunFailed now if the run was aborted or cannot go on."""

    def mark(self, label: str) -> None: ...

    async def countdown(self, seconds: float, state: str) -> None:
        """Wait ``seconds`` (abortable), saying ``state`` meanwhile."""

    async def set_knobs(self, knobs: dict[str, str], what: str, keep_load: bool) -> None:
        """Set ``knobs`` as one change (a static one restarts); RunFailed if one did not
        take."""

    async def start_one_load(self, spec: LoadSpec, length: float) -> float:
        """Start the one load of a kind that runs one, for ``length`` seconds, with the
        series its checkpoints read emptied; the session time it started at."""

    def checkpoint(self, at: float, timeline: Timeline) -> None:
        """Read the checkpoint at ``at`` seconds into the load (journaled)."""

    async def run_arm_steps(self) -> None:
        """Every planned step in order (and the rounds added as it goes); an arm that does
        not take fails the run."""

    async def run_step(self, refusable: bool = False) -> StepResult:
        """The next planned step, its arm put in place first when it differs from the last
        step's (or the server changed knobs of its own with it); its result.  An arm that
        does not take fails the run (RunFailed); ArmRefused instead if ``refusable``: the
        step counts done, skipped."""

    def add_steps(self, steps: Sequence[Step]) -> None:
        """``steps`` after the planned ones, numbered on (decided as the run goes)."""

    def set_total(self, steps: int) -> None:
        """The steps the run plans in all, as its progress counts them."""


class RecipeKind(Protocol):
    """What the runner drives: every kind, the tune's too."""

    name: str  # [run] kind = NAME
    one_load: bool  # one load from start to end, with checkpoints (no steps)
    # A recipe file plans its steps (its checks judge the whole schedule); False: a tune's
    # come as it goes, from a search file (no recipe file selects it)
    planned: bool

    def plan(self, recipe: Recipe) -> dict[str, Any]:
        """The kind's keys in the start event's plan."""

    def schedule(self, recipe: Recipe) -> list[Step]:
        """The steps known before the run (the start event counts them; numbered by the
        runner)."""

    def readings(self, recipe: Recipe, done: int) -> tuple[int, str, float | None] | None:
        """For a kind whose progress counts readings, not steps: how many it takes, what
        they are called, and the seconds left after ``done`` of them (None: the runner's
        own estimate); None for a kind of steps."""

    async def run(self, runner: Sequencer, recipe: Recipe) -> None:
        """The run, after the tables are prepared; the runner restores the baseline."""


class FileKind(RecipeKind, Protocol):
    """A kind a recipe file selects (``[run] kind``, the registry's): how its file is
    read, and what a run of it is in a line."""

    about: str  # what it is, in a few words (the kind key's choices say it)
    section: str | None  # its own table in the file (e.g. "timeline"), if it has one
    keys: tuple[str, ...]  # that table's keys (the generated reference lists them)

    def read(self, reader: KindReader, doc: Table, load: LoadShape
             ) -> tuple[tuple[Arm, ...], Timeline | Curve | None]:
        """The recipe's arms and, for a one-load kind, its timeline (a curve: its
        Curve)."""

    def shape(self, recipe: Recipe) -> str:
        """What a run of it is, on one line (`knobtop run --list`)."""


__all__ = ["FileKind", "KindReader", "LoadShape", "RecipeKind", "Sequencer", "count",
           "planned_steps"]
