"""Profiles: TOML loading, every refusal (file, key, fix), destinations, my.cnf passwords."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from knobtop.profiles import (
    EXAMPLE_PATH,
    ClientSpec,
    MysqlSpec,
    NdbSpec,
    NodeSpec,
    Profile,
    ProfileError,
    TargetSpec,
    lab_profile,
    list_profiles,
    load_profile,
    parse_destination,
    password_from_mycnf,
    profile_from_args,
)

MINIMAL = '[target]\nssh = "db1"\n'


def write(tmp_path: Path, body: str, name: str = "p", mode: int = 0o600) -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(body)
    os.chmod(path, mode)
    return path


def refused(path: Path, key: str | None) -> ProfileError:
    with pytest.raises(ProfileError) as info:
        load_profile(str(path))
    err = info.value
    message = str(err)
    assert str(path) in message
    assert err.file == str(path)
    assert err.key == key
    if key is not None:
        assert key in message
    assert "fix: " in message
    assert err.fix and err.fix in message
    return err


# --------------------------------------------------------------------------- loading


def test_example_file_loads() -> None:
    profile = load_profile(str(EXAMPLE_PATH))
    assert profile.name == "profile_example"
    assert profile.path == EXAMPLE_PATH
    target = profile.target
    assert target.ssh == "db1"
    assert target.jump == "bastion"
    assert target.restart_command == "systemctl restart mariadb"
    assert target.sudo == {"restart_command", "dropin_path"}
    assert target.dropin_path == "/etc/mysql/mariadb.conf.d/99-knobtop.cnf"
    assert target.flavor == "mariadb"
    assert target.mysql == MysqlSpec(
        host="127.0.0.1",
        port=3306,
        socket="/run/mysqld/mysqld.sock",
        user="knobtop",
        password_source="env:KNOBTOP_DB_PASSWORD",
    )
    assert target.mysql.password_env == "KNOBTOP_DB_PASSWORD"
    assert profile.clients == (
        ClientSpec(
            ssh="app1",
            sysbench="/usr/bin/sysbench",
            name="app1",
            mysql_host="db1.internal",
            mysql_port=3306,
        ),
        ClientSpec(ssh="bench@app2:2222", sysbench="sysbench", name="bench@app2:2222"),
    )
    assert profile.nodes == ()
    assert profile.ndb is None
    assert [n.name for n in profile.server_nodes()] == ["db1"]


def test_name_lookup_in_config_dir_and_defaults(tmp_path: Path) -> None:
    write(tmp_path, "[target]\n", name="local")
    profile = load_profile("local", config_dir=tmp_path)
    assert profile.name == "local"
    assert profile.path == tmp_path / "local.toml"
    assert profile.target.ssh is None
    assert profile.target.mysql == MysqlSpec()
    assert profile.target.mysql.password_source == "prompt"
    assert profile.clients == ()


def test_xdg_config_home_is_honoured(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "knobtop" / "profiles"
    directory.mkdir(parents=True)
    write(directory, MINIMAL, name="db")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    assert load_profile("db").target.ssh == "db1"
    assert list_profiles() == ["db"]


def test_missing_named_profile_lists_existing(tmp_path: Path) -> None:
    write(tmp_path, MINIMAL, name="alpha")
    write(tmp_path, MINIMAL, name="beta")
    with pytest.raises(ProfileError) as info:
        load_profile("gamma", config_dir=tmp_path)
    message = str(info.value)
    assert str(tmp_path / "gamma.toml") in message
    assert "'gamma' not found" in message
    assert "use one of: alpha, beta" in message


def test_missing_dir_says_how_to_start(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ProfileError) as info:
        load_profile("x", config_dir=missing)
    assert f"create {missing}" in str(info.value)
    assert str(EXAMPLE_PATH) in info.value.fix


def test_toml_syntax_error_has_line_column_and_key(tmp_path: Path) -> None:
    path = write(tmp_path, '[target]\nssh = "db1"\n[target.mysql]\nport = 33 06\n')
    err = refused(path, "target.mysql.port")
    assert "line 4, column" in err.problem
    assert "TOML syntax error" in err.problem
    assert "correct the TOML at line 4" in err.fix


@pytest.mark.parametrize(
    ("body", "key", "suggestion"),
    [
        ('[target]\nshh = "db1"\n', "target.shh", "'ssh'"),
        ("[target]\n[target.mysql]\nprot = 3306\n", "target.mysql.prot", "'port'"),
        ("[target]\n[[clients]]\n", "clients", "'client'"),
        ('[target]\n[[client]]\nsysbnech = "x"\n', "client[0].sysbnech", "'sysbench'"),
        (
            '[target]\n[target.mysql]\npassword = { evn = "X" }\n',
            "target.mysql.password.evn",
            "'env'",
        ),
    ],
)
def test_unknown_key_suggests_closest(tmp_path: Path, body: str, key: str, suggestion: str) -> None:
    err = refused(write(tmp_path, body), key)
    assert err.problem == "unknown key"
    assert f"did you mean {suggestion}?" in err.fix


def test_unknown_key_without_near_match_lists_known(tmp_path: Path) -> None:
    err = refused(write(tmp_path, "[target]\nzzzzzz = 1\n"), "target.zzzzzz")
    assert err.fix.startswith("remove it; known keys here: ssh, jump, mysql")


@pytest.mark.parametrize(
    ("body", "key", "expected", "found", "fix"),
    [
        (
            '[target]\n[target.mysql]\nport = "3306"\n',
            "target.mysql.port",
            "an integer",
            "string '3306'",
            "port = 3306 (a number, no quotes)",
        ),
        (
            "[target]\n[target.mysql]\nport = true\n",
            "target.mysql.port",
            "an integer",
            "boolean True",
            "a whole number",
        ),
        ("[target]\nssh = 42\n", "target.ssh", "a string", "integer 42", 'ssh = "42"'),
        ('target = "db1"\n', "target", "a table", "string 'db1'", "[target] table"),
        ("[target]\nmysql = 5\n", "target.mysql", "a table", "integer 5", "[target.mysql]"),
        (
            "[target]\n[client]\n",
            "client",
            "an array of tables ([[client]])",
            "table",
            "[[client]]",
        ),
        (
            "[target]\n[target.mysql]\npassword = 1234\n",
            "target.mysql.password",
            "a string or a table",
            "integer",
            "mycnf = true",
        ),
        (
            "[target]\n[target.mysql]\npassword = { env = 7 }\n",
            "target.mysql.password.env",
            "a string",
            "integer",
            'env = "KNOBTOP_DB_PASSWORD"',
        ),
        (
            '[target]\n[target.mysql]\npassword = { mycnf = "yes" }\n',
            "target.mysql.password.mycnf",
            "a boolean",
            "string",
            "mycnf = true",
        ),
    ],
)
def test_wrong_type(
    tmp_path: Path, body: str, key: str, expected: str, found: str, fix: str
) -> None:
    err = refused(write(tmp_path, body), key)
    assert err.problem.startswith(f"expected {expected}, found {found}")
    assert fix in err.fix


def test_wrong_type_never_echoes_a_password(tmp_path: Path) -> None:
    path = write(tmp_path, "[target]\n[target.mysql]\npassword = 987654321\n")
    err = refused(path, "target.mysql.password")
    assert "987654321" not in str(err)


@pytest.mark.parametrize(
    ("body", "key", "problem", "fix"),
    [
        ("[target]\n[target.mysql]\nport = 0\n", "target.mysql.port", "out of range", "3306"),
        ("[target]\n[target.mysql]\nport = 70000\n", "target.mysql.port", "70000", "3306"),
        ('[target]\nflavor = "percona"\n', "target.flavor", "'percona'", "mariadb | mysql"),
        ('[target]\nssh = ""\n', "target.ssh", "is empty", "omit ssh for this machine"),
        ('[target]\nssh = "db1:99999"\n', "target.ssh", "out of range", "user@host:port"),
        ('[target]\nssh = "-oProxyCommand=x"\n', "target.ssh", "not a valid host", "alias"),
        ('[target]\njump = "bastion"\n', "target.jump", "target.ssh is not", "set target.ssh"),
        ('[target]\ndropin_path = "conf.d/x.cnf"\n', "target.dropin_path", "absolute", "/etc"),
        (
            '[target]\n[target.mysql]\nsocket = "x.sock"\n',
            "target.mysql.socket",
            "absolute",
            "/run",
        ),
        ('[target]\n[target.mysql]\nuser = ""\n', "target.mysql.user", "empty", 'user = "root"'),
        (
            '[target]\n[target.mysql]\npassword = { env = "NOT-A-VAR" }\n',
            "target.mysql.password.env",
            "not an environment variable name",
            "KNOBTOP_DB_PASSWORD",
        ),
        (
            "[target]\n[target.mysql]\npassword = { mycnf = true, prompt = true }\n",
            "target.mysql.password",
            "exactly one source, found 2",
            "write one of",
        ),
        (
            "[target]\n[target.mysql]\npassword = { prompt = false }\n",
            "target.mysql.password.prompt",
            "selects no source",
            "prompt = true",
        ),
        ('[target]\n[[client]]\nssh = "a@"\n', "client[0].ssh", "no host", "user@host"),
        (
            '[target]\n[[client]]\nssh = "app1"\n[[client]]\nssh = "u@x"\nname = "app1"\n',
            "client[1].name",
            "already used by client[0]",
            "distinct name",
        ),
        ("[[client]]\n", "target", "missing [target] table", "add a [target] table"),
    ],
)
def test_bad_values(tmp_path: Path, body: str, key: str, problem: str, fix: str) -> None:
    err = refused(write(tmp_path, body), key)
    assert problem in err.problem
    assert fix in err.fix


def test_flavor_is_case_insensitive(tmp_path: Path) -> None:
    path = write(tmp_path, '[target]\nflavor = "MySQL"\n')
    assert load_profile(str(path)).target.flavor == "mysql"


# --------------------------------------------------------------------------- passwords


INLINE = '[target]\n[target.mysql]\npassword = "s3cret-value"\n'


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604])
def test_inline_password_in_readable_file_is_refused(tmp_path: Path, mode: int) -> None:
    path = write(tmp_path, INLINE, mode=mode)
    err = refused(path, "target.mysql.password")
    assert err.fix == f'chmod 600 {path}, or use password = {{ env = "..." }}'
    assert "group or others can read" in err.problem
    assert "s3cret-value" not in str(err)


def test_inline_password_in_private_file_is_accepted(tmp_path: Path) -> None:
    path = write(tmp_path, INLINE, mode=0o600)
    mysql = load_profile(str(path)).target.mysql
    assert mysql.password_source == "inline"
    assert mysql.password == "s3cret-value"
    assert "s3cret-value" not in repr(mysql)


def test_readable_file_without_inline_password_is_fine(tmp_path: Path) -> None:
    path = write(tmp_path, '[target]\n[target.mysql]\npassword = { env = "PW" }\n', mode=0o644)
    assert load_profile(str(path)).target.mysql.password_source == "env:PW"


@pytest.mark.parametrize(
    ("value", "source", "env"),
    [
        ('{ env = "KNOBTOP_PW" }', "env:KNOBTOP_PW", "KNOBTOP_PW"),
        ("{ mycnf = true }", "mycnf", None),
        ("{ prompt = true }", "prompt", None),
    ],
)
def test_password_sources(tmp_path: Path, value: str, source: str, env: str | None) -> None:
    path = write(tmp_path, f"[target]\n[target.mysql]\npassword = {value}\n", mode=0o644)
    mysql = load_profile(str(path)).target.mysql
    assert mysql.password_source == source
    assert mysql.password_env == env
    assert mysql.password is None


def test_mysqlspec_rejects_unknown_source() -> None:
    with pytest.raises(ValueError, match="password_source 'vault'"):
        MysqlSpec(password_source="vault")
    with pytest.raises(ValueError, match="env:VARNAME"):
        MysqlSpec(password_source="env:1BAD")


MYCNF = r"""
# ~/.my.cnf on db1
[mysqld]
password = server-side-not-ours

