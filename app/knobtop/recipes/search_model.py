"""What a search is (``Search``, its knobs' ``Dimension``s) and its checks against a
server, apart from the search file's reader (``search.py``): the tune kind
(``kinds/tune.py``) and a resume (``resume.py``) use them without the reader, which reads
``[run] kind`` with the kinds' registry (an import circle otherwise)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from knobtop.analysis.power import no_verdict_warning
from knobtop.conditions import Needs
from knobtop.load.base import LoadSpec
from knobtop.recipes.model import Arm, Recipe, RecipeError, Steady, Waits
from knobtop.server.catalog import Catalog
from knobtop.server.knobcheck import absent_problem, close_name
from knobtop.server.knobs import KnobError, validate


class SearchError(RecipeError):
    """A search file cannot be used; ``file``, ``key``, ``problem`` and ``fix`` say why."""


@dataclass(frozen=True, slots=True)
class Dimension:
    """One knob of the search: its choices (strings as a person writes them), or a range
    of integers or numbers, sampled on a log scale with ``log``."""

    name: str
    choices: tuple[str, ...] = ()
    low: float | None = None
    high: float | None = None
    integer: bool = True
    log: bool = False

    def values_to_check(self) -> list[str]:
        """The values the server must accept: every choice, or both ends of the range."""
        if self.choices:
            return list(self.choices)
        assert self.low is not None and self.high is not None
        return [_text(self.low, self.integer), _text(self.high, self.integer)]


@dataclass(frozen=True, slots=True)
class Search:
    path: Path
    name: str
    description: str
    # [load]: the load every trial runs, at the search's one thread count
    load: LoadSpec
    warmup: int  # [load] warmup: seconds of load before each measured window
    knobs: tuple[Dimension, ...]
    direction: str  # "maximize" | "minimize"
    metric: str  # "tps" | "latency"
    constraints: dict[str, float]
    trials: int | None
    minutes: float | None
    candidates: int = 2
    replicates: int = 5
    seed: int = 1
    waits: Waits = field(default_factory=Waits)
    steady: Steady = field(default_factory=Steady)
    allow_reach: tuple[str, ...] = ()  # [allow] reach (as a recipe's)
    needs: Needs = field(default_factory=Needs)  # [conditions] (as a recipe's)

    @property
    def threads(self) -> int:
        return self.load.threads

    @property
    def knob_names(self) -> list[str]:
        return [d.name for d in self.knobs]

    def check_server(self, catalog: Catalog) -> list[str]:
        """This search against the server as soon as it answers (``check_search``)."""
        return check_search(self, catalog)

    def space(self) -> dict[str, object]:
        """The search space as journaled (a resumed search must have the same)."""
        return {d.name: ({"choices": list(d.choices)} if d.choices else
                         {"min": d.low, "max": d.high, "integer": d.integer, "log": d.log})
                for d in self.knobs}

    def recipe(self, base: Arm) -> Recipe:
        """The recipe the tune runs through the recipe runner, of kind "tune" (its kind,
        kinds/tune.py, runs it): one arm (the baseline, with the searched knobs' values) at
        the search's threads; the baseline's runs, the trials and the verification are
        steps the kind adds as the search goes."""
        return Recipe(
            path=self.path, name=self.name, description=self.description, applies={},
            why="", load=self.load, threads=(self.load.threads,), warmup=self.warmup,
            waits=self.waits, steady=self.steady, replicates=1,
            order="counterbalanced", seed=self.seed, pause=0.0, arms=(base,),
            # LinkBench: each window a run of its own, as in a recipe (issue 20)
            timed=self.load.workload == "linkbench", allow_reach=self.allow_reach,
            needs=self.needs, kind="tune",
        )


def _text(value: float, integer: bool) -> str:
    return str(int(value)) if integer else f"{value:g}"


def verify_warnings(search: Search) -> list[str]:
    """The [verify] that can never recommend: its candidates are a Holm family over the
    replicates' rounds (4 rounds and 2 candidates: the best p is 2 x 0.029 = 0.057)."""
    found = no_verdict_warning(
        search.replicates, search.candidates, what="[verify] replicates",
        none="no candidate can get a verdict, so none can be recommended",
        fix=", or fewer candidates" if search.candidates > 1 else "")
    return [] if found is None else [found]


def check_search(search: Search, catalog: Catalog) -> list[str]:
    """The search against one server: every knob exists and takes every choice (or both
    ends of its range); returns warnings (static knobs restart the server per trial, a
    [verify] that can never recommend)."""
    warnings: list[str] = verify_warnings(search)
    for i, dim in enumerate(search.knobs):
        facts = catalog.get(dim.name)
        absent = absent_problem(catalog, dim.name)
        if absent is not None:
            close = close_name(catalog, dim.name)
            raise SearchError(str(search.path), f"knob[{i}].name", absent,
                              f'write name = "{close}"' if close else
                              "remove it, or search its equivalent on this server")
        for value in dim.values_to_check():
            try:
                validate(facts, value, static_ok=True)
            except KnobError as exc:
                raise SearchError(str(search.path), f"knob[{i}]", str(exc),
                                  f"give {dim.name} values this server accepts") from None
        if facts.mode == "static":
            warnings.append(f"{dim.name} is static: a trial that changes it restarts the "
                            "server")
    return warnings


__all__ = ["Dimension", "Search", "SearchError", "check_search", "verify_warnings"]
