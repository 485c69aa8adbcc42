"""A load's sysbench options cannot reach further than the workload (issue 36, reproduction 2).

sysbench 1.0.20 reads ``-`` and ``_`` alike in option names and takes the last of an option
given twice, so a recipe's ``options = { mysql_socket = ... }`` used to send the lab's
password to whatever listened there.  Here a fake MySQL server on a unix socket (and a
loopback port) asks for the password in clear text: every hostile spelling sysbench really
takes is shown to reach it on the old command line, then to reach nothing through
``LoadSpec.check``, the driver's commands, a recipe file and ``knobtop run --lab``; and
knobtop's own arguments, placed after the workload's options, keep a real sysbench on the
real server even when the options are not checked at all.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.fake_mysql import FakeMysql
from knobtop.hosts.local import LocalHost
from knobtop.lab import Sandbox
from knobtop.load.base import BUILTIN_ONLY, WORKLOADS, LoadError, LoadExit, LoadSpec, OptionRefused
from knobtop.load.sysbench import Sysbench, password_option
from knobtop.load.sysbench_options import (
    FILENAME,
    GENERAL_OPTIONS,
    INTEGER,
    NUMBER,
    OLTP_OPTIONS,
    RESERVED,
    SYSBENCH_VERSION,
    WORKLOAD_OPTIONS,
    declared_options,
    listed_options,
    normal,
    refusal,
)
from knobtop.recipes.model import RecipeError
from knobtop.recipes.reader import load_recipe
from knobtop.server.link import ConnectionInfo, ServerLink

pytestmark = pytest.mark.integration

DATABASE = "kt_sysbench_options"
SPEC = LoadSpec(workload="oltp_point_select", threads=2, tables=1, table_size=10, duration=1)
RUN_EXTRA = ("--threads=2", "--time=1", "--report-interval=1", "--percentile=95",
             "--rand-type=uniform", "--db-ps-mode=auto")
SOCK, PORT, EVIL_CFG = "{sock}", "{port}", "{cfg}"  # filled in with the fake server's own

# Spellings sysbench 1.0.20 takes as its connection options (each reaches the fake server
# on the old command line: test_each_hostile_spelling_reached_the_fake_server_before).
HOSTILE: dict[str, tuple[tuple[str, str], ...]] = {
    "mysql_socket": (("mysql_socket", SOCK),),
    "mysql-socket": (("mysql-socket", SOCK),),
    "mysql_host+mysql_port": (("mysql_host", "127.0.0.1"), ("mysql_port", PORT)),
    "mysql-host+mysql-port": (("mysql-host", "127.0.0.1"), ("mysql-port", PORT)),
    "mysql_socket+mysql_user": (("mysql_socket", SOCK), ("mysql_user", "evil")),
    "mysql_socket+mysql_password": (("mysql_socket", SOCK), ("mysql_password", "evil")),
    "config_file": (("config_file", EVIL_CFG),),
    "config-file": (("config-file", EVIL_CFG),),
    "db_driver+mysql_socket": (("db_driver", "mysql"), ("mysql_socket", SOCK)),
}
# Spellings sysbench does not take (case matters, names match whole): it refuses them
# itself, and so does knobtop.
NOT_TAKEN: dict[str, tuple[tuple[str, str], ...]] = {
    "MYSQL_SOCKET": (("MYSQL_SOCKET", SOCK),),
    "Mysql-Socket": (("Mysql-Socket", SOCK),),
    "mysql_sock": (("mysql_sock", SOCK),),
}


@pytest.fixture
def fake() -> Iterator[FakeMysql]:
    # a short path: a unix socket's must fit in 108 bytes
    with tempfile.TemporaryDirectory(prefix="kt-fake-") as where, \
            FakeMysql(Path(where) / "mysql.sock") as server:
        cfg = Path(where) / "evil.cfg"
        cfg.write_text(f"mysql-socket={server.socket}\n")
        yield server


def filled(options: tuple[tuple[str, str], ...], fake: FakeMysql) -> tuple[tuple[str, str], ...]:
    cfg = str(fake.socket.parent / "evil.cfg")
    return tuple((k, v.replace(SOCK, str(fake.socket)).replace(PORT, str(fake.port))
                  .replace(EVIL_CFG, cfg)) for k, v in options)


@pytest.fixture(scope="module")
def lab(mariadb: Sandbox, sysbench_path: str) -> ConnectionInfo:
    info = mariadb.connection()

    async def create() -> None:
        link = ServerLink(info)
        await link.connect()
        try:
            await link.query(f"CREATE DATABASE IF NOT EXISTS {DATABASE}")
        finally:
            await link.close()

    asyncio.run(create())
    assert info.password, "the lab has a password to steal"
    return info


def tcp_driver(info: ConnectionInfo, binary: str = "sysbench") -> Sysbench:
    return Sysbench(LocalHost(), mysql_host="127.0.0.1", mysql_port=info.port, user=info.user,
                    password=info.password, database=DATABASE, binary=binary)


def socket_driver(mariadb: Sandbox, info: ConnectionInfo) -> Sysbench:
    return Sysbench(LocalHost(), mysql_socket=str(mariadb.socket), user=info.user,
                    password=info.password, database=DATABASE)


def password_file(tmp_path: Path, password: str) -> Path:
    path = tmp_path / "pw.cfg"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(password_option(password))
    return path


def logging_sysbench(tmp_path: Path) -> tuple[Path, Path]:
    """A sysbench that writes each command line it is given to a log, then runs the real one."""
    log, wrapper = tmp_path / "sysbench.log", tmp_path / "sysbench"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {log}\nexec /usr/bin/sysbench "$@"\n')
    wrapper.chmod(0o700)
    return wrapper, log


# ---------------------------------------------------------------- the spellings are real


@pytest.mark.parametrize("label", list(HOSTILE))
def test_each_hostile_spelling_reached_the_fake_server_before(
    lab: ConnectionInfo, fake: FakeMysql, tmp_path: Path, label: str
) -> None:
    """The old command line (the options after knobtop's own) against the real sysbench:
    each spelling takes the connection to the fake server, the lab's password with it
    unless the option set another. This is what the refusals below stop."""
    options = filled(HOSTILE[label], fake)
    driver = tcp_driver(lab)
    own = driver.argv(SPEC, "run", *RUN_EXTRA,
                      config=str(password_file(tmp_path, lab.password)))
    old = [*own[:-1], *LoadSpec(options=options).option_args(), "run"]
    done = subprocess.run(old, capture_output=True, text=True, timeout=60)
    assert fake.connections >= 1, done.stdout + done.stderr
    if "mysql_password" not in label:
        assert fake.saw(lab.password), "the fake server got the lab's password in clear"


@pytest.mark.parametrize("label", list(NOT_TAKEN))
def test_sysbench_itself_refuses_other_cases_and_abbreviations(
    lab: ConnectionInfo, fake: FakeMysql, tmp_path: Path, label: str
) -> None:
    options = filled(NOT_TAKEN[label], fake)
    driver = tcp_driver(lab)
    own = driver.argv(SPEC, "run", *RUN_EXTRA,
                      config=str(password_file(tmp_path, lab.password)))
    old = [*own[:-1], *LoadSpec(options=options).option_args(), "run"]
    done = subprocess.run(old, capture_output=True, text=True, timeout=60)
    assert "invalid option" in done.stderr and done.returncode != 0
    assert fake.connections == 0
    with pytest.raises(OptionRefused):
        dataclasses.replace(SPEC, options=options).check()


# ---------------------------------------------------------------- refused before anything runs


@pytest.mark.parametrize("label", list(HOSTILE) + list(NOT_TAKEN))
async def test_no_hostile_option_reaches_a_server_through_the_driver(
    lab: ConnectionInfo, fake: FakeMysql, tmp_path: Path, label: str
) -> None:
    options = filled({**HOSTILE, **NOT_TAKEN}[label], fake)
    spec = dataclasses.replace(SPEC, options=options)
    with pytest.raises(OptionRefused) as refused:
        spec.check()
    assert f"'{options[0][0]}'" in str(refused.value), "the refusal names the option"
    assert "in the load's options" in str(refused.value), "and where it came from"
    wrapper, log = logging_sysbench(tmp_path)
    driver = tcp_driver(lab, binary=str(wrapper))
    exits: list[LoadExit] = []

    async def on_exit(result: LoadExit) -> None:
        exits.append(result)

    with pytest.raises(OptionRefused):
        await driver.start(spec, lambda src, report: None, on_exit)
    with pytest.raises(OptionRefused):
        await driver.prepare(spec)
    with pytest.raises(OptionRefused):
        await driver.cleanup(spec)
    assert fake.connections == 0 and not fake.received
    ran = log.read_text().splitlines() if log.exists() else []
    assert all(line == "--version" for line in ran), f"sysbench ran: {ran}"
    assert not exits


def recipe(tmp_path: Path, options: tuple[tuple[str, str], ...], *, in_arm: bool = False) -> Path:
    table = "{ " + ", ".join(f'"{k}" = "{v}"' for k, v in options) + " }"
    path = tmp_path / "hostile.toml"
    path.write_text(
        'name = "hostile"\ndescription = "options from someone else"\n'
        '[load]\nworkload = "oltp_point_select"\nthreads = 2\nduration = 5\ntables = 1\n'
        f'table_size = 10\n{"" if in_arm else f"options = {table}"}\n'
        '[[arm]]\nname = "A"\nknobs = { sort_buffer_size = "256K" }\n'
        f'[[arm]]\nname = "B"\nknobs = {{ sort_buffer_size = "2M" }}\n'
        f'{f"load = {{ options = {table} }}" if in_arm else ""}\n')
    return path


@pytest.mark.parametrize("in_arm", [False, True], ids=["load", "arm"])
@pytest.mark.parametrize("label", list(HOSTILE))
def test_a_recipe_with_a_hostile_option_is_refused_naming_file_key_and_fix(
    fake: FakeMysql, tmp_path: Path, label: str, in_arm: bool
) -> None:
    options = filled(HOSTILE[label], fake)
    path = recipe(tmp_path, options, in_arm=in_arm)
    with pytest.raises(RecipeError) as refused:
        load_recipe(path)
    err = refused.value
    where = "arm[1].load.options" if in_arm else "load.options"
    assert err.file == str(path) and err.key == f"{where}.{options[0][0]}"
    assert f"'{options[0][0]}'" in err.problem
    assert err.fix and str(err).endswith(f"fix: {err.fix}")
    if normal(options[0][0]) in RESERVED:
        assert err.fix == RESERVED[normal(options[0][0])].fix
    assert fake.connections == 0


@pytest.mark.parametrize(("label", "in_arm"), [("mysql_socket", False), ("config_file", True)])
def test_knobtop_run_refuses_the_recipe_before_starting_anything(
    fake: FakeMysql, tmp_path: Path, label: str, in_arm: bool
) -> None:
    options = filled(HOSTILE[label], fake)
    path = recipe(tmp_path, options, in_arm=in_arm)
    lab_dir = tmp_path / "lab"
    done = subprocess.run(
        [sys.executable, "-m", "knobtop.cli", "run", str(path), "--lab", "--dir", str(lab_dir)],
        capture_output=True, text=True, timeout=120,
    )
    out = done.stdout + done.stderr
    assert done.returncode != 0, out
    assert "Traceback" not in out
    key = f"{'arm[1].load' if in_arm else 'load'}.options.{options[0][0]}"
    assert f"{path}: {key}: sysbench option '{options[0][0]}'" in out
    assert "fix: " in out
    assert not lab_dir.exists(), "no sandbox was made"
    assert fake.connections == 0


# ---------------------------------------------------------------- knobtop's arguments go last


def test_knobtop_arguments_come_after_every_workload_option() -> None:
    options = (("point_selects", "1"), ("mysql_socket", "/tmp/evil.sock"),
               ("config-file", "/tmp/evil.cfg"), ("max_time", "99"))
    spec = dataclasses.replace(SPEC, options=options, engine="InnoDB")  # never checked
    for driver in (Sysbench(LocalHost(), mysql_socket="/tmp/x.sock", password="pw"),
                   Sysbench(LocalHost(), mysql_host="db", mysql_port=3307, password="pw")):
        for command, extra in (("prepare", ("--threads=1",)), ("run", RUN_EXTRA),
                               ("cleanup", ())):
            argv = driver.argv(spec, command, *extra, config="/tmp/pw.cfg")
            n = len(options)
            assert argv[:2] == ["sysbench", "oltp_point_select"]
            assert argv[2:2 + n] == spec.option_args()
            own = argv[2 + n:]
            assert own[-1] == command and own[-1 - len(extra):-1] == list(extra)
            assert own[0] == "--config-file=/tmp/pw.cfg"
            assert "--db-driver=mysql" in own and "--mysql-user=root" in own
            assert "--mysql-db=sbtest" in own and "--tables=1" in own
            assert "--mysql-storage-engine=InnoDB" in own
            assert {"--num-threads=1", "--max-time=0", "--max-requests=0",
                    "--tx-rate=0"} <= set(own)
            if driver._address[2]:
                assert "--mysql-socket=/tmp/x.sock" in own
            else:  # by TCP the socket list is emptied, so no earlier socket wins
                assert {"--mysql-host=db", "--mysql-port=3307", "--mysql-socket="} <= set(own)


@pytest.mark.parametrize("by", ["tcp", "socket"])
def test_unchecked_options_still_leave_sysbench_on_the_real_server(
    mariadb: Sandbox, lab: ConnectionInfo, fake: FakeMysql, tmp_path: Path, by: str
) -> None:
    """Every command, with every hostile option at once and no check at all: knobtop's
    arguments, after them, keep the connection, the password and the run its own."""
    hostile = filled(tuple(kv for opts in HOSTILE.values() for kv in opts
                           if kv[0] not in ("mysql_password",)), fake)
    hostile += (("mysql_password", "evil"), ("mysql-db", "evil"), ("num_threads", "7"),
                ("max_time", "60"), ("max_requests", "5"), ("tx_rate", "1"))
    spec = dataclasses.replace(SPEC, options=hostile)
    driver = tcp_driver(lab) if by == "tcp" else socket_driver(mariadb, lab)
    config = str(password_file(tmp_path, lab.password))
    for command, extra in (("prepare", ("--threads=1",)), ("run", RUN_EXTRA),
                           ("cleanup", ())):
        done = subprocess.run(driver.argv(spec, command, *extra, config=config),
                              capture_output=True, text=True, timeout=120)
        out = done.stdout + done.stderr
        assert done.returncode == 0, f"{command}: {out[-2000:]}"
        if command == "run":
            assert "Number of threads: 2" in out
            assert "Target transaction rate" not in out
            total = re.search(r"total time:\s+([\d.]+)s", out)
            assert total and float(total.group(1)) < 10, out[-2000:]
            assert re.search(r"transactions:\s+[1-9]", out), out[-2000:]
        assert fake.connections == 0, f"{command} reached the fake server"
    assert not fake.saw(lab.password)


# ---------------------------------------------------------------- the allow-list


def test_the_installed_sysbench_is_the_one_the_table_describes(sysbench_path: str) -> None:
    done = subprocess.run(["sysbench", "--version"], capture_output=True, text=True, timeout=30)
    assert done.stdout.split()[:2] == ["sysbench", SYSBENCH_VERSION], (
        "another sysbench: check load/sysbench_options.py's tables against it")


@pytest.mark.parametrize("workload", [w for w in WORKLOADS if w not in BUILTIN_ONLY])
def test_the_allow_list_is_what_the_installed_script_takes(
    sysbench_path: str, workload: str
) -> None:
    done = subprocess.run(["sysbench", workload, "help"], capture_output=True, text=True,
                          timeout=30)
    declared = declared_options(done.stdout, workload)
    assert declared, done.stdout + done.stderr
    allowed = WORKLOAD_OPTIONS[workload]
    for name, kind in allowed.items():
        if name in GENERAL_OPTIONS:
            continue
        assert name in declared, f"{workload} does not take {name}"
        assert declared[name] == kind, f"{workload} --{name}: {declared[name]}, not {kind}"
    # every option the script declares is decided: allowed, or refused with its reason
    undecided = set(declared) - set(allowed) - set(RESERVED)
    assert not undecided, f"decide on {workload}'s {sorted(undecided)}"
    assert set(allowed) - set(GENERAL_OPTIONS) == set(OLTP_OPTIONS)


def test_every_option_sysbench_takes_itself_is_refused_or_allowed_on_purpose(
    sysbench_path: str
) -> None:
    done = subprocess.run(["sysbench", "--help"], capture_output=True, text=True, timeout=30)
    listed = listed_options(done.stdout)
    assert "mysql_socket" in listed and "config_file" in listed, done.stdout
    assert set(listed) <= set(RESERVED) | set(GENERAL_OPTIONS), (
        f"decide on {sorted(set(listed) - set(RESERVED) - set(GENERAL_OPTIONS))}")
    for name, kind in GENERAL_OPTIONS.items():
        assert listed.get(name) == (NUMBER if kind == INTEGER else kind), name
    oltp = declared_options(subprocess.run(["sysbench", "oltp_read_write", "help"],
                                           capture_output=True, text=True,
                                           timeout=30).stdout, "oltp_read_write") or {}
    made_up = set(RESERVED) - set(listed) - set(oltp) - {"test"}  # --test= is parsed apart
    assert not made_up, f"rows for options sysbench does not have: {sorted(made_up)}"
    for name in RESERVED:
        assert refusal("oltp_read_write", name.replace("_", "-"), "1") is not None, name


@pytest.mark.parametrize(("name", "value", "says"), [
    ("threads", "8", "set threads in [load], not in options"),
    ("num-threads", "8", "set threads in [load], not in options"),
    ("time", "10", "set duration in [load]"),
    ("max_time", "10", "set duration in [load]"),
    ("events", "10", "set duration in [load]"),
    ("tx_rate", "10", "set rate in [load]"),
    ("rand-type", "pareto", "set rand_type in [load]"),
    ("percentile", "99", "set percentile in [load]"),
    ("db-ps-mode", "disable", "set prepared in [load]"),
    ("tables", "8", "set tables in [load]"),
    ("table-size", "8", "set table_size in [load]"),
    ("mysql_storage_engine", "rocksdb", "set engine in [load]"),
    ("test", "/tmp/evil.lua", "set workload in [load]"),
    ("debug", "on", "the password too"),
    ("mysql-debug", "on", "the password too"),
    ("report_interval", "10", "which knobtop reads"),
    ("mysql_ssl_ca", "/tmp/ca.pem", "database driver"),  # a driver option of sysbench 1.1
    ("pgsql-host", "db", "knobtop connects sysbench to the server itself"),
    ("point_select", "1", "did you mean point_selects?"),
    ("skip_trx", "maybe", "give on or off"),
    ("range_size", "ten", "give a number"),
    ("rand_seed", "1.5", "give a whole number"),
])
def test_refusals_name_the_option_and_the_fix(name: str, value: str, says: str) -> None:
    with pytest.raises(OptionRefused) as refused:
        dataclasses.replace(SPEC, workload="oltp_read_write", options=((name, value),)).check()
    assert name in refused.value.problem and says in str(refused.value)


def test_the_workload_own_options_and_the_random_number_ones_pass() -> None:
    options = (("point-selects", "1"), ("skip_trx", "on"), ("range_size", "5"),
               ("rand_seed", "42"), ("rand-spec-pct", "5"), ("rand_pareto_h", "0.3"))
    dataclasses.replace(SPEC, options=options).check()
    with pytest.raises(OptionRefused, match="one option to sysbench"):
        dataclasses.replace(SPEC, options=(("point_selects", "1"),
                                           ("point-selects", "9"))).check()
    # LinkBench (the built-in driver's) takes its ops, and nothing of sysbench's
    dataclasses.replace(SPEC, workload="linkbench", table_size=100,
                        options=(("ops", "getnode"),)).check()
    with pytest.raises(OptionRefused, match="not an option of LinkBench"):
        dataclasses.replace(SPEC, workload="linkbench", table_size=100,
                            options=(("rand_seed", "1"),)).check()


# ---------------------------------------------------------------- a script of one's own

SCRIPT = """\
sysbench.cmdline.options = {
   tables = {"tables", 1},
   table_size = {"rows", 10},
   rows_per_event = {"rows per event", 1},
   label = {"a label", "x"},
   mysql_socket = {"a name sysbench takes first", ""},
   more = {"an options file", nil, sysbench.cmdline.ARG_FILE},
}

function thread_init()
   con = sysbench.sql.driver():connect()
end

function event()
   for i = 1, sysbench.opt.rows_per_event do
      con:query("SELECT 1")
   end
end

function thread_done()
   con:disconnect()
end
"""


def custom(tmp_path: Path, body: str = SCRIPT) -> str:
    path = tmp_path / "mine.lua"
    path.write_text(body)
    return str(path)


async def test_a_custom_script_takes_what_it_declares_and_nothing_else(
    lab: ConnectionInfo, fake: FakeMysql, tmp_path: Path
) -> None:
    script = custom(tmp_path)
    wrapper, log = logging_sysbench(tmp_path)
    driver = tcp_driver(lab, binary=str(wrapper))
    mine = dataclasses.replace(SPEC, workload=script, options=(("rows_per_event", "3"),
                                                               ("label", "y"),
                                                               ("rand_seed", "7")))
    mine.check()
    await driver.check_options(mine)  # what it declares, and the random-number ones
    cases = {
        "undeclared": (("foo", "1"), "is not one"),
        "close": (("rows_per_events", "1"), "did you mean rows_per_event?"),
        "file": (("more", "/tmp/x.cfg"), "names a file sysbench would read"),
        "shadowed": (("mysql-socket", str(fake.socket)), "knobtop connects sysbench"),
        "count": (("rows_per_event", "many"), "give a number"),
    }
    exits: list[LoadExit] = []
    ended = asyncio.Event()

    async def on_exit(result: LoadExit) -> None:
        exits.append(result)
        ended.set()

    for label, ((name, value), says) in cases.items():
        spec = dataclasses.replace(mine, options=((name, value),))
        with pytest.raises(OptionRefused) as refused:
            await driver.check_options(spec)
        assert says in str(refused.value) and name in refused.value.problem, (
            label, str(refused.value))
        with pytest.raises(OptionRefused):
            await driver.start(spec, lambda src, report: None, on_exit)
        assert not exits
    ran = log.read_text().splitlines()
    assert all(line in ("--version", f"{script} help", "--help") for line in ran), ran
    assert fake.connections == 0
    # the one with its declared options runs on the real server
    await driver.start(mine, lambda src, report: None, on_exit)
    try:
        async with asyncio.timeout(60):
            await ended.wait()  # the 1 s run ends by itself
    finally:
        await driver.stop()
    (result,) = exits
    assert result.returncode == 0 and result.error == "", result.error
    assert result.summary is not None and result.summary.queries >= 3
    assert fake.connections == 0


async def test_a_custom_script_that_declares_nothing_takes_nothing(
    lab: ConnectionInfo, tmp_path: Path
) -> None:
    script = custom(tmp_path, "function event()\nend\n")
    driver = tcp_driver(lab)
    spec = dataclasses.replace(SPEC, workload=script, options=(("rows", "1"),))
    spec.check()  # a name no script is refused for: the script is on the client host
    with pytest.raises(OptionRefused, match=r"is not one .*mine\.lua declares"):
        await driver.check_options(spec)
    broken = custom(tmp_path, "this is not lua\n")
    with pytest.raises(LoadError, match=r"cannot list the options of .*mine\.lua"):
        await driver.check_options(dataclasses.replace(spec, workload=broken))


def test_a_declared_option_sysbench_takes_itself_is_refused() -> None:
    """Another sysbench (1.1 has --warmup-time) lists more of its own: those come from
    the client host's ``sysbench --help`` and win over what the script declares."""
    declared = {"warmup_time": NUMBER, "rows": NUMBER, "extra": FILENAME}
    why = refusal("/x/mine.lua", "warmup-time", "5", declared=declared, own=["warmup-time"])
    assert why is not None and "sysbench's own" in why.problem
    assert refusal("/x/mine.lua", "rows", "5", declared=declared, own=["warmup-time"]) is None
    assert refusal("/x/mine.lua", "extra", "/f", declared=declared) is not None


def test_a_refused_option_value_is_never_quoted() -> None:
    """A password given as an option is refused by its name, without quoting it."""
    for name in ("mysql_password", "pgsql-password", "mysql_pass"):
        spec = dataclasses.replace(SPEC, options=((name, "Kt9 secret!"),))
        with pytest.raises(OptionRefused) as refused:
            spec.check()
        assert "Kt9" not in str(refused.value)
