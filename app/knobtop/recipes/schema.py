"""The keys of recipe and search files, for the generated reference (docs/reference/).

The readers in ``reader.py`` (with ``read_load.py`` and ``read_arms.py``) and ``search.py``
are the schema: their key tuples say which keys each table takes, and their checks
(``integer``, ``number``, ``choice`` ...) say each value's type and range.
:func:`sections` returns the key tuples as the readers hold them; :func:`traced_checks`
reads files through the very readers, recording every check they make, so the reference's
types, ranges and choices are the code's own.  What a check does not hold (a default
applied by the caller, a word on what the key means) is in :data:`KEY_DOCS`, and
``tests/unit/test_docsref.py`` fails when a key of a reader has no entry there, or an entry
names a key no reader takes.  Nothing here changes how a file is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from knobtop.recipes import model as _model
from knobtop.recipes import read_arms as _arms
from knobtop.recipes import read_load as _load
from knobtop.recipes import reader as _reader
from knobtop.recipes import search as _search
from knobtop.recipes.kinds.curve import CURVE_KEYS
from knobtop.recipes.kinds.soak import SOAK_KEYS
from knobtop.tomlcheck import Table, parse, read_text_file


@dataclass(frozen=True, slots=True)
class Check:
    """One check a reader made of a key: its kind and the bounds or choices it allowed."""

    kind: str  # integer, number, choice, boolean, string
    low: float | None = None
    high: float | None = None
    low_open: bool = False
    choices: tuple[str, ...] = ()


def sections() -> dict[str, dict[str, tuple[str, ...]]]:
    """Each file kind's tables and the keys the reader accepts in each, in its order."""
    r, s = _reader, _search
    shared = {
        "[load]": _load.LOAD_KEYS,
        "[wait]": _load.WAIT_KEYS,
        "[steady]": _load.STEADY_KEYS,
        "[allow]": _arms.ALLOW_KEYS,
        "[conditions]": _load.CONDITIONS_KEYS,
    }
    return {
        "recipe": {
            "top level": r._TOP_KEYS,
            "[applies]": r._APPLIES_KEYS,
            **shared,
            "[run]": r._RUN_KEYS,
            "[[arm]]": _arms.ARM_KEYS,
            "[[arm]] load": _arms.ARM_LOAD_KEYS,
            "[targets.NAME]": _arms.TARGET_KEYS,
            "[timeline]": r._TIMELINE_KEYS,
            "[[timeline.action]]": r._ACTION_KEYS,
            "[soak]": SOAK_KEYS,
            "[curve]": CURVE_KEYS,
        },
        "search": {
            "top level": s._TOP_KEYS,
            "[load]": _load.LOAD_KEYS,
            "[objective]": tuple(s.OBJECTIVES),
            "[constraints]": s.CONSTRAINTS,
            "[budget]": s._BUDGET_KEYS,
            "[[knob]]": s._KNOB_KEYS,
            "[verify]": s._VERIFY_KEYS,
            "[wait]": _load.WAIT_KEYS,
            "[steady]": _load.STEADY_KEYS,
            "[allow]": _arms.ALLOW_KEYS,
            "[conditions]": _load.CONDITIONS_KEYS,
        },
    }


_INDEX = re.compile(r"\[\d+\]")
# The dotted prefixes the readers use, as the sections() names them.
_PREFIX = {"": "top level", "load": "[load]", "wait": "[wait]", "steady": "[steady]",
           "run": "[run]", "applies": "[applies]", "arm[]": "[[arm]]",
           "arm[].load": "[[arm]] load", "timeline": "[timeline]",
           "timeline.action[]": "[[timeline.action]]", "soak": "[soak]", "curve": "[curve]",
           "verify": "[verify]",
           "budget": "[budget]", "constraints": "[constraints]", "knob[]": "[[knob]]",
           "allow": "[allow]", "conditions": "[conditions]"}


def _section(prefix: str) -> str:
    plain = _INDEX.sub("[]", prefix)
    if plain.startswith("targets."):
        return "[targets.NAME]"
    return _PREFIX.get(plain, plain)


