"""SQL identifiers as the server reads them back, and the names of sysbench's tables."""

from __future__ import annotations

import re

# sysbench's oltp_common.lua names its tables sbtest1..N and nothing else: a name that
# only starts with "sbtest" (sbtest_results, sbtestx) is somebody else's table.
_SYSBENCH_TABLE = re.compile(r"sbtest[0-9]+")


def quote_ident(name: str) -> str:
    """``name`` as one backquoted identifier (a backtick inside is doubled), so a name
    taken from the server or a profile can never end the identifier early."""
    return "`" + name.replace("`", "``") + "`"


def is_sysbench_table(name: str) -> bool:
    """True for a name sysbench gives its tables: ``sbtest`` and ASCII digits only."""
    return _SYSBENCH_TABLE.fullmatch(name) is not None
