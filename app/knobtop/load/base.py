"""The LoadDriver protocol: start a workload, report each interval, stop."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from knobtop.errors import KnobtopError
from knobtop.load.sysbench_options import normal, refusal
from knobtop.load.sysbench_output import IntervalReport, PrepareProgress, RunSummary

WORKLOADS: tuple[str, ...] = (
    "oltp_read_write",
    "oltp_point_select",
    "oltp_read_only",
    "oltp_write_only",
    "oltp_update_index",
    "oltp_insert",
    "linkbench",  # the built-in driver's only (issue 20)
)
BUILTIN_ONLY: tuple[str, ...] = ("linkbench",)
RAND_TYPES: tuple[str, ...] = ("uniform", "gaussian", "special", "pareto")
# A storage engine name as CREATE TABLE ... ENGINE= takes it (never quoted, so kept simple).
ENGINE_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}")
# A workload option passed through to sysbench as --key=value (issue 18): a name as its
# Lua scripts spell them (point_selects, skip_trx, range_size, ...) and a plain value;
# which names a workload takes is load/sysbench_options.py's allow-list (issue 36).
OPTION_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")
OPTION_VALUE = re.compile(r"[A-Za-z0-9_.,:/+-]{1,256}")
MAX_INSTANCES = 64
# A table option (CREATE TABLE ... NAME=VALUE): a plain name and a number or word.
TABLE_OPTION_NAME = re.compile(r"[A-Za-z][A-Za-z_]{0,63}")
TABLE_OPTION_VALUE = re.compile(r"[A-Za-z0-9_]{1,64}")
# A run "until stopped" is still capped, so nothing runs forever if all else fails.
TIME_CAP = 24 * 3600


class LoadError(KnobtopError, RuntimeError):
    """The load could not start or died; the message says what and the fix."""


class OptionRefused(LoadError):
    """A sysbench option the load cannot pass: ``option`` (as written), ``problem`` and
    ``fix`` apart, so a file's reader can name its file and key instead."""

    def __init__(self, option: str, problem: str, fix: str) -> None:
        self.option, self.problem, self.fix = option, problem, fix
        super().__init__(f"{problem} (in the load's options); {fix}")


