"""`knobtop connect`: hosts from a profile, the password, direct-or-tunnel, and a pre-flight."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import getpass
import ipaddress
import os
import re
import sys
from dataclasses import dataclass, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from knobtop.errors import KnobtopError
from knobtop.hosts.base import Host, HostError
from knobtop.hosts.local import LocalHost
from knobtop.load.base import LoadDriver, LoadError
from knobtop.load.multi import MultiLoad
from knobtop.load.sysbench import INSTALL_HINT, Sysbench
from knobtop.profiles import ClientSpec, Profile, password_from_mycnf, server_address
from knobtop.server.health import node_health
from knobtop.server.link import ConnectionInfo, ServerError, ServerLink
from knobtop.server.ndb import NdbRollingRestart
from knobtop.server.static import ServerNode, StaticChangeError, check_sudo

if TYPE_CHECKING:
    from knobtop.hosts.ssh import SshHost

SB_DATABASE = "sbtest"


class ConnectError(KnobtopError, RuntimeError):
    """A connect step failed; the message names the thing and the fix."""


@dataclass(frozen=True)
class SshOptions:
    """How this knobtop authenticates and checks host keys (command-line choices)."""

    known_hosts: str | None = None
    accept_new: bool = False
    identities: tuple[str, ...] = ()
    config: str | None = None  # a path, "none", or None for ~/.ssh/config

    def host(self, destination: str, name: str, jump: str | None = None,
             origin: str = "") -> SshHost:
        from knobtop.hosts.ssh import SshHost  # asyncssh (~20 MB) only for SSH hosts

        config = [] if self.config == "none" else [self.config] if self.config else None
        return SshHost(
            destination,
            name=name,
            jump=jump,
            known_hosts=self.known_hosts,
            accept_new=self.accept_new,
            client_keys=list(self.identities) or None,
            config_paths=config,
            origin=origin,
        )


@dataclass
class Hosts:
    target: Host
    clients: list[tuple[ClientSpec, Host]]

    @property
    def all(self) -> list[Host]:
        seen: dict[int, Host] = {id(self.target): self.target}
        for _, host in self.clients:
            seen.setdefault(id(host), host)
        return list(seen.values())

    async def close(self) -> None:
        for host in self.all:
            with contextlib.suppress(Exception):
                await host.close()


def written_at(profile: Profile, destination: str, option: str) -> str:
    """Where ``destination`` was given: "profile FILE line N", or the command line's
    ``option`` (a profile built from --target and --client has no file)."""
    if profile.path is None:
        return f"given with {option}"
    try:
        lines = profile.path.read_text(errors="replace").splitlines()
    except OSError:
        return f"profile {profile.path}"
    said = re.compile(r"""^\s*ssh\s*=\s*["']""" + re.escape(destination) + "[\"']")
    for number, line in enumerate(lines, start=1):
        if said.match(line):
            return f"profile {profile.path} line {number}"
    return f"profile {profile.path}"


def build_hosts(profile: Profile, ssh: SshOptions) -> Hosts:
    """One Host per distinct destination: a client on the target shares its connection."""
    target_spec = profile.target
    by_dest: dict[str | None, Host] = {}
    if target_spec.ssh is None:
        target: Host = LocalHost("local")
    else:
        target = ssh.host(target_spec.ssh, name=target_spec.ssh, jump=target_spec.jump,
                          origin=written_at(profile, target_spec.ssh, "--target"))
    by_dest[target_spec.ssh] = target
    clients: list[tuple[ClientSpec, Host]] = []
    for spec in profile.clients:
        host = by_dest.get(spec.ssh)
        if host is None:
            host = LocalHost(spec.name) if spec.ssh is None else ssh.host(
                spec.ssh, spec.name, origin=written_at(profile, spec.ssh, "--client"))
            by_dest[spec.ssh] = host
        clients.append((spec, host))
    return Hosts(target, clients)


