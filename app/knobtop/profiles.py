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
"""
# Over 500 lines: every key of the profile format with its own fix line (the reading,
# parsing and generic checks are tomlcheck.py's); split it by section if it grows.

from __future__ import annotations

import difflib
import math
import os
import re
import shlex
import stat
from dataclasses import dataclass, field, replace
from pathlib import Path

from knobtop.errors import BadValue
from knobtop.hosts.base import parse_destination
from knobtop.tomlcheck import FileError, Reader, Table, parse, read_text_file, too_deep

__all__ = [
    "EXAMPLE_PATH",
    "FLAVORS",
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
]

EXAMPLE_PATH = Path(__file__).with_name("profile_example.toml")
CONFIG_TOKEN = "{config}"
DEFAULT_MGMD_COMMAND = f"ndb_mgmd -f {CONFIG_TOKEN} --reload"
DEFAULT_NODE_TIMEOUT = 600.0
FLAVORS = ("mariadb", "mysql")
COMMAND_LINE = "command line"

SUDO_KEYS = ("restart_command", "dropin_path")  # what ``sudo`` may name
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_DEST_FIX = (
    "use an alias from ~/.ssh/config, host, user@host or user@host:port "
    "(IPv6 in brackets: user@[::1]:2222)"
)


class ProfileError(FileError):
    """A profile cannot be used; ``file``, ``key``, ``problem`` and ``fix`` say why and how."""


# --------------------------------------------------------------------------- dataclasses


def _check_source(source: str) -> None:
    if source in ("mycnf", "prompt", "inline"):
        return
    if source.startswith("env:") and _ENV_NAME.match(source[4:]):
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


# --------------------------------------------------------------------------- destinations


# --------------------------------------------------------------------------- my.cnf

_MYCNF_GROUPS = frozenset({"client", "mysql", "client-server", "client-mariadb", "mariadb-client"})
_MYCNF_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "s": " ", '"': '"', "'": "'"}
_MYCNF_ESCAPES["\\"] = "\\"


def _strip_cnf_comment(line: str) -> str:
    """Cut an end-of-line ``#`` comment that is outside quotes (as mysys does)."""
    quote = ""
    escape = False
    for i, ch in enumerate(line):
        if ch in "'\"" and not escape:
            if not quote:
                quote = ch
            elif quote == ch:
                quote = ""
        elif not quote and ch == "#":
            return line[:i]
        escape = ch == "\\" and not escape
    return line