[client]
user = knobtop
password = "first#not-a-comment"   # trailing comment
host=127.0.0.1

; a semicolon comment
[mysqldump]
password = dump-only

[mysql]
pass = 'p@ss "quoted" # kept'  # comment after quotes
"""


def test_mycnf_last_client_or_mysql_password_wins() -> None:
    assert password_from_mycnf(MYCNF) == 'p@ss "quoted" # kept'


def test_mycnf_client_section_quotes_and_comments() -> None:
    text = MYCNF.split("; a semicolon comment")[0]
    assert password_from_mycnf(text) == "first#not-a-comment"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[client]\npassword=plain # comment\n", "plain"),
        ("[CLIENT]\n  password  =  spaced  \n", "spaced"),
        ("[client]\nloose-password = loose\n", "loose"),
        ("[client]\npassword = a\\sb\\\\c\\tq\n", "a b\\c\tq"),
        ('[client]\npassword = ""\n', ""),
        ("[client]\npassword = x\n[client]\npassword\n", None),
        ("[mysqld]\npassword = x\n", None),
        ("password = outside-any-group\n", None),
        ("[client]\nuser = u\n!includedir /etc/mysql/conf.d/\n", None),
        ("[client]\npasswd = nope\n", None),
    ],
)
def test_mycnf_cases(text: str, expected: str | None) -> None:
    assert password_from_mycnf(text) == expected


# --------------------------------------------------------------------------- destinations


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("db1", (None, "db1", None)),
        ("user@db1", ("user", "db1", None)),
        ("user@db1.example.com:2222", ("user", "db1.example.com", 2222)),
        ("db_alias-2:22", (None, "db_alias-2", 22)),
        ("10.0.0.5:65535", (None, "10.0.0.5", 65535)),
        ("[::1]:2222", (None, "::1", 2222)),
        ("root@[fe80::1]", ("root", "fe80::1", None)),
    ],
)
def test_parse_destination(text: str, expected: tuple[str | None, str, int | None]) -> None:
    assert parse_destination(text) == expected


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "empty destination"),
        ("user@", "no host"),
        ("@db1", "empty user"),
        ("db1:0", "out of range"),
        ("db1:65536", "out of range"),
        ("db1:ssh", "not a number"),
        ("db 1", "whitespace"),
        ("db1::x", "not an IPv6 address; write [v6addr]:port"),
        ("[::1", "closing"),
        ("[::1]x", "after ']'"),
        ("[db1]:22", "not an IPv6 address"),
        ("-oProxyCommand=evil", "not a valid host"),
        ("bad user@db1", "whitespace"),
        ("us/er@db1", "not a valid user"),
    ],
)
def test_parse_destination_refuses(text: str, problem: str) -> None:
    with pytest.raises(ValueError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        parse_destination(text)


# --------------------------------------------------------------------------- ad hoc and lab


def test_profile_from_args() -> None:
    profile = profile_from_args(
        "user@db1:2222",
        ["user@app1", "app2"],
        mysql_user="knobtop",
        mysql_port=3307,
        mysql_socket="/run/mysqld/mysqld.sock",
        password_env="KNOBTOP_DB_PASSWORD",
    )
    assert profile.name == "adhoc"
    assert profile.path is None
    assert profile.target.ssh == "user@db1:2222"
    assert profile.target.jump is None
    assert profile.target.mysql == MysqlSpec(
        port=3307,
        socket="/run/mysqld/mysqld.sock",
        user="knobtop",
        password_source="env:KNOBTOP_DB_PASSWORD",
    )
    assert [c.name for c in profile.clients] == ["user@app1", "app2"]
    assert all(c.sysbench == "sysbench" for c in profile.clients)


def test_profile_from_args_local_target_prompts() -> None:
    profile = profile_from_args(None, [])
    assert profile.target.ssh is None
    assert profile.target.mysql.password_source == "prompt"
    assert profile.clients == ()


@pytest.mark.parametrize(
    ("kwargs", "key", "problem"),
    [
        ({"target": "db1:0"}, "--target", "out of range"),
        ({"target": "db1", "clients": ["u@"]}, "--client", "no host"),
        ({"target": "db1", "clients": ["a", "a"]}, "--client", "given twice"),
        ({"target": "db1", "mysql_port": 0}, "--mysql-port", "out of range"),
        ({"target": "db1", "password_env": "X-Y"}, "--password-env", "not an environment"),
        ({"target": "db1", "mysql_socket": "rel.sock"}, "--mysql-socket", "absolute"),
        ({"target": "db1", "mysql_user": ""}, "--mysql-user", "empty user"),
    ],
)
def test_profile_from_args_refuses(kwargs: dict[str, object], key: str, problem: str) -> None:
    target = kwargs.pop("target")
    clients = kwargs.pop("clients", [])
    assert isinstance(target, str)
    assert isinstance(clients, list)
    with pytest.raises(ProfileError) as info:
        profile_from_args(target, clients, **kwargs)  # type: ignore[arg-type]
    err = info.value
    assert err.file == "command line"
    assert err.key == key
    assert problem in err.problem
    assert f"command line: {key}: " in str(err)
    assert "fix: " in str(err)


def test_lab_profile_is_all_local() -> None:
    profile = lab_profile("/tmp/lab/mysqld.sock", 33061, "root")
    assert profile.name == "lab"
    assert profile.path is None
    assert profile.target.ssh is None
    assert profile.target.jump is None
    assert profile.target.mysql == MysqlSpec(
        port=33061, socket="/tmp/lab/mysqld.sock", user="root", password_source="inline"
    )
    assert profile.target.mysql.password is None
    assert [c.ssh for c in profile.clients] == [None]
    assert profile.clients[0].name == "local"


def test_server_address_as_a_client_sees_it() -> None:
    from knobtop.profiles import server_address

    remote = Profile("p", None, TargetSpec(ssh="dba@db1:2222", mysql=MysqlSpec(port=3307)))
    # Loopback on a remote target means that machine: use its SSH host name.
    assert server_address(remote, ClientSpec(ssh="app1")) == ("db1", 3307)
    # A client on the target itself keeps loopback.
    assert server_address(remote, ClientSpec(ssh="dba@db1:2222")) == ("127.0.0.1", 3307)
    # An explicit address wins.
    explicit = ClientSpec(ssh="app1", mysql_host="10.0.0.5", mysql_port=3306)
    assert server_address(remote, explicit) == ("10.0.0.5", 3306)
    routed = Profile("p", None, TargetSpec(ssh="db1", mysql=MysqlSpec(host="db1.lan")))
    assert server_address(routed, ClientSpec(ssh="app1")) == ("db1.lan", 3306)


def test_client_mysql_port_is_checked(tmp_path: Path) -> None:
    path = tmp_path / "p.toml"
    path.write_text('[target]\n[[client]]\nssh = "app1"\nmysql_port = 0\n')
    with pytest.raises(ProfileError) as exc:
        load_profile(str(path))
    assert exc.value.key == "client[0].mysql_port"
    assert "out of range" in str(exc.value)


# --------------------------------------------------------------------------- nodes and ndb


NODES = """
[target]
ssh = "db1"
[target.mysql]
socket = "/run/mysqld/mysqld.sock"
port = 3307
user = "knobtop"
password = { env = "PW" }

