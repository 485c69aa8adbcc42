"""Profiles: where the target server and the client hosts are, loaded from TOML and checked.

A profile lives in ``~/.config/knobtop/profiles/NAME.toml`` (``$XDG_CONFIG_HOME`` is
honoured) or at any path.  Layout (``knobtop/profile_example.toml`` is a complete copy)::

    [target]
    ssh = "db1"                # alias from ~/.ssh/config or user@host:port; omit for this machine
    jump = "bastion"           # optional
    restart_command = "systemctl restart mariadb"
    dropin_path = "/etc/mysql/mariadb.conf.d/99-knobtop.cnf"
    sudo = true                # optional: the restart and the drop-in through sudo -n (SSH
                               #   only); or a list: sudo = ["restart_command"]
    flavor = "mariadb"         # optional override: mariadb | mysql
    [target.mysql]
    host = "127.0.0.1"         # as seen from the target host
    port = 3306
    socket = "/run/mysqld/mysqld.sock"   # optional; preferred when set
    user = "knobtop"
    password = { env = "KNOBTOP_DB_PASSWORD" }   # or { mycnf = true } or { prompt = true }
                                                 # or "inline-secret" (file must be chmod 600)
    [[client]]                 # zero or more
    ssh = "app1"               # omit for this machine
    sysbench = "/usr/bin/sysbench"
    name = "app1"              # optional, defaults to the ssh destination
    mysql_host = "db1.internal"  # optional: the server as this client reaches it
    mysql_port = 3306

    [[node]]                   # optional, zero or more: servers for rolling restarts; with
    name = "db2"               #   nodes, leave restart_command/dropin_path out of [target]
    ssh = "db2"                # optional, default: target.ssh
    restart_command = "sudo systemctl restart mariadb"
    dropin_path = "/etc/mysql/mariadb.conf.d/99-knobtop.cnf"
    [node.mysql]               # optional: host, port, socket as seen from that node;
    socket = "/run/mysqld/mysqld.sock"   # each defaults to target.mysql's (user/password too)

    [ndb]                      # optional: NDB Cluster management (DiskPageBufferMemory)
    ssh = "mgm1"               # optional, default: target.ssh
    config_ini = "/var/lib/mysql-cluster/config.ini"
    connect_string = "mgm1:1186"                 # optional
    mgmd_command = "ndb_mgmd -f {config} --reload"   # optional; must contain {config}
    node_timeout = 600         # optional: seconds to wait for each data node

Unknown keys, wrong types, bad values and an inline password in a file that group or
others can read raise ``ProfileError`` naming the file, the dotted key and the fix.

The values are ``model.py``'s, the file's keys are checked by ``reader.py`` (with
tomlcheck's typed accessors), a my.cnf's password is read by ``mycnf.py``; finding and
loading a profile, and the ``adhoc`` and ``lab`` profiles, are here.
"""

from __future__ import annotations

import os
from pathlib import Path

from knobtop.hosts.base import parse_destination
from knobtop.profiles.model import (
    COMMAND_LINE,
    CONFIG_TOKEN,
    DEFAULT_MGMD_COMMAND,
    DEFAULT_NODE_TIMEOUT,
    DEST_FIX,
    ENV_NAME,
    EXAMPLE_PATH,
    FLAVORS,
    SUDO_KEYS,
    ClientSpec,
    MysqlSpec,
    NdbSpec,
    NodeSpec,
    Profile,
    ProfileError,
    TargetSpec,
    server_address,
)
from knobtop.profiles.mycnf import password_from_mycnf
from knobtop.profiles.reader import ProfileReader
from knobtop.tomlcheck import parse, read_text_file, too_deep

__all__ = [
    "COMMAND_LINE",
    "CONFIG_TOKEN",
    "DEFAULT_MGMD_COMMAND",
    "DEFAULT_NODE_TIMEOUT",
    "EXAMPLE_PATH",
    "FLAVORS",
    "SUDO_KEYS",
    "ClientSpec",
    "MysqlSpec",
    "NdbSpec",
    "NodeSpec",
    "Profile",
    "ProfileError",
    "TargetSpec",
    "default_profiles_dir",
    "lab_profile",
    "list_profiles",
    "load_profile",
    "parse_destination",
    "password_from_mycnf",
    "profile_from_args",
    "server_address",
]


# --------------------------------------------------------------------------- loading


def default_profiles_dir() -> Path:
    """``$XDG_CONFIG_HOME/knobtop/profiles``, else ``~/.config/knobtop/profiles``."""
    xdg = os.environ.get("XDG_CONFIG_HOME")
    base = Path(xdg) if xdg else Path.home() / ".config"
    return base / "knobtop" / "profiles"


