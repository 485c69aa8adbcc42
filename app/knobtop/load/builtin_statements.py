"""The statements of the built-in load's sysbench workloads (oltp_point_select,
oltp_read_write) and how sysbench counts them; LinkBench's are in knobtop.load.linkbench."""

from __future__ import annotations

# The statements of sysbench 1.0's oltp_common.lua, with its defaults: 10 point selects,
# one of each range query over range_size=100 rows, one of each update, one delete+insert.
SYSBENCH_SQL: dict[str, str] = {
    "begin": "BEGIN",
    "commit": "COMMIT",
    "point_selects": "SELECT c FROM sbtest{t} WHERE id=?",
    "simple_ranges": "SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ?",
    "sum_ranges": "SELECT SUM(k) FROM sbtest{t} WHERE id BETWEEN ? AND ?",
    "order_ranges": "SELECT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c",
    "distinct_ranges": "SELECT DISTINCT c FROM sbtest{t} WHERE id BETWEEN ? AND ? ORDER BY c",
    "index_updates": "UPDATE sbtest{t} SET k=k+1 WHERE id=?",
    "non_index_updates": "UPDATE sbtest{t} SET c=? WHERE id=?",
    "deletes": "DELETE FROM sbtest{t} WHERE id=?",
    "inserts": "INSERT INTO sbtest{t} (id, k, c, pad) VALUES (?, ?, ?, ?)",
}
RANGES = ("simple_ranges", "sum_ranges", "order_ranges", "distinct_ranges")
RANGE_SIZE = 100
# Queries per event, as sysbench counts them (reads, writes, other).
RWO: dict[str, tuple[int, int, int]] = {
    "oltp_point_select": (1, 0, 0),
    "oltp_read_write": (14, 4, 2),
    "linkbench": (0, 0, 0),  # counted per operation (_linkbench)
}


def literal(value: object) -> str:
    # Only ints and sysbench's digit-and-dash strings are ever bound.
    return str(value) if isinstance(value, int) else f"'{value}'"
