"""knobtop rewrites only its own drop-in: a file it did not write is refused untouched, its
own file keeps its mode and owner; on this machine and over a real sshd."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from harness.sshd import SshServer
from knobtop.hosts.base import Host
from knobtop.hosts.local import LocalHost
from knobtop.hosts.ssh import SshHost
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.server.static import (
    DROPIN_HEADER,
    RestartApplier,
    ServerNode,
    StaticChangeError,
    Step,
    parse_dropin,
    render_dropin,
)

pytestmark = pytest.mark.integration

SERVERS_MY_CNF = (
    "[client]\nsocket = /run/mysqld/mysqld.sock\n\n"
    "[mysqld]\nskip-name-resolve\ninnodb_buffer_pool_size = 1G\n\n"
    "!includedir /etc/mysql/conf.d/\n"
)
# Not the writer's own uid when the test runs as root: the rewrite must give it back.
OTHER_UID = 65534  # nobody
OTHER = 65534 if os.geteuid() == 0 else os.geteuid()


@pytest.fixture(params=["local", "ssh"])
async def host(request: pytest.FixtureRequest) -> AsyncIterator[Host]:
    if request.param == "local":
        yield LocalHost()
        return
    srv: SshServer = request.getfixturevalue("ssh_target")
    remote = SshHost(f"{srv.user}@{srv.host}:{srv.port}", client_keys=[str(srv.client_key_path)],
                     known_hosts=str(srv.known_hosts_path), config_paths=[], agent_path=None,
                     connect_timeout=5.0)
    try:
        yield remote
    finally:
        await remote.close()


def applier(host: Host, path: Path, info: ConnectionInfo, ran: Path,
            steps: list[Step]) -> RestartApplier:
    node = ServerNode(name="db", host=host, link=lambda: ServerLink(info),
                      restart_command=f"touch {ran}", dropin_path=path)
    return RestartApplier([node], on_step=steps.append, wait_timeout=20.0)


async def test_a_file_knobtop_did_not_write_is_refused_untouched(
    host: Host, tmp_path: Path, mariadb_info: ConnectionInfo
) -> None:
    my_cnf = tmp_path / "my.cnf"
    my_cnf.write_text(SERVERS_MY_CNF)
    my_cnf.chmod(0o640)
    before = os.stat(my_cnf)
    ran = tmp_path / "restarted"
    steps: list[Step] = []
    restarter = applier(host, my_cnf, mariadb_info, ran, steps)
    async with asyncio.timeout(restarter.time_limit):
        with pytest.raises(StaticChangeError) as refused:
            await restarter.apply({"innodb_doublewrite": "OFF"})
    message = str(refused.value)
    assert str(my_cnf) in message and "not knobtop's drop-in" in message
    assert "point dropin_path at a file knobtop owns" in message and "zz-knobtop.cnf" in message
    assert "nothing was changed" in message and refused.value.rolled_back
    assert my_cnf.read_text() == SERVERS_MY_CNF
    after = os.stat(my_cnf)
    assert stat.S_IMODE(after.st_mode) == 0o640 and after.st_ino == before.st_ino
    assert not ran.exists() and steps == []  # no restart, nothing journaled as done
    assert not (tmp_path / "my.cnf.prev").exists()


async def test_knobtops_own_file_is_rewritten_keeping_mode_and_owner(
    host: Host, tmp_path: Path, mariadb_info: ConnectionInfo
) -> None:
    dropin = tmp_path / "zz-knobtop.cnf"
    dropin.write_text(render_dropin({"innodb_doublewrite": "OFF", "innodb_log_file_size": "1G"}))
    dropin.chmod(0o640)
    os.chown(dropin, OTHER, OTHER)
    ran = tmp_path / "restarted"
    steps: list[Step] = []
    restarter = applier(host, dropin, mariadb_info, ran, steps)
    async with asyncio.timeout(restarter.time_limit):
        # Dropping a line needs no verify: the restart command here only leaves a mark.
        await restarter.apply({"innodb_doublewrite": None})
    text = dropin.read_text()
    assert text.startswith(DROPIN_HEADER)
    assert parse_dropin(text) == {"innodb_log_file_size": "1G"}
    after = os.stat(dropin)
    assert stat.S_IMODE(after.st_mode) == 0o640
    assert (after.st_uid, after.st_gid) == (OTHER, OTHER)
    assert ran.exists()
    assert [(s.step, s.result) for s in steps] == [
        ("write_dropin", "ok"), ("restart", "ok"), ("wait", "ok")]
    # No temp file left next to it.
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


async def test_a_dropin_reached_through_a_symlink_keeps_its_files_mode(
    host: Host, tmp_path: Path, mariadb_info: ConnectionInfo
) -> None:
    """dropin_path may be a symlink (conf.d/zz-knobtop.cnf -> a file kept elsewhere): the
    mode kept is the file's, not the link's 0777 (mysqld ignores a world-writable file)."""
    real = tmp_path / "kept" / "knobtop.cnf"
    real.parent.mkdir()
    real.write_text(render_dropin({"innodb_doublewrite": "OFF", "innodb_log_file_size": "1G"}))
    real.chmod(0o640)
    dropin = tmp_path / "zz-knobtop.cnf"
    dropin.symlink_to(real)
    ran = tmp_path / "restarted"
    steps: list[Step] = []
    restarter = applier(host, dropin, mariadb_info, ran, steps)
    async with asyncio.timeout(restarter.time_limit):
        await restarter.apply({"innodb_doublewrite": None})
    assert parse_dropin(dropin.read_text()) == {"innodb_log_file_size": "1G"}
    assert stat.S_IMODE(os.stat(dropin).st_mode) == 0o640
    assert ran.exists()


async def test_a_new_dropin_is_created_readable_by_the_server(
    tmp_path: Path, mariadb_info: ConnectionInfo
) -> None:
    dropin = tmp_path / "conf.d" / "zz-knobtop.cnf"
    dropin.parent.mkdir()
    ran = tmp_path / "restarted"
    steps: list[Step] = []
    restarter = applier(LocalHost(), dropin, mariadb_info, ran, steps)
    async with asyncio.timeout(restarter.time_limit):
        await restarter.apply({"innodb_doublewrite": None})
    assert dropin.read_text() == render_dropin({})
    assert stat.S_IMODE(os.stat(dropin).st_mode) == 0o644


# Files at dropin_path that knobtop must not rewrite (each left exactly as it was).
NOT_OURS: dict[str, bytes] = {
    "a server's my.cnf": SERVERS_MY_CNF.encode(),
    "header after a blank line": b"\n" + render_dropin({}).encode(),
    "half the header": DROPIN_HEADER[:17].encode() + b"\n[mysqld]\n",
    "settings without the header": b"[mysqld]\ninnodb_doublewrite = OFF\n",
    "binary": b"\xff\xfe\x00\x01" * 64,
    "one space": b" ",
    "header as a later line": b"# mine\n" + DROPIN_HEADER.encode(),
}


async def test_hostile_files_at_the_dropin_path_are_refused_untouched(
    host: Host, tmp_path: Path, mariadb_info: ConnectionInfo
) -> None:
    ran = tmp_path / "restarted"
    outcomes: dict[str, str] = {}
    for label, content in NOT_OURS.items():
        path = tmp_path / f"case-{len(outcomes)}.cnf"
        path.write_bytes(content)
        steps: list[Step] = []
        restarter = applier(host, path, mariadb_info, ran, steps)
        async with asyncio.timeout(restarter.time_limit):
            with pytest.raises(StaticChangeError) as refused:
                await restarter.apply({"innodb_doublewrite": "OFF"})
        assert path.read_bytes() == content, label
        assert str(path) in str(refused.value) and "not knobtop's drop-in" in str(refused.value)
        outcomes[label] = "refused" if steps == [] else f"steps {steps}"
    # A link to a server's file is judged by what it points at, and the link stays.
    target = tmp_path / "my.cnf"
    target.write_text(SERVERS_MY_CNF)
    link = tmp_path / "zz-knobtop.cnf"
    link.symlink_to(target)
    restarter = applier(host, link, mariadb_info, ran, [])
    async with asyncio.timeout(restarter.time_limit):
        with pytest.raises(StaticChangeError):
            await restarter.apply({"innodb_doublewrite": "OFF"})
    assert link.is_symlink() and target.read_text() == SERVERS_MY_CNF
    # A directory there cannot be used, and says so.
    folder = tmp_path / "conf-dir.cnf"
    folder.mkdir()
    restarter = applier(host, folder, mariadb_info, ran, [])
    async with asyncio.timeout(restarter.time_limit):
        with pytest.raises(StaticChangeError) as unusable:
            await restarter.apply({"innodb_doublewrite": "OFF"})
    assert "cannot use the drop-in" in str(unusable.value) and folder.is_dir()
    assert outcomes == dict.fromkeys(NOT_OURS, "refused") and not ran.exists()


async def test_an_empty_file_and_a_hostile_file_name_are_written_as_knobtops(
    host: Host, tmp_path: Path, mariadb_info: ConnectionInfo
) -> None:
    ran = tmp_path / "restarted"
    empty = tmp_path / "zz-knobtop.cnf"
    empty.touch(mode=0o600)
    named = tmp_path / "it's $(touch PWNED) \"x\" `touch PWNED2`.cnf"
    named.write_text(render_dropin({"innodb_log_file_size": "1G"}))
    for path in (empty, named):
        restarter = applier(host, path, mariadb_info, ran, [])
        async with asyncio.timeout(restarter.time_limit):
            await restarter.apply({"innodb_doublewrite": None})
    assert empty.read_text() == render_dropin({})
    assert stat.S_IMODE(os.stat(empty).st_mode) == 0o600  # an existing file keeps its mode
    assert parse_dropin(named.read_text()) == {"innodb_log_file_size": "1G"}
    for where in (tmp_path, Path.cwd(), Path.home()):
        assert not list(where.glob("PWNED*")), where


CHOWN_FAILS = """
import asyncio, json, sys
from pathlib import Path
from knobtop.hosts.local import LocalHost
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.server.static import RestartApplier, ServerNode, StaticChangeError

