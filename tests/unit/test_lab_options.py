"""Sandboxes side by side (issue 19 part 2): `--name` gives each its own directory, and
`--option KEY=VALUE` its own base my.cnf lines, checked for mariadbd's option reader."""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import show_global
from harness.binaries import require_binary
from knobtop.lab import (
    LabError,
    Sandbox,
    configured_options,
    default_lab_dir,
    lab_dir_for,
    parse_option,
)


@pytest.mark.parametrize(("text", "says"), [
    ("innodb_flush_log_at_trx_commit", "write KEY=VALUE"),
    ("Bad Key=1", "not a server option name"),
    ("socket=/tmp/x.sock", "socket opens or moves the server's network listeners"),
    ("innodb_flush_method=O_DIRECT #x", "give a plain value"),
    ("sql_mode='ANSI'", "give a plain value"),
    ("init_file=/tmp/x\nskip-grant-tables", "give a plain value"),
])
def test_a_base_option_mariadbd_would_misread_is_refused(text: str, says: str) -> None:
    with pytest.raises(LabError, match=says):
        parse_option(text)


def test_names_and_written_options(tmp_path: Path) -> None:
    assert parse_option(" innodb_buffer_pool_size = 256M ") == ("innodb_buffer_pool_size",
                                                                 "256M")
    assert lab_dir_for(None, None) == default_lab_dir()
    # a named sandbox lives inside its lab's directory (issue 36), also with --dir
    assert lab_dir_for("trx2", None) == default_lab_dir() / "labs" / "trx2"
    assert lab_dir_for(None, tmp_path) == tmp_path
    assert lab_dir_for("trx2", tmp_path) == tmp_path / "labs" / "trx2"
    with pytest.raises(LabError, match="up to 32 letters"):
        lab_dir_for("../etc", None)


def restart(root: Path) -> None:
    """The lab's restart command, as a static knob change runs it."""
    subprocess.run([sys.executable, "-m", "knobtop.lab", "restart", str(root)], check=True,
                   capture_output=True, timeout=120)


@pytest.mark.integration
async def test_two_sandboxes_side_by_side_with_their_own_base_config(tmp_path: Path) -> None:
    require_binary("mariadbd", "mariadb-server")
    one = Sandbox(tmp_path / "one")
    two = Sandbox(tmp_path / "two", options=(("innodb_flush_log_at_trx_commit", "2"),
                                             ("innodb_buffer_pool_size", "64M")))
    info_one, info_two = one.start(), two.start()
    try:
        assert configured_options(two.config) == two.options
        assert configured_options(one.config) == ()
        assert Sandbox.existing(two.root).options == two.options  # restarts keep them
        assert info_one.port != info_two.port
        assert await show_global(info_one, "innodb_flush_log_at_trx_commit") == "1"
        assert await show_global(info_two, "innodb_flush_log_at_trx_commit") == "2"
        # an option replaces the lab's default (128M) instead of coming second
        assert "innodb_buffer_pool_size=128M" not in two.config.read_text()
        assert await show_global(info_two, "innodb_buffer_pool_size") == str(64 << 20)
        # the lab's restart command (static knobs) keeps the sandbox's own options
        restart(two.root)
        assert await show_global(two.connection(), "innodb_flush_log_at_trx_commit") == "2"
        # asking the running one for other options is refused, naming both
        with pytest.raises(LabError, match="runs with other base options"):
            Sandbox(tmp_path / "one", options=(("innodb_flush_log_at_trx_commit", "0"),)
                    ).start()
    finally:
        one.stop()
        two.stop()


@pytest.mark.integration
async def test_a_sandbox_leaves_other_servers_temporary_tables_alone(tmp_path: Path) -> None:
    """A starting mariadbd (and mariadb-install-db's bootstrap) deletes every ``#sql*``
    file in its tmpdir. With the shared default (TMPDIR, else /tmp) a new sandbox deleted
    the on-disk temporary tables of every other server using it: a galera node's install
    failed on its own vanished temporary table while another sandbox started."""
    require_binary("mariadbd", "mariadb-server")
    shared = Path(os.environ.get("TMPDIR") or "/tmp")
    theirs = shared / f"#sql-knobtop-test-{os.getpid()}-{secrets.token_hex(4)}.MAI"
    theirs.write_bytes(b"")
    box = Sandbox(tmp_path / "box")
    try:
        info = box.start()  # a fresh datadir: the bootstrap, then the server
        assert theirs.exists(), f"starting the sandbox deleted {theirs}"
        assert await show_global(info, "tmpdir") == str(box.tmpdir)
        restart(box.root)
        assert theirs.exists(), f"restarting the sandbox deleted {theirs}"
    finally:
        box.stop()
        theirs.unlink(missing_ok=True)
    # A base option may no longer choose it (issue 36: tmpdir names a path): the lab's
    # own tmpdir is on mariadbd's command line, after my.cnf and conf.d/.
    with pytest.raises(LabError, match="tmpdir names a file or directory"):
        Sandbox(tmp_path / "box", options=(("tmpdir", str(tmp_path / "fast")),))
    assert f"--tmpdir={box.tmpdir}" in box.fixed_settings(Path("/plugins"))
