"""A tune search file (issue 21 part 1): the knobs to search with their ranges or choices,
the load each trial runs, an objective with constraints, and a budget; checked on its own
as recipes are (the recipe reader's rules for [load] and knob names), then against a
server's catalog.

```toml
name = "flush-tune"
description = "..."
[load]                        # a recipe's [load], one thread count
workload = "oltp_write_only"
threads = 16
duration = 30
warmup = 10
[objective]
maximize = "tps"              # average TPS; or minimize = "latency" ([load] percentile)
[constraints]
latency_ms_max = 20.0         # optional: the load's percentile latency, at most
errors_per_s_max = 0          # optional
[budget]
trials = 30                   # and/or minutes = 60 (the search's; verification follows)
[verify]                      # optional: the best candidates against the baseline
candidates = 2                # 1-5, best trials by objective that kept the constraints
replicates = 5                # runs per arm, counterbalanced rounds (4-30; 4 verify
                              # 1 candidate, 2-5 candidates need 5: a Holm family)
[[knob]]
name = "innodb_flush_log_at_trx_commit"
choices = [0, 1, 2]
[[knob]]
name = "innodb_io_capacity"
min = 100
max = 20000
log = true                    # sample on a log scale (min above 0)
```

The baseline is the server's own values at the start; static knobs are allowed (each
trial that changes one restarts the server, as recipe arms do). ``[wait]`` and ``[steady]``
are a recipe's (gates and the plateau wait before each measured step); ``seed`` seeds the
sampler and the verification's arm order.

This module is the file's reader; what a search is (``Search``, ``Dimension``) and its
checks against a server are ``search_model.py``'s (re-exported here).
"""

from __future__ import annotations

import math
from pathlib import Path

from knobtop.recipes.model import MAX_THREADS
from knobtop.recipes.reader import BUNDLED_DIR, README, _Reader
from knobtop.recipes.search_model import (
    Dimension,
    Search,
    SearchError,
    check_search,
    verify_warnings,
)
from knobtop.tomlcheck import Table, parse, read_text_file, too_deep

OBJECTIVES = {"maximize": ("tps",), "minimize": ("latency",)}
CONSTRAINTS = ("latency_ms_max", "errors_per_s_max", "tps_min")
MAX_TRIALS = 500
MAX_CHOICES = 64
_TOP_KEYS = ("name", "description", "load", "objective", "constraints", "budget", "knob",
             "verify", "wait", "steady", "seed", "allow", "conditions")
_VERIFY_KEYS = ("candidates", "replicates")
MAX_CANDIDATES = 5
# 4 runs per arm is the fewest whose rank test can pass 5% (4 vs 4: p = 0.029); 5 lets
# two candidates pass Holm (5 vs 5: 0.008); verify_warnings says when the plan cannot.
MIN_VERIFY_REPLICATES = 4
MAX_VERIFY_REPLICATES = 30
_KNOB_KEYS = ("name", "choices", "min", "max", "log")
_BUDGET_KEYS = ("trials", "minutes")


