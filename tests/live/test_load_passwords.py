"""Hostile MySQL passwords through knobtop's sysbench driver, against real sysbench and mariadbd.

sysbench reads the password from an options file (never from its command line): each
password here gets a MySQL user of its own, and a short real run must log in with it.
Passwords that file cannot hold are refused before sysbench starts, saying why.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from harness.procs import sysbench_processes
from knobtop.hosts.local import LocalHost
from knobtop.lab import Sandbox
from knobtop.load.base import LoadError, LoadExit, LoadSpec
from knobtop.load.builtin import BuiltinDriver
from knobtop.load.prepare import prepare_tables
from knobtop.load.sysbench import PASSWORD_MAX_BYTES, Sysbench
from knobtop.server.link import ConnectionInfo, ServerLink

pytestmark = pytest.mark.integration

DATABASE = "kt_passwords"
SPEC = LoadSpec(workload="oltp_point_select", threads=1, tables=1, table_size=10, duration=1)
# Each carries "Kt9" so that finding it on a command line cannot be a coincidence.
PASSABLE = {
    "space": "pass Kt9 word",
    "edge_spaces": "  Kt9 edges  ",
    "tab_cr": "Kt9\ttab\rcr",
    "comma": "Kt9,comma,",
    "hash": "Kt9#hash",
    "leading_hash": "#Kt9 leading",
    "single_quote": "Kt9'single",
    "leading_single": "'Kt9",
    "double_quote": 'Kt9"double"',
    "backslash": "Kt9\\back\\slash\\",
    "equals": "=Kt9=equals=",
    "backtick_semicolon": "Kt9`tick;$(x)",
    "mixed": "Kt9 #,=\\' ;!",
    "non_ascii": "Kt9 pässwörd ☃",
    "longest": "Kt9" + "x" * (PASSWORD_MAX_BYTES - 3),
    "longest_multibyte": "Kt9" + "é" * ((PASSWORD_MAX_BYTES - 3) // 2),
}
REFUSED = {
    "newline": ("Kt9\nmysql-host=evil", "line break"),
    "nul": ("Kt9\0nul", "NUL"),
    "both_quotes": ("Kt9'both\"", "both ' and \""),
    "too_long": ("Kt9" + "x" * (PASSWORD_MAX_BYTES - 2), "bytes long"),
    "too_long_multibyte": ("Kt9" + "é" * ((PASSWORD_MAX_BYTES - 2) // 2), "bytes long"),
    "lone_surrogate": ("Kt9\ud800", "not valid text"),
}


async def admin(info: ConnectionInfo, sql: str, args: tuple[object, ...] = ()) -> None:
    link = ServerLink(info)
    await link.connect()
    try:
        async with asyncio.timeout(30):
            await link.query(sql, args)
    finally:
        await link.close()


@pytest.fixture(scope="module")
def admin_info(mariadb: Sandbox) -> ConnectionInfo:
    info = mariadb.connection()
    driver = BuiltinDriver(info, database=DATABASE)
    asyncio.run(prepare_tables(info, driver, replace(SPEC, duration=0)))
    return info


def driver_for(mariadb: Sandbox, user: str, password: str) -> Sysbench:
    return Sysbench(LocalHost(), mysql_socket=str(mariadb.socket), user=user,
                    password=password, database=DATABASE)


@pytest.mark.parametrize("label", list(PASSABLE))
async def test_sysbench_logs_in_with_the_password(
    mariadb: Sandbox, admin_info: ConnectionInfo, sysbench_path: str, label: str
) -> None:
    password = PASSABLE[label]
    user = f"kt_pw_{label}"
    await admin(admin_info, "DROP USER IF EXISTS %s@'localhost'", (user,))
    await admin(admin_info, "CREATE USER %s@'localhost' IDENTIFIED BY %s", (user, password))
    await admin(admin_info, f"GRANT SELECT ON {DATABASE}.* TO %s@'localhost'", (user,))
    driver = driver_for(mariadb, user, password)
    exits: list[LoadExit] = []

    async def on_exit(result: LoadExit) -> None:
        exits.append(result)

    marker = f"--mysql-user={user}"
    seen: dict[int, str] = {}
    try:
        await driver.start(SPEC, lambda src, report: None, on_exit)
        deadline = time.monotonic() + 30
        while not exits:  # the 1 s run ends by itself; look at its command line meanwhile
            assert time.monotonic() < deadline, "sysbench did not finish within 30 s"
            seen.update(sysbench_processes(marker))
            await asyncio.sleep(0.02)
    finally:
        await driver.stop()
        await admin(admin_info, "DROP USER IF EXISTS %s@'localhost'", (user,))
    (result,) = exits
    assert result.error == "" and result.returncode == 0, result.error
    assert result.summary is not None and result.summary.transactions > 0
    assert seen, "sysbench was seen running"
    for cmdline in seen.values():
        assert "--config-file=" in cmdline
        assert "Kt9" not in cmdline and password not in cmdline


@pytest.mark.parametrize("label", list(REFUSED))
async def test_a_password_sysbench_cannot_read_is_refused_before_it_starts(
    mariadb: Sandbox, sysbench_path: str, label: str
) -> None:
    password, says = REFUSED[label]
    user = f"kt_pw_{label}"
    driver = driver_for(mariadb, user, password)
    for attempt in (driver.check_installed(), driver.prepare(SPEC), driver.cleanup(SPEC),
                    driver.start(SPEC, lambda src, report: None, lambda result: asyncio.sleep(0))):
        with pytest.raises(LoadError) as err:
            await attempt
        message = str(err.value)
        assert message.startswith("sysbench cannot be given this MySQL password: ")
        assert says in message
        assert password not in message and "Kt9" not in message
    assert not driver.running
    assert not sysbench_processes(f"--mysql-user={user}")


def test_knobtop_connect_refuses_the_password_before_any_load(
    mariadb: Sandbox, admin_info: ConnectionInfo, sysbench_path: str, tmp_path: Path
) -> None:
    """The whole command: a message naming the reason, no traceback, no sysbench run."""
    password, says = REFUSED["both_quotes"]
    user = "kt_pw_cli"
    asyncio.run(admin(admin_info, "DROP USER IF EXISTS %s@'localhost'", (user,)))
    asyncio.run(admin(admin_info, "CREATE USER %s@'localhost' IDENTIFIED BY %s",
                      (user, password)))
    asyncio.run(admin(admin_info, f"GRANT SELECT ON {DATABASE}.* TO %s@'localhost'", (user,)))
    profile = tmp_path / "p.toml"
    profile.write_text(
        f'[target]\n[target.mysql]\nsocket = "{mariadb.socket}"\nuser = "{user}"\n'
        'password = { env = "KT_PW" }\n[[client]]\nname = "here"\n'
    )
    journal = tmp_path / "p.knobtop.jsonl"
    env = {**os.environ, "KT_PW": password, "HOME": str(tmp_path)}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "knobtop", "connect", str(profile), "--headless",
             "--duration", "5", "--journal", str(journal), "--load", "oltp_point_select",
             "--threads", "1", "--tables", "1", "--table-size", "10"],
            env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60,
        )
    finally:
        asyncio.run(admin(admin_info, "DROP USER IF EXISTS %s@'localhost'", (user,)))
    output = done.stdout + done.stderr
    assert done.returncode != 0, output
    assert "sysbench cannot be given this MySQL password" in output and says in output
    assert "Traceback" not in output and "Kt9" not in output
    assert not journal.exists()  # refused before the session began
    assert not sysbench_processes(f"--mysql-user={user}")
