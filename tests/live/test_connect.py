"""`knobtop connect` across two loopback "hosts" (real sshd each), a real mariadbd and sysbench."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import orjson
import pytest

from harness.binaries import require_binary
from harness.cli import knobtop_process
from harness.sshd import SshServer
from knobtop.lab import Sandbox

pytestmark = pytest.mark.integration


@pytest.fixture
def crash_target() -> Iterator[SshServer]:
    """A target host of this test's own (127.0.0.4): the test crashes its sshd."""
    with SshServer(require_binary("sshd", "openssh-server"), listen="127.0.0.4") as server:
        yield server


def ssh_args(tmp_path: Path, *servers: SshServer) -> list[str]:
    known = tmp_path / "known_hosts"
    known.write_text("".join(s.known_hosts_path.read_text() for s in servers))
    args = ["--known-hosts", str(known), "--ssh-config", "none"]
    for server in servers:
        args += ["-i", str(server.client_key_path)]
    return args


def write_profile(path: Path, target: SshServer, client: SshServer, mariadb: Sandbox) -> None:
    info = mariadb.connection()
    path.write_text(
        "[target]\n"
        f'ssh = "{target.user}@{target.host}:{target.port}"\n'
        "[target.mysql]\n"
        f'socket = "{mariadb.socket}"\n'
        f'user = "{info.user}"\n'
        'password = { env = "KNOBTOP_TEST_DB_PASSWORD" }\n'
        "[[client]]\n"
        f'ssh = "{client.user}@{client.host}:{client.port}"\n'
        'name = "app"\n'
        'mysql_host = "127.0.0.1"\n'
        f"mysql_port = {info.port}\n"
    )
    path.chmod(0o600)


def knobtop(*args: str, home: Path, password: str | None = None) -> subprocess.Popen[str]:
    """`knobtop connect` with ``home`` as HOME (no XDG overrides): nothing it writes by
    default (journals, config) lands in the real home directory."""
    home.mkdir(exist_ok=True)
    env = {"HOME": str(home)}
    if password is not None:
        env["KNOBTOP_TEST_DB_PASSWORD"] = password
    return knobtop_process("connect", *args, env=env,
                           drop=("SSH_AUTH_SOCK", "KNOBTOP_TEST_DB_PASSWORD", "XDG_*"))