class _SearchReader(_Reader):
    error_type = SearchError

    def search(self, doc: Table, path: Path) -> Search:
        self.check_keys(doc, _TOP_KEYS, "")
        allow_reach = self.allow(doc)
        name = self.req_string(doc, "name", "", '"flush-tune" (letters, digits, . _ -)')
        description = self.req_string(doc, "description", "", '"what the search is for"')
        load_table = self.table(doc, "load")
        if load_table is None:
            raise self.error("load", "missing [load] table",
                             'add [load] with workload = "oltp_read_write", threads = 16, '
                             f"duration = 30 (see {README})")
        table = self.load(load_table)
        if len(table.threads) != 1:
            raise self.error("load.threads", "a search runs every trial at one thread count",
                             f"write threads = {table.threads[0]} (one of 1-{MAX_THREADS})")
        direction, metric = self.objective(self.table(doc, "objective"))
        constraints = self.constraints(self.table(doc, "constraints") or {})
        trials, minutes = self.budget(self.table(doc, "budget"))
        knobs = self.dimensions(doc.get("knob"))
        verify = self.table(doc, "verify") or {}
        self.check_keys(verify, _VERIFY_KEYS, "verify")
        candidates = self.integer(verify, "candidates", "verify", lo=1, hi=MAX_CANDIDATES)
        replicates = self.integer(verify, "replicates", "verify",
                                  lo=MIN_VERIFY_REPLICATES, hi=MAX_VERIFY_REPLICATES)
        seed = self.integer(doc, "seed", "", lo=0, hi=2**63 - 1)
        waits = self.waits(self.table(doc, "wait") or {})
        steady = self.steady(self.table(doc, "steady") or {}, waits)
        return Search(path=path, name=name, description=description, load=table.load,
                      warmup=table.warmup, knobs=knobs,
                      direction=direction, metric=metric, constraints=constraints,
                      trials=trials, minutes=minutes,
                      candidates=2 if candidates is None else candidates,
                      replicates=5 if replicates is None else replicates,
                      seed=1 if seed is None else seed, waits=waits, steady=steady,
                      allow_reach=allow_reach, needs=self.conditions(doc))

    def objective(self, table: Table | None) -> tuple[str, str]:
        fix = 'write [objective] with maximize = "tps" or minimize = "latency"'
        if table is None:
            raise self.error("objective", "missing [objective] table", fix)
        self.check_keys(table, tuple(OBJECTIVES), "objective")
        if len(table) != 1:
            raise self.error("objective", "give one of maximize or minimize", fix)
        (direction, metric), = table.items()
        if metric not in OBJECTIVES[direction]:
            raise self.error(f"objective.{direction}", f"{metric!r} cannot be {direction}d "
                             "here", fix)
        return direction, str(metric)

    def constraints(self, table: Table) -> dict[str, float]:
        self.check_keys(table, CONSTRAINTS, "constraints")
        out: dict[str, float] = {}
        for key in table:
            value = self.number(table, key, "constraints", lo=0.0, hi=1e12, lo_open=False)
            assert value is not None
            out[key] = value
        return out

    def budget(self, table: Table | None) -> tuple[int | None, float | None]:
        fix = "write [budget] with trials = 30 and/or minutes = 60"
        if table is None:
            raise self.error("budget", "missing [budget] table", fix)
        self.check_keys(table, _BUDGET_KEYS, "budget")
        trials = self.integer(table, "trials", "budget", lo=1, hi=MAX_TRIALS)
        minutes = self.number(table, "minutes", "budget", lo=0.0, hi=7 * 24 * 60,
                              lo_open=True)
        if trials is None and minutes is None:
            raise self.error("budget", "no budget", fix)
        return trials, minutes

    def dimensions(self, value: object) -> tuple[Dimension, ...]:
        fix = ('write each knob as a [[knob]] table: name = "innodb_io_capacity" with '
               "min and max, or choices = [...]")
        if value is None:
            raise self.error("knob", "no [[knob]] tables", fix)
        out: list[Dimension] = []
        for _, p, item in self.tables(value, "knob", fix):
            self.check_keys(item, _KNOB_KEYS, p)
            raw = self.req_string(item, "name", p, '"innodb_io_capacity"')
            try:
                knob = next(iter(self.knobs({raw: "0"}, p)))  # the recipe's name rules
            except SearchError as exc:
                raise self.error(f"{p}.name", exc.problem, exc.fix) from None
            if any(d.name == knob for d in out):
                raise self.error(f"{p}.name", f"{knob} is searched twice",
                                 "give each knob one [[knob]] table")
            out.append(self.dimension(item, p, knob))
        return tuple(out)

    def dimension(self, item: Table, p: str, knob: str) -> Dimension:
        has_range = "min" in item or "max" in item
        if "choices" in item:
            if has_range or "log" in item:
                raise self.error(f"{p}.choices", "choices and a range together",
                                 "give choices = [...], or min and max, not both")
            choices = item["choices"]
            if not isinstance(choices, list) or not choices:
                raise self.wrong_type(f"{p}.choices", "a non-empty list", choices,
                                      "write choices = [0, 1, 2]")
            texts: list[str] = []
            for j, c in enumerate(choices):
                if isinstance(c, bool):
                    text = "ON" if c else "OFF"
                elif isinstance(c, int | float | str) and str(c).strip():
                    text = str(c).strip()
                else:
                    raise self.wrong_type(f"{p}.choices[{j}]", "a value", c,
                                          'write a number, a string or true/false')
                if text in texts:
                    raise self.error(f"{p}.choices[{j}]", f"{text} is listed twice",
                                     "list each choice once")
                texts.append(text)
            if len(texts) < 2 or len(texts) > MAX_CHOICES:
                raise self.error(f"{p}.choices", f"{len(texts)} choices",
                                 f"give 2 to {MAX_CHOICES} choices")
            return Dimension(knob, choices=tuple(texts))
        if "min" not in item or "max" not in item:
            raise self.error(p, "no choices and no range",
                             "give min and max (numbers), or choices = [...]")
        ends: list[int | float] = []
        for key in ("min", "max"):
            v = item[key]
            if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v):
                raise self.wrong_type(f"{p}.{key}", "a number", v, f"write {key} = 100")
            ends.append(v)
        low, high = ends
        if not low < high:
            raise self.error(f"{p}.max", f"max {high} is not above min {low}",
                             "give a max above the min")
        log = bool(self.boolean(item, "log", p))
        if log and low <= 0:
            raise self.error(f"{p}.log", "a log scale needs min above 0",
                             "raise min above 0, or remove log")
        integer = isinstance(low, int) and isinstance(high, int)
        return Dimension(knob, low=float(low), high=float(high), integer=integer, log=log)


def load_search(path: Path | str) -> Search:
    """Read and check one search file (no server involved); SearchError names the file,
    the dotted key and a fix."""
    name = str(path)  # a bare NAME (no '/', no '.toml'): a bundled search
    if "/" not in name and not name.endswith(".toml") \
            and (BUNDLED_DIR / "tune" / f"{name}.toml").is_file():
        path = BUNDLED_DIR / "tune" / f"{name}.toml"
    path = Path(path).expanduser()
    shown = str(path)

    def error(key: str | None, problem: str, fix: str) -> SearchError:
        return SearchError(shown, key, problem, fix)

    try:
        text, _mode = read_text_file(path, error, "search file", "give a .toml search file")
    except FileNotFoundError:
        raise SearchError(shown, None, "search file not found",
                          "give the path of a search .toml file") from None
    doc = parse(text, error, README)
    try:
        return _SearchReader(shown, text).search(doc, path)
    except RecursionError:
        raise too_deep(error) from None


__all__ = ["Dimension", "Search", "SearchError", "check_search", "load_search",
           "verify_warnings"]