[[node]]
name = "db1"
restart_command = "sudo systemctl restart mariadb"
dropin_path = "/etc/mysql/conf.d/99-knobtop.cnf"

[[node]]
name = "db2"
ssh = "admin@db2:2222"
restart_command = "systemctl restart mysqld"
dropin_path = "/etc/my.cnf.d/99-knobtop.cnf"
[node.mysql]
host = "10.0.0.2"
port = 3306
"""


def test_nodes_load_with_target_defaults(tmp_path: Path) -> None:
    profile = load_profile(str(write(tmp_path, NODES)))
    assert profile.nodes == (
        NodeSpec(
            name="db1",
            ssh="db1",
            mysql_host="127.0.0.1",
            mysql_port=3307,
            mysql_socket="/run/mysqld/mysqld.sock",
            restart_command="sudo systemctl restart mariadb",
            dropin_path="/etc/mysql/conf.d/99-knobtop.cnf",
        ),
        NodeSpec(
            name="db2",
            ssh="admin@db2:2222",
            mysql_host="10.0.0.2",
            mysql_port=3306,
            mysql_socket="/run/mysqld/mysqld.sock",
            restart_command="systemctl restart mysqld",
            dropin_path="/etc/my.cnf.d/99-knobtop.cnf",
        ),
    )
    assert profile.server_nodes() == profile.nodes
    db2 = profile.node_mysql(profile.nodes[1])
    assert (db2.host, db2.port, db2.user, db2.password_source) == (
        "10.0.0.2",
        3306,
        "knobtop",
        "env:PW",
    )


def test_server_nodes_from_the_target_alone() -> None:
    mysql = MysqlSpec(host="10.0.0.9", port=3307, socket="/tmp/m.sock")
    target = TargetSpec(
        ssh="dba@db1", mysql=mysql, restart_command="restart-it", dropin_path="/etc/x.cnf"
    )
    assert Profile("p", None, target).server_nodes() == (
        NodeSpec("dba@db1", "dba@db1", "10.0.0.9", 3307, "/tmp/m.sock", "restart-it", "/etc/x.cnf"),
    )
    local = TargetSpec(restart_command="restart-it", dropin_path="/etc/x.cnf")
    (node,) = Profile("p", None, local).server_nodes()
    assert (node.name, node.ssh) == ("local", None)


@pytest.mark.parametrize(
    "target",
    [
        TargetSpec(ssh="db1"),
        TargetSpec(ssh="db1", restart_command="restart-it"),
        TargetSpec(ssh="db1", dropin_path="/etc/x.cnf"),
    ],
)
def test_server_nodes_none_without_restart_and_dropin(target: TargetSpec) -> None:
    assert Profile("p", None, target).server_nodes() == ()


NODE = '[[node]]\nname = "{name}"\nrestart_command = "r"\ndropin_path = "/etc/k.cnf"\n'


@pytest.mark.parametrize(
    ("body", "key", "problem", "fix"),
    [
        (
            "[target]\n" + NODE.format(name="a") + NODE.format(name="a"),
            "node[1].name",
            "'a' is already used by node[0]",
            "distinct name",
        ),
        (
            '[target]\n[[node]]\nname = "a"\ndropin_path = "/etc/k.cnf"\n',
            "node[0].restart_command",
            "missing restart_command",
            'add restart_command = "sudo systemctl restart mariadb"',
        ),
        (
            '[target]\n[[node]]\nrestart_command = "r"\ndropin_path = "/etc/k.cnf"\n',
            "node[0].name",
            "missing name",
            "add name = ",
        ),
        (
            '[target]\n[[node]]\nname = "a"\nrestart_command = "r"\ndropin_path = "k.cnf"\n',
            "node[0].dropin_path",
            "'k.cnf' is not an absolute path",
            "absolute path",
        ),
        (
            '[target]\nrestart_command = "r"\n' + NODE.format(name="a"),
            "target.restart_command",
            "together with [[node]]",
            "remove target.restart_command;",
        ),
        (
            '[target]\nrestart_command = "r"\ndropin_path = "/x"\n' + NODE.format(name="a"),
            "target.restart_command",
            "together with [[node]]",
            "remove target.restart_command and target.dropin_path;",
        ),
        (
            '[target]\ndropin_path = "/x"\n' + NODE.format(name="a"),
            "target.dropin_path",
            "together with [[node]]",
            "remove target.dropin_path;",
        ),
        (
            "[target]\n" + NODE.format(name="a") + "[node.mysql]\nport = 0\n",
            "node[0].mysql.port",
            "out of range",
            "3306",
        ),
        (
            "[target]\n" + NODE.format(name="a") + '[node.mysql]\nsocket = "m.sock"\n',
            "node[0].mysql.socket",
            "not an absolute path",
            "socket path on that server",
        ),
        (
            "[target]\n" + NODE.format(name="a") + '[node.mysql]\nuser = "root"\n',
            "node[0].mysql.user",
            "no user of its own",
            "the user in [target.mysql]",
        ),
        (
            "[target]\n" + NODE.format(name="a") + 'ssh = "a@"\n',
            "node[0].ssh",
            "no host",
            "user@host",
        ),
        (
            '[target]\n[ndb]\nconfig_ini = "/c.ini"\nmgmd_command = "ndb_mgmd -f x.ini"\n',
            "ndb.mgmd_command",
            "does not contain {config}",
            "{config} stands for config_ini",
        ),
        (
            '[target]\n[ndb]\nconfig_ini = "/c.ini"\nmgmd_command = "ndb_mgmd \'{config}"\n',
            "ndb.mgmd_command",
            "cannot be split into words",
            "{config} stands for config_ini",
        ),
        (
            '[target]\n[ndb]\nconfig_ini = "/c.ini"\nnode_timeout = -5\n',
            "ndb.node_timeout",
            "-5 is not a positive number of seconds",
            "node_timeout = 600",
        ),
        (
            '[target]\n[ndb]\nconfig_ini = "/c.ini"\nnode_timeout = 0.0\n',
            "ndb.node_timeout",
            "not a positive number",
            "more than 0",
        ),
        (
            '[target]\n[ndb]\nconfig_ini = "/c.ini"\nnode_timeout = inf\n',
            "ndb.node_timeout",
            "not a positive number",
            "more than 0",
        ),
        ("[target]\n[ndb]\n", "ndb.config_ini", "missing config_ini", "add config_ini = "),
        (
            '[target]\n[ndb]\nconfig_ini = "config.ini"\n',
            "ndb.config_ini",
            "not an absolute path",
            "management host",
        ),
    ],
)
def test_bad_nodes_and_ndb(tmp_path: Path, body: str, key: str, problem: str, fix: str) -> None:
    err = refused(write(tmp_path, body), key)
    assert problem in err.problem
    assert fix in err.fix


@pytest.mark.parametrize(
    ("body", "key", "suggestion"),
    [
        (
            "[target]\n" + NODE.format(name="a") + 'dropin = "/x"\n',
            "node[0].dropin",
            "'dropin_path'",
        ),
        (
            "[target]\n" + NODE.format(name="a") + '[node.mysql]\nsockett = "/s"\n',
            "node[0].mysql.sockett",
            "'socket'",
        ),
        ('[target]\n[ndb]\nconfig_ini = "/c.ini"\ntimeout = 5\n', "ndb.timeout", "'node_timeout'"),
        ('[target]\n[ndb]\nconfig_ini = "/c.ini"\nzzzzzz = 5\n', "ndb.zzzzzz", None),
        (
            '[target]\n[ndb]\nconfig_ini = "/c.ini"\nmgmd_comand = "x"\n',
            "ndb.mgmd_comand",
            "'mgmd_command'",
        ),
        ("[target]\n[nbd]\n", "nbd", "'ndb'"),
    ],
)
def test_unknown_keys_in_node_and_ndb(
    tmp_path: Path, body: str, key: str, suggestion: str | None
) -> None:
    err = refused(write(tmp_path, body), key)
    assert err.problem == "unknown key"
    if suggestion is None:
        assert "known keys here: ssh, config_ini, connect_string" in err.fix
    else:
        assert f"did you mean {suggestion}?" in err.fix


@pytest.mark.parametrize(
    ("body", "key", "expected", "found"),
    [
        ("[target]\n[node]\n", "node", "an array of tables ([[node]])", "table"),
        ("ndb = 1\n[target]\n", "ndb", "a table", "integer 1"),
        (
            '[target]\n[ndb]\nconfig_ini = "/c.ini"\nnode_timeout = "600"\n',
            "ndb.node_timeout",
            "a number of seconds",
            "string '600'",
        ),
        (
            '[target]\n[ndb]\nconfig_ini = "/c.ini"\nnode_timeout = true\n',
            "ndb.node_timeout",
            "a number of seconds",
            "boolean True",
        ),
        (
            '[target]\n[[node]]\nname = 1\nrestart_command = "r"\ndropin_path = "/x"\n',
            "node[0].name",
            "a string",
            "integer 1",
        ),
    ],
)
def test_wrong_types_in_node_and_ndb(
    tmp_path: Path, body: str, key: str, expected: str, found: str
) -> None:
    err = refused(write(tmp_path, body), key)
    assert err.problem == f"expected {expected}, found {found}"


def test_ndb_loads_with_defaults(tmp_path: Path) -> None:
    body = '[target]\nssh = "db1"\n[ndb]\nconfig_ini = "/var/lib/mysql-cluster/config.ini"\n'
    ndb = load_profile(str(write(tmp_path, body))).ndb
    assert ndb == NdbSpec(
        ssh="db1",
        config_ini="/var/lib/mysql-cluster/config.ini",
        connect_string=None,
        mgmd_command="ndb_mgmd -f {config} --reload",
        node_timeout=600.0,
    )
    assert ndb.mgmd_argv == ("ndb_mgmd", "-f", "{config}", "--reload")


def test_ndb_loads_given_values(tmp_path: Path) -> None:
    body = (
        '[target]\nssh = "db1"\n[ndb]\nssh = "mgm@mgm1"\nconfig_ini = "/c.ini"\n'
        'connect_string = "mgm1:1186"\n'
        "mgmd_command = \"sudo ndb_mgmd --config-file='{config}' --reload\"\n"
        "node_timeout = 90\n"
    )
    ndb = load_profile(str(write(tmp_path, body))).ndb
    command = "sudo ndb_mgmd --config-file='{config}' --reload"
    assert ndb == NdbSpec("mgm@mgm1", "/c.ini", "mgm1:1186", command, 90.0)
    assert ndb.mgmd_argv == ("sudo", "ndb_mgmd", "--config-file={config}", "--reload")
    assert isinstance(ndb.node_timeout, float)


def test_example_file_commented_nodes_and_ndb_load(tmp_path: Path) -> None:
    """Uncommenting the optional examples (and dropping the target's restart settings,
    as the example says) gives a profile that loads."""
    lines = []
    for line in EXAMPLE_PATH.read_text().splitlines():
        if line.startswith(("restart_command", "dropin_path")):
            continue
        lines.append(line[1:] if re.match(r"#[\[a-z]", line) else line)
    profile = load_profile(str(write(tmp_path, "\n".join(lines) + "\n")))
    assert [n.name for n in profile.server_nodes()] == ["db1", "db2"]
    assert profile.nodes[0].ssh == "db1"
    assert profile.nodes[1].mysql_socket == "/run/mysqld/mysqld2.sock"
    assert profile.ndb is not None
    assert (profile.ndb.ssh, profile.ndb.connect_string) == ("mgm1", "mgm1:1186")


# --------------------------------------------------------------------------- sudo (issue 42)


def test_sudo_true_a_list_and_a_node_default(tmp_path: Path) -> None:
    body = ('[target]\nssh = "db1"\nrestart_command = "systemctl restart mariadb"\n'
            'dropin_path = "/etc/mysql/conf.d/zz.cnf"\nsudo = true\n')
    profile = load_profile(str(write(tmp_path, body)))
    assert profile.server_nodes()[0].sudo == {"restart_command", "dropin_path"}
    listed = load_profile(str(write(tmp_path, body.replace("sudo = true",
                                                            'sudo = ["restart_command"]'))))
    assert listed.server_nodes()[0].sudo == {"restart_command"}
    off = load_profile(str(write(tmp_path, body.replace("sudo = true", "sudo = false"))))
    assert off.server_nodes()[0].sudo == frozenset()
    nodes = ('[target]\nssh = "db1"\nsudo = ["dropin_path"]\n'
             '[[node]]\nname = "a"\nrestart_command = "r"\ndropin_path = "/x.cnf"\n'
             '[[node]]\nname = "b"\nrestart_command = "r"\ndropin_path = "/x.cnf"\nsudo = true\n')
    a, b = load_profile(str(write(tmp_path, nodes))).server_nodes()
    assert a.sudo == {"dropin_path"} and b.sudo == {"restart_command", "dropin_path"}


@pytest.mark.parametrize(
    ("value", "problem", "fix"),
    [
        ('["restart_comand"]', "'restart_comand' is not something sudo can be used for",
         "did you mean 'restart_command'?"),
        ('"yes"', "expected true, false or a list of names", "sudo = true"),
        ("[1]", "expected true, false or a list of names", 'sudo = ["restart_command"]'),
    ],
)
def test_bad_sudo_values_name_the_fix(tmp_path: Path, value: str, problem: str,
                                      fix: str) -> None:
    err = refused(write(tmp_path, f'[target]\nssh = "db1"\nsudo = {value}\n'), "target.sudo")
    assert problem in err.problem and fix in err.fix


def test_sudo_on_this_machine_is_refused(tmp_path: Path) -> None:
    err = refused(write(tmp_path, "[target]\nsudo = true\n"), "target.sudo")
    assert "SSH hosts only" in err.problem and "set ssh" in err.fix
    typo = refused(write(tmp_path, '[target]\nssh = "db1"\nsuod = true\n'), "target.suod")
    assert "did you mean 'sudo'?" in typo.fix