async def resolve_password(profile: Profile, target: Host, *, interactive: bool) -> str:
    mysql = profile.target.mysql
    source = mysql.password_source
    where = profile.path or "the command line"
    if source == "inline":
        return mysql.password or ""
    if mysql.password_env is not None:
        value = os.environ.get(mysql.password_env)
        if value is None:
            raise ConnectError(
                f"the password comes from ${mysql.password_env} ({where}), which is not set: "
                f"export {mysql.password_env}=... and run again"
            )
        return value
    if source == "mycnf":
        path = (Path.home() / ".my.cnf") if target.local else PurePosixPath(".my.cnf")
        try:
            text = (await target.read_file(path)).decode(errors="replace")
        except (FileNotFoundError, PermissionError) as exc:
            raise ConnectError(
                f"cannot read ~/.my.cnf on {target.name} ({exc}); create it with a [client] "
                "password= line, or choose another password source in the profile"
            ) from None
        value = password_from_mycnf(text)
        if value is None:
            raise ConnectError(
                f"~/.my.cnf on {target.name} has no password in [client] or [mysql]; "
                "add password=... there, or choose another password source"
            )
        return value
    if not interactive or not sys.stdin.isatty():
        raise ConnectError(
            f"the password is to be asked for ({where}) but there is no terminal to ask on; "
            "use --password-env VAR (or password = { env = \"VAR\" } in the profile)"
        )
    return getpass.getpass(f"MySQL password for {mysql.user} on {target.name}: ")


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _reachable(host: str, port: int, limit: float = 2.0) -> bool:
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), limit)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


async def needs_tunnel(profile: Profile) -> bool:
    """Direct when this machine can reach the server itself; otherwise through the
    target's SSH connection (always for a socket or a loopback address on a remote
    target, which mean "on that machine")."""
    mysql = profile.target.mysql
    if profile.target.ssh is None:
        return False
    if mysql.socket or _is_loopback(mysql.host):
        return True
    return not await _reachable(mysql.host, mysql.port)


def connection_info(profile: Profile, password: str) -> ConnectionInfo:
    mysql = profile.target.mysql
    return ConnectionInfo(
        host=mysql.host, port=mysql.port, user=mysql.user, password=password,
        socket=mysql.socket,
    )


def client_drivers(
    profile: Profile, hosts: Hosts, info: ConnectionInfo, *, own_tables: bool = False
) -> list[Sysbench]:
    """One sysbench per client host; ``own_tables`` gives each its own database
    (``sbtest_NAME``) instead of all sharing ``sbtest``."""
    out: list[Sysbench] = []
    for spec, host in hosts.clients:
        database = SB_DATABASE
        if own_tables:
            database = f"{SB_DATABASE}_{re.sub(r'[^A-Za-z0-9_]', '_', spec.name)}"[:64]
        same_machine = spec.ssh == profile.target.ssh
        if same_machine and info.socket and spec.mysql_host is None:
            out.append(Sysbench(host, mysql_socket=info.socket, user=info.user,
                                password=info.password, database=database,
                                binary=spec.sysbench))
            continue
        mysql_host, mysql_port = server_address(profile, spec)
        out.append(Sysbench(host, mysql_host=mysql_host, mysql_port=mysql_port, user=info.user,
                            password=info.password, database=database, binary=spec.sysbench))
    return out


def load_driver(
    profile: Profile, hosts: Hosts, info: ConnectionInfo, *, own_tables: bool = False
) -> LoadDriver | None:
    """sysbench on the client host, or on all of them at once (summed per second)."""
    drivers = client_drivers(profile, hosts, info, own_tables=own_tables)
    if not drivers:
        return None
    return drivers[0] if len(drivers) == 1 else MultiLoad(drivers)


async def node_healthy(link: ServerLink) -> tuple[bool, str]:
    """Health for restarts: Galera nodes Synced, replicas' threads running, else answering."""
    health = await node_health(link)
    return health.healthy, health.detail


def server_nodes(
    profile: Profile, hosts: Hosts, info: ConnectionInfo, ssh: SshOptions, *, via: bool = False
) -> tuple[ServerNode, ...]:
    """The servers a static change restarts, each reached through its own host when its
    address only makes sense there (a socket, or loopback on a remote host)."""
    out: list[ServerNode] = []
    by_dest: dict[str | None, Host] = {profile.target.ssh: hosts.target}
    for _, client_host in hosts.clients:
        by_dest.setdefault(getattr(client_host, "destination", None), client_host)
    for spec in profile.server_nodes():
        host = by_dest.get(spec.ssh)
        if host is None:
            host = ssh.host(spec.ssh, spec.name, jump=profile.target.jump) if spec.ssh else (
                LocalHost(spec.name))
            by_dest[spec.ssh] = host
        node_info = replace(info, host=spec.mysql_host, port=spec.mysql_port,
                            socket=spec.mysql_socket)
        # Through the node's SSH when its address only means something there, or when
        # the session itself could not reach the server directly.
        remote_only = via or spec.mysql_socket is not None or _is_loopback(spec.mysql_host)
        tunnel = as_ssh(host) if spec.ssh and remote_only else None
        out.append(ServerNode(
            name=spec.name, host=host,
            link=functools.partial(ServerLink, node_info, via=tunnel),
            restart_command=spec.restart_command, dropin_path=PurePosixPath(spec.dropin_path),
            healthy=node_healthy, sudo=spec.sudo,
        ))
        if spec.sudo and (remote := as_ssh(host)) is not None:
            remote.sudo = True  # said in the journal's host facts and the Hosts panel
    return tuple(out)


