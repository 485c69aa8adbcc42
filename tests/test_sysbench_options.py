"""A load's sysbench options cannot reach further than the workload (issue 36, reproduction 2).

sysbench 1.0.20 reads ``-`` and ``_`` alike in option names and takes the last of an option
given twice, so a recipe's ``options = { mysql_socket = ... }`` used to send the lab's
password to whatever listened there.  Here a fake MySQL server on a unix socket (and a
loopback port) asks for the password in clear text: every hostile spelling sysbench really
takes is shown to reach it on the old command line; knobtop's own arguments, placed after
the workload's options, keep a real sysbench on the real server even when the options are
not checked at all.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import re
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from harness.fake_mysql import FakeMysql
from knobtop.hosts.local import LocalHost
from knobtop.lab import Sandbox
from knobtop.load.base import LoadSpec
from knobtop.load.sysbench import Sysbench, password_option
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


