"""A profile's parts as values: the target server, its MySQL login, the client hosts, the
servers of a rolling restart and NDB's management host (``profiles.reader`` reads them
from a file, ``profiles.profile_from_args`` from the command line)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field, replace
from pathlib import Path

from knobtop.errors import BadValue
from knobtop.hosts.base import parse_destination
from knobtop.tomlcheck import FileError

# knobtop/profile_example.toml, beside this package
EXAMPLE_PATH = Path(__file__).parent.with_name("profile_example.toml")
CONFIG_TOKEN = "{config}"
DEFAULT_MGMD_COMMAND = f"ndb_mgmd -f {CONFIG_TOKEN} --reload"
DEFAULT_NODE_TIMEOUT = 600.0
FLAVORS = ("mariadb", "mysql")
COMMAND_LINE = "command line"

SUDO_KEYS = ("restart_command", "dropin_path")  # what ``sudo`` may name
ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
DEST_FIX = (
    "use an alias from ~/.ssh/config, host, user@host or user@host:port "
    "(IPv6 in brackets: user@[::1]:2222)"
)


class ProfileError(FileError):
    """A profile cannot be used; ``file``, ``key``, ``problem`` and ``fix`` say why and how."""


def _check_source(source: str) -> None:
    if source in ("mycnf", "prompt", "inline"):
        return
    if source.startswith("env:") and ENV_NAME.match(source[4:]):
        return
    raise BadValue(
        f"password_source {source!r}: expected 'env:VARNAME', 'mycnf', 'prompt' or 'inline'"
    )


@dataclass(frozen=True, slots=True)
class MysqlSpec:
    """How to reach MySQL as seen from the target host, and where the password comes from.

    ``password_source`` is ``env:VARNAME``, ``mycnf`` (the target's ``~/.my.cnf``, read at
    connect time), ``prompt`` or ``inline`` (``password`` holds it; never shown in repr).
    """

    host: str = "127.0.0.1"
    port: int = 3306
    socket: str | None = None
    user: str = "root"
    password_source: str = "prompt"
    password: str | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        _check_source(self.password_source)

    @property
    def password_env(self) -> str | None:
        """The environment variable named by an ``env:`` source, else None."""
        if self.password_source.startswith("env:"):
            return self.password_source[4:]
        return None


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """The server host (``ssh`` None = this machine) and how to restart it for static knobs."""

    ssh: str | None = None
    jump: str | None = None
    mysql: MysqlSpec = field(default_factory=MysqlSpec)
    restart_command: str | None = None
    dropin_path: str | None = None
    flavor: str | None = None
    sudo: frozenset[str] = frozenset()  # of SUDO_KEYS: run through ``sudo -n``


@dataclass(frozen=True, slots=True)
class ClientSpec:
    """A load-generating host (``ssh`` None = this machine); ``name`` defaults to ``ssh``."""

    ssh: str | None = None
    sysbench: str = "sysbench"
    name: str = ""
    # The server as this client reaches it (default: see ``server_address``).
    mysql_host: str | None = None
    mysql_port: int | None = None

    def __post_init__(self) -> None:
        if not self.name:
            object.__setattr__(self, "name", self.ssh or "local")


@dataclass(frozen=True, slots=True)
class NodeSpec:
    """One server that a static change restarts (several make a rolling restart).

    ``ssh`` None = this machine; ``mysql_*`` is the server as seen from that host (the
    socket, when set, is preferred); the MySQL user and password are the target's.
    """

    name: str
    ssh: str | None
    mysql_host: str
    mysql_port: int
    mysql_socket: str | None
    restart_command: str
    dropin_path: str
    sudo: frozenset[str] = frozenset()  # of SUDO_KEYS: run through ``sudo -n``


@dataclass(frozen=True, slots=True)
class NdbSpec:
    """NDB Cluster management: where config.ini lives and how to reload ``ndb_mgmd``.

    ``ssh`` is the management host (None = this machine); ``mgmd_command`` contains
    ``{config}``, which stands for ``config_ini``; ``node_timeout`` is in seconds.
    """

    ssh: str | None
    config_ini: str
    connect_string: str | None = None
    mgmd_command: str = DEFAULT_MGMD_COMMAND
    node_timeout: float = DEFAULT_NODE_TIMEOUT

    @property
    def mgmd_argv(self) -> tuple[str, ...]:
        """``mgmd_command`` split as a POSIX shell would, ``{config}`` left in place."""
        return tuple(shlex.split(self.mgmd_command))


@dataclass(frozen=True, slots=True)
class Profile:
    """A named target plus its clients; ``path`` is the TOML file, None when built in code.

    ``nodes`` are the servers for rolling restarts (``[[node]]``; see ``server_nodes``);
    ``ndb`` is the NDB Cluster management host, when there is one.
    """

    name: str
    path: Path | None
    target: TargetSpec
    clients: tuple[ClientSpec, ...] = ()
    nodes: tuple[NodeSpec, ...] = ()
    ndb: NdbSpec | None = None

    def server_nodes(self) -> tuple[NodeSpec, ...]:
        """The servers a static change restarts: the ``[[node]]`` tables if any; else the
        target alone when it has both ``restart_command`` and ``dropin_path``; else ()."""
        if self.nodes:
            return self.nodes
        target = self.target
        if target.restart_command is None or target.dropin_path is None:
            return ()
        return (
            NodeSpec(
                name=target.ssh or "local",
                ssh=target.ssh,
                mysql_host=target.mysql.host,
                mysql_port=target.mysql.port,
                mysql_socket=target.mysql.socket,
                restart_command=target.restart_command,
                dropin_path=target.dropin_path,
                sudo=target.sudo,
            ),
        )

    def node_mysql(self, node: NodeSpec) -> MysqlSpec:
        """The target's MySQL settings (user, password) pointed at ``node``'s server."""
        return replace(
            self.target.mysql, host=node.mysql_host, port=node.mysql_port, socket=node.mysql_socket
        )



def server_address(profile: Profile, client: ClientSpec) -> tuple[str, int]:
    """Where ``client``'s sysbench connects: its own ``mysql_host``/``mysql_port`` if
    given; otherwise the target's MySQL address, except that a loopback address on a
    remote target means "that machine", so the target's SSH host name is used."""
    mysql = profile.target.mysql
    port = client.mysql_port or mysql.port
    if client.mysql_host:
        return client.mysql_host, port
    loopback = mysql.host in ("127.0.0.1", "localhost", "::1")
    if loopback and profile.target.ssh and client.ssh != profile.target.ssh:
        return parse_destination(profile.target.ssh)[1], port
    return mysql.host, port