def events(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    lines = path.read_bytes().split(b"\n")[1:-1]  # header; the torn tail, if any
    return [orjson.loads(line) for line in lines]


def wait_journal(
    proc: subprocess.Popen[str], path: Path, ok: Callable[[list[dict[str, object]]], bool],
    timeout: float = 60,
) -> list[dict[str, object]]:
    """Follow the journal another process writes until ``ok`` holds (bounded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = events(path)
        if ok(got):
            return got
        if proc.poll() is not None:
            err = proc.stderr.read() if proc.stderr else ""
            raise AssertionError(f"knobtop exited early: {err}")
        time.sleep(0.1)
    raise AssertionError(f"journal condition not met within {timeout} s")


def test_connect_samples_both_hosts_drives_load_and_survives_an_sshd_crash(
    tmp_path: Path, crash_target: SshServer, ssh_client: SshServer, mariadb: Sandbox,
    sysbench_path: str,
) -> None:
    profile = tmp_path / "loop.toml"
    write_profile(profile, crash_target, ssh_client, mariadb)
    journal = tmp_path / "c.knobtop.jsonl"
    password = mariadb.password()
    proc = knobtop(
        str(profile), *ssh_args(tmp_path, crash_target, ssh_client), "--headless",
        "--duration", "60", "--journal", str(journal), "--load", "oltp_point_select",
        "--threads", "1", "--tables", "1", "--table-size", "1000", "--interval", "0.5",
        home=tmp_path / "home", password=password,
    )
    target_name = f"{crash_target.user}@{crash_target.host}:{crash_target.port}"
    try:
        def sampled(evs: list[dict[str, object]]) -> bool:
            hosts = [e["host"] for e in evs if e["ev"] == "sample"]
            loads = [e for e in evs if e["ev"] == "load"]
            return len(hosts) >= 3 and {target_name, "app"} <= set(hosts[-1]) and bool(loads)

        before = wait_journal(proc, journal, sampled)
        crash_target.kill()
        wait_journal(proc, journal, lambda evs: any(
            e["ev"] == "error" and e.get("gap") and "lost" in str(e["message"]) for e in evs))
        crash_target.restart()
        def resumed_fully(evs: list[dict[str, object]]) -> bool:
            samples = [e for e in evs if e["ev"] == "sample"]
            first = next((i for i, e in enumerate(samples) if e.get("re")), None)
            # The server is sampled again, and later the target's OS metrics are back too.
            return first is not None and any(
                target_name in e["host"] for e in samples[first:])  # type: ignore[operator]

        after = wait_journal(proc, journal, resumed_fully)
    finally:
        proc.terminate()  # SIGTERM: a clean, journaled stop
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    final = events(journal)
    assert final[-1]["ev"] == "end" and final[-1]["reason"] == "interrupted"
    header = orjson.loads(journal.read_bytes().split(b"\n")[0])
    assert header["server"]["via"] == target_name
    assert set(header["hosts"]) == {target_name, "app"}
    assert header["hosts"]["app"]["role"] == "client" and header["hosts"]["app"]["cpus"] >= 1
    # Server graphs: the server was sampled through the tunnel before and after the crash.
    assert [e for e in before if e["ev"] == "sample"]
    resumed = [e for e in after if e["ev"] == "sample" and e.get("re")]
    assert resumed and resumed[0]["v"][0] is not None
    # Per-host OS metrics came from both hosts' /proc.
    last = [e for e in final if e["ev"] == "sample"][-1]["host"]
    assert set(last) == {target_name, "app"}
    # Load ran on the client host, through sysbench there.
    phases = [e for e in final if e["ev"] == "phase"]
    assert phases[0]["action"] == "start" and phases[0]["host"] == "app"
    assert any(e["ev"] == "load" and e["tps"] > 0 for e in final)
    # The crash and the recovery are in the journal.
    messages = [str(e["message"]) for e in final if e["ev"] == "error"]
    assert any("lost" in m for m in messages) and any("is back" in m for m in messages)
    # No password anywhere.
    assert password not in journal.read_text() and password not in out + err
    assert "Traceback" not in err


def test_unknown_host_key_is_refused_with_the_fingerprint(
    tmp_path: Path, ssh_target: SshServer, mariadb: Sandbox
) -> None:
    profile = tmp_path / "p.toml"
    write_profile(profile, ssh_target, ssh_target, mariadb)
    empty = tmp_path / "empty_known_hosts"
    empty.write_text("")
    proc = knobtop(str(profile), "--known-hosts", str(empty), "--ssh-config", "none",
                   "-i", str(ssh_target.client_key_path), "--headless", "--duration", "1",
                   home=tmp_path / "home", password=mariadb.password())
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert ssh_target.host_key_fingerprint in err
    assert "--accept-new" in err
    assert "Traceback" not in err
    # The default journal directory was made under the test's HOME, not the real one.
    assert (tmp_path / "home" / ".local" / "share" / "knobtop" / "journals").is_dir()


def test_missing_password_env_and_bad_profile_name_the_fix(
    tmp_path: Path, ssh_target: SshServer, mariadb: Sandbox
) -> None:
    profile = tmp_path / "p.toml"
    write_profile(profile, ssh_target, ssh_target, mariadb)
    env_less = knobtop(str(profile), *ssh_args(tmp_path, ssh_target), "--headless",
                       "--duration", "1", home=tmp_path / "home")
    env_less.wait(timeout=60)
    assert env_less.returncode == 2
    assert env_less.stderr is not None
    err = env_less.stderr.read()
    assert "KNOBTOP_TEST_DB_PASSWORD" in err and "not set" in err
    profile.write_text(profile.read_text() + "colour = 'red'\n")
    bad = knobtop(str(profile), "--headless", "--duration", "1", home=tmp_path / "home")
    _, err = bad.communicate(timeout=60)
    assert bad.returncode == 2 and "colour" in err and "fix:" in err


def test_adhoc_target_and_client_over_a_tcp_tunnel(
    tmp_path: Path, ssh_target: SshServer, ssh_client: SshServer, mariadb: Sandbox,
    sysbench_path: str,
) -> None:
    """No profile file: --target/--client; the server's TCP port is forwarded over SSH."""
    info = mariadb.connection()
    journal = tmp_path / "adhoc.knobtop.jsonl"
    target = f"{ssh_target.user}@{ssh_target.host}:{ssh_target.port}"
    client = f"{ssh_client.user}@{ssh_client.host}:{ssh_client.port}"
    proc = knobtop(
        "--target", target, "--client", client, "--mysql-user", info.user,
        "--mysql-port", str(info.port), "--password-env", "KNOBTOP_TEST_DB_PASSWORD",
        *ssh_args(tmp_path, ssh_target, ssh_client), "--headless", "--duration", "3",
        "--journal", str(journal), "--interval", "0.5",
        home=tmp_path / "home", password=info.password,
    )
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "via SSH to" in err
    header = orjson.loads(journal.read_bytes().split(b"\n")[0])
    assert header["profile"] == "adhoc" and header["server"]["via"] == target
    assert header["server"]["socket"] is None  # TCP, not the socket
    samples = [e for e in events(journal) if e["ev"] == "sample"]
    assert len(samples) >= 4
    assert {target, client} <= set(samples[-1]["host"])  # type: ignore[arg-type]


def test_sysbench_missing_on_a_client_names_the_install_command(
    tmp_path: Path, ssh_target: SshServer, ssh_client: SshServer, mariadb: Sandbox
) -> None:
    profile = tmp_path / "p.toml"
    write_profile(profile, ssh_target, ssh_client, mariadb)
    profile.write_text(profile.read_text().replace('name = "app"\n',
                                                   'name = "app"\nsysbench = "/opt/no/sysbench"\n'))
    proc = knobtop(str(profile), *ssh_args(tmp_path, ssh_target, ssh_client), "--headless",
                   "--duration", "1", "--load", "oltp_point_select",
                   home=tmp_path / "home", password=mariadb.password())
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert "sysbench is not installed on app" in err and "apt-get install -y sysbench" in err


def test_proxyjump_from_ssh_config_with_accept_new_records_both_keys(
    tmp_path: Path, ssh_target: SshServer, ssh_client: SshServer, mariadb: Sandbox
) -> None:
    """Target "knobtop-db" is an ssh-config alias for 127.0.0.3 reached through a
    ProxyJump via 127.0.0.2; known_hosts starts empty; --accept-new records both keys,
    and the server is sampled through the tunnel (a unix socket) over both hops."""
    config = tmp_path / "ssh_config"
    config.write_text(
        "Host knobtop-db\n"
        f"  HostName 127.0.0.3\n  Port {ssh_client.port}\n  User {ssh_client.user}\n"
        f"  ProxyJump {ssh_target.user}@127.0.0.2:{ssh_target.port}\n"
    )
    info = mariadb.connection()
    profile = tmp_path / "jump.toml"
    profile.write_text(
        '[target]\nssh = "knobtop-db"\n[target.mysql]\n'
        f'socket = "{mariadb.socket}"\nuser = "{info.user}"\n'
        'password = { env = "KNOBTOP_TEST_DB_PASSWORD" }\n'
    )
    profile.chmod(0o600)
    known = tmp_path / "known_hosts"
    journal = tmp_path / "jump.knobtop.jsonl"
    jump_logins = ssh_target.log().count("Accepted publickey")
    proc = knobtop(
        str(profile), "--known-hosts", str(known), "--ssh-config", str(config), "--accept-new",
        "-i", str(ssh_target.client_key_path), "-i", str(ssh_client.client_key_path),
        "--headless", "--duration", "2", "--journal", str(journal), "--interval", "0.5",
        home=tmp_path / "home", password=info.password,
    )
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    blobs = [" ".join(s.host_public_key.split()[:2]) for s in (ssh_target, ssh_client)]
    assert sorted(known.read_text().splitlines()) == sorted([
        f"[127.0.0.2]:{ssh_target.port} {blobs[0]}", f"[127.0.0.3]:{ssh_client.port} {blobs[1]}",
    ])
    assert ssh_target.log().count("Accepted publickey") > jump_logins
    header = orjson.loads(journal.read_bytes().split(b"\n")[0])
    assert header["server"]["via"] == "knobtop-db"
    samples = [e for e in events(journal) if e["ev"] == "sample"]
    assert samples and samples[-1]["v"][0] is not None  # type: ignore[index]
