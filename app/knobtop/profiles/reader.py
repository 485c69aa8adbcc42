"""Reading a profile file: every key of the format checked, with a fix for each refusal
(the typed accessors are tomlcheck's ``Reader``'s; the format is ``knobtop.profiles``'s
docstring)."""

from __future__ import annotations

import math
import shlex
import stat
from pathlib import Path
from typing import TypeVar

from knobtop.hosts.base import parse_destination
from knobtop.profiles.model import (
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
)
from knobtop.tomlcheck import Reader, Table, close_hint, is_int, is_number, is_str, whole_fix

S = TypeVar("S", bound=str | None)
_OTHERS_WRITE = stat.S_IWGRP | stat.S_IWOTH
_OTHERS_RW = stat.S_IRGRP | stat.S_IROTH | _OTHERS_WRITE


class ProfileReader(Reader):
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
        return self.nonblank(table, key, prefix, empty_fix=empty_fix,
                             fix=lambda value: f'write {key} = "{value}" (in quotes)'
                             if is_number(value) else f'write {key} = "..." (a quoted string)')

    def req_str(self, table: Table, key: str, prefix: str, *, example: str) -> str:
        value = self.opt_str(table, key, prefix, empty_fix=f"write {key} = {example}")
        return self.required(value, key, prefix, f"add {key} = {example}")

    def opt_int(self, table: Table, key: str, prefix: str) -> int | None:
        otherwise = f"write {key} = 3306 (a whole number, no quotes)"
        return self.get(table, key, prefix, "an integer", is_int,
                        lambda value: whole_fix(key, value, otherwise, decimal_point=False))

    def port(self, table: Table, key: str, prefix: str, fix: str) -> int | None:
        port = self.opt_int(table, key, prefix)
        if port is not None and not 1 <= port <= 65535:
            raise self.error(f"{prefix}.{key}", f"port {port} is out of range 1-65535", fix)
        return port

    def opt_seconds(self, table: Table, key: str, prefix: str) -> float | None:
        value = self.get(table, key, prefix, "a number of seconds", is_number,
                         f"write {key} = 600 (seconds, a number, no quotes)")
        if value is None:
            return None
        if not math.isfinite(value) or value <= 0:
            raise self.error(f"{prefix}.{key}", f"{value} is not a positive number of seconds",
                             f"write {key} = 600 (seconds, more than 0), or remove it for the "
                             "default")
        return float(value)

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
                    raise self.error(dotted, f"{item!r} is not something sudo can be used for",
                                     f"{close_hint(item, SUDO_KEYS)}name any of "
                                     f"{', '.join(SUDO_KEYS)}")
            chosen = frozenset(value)
        else:
            raise self.wrong_type(dotted, "true, false or a list of names", value, fix)
        if chosen and ssh is None:
            raise self.error(dotted, "sudo is used on SSH hosts only, and this one is this "
                             "machine (no ssh)", "remove sudo and run knobtop as a user who can "
                             "restart the server and write the drop-in, or set ssh")
        return chosen

    def destination(self, table: Table, key: str, prefix: str, *, blank: str) -> str | None:
        """An SSH destination (``ssh``, ``jump``): an alias, host, user@host[:port]; a blank
        one's fix is ``blank`` and the forms a destination takes."""
        value = self.opt_str(table, key, prefix, empty_fix=blank + DEST_FIX)
        if value is None:
            return None
        try:
            parse_destination(value)
        except ValueError as exc:
            raise self.error(f"{prefix}.{key}", str(exc), DEST_FIX) from None
        return value

    def absolute(self, value: S, key: str, prefix: str, fix: str) -> S:
        """``value`` (read from ``prefix.key``) when it is an absolute path (or None)."""
        if value is not None and not value.startswith("/"):
            raise self.error(f"{prefix}.{key}", f"{value!r} is not an absolute path", fix)
        return value

    # ---- sections

    def profile(self, doc: Table, name: str, path: Path | None) -> Profile:
        self.check_keys(doc, ("target", "client", "node", "ndb"), "")
        target_table = self.table(doc, "target", "", "write the target as a [target] table")
        if target_table is None:
            raise self.error("target", "missing [target] table", "add a [target] table (an "
                             f"empty one means this machine); see {EXAMPLE_PATH}")
        target = self.target(target_table)
        clients = self.clients(doc.get("client"))
        nodes = self.nodes(doc.get("node"), target)
        ndb_table = self.table(doc, "ndb", "", "write it as an [ndb] table")
        ndb = None if ndb_table is None else self.ndb(ndb_table, target)
        return Profile(name=name, path=path, target=target, clients=clients, nodes=nodes, ndb=ndb)

    def target(self, table: Table) -> TargetSpec:
        p = "target"
        self.check_keys(
            table, ("ssh", "jump", "mysql", "restart_command", "dropin_path", "flavor", "sudo"),
            p,
        )
        ssh = self.destination(table, "ssh", p, blank="omit ssh for this machine, or ")
        jump = self.destination(table, "jump", p, blank="remove jump, or ")
        if jump is not None and ssh is None:
            raise self.error(
                f"{p}.jump",
                "a jump host is set but target.ssh is not (the target is this machine)",
                "set target.ssh to the server's destination, or remove jump",
            )
        restart = self.command(table, "restart_command", p, empty_fix='remove it, or write '
                               'e.g. "sudo systemctl restart mariadb"')
        dropin = self.absolute(
            self.opt_str(table, "dropin_path", p,
                         empty_fix="remove it, or give an absolute path on the target"),
            "dropin_path", p,
            'give an absolute path on the target, e.g. "/etc/mysql/conf.d/99-knobtop.cnf"')
        flavor = self.opt_str(table, "flavor", p, empty_fix="remove it to auto-detect")
        if flavor is not None:
            if flavor.lower() not in FLAVORS:
                raise self.error(
                    f"{p}.flavor",
                    f"unknown flavor {flavor!r}",
                    f"use one of {' | '.join(FLAVORS)}, or remove it to auto-detect",
                )
            flavor = flavor.lower()
        mysql_table = self.table(table, "mysql", p,
                                 "write the connection as a [target.mysql] table")
        return TargetSpec(ssh=ssh, jump=jump, mysql=self.mysql(mysql_table or {}),
                          restart_command=restart, dropin_path=dropin, flavor=flavor,
                          sudo=self.sudo(table, p, ssh))

    def endpoint(
        self, table: Table, p: str, where: str
    ) -> tuple[str | None, int | None, str | None]:
        """host, port and socket of a MySQL table (None = not given)."""
        host = self.opt_str(table, "host", p, empty_fix='remove it, or write host = "127.0.0.1"')
        port = self.port(table, "port", p, "use the server's port, e.g. 3306")
        socket = self.absolute(
            self.opt_str(table, "socket", p,
                         empty_fix=f"remove it, or give the socket path on {where}"),
            "socket", p, f'give the socket path on {where}, e.g. "/run/mysqld/mysqld.sock"')
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
            raise self.error(dotted, f"needs exactly one source, found {len(value)}",
                             f"write one of {forms}")
        key = next(iter(value))
        sub = f"{dotted}.{key}"
        if key == "env":
            env = self.get(value, key, dotted, "a string", is_str,
                           'write env = "KNOBTOP_DB_PASSWORD"')
            if env is None or not ENV_NAME.match(env):
                raise self.error(sub, f"{env!r} is not an environment variable name",
                                 'use letters, digits and _, e.g. env = "KNOBTOP_DB_PASSWORD"')
            return f"env:{env}", None
        if not self.boolean(value, key, dotted, f"write {key} = true"):
            raise self.error(sub, f"{key} = false selects no source", f"write {forms}")
        return key, None

    def clients(self, value: object) -> tuple[ClientSpec, ...]:
        if value is None:
            return ()
        out: list[ClientSpec] = []
        seen: dict[str, int] = {}
        fix = "write each client as a [[client]] table (double brackets)"
        for i, p, item in self.tables(value, "client", fix):
            self.check_keys(item, ("ssh", "sysbench", "name", "mysql_host", "mysql_port"), p)
            ssh = self.destination(item, "ssh", p, blank="omit ssh for this machine, or ")
            sysbench = self.command(  # the program knobtop runs as the load
                item, "sysbench", p, empty_fix='remove it, or write sysbench = "/usr/bin/sysbench"'
            )
            name = self.opt_str(item, "name", p, empty_fix="remove it to use the ssh destination")
            mysql_host = self.opt_str(
                item, "mysql_host", p, empty_fix="remove it, or give the server's address"
            )
            client = ClientSpec(ssh=ssh, sysbench=sysbench or "sysbench", name=name or "",
                                mysql_host=mysql_host,
                                mysql_port=self.port(item, "mysql_port", p, "e.g. 3306"))
            self.once(seen, client.name, "client", i)
            out.append(client)
        return tuple(out)

    def nodes(self, value: object, target: TargetSpec) -> tuple[NodeSpec, ...]:
        if value is None:
            return ()
        out: list[NodeSpec] = []
        seen: dict[str, int] = {}
        fix = "write each server as a [[node]] table (double brackets)"
        for i, p, item in self.tables(value, "node", fix):
            node = self.node(item, p, target)
            self.once(seen, node.name, "node", i)
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
        ssh = self.destination(table, "ssh", p, blank="omit ssh to use target.ssh, or ")
        example = '"sudo systemctl restart mariadb"'
        restart = self.required(
            self.command(table, "restart_command", p, empty_fix=f"write it = {example}"),
            "restart_command", p, f"add restart_command = {example}")
        dropin = self.absolute(
            self.req_str(table, "dropin_path", p,
                         example='"/etc/mysql/conf.d/99-knobtop.cnf" (absolute)'),
            "dropin_path", p,
            'give an absolute path on that server, e.g. "/etc/mysql/conf.d/99-knobtop.cnf"')
        mp = f"{p}.mysql"
        mysql_table = self.table(table, "mysql", p, f"write the connection as a [{mp}] table")
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
        ssh = self.destination(table, "ssh", p, blank="omit ssh to use target.ssh, or ")
        config_ini = self.absolute(
            self.req_str(table, "config_ini", p,
                         example='"/var/lib/mysql-cluster/config.ini" (absolute)'),
            "config_ini", p, "give the absolute path on the management host, e.g. "
            '"/var/lib/mysql-cluster/config.ini"')
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
