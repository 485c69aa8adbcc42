"""Profiles: where the target server and the client hosts are, loaded from TOML and checked.

A profile lives in ``~/.config/knobtop/profiles/NAME.toml`` (``$XDG_CONFIG_HOME`` is
honoured) or at any path.  Layout (``knobtop/profile_example.toml`` is a complete copy)::

    [target]
    ssh = "db1"                # alias from ~/.ssh/config or user@host:port; omit for this machine
    jump = "bastion"           # optional
    restart_command = "sudo systemctl restart mariadb"
    dropin_path = "/etc/mysql/mariadb.conf.d/99-knobtop.cnf"
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

Unknown keys, wrong types, bad values and an inline password in a file that group or
others can read raise ``ProfileError`` naming the file, the dotted key and the fix.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import os
import re
import stat
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from knobtop.hosts.base import parse_destination

__all__ = [
    "EXAMPLE_PATH",
    "FLAVORS",
    "ClientSpec",
    "MysqlSpec",
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
FLAVORS = ("mariadb", "mysql")
COMMAND_LINE = "command line"

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_TOML_POS = re.compile(r"\(at line (\d+), column (\d+)\)")
_DEST_FIX = (
    "use an alias from ~/.ssh/config, host, user@host or user@host:port "
    "(IPv6 in brackets: user@[::1]:2222)"
)


class ProfileError(ValueError):
    """A profile cannot be used; ``file``, ``key``, ``problem`` and ``fix`` say why and how."""

    def __init__(self, file: str, key: str | None, problem: str, fix: str) -> None:
        self.file = file
        self.key = key
        self.problem = problem
        self.fix = fix
        where = f"{file}: {key}" if key else file
        super().__init__(f"{where}: {problem}\n  fix: {fix}")


# --------------------------------------------------------------------------- dataclasses


def _check_source(source: str) -> None:
    if source in ("mycnf", "prompt", "inline"):
        return
    if source.startswith("env:") and _ENV_NAME.match(source[4:]):
        return
    raise ValueError(
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
class Profile:
    """A named target plus its clients; ``path`` is the TOML file, None when built in code."""

    name: str
    path: Path | None
    target: TargetSpec
    clients: tuple[ClientSpec, ...] = ()


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


def _toml_type(value: object) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "table"
    if isinstance(value, list):
        return "array"
    if isinstance(value, _dt.date | _dt.time):
        return "datetime"
    return type(value).__name__


def _found(value: object, *, secret: bool = False) -> str:
    kind = _toml_type(value)
    if secret or isinstance(value, dict | list):
        return kind
    shown = repr(value)
    return f"{kind} {shown}" if len(shown) <= 40 else kind


_Table = Mapping[str, object]


class _Reader:
    """Checks one parsed TOML document and builds a Profile, raising ProfileError."""

    def __init__(self, file: str, mode: int | None) -> None:
        self.file = file
        self.mode = mode

    def error(self, key: str | None, problem: str, fix: str) -> ProfileError:
        return ProfileError(self.file, key, problem, fix)

    def check_keys(self, table: _Table, known: tuple[str, ...], prefix: str) -> None:
        for key in table:
            if key in known:
                continue
            dotted = f"{prefix}.{key}" if prefix else key
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            if close:
                fix = f"did you mean {close[0]!r}? Known keys here: {', '.join(known)}"
            else:
                fix = f"remove it; known keys here: {', '.join(known)}"
            raise self.error(dotted, "unknown key", fix)

    def wrong_type(self, dotted: str, expected: str, value: object, fix: str) -> ProfileError:
        secret = dotted.endswith("password") or ".password." in dotted
        return self.error(dotted, f"expected {expected}, found {_found(value, secret=secret)}", fix)

    def opt_str(self, table: _Table, key: str, prefix: str, *, empty_fix: str) -> str | None:
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

    def opt_int(self, table: _Table, key: str, prefix: str) -> int | None:
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

    def opt_table(self, table: _Table, key: str, prefix: str, fix: str) -> _Table | None:
        if key not in table:
            return None
        value = table[key]
        if not isinstance(value, dict):
            raise self.wrong_type(f"{prefix}.{key}" if prefix else key, "a table", value, fix)
        return value

    def destination(self, value: str | None, dotted: str) -> str | None:
        if value is None:
            return None
        try:
            parse_destination(value)
        except ValueError as exc:
            raise self.error(dotted, str(exc), _DEST_FIX) from None
        return value

    # ---- sections

    def profile(self, doc: _Table, name: str, path: Path | None) -> Profile:
        self.check_keys(doc, ("target", "client"), "")
        target_table = self.opt_table(doc, "target", "", "write the target as a [target] table")
        if target_table is None:
            raise self.error(
                "target",
                "missing [target] table",
                f"add a [target] table (an empty one means this machine); see {EXAMPLE_PATH}",
            )
        target = self.target(target_table)
        clients = self.clients(doc.get("client"))
        return Profile(name=name, path=path, target=target, clients=clients)

    def target(self, table: _Table) -> TargetSpec:
        p = "target"
        self.check_keys(
            table, ("ssh", "jump", "mysql", "restart_command", "dropin_path", "flavor"), p
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
        restart = self.opt_str(
            table,
            "restart_command",
            p,
            empty_fix='remove it, or write e.g. "sudo systemctl restart mariadb"',
        )
        dropin = self.opt_str(
            table, "dropin_path", p, empty_fix="remove it, or give an absolute path on the target"
        )
        if dropin is not None and not dropin.startswith("/"):
            raise self.error(
                f"{p}.dropin_path",
                f"{dropin!r} is not an absolute path",
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
        )

    def mysql(self, table: _Table) -> MysqlSpec:
        p = "target.mysql"
        self.check_keys(table, ("host", "port", "socket", "user", "password"), p)
        host = self.opt_str(table, "host", p, empty_fix='remove it, or write host = "127.0.0.1"')
        port = self.opt_int(table, "port", p)
        if port is not None and not 1 <= port <= 65535:
            raise self.error(
                f"{p}.port",
                f"port {port} is out of range 1-65535",
                "use the server's port, e.g. 3306",
            )
        socket = self.opt_str(
            table, "socket", p, empty_fix="remove it, or give the socket path on the target"
        )
        if socket is not None and not socket.startswith("/"):
            raise self.error(
                f"{p}.socket",
                f"{socket!r} is not an absolute path",
                'give the socket path on the target, e.g. "/run/mysqld/mysqld.sock"',
            )
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
            if self.mode is not None and self.mode & (stat.S_IRGRP | stat.S_IROTH):
                raise self.error(
                    dotted,
                    "an inline password in a file that group or others can read "
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
            sysbench = self.opt_str(
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
                ssh=ssh, sysbench=sysbench or "sysbench", name=name or "",
                mysql_host=mysql_host, mysql_port=mysql_port,
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


def _syntax_key(text: str, line: int) -> str:
    """Best guess at the dotted key a TOML syntax error at ``line`` (1-based) belongs to."""
    lines = text.splitlines()
    table = ""
    header = re.compile(r"\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?\Z")
    for previous in lines[: max(line - 1, 0)]:
        m = header.match(previous)
        if m:
            table = m.group(1).replace(" ", "").replace('"', "")
    key = ""
    if 0 < line <= len(lines):
        m = re.match(r"\s*([A-Za-z0-9_.-]+)\s*=", lines[line - 1])
        if m:
            key = m.group(1)
    dotted = ".".join(part for part in (table, key) if part)
    return dotted or "(top level)"


def _read(path: Path, shown: str, name: str) -> tuple[str, int]:
    try:
        with path.open("rb") as fh:
            mode = os.fstat(fh.fileno()).st_mode
            data = fh.read()
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
    except IsADirectoryError:
        raise ProfileError(
            shown, None, "is a directory, not a profile file", "give a NAME or a .toml file"
        ) from None
    except OSError as exc:
        raise ProfileError(
            shown, None, f"cannot read: {exc.strerror}", "check the path and its permissions"
        ) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ProfileError(
            shown, None, f"not UTF-8 text (byte {exc.start})", "save the file as UTF-8"
        ) from None
    return text, mode


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
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        message = str(exc)
        m = _TOML_POS.search(message)
        if m:
            line, col = int(m.group(1)), int(m.group(2))
            where = f"line {line}, column {col}"
            key = _syntax_key(text, line)
        else:
            where = "end of file"
            key = _syntax_key(text, len(text.splitlines()) + 1)
        problem = f"TOML syntax error at {where}: {_TOML_POS.sub('', message).strip()}"
        fix = (
            f"correct the TOML at {where} (strings need quotes, each key once per table); "
            f"see {EXAMPLE_PATH}"
        )
        raise ProfileError(shown, key, problem, fix) from None
    return _Reader(shown, mode).profile(doc, name, path)


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