@dataclass(frozen=True, slots=True)
class LoadSpec:
    workload: str = "oltp_read_write"
    threads: int = 4
    tables: int = 4
    table_size: int = 10000
    duration: int = 0  # seconds; 0 = until stopped (capped at TIME_CAP)
    rate: int = 0  # transactions per second in total; 0 = as fast as possible
    rand_type: str = "uniform"
    percentile: int = 95
    prepared: bool = True  # sysbench --db-ps-mode auto (True) or disable
    engine: str = ""  # storage engine of the tables (e.g. "rocksdb"); "" = server default
    options: tuple[tuple[str, str], ...] = ()  # more --key=value for sysbench's script
    # sysbench processes at once on each client, each on its own database; ``threads`` and
    # ``rate`` are the totals per client, shared out among them (see split()).
    instances: int = 1
    # CREATE TABLE options the tables get when prepared (KEY_BLOCK_SIZE=8,
    # PAGE_COMPRESSED=1 ...): knobtop applies them, sysbench 1.0 cannot.
    table_options: tuple[tuple[str, str], ...] = ()
    # The suffix of the database(s) these tables live in ("" = the driver's own): a recipe
    # arm whose tables differ from [load]'s gets its own (its ``shape``), so arms never
    # rebuild each other's tables
    schema: str = ""
    # LinkBench (issue 20): connections of its load phase (0: ``threads``); its maxid1 is
    # ``table_size`` and its requesters ``threads``
    loaders: int = 0

    @property
    def custom(self) -> bool:
        """A Lua script of the engineer's own (a path on the client host)."""
        return self.workload.endswith(".lua")

    def check(self) -> None:
        if self.custom:
            if not self.workload.startswith("/") or any(c.isspace() for c in self.workload):
                raise LoadError(
                    f"custom workload '{self.workload}': give the absolute path of the .lua "
                    "script on the client host, without spaces"
                )
        elif self.workload not in WORKLOADS:
            raise LoadError(
                f"unknown workload '{self.workload}'; choose one of {', '.join(WORKLOADS)} "
                "or the absolute path of a .lua script"
            )
        if not 1 <= self.threads <= 1024:
            raise LoadError(f"threads must be between 1 and 1024, not {self.threads}")
        if self.rand_type not in RAND_TYPES:
            raise LoadError(
                f"unknown rand type '{self.rand_type}'; choose one of {', '.join(RAND_TYPES)}"
            )
        if not 1 <= self.percentile <= 100:
            raise LoadError(f"percentile must be 1 to 100, not {self.percentile}")
        if self.rate < 0 or self.duration < 0:
            raise LoadError("rate and duration cannot be negative")
        if self.tables < 1 or self.table_size < 1:
            raise LoadError("tables and table size must be at least 1")
        if not 1 <= self.instances <= MAX_INSTANCES:
            raise LoadError(f"instances must be between 1 and {MAX_INSTANCES}, "
                            f"not {self.instances}")
        if self.threads < self.instances:
            raise LoadError(f"threads {self.threads} cannot be shared among {self.instances} "
                            "instances (threads is the total of all instances): give at least "
                            "one thread per instance")
        self.check_engine()
        self.check_options()
        self.check_table_options()

    def check_options(self, declared: Mapping[str, str] | None = None,
                      own: Iterable[str] = ()) -> None:
        """Each option is one the workload takes (sysbench_options' allow-list; a custom
        script's: what it ``declared``, see Sysbench.check_options) with a plain value:
        nothing a shell or sysbench's own option parser would read as more than one
        word, and never one of knobtop's own settings or sysbench's connection."""
        seen: dict[str, str] = {}
        for key, value in self.options:
            if not OPTION_NAME.fullmatch(key):
                raise OptionRefused(key, f"sysbench option '{key}' is not an option name",
                                    "write it as the workload's help lists it (lower "
                                    "case: sysbench tells case apart), e.g. point_selects "
                                    "or skip_trx")
            first = seen.setdefault(normal(key), key)
            if first != key:
                raise OptionRefused(key, f"sysbench options '{first}' and '{key}' are one "
                                    "option to sysbench (- and _ alike)", "give it once")
            # the name first, so a refused one's value (a password?) is never quoted
            why = refusal(self.workload, key, None, declared=declared, own=own)
            if why is None:
                if not OPTION_VALUE.fullmatch(value):
                    raise OptionRefused(key, f"sysbench option {key} = '{value}': give a "
                                        "plain value", "use letters, digits and "
                                        "_ . , : / + -, e.g. on, off or 10")
                why = refusal(self.workload, key, value, declared=declared, own=own)
            if why is not None:
                raise OptionRefused(key, why.problem, why.fix)

    def check_table_options(self) -> None:
        """Each table option is NAME=VALUE with a plain name and value: they go into
        ALTER TABLE as written, so nothing else may (no quotes, spaces, comments)."""
        for key, value in self.table_options:
            if not TABLE_OPTION_NAME.fullmatch(key):
                raise LoadError(f"table option '{key}' is not a table option name; write it "
                                "as CREATE TABLE takes it, e.g. KEY_BLOCK_SIZE or "
                                "PAGE_COMPRESSED")
            if not TABLE_OPTION_VALUE.fullmatch(value):
                raise LoadError(f"table option {key} = '{value}': give a number or a word "
                                "(letters, digits and _), e.g. 8 or COMPRESSED")

    def table_options_sql(self) -> str:
        """``KEY_BLOCK_SIZE=8 ROW_FORMAT=COMPRESSED`` (checked: plain words only)."""
        self.check_table_options()
        return " ".join(f"{key}={value}" for key, value in self.table_options)

    @property
    def shape(self) -> str:
        """What sets these tables apart from the default ones, as a database-name suffix:
        "" for the server's default engine without options, else the engine and the
        options (``rocksdb``, ``innodb_kbs8_rfcompressed``): the ``schema`` a recipe arm
        with tables of their own gets."""
        if not self.engine and not self.table_options:
            return ""
        words = [self.engine.lower() or "default"]
        for key, value in self.table_options:
            short = "".join(part[:1] for part in key.lower().split("_"))
            words.append(f"{short}{value.lower()}")
        return "_".join(words)[:40]

    def split(self) -> list[LoadSpec]:
        """One spec per instance: ``threads`` and ``rate`` shared out as evenly as they go
        (the first instances take the remainder), each a single instance."""
        n = self.instances

        def share(total: int, i: int) -> int:
            return total // n + (1 if i < total % n else 0)

        return [replace(self, threads=share(self.threads, i), rate=share(self.rate, i),
                        instances=1) for i in range(n)]

    @property
    def tables_text(self) -> str:
        """What preparing this load writes, for messages: LinkBench's graph (its tables
        are the built-in driver's) or sysbench's tables."""
        if self.workload == "linkbench":
            return f"the LinkBench graph of {self.table_size} nodes"
        return f"{self.tables} sysbench tables x {self.table_size} rows"

    def threads_text(self) -> str:
        """The thread count as a person reads it: ``64 (8 instances x 8)``."""
        if self.instances == 1:
            return str(self.threads)
        counts = sorted({s.threads for s in self.split()}, reverse=True)
        each = "-".join(str(c) for c in counts)
        return f"{self.threads} ({self.instances} instances x {each})"

    def option_args(self) -> list[str]:
        """The options as sysbench arguments."""
        return [f"--{key}={value}" for key, value in self.options]

    def check_engine(self) -> None:
        """The engine name goes unquoted into CREATE TABLE: only a plain identifier."""
        if self.engine and not ENGINE_NAME.fullmatch(self.engine):
            raise LoadError(
                f"storage engine '{self.engine}' is not an engine name; give one such as "
                "InnoDB or RocksDB (letters, digits and _), or leave it empty for the "
                "server's default"
            )


@dataclass(frozen=True, slots=True)
class LoadExit:
    """How a run ended: return code, the summary if it got that far, the first fatal error."""

    returncode: int | None
    summary: RunSummary | None
    error: str
    stopped: bool  # True when knobtop stopped it
    per_host: dict[str, RunSummary] = field(default_factory=dict)


# (source, report): the source is "sysbench@HOST", or "all" for a multi-host aggregate.
ReportCallback = Callable[[str, IntervalReport], None]
ExitCallback = Callable[[LoadExit], Awaitable[None]]


class TableDriver(Protocol):
    """A driver that can create and drop the tables its workload runs on."""

    database: str

    async def prepare(
        self, spec: LoadSpec, progress: Callable[[PrepareProgress], None] | None = None
    ) -> None: ...

    async def cleanup(self, spec: LoadSpec) -> None: ...


class LoadDriver(Protocol):
    name: str
    host_name: str
    @property
    def version(self) -> str:
        """The load program's version for the phase's summary ("" when unknown)."""
        ...

    def parts(self) -> Sequence[LoadDriver]:
        """The drivers that report on their own: this one, or each client's."""
        ...

    def table_drivers(self) -> list[TableDriver]:
        """The drivers behind this one that own tables (for prepare and cleanup)."""
        ...

    @property
    def running(self) -> bool: ...

    async def start(
        self, spec: LoadSpec, on_report: ReportCallback, on_exit: ExitCallback
    ) -> None: ...

    async def stop(self) -> LoadExit | None: ...