def ndb_restarter(profile: Profile, hosts: Hosts, ssh: SshOptions) -> NdbRollingRestart | None:
    """DiskPageBufferMemory's path when the profile has an ``[ndb]`` table."""
    spec = profile.ndb
    if spec is None:
        return None
    if spec.ssh is None:
        host: Host = LocalHost("ndb-mgm")
    elif spec.ssh == profile.target.ssh:
        host = hosts.target
    else:
        host = ssh.host(spec.ssh, spec.ssh, jump=profile.target.jump)
    restarter = NdbRollingRestart(host, PurePosixPath(spec.config_ini),
                                  mgmd_argv=spec.mgmd_argv, node_timeout=spec.node_timeout)
    if spec.connect_string:
        restarter.connect_string = spec.connect_string
    return restarter


def as_ssh(host: Host) -> SshHost | None:
    """``host`` if it is reached over SSH, else None. A session on this machine alone
    never imports asyncssh (the lab's session process is 20 MB smaller for it): where
    knobtop.hosts.ssh was never imported, no host is an SshHost."""
    module = sys.modules.get("knobtop.hosts.ssh")
    if module is None:
        return None
    ssh_host: type[SshHost] = module.SshHost
    return host if isinstance(host, ssh_host) else None


def tunnel(hosts: Hosts, via: bool) -> SshHost | None:
    """The target's SSH connection when the server is reached through it (``via``)."""
    return as_ssh(hosts.target) if via else None


def server_link(hosts: Hosts, info: ConnectionInfo, via: bool) -> ServerLink:
    return ServerLink(info, via=tunnel(hosts, via))


async def preflight(
    profile: Profile, hosts: Hosts, info: ConnectionInfo, via: bool, want_load: bool,
    ssh: SshOptions | None = None,
) -> str:
    """Reach every host and the server once, so problems surface before the screen
    opens; returns a one-line description of the server."""
    for any_host in hosts.all:
        host = as_ssh(any_host)
        if host is not None:
            try:
                await host.connect()
            except HostError as exc:
                raise ConnectError(str(exc)) from None
    link = server_link(hosts, info, via)
    try:
        version = await link.connect()
    finally:
        await link.close()
    # sudo -n true where the profile uses sudo: a password it would ask is named now
    nodes = server_nodes(profile, hosts, info, ssh or SshOptions(), via=via)
    try:
        for node in nodes:
            try:
                await check_sudo(node)
            except StaticChangeError as exc:
                raise ConnectError(str(exc)) from None
    finally:
        for node in nodes:
            if all(node.host is not h for h in hosts.all):
                with contextlib.suppress(Exception):
                    await node.host.close()
    if want_load and hosts.clients:
        for driver in client_drivers(profile, hosts, info):
            try:
                await driver.check_installed()
            except LoadError as exc:
                raise ConnectError(str(exc)) from None
    elif want_load:
        raise ConnectError(
            "no client host to run sysbench on: add a [[client]] to the profile or "
            "--client DEST, or use --load none"
        )
    route = f"via SSH to {hosts.target.name}" if via else "directly"
    return f"{version.flavor} {version.short} at {info.where} ({route})"


__all__ = [
    "INSTALL_HINT",
    "ConnectError",
    "Hosts",
    "ServerError",
    "SshOptions",
    "build_hosts",
    "client_drivers",
    "connection_info",
    "load_driver",
    "ndb_restarter",
    "needs_tunnel",
    "preflight",
    "resolve_password",
    "server_link",
    "server_nodes",
    "tunnel",
]