async def main() -> None:
    path = Path(sys.argv[1])
    node = ServerNode(name="db", host=LocalHost(), link=lambda: ServerLink(ConnectionInfo()),
                      restart_command=f"touch {path.parent / 'restarted'}", dropin_path=path)
    try:
        await RestartApplier([node], on_step=lambda _s: None, wait_timeout=5.0).apply(
            {"max_connections": "200"})
    except StaticChangeError as exc:
        print(json.dumps({"rolled_back": exc.rolled_back, "message": str(exc)}))

asyncio.run(main())
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to set up a file owned by another uid")
def test_a_failed_chown_after_the_write_rolls_back() -> None:
    """The new drop-in is in place but giving it back to its owner fails (a real chown
    failure: knobtop runs as uid 65534, the file belongs to 65534:0 and 65534 is not in
    group 0). That is a change that happened: it goes to the rollback, never to "nothing
    was changed" with rolled_back=True (before: the stage was still "write")."""
    work = Path(tempfile.mkdtemp(prefix="knobtop-chown-"))  # /tmp: reachable by uid 65534
    try:
        os.chown(work, OTHER_UID, OTHER_UID)
        work.chmod(0o755)
        dropin = work / "zz-knobtop.cnf"
        old = render_dropin({"max_connections": "100"})
        dropin.write_text(old)
        dropin.chmod(0o644)
        os.chown(dropin, OTHER_UID, 0)
        done = subprocess.run(
            ["setpriv", f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups",
             sys.executable, "-c", CHOWN_FAILS, str(dropin)],
            capture_output=True, text=True, timeout=60, check=False,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
        assert done.returncode == 0, done.stderr
        outcome = json.loads(done.stdout)
        message = outcome["message"]
        assert "nothing was changed" not in message
        assert "cannot give it back to 65534:0" in message
        assert "the rollback failed too" in message and str(dropin) in message
        assert outcome["rolled_back"] is False
        assert dropin.read_text() == old  # the rollback's write put the old text back
        assert not (work / "restarted").exists()  # never restarted
    finally:
        shutil.rmtree(work)
