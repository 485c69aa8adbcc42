"""Issue 36, reproduction 1: nothing from `lab --option`, a recipe's `[targets.X] options` or
a sandbox's own files opens a sandbox to the network or lets a login in without its
password. Base options are an allow-list (exactly a performance variable the lab's mariadbd
reports); the lab's own settings are on mariadbd's command line, after every option file."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness.binaries import require_binary
from knobtop.lab import LabError, Sandbox
from knobtop.lab_options import OPTIONS_LINE
from test_lab_places import knobtop, said
from test_targets import BASE

pytestmark = pytest.mark.integration  # the lab's own mariadbd (its --help, or a start)

# (option as given, the name the refusal must say): prefixes, abbreviations and reach
# variables, each of which mariadbd itself would take.
HOSTILE = [
    ("loose-bind-address=0.0.0.0", "bind_address"),
    ("bind-addr=0.0.0.0", "bind_addr"),
    ("bind_address=0.0.0.0", "bind_address"),
    ("loose-skip-grant-tables=ON", "skip_grant_tables"),
    ("skip-grant-tables=ON", "skip_grant_tables"),
    ("plugin_dir=/tmp", "plugin_dir"),
    ("plugin_load=x.so", "plugin_load"),
    ("init_file=/tmp/x.sql", "init_file"),
    ("general_log_file=/tmp/x.log", "general_log_file"),
    ("data=/tmp", "data"),
    ("port=3306", "port"),
    ("tmpdir=/tmp", "tmpdir"),
]

# the two-server recipe with a hostile option for its lab target
RECIPE = BASE.replace("{", "{{").replace("}", "}}").replace(
    "options = {{ innodb_flush_log_at_trx_commit = 2 }}", 'options = {{ {key} = "{value}" }}')


@pytest.mark.parametrize(("option", "name"), HOSTILE)
def test_a_hostile_lab_option_is_refused_naming_it_before_anything_starts(
    tmp_path: Path, option: str, name: str
) -> None:
    require_binary("mariadbd", "mariadb-server")
    lab = tmp_path / "lab"
    run = knobtop("lab", "--dir", str(lab), "--option", option, "--headless", "--duration",
                  "1", "--load", "none")
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    text = said(run)
    assert name in text, run.stderr
    assert "may not set it" in text or f"has no variable named {name}" in text, run.stderr
    assert not lab.exists()  # no sandbox made, no server started
    # The sandbox refuses it too, whoever builds one (a recipe's target, a script).
    key, _, value = option.partition("=")
    with pytest.raises(LabError, match=name):
        Sandbox(tmp_path / "box", options=((key, value),)).start()
    assert not (tmp_path / "box").exists()


@pytest.mark.parametrize(("option", "name"), HOSTILE)
def test_a_hostile_target_option_in_a_recipe_is_refused_naming_it(
    tmp_path: Path, option: str, name: str
) -> None:
    require_binary("mariadbd", "mariadb-server")
    key, _, value = option.partition("=")
    recipe = tmp_path / "hostile.toml"
    recipe.write_text(RECIPE.format(key=key, value=value))
    lab = tmp_path / "lab"
    run = knobtop("run", str(recipe), "--lab", "--dir", str(lab))
    assert run.returncode == 2, run.stdout + run.stderr
    assert "Traceback" not in run.stderr
    text = said(run)
    assert name in text and "targets.trx2" in text, run.stderr
    assert "may not set it" in text or f"has no variable named {name}" in text, run.stderr
    assert not lab.exists()  # neither the run's sandbox nor the target's was made


def login(client: str, port: int, user: str, password: str | None = None
          ) -> subprocess.CompletedProcess[str]:
    """``SELECT @@bind_address`` as ``user`` over TCP, with ``password`` or none."""
    env = {**os.environ, "MYSQL_PWD": password} if password else {
        k: v for k, v in os.environ.items() if k != "MYSQL_PWD"}
    return subprocess.run([client, "--no-defaults", "--protocol=TCP", "-h", "127.0.0.1", "-P",
                           str(port), "-u", user, "-N", "-e", "SELECT @@bind_address"],
                          capture_output=True, text=True, timeout=30, check=False, env=env)


def test_option_files_cannot_move_the_lab_listener_or_skip_its_logins(tmp_path: Path) -> None:
    """A sandbox whose conf.d/ (read after my.cnf) says bind-address=0.0.0.0 and
    skip-grant-tables still listens on 127.0.0.1 only and asks every login for its
    password: the lab's own settings are on mariadbd's command line, read last. A reach
    variable among my.cnf's base options is refused before the server starts."""
    require_binary("ss", "iproute2")
    client = require_binary("mariadb", "mariadb-client")
    box = Sandbox(tmp_path / "lab")
    box.start()
    box.stop()
    (box.dropin_dir / "hand.cnf").write_text(
        "[mysqld]\nbind-address=0.0.0.0\nskip-grant-tables\nport=3306\n"
        "[mariadbd]\nbind-address=0.0.0.0\nskip-grant-tables\n")
    text = box.config.read_text()
    box.config.write_text(text.replace("[mysqld]\n", "[mysqld]\nbind-address=0.0.0.0\n"
                                       "skip-grant-tables\n"))
    again = Sandbox.existing(box.root)
    info = again.start()
    try:
        listeners = subprocess.run(["ss", "-ltnH"], capture_output=True, text=True,
                                   timeout=30, check=True).stdout.splitlines()
        local = [line.split()[3] for line in listeners if line.split()[3].endswith(
            f":{info.port}")]
        assert local == [f"127.0.0.1:{info.port}"], listeners
        for user in ("anyone", "knobtop", "root"):
            refused = login(client, info.port, user)
            assert refused.returncode != 0 and "Access denied" in refused.stderr, \
                (user, refused.stdout, refused.stderr)
        # the lab's login, with its password, still works, and the server says 127.0.0.1
        mine = login(client, info.port, info.user, info.password)
        assert (mine.returncode, mine.stdout.strip()) == (0, "127.0.0.1"), mine.stderr
    finally:
        again.stop()
    # A reach variable among my.cnf's own base options: refused, naming the file, and
    # the server stays down (also through the lab's restart command).
    box.config.write_text(box.config.read_text().replace(
        "!includedir", f"{OPTIONS_LINE}\nbind-address=0.0.0.0\n!includedir"))
    with pytest.raises(LabError) as failed:
        Sandbox.existing(box.root).start()
    assert str(box.config) in str(failed.value)
    assert "bind_address opens or moves" in str(failed.value)
    restart = subprocess.run([sys.executable, "-m", "knobtop.lab", "restart", str(box.root)],
                             capture_output=True, text=True, timeout=120, check=False)
    assert restart.returncode == 1 and "bind_address" in restart.stderr, restart.stderr
    assert "Traceback" not in restart.stderr
    assert box.running_pid() is None
