"""Hostile configuration files: bytes that are not UTF-8, TOML nested past the recursion
limit, huge numbers, and profiles others can change.  Each gets a message naming the file
(and the fix), never a traceback; a profile that group or others can write is refused
when it holds a password or a command knobtop runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from knobtop.config import ConfigError, load_config
from knobtop.journal.events import Header
from knobtop.journal.writer import JournalWriter
from knobtop.profiles import ProfileError, load_profile
from knobtop.recipes.model import RecipeError
from knobtop.recipes.reader import load_recipe
from knobtop.ui.look import ThemeError, load_theme, load_themes

DEPTH = 10_000

# Each is the whole body of a file; the name says what is wrong with it.
HOSTILE: dict[str, bytes] = {
    "latin-1 byte": b'theme = "caf\xe9"\n',
    "invalid utf-8 start": b"\xff\xfe[target]\n",
    "lone continuation byte": b'name = "x\x80"\n',
    "nested arrays": ("x = " + "[" * DEPTH + "]" * DEPTH + "\n").encode(),
    "nested inline tables": ("x = " + "{a=" * DEPTH + "1" + "}" * DEPTH + "\n").encode(),
    "arrays of inline tables": ("x = " + "[{a=" * (DEPTH // 2) + "1" + "}]" * (DEPTH // 2)
                                + "\n").encode(),
    "huge number": b"x = " + b"9" * 5000 + b"\n",
}
# Deep dotted tables parse (tomllib reads them in a loop) but any later walk recurses:
# each file's own table, so the checker meets the deep value, not an unknown key.
DEEP_TABLE = {
    "config": "[keys." + ".".join(["a"] * DEPTH) + "]\nb = 1\n",
    "theme": 'name = "t"\nprimary = "#ffffff"\n[variables.' + ".".join(["a"] * DEPTH)
             + "]\nb = 1\n",
    "profile": "[target." + ".".join(["a"] * DEPTH) + "]\nb = 1\n",
    "recipe": "[run." + ".".join(["a"] * DEPTH) + "]\nb = 1\n",
}


def write(path: Path, body: bytes, mode: int = 0o600) -> Path:
    path.write_bytes(body)
    os.chmod(path, mode)
    return path


def named(exc: BaseException, path: Path) -> str:
    message = str(exc)
    assert str(path) in message, message
    assert "fix:" in message, message
    return message


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_config_file_problems_name_the_file(tmp_path: Path, case: str) -> None:
    path = write(tmp_path / "config.toml", HOSTILE[case])
    with pytest.raises(ConfigError) as info:
        load_config(path)
    named(info.value, path)


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_theme_file_problems_name_the_file(tmp_path: Path, case: str) -> None:
    path = write(tmp_path / "bad.toml", HOSTILE[case])
    with pytest.raises(ThemeError) as info:
        load_theme(path)
    named(info.value, path)
    # The loader of every theme skips it and says why; the good ones still load.
    write(tmp_path / "good.toml", b'name = "good"\nprimary = "#4C9BE8"\n')
    themes, problems = load_themes([tmp_path])
    assert [t.name for t in themes] == ["good"]
    assert len(problems) == 1 and str(path) in problems[0]


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_profile_file_problems_name_the_file(tmp_path: Path, case: str) -> None:
    path = write(tmp_path / "p.toml", HOSTILE[case])
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    named(info.value, path)


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_recipe_file_problems_name_the_file(tmp_path: Path, case: str) -> None:
    path = write(tmp_path / "r.toml", HOSTILE[case])
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    named(info.value, path)


def test_deep_dotted_tables_get_a_message(tmp_path: Path) -> None:
    loaders = {
        "config": (load_config, ConfigError),
        "theme": (load_theme, ThemeError),
        "profile": (lambda p: load_profile(str(p)), ProfileError),
        "recipe": (load_recipe, RecipeError),
    }
    for kind, body in DEEP_TABLE.items():
        path = write(tmp_path / f"{kind}.toml", body.encode())
        load, error = loaders[kind]
        with pytest.raises(error) as info:  # type: ignore[call-overload]
            load(path)
        named(info.value, path)


def test_nesting_says_what_is_wrong(tmp_path: Path) -> None:
    path = write(tmp_path / "config.toml", HOSTILE["nested arrays"])
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert "nested too deeply" in info.value.problem


def journal(tmp_path: Path) -> Path:
    path = tmp_path / "j.knobtop.jsonl"
    head = Header(format=1, knobtop="t", profile="p", started_wall=1.0, interval=1.0)
    JournalWriter(path, head).close()
    return path


@pytest.mark.parametrize("case", ["latin-1 byte", "nested arrays", "nested inline tables"])
def test_the_command_line_names_a_bad_config_file(tmp_path: Path, case: str) -> None:
    """`knobtop replay` reads the config before its screen opens: a message, exit 2."""
    config = write(tmp_path / "config.toml", HOSTILE[case])
    env = {**os.environ, "KNOBTOP_CONFIG": str(config), "XDG_CONFIG_HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "knobtop", "replay", str(journal(tmp_path))],
        capture_output=True, text=True, timeout=60, env=env, check=False,
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    assert str(config) in result.stderr


# --------------------------------------------------------------------------- who may write


PASSWORD = '[target]\n[target.mysql]\npassword = "s3cret-value"\n'
RESTART = ('[target]\nrestart_command = "sudo systemctl restart mariadb"\n'
           'dropin_path = "/etc/mysql/conf.d/99-knobtop.cnf"\n')
NODE = ('[target]\nssh = "db1"\n[[node]]\nname = "db1"\n'
        'restart_command = "sudo systemctl restart mariadb"\n'
        'dropin_path = "/etc/mysql/conf.d/99-knobtop.cnf"\n')
MGMD = ('[target]\nssh = "db1"\n[ndb]\nconfig_ini = "/var/lib/mysql-cluster/config.ini"\n'
        'mgmd_command = "ndb_mgmd -f {config} --reload"\n')
CLIENT = '[target]\n[[client]]\nsysbench = "/opt/sysbench/bin/sysbench"\n'  # a program knobtop runs
WRITABLE = [0o620, 0o602, 0o660, 0o606, 0o622]


@pytest.mark.parametrize("mode", WRITABLE)
def test_inline_password_in_a_file_others_can_change_is_refused(
    tmp_path: Path, mode: int
) -> None:
    path = write(tmp_path / "p.toml", PASSWORD.encode(), mode)
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    assert info.value.key == "target.mysql.password"
    assert "read or change" in info.value.problem
    assert "s3cret-value" not in named(info.value, path)


@pytest.mark.parametrize("mode", WRITABLE)
@pytest.mark.parametrize(("body", "key"), [(RESTART, "target.restart_command"),
                                           (NODE, "node[0].restart_command"),
                                           (MGMD, "ndb.mgmd_command"),
                                           (CLIENT, "client[0].sysbench")])
def test_a_command_in_a_file_others_can_change_is_refused(
    tmp_path: Path, mode: int, body: str, key: str
) -> None:
    path = write(tmp_path / "p.toml", body.encode(), mode)
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    assert info.value.key == key
    assert "can change" in info.value.problem
    assert f"chmod go-w {path}" in named(info.value, path)


@pytest.mark.parametrize(("body", "mode"), [(RESTART, 0o644), (NODE, 0o640), (MGMD, 0o604),
                                            (CLIENT, 0o644), (RESTART, 0o600), (PASSWORD, 0o600)])
def test_files_only_their_owner_can_change_are_fine(tmp_path: Path, body: str, mode: int) -> None:
    """A command is no secret: others may read it; only changing it is refused."""
    path = write(tmp_path / "p.toml", body.encode(), mode)
    assert load_profile(str(path)).name == "p"
