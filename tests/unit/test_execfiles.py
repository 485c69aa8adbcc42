"""The exec channel's file commands (issue 42): every path reaches ``sh -c`` as one word,
whatever it holds; what a failure means; sudo -n asking for a password
is recognised (sudo 1.9.13p3 on the test machine)."""

from __future__ import annotations

import shlex

import pytest

from knobtop.hosts.execfiles import (
    NO_FILE,
    READ_SCRIPT,
    WRITE_SCRIPT,
    ExecResult,
    file_error,
    read_command,
    sudo_fix,
    wants_password,
    write_command,
)

PATHS = ["/etc/mysql/conf.d/zz.cnf", "/tmp/a b/'q'\"d\"/$(id)`x`;rm -rf ~", "-n", "/x\n/y"]


@pytest.mark.parametrize("path", PATHS)
def test_paths_are_one_word_each(path: str) -> None:
    assert shlex.split(read_command(path)) == ["sh", "-c", READ_SCRIPT, "sh", path]
    assert shlex.split(read_command(path, sudo=True)) == [
        "sudo", "-n", "sh", "-c", READ_SCRIPT, "sh", path]
    words = shlex.split(write_command(path, path + ".t", path + ".prev", 0o640, sudo=True))
    assert words == ["sudo", "-n", "sh", "-c", WRITE_SCRIPT, "sh", path, path + ".t",
                     path + ".prev", "640"]


def test_what_a_failure_means() -> None:
    missing = file_error("h", "cannot read /x", ExecResult(NO_FILE, b"", "no such file\n"))
    assert isinstance(missing, FileNotFoundError)
    denied = file_error("h", "cannot write /x",
                        ExecResult(1, b"", "sh: 1: cannot create /x.t: Permission denied\n"))
    assert isinstance(denied, PermissionError)
    assert file_error("h", "w", ExecResult(1, b"", "mv: disk full\n")) is None
    assert wants_password("sudo: a password is required\n")
    assert wants_password("sudo: a terminal is required to read the password; either use")
    assert not wants_password("sudo: sh: command not found\n")
    fix = sudo_fix("dba", "db1", ["sh -c 'systemctl restart mariadb'"])
    assert "dba ALL=(root) NOPASSWD:" in fix and "/etc/sudoers.d/" in fix
    assert "systemctl restart mariadb" in fix and "sudo = false" in fix
