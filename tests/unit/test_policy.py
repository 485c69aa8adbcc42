"""The risk table (server.policy) held against a real server's own variable list."""

from __future__ import annotations

import asyncio
import re
import subprocess

import pytest

from harness.binaries import require_binary
from knobtop.lab import Sandbox
from knobtop.server.link import ServerLink
from knobtop.server.policy import (
    NOT_REACH,
    REACH_KINDS,
    SUSPECT,
    ReachError,
    check_allowed,
    normal,
    risk_of,
)

# A value that names a place on the server's host.
PATH_VALUE = re.compile(r"^(/|\./|\.\./)|\.(log|cnf|sock|pid|info|index|err)$")


def server_variables(sandbox: Sandbox) -> dict[str, str]:
    async def read() -> dict[str, str]:
        link = ServerLink(sandbox.connection())
        await link.connect()
        try:
            rows = await link.query("SELECT VARIABLE_NAME, GLOBAL_VALUE "
                                    "FROM information_schema.SYSTEM_VARIABLES")
        finally:
            await link.close()
        return {str(n).lower(): "" if v is None else str(v) for n, v in rows}

    return asyncio.run(read())


def help_options() -> dict[str, str]:
    """Every option and variable `mariadbd --verbose --help` lists (MyRocks loaded too), with
    its default as the help prints it."""
    server = require_binary("mariadbd", "mariadb-server")
    out = subprocess.run([server, "--no-defaults", "--plugin-load-add=ha_rocksdb.so",
                          "--verbose", "--help"], capture_output=True, text=True, timeout=60,
                         check=True).stdout
    table = out.split("Variables (--variable-name=value)", 1)[1].splitlines()[3:]
    return {normal(parts[0]): parts[1] if len(parts) > 1 else ""
            for line in table if (parts := line.split())}


@pytest.mark.integration
def test_every_variable_of_a_dangerous_shape_is_reach_or_vetted(mariadb: Sandbox) -> None:
    # the defaults the help prints (MyRocks's among them: ./#rocksdb), then the running
    # server's own values
    values = {**help_options(), **server_variables(mariadb)}
    names = set(values)
    assert len(names) > 600  # the server's whole list, MyRocks's variables among them
    assert any(n.startswith("rocksdb_") for n in names)
    slipped = sorted(
        n for n in names
        if not risk_of(n).reach and n not in NOT_REACH
        and (SUSPECT.search(n) or PATH_VALUE.search(values.get(n, ""))))
    assert slipped == [], (f"{slipped}: a variable of a dangerous shape would be a "
                           "performance variable; class it in REACH_RULES, or list it in "
                           "NOT_REACH with the reason it reaches nothing")
    # every vetted exception is one the shape test would otherwise flag
    assert all(SUSPECT.search(n) for n in NOT_REACH)
    # every value that is a path on this server belongs to a reach variable
    paths = {n for n, v in values.items() if v.startswith("/")}
    assert paths and all(risk_of(n).kind for n in paths), paths


@pytest.mark.parametrize(("name", "kind"), [
    ("bind_address", "network"), ("bind-address", "network"), ("PORT", "network"),
    ("skip_networking", "network"), ("wsrep_cluster_address", "network"),
    ("skip_grant_tables", "auth"), ("skip-grant-tables", "auth"), ("local_infile", "auth"),
    ("require_secure_transport", "auth"), ("ssl_key", "auth"), ("report_password", "auth"),
    ("plugin_dir", "plugin"), ("plugin_load_add", "plugin"), ("plugin-load", "plugin"),
    ("allow_suspicious_udfs", "plugin"),
    ("init_connect", "sql"), ("init_file", "sql"), ("init_slave", "sql"),
    ("event_scheduler", "sql"), ("wsrep_notify_cmd", "sql"),
    ("general_log_file", "path"), ("slow_query_log_file", "path"), ("datadir", "path"),
    ("tmpdir", "path"), ("secure_file_priv", "path"), ("innodb_data_home_dir", "path"),
    ("log_error", "path"), ("pid_file", "path"), ("innodb_tmpdir", "path"),
    ("general_log", "files"), ("slow_query_log", "files"), ("log_output", "files"),
    ("core_file", "files"), ("debug_dbug", "files"),
    ("innodb_io_capacity", ""), ("innodb_flush_log_at_trx_commit", ""),
    ("innodb_log_file_size", ""), ("innodb_file_per_table", ""), ("sort_buffer_size", ""),
    ("innodb_doublewrite", ""), ("innodb_buffer_pool_size", ""), ("max_connections", ""),
    ("innodb_adaptive_hash_index", ""), ("open_files_limit", ""),
    # mariadbd's option prefixes name the same option
    ("loose-skip-grant-tables", "auth"), ("loose_bind_address", "network"),
    ("skip-general-log", "files"), ("maximum-init-connect", "sql"), ("loose-sort-buffer-size", ""),
    ("gdb", "files"), ("wsrep_new_cluster", "network"),
    # found by the review: MyRocks makes directories where these say
    ("rocksdb_create_checkpoint", "path"), ("rocksdb_datadir", "path"),
    ("rocksdb_update_cf_options", "path"), ("rocksdb_remove_mariabackup_checkpoint", "path"),
    ("innodb_buffer_pool_dump_now", ""),
])
def test_risk_classes(name: str, kind: str) -> None:
    risk = risk_of(name)
    assert risk.kind == kind
    assert risk.what == REACH_KINDS.get(kind, "changes only how the server performs")


def test_a_reach_variable_from_a_file_needs_the_file_and_the_command_line() -> None:
    names = ["innodb_io_capacity", "general_log"]
    with pytest.raises(ReachError, match=r"general_log starts the server writing files.*"
                       r'\[allow\] reach = \["general_log"\].*--allow-reach'):
        check_allowed(names, frozenset(), True, "recipe x.toml")
    with pytest.raises(ReachError, match="run again with --allow-reach"):
        check_allowed(names, frozenset({"general_log"}), False, "recipe x.toml")
    check_allowed(names, frozenset({"general_log"}), True, "recipe x.toml")
    check_allowed(["innodb_io_capacity"], frozenset(), False, "recipe x.toml")
