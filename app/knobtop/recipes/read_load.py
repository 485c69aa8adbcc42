"""Reading a recipe's ``[load]``, ``[wait]`` and ``[steady]`` tables (a search's too): the
load every step runs, the gates before each measured step, and the plateau rule.

``LoadReader`` is the first of the recipe reader's parts (``read_arms.ArmReader`` builds on
it, ``reader._Reader`` on that); the typed accessors it reads keys with are tomlcheck's.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

from knobtop.conditions import Needs
from knobtop.load.base import (
    ENGINE_NAME,
    MAX_INSTANCES,
    RAND_TYPES,
    TIME_CAP,
    WORKLOADS,
    LoadError,
    LoadSpec,
    OptionRefused,
)
from knobtop.recipes.model import (
    DEFAULT_STEADY,
    DEFAULT_TIMEOUT,
    MAX_THREADS,
    MIN_DURATION,
    Steady,
    Waits,
    parse_bytes,
)
from knobtop.tomlcheck import Reader, Table, close_hint, plain

README = "experiments/README.md"

LOAD_KEYS = (
    "workload",
    "threads",
    "duration",
    "warmup",
    "tables",
    "table_size",
    "rate",
    "rand_type",
    "percentile",
    "prepared",
    "engine",
    "options",
    "instances",
    "table_options",
    "maxid1",  # LinkBench (issue 20): its graph's nodes, requesters and loaders
    "requesters",
    "loaders",
)
LINKBENCH_KEYS = ("maxid1", "requesters", "loaders")
WAIT_KEYS = (
    "history_below",
    "dirty_at_lwm",
    "dirty_pct_below",
    "checkpoint_age_below",
    "plateau",
    "timeout",
)
STEADY_KEYS = ("window", "cv_max", "slope_max", "judge")
JUDGES = ("noise", "cv")
CONDITIONS_KEYS = ("sync_ms_min", "read_ms_min", "data_over_pool_min", "data_over_pool_max",
                   "cpus_min", "client_apart", "why")


class LoadTable(NamedTuple):
    """The checked [load] table: the load as a LoadSpec (at the sweep's first thread count),
    the sweep itself, and the warmup before each measured step (not a LoadSpec's)."""

    load: LoadSpec
    threads: tuple[int, ...]
    warmup: int


class LoadReader(Reader):
    """[load], [wait] and [steady] of a recipe or a search."""

    # [load]'s workload, once read: an arm's load options are checked against it unless
    # the arm names a workload of its own
    load_workload: str = WORKLOADS[0]

    def choice(self, run: Table, key: str, allowed: tuple[str, ...], means: str,
               prefix: str = "run") -> str:
        """``[prefix] key``, one of ``allowed`` (the first is the default)."""
        choices = " or ".join(f'"{o}"' for o in allowed)
        value = self.string(run, key, prefix, choices) or allowed[0]
        if value not in allowed:
            raise self.error(f"{prefix}.{key}", f"unknown {key.replace('_', ' ')} {value!r}",
                             f"write {key} = {choices} ({means})")
        return value

    def load(self, table: Table) -> LoadTable:
        p = "load"
        self.check_keys(table, LOAD_KEYS, p)
        workload = self.workload(self.req_string(table, "workload", p, '"oltp_read_write"'), p)
        self.load_workload = workload
        duration = self.integer(table, "duration", p, lo=MIN_DURATION, hi=TIME_CAP, unit="seconds")
        if duration is None:
            raise self.error(
                f"{p}.duration", "missing duration", "add duration = 60 (measured seconds per step)"
            )
        warmup = self.integer(table, "warmup", p, lo=0, hi=TIME_CAP, unit="seconds")
        tables = self.integer(table, "tables", p, lo=1, hi=100_000)
        table_size = self.integer(table, "table_size", p, lo=1, hi=10**12)
        rate = self.integer(table, "rate", p, lo=0, hi=10**9, unit="transactions per second")
        percentile = self.integer(table, "percentile", p, lo=1, hi=100)
        rand_type = self.string(table, "rand_type", p, '"uniform"') or "uniform"
        prepared = self.boolean(table, "prepared", p)
        engine = self.engine(table, p)
        if rand_type not in RAND_TYPES:
            raise self.error(
                f"{p}.rand_type",
                f"unknown rand_type {rand_type!r}",
                f"use one of {', '.join(RAND_TYPES)}",
            )
        instances = self.integer(table, "instances", p, lo=1, hi=MAX_INSTANCES) or 1
        loaders = 0
        if workload == "linkbench":  # maxid1 nodes, requesters and loaders (issue 20)
            table_size, loaders, threads = self.linkbench(table, table_size, p)
        else:
            for key in LINKBENCH_KEYS:
                if key in table:
                    raise self.error(f"{p}.{key}", f"{key} is LinkBench's",
                                     'remove it, or write workload = "linkbench"')
            threads = self.threads(table)
        self.instances_fit(instances, threads, f"{p}.threads")
        spec = LoadSpec()
        load = LoadSpec(
            workload=workload,
            threads=threads[0],
            tables=spec.tables if tables is None else tables,
            table_size=spec.table_size if table_size is None else table_size,
            duration=duration,
            rate=0 if rate is None else rate,
            rand_type=rand_type,
            percentile=spec.percentile if percentile is None else percentile,
            prepared=True if prepared is None else prepared,
            engine=engine,
            options=self.options(table, p, workload),
            instances=instances,
            table_options=self.table_options(table, p),
            loaders=loaders,
        )
        return LoadTable(load, threads, 0 if warmup is None else warmup)

    def linkbench(self, table: Table, table_size: int | None, p: str
                  ) -> tuple[int, int, tuple[int, ...]]:
        """LinkBench's [load]: maxid1 (its nodes; default 10,000), requesters (the request
        phase's connections, as threads) and loaders (the load phase's)."""
        if table_size is not None:
            raise self.error(f"{p}.table_size", "LinkBench's graph size is maxid1",
                             "write maxid1 = 10000 instead of table_size")
        maxid1 = self.integer(table, "maxid1", p, lo=100, hi=10**10) or 10_000
        loaders = self.integer(table, "loaders", p, lo=1, hi=16) or 0
        if "requesters" in table and "threads" in table:
            raise self.error(f"{p}.requesters", "requesters and threads are the same thing",
                             "give one of them (requesters, as LinkBench calls it)")
        threads = self.threads(table, "requesters" if "requesters" in table else "threads")
        return maxid1, loaders, threads

    def instances_fit(self, instances: int, threads: tuple[int, ...], key: str) -> None:
        if min(threads) < instances:
            raise self.error(key, f"{min(threads)} threads cannot be shared among "
                             f"{instances} instances",
                             "threads is the total of all instances on a client: give every "
                             "level at least one thread per instance")

    def engine(self, table: Table, p: str) -> str:
        engine = self.string(table, "engine", p, '"InnoDB"') or ""
        if engine and not ENGINE_NAME.fullmatch(engine):
            raise self.error(f"{p}.engine", f"{engine!r} is not a storage engine name",
                             'write engine = "InnoDB" or "RocksDB", or leave it out for the '
                             "server's default")
        return engine

    def workload(self, workload: str, p: str) -> str:
        if workload.endswith(".lua"):
            if not workload.startswith("/") or any(c.isspace() for c in workload):
                raise self.error(
                    f"{p}.workload",
                    f"custom workload {workload!r} is not an absolute path without spaces",
                    "give the absolute path of the .lua script on the client host",
                )
        elif workload not in WORKLOADS:
            raise self.error(
                f"{p}.workload",
                f"unknown workload {workload!r}",
                f"{close_hint(workload, WORKLOADS)}use one of {', '.join(WORKLOADS)}, or an "
                "absolute .lua path",
            )
        return workload

    def options(self, table: Table, p: str, workload: str) -> tuple[tuple[str, str], ...]:
        """``[load] options = { point_selects = 1, skip_trx = true }``: more sysbench
        arguments for ``workload``, each checked as LoadSpec.check_options checks them
        (the options ``workload`` takes, issue 36)."""
        return self.pairs(table, p, "options",
                          "options = { point_selects = 1, skip_trx = true }",
                          lambda pairs: LoadSpec(workload=workload,
                                                 options=pairs).check_options(),
                          ("on", "off"))

    def table_options(self, table: Table, p: str) -> tuple[tuple[str, str], ...]:
        """``table_options = { KEY_BLOCK_SIZE = 8, ROW_FORMAT = "COMPRESSED" }``: what
        CREATE TABLE gets, each checked as LoadSpec.check_table_options checks them."""
        return self.pairs(table, p, "table_options",
                          'table_options = { KEY_BLOCK_SIZE = 8, ROW_FORMAT = "COMPRESSED" }',
                          lambda pairs: LoadSpec(table_options=pairs).check_table_options(),
                          ("1", "0"))

    def pairs(self, table: Table, p: str, name: str, example: str,
              check: Callable[[tuple[tuple[str, str], ...]], None],
              booleans: tuple[str, str]) -> tuple[tuple[str, str], ...]:
        """A TOML table of name = plain value (true/false as ``booleans``), each pair
        checked by ``check`` (a LoadError becomes this file's error at its key)."""
        key = f"{p}.{name}"
        value = table.get(name)
        if value is None:
            return ()
        if not isinstance(value, dict):
            raise self.wrong_type(key, "a table", value, f"write {example}")
        out: list[tuple[str, str]] = []
        for item, raw in value.items():
            if isinstance(raw, bool):
                text = booleans[0] if raw else booleans[1]
            elif isinstance(raw, int | float | str):
                text = str(raw)
            else:
                raise self.wrong_type(f"{key}.{item}", "a number, string or true/false", raw,
                                      f"write {example}")
            try:
                check(((str(item), text),))
            except OptionRefused as exc:  # names its own fix
                raise self.error(f"{key}.{item}", exc.problem, exc.fix) from None
            except LoadError as exc:
                raise self.error(f"{key}.{item}", str(exc),
                                 f"correct it or remove it from {name} ({README})") from None
            out.append((str(item), text))
        return tuple(out)

    def threads(self, table: Table, name: str = "threads") -> tuple[int, ...]:
        key = f"load.{name}"
        fix = f"write {name} = 8 (one level) or {name} = [4, 8, 16] (a sweep)"
        if name not in table:
            raise self.error(key, f"missing {name}", f"add {fix.removeprefix('write ')}")
        value = table[name]
        items = value if isinstance(value, list) else [value]
        if not items:
            raise self.error(key, "is an empty list", fix)
        out: list[int] = []
        for i, item in enumerate(items):
            where = f"{key}[{i}]" if isinstance(value, list) else key
            if isinstance(item, bool) or not isinstance(item, int):
                raise self.wrong_type(where, "an integer or a list of integers", item, fix)
            if not 1 <= item <= MAX_THREADS:
                raise self.error(
                    where,
                    f"{item} threads is out of range 1-{MAX_THREADS}",
                    f"use 1 to {MAX_THREADS} threads",
                )
            if item in out:
                raise self.error(where, f"{item} is listed twice", "list each thread count once")
            out.append(item)
        return tuple(out)

    def waits(self, table: Table) -> Waits:
        p = "wait"
        self.check_keys(table, WAIT_KEYS, p)
        # 0: until the history list is empty (the seed sweeps' gate); N: below N
        history = self.integer(table, "history_below", p, lo=0, hi=2**63 - 1)
        at_lwm = self.boolean(table, "dirty_at_lwm", p) or False
        dirty = self.number(table, "dirty_pct_below", p, lo=0.0, hi=100.0, lo_open=True)
        if at_lwm and dirty is not None:
            raise self.error(
                f"{p}.dirty_pct_below",
                "is given together with dirty_at_lwm = true; they are two forms of one gate",
                "keep one: dirty_at_lwm = true (the server's lwm) or dirty_pct_below = 5.0",
            )
        checkpoint: int | None = None
        if "checkpoint_age_below" in table:
            raw = table["checkpoint_age_below"]
            dotted = f"{p}.checkpoint_age_below"
            fix = 'write checkpoint_age_below = "64M" (K, M, G allowed) or a number of bytes'
            if isinstance(raw, bool) or not isinstance(raw, int | str):
                raise self.wrong_type(dotted, "a size", raw, fix)
            try:
                checkpoint = parse_bytes(raw)
            except ValueError as exc:
                raise self.error(dotted, str(exc), fix) from None
            if checkpoint < 1:
                raise self.error(dotted, "must be at least 1 byte", fix)
        plateau = self.boolean(table, "plateau", p) or False
        timeout = self.number(table, "timeout", p, lo=0.0, hi=float(TIME_CAP), lo_open=True)
        return Waits(
            history_below=history,
            dirty_at_lwm=at_lwm,
            dirty_pct_below=dirty,
            checkpoint_age_below=checkpoint,
            plateau=plateau,
            timeout=DEFAULT_TIMEOUT if timeout is None else timeout,
        )

    def steady(self, table: Table, waits: Waits) -> Steady:
        p = "steady"
        self.check_keys(table, STEADY_KEYS, p)
        window = self.integer(table, "window", p, lo=5, hi=3600, unit="seconds")
        cv_max = self.number(table, "cv_max", p, lo=0.0, hi=1.0, lo_open=True)
        slope_max = self.number(table, "slope_max", p, lo=0.0, hi=1.0, lo_open=True)
        # A recipe written before issue 17 that sets cv_max or slope_max keeps its rule.
        older = cv_max is not None or slope_max is not None
        judges = tuple(reversed(JUDGES)) if older and "judge" not in table else JUDGES
        judge = self.choice(table, "judge", judges, "the trend against its own noise over "
                            "2 x window, or the older CV and slope bounds over one window", p)
        if judge == "noise" and older:
            which = "cv_max" if cv_max is not None else "slope_max"
            raise self.error(f"{p}.{which}", f"{which} is a bound of the older plateau rule "
                             '(judge = "cv"); judge = "noise" weighs the trend against the '
                             "noise instead", f'delete {which}, or write judge = "cv"')
        steady = Steady(
            window=DEFAULT_STEADY[0] if window is None else window,
            cv_max=DEFAULT_STEADY[1] if cv_max is None else cv_max,
            slope_max=DEFAULT_STEADY[2] if slope_max is None else slope_max,
            judge=judge,
        )
        if waits.plateau and steady.span > waits.timeout:
            span = (f"the plateau is judged over 2 x window = {steady.span} s"
                    if judge == "noise" else f"the plateau window ({steady.span} s) is")
            raise self.error(
                f"{p}.window" if window is not None else "wait.timeout",
                f"{span} longer than wait.timeout "
                f"({plain(waits.timeout)} s), so a plateau could never be seen in time",
                f"make wait.timeout at least {steady.span}, or shorten steady.window",
            )
        return steady

    def conditions(self, doc: Table) -> Needs:
        """``[conditions]`` (recipes and searches): what the effect needs of the box
        (conditions.Needs), checked against the conditions probe before the first step."""
        p = "conditions"
        table = self.table(doc, p) or {}
        self.check_keys(table, CONDITIONS_KEYS, p)

        def bound(key: str) -> float | None:
            return self.number(table, key, p, lo=0.0, hi=1000.0, lo_open=True)

        low, high = bound("data_over_pool_min"), bound("data_over_pool_max")
        if low is not None and high is not None and low > high:
            raise self.error(f"{p}.data_over_pool_min", f"{plain(low)} is above "
                             f"data_over_pool_max = {plain(high)}", "give a min below the max")
        return Needs(
            sync_ms_min=bound("sync_ms_min"), read_ms_min=bound("read_ms_min"),
            data_over_pool_min=low, data_over_pool_max=high,
            cpus_min=self.integer(table, "cpus_min", p, lo=1, hi=4096),
            client_apart=bool(self.boolean(table, "client_apart", p)),
            why=self.string(table, "why", p, '"the commit\'s redo sync"') or "")


__all__ = ["CONDITIONS_KEYS", "JUDGES", "LINKBENCH_KEYS", "LOAD_KEYS", "README", "STEADY_KEYS",
           "WAIT_KEYS", "LoadReader", "LoadTable"]
