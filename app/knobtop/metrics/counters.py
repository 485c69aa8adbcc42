"""Which raw counters a sample holds: server status names, INNODB_METRICS names, host CPU fields."""

from __future__ import annotations

# Status variables every sample carries.  Kept short on purpose: a sample must
# stay under 1 KB of journal, and each name here costs its value in every line.
STATUS_COUNTERS: tuple[str, ...] = (
    "Uptime",
    "Questions",
    "Queries",
    "Com_commit",
    "Com_rollback",
    "Handler_commit",
    "Handler_rollback",
    "Com_select",
    "Com_insert",
    "Com_update",
    "Com_delete",
    "Threads_running",
    "Threads_connected",
    "Innodb_buffer_pool_read_requests",
    "Innodb_buffer_pool_reads",
    "Innodb_buffer_pool_pages_dirty",
    "Innodb_buffer_pool_pages_total",
    "Innodb_buffer_pool_pages_free",
    "Innodb_buffer_pool_pages_flushed",
    "Innodb_buffer_pool_wait_free",
    "Innodb_history_list_length",
    "Innodb_checkpoint_age",
    "Innodb_checkpoint_max_age",
    "Innodb_row_lock_waits",
    "Innodb_row_lock_time",
    "Innodb_row_lock_current_waits",
    "Innodb_rows_read",
    "Innodb_rows_inserted",
    "Innodb_rows_updated",
    "Innodb_rows_deleted",
    "Innodb_data_reads",
    "Innodb_data_writes",
    "Innodb_data_fsyncs",
    "Innodb_os_log_written",
    "Innodb_log_waits",
    "Rocksdb_block_cache_hit",
    "Rocksdb_block_cache_miss",
    # MyRocks write stalls: totals over all causes (the per-cause pairs stay out).
    "Rocksdb_stall_total_stops",
    "Rocksdb_stall_total_slowdowns",
    "Rocksdb_stall_micros",
)

# INNODB_METRICS rows (only those enabled are read).  MySQL has history length
# and checkpoint age only here; MariaDB has them as status variables too.
INNODB_METRICS: tuple[str, ...] = (
    "trx_rseg_history_len",
    "log_lsn_checkpoint_age",
)
METRIC_PREFIX = "im:"

SERVER_COUNTERS: tuple[str, ...] = STATUS_COUNTERS + tuple(
    METRIC_PREFIX + name for name in INNODB_METRICS
)