def _tracing(base: type[Any], seen: dict[tuple[str, str], Check]) -> type[Any]:
    """A subclass of the reader ``base`` that notes each check in ``seen`` and then makes
    it exactly as ``base`` does."""

    class Tracing(base):  # type: ignore[misc]
        def integer(self, table: Table, key: str, prefix: str, *, lo: int, hi: int,
                    unit: str = "") -> int | None:
            seen.setdefault((_section(prefix), key), Check("integer", lo, hi))
            result: int | None = super().integer(table, key, prefix, lo=lo, hi=hi, unit=unit)
            return result

        def number(self, table: Table, key: str, prefix: str, *, lo: float, hi: float,
                   lo_open: bool) -> float | None:
            seen.setdefault((_section(prefix), key), Check("number", lo, hi, lo_open))
            result: float | None = super().number(table, key, prefix, lo=lo, hi=hi,
                                                  lo_open=lo_open)
            return result

        def choice(self, run: Table, key: str, allowed: tuple[str, ...], means: str,
                   prefix: str = "run") -> str:
            seen.setdefault((_section(prefix), key), Check("choice", choices=allowed))
            result: str = super().choice(run, key, allowed, means, prefix)
            return result

        def boolean(self, table: Table, key: str, prefix: str) -> bool | None:
            seen.setdefault((_section(prefix), key), Check("boolean"))
            result: bool | None = super().boolean(table, key, prefix)
            return result

        def string(self, table: Table, key: str, prefix: str, example: str) -> str | None:
            seen.setdefault((_section(prefix), key), Check("string"))
            result: str | None = super().string(table, key, prefix, example)
            return result

    return Tracing


def traced_checks(paths: list[Path]) -> dict[str, dict[tuple[str, str], Check]]:
    """The checks the readers make reading ``paths`` (recipes, and search files under a
    ``tune/`` folder): by file kind, ``(section, key)``; a check of a key is recorded
    whether or not the file gives it (the readers check every key they know)."""
    out: dict[str, dict[tuple[str, str], Check]] = {"recipe": {}, "search": {}}
    for path in paths:
        kind = "search" if path.parent.name == "tune" else "recipe"
        base = _search._SearchReader if kind == "search" else _reader._Reader

        def error(key: str | None, problem: str, fix: str, shown: str = str(path)
                  ) -> Exception:
            return _model.RecipeError(shown, key, problem, fix)

        text, _mode = read_text_file(path, error, "recipe file", "give a .toml file")
        doc = parse(text, error, _reader.README)
        reader = _tracing(base, out[kind])(str(path), text)
        if kind == "search":
            reader.search(doc, path)
        else:
            reader.recipe(doc, path)
    return out


def bundled_files() -> list[Path]:
    """The bundled recipes and searches, sorted: what :func:`traced_checks` reads for the
    reference."""
    tune = sorted((_reader.BUNDLED_DIR / "tune").glob("*.toml"))
    return [*_reader.bundled_recipes(), *tune]


# Keys whose range the file itself sets (a check's bounds differ from file to file).
DEPENDS_ON_FILE: dict[tuple[str, str], str] = {
    ("[[timeline.action]]", "at"): "0 to the load's duration",
    ("[soak]", "every"): "1 to the load's duration",
}

