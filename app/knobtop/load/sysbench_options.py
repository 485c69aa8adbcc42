"""Which sysbench options a load may pass: the workload's own, by an allow-list.

A load's ``options`` come from recipe and search files, which may be someone else's, and
go onto sysbench's command line.  How sysbench 1.0.20 reads a name there
(``src/sb_options.c``, ``src/sysbench.c``):

* ``-`` and ``_`` are the same character (``opt_name_cmp``); case matters and a name
  matches only whole (no abbreviations): ``--mysql_socket`` is ``--mysql-socket``,
  ``--MYSQL_SOCKET`` and ``--mysql-sock`` are nothing (the oltp scripts then refuse them).
* The last of an option given twice wins (``set_option`` drops the earlier values), and
  ``--config-file=F`` sets every option F names at the point where it stands.
* Its own options (general, random numbers, log, database, each driver's: all that
  ``sysbench --help`` lists) are taken before the script's, whoever declares them;
  ``--test=SCRIPT`` (deprecated) replaces the script named before it.
* The deprecated aliases ``--num-threads``, ``--max-time``, ``--max-requests`` and
  ``--tx-rate`` win over ``--threads``, ``--time``, ``--events`` and ``--rate`` when set,
  whatever their order (``init()``).

So a name is refused unless it is in the workload's allow-list: for the bundled
``oltp_*`` scripts, the table below (held against ``sysbench oltp_read_write help`` by a
test); for a script of the engineer's own, what ``sysbench SCRIPT help`` lists on the
client host, never one of sysbench's own options nor a driver's.  knobtop's own settings
(threads, duration, tables, engine, the connection ...) come from the load's fields and
the profile, and go after the options on the command line (``Sysbench.argv``).
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

SYSBENCH_VERSION = "1.0.20"

# An option's kind, as ``sysbench ... help`` prints it after the name.
FLAG = "[=on|off]"
NUMBER = "=N"
INTEGER = "=N (whole)"  # also printed "=N"; sysbench reads it with strtol, so no fraction
SIZE = "=SIZE"
STRING = "=STRING"
LIST = "=[LIST,...]"
FILENAME = "=FILENAME"  # sysbench reads the file as more options: never allowed

# The options of the bundled oltp_* scripts (oltp_common.lua, sysbench 1.0.20) that a
# load may set.  Each is the workload's own (queries per transaction, table layout).
OLTP_OPTIONS: Mapping[str, str] = {
    "auto_inc": FLAG,
    "create_secondary": FLAG,
    "delete_inserts": NUMBER,
    "distinct_ranges": NUMBER,
    "index_updates": NUMBER,
    "non_index_updates": NUMBER,
    "order_ranges": NUMBER,
    "point_selects": NUMBER,
    "range_selects": FLAG,
    "range_size": NUMBER,
    "secondary": FLAG,
    "simple_ranges": NUMBER,
    "skip_trx": FLAG,
    "sum_ranges": NUMBER,
}

# sysbench's general options a load may set: the random-number generator's parameters.
# They shape which rows the workload touches (the skew of the special and pareto
# distributions, and the seed, so two arms can replay the same sequence); they name no
# file, host or account and change nothing knobtop reads from sysbench's output.
# rand_type itself is the load's rand_type field.
GENERAL_OPTIONS: Mapping[str, str] = {
    "rand_seed": INTEGER,
    "rand_spec_iter": INTEGER,
    "rand_spec_pct": INTEGER,
    "rand_spec_res": INTEGER,
    "rand_pareto_h": NUMBER,
}

# What each bundled workload may take.  LinkBench is the built-in driver's: its one
# option picks the operations it runs.
WORKLOAD_OPTIONS: Mapping[str, Mapping[str, str]] = {
    **{w: {**OLTP_OPTIONS, **GENERAL_OPTIONS} for w in (
        "oltp_read_write", "oltp_point_select", "oltp_read_only", "oltp_write_only",
        "oltp_update_index", "oltp_insert")},
    "linkbench": {"ops": LIST},
}

@dataclass(frozen=True, slots=True)
class Refusal:
    """Why an option cannot go to sysbench (after "sysbench option 'NAME' "), and what
    to write instead."""

    problem: str
    fix: str


def _load(field: str, how: str = "") -> Refusal:
    return Refusal("is set by knobtop from the load",
                   f"set {field} in [load], not in options{how}")


# The connection: knobtop's, from the profile or the lab, never a file's.
_CONNECTION = Refusal("is set by knobtop from the load's server (the profile's or the "
                      "lab's)", "remove it from options: knobtop connects sysbench to the "
                      "server itself, so no file can point it elsewhere")
_OUTPUT = Refusal("is sysbench's own and changes what it prints, which knobtop reads each "
                  "second", "remove it from options")
_SECRET = Refusal("is sysbench's own and prints what it sends the server, the password "
                  "too", "remove it from options")
_SYSBENCH = Refusal("is sysbench's own, not the workload's", "remove it from options")

# Every option sysbench 1.0.20 takes itself (``sysbench --help``: a test holds the table
# against the installed sysbench), ``test``, and the options the oltp scripts declare that
# knobtop sets, each with its refusal.  No workload may take one (bar GENERAL_OPTIONS,
# which are not here): sysbench parses its own before the script's.
RESERVED: Mapping[str, Refusal] = {
    # general
    "threads": _load("threads"),
    "num_threads": _load("threads"),  # deprecated alias, wins over threads
    "events": _load("duration"),
    "max_requests": _load("duration"),  # deprecated alias of events
    "time": _load("duration"),
    "max_time": _load("duration"),  # deprecated alias of time
    "forced_shutdown": Refusal("is sysbench's own", "remove it from options: knobtop "
                               "ends each run itself"),
    "thread_stack_size": _SYSBENCH,
    "rate": _load("rate"),
    "tx_rate": _load("rate"),  # deprecated alias of rate
    "report_interval": _OUTPUT,
    "report_checkpoints": _OUTPUT,
    "debug": _SECRET,
    "validate": _SYSBENCH,
    "help": _OUTPUT,
    "version": _OUTPUT,
    "config_file": Refusal("is sysbench's own: it reads more options from that file, "
                           "connection ones too", "give each workload option in options "
                           "instead"),
    "test": _load("workload"),  # --test=SCRIPT replaces the script (src/sysbench.c)
    # random numbers (rand_seed, rand_spec_*, rand_pareto_h are GENERAL_OPTIONS)
    "rand_type": _load("rand_type"),
    # log
    "verbosity": _OUTPUT,
    "percentile": _load("percentile"),
    "histogram": _OUTPUT,
    # database
    "db_driver": _CONNECTION,
    "db_ps_mode": _load("prepared", " (true: auto, false: disable)"),
    "db_debug": _SECRET,
    # the MySQL driver
    "mysql_host": _CONNECTION,
    "mysql_port": _CONNECTION,
    "mysql_socket": _CONNECTION,
    "mysql_user": _CONNECTION,
    "mysql_password": _CONNECTION,
    "mysql_db": _CONNECTION,
    "mysql_ssl": _CONNECTION,
    "mysql_ssl_cipher": _CONNECTION,
    "mysql_compression": _CONNECTION,
    "mysql_debug": _SECRET,
    "mysql_ignore_errors": _CONNECTION,
    "mysql_dry_run": _CONNECTION,
    # the PostgreSQL driver
    "pgsql_host": _CONNECTION,
    "pgsql_port": _CONNECTION,
    "pgsql_user": _CONNECTION,
    "pgsql_password": _CONNECTION,
    "pgsql_db": _CONNECTION,
    # declared by the oltp scripts, set by knobtop from the load
    "tables": _load("tables"),
    "table_size": _load("table_size"),
    "mysql_storage_engine": _load("engine"),
    "pgsql_variant": _CONNECTION,
}
# The namespaces of sysbench's database layer and drivers: a name in one is refused even
# where the table above has no row for it (a driver of another sysbench build or version).
DRIVER_PREFIXES: tuple[str, ...] = ("db_", "mysql_", "pgsql_", "drizzle_", "attachsql_",
                                    "oracle_")

_VALUE = {
    FLAG: (re.compile(r"on|off|true|false|1|0"), "on or off"),
    NUMBER: (re.compile(r"-?[0-9]{1,18}(\.[0-9]{1,18})?"), "a number, e.g. 10"),
    INTEGER: (re.compile(r"-?[0-9]{1,9}"), "a whole number, e.g. 10"),
    SIZE: (re.compile(r"[0-9]{1,18}[KMGTkmgt]?"), "a size, e.g. 64K"),
}
# A line of ``sysbench ... help`` / ``sysbench --help`` that names an option:
# "  --point_selects=N   Number of ...", "  --skip_trx[=on|off]  ...".
_HELP_LINE = re.compile(r"^  --([^\s=\[]+)(\[=on\|off\]|=\S+)?(?:\s|$)")


def normal(name: str) -> str:
    """The name as sysbench compares it: ``-`` and ``_`` alike (case kept: it matters)."""
    return name.replace("-", "_")


def declared_options(help_text: str, script: str) -> dict[str, str] | None:
    """The options (normal name -> kind) ``sysbench SCRIPT help`` lists, or None when its
    output has no option list (the script declares none, or prints its own help)."""
    name = script.rsplit("/", 1)[-1]
    lines = help_text.splitlines()
    try:
        start = lines.index(f"{name} options:")
    except ValueError:
        return None
    out: dict[str, str] = {}
    for line in lines[start + 1:]:
        if not line.strip():
            break
        match = _HELP_LINE.match(line)
        if match:
            out[normal(match.group(1))] = match.group(2) or STRING
    return out


def listed_options(help_text: str) -> dict[str, str]:
    """Every option ``sysbench --help`` lists (normal name -> kind)."""
    return {normal(m.group(1)): m.group(2) or STRING
            for m in map(_HELP_LINE.match, help_text.splitlines()) if m}


def _whose(workload: str) -> str:
    if workload == "linkbench":
        return "LinkBench (knobtop's built-in driver)"
    return f"{workload} (sysbench {SYSBENCH_VERSION})"


def allowed_for(workload: str, declared: Mapping[str, str] | None = None,
                own: Iterable[str] = ()) -> dict[str, str]:
    """The options ``workload`` may take (normal name -> kind).  A custom script's are
    what it ``declared`` (its help lists) less sysbench's own (RESERVED, and ``own``: what
    the client host's ``sysbench --help`` lists), the driver namespaces and options
    files; and the random-number parameters (GENERAL_OPTIONS), as for the oltp scripts."""
    if not workload.endswith(".lua"):
        return dict(WORKLOAD_OPTIONS.get(workload, {}))
    taken = set(RESERVED) | {normal(n) for n in own}
    mine = {name: kind for name, kind in (declared or {}).items()
            if name not in taken and not name.startswith(DRIVER_PREFIXES)
            and kind != FILENAME}
    return {**mine, **GENERAL_OPTIONS}


def refusal(workload: str, name: str, value: str | None, *,
            declared: Mapping[str, str] | None = None, own: Iterable[str] = ()
            ) -> Refusal | None:
    """Why ``name = value`` cannot go to sysbench running ``workload`` (None: it can);
    with ``value`` None, the name alone (so a refused name's value, maybe a password, is
    never quoted).

    A custom script's (``workload`` a .lua path) options are known only on the client
    host: without ``declared`` its names are checked against what no script may take
    (RESERVED, the driver namespaces) and the rest waits for ``sysbench SCRIPT help``
    (``Sysbench.check_options``).
    """
    key = normal(name)
    shown = f"sysbench option '{name}'"
    custom = workload.endswith(".lua")
    if key in RESERVED:
        reason = RESERVED[key]
        return Refusal(f"{shown} {reason.problem}", reason.fix)
    if key.startswith(DRIVER_PREFIXES):
        return Refusal(f"{shown} {_CONNECTION.problem}: it is sysbench's database "
                       "driver's", _CONNECTION.fix)
    if custom and declared is None and key not in GENERAL_OPTIONS:
        return None
    allowed = allowed_for(workload, declared, own)
    kind = allowed.get(key)
    if kind is None:
        listed = (declared or {}).get(key)
        if listed == FILENAME:
            problem = f"{shown} names a file sysbench would read more options from"
        elif listed is not None:
            problem = (f"{shown} is one of sysbench's own (it takes them before any "
                       f"script's), though {workload} declares it")
        elif custom:
            problem = (f"{shown} is not one {workload} declares (sysbench {workload} help "
                       "lists what it does)")
        else:
            problem = f"{shown} is not an option of {_whose(workload)}"
        close = difflib.get_close_matches(key, list(allowed), n=1, cutoff=0.75)
        hint = f"did you mean {close[0]}? Else " if close else ""
        names = ", ".join(sorted(allowed)) or "none"
        return Refusal(problem, f"{hint}remove it from options; {workload} takes: {names}")
    if value is not None and kind in _VALUE:
        pattern, what = _VALUE[kind]
        if not pattern.fullmatch(value):
            return Refusal(f"sysbench option {name} = '{value}' is not {what}",
                           f"give {what}")
    return None


__all__ = [
    "DRIVER_PREFIXES",
    "FILENAME",
    "FLAG",
    "GENERAL_OPTIONS",
    "INTEGER",
    "LIST",
    "NUMBER",
    "OLTP_OPTIONS",
    "RESERVED",
    "SIZE",
    "STRING",
    "SYSBENCH_VERSION",
    "WORKLOAD_OPTIONS",
    "Refusal",
    "allowed_for",
    "declared_options",
    "listed_options",
    "normal",
    "refusal",
]
