"""NDB Cluster support: config.ini edits, ndb_mgm output parsing, rolling restart, hit ratio.

No NDB binaries exist on this machine and none can be installed, so nothing here runs a real
ndb_mgmd, ndbd or ndb_mgm. The texts in tests/data/ndb/ stand in for recorded output: each
starts with a '# From: <URL or source path>' line naming where it comes from (the MySQL
manual's examples, a mysql-test result file, a user's recorded SHOW, mysql-server's sample
config.ini) or, where no recorded output is published, the CommandInterpreter.cpp printf
format the line was composed from. A scripted Host replays them in order.
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from pathlib import PurePath
from typing import Any

import pytest

from harness import paths as repo_paths
from knobtop.hosts.base import CommandResult
from knobtop.server.ndb import (
    HIT_RATIO_SQL,
    NdbError,
    NdbRollingRestart,
    diskpagebuffer_hit_ratio,
    hit_ratio_from_rows,
    parse_node_ids,
    parse_node_status,
    parse_show_nodes,
    per_interval_hit_ratio,
    set_ndbd_default,
)

DATA = repo_paths.DATA / "ndb"
CONFIG = "/etc/mysql-cluster/config.ini"
CONNECT = "mgm.example:1186"
RELOAD = f"ndb_mgmd -f {CONFIG} --reload"


def doc(name: str, node: int | None = None) -> str:
    text = (DATA / name).read_text()
    return text.replace("{node}", str(node)) if node is not None else text


def body(name: str) -> str:
    """A data file without its '# From:' line (for exact config.ini comparisons)."""
    return "".join(doc(name).splitlines(keepends=True)[1:])


# ---------------------------------------------------------------------------------------
# config.ini
# ---------------------------------------------------------------------------------------


def test_adds_key_after_last_parameter_of_ndbd_default() -> None:
    before = doc("config_add_node_manual.txt")
    after = set_ndbd_default(before, "DiskPageBufferMemory", "256M")
    expected = before.replace(
        "DataDir = /usr/local/mysql/var/mysql-cluster\n",
        "DataDir = /usr/local/mysql/var/mysql-cluster\nDiskPageBufferMemory=256M\n",
        1,
    )
    assert after == expected


def test_upper_case_section_and_colon_separators() -> None:
    before = doc("config_small_sample.txt")
    after = set_ndbd_default(before, "DiskPageBufferMemory", "1G")
    expected = before.replace("BackupMemory: 64M\n", "BackupMemory: 64M\nDiskPageBufferMemory=1G\n")
    assert after == expected
    # The comment inside the section and every other section are untouched.
    assert "# Data Memory, Index Memory, and String Memory\n" in after
    assert after.count("DiskPageBufferMemory") == 1


def test_replaces_existing_value_keeping_spelling_separator_and_comment() -> None:
    before = (
        "[NDBD DEFAULT]\n"
        "NoOfReplicas: 2\n"
        "diskpagebuffermemory :  64M   # buffer for disk data\n"
        "DataMemory: 600M\n"
    )
    after = set_ndbd_default(before, "DiskPageBufferMemory", "128M")
    assert after == (
        "[NDBD DEFAULT]\n"
        "NoOfReplicas: 2\n"
        "diskpagebuffermemory :  128M   # buffer for disk data\n"
        "DataMemory: 600M\n"
    )


def test_db_default_alias_and_other_sections_untouched() -> None:
    before = (
        "[DB DEFAULT]\n"
        "DiskPageBufferMemory=64M\n"
        "\n"
        "[ndbd]\n"
        "Id=2\n"
        "DiskPageBufferMemory=32M\n"
        "# DiskPageBufferMemory=1G in a comment\n"
    )
    after = set_ndbd_default(before, "DiskPageBufferMemory", "512M")
    assert after == before.replace("DiskPageBufferMemory=64M", "DiskPageBufferMemory=512M")


def test_comment_lines_in_the_section_are_not_keys() -> None:
    before = (
        "[ndbd default]\n# DiskPageBufferMemory=1G\n; DiskPageBufferMemory=2G\nNoOfReplicas=2\n"
    )
    after = set_ndbd_default(before, "DiskPageBufferMemory", "3G")
    assert after == before + "DiskPageBufferMemory=3G\n"


def test_duplicates_which_ndb_rejects_are_collapsed() -> None:
    before = "[ndbd default]\nDiskPageBufferMemory=1M\nNoOfReplicas=2\nDISKPAGEBUFFERMEMORY=2M\n"
    after = set_ndbd_default(before, "DiskPageBufferMemory", "64M")
    assert after == "[ndbd default]\nDiskPageBufferMemory=64M\nNoOfReplicas=2\n"


def test_missing_section_goes_before_the_first_section() -> None:
    before = "# cluster config\n[ndb_mgmd]\nHostName=mgm\n\n[ndbd]\nHostName=d1\n"
    after = set_ndbd_default(before, "DiskPageBufferMemory", "64M")
    assert after == (
        "# cluster config\n"
        "[ndbd default]\n"
        "DiskPageBufferMemory=64M\n"
        "\n"
        "[ndb_mgmd]\nHostName=mgm\n\n[ndbd]\nHostName=d1\n"
    )


def test_empty_file_and_crlf_and_no_final_newline() -> None:
    assert set_ndbd_default("", "DiskPageBufferMemory", "64M") == (
        "[ndbd default]\nDiskPageBufferMemory=64M\n"
    )
    crlf = "[ndbd default]\r\nNoOfReplicas=2"
    assert set_ndbd_default(crlf, "DiskPageBufferMemory", "64M") == (
        "[ndbd default]\r\nNoOfReplicas=2\r\nDiskPageBufferMemory=64M\r\n"
    )


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("DiskPageBufferMemory", ""),
        ("DiskPageBufferMemory", "1G\nX=1"),
        ("Disk Page", "1G"),
        ("DiskPageBufferMemory", "1G # c"),
    ],
)
def test_rejects_unusable_names_and_values(name: str, value: str) -> None:
    with pytest.raises(ValueError):
        set_ndbd_default("[ndbd default]\n", name, value)


# ---------------------------------------------------------------------------------------
# SHOW and STATUS
# ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "ids"),
    [
        ("show_8.0_manual.txt", [5, 6, 7, 8]),
        ("show_mysql_test_result.txt", [1, 2]),
        ("show_two_data_nodes.txt", [2, 3]),
        # The header says "2 node(s)" above four id= lines: the lines win.
        ("show_add_node_not_connected.txt", [1, 2, 3, 4]),
        ("show_add_node_no_nodegroup.txt", [1, 2, 3, 4]),
        ("show_single_user_8.0_manual.txt", [5, 6]),
    ],
)
def test_parse_node_ids(name: str, ids: list[int]) -> None:
    assert parse_node_ids(doc(name)) == ids


def test_parse_show_nodes_states_and_other_blocks() -> None:
    assert parse_show_nodes(doc("show_add_node_not_connected.txt")) == {
        1: "started",
        2: "started",
        3: "not connected",
        4: "not connected",
    }
    assert parse_show_nodes(doc("show_add_node_no_nodegroup.txt")) == dict.fromkeys(
        [1, 2, 3, 4], "started"
    )
    assert parse_show_nodes(doc("show_single_user_8.0_manual.txt")) == {
        5: "single user mode",
        6: "single user mode",
    }
    assert parse_show_nodes(doc("show_8.0_manual.txt"), "MGM") == {50: "connected"}
    assert parse_show_nodes(doc("show_mysql_test_result.txt"), "API") == {
        16: "connected",
        32: "connected",
        192: "not connected",
        255: "not connected",
    }
    assert parse_show_nodes(doc("show_two_data_nodes.txt"), "MGM") == {1: "connected"}


@pytest.mark.parametrize(
    ("name", "state"),
    [
        ("status_started.txt", "started"),
        ("status_starting.txt", "starting"),
        ("status_not_connected.txt", "not connected"),
        ("status_not_started.txt", "not started"),
        ("status_shutting_down.txt", "shutting down"),
        ("status_restarting.txt", "restarting"),
        ("status_single_user_mode.txt", "single user mode"),
    ],
)
def test_parse_node_status_each_state(name: str, state: str) -> None:
    assert parse_node_status(doc(name, node=2), 2) == state
    assert parse_node_status(doc(name, node=2), 3) == "unknown"


def test_parse_node_status_all_status_and_unknown_state() -> None:
    all_status = doc("status_started.txt", node=2) + "Node 3: starting (Last completed phase 5)\n"
    assert parse_node_status(all_status, 2) == "started"
    assert parse_node_status(all_status, 3) == "starting"
    assert parse_node_status("Node 4: unknown state\n", 4) == "unknown"
    assert parse_node_status("", 4) == "unknown"


def test_parse_ndb_waiter_output_takes_the_last_report() -> None:
    text = doc("ndb_waiter_manual.txt")
    assert parse_node_status(text, 1) == "started"
    assert parse_node_status(text, 2) == "starting"
    assert parse_node_status(text, 4) == "not connected"
    # waiter.cpp's own form: "Node %d: %s" with ndb_mgm_get_node_status_string().
    assert parse_node_status("Node 2: SHUTTING_DOWN\nNode 2: NO_CONTACT\n", 2) == "not connected"


def test_event_reports_are_not_status_lines() -> None:
    # "Node 1: Started (version 7.5.36)" is an event report (printLogEvent), not STATUS.
    assert parse_node_status(doc("restart_transcript_7.5_manual.txt"), 1) == "unknown"


# ---------------------------------------------------------------------------------------
# Rolling restart against a scripted management host
# ---------------------------------------------------------------------------------------

# ndb_mgm exits 255 when it cannot reach the management server: execute_impl() sets
# m_error = -1 when connect() fails and main.cpp turns a negative code into 255.
DOWN = (255, "")


class FakeTime:
    def __init__(self) -> None:
        self.now = 1000.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


class ScriptedHost:
    """Replays documented outputs per command, in order (the last one repeats), and
    records every command and file operation. Each command takes one fake second."""

    name = "mgm-host"

    def __init__(
        self, files: dict[str, bytes], script: dict[str, list[tuple[int, str]]], time: FakeTime
    ) -> None:
        self.files = dict(files)
        self.script = {key: list(outputs) for key, outputs in script.items()}
        self.time = time
        self.log: list[str] = []

    async def run(self, argv: Sequence[str], *, limit: float = 60.0) -> CommandResult:
        argv = list(argv)
        if argv[0] == "ndb_mgm":
            assert argv[1:4] == ["-c", CONNECT, "-e"], argv
            key = argv[4]
        else:
            key = " ".join(argv)
        self.log.append(key)
        self.time.now += 1.0
        queue = self.script[key]
        rc, out = queue.pop(0) if len(queue) > 1 else queue[0]
        return CommandResult(tuple(argv), rc, out, "")

    async def read_file(self, path: PurePath) -> bytes:
        self.log.append(f"read {path}")
        return self.files[str(path)]

    async def write_file_atomic(self, path: PurePath, data: bytes, mode: int = 0o600) -> None:
        self.log.append(f"write {path}")
        if str(path) in self.files:
            self.files[f"{path}.prev"] = self.files[str(path)]
        self.files[str(path)] = data


SHOW = (0, doc("show_two_data_nodes.txt"))
STOP = (0, doc("stop_mgmd_manual.txt"))
STARTED_MGMD = (0, doc("ndb_mgmd_reload_manual.txt"))
ORIGINAL = doc("config_add_node_manual.txt").encode()


def status(name: str, node: int) -> tuple[int, str]:
    return 0, doc(name, node=node)


def make(
    script: dict[str, list[tuple[int, str]]],
) -> tuple[ScriptedHost, NdbRollingRestart, list[tuple[str, int | None, str, float]]]:
    time = FakeTime()
    host = ScriptedHost({CONFIG: ORIGINAL}, script, time)
    steps: list[tuple[str, int | None, str, float]] = []
    restart = NdbRollingRestart(
        host,  # type: ignore[arg-type]
        CONFIG,
        connect_string=CONNECT,
        poll_interval=5.0,
        node_timeout=30.0,
        mgmd_timeout=20.0,
        on_step=lambda step, node, state, secs: steps.append((step, node, state, secs)),
        clock=time.clock,
        sleep=time.sleep,
    )
    return host, restart, steps


def node_steps(steps: list[tuple[str, int | None, str, float]]) -> list[tuple[str, int, str]]:
    return [(s, n, st) for s, n, st, _ in steps if n is not None and s in ("restart", "status")]


async def test_rolling_restart_runs_every_step_in_order() -> None:
    host, restart, steps = make(
        {
            "SHOW": [SHOW, DOWN, SHOW],
            "1 STOP": [STOP],
            RELOAD: [STARTED_MGMD],
            "2 RESTART": [(0, doc("restart_node.txt", node=2))],
            "2 STATUS": [
                status("status_not_connected.txt", 2),
                status("status_starting.txt", 2),
                status("status_started.txt", 2),
            ],
            "3 RESTART": [(0, doc("restart_node.txt", node=3))],
            "3 STATUS": [
                status("status_shutting_down.txt", 3),
                status("status_starting.txt", 3),
                status("status_started.txt", 3),
            ],
        }
    )
    assert await restart.run("256M") == [2, 3]
    assert host.log == [
        "SHOW",  # preflight: every data node started, management node 1
        f"read {CONFIG}",
        f"write {CONFIG}",
        "1 STOP",  # reload: stop ndb_mgmd ...
        "SHOW",  # ... until it no longer answers
        RELOAD,  # ... start it with --reload
        "SHOW",  # ... until it answers; the data node ids
        "2 RESTART",
        "2 STATUS",
        "2 STATUS",
        "2 STATUS",
        "3 RESTART",
        "3 STATUS",
        "3 STATUS",
        "3 STATUS",
    ]
    assert (
        host.files[CONFIG]
        == set_ndbd_default(ORIGINAL.decode(), "DiskPageBufferMemory", "256M").encode()
    )
    assert host.files[f"{CONFIG}.prev"] == ORIGINAL
    assert node_steps(steps) == [
        ("restart", 2, "restart issued"),
        ("status", 2, "not connected"),
        ("status", 2, "starting"),
        ("status", 2, "started"),
        ("restart", 3, "restart issued"),
        ("status", 3, "shutting down"),
        ("status", 3, "starting"),
        ("status", 3, "started"),
    ]
    for node in (2, 3):
        secs = [sec for s, n, _, sec in steps if n == node]
        assert secs == sorted(secs) and secs[-1] > 0
    assert [s for s, *_ in steps][:6] == [
        "preflight",
        "write-config",
        "stop-mgmd",
        "wait-mgmd-down",
        "start-mgmd",
        "wait-mgmd-up",
    ]
    assert steps[-1][:3] == ("done", None, "2 data nodes restarted")


async def test_node_never_started_rolls_back_and_raises() -> None:
    host, restart, steps = make(
        {
            "SHOW": [SHOW, DOWN, SHOW, SHOW, DOWN, SHOW],
            "1 STOP": [STOP],
            RELOAD: [STARTED_MGMD],
            "2 RESTART": [(0, doc("restart_node.txt", node=2))],
            "2 STATUS": [status("status_starting.txt", 2), status("status_started.txt", 2)],
            "3 RESTART": [(0, doc("restart_node.txt", node=3))],
            "3 STATUS": [status("status_starting.txt", 3)],  # forever
        }
    )
    with pytest.raises(NdbError) as caught:
        await restart.run("256M")
    # Poll k ends 6k - 4 fake seconds after RESTART (1 s per command, 5 s between polls):
    # the 6th poll is the first at or past the 30 s timeout.
    assert host.log == [
        "SHOW",
        f"read {CONFIG}",
        f"write {CONFIG}",
        "1 STOP",
        "SHOW",
        RELOAD,
        "SHOW",
        "2 RESTART",
        "2 STATUS",
        "2 STATUS",
        "3 RESTART",
        *["3 STATUS"] * 6,
        f"write {CONFIG}",  # rollback: the config.ini read at the start ...
        "SHOW",  # ... management server still up?
        "1 STOP",  # ... reload it again
        "SHOW",
        RELOAD,
        "SHOW",
    ]
    assert host.files[CONFIG] == ORIGINAL
    assert host.files[f"{CONFIG}.prev"] != ORIGINAL  # the attempted config, for inspection
    error = caught.value
    assert (error.step, error.node) == ("wait-started", 3)
    assert "Node 3: starting (Last completed phase 4)" in error.output
    message = str(error)
    assert "data node 3" in message and "wait-started" in message
    assert "restored and ndb_mgmd reloaded" in message
    assert "data nodes [2] already run with DiskPageBufferMemory=256M" in message
    assert node_steps(steps)[-2:] == [("restart", 3, "restart issued"), ("status", 3, "starting")]
    assert [st for s, _, st, _ in steps if s == "rollback"] == [
        "config.ini restored",
        "ndb_mgmd reloaded",
    ]


async def test_failed_restart_command_rolls_back() -> None:
    host, restart, _ = make(
        {
            "SHOW": [SHOW, DOWN, SHOW, SHOW, DOWN, SHOW],
            "1 STOP": [STOP],
            RELOAD: [STARTED_MGMD],
            "2 RESTART": [(255, doc("restart_failed.txt"))],
        }
    )
    with pytest.raises(NdbError) as caught:
        await restart.run("256M")
    assert host.log[7:] == [
        "2 RESTART",
        f"write {CONFIG}",
        "SHOW",
        "1 STOP",
        "SHOW",
        RELOAD,
        "SHOW",
    ]
    assert (caught.value.step, caught.value.node) == ("restart", 2)
    assert "Restart failed." in caught.value.output
    assert "exited 255" in str(caught.value) and "no data node was restarted" in str(caught.value)
    assert host.files[CONFIG] == ORIGINAL


async def test_mgmd_refusing_new_config_restarts_it_with_the_old_one() -> None:
    host, restart, _ = make(
        {
            "SHOW": [SHOW, DOWN, DOWN, SHOW],
            "1 STOP": [STOP],
            RELOAD: [(1, ""), STARTED_MGMD],
        }
    )
    with pytest.raises(NdbError) as caught:
        await restart.run("256M")
    assert host.log == [
        "SHOW",
        f"read {CONFIG}",
        f"write {CONFIG}",
        "1 STOP",
        "SHOW",
        RELOAD,  # exits 1 with the new config
        f"write {CONFIG}",
        "SHOW",  # not answering: nothing to stop
        RELOAD,
        "SHOW",
    ]
    assert caught.value.step == "start-mgmd"
    assert host.files[CONFIG] == ORIGINAL


async def test_refuses_to_start_unless_every_data_node_is_started() -> None:
    host, restart, _ = make({"SHOW": [(0, doc("show_add_node_not_connected.txt"))]})
    with pytest.raises(NdbError) as caught:
        await restart.run("256M")
    assert host.log == ["SHOW"]  # nothing read, written or restarted
    assert (caught.value.step, caught.value.node) == ("preflight", 3)
    assert "3 not connected, 4 not connected" in str(caught.value)


def test_commands_and_config_token() -> None:
    restart = NdbRollingRestart(
        ScriptedHost({}, {}, FakeTime()),  # type: ignore[arg-type]
        CONFIG,
        connect_string=CONNECT,
        mgmd_argv=("ndb_mgmd", "--config-file={config}", "--reload", "--ndb-nodeid=1"),
    )
    assert restart.mgm_command("2 STATUS") == ["ndb_mgm", "-c", CONNECT, "-e", "2 STATUS"]
    assert restart.mgmd_command() == [
        "ndb_mgmd",
        f"--config-file={CONFIG}",
        "--reload",
        "--ndb-nodeid=1",
    ]


# ---------------------------------------------------------------------------------------
# Disk page buffer hit ratio
# ---------------------------------------------------------------------------------------


def test_hit_ratio_sums_block_instances_per_node() -> None:
    rows = [(5, 90, 10), (5, 10, 0), (6, Decimal(300), Decimal(100)), (7, 0, 0)]
    assert hit_ratio_from_rows(rows) == {5: pytest.approx(100 / 110), 6: 0.75}


def test_hit_ratio_division_by_zero_has_no_value() -> None:
    assert hit_ratio_from_rows([(5, 0, 0), (6, None, None)]) == {}
    assert hit_ratio_from_rows([(5, 0, 7)]) == {5: 0.0}


def test_per_interval_hit_ratio_uses_deltas() -> None:
    prev = [(5, 1000, 100), (6, 500, 500), (7, 10, 10), (8, 10, 10)]
    cur = [(5, 1090, 110), (6, 500, 500), (7, 3, 1), (9, 5, 5), (8, 20, 10)]
    # 5: 90 / 100; 6: no requests; 7: counters went down (restart); 9: no previous sample.
    assert per_interval_hit_ratio(prev, cur) == {5: pytest.approx(0.9), 8: 1.0}


class FakeLink:
    def __init__(self, rows: list[tuple[Any, ...]]) -> None:
        self.rows = rows
        self.sql: list[str] = []

    async def query(self, sql: str, args: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
        self.sql.append(sql)
        return self.rows


async def test_diskpagebuffer_hit_ratio_queries_ndbinfo() -> None:
    link = FakeLink([(5, Decimal(975), Decimal(25)), (6, Decimal(0), Decimal(0))])
    assert await diskpagebuffer_hit_ratio(link) == {5: 0.975}
    assert link.sql == [HIT_RATIO_SQL]
    assert "GROUP BY node_id" in HIT_RATIO_SQL
    assert "SUM(page_requests_direct_return)" in HIT_RATIO_SQL
    assert "SUM(page_requests_wait_io)" in HIT_RATIO_SQL
    assert "ndbinfo.diskpagebuffer" in HIT_RATIO_SQL


async def test_waits_for_data_nodes_to_reconnect_to_the_reloaded_mgmd() -> None:
    # The recorded SHOW with node 3 in the "not connected" form print_nodes() uses.
    reconnecting = SHOW[1].replace(
        "id=3 @10.168.159.194 (mysql-5.5.29 ndb-7.2.10, Nodegroup: 0, Master)",
        "id=3 (not connected, accepting connect from 10.168.159.194)",
    )
    assert parse_show_nodes(reconnecting)[3] == "not connected"
    host, restart, steps = make(
        {
            "SHOW": [SHOW, DOWN, (0, reconnecting), SHOW],
            "1 STOP": [STOP],
            RELOAD: [STARTED_MGMD],
            "2 RESTART": [(0, doc("restart_node.txt", node=2))],
            "2 STATUS": [status("status_started.txt", 2)],
            "3 RESTART": [(0, doc("restart_node.txt", node=3))],
            "3 STATUS": [status("status_started.txt", 3)],
        }
    )
    assert await restart.run("96M") == [2, 3]
    assert host.log[3:8] == ["1 STOP", "SHOW", RELOAD, "SHOW", "SHOW"]
    assert [s for s, *_ in steps].count("wait-mgmd-up") == 1