def _cnf_value(raw: str) -> str:
    value = raw.strip()
    if len(value) >= 2 and value[0] in "'\"" and value[-1] == value[0]:
        value = value[1:-1]
    out: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            out.append(_MYCNF_ESCAPES.get(nxt, "\\" + nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def password_from_mycnf(text: str) -> str | None:
    """The password a mysql client would take from this my.cnf body, or None.

    Reads ``[client]`` and ``[mysql]`` (and MariaDB's client groups); keys ``password`` or
    ``pass`` (``loose-`` prefix allowed); quotes, escapes and ``#``/``;`` comments as mysys
    reads them.  The last setting wins; a bare ``password`` line (prompt) yields None.
    """
    password: str | None = None
    in_group = False
    for raw_line in text.splitlines():
        line = raw_line.strip()
        if not line or line[0] in "#;" or line.startswith("!"):
            continue
        if line.startswith("["):
            header = _strip_cnf_comment(line).strip()
            if header.endswith("]"):
                in_group = header[1:-1].strip().lower() in _MYCNF_GROUPS
            continue
        if not in_group:
            continue
        body = _strip_cnf_comment(line)
        key, sep, value = body.partition("=")
        key = key.strip().lower().replace("_", "-")
        key = key.removeprefix("loose-")
        if key not in ("password", "pass"):
            continue
        password = _cnf_value(value) if sep else None
    return password


# --------------------------------------------------------------------------- TOML reader


_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
_OTHERS_RW = stat.S_IRGRP | stat.S_IROTH | _OTHERS_WRITE


class _Reader(Reader):
    """Checks one parsed TOML document and builds a Profile, raising ProfileError."""

    error_type = ProfileError

    def __init__(self, file: str, mode: int | None) -> None:
        super().__init__(file)
        self.mode = mode

    def command(self, table: Table, key: str, prefix: str, *, empty_fix: str) -> str | None:
        """A command knobtop will run (a restart, ndb_mgmd, sysbench): refused from a file
        that group or others can change, since whoever edits it chooses what runs (often
        with sudo)."""
        value = self.opt_str(table, key, prefix, empty_fix=empty_fix)
        if value is not None and self.mode is not None and self.mode & _OTHERS_WRITE:
            raise self.error(
                f"{prefix}.{key}",
                "a command knobtop runs, in a file that group or others can change "
                f"(mode {stat.filemode(self.mode)})",
                f"chmod go-w {self.file} (chmod 600 if it holds a password)",
            )
        return value

    def opt_str(self, table: Table, key: str, prefix: str, *, empty_fix: str) -> str | None:
        if key not in table:
            return None
        value = table[key]
        dotted = f"{prefix}.{key}"
        if not isinstance(value, str):
            if isinstance(value, int | float) and not isinstance(value, bool):
                fix = f'write {key} = "{value}" (in quotes)'
            else:
                fix = f'write {key} = "..." (a quoted string)'
            raise self.wrong_type(dotted, "a string", value, fix)
        if not value.strip():
            raise self.error(dotted, "is empty", empty_fix)
        return value

    def opt_int(self, table: Table, key: str, prefix: str) -> int | None:
        if key not in table:
            return None
        value = table[key]
        dotted = f"{prefix}.{key}"
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().isdigit():
            fix = f"write {key} = {value.strip()} (a number, no quotes)"
        else:
            fix = f"write {key} = 3306 (a whole number, no quotes)"
        raise self.wrong_type(dotted, "an integer", value, fix)

    def opt_seconds(self, table: Table, key: str, prefix: str) -> float | None:
        if key not in table:
            return None
        value = table[key]
        dotted = f"{prefix}.{key}"
        if isinstance(value, int | float) and not isinstance(value, bool):
            if not math.isfinite(value) or value <= 0:
                raise self.error(
                    dotted,
                    f"{value} is not a positive number of seconds",
                    f"write {key} = 600 (seconds, more than 0), or remove it for the default",
                )
            return float(value)
        fix = f"write {key} = 600 (seconds, a number, no quotes)"
        raise self.wrong_type(dotted, "a number of seconds", value, fix)

    def req_str(self, table: Table, key: str, prefix: str, *, example: str) -> str:
        value = self.opt_str(table, key, prefix, empty_fix=f"write {key} = {example}")
        if value is None:
            raise self.error(f"{prefix}.{key}", f"missing {key}", f"add {key} = {example}")
        return value

    def abs_path(self, value: str | None, dotted: str, fix: str) -> str | None:
        if value is not None and not value.startswith("/"):
            raise self.error(dotted, f"{value!r} is not an absolute path", fix)
        return value

    def opt_table(self, table: Table, key: str, prefix: str, fix: str) -> Table | None:
        if key not in table:
            return None
        value = table[key]
        if not isinstance(value, dict):
            raise self.wrong_type(f"{prefix}.{key}" if prefix else key, "a table", value, fix)
        return value

    def sudo(self, table: Table, prefix: str, ssh: str | None) -> frozenset[str]:
        """``sudo = true | false | ["restart_command", "dropin_path"]``: which of the node's
        restart command and drop-in go through ``sudo -n`` (never a password)."""
        if "sudo" not in table:
            return frozenset()
        value = table["sudo"]
        dotted = f"{prefix}.sudo"
        fix = 'write sudo = true, or a list of what needs it: sudo = ["restart_command"]'
        if isinstance(value, bool):
            chosen = frozenset(SUDO_KEYS) if value else frozenset()
        elif isinstance(value, list) and all(isinstance(v, str) for v in value):
            for item in value:
                if item not in SUDO_KEYS:
                    close = difflib.get_close_matches(item, SUDO_KEYS, n=1, cutoff=0.6)
                    hint = f"did you mean {close[0]!r}? " if close else ""
                    raise self.error(dotted, f"{item!r} is not something sudo can be used for",
                                     f"{hint}name any of {', '.join(SUDO_KEYS)}")
            chosen = frozenset(value)
        else:
            raise self.wrong_type(dotted, "true, false or a list of names", value, fix)
        if chosen and ssh is None:
            raise self.error(dotted, "sudo is used on SSH hosts only, and this one is this "
                             "machine (no ssh)", "remove sudo and run knobtop as a user who can "
                             "restart the server and write the drop-in, or set ssh")
        return chosen

    def destination(self, value: str | None, dotted: str) -> str | None:
        if value is None:
            return None
        try:
            parse_destination(value)
        except ValueError as exc:
            raise self.error(dotted, str(exc), _DEST_FIX) from None
        return value

    # ---- sections

    def profile(self, doc: Table, name: str, path: Path | None) -> Profile:
        self.check_keys(doc, ("target", "client", "node", "ndb"), "")
        target_table = self.opt_table(doc, "target", "", "write the target as a [target] table")
        if target_table is None:
            raise self.error(
                "target",
                "missing [target] table",
                f"add a [target] table (an empty one means this machine); see {EXAMPLE_PATH}",
            )
        target = self.target(target_table)
        clients = self.clients(doc.get("client"))
        nodes = self.nodes(doc.get("node"), target)
        ndb_table = self.opt_table(doc, "ndb", "", "write it as an [ndb] table")
        ndb = None if ndb_table is None else self.ndb(ndb_table, target)
        return Profile(name=name, path=path, target=target, clients=clients, nodes=nodes, ndb=ndb)

    def target(self, table: Table) -> TargetSpec:
        p = "target"
        self.check_keys(
            table, ("ssh", "jump", "mysql", "restart_command", "dropin_path", "flavor", "sudo"),
            p,
        )
        ssh = self.destination(
            self.opt_str(table, "ssh", p, empty_fix="omit ssh for this machine, or " + _DEST_FIX),
            f"{p}.ssh",
        )
        jump = self.destination(
            self.opt_str(table, "jump", p, empty_fix="remove jump, or " + _DEST_FIX), f"{p}.jump"
        )
        if jump is not None and ssh is None:
            raise self.error(
                f"{p}.jump",
                "a jump host is set but target.ssh is not (the target is this machine)",
                "set target.ssh to the server's destination, or remove jump",
            )
        restart = self.command(
            table,
            "restart_command",
            p,
            empty_fix='remove it, or write e.g. "sudo systemctl restart mariadb"',
        )
        dropin = self.opt_str(
            table, "dropin_path", p, empty_fix="remove it, or give an absolute path on the target"
        )
        self.abs_path(
            dropin,
            f"{p}.dropin_path",
            'give an absolute path on the target, e.g. "/etc/mysql/conf.d/99-knobtop.cnf"',
        )
        flavor = self.opt_str(table, "flavor", p, empty_fix="remove it to auto-detect")
        if flavor is not None:
            if flavor.lower() not in FLAVORS:
                raise self.error(
                    f"{p}.flavor",
                    f"unknown flavor {flavor!r}",
                    f"use one of {' | '.join(FLAVORS)}, or remove it to auto-detect",
                )
            flavor = flavor.lower()
        mysql_table = self.opt_table(
            table, "mysql", p, "write the connection as a [target.mysql] table"
        )
        mysql = self.mysql(mysql_table or {})
        return TargetSpec(
            ssh=ssh,
            jump=jump,
            mysql=mysql,
            restart_command=restart,
            dropin_path=dropin,
            flavor=flavor,
            sudo=self.sudo(table, p, ssh),
        )

    def endpoint(
        self, table: Table, p: str, where: str
    ) -> tuple[str | None, int | None, str | None]:
        """host, port and socket of a MySQL table (None = not given)."""
        host = self.opt_str(table, "host", p, empty_fix='remove it, or write host = "127.0.0.1"')
        port = self.opt_int(table, "port", p)
        if port is not None and not 1 <= port <= 65535:
            raise self.error(
                f"{p}.port",
                f"port {port} is out of range 1-65535",
                "use the server's port, e.g. 3306",
            )
        socket = self.opt_str(
            table, "socket", p, empty_fix=f"remove it, or give the socket path on {where}"
        )
        self.abs_path(
            socket,
            f"{p}.socket",
            f'give the socket path on {where}, e.g. "/run/mysqld/mysqld.sock"',
        )
        return host, port, socket

    def mysql(self, table: Table) -> MysqlSpec:
        p = "target.mysql"
        self.check_keys(table, ("host", "port", "socket", "user", "password"), p)
        host, port, socket = self.endpoint(table, p, "the target")
        user = self.opt_str(table, "user", p, empty_fix='remove it, or write user = "root"')
        source, password = self.password(table.get("password"), f"{p}.password")
        return MysqlSpec(
            host=host or "127.0.0.1",
            port=3306 if port is None else port,
            socket=socket,
            user=user or "root",
            password_source=source,
            password=password,
        )

    def password(self, value: object, dotted: str) -> tuple[str, str | None]:
        forms = 'password = { env = "VAR" }, { mycnf = true } or { prompt = true }'
        if value is None:
            return "prompt", None
        if isinstance(value, str):
            if self.mode is not None and self.mode & _OTHERS_RW:
                can = "read or change" if self.mode & _OTHERS_WRITE else "read"
                raise self.error(
                    dotted,
                    f"an inline password in a file that group or others can {can} "
                    f"(mode {stat.filemode(self.mode)})",
                    f'chmod 600 {self.file}, or use password = {{ env = "..." }}',
                )
            return "inline", value
        if not isinstance(value, dict):
            raise self.wrong_type(dotted, "a string or a table", value, f"write {forms}")
        self.check_keys(value, ("env", "mycnf", "prompt"), dotted)
        if len(value) != 1:
            raise self.error(
                dotted,
                f"needs exactly one source, found {len(value)}",
                f"write one of {forms}",
            )
        ((key, item),) = value.items()
        sub = f"{dotted}.{key}"
        if key == "env":
            if not isinstance(item, str):
                raise self.wrong_type(sub, "a string", item, 'write env = "KNOBTOP_DB_PASSWORD"')
            if not _ENV_NAME.match(item):
                raise self.error(
                    sub,
                    f"{item!r} is not an environment variable name",
                    'use letters, digits and _, e.g. env = "KNOBTOP_DB_PASSWORD"',
                )
            return f"env:{item}", None
        if not isinstance(item, bool):
            raise self.wrong_type(sub, "a boolean", item, f"write {key} = true")
        if not item:
            raise self.error(sub, f"{key} = false selects no source", f"write {forms}")
        return key, None

    def clients(self, value: object) -> tuple[ClientSpec, ...]:
        if value is None:
            return ()
        fix = "write each client as a [[client]] table (double brackets)"
        if not isinstance(value, list):
            raise self.wrong_type("client", "an array of tables ([[client]])", value, fix)
        out: list[ClientSpec] = []
        seen: dict[str, int] = {}
        for i, item in enumerate(value):
            p = f"client[{i}]"
            if not isinstance(item, dict):
                raise self.wrong_type(p, "a table", item, fix)
            self.check_keys(item, ("ssh", "sysbench", "name", "mysql_host", "mysql_port"), p)
            ssh = self.destination(
                self.opt_str(
                    item, "ssh", p, empty_fix="omit ssh for this machine, or " + _DEST_FIX
                ),
                f"{p}.ssh",
            )
            sysbench = self.command(  # the program knobtop runs as the load
                item, "sysbench", p, empty_fix='remove it, or write sysbench = "/usr/bin/sysbench"'
            )
            name = self.opt_str(item, "name", p, empty_fix="remove it to use the ssh destination")
            mysql_host = self.opt_str(
                item, "mysql_host", p, empty_fix="remove it, or give the server's address"
            )
            mysql_port = self.opt_int(item, "mysql_port", p)
            if mysql_port is not None and not 1 <= mysql_port <= 65535:
                raise self.error(
                    f"{p}.mysql_port", f"port {mysql_port} is out of range 1-65535", "e.g. 3306"
                )
            client = ClientSpec(
                ssh=ssh,
                sysbench=sysbench or "sysbench",
                name=name or "",
                mysql_host=mysql_host,
                mysql_port=mysql_port,
            )
            if client.name in seen:
                raise self.error(
                    f"{p}.name",
                    f"name {client.name!r} is already used by client[{seen[client.name]}]",
                    "give each client a distinct name",
                )
            seen[client.name] = i
            out.append(client)
        return tuple(out)

    def nodes(self, value: object, target: TargetSpec) -> tuple[NodeSpec, ...]:
        if value is None:
            return ()
        fix = "write each server as a [[node]] table (double brackets)"
        if not isinstance(value, list):
            raise self.wrong_type("node", "an array of tables ([[node]])", value, fix)
        out: list[NodeSpec] = []
        seen: dict[str, int] = {}
        for i, item in enumerate(value):
            p = f"node[{i}]"
            if not isinstance(item, dict):
                raise self.wrong_type(p, "a table", item, fix)
            node = self.node(item, p, target)
            if node.name in seen:
                raise self.error(
                    f"{p}.name",
                    f"name {node.name!r} is already used by node[{seen[node.name]}]",
                    "give each node a distinct name",
                )
            seen[node.name] = i
            out.append(node)
        given = [k for k in ("restart_command", "dropin_path") if getattr(target, k) is not None]
        if out and given:
            keys = " and ".join(f"target.{k}" for k in given)
            raise self.error(
                f"target.{given[0]}",
                "is given together with [[node]] tables, which replace it",
                f"remove {keys}; each [[node]] has its own restart_command and dropin_path",
            )
        return tuple(out)

    def node(self, table: Table, p: str, target: TargetSpec) -> NodeSpec:
        self.check_keys(
            table, ("name", "ssh", "mysql", "restart_command", "dropin_path", "sudo"), p)
        name = self.req_str(table, "name", p, example='"db1" (a unique label for this server)')
        ssh = self.destination(
            self.opt_str(table, "ssh", p, empty_fix="omit ssh to use target.ssh, or " + _DEST_FIX),
            f"{p}.ssh",
        )
        example = '"sudo systemctl restart mariadb"'
        restart = self.command(table, "restart_command", p, empty_fix=f"write it = {example}")
        if restart is None:
            raise self.error(f"{p}.restart_command", "missing restart_command",
                             f"add restart_command = {example}")
        dropin = self.req_str(
            table, "dropin_path", p, example='"/etc/mysql/conf.d/99-knobtop.cnf" (absolute)'
        )
        self.abs_path(
            dropin,
            f"{p}.dropin_path",
            'give an absolute path on that server, e.g. "/etc/mysql/conf.d/99-knobtop.cnf"',
        )
        mp = f"{p}.mysql"
        mysql_table = self.opt_table(table, "mysql", p, f"write the connection as a [{mp}] table")
        mysql_table = mysql_table or {}
        for key in ("user", "password"):
            if key in mysql_table:
                raise self.error(
                    f"{mp}.{key}",
                    f"a node has no {key} of its own",
                    f"remove it; every node uses the {key} in [target.mysql]",
                )
        self.check_keys(mysql_table, ("host", "port", "socket"), mp)
        host, port, socket = self.endpoint(mysql_table, mp, "that server")
        default = target.mysql
        return NodeSpec(
            name=name,
            ssh=target.ssh if ssh is None else ssh,
            mysql_host=default.host if host is None else host,
            mysql_port=default.port if port is None else port,
            mysql_socket=default.socket if socket is None else socket,
            restart_command=restart,
            dropin_path=dropin,
            sudo=(self.sudo(table, p, target.ssh if ssh is None else ssh) if "sudo" in table
                  else target.sudo),
        )

    def ndb(self, table: Table, target: TargetSpec) -> NdbSpec:
        p = "ndb"
        self.check_keys(
            table, ("ssh", "config_ini", "connect_string", "mgmd_command", "node_timeout"), p
        )
        ssh = self.destination(
            self.opt_str(table, "ssh", p, empty_fix="omit ssh to use target.ssh, or " + _DEST_FIX),
            f"{p}.ssh",
        )
        config_ini = self.req_str(
            table, "config_ini", p, example='"/var/lib/mysql-cluster/config.ini" (absolute)'
        )
        self.abs_path(
            config_ini,
            f"{p}.config_ini",
            "give the absolute path on the management host, e.g. "
            '"/var/lib/mysql-cluster/config.ini"',
        )
        connect_string = self.opt_str(
            table, "connect_string", p, empty_fix='remove it, or write e.g. "mgm1:1186"'
        )
        command_fix = (
            f'write e.g. mgmd_command = "{DEFAULT_MGMD_COMMAND}" '
            f"({CONFIG_TOKEN} stands for config_ini), or remove it for that default"
        )
        mgmd = self.command(table, "mgmd_command", p, empty_fix=command_fix)
        if mgmd is not None:
            try:
                argv = shlex.split(mgmd)
            except ValueError as exc:
                raise self.error(
                    f"{p}.mgmd_command", f"cannot be split into words: {exc}", command_fix
                ) from None
            if not any(CONFIG_TOKEN in arg for arg in argv):
                raise self.error(
                    f"{p}.mgmd_command",
                    f"does not contain {CONFIG_TOKEN} (where config_ini goes)",
                    command_fix,
                )
        timeout = self.opt_seconds(table, "node_timeout", p)
        return NdbSpec(
            ssh=target.ssh if ssh is None else ssh,
            config_ini=config_ini,
            connect_string=connect_string,
            mgmd_command=DEFAULT_MGMD_COMMAND if mgmd is None else mgmd,
            node_timeout=DEFAULT_NODE_TIMEOUT if timeout is None else timeout,
        )


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
        return _Reader(shown, mode).profile(doc, name, path)
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
            raise fail(key, str(exc), _DEST_FIX) from None
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
        if not _ENV_NAME.match(password_env):
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
