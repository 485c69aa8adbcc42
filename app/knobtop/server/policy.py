"""What a server variable can reach beyond performance: the one risk table, and the checks
built on it (files need ``[allow] reach`` and ``--allow-reach``; the person confirms).

Every server variable is a *performance* variable unless its name has the shape of one that
reaches further than the server's speed (REACH_RULES, first match wins):

* ``path``: it names a file or directory (``*_file``, ``*_dir``, ``*_path``, ``datadir``,
  ``tmpdir``, ``secure_file_priv`` ...): the server then reads or writes there, as its own
  OS user;
* ``network``: it opens, moves or joins listeners and clusters (``bind_address``, ``port``,
  ``socket``, ``skip_networking``, ``*_address``, ``wsrep_provider`` ...);
* ``plugin``: it loads code (``plugin_*``, ``*_plugin*``, ``allow_suspicious_udfs``);
* ``sql``: it runs SQL or commands of its own (``init_connect``, ``init_file``,
  ``init_slave``, ``event_scheduler``, ``wsrep_notify_cmd`` ...);
* ``auth``: it changes who may log in or what they may do (``skip_grant_tables``,
  ``*password*``, ``ssl_*``, ``require_secure_transport``, ``local_infile`` ...);
* ``files``: switching it on starts writing files (``general_log``, ``slow_query_log``,
  ``log_bin``, ``log_output``, ``core_file``, ``debug*`` ...).

The allow-lists built on this table are where their readers are: a sandbox's base options
(``knobtop.lab_options``: exact names of the lab server's own variables, no reach ones) and
a load's sysbench options (``knobtop.load.sysbench_options``: the workload's own). Where the
table applies is listed in SECURITY.md.

A name of a suspicious shape (SUSPECT: a word such as ``file``, ``dir``, ``host`` or
``user`` among its ``_``-separated words) that is nevertheless a performance variable is
listed in NOT_REACH with the reason; tests/unit hold both tables against the server's own
``SHOW VARIABLES`` and ``mariadbd --verbose --help``, so a new variable of a dangerous shape
fails a test instead of slipping in as performance.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from knobtop.errors import KnobtopError

# What each kind of reach means, in the words of a dialog or a refusal.
REACH_KINDS: dict[str, str] = {
    "path": "names a file or directory on the server's host",
    "network": "opens or moves the server's network listeners or cluster links",
    "plugin": "loads code into the server",
    "sql": "runs SQL or commands of its own",
    "auth": "changes who can log in or what they may do",
    "files": "starts the server writing files",
}

# (pattern over the lower-case name with '-' as '_', kind): the first match decides.
REACH_RULES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), kind) for pattern, kind in (
        # code
        (r"plugin|^allow_suspicious_udfs$", "plugin"),
        # it sends reports out to the internet (the feedback plugin)
        (r"^feedback", "network"),
        # SQL and commands
        (r"^init_|^event_scheduler$|_cmd$|^wsrep_sst_method$",
         "sql"),
        # who may log in
        (r"password|^skip_grant_tables$|^(ssl|tls|admin_ssl|admin_tls)_|^require_secure_"
         r"transport$|^secure_auth$|_auth$|^authentication_|^local_infile$|^skip_name_resolve$"
         r"|^automatic_sp_privileges$|^skip_show_database$|^secure_timestamp$|^mandatory_roles$"
         r"|^activate_all_roles_on_login$|^partial_revokes$|keyring|^proxy_protocol_networks$"
         r"|^wsrep_allowlist$|^report_user$|^ssl$|^user$|^safe_user_create$|^show_slave_auth_info$"
         r"|^old_style_user_limits$", "auth"),
        # the network
        (r"^bind_address$|^port$|^socket$|^skip_networking$|^extra_port$|_address$|_port$"
         r"|_socket$|^report_host$|^wsrep_provider(_options)?$|^wsrep_cluster_name$"
         r"|^wsrep_on$|^wsrep_sst_donor$|^wsrep_new_cluster$|^mysqlx_", "network"),
        # switches that start writing files
        (r"^general_log$|^slow_query_log$|^log_slow_query$|^log_output$|^core_file$|^debug"
         r"|_dbug|^log_slave_updates$|^log_replica_updates$|^binlog_encryption$|^gdb$"
         r"|^stack_trace$|^wsrep_recover$",
         "files"),
        # files and directories
        (r"(_file|_dir|_path|_directory|_filename|_basename|_index_file)$|^(data|base|tmp"
         r"|innodb_tmp|slave_load_tmp|replica_load_tmp)dir$|^secure_file_priv$|^log_error"
         r"(_services)?$|^(log_bin|relay_log)(_index)?$|^ignore_db_dirs$|^innodb_data_file_"
         r"path$|^log_tc$|^pid_file$|^character_sets_dir$|^lc_messages_dir$|^chroot$|_tmpdir$"
         r"|^log_ddl_recovery$|^log_isam$|datadir$|^rocksdb_create_checkpoint$"
         r"|^rocksdb_remove_mariabackup_checkpoint$"
         # RocksDB's option strings, which can name directories (cf_paths)
         r"|^rocksdb_(default_|override_|update_)?cf_options$",
         "path"),
    ))

# Words that make a name suspicious: any name with one of them among its '_'-separated
# words must be classed reach, or be listed in NOT_REACH with the reason it is not.
SUSPECT = re.compile(
    r"(^|_)(file|files|dir|directory|path|filename|basename|plugin|password|passwords|ssl|tls"
    r"|address|port|socket|host|hosts|hostname|user|users|auth|grant|grants|init|network"
    r"|networks|networking|cmd|provider|sst|keyring|secure|log|debug|dbug|tmpdir|infile"
    r"|outfile|roles|privileges|core|checkpoint|backup|dump|trace|options)(_|$)")

# Performance variables whose names look like reach (SUSPECT) but name no place, open no
# listener, load nothing, run nothing, change no login and start no file: why, by group.
NOT_REACH: dict[str, str] = {
    **dict.fromkeys((
        "innodb_log_file_size", "aria_log_file_size", "innodb_log_file_buffering",
        "innodb_log_file_mmap", "innodb_log_files_in_group", "innodb_file_per_table",
        "innodb_file_format", "innodb_open_files", "open_files_limit",
        "binlog_file_cache_size", "key_cache_file_hash_size", "aria_pagecache_file_hash_size",
        "myisam_max_sort_file_size", "aria_max_sort_file_size",
        "innodb_disable_sort_file_cache", "keep_files_on_create", "large_files_support",
        "lower_case_file_system", "encrypt_tmp_files", "innodb_log_write_ahead_size",
        "aria_sync_log_dir", "performance_schema_max_file_classes",
        "performance_schema_max_file_handles", "performance_schema_max_file_instances",
        "innodb_data_file_buffering", "innodb_data_file_write_through",
        "innodb_log_file_write_through", "innodb_undo_log_truncate"),
        "a size, a count or a cache of files the server already has"),
    **dict.fromkeys((
        "host_cache_size", "performance_schema_hosts_size", "performance_schema_users_size",
        "performance_schema_max_socket_classes", "performance_schema_max_socket_instances",
        "max_user_connections", "innodb_ft_user_stopword_table"),
        "a size or a limit of what the server keeps per host, user or socket"),
    **dict.fromkeys((
        "innodb_log_buffer_size", "innodb_flush_log_at_trx_commit",
        "innodb_flush_log_at_timeout", "log_warnings", "log_slow_rate_limit",
        "log_slow_verbosity", "log_slow_filter", "log_slow_admin_statements",
        "log_slow_slave_statements", "log_slow_max_warnings", "log_slow_min_examined_row_limit",
        "log_slow_query_time", "log_slow_disabled_statements", "log_disabled_statements",
        "log_queries_not_using_indexes", "log_bin_compress", "log_bin_compress_min_len",
        "log_bin_trust_function_creators", "log_tc_size", "aria_log_purge_type",
        "innodb_log_spin_wait_delay", "innodb_log_checksums", "innodb_log_compressed_pages",
        "innodb_log_optimize_ddl",
        "max_relay_log_size", "relay_log_purge", "relay_log_recovery", "relay_log_space_limit",
        "sync_relay_log", "sync_relay_log_info", "sql_log_bin", "sql_log_off",
        "innodb_encrypt_log", "wsrep_log_conflicts", "innodb_log_archive",
        "innodb_log_group_home_dir_size", "innodb_redo_log_capacity",
        "innodb_undo_log_truncate_frequency",
        "rocksdb_max_log_file_size", "rocksdb_keep_log_file_num", "rocksdb_log_file_time_to_roll",
        "rocksdb_info_log_level",
        "rocksdb_flush_log_at_trx_commit", ),
        "how much the server logs or syncs to logs it already writes"),
    **dict.fromkeys((
        "debug_no_thread_alarm", "wsrep_debug", "rocksdb_debug_optimizer_n_rows",
        "rocksdb_debug_optimizer_no_zero_cardinality", "rocksdb_debug_ttl_ignore_pk",
        "rocksdb_debug_ttl_read_filter_ts", "rocksdb_debug_ttl_rec_ts",
        "rocksdb_debug_ttl_snapshot_ts", "rocksdb_debug_manual_compaction_delay",
        "rocksdb_debug_cardinality_multiplier"),
        "a read-only or in-memory debugging switch that writes no trace file"),
    **dict.fromkeys((
        "innodb_buffer_pool_dump_now", "innodb_buffer_pool_dump_at_shutdown",
        "innodb_buffer_pool_dump_pct", "innodb_buf_dump_status_frequency"),
        "writes the buffer pool's dump file, which innodb_buffer_pool_filename (itself reach) "
        "names"),
    **dict.fromkeys((
        "aria_checkpoint_interval", "optimizer_trace", "optimizer_trace_max_mem_size",
        "rocksdb_cache_dump", "rocksdb_stats_dump_period_sec",
        "rpl_semi_sync_master_trace_level", "rpl_semi_sync_slave_trace_level"),
        "an interval, a memory-only trace, or what a core dump holds"),
    **dict.fromkeys((
        "aria_recover_options", "myisam_recover_options", "rocksdb_ignore_unknown_options"),
        "how crashed tables are repaired (in the datadir), or how strictly options are read"),
    **dict.fromkeys((
        "core_file_size", "back_log", "port_open_timeout", "innodb_max_undo_log_size",
        "innodb_online_alter_log_max_size", "innodb_buffer_pool_in_core_dump",
        "innodb_log_checkpoint_now", "aria_checkpoint_log_activity", "log_short_format",
        "wsrep_sst_donor_rejects_queries", "rocksdb_collect_sst_properties",
        "rocksdb_compaction_sequential_deletes_file_size",
        "rocksdb_delete_obsolete_files_period_micros", "rocksdb_max_manifest_file_size",
        "rocksdb_max_open_files", "rocksdb_merge_tmp_file_removal_delay_ms",
        "rocksdb_sst_mgr_rate_bytes_per_sec", "rocksdb_store_row_debug_checksums",
        "rocksdb_verify_row_debug_checksums", "rocksdb_trace_sst_api",
        "rocksdb_index_file_map"),
        "a limit, a timeout, a size or a check of the server's own work"),
    **dict.fromkeys((
        "have_ssl", "version_ssl_library", "external_user", "proxy_user", "hostname",
        "rocksdb_sst_props", "user_variables"),
        "a read-only fact the server reports"),
}


class ReachError(KnobtopError, ValueError):
    """A reach variable from a place that may not set it; the message names the fix."""


@dataclass(frozen=True, slots=True)
class Risk:
    """A variable's class: ``kind`` is "" for a performance variable, else a REACH_KINDS
    key."""

    name: str
    kind: str = ""

    @property
    def reach(self) -> bool:
        return bool(self.kind)

    @property
    def what(self) -> str:
        """What it reaches, for a dialog or a refusal ("names a file or directory ...")."""
        return REACH_KINDS.get(self.kind, "changes only how the server performs")


def normal(name: str) -> str:
    """A variable or option name as the server compares them: lower case, ``-`` as ``_``."""
    return name.strip().lower().replace("-", "_")


# Prefixes mariadbd's option reader takes before an option's name (``loose-bind-address``,
# ``skip-general-log``): a name with one is as risky as the option it names.
OPTION_PREFIXES = ("loose_", "maximum_", "enable_", "disable_", "skip_")


def risk_of(name: str) -> Risk:
    """The risk class of server variable ``name`` (any case, ``-`` or ``_``, with or
    without an option prefix)."""
    key = normal(name)
    if key in NOT_REACH:
        return Risk(key)
    for pattern, kind in REACH_RULES:
        if pattern.search(key):
            return Risk(key, kind)
    for prefix in OPTION_PREFIXES:
        if key.startswith(prefix) and (inner := risk_of(key[len(prefix):])).reach:
            return Risk(key, inner.kind)
    return Risk(key)


def is_reach(name: str) -> bool:
    return risk_of(name).reach


def reach_names(names: Iterable[str]) -> list[str]:
    """The reach variables among ``names``, in their order."""
    return [n for n in names if is_reach(n)]


def refusal(name: str, where: str, fix: str) -> str:
    """The message for reach variable ``name`` set from ``where`` without permission."""
    risk = risk_of(name)
    return (f"{risk.name} {risk.what}: {where} may not set it without permission; {fix}")


def check_allowed(names: list[str], allowed: frozenset[str], granted: bool, where: str) -> None:
    """Each reach variable among ``names`` is allowed by the file (``allowed``: its
    ``[allow] reach``) and by the command line (``granted``: ``--allow-reach``); ReachError
    naming the first that is not, and the fix."""
    for name in names:
        risk = risk_of(name)
        if not risk.reach:
            continue
        if risk.name not in allowed:
            raise ReachError(refusal(
                name, where, f'list it under [allow] reach = ["{risk.name}"] in the file and '
                "run with --allow-reach, or remove it"))
        if not granted:
            raise ReachError(refusal(
                name, where, "the file allows it ([allow] reach); run again with "
                "--allow-reach to let it"))