def list_profiles(config_dir: Path | None = None) -> list[str]:
    """Names of the ``*.toml`` profiles in the directory, sorted; [] when it does not exist."""
    directory = config_dir or default_profiles_dir()
    try:
        return sorted(p.stem for p in directory.glob("*.toml") if p.is_file())
    except OSError:
        return []


def _read(path: Path, shown: str, name: str) -> tuple[str, int]:
    def error(key: str | None, problem: str, fix: str) -> ProfileError:
        return ProfileError(shown, key, problem, fix)

    try:
        return read_text_file(path, error, "profile file", "give a NAME or a .toml file")
    except FileNotFoundError:
        directory = path.parent
        existing = list_profiles(directory)
        if existing:
            fix = f"use one of: {', '.join(existing)} (in {directory})"
        elif directory.is_dir():
            fix = f"no profiles in {directory} yet; copy {EXAMPLE_PATH} to {path} and edit it"
        else:
            fix = f"create {directory} and copy {EXAMPLE_PATH} to {path}"
        raise ProfileError(shown, None, f"profile {name!r} not found", fix) from None


def load_profile(name_or_path: str, *, config_dir: Path | None = None) -> Profile:
    """Load and check a profile: a path (has ``/`` or ends ``.toml``) or a NAME in the dir."""
    if not name_or_path:
        raise ProfileError(
            COMMAND_LINE, "PROFILE", "empty profile name", "give a profile NAME or a .toml path"
        )
    if "/" in name_or_path or name_or_path.endswith(".toml"):
        path = Path(name_or_path).expanduser()
        name = path.stem
    else:
        path = (config_dir or default_profiles_dir()) / f"{name_or_path}.toml"
        name = name_or_path
    shown = str(path)
    text, mode = _read(path, shown, name)
    def error(key: str | None, problem: str, fix: str) -> ProfileError:
        return ProfileError(shown, key, problem, fix)

    doc = parse(text, error, EXAMPLE_PATH)
    try:
        return ProfileReader(shown, mode).profile(doc, name, path)
    except RecursionError:  # a check or a message walking a deeply nested value
        raise too_deep(error) from None


def profile_from_args(
    target: str | None,
    clients: list[str],
    *,
    mysql_user: str = "root",
    mysql_port: int = 3306,
    mysql_socket: str | None = None,
    password_env: str | None = None,
) -> Profile:
    """The ``adhoc`` profile for ``knobtop connect --target DEST --client DEST ...``."""

    def fail(key: str, problem: str, fix: str) -> ProfileError:
        return ProfileError(COMMAND_LINE, key, problem, fix)

    def check(dest: str, key: str) -> str:
        try:
            parse_destination(dest)
        except ValueError as exc:
            raise fail(key, str(exc), DEST_FIX) from None
        return dest

    ssh = None if target is None else check(target, "--target")
    if not 1 <= mysql_port <= 65535:
        raise fail("--mysql-port", f"port {mysql_port} is out of range 1-65535", "e.g. 3306")
    if not mysql_user:
        raise fail("--mysql-user", "empty user", "give the MySQL user, e.g. root")
    if mysql_socket is not None and not mysql_socket.startswith("/"):
        raise fail(
            "--mysql-socket",
            f"{mysql_socket!r} is not an absolute path",
            "give the socket path on the target, e.g. /run/mysqld/mysqld.sock",
        )
    source = "prompt"
    if password_env is not None:
        if not ENV_NAME.match(password_env):
            raise fail(
                "--password-env",
                f"{password_env!r} is not an environment variable name",
                "use letters, digits and _, e.g. KNOBTOP_DB_PASSWORD",
            )
        source = f"env:{password_env}"
    specs: list[ClientSpec] = []
    for dest in clients:
        spec = ClientSpec(ssh=check(dest, "--client"))
        if any(s.name == spec.name for s in specs):
            raise fail("--client", f"{dest!r} is given twice", "list each client once")
        specs.append(spec)
    mysql = MysqlSpec(port=mysql_port, socket=mysql_socket, user=mysql_user, password_source=source)
    return Profile(
        name="adhoc", path=None, target=TargetSpec(ssh=ssh, mysql=mysql), clients=tuple(specs)
    )


def lab_profile(socket: str, port: int, user: str) -> Profile:
    """The built-in ``lab`` profile: everything local; the lab supplies the password itself."""
    mysql = MysqlSpec(port=port, socket=socket, user=user, password_source="inline")
    return Profile(
        name="lab",
        path=None,
        target=TargetSpec(mysql=mysql),
        clients=(ClientSpec(ssh=None, name="local"),),
    )