# (file kind, section, key) -> (type when no check says it, default, what it means)
KeyDoc = tuple[str, str, str]
_SHARED: dict[tuple[str, str], KeyDoc] = {
    ("[load]", "workload"): ("string", "required",
                             "oltp_read_write, oltp_point_select, oltp_read_only, "
                             "oltp_write_only, oltp_update_index, oltp_insert, linkbench, "
                             "or the absolute path of a .lua script on the client host"),
    ("[load]", "threads"): ("integer or list of integers (1-1024, no repeats)", "required",
                            "client threads: one level, or a sweep run in this order "
                            "(a search: one level)"),
    ("[load]", "duration"): ("integer", "required", "measured seconds per step"),
    ("[load]", "warmup"): ("integer", "0", "seconds the load runs before measuring"),
    ("[load]", "tables"): ("integer", "4", "sysbench tables"),
    ("[load]", "table_size"): ("integer", "10000", "rows per sysbench table"),
    ("[load]", "rate"): ("integer", "0", "total transactions per second; 0 = as fast as "
                         "possible"),
    ("[load]", "rand_type"): ("string: uniform, gaussian, special, pareto", "uniform",
                              "sysbench --rand-type"),
    ("[load]", "percentile"): ("integer", "95", "the latency percentile sysbench reports"),
    ("[load]", "prepared"): ("boolean", "true", "sysbench's prepared statements (false: "
                             "--db-ps-mode=disable)"),
    ("[load]", "engine"): ("string", "the server's default", "the tables' storage engine"),
    ("[load]", "options"): ("table of sysbench options", "{}",
                            "more --key=value arguments for the workload's script "
                            "(true/false become on/off)"),
    ("[load]", "instances"): ("integer", "1", "sysbench processes at once per client, each "
                              "on its own database; threads and rate are their total"),
    ("[load]", "table_options"): ("table", "{}", "CREATE TABLE options of the tables, e.g. "
                                  "{ KEY_BLOCK_SIZE = 8 }"),
    ("[load]", "maxid1"): ("integer", "10000", "LinkBench: the graph's nodes"),
    ("[load]", "requesters"): ("integer or list of integers", "threads",
                               "LinkBench: the request phase's connections (as threads)"),
    ("[load]", "loaders"): ("integer", "0 (the driver's choice)",
                            "LinkBench: the load phase's connections"),
    ("[wait]", "history_below"): ("integer", "off", "history list length below this before "
                                  "each measured step; 0: until it is 0"),
    ("[wait]", "dirty_at_lwm"): ("boolean", "false", "dirty pages at or below the server's "
                                 "innodb_max_dirty_pages_pct_lwm"),
    ("[wait]", "dirty_pct_below"): ("number", "off", "dirty pages % below this"),
    ("[wait]", "checkpoint_age_below"): ("size: bytes, or a string with K, M, G, T", "off",
                                         "redo checkpoint age below this"),
    ("[wait]", "plateau"): ("boolean", "false", "after warmup, keep the load running until "
                            "TPS is steady"),
    ("[wait]", "timeout"): ("number", str(int(_model.DEFAULT_TIMEOUT)),
                            "seconds per wait; then a timeout is journaled and the step "
                            "measured anyway"),
    ("[steady]", "window"): ("integer", str(_model.DEFAULT_STEADY[0]),
                             "seconds the plateau rule looks at (noise: 2 x window)"),
    ("[steady]", "cv_max"): ("number", str(_model.DEFAULT_STEADY[1]),
                             'judge = "cv": the largest coefficient of variation'),
    ("[steady]", "slope_max"): ("number", str(_model.DEFAULT_STEADY[2]),
                                'judge = "cv": the largest relative slope per second'),
    ("[steady]", "judge"): ("choice", "noise (cv when cv_max or slope_max is given)",
                            "the trend against its own noise, or the older CV and slope "
                            "bounds"),
    ("[allow]", "reach"): ("list of variable names", "[]", "variables that reach beyond "
                           "performance the file may set (with --allow-reach)"),
    ("[conditions]", "sync_ms_min"): ("number", "none", "the datadir's sync (fdatasync of "
                                      "4 KiB, median ms) the effect needs at least"),
    ("[conditions]", "read_ms_min"): ("number", "none", "a random 16 KiB read (median ms) "
                                      "the effect needs at least"),
    ("[conditions]", "data_over_pool_min"): ("number", "none", "the data's size at least "
                                             "this many times the buffer pool"),
    ("[conditions]", "data_over_pool_max"): ("number", "none", "the data's size at most "
                                             "this many times the buffer pool"),
    ("[conditions]", "cpus_min"): ("integer", "none", "CPUs the server's host needs"),
    ("[conditions]", "client_apart"): ("boolean", "false", "the load's client must not "
                                       "share the server's CPUs"),
    ("[conditions]", "why"): ("string", "\"the effect\"", "the effect these conditions let "
                              "show, in the up-front warning"),
}
_RECIPE: dict[tuple[str, str], KeyDoc] = {
    ("top level", "name"): ("string", "required", "letters, digits, '.', '_', '-' (up to 64)"),
    ("top level", "description"): ("string", "required", "what the experiment shows"),
    ("top level", "applies"): ("table", "any server", "see [applies]"),
    ("top level", "load"): ("table", "required (none in kind curve)", "see [load]"),
    ("top level", "wait"): ("table", "no gates", "see [wait]"),
    ("top level", "steady"): ("table", "the defaults below", "see [steady]"),
    ("top level", "run"): ("table", "the defaults below", "see [run]"),
    ("top level", "arm"): ("array of tables", "required (kind arms)", "see [[arm]]"),
    ("top level", "timeline"): ("table", "required (kind timeline)", "see [timeline]"),
    ("top level", "soak"): ("table", "required (kind soak)", "see [soak]"),
    ("top level", "curve"): ("table", "required (kind curve)", "see [curve]"),
    ("top level", "targets"): ("table of tables", "none", "see [targets.NAME]"),
    ("top level", "allow"): ("table", "none", "see [allow]"),
    ("top level", "conditions"): ("table", "none", "see [conditions]"),
    ("[applies]", "mariadb"): ("string", "refused when [applies] exists",
                               'a version constraint, e.g. ">=10.1" or "*"'),
    ("[applies]", "mysql"): ("string", "refused when [applies] exists",
                             'a version constraint, e.g. ">=5.5, <8.0.30"'),
    ("[applies]", "ndb"): ("string", "refused when [applies] exists",
                           "a version constraint for an SQL node of an NDB Cluster"),
    ("[applies]", "why"): ("string", '""', "shown when a server is refused"),
    **_SHARED,
    ("[run]", "replicates"): ("integer", "3", "rounds: each arm at each thread count per "
                              "round"),
    ("[run]", "order"): ("choice", "counterbalanced", "the arms' order in each round"),
    ("[run]", "level_order"): ("choice", "ascending", "the thread sweep's order"),
    ("[run]", "seed"): ("integer", "1", "seed of the random orders"),
    ("[run]", "pause"): ("number", "0", "seconds between steps"),
    ("[run]", "calibrate"): ("integer", "0", "runs of the baseline arm against itself first"),
    ("[run]", "until_ci"): ("number", "off", "add rounds until every cell's CI is within "
                            "+-this"),
    ("[run]", "max_replicates"): ("integer", "off", "the cap on rounds for until_ci"),
    ("[run]", "kind"): ("choice", "arms", "arms compared step by step, one load with "
                        "actions at given times, one arm soaked, or a knob's curve"),
    ("[run]", "timed"): ("boolean", "false (true for linkbench)", "each step a timed run "
                         "whose summary is journaled"),
    ("[[arm]]", "name"): ("string", "required", "short and unique (up to 16)"),
    ("[[arm]]", "knobs"): ("table", "required", "knob = value; every arm names the same "
                           "knobs"),
    ("[[arm]]", "load"): ("table", "{}", "what the arm runs differently from [load]"),
    ("[[arm]]", "target"): ("string", '"" (the lab or profile given)', "a [targets.NAME] "
                            "the arm runs on"),
    ("[[arm]] load", "workload"): ("string", "[load]'s", "as in [load]"),
    ("[[arm]] load", "engine"): ("string", "[load]'s", "as in [load]"),
    ("[[arm]] load", "table_options"): ("table", "[load]'s", "as in [load]"),
    ("[[arm]] load", "options"): ("table", "[load]'s", "as in [load]"),
    ("[[arm]] load", "instances"): ("integer", "[load]'s", "as in [load]"),
    ("[targets.NAME]", "profile"): ("string", '""', "a profile's server"),
    ("[targets.NAME]", "options"): ("table", "{}", "with --lab: base my.cnf options of a "
                                    "sandbox of that name"),
    ("[timeline]", "start"): ("table", "{}", "knob values before the load starts"),
    ("[timeline]", "checkpoints"): ("list of seconds", "required", "ascending, inside the "
                                    "load's duration"),
    ("[timeline]", "metrics"): ("list of names", ", ".join(_model.DEFAULT_TIMELINE_METRICS),
                                "of " + ", ".join(_model.TIMELINE_METRICS)),
    ("[timeline]", "window"): ("number", "10", "seconds averaged at each checkpoint"),
    ("[timeline]", "action"): ("array of tables", "[]", "see [[timeline.action]]"),
    ("[[timeline.action]]", "at"): ("number", "required", "seconds from the load's start"),
    ("[[timeline.action]]", "knobs"): ("table", "required", "knob = value"),
    ("[[timeline.action]]", "keep_load"): ("boolean", "false", "keep the load running "
                                           "through a restart (needs --driver builtin)"),
    ("[soak]", "knobs"): ("table", "{}", "the arm's knob values, set before the load starts"),
    ("[soak]", "every"): ("number", "required", "seconds between checkpoints through the "
                          "load's duration (at most 1000 checkpoints)"),
    ("[soak]", "metrics"): ("list of names", ", ".join(_model.DEFAULT_TIMELINE_METRICS),
                            "of " + ", ".join(_model.TIMELINE_METRICS)),
    ("[soak]", "window"): ("number", "every, at most 60", "seconds averaged at each "
                           "checkpoint (at most every)"),
    ("[curve]", "knob"): ("string", "required", "the knob swept (a size)"),
    ("[curve]", "from"): ("size", "required", "its first value (bytes, or with K, M, G)"),
    ("[curve]", "to"): ("size", "required", "its last value at most (at most 200 values)"),
    ("[curve]", "step"): ("size", "required", "between values"),
    ("[curve]", "probe"): ("string: order_by_offset", "required", "the probe timed at each "
                           "value (knobtop's code: no SQL in the file)"),
    ("[curve]", "rows"): ("integer", "required", "order_by_offset: rows of its table"),
    ("[curve]", "offset"): ("integer", "required", "order_by_offset: the LIMIT's offset, "
                            "below rows"),
    ("[curve]", "repeats"): ("integer", "required", "order_by_offset: queries per value, "
                             "timed together"),
    ("[curve]", "counters"): ("list of names", "Sort_merge_passes", "session status "
                              "counters whose deltas each value reads"),
}
_SEARCH: dict[tuple[str, str], KeyDoc] = {
    ("top level", "name"): ("string", "required", "letters, digits, '.', '_', '-'"),
    ("top level", "description"): ("string", "required", "what the search is for"),
    ("top level", "load"): ("table", "required", "see [load] (one thread count)"),
    ("top level", "objective"): ("table", "required", "see [objective]"),
    ("top level", "constraints"): ("table", "none", "see [constraints]"),
    ("top level", "budget"): ("table", "required", "see [budget]"),
    ("top level", "knob"): ("array of tables", "required", "see [[knob]]"),
    ("top level", "verify"): ("table", "the defaults below", "see [verify]"),
    ("top level", "wait"): ("table", "no gates", "see [wait]"),
    ("top level", "steady"): ("table", "the defaults below", "see [steady]"),
    ("top level", "seed"): ("integer", "1", "the sampler's seed"),
    ("top level", "allow"): ("table", "none", "see [allow]"),
    ("top level", "conditions"): ("table", "none", "see [conditions]"),
    **_SHARED,
    ("[objective]", "maximize"): ("string: tps", "one of the two", "maximize average TPS"),
    ("[objective]", "minimize"): ("string: latency", "one of the two", "minimize latency"),
    ("[constraints]", "latency_ms_max"): ("number", "none", "a trial above it is infeasible"),
    ("[constraints]", "errors_per_s_max"): ("number", "none", "a trial above it is "
                                            "infeasible"),
    ("[constraints]", "tps_min"): ("number", "none", "a trial below it is infeasible"),
    ("[budget]", "trials"): ("integer", "one of trials, minutes", "trials at most"),
    ("[budget]", "minutes"): ("number", "one of trials, minutes", "minutes of trials at most"),
    ("[[knob]]", "name"): ("string", "required", "the knob"),
    ("[[knob]]", "choices"): (f"list of 2-{_search.MAX_CHOICES} values", "or min and max",
                              "the values to try"),
    ("[[knob]]", "min"): ("number", "or choices", "the range's low end"),
    ("[[knob]]", "max"): ("number", "or choices", "the range's high end"),
    ("[[knob]]", "log"): ("boolean", "false", "sample the range on a log scale"),
    ("[verify]", "candidates"): ("integer", "2", "the best trials verified against the "
                                 "baseline"),
    ("[verify]", "replicates"): ("integer", "5", "counterbalanced rounds of the "
                                 "verification"),
}
KEY_DOCS: dict[str, dict[tuple[str, str], KeyDoc]] = {"recipe": _RECIPE, "search": _SEARCH}

__all__ = ["DEPENDS_ON_FILE", "KEY_DOCS", "Check", "bundled_files", "sections", "traced_checks"]
