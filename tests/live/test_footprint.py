"""The server's own footprint (issue 18 part 2) read from a real sandbox mariadbd, on this
host and over a real SSH connection to it: the process is the sandbox's, the device is the
one its datadir is on, and the numbers agree with what this test reads itself."""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import psutil
import pytest

from harness.procs import device_of
from harness.sshd import SshServer, make_host
from knobtop.hosts.base import Host
from knobtop.hosts.local import LocalHost
from knobtop.lab import Sandbox
from knobtop.safefile import private_cwd
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.session.footprint import FootprintProbe, host_script, locate_script

pytestmark = pytest.mark.integration


def apparent_size(root: Path) -> int:
    """``du -sb``'s figure as Python counts it: every file's and directory's size once."""
    total, seen = os.lstat(root).st_size, set()
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            st = os.lstat(os.path.join(folder, name))
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_size
    return total


async def run_sql(info: ConnectionInfo, *statements: str) -> None:
    link = ServerLink(info)
    await link.connect()
    try:
        for sql in statements:
            await link.query(sql)
    finally:
        await link.close()


@pytest.mark.parametrize("where", ["local", "ssh"])
async def test_the_footprint_is_the_sandboxes_mysqld_and_datadir_device(
    mariadb: Sandbox, mariadb_info: ConnectionInfo, sshd_server: SshServer, where: str
) -> None:
    host: Host = LocalHost() if where == "local" else make_host(sshd_server)
    probe = FootprintProbe(host, lambda: ServerLink(mariadb_info), time.monotonic)
    mysqld = psutil.Process(int(mariadb.pid_file.read_text()))
    try:
        before_cpu = sum(mysqld.cpu_times()[:2])
        first = await probe.read(sizes=False)
        await run_sql(mariadb_info, "DROP DATABASE IF EXISTS fp_test",
                      "CREATE DATABASE fp_test",
                      "CREATE TABLE fp_test.t (id INT PRIMARY KEY, pad CHAR(200)) "
                      "ENGINE=InnoDB",
                      "INSERT INTO fp_test.t SELECT seq, REPEAT('x', 200) "
                      "FROM fp_test.seq_1_to_20000")
        last = await probe.read(sizes=True)
        after_cpu = sum(mysqld.cpu_times()[:2])
        on_disk = apparent_size(mariadb.datadir)
        # The load's own databases alone (an arm's tables, not every arm's)
        own = (await probe.read(sizes=True, schemas=["fp_test"])).db_bytes
        none = (await probe.read(sizes=True, schemas=["fp_no_such_db"])).db_bytes
    finally:
        await run_sql(mariadb_info, "DROP DATABASE IF EXISTS fp_test")
        await host.close()
    assert first.problem == last.problem == ""
    assert first.pid == last.pid == mysqld.pid
    assert first.disk == last.disk == device_of(mariadb.datadir) != ""
    assert first.cpu is not None and last.cpu is not None
    # /proc's ticks are 10 ms: mysqld's CPU as psutil reads it brackets the probe's.
    assert before_cpu - 0.01 <= first.cpu <= last.cpu <= after_cpu + 0.01
    assert last.cpu > first.cpu  # 20,000 rows inserted in between
    assert first.io is not None and last.io is not None
    assert last.io[3] > first.io[3]  # the redo log reached the datadir's device
    assert last.rss == pytest.approx(mysqld.memory_info().rss, rel=0.1)
    assert last.db_bytes is not None and last.db_bytes >= 20000 * 200  # the table's pages
    assert own is not None and 20000 * 200 <= own <= last.db_bytes and none == 0
    assert last.datadir_bytes == pytest.approx(on_disk, rel=0.02)


async def test_a_pid_file_holding_paths_makes_cat_read_nothing_else(
        tmp_path: Path, mariadb: Sandbox) -> None:
    """Issue 36: the pid file's text was put unquoted into ``cat /proc/$pid/stat``: a pid
    file holding ``1 /path/secret /`` made cat read /path/secret. And a datadir whose name
    starts with ``-`` was taken by ``du`` and ``stat`` as an option."""
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-CONTENT-1234\n")
    pid_file = tmp_path / "hostile.pid"
    pid_file.write_text(f"1 {secret} /\n")
    # the datadir as "-data" (it starts with "-"), in the directory LocalHost's commands run
    # in (a private one of this process's own, so nothing planted elsewhere is run)
    datadir = Path(private_cwd()) / "-data"
    shutil.rmtree(datadir, ignore_errors=True)
    datadir.mkdir()
    (datadir / "ibdata1").write_bytes(b"x" * 100_000)
    host = LocalHost()
    probe = FootprintProbe(host, lambda: ServerLink(mariadb.connection()), time.monotonic)

    located = await host.run(["sh", "-c", locate_script("-data")])
    assert located.returncode == 0, located.stderr
    assert located.stdout.split()[1] == str(os.stat(datadir).st_dev)

    raw = await host.run(["sh", "-c", host_script("-data", str(pid_file), True)])
    assert "SECRET-CONTENT" not in raw.stdout + raw.stderr
    fp = await probe._read_host(1.0, ("-data", str(pid_file), 0, 0), sizes=True)
    assert "SECRET-CONTENT" not in fp.problem
    assert f"the pid file {pid_file} does not hold a process id" in fp.problem
    assert fp.pid is None and fp.cpu is None
    assert fp.datadir_bytes == pytest.approx(apparent_size(datadir), rel=0.02)

    # The sandbox's own pid file still names its mysqld through the same script.
    own = await probe._read_host(1.0, (str(mariadb.datadir), str(mariadb.pid_file), 0, 0),
                                 sizes=False)
    assert own.pid == int(mariadb.pid_file.read_text())
