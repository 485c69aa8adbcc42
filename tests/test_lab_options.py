"""Sandboxes side by side (issue 19 part 2): `--name` gives each its own directory, and
`--option KEY=VALUE` its own base my.cnf lines, checked for mariadbd's option reader."""

from __future__ import annotations

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
    ("socket=/tmp/x.sock", "the lab sets socket itself"),
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
    assert lab_dir_for("trx2", None) == default_lab_dir().parent / "labs" / "trx2"
    assert lab_dir_for(None, tmp_path) == tmp_path
    with pytest.raises(LabError, match="not both"):
        lab_dir_for("trx2", tmp_path)
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
