"""build_session(): hosts, tunnel, load driver and Session from SessionOptions, for every command.

The lab (a sandbox started here and stopped after), a profile's server (a pre-flight over fresh
SSH connections, then the session's own) and ``knobtop run`` on either go through this one
place.  What a person should see meanwhile (a spinner, a progress bar, a line) goes to a
:class:`Feedback` the front end provides.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from collections.abc import Awaitable, Callable, Iterator
from contextlib import AbstractContextManager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from knobtop.connect import (
    Hosts,
    SshOptions,
    build_hosts,
    connection_info,
    load_driver,
    ndb_restarter,
    needs_tunnel,
    preflight,
    resolve_password,
    server_link,
    server_nodes,
    tunnel,
)
from knobtop.journal.writer import cannot_create, check_journal_path, default_journal_path
from knobtop.lab import (
    LAB_DB,
    Sandbox,
    default_lab_dir,
    find_program,
    previous_baseline,
    session_lock,
)
from knobtop.lab_options import options_text
from knobtop.load.base import BUILTIN_ONLY, LoadDriver, LoadError, LoadSpec
from knobtop.load.builtin import BuiltinDriver
from knobtop.load.prepare import prepare_all
from knobtop.load.sysbench import INSTALL_HINT
from knobtop.load.sysbench_output import PrepareProgress
from knobtop.profiles import Profile, lab_profile, load_profile, profile_from_args
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.server.ndb import NdbRollingRestart
from knobtop.server.static import ServerNode
from knobtop.session.core import Session, SessionConfig, SessionError
from knobtop.session.options import LabPlace, ServerPlace, SessionOptions
from knobtop.session.startcheck import check_at_start

if TYPE_CHECKING:
    from knobtop.hosts.ssh import SshHost

CONNECT_JOURNALS = Path("~/.local/share/knobtop/journals")

Prepare = Callable[[Callable[[PrepareProgress], None]], Awaitable[bool]]


class Feedback(Protocol):
    """What the person starting a session sees while it is built."""

    def status(self, text: str) -> AbstractContextManager[object]:
        """A spinner with ``text`` while the block runs (text is never markup)."""

    def say(self, text: str, *, highlight: bool = True) -> None:
        """One line (never markup)."""

    async def prepare(self, spec: LoadSpec, prepare: Prepare) -> None:
        """Run ``prepare`` (loads sysbench tables unless there) behind a progress bar."""


@dataclass(frozen=True)
class LiveSession:
    """A built session and the journal it writes (known before it opens)."""

    session: Session
    journal_path: Path
    # A sandbox this session started and stops at its end: whoever outlives the session's
    # process (the screen, when that process is killed) stops it instead.
    sandbox_root: Path | None = None


@contextlib.contextmanager
def build_session(options: SessionOptions, feedback: Feedback) -> Iterator[LiveSession]:
    """The session ``options`` ask for, ready to open; what it needed (a sandbox started
    here) is put away when the block ends."""
    if isinstance(options.where, LabPlace):
        with _lab_session(options, options.where, feedback) as live:
            yield live
    else:
        yield _server_session(options, options.where, feedback)


def journal_must_work(path: Path) -> None:
    """Refuse a journal path that cannot be written before doing anything else.

    An existing file is refused, never appended to: a journal is one session (one header,
    times from its start), and a follower of that file would take the new lines for the
    old session's."""
    try:
        check_journal_path(path)
    except FileExistsError:
        raise SessionError(
            f"the journal {path} already exists; knobtop never writes into an existing "
            "journal: choose a new --journal path, or leave --journal out for a new "
            "timestamped file (`knobtop follow --latest` follows each new one)"
        ) from None
    except OSError as exc:
        raise SessionError(cannot_create(path, exc)) from None


def _config(options: SessionOptions, profile: str, conn: ConnectionInfo, journal: Path,
            nodes: tuple[ServerNode, ...], ndb: NdbRollingRestart | None = None) -> SessionConfig:
    return SessionConfig(profile=profile, connection=conn, journal_path=journal,
                         interval=options.interval, load=options.load, nodes=nodes, ndb=ndb,
                         cleanup_on_close=options.cleanup, statements=options.statements)


def _profile(place: ServerPlace) -> Profile:
    if place.profile:
        return load_profile(place.profile)
    return profile_from_args(
        place.target, list(place.clients), mysql_user=place.mysql_user,
        mysql_port=place.mysql_port, mysql_socket=place.mysql_socket,
        password_env=place.password_env,
    )


def _server_session(options: SessionOptions, place: ServerPlace,
                    feedback: Feedback) -> LiveSession:
    profile = _profile(place)
    spec, want_load, own = options.load, options.start_load, place.own_tables

    async def check() -> tuple[ConnectionInfo, bool]:
        hosts = build_hosts(profile, place.ssh)
        try:
            password = await resolve_password(profile, hosts.target, interactive=True)
            info = connection_info(profile, password)
            via = await needs_tunnel(profile)
            with feedback.status(f"Reaching {profile.target.ssh or 'this machine'} ..."):
                # LinkBench runs from this machine: no client host or sysbench needed
                described = await preflight(profile, hosts, info, via,
                                            want_load and spec.workload not in BUILTIN_ONLY,
                                            place.ssh)
            feedback.say(f"Server: {described}", highlight=False)
            # Before any table or load: what the command will set, against the server.
            await check_at_start(server_link(hosts, info, via), options)
            if want_load:
                driver = _driver(profile, hosts, info, own, spec, via)
                await feedback.prepare(spec, lambda cb: prepare_all(
                    lambda: server_link(hosts, info, via), driver, spec, cb))
            return info, via
        finally:
            await hosts.close()

    journal = options.journal or default_journal_path(CONNECT_JOURNALS.expanduser(),
                                                      profile.name)
    journal_must_work(journal)
    info, via = asyncio.run(check())
    # Fresh host objects: SSH connections belong to the event loop that made them.
    hosts = build_hosts(profile, place.ssh)
    config = _config(options, profile.name, info, journal,
                     server_nodes(profile, hosts, info, place.ssh, via=via),
                     ndb=ndb_restarter(profile, hosts, place.ssh))
    return LiveSession(_session(config, hosts, _driver(profile, hosts, info, own, spec, via),
                                via=tunnel(hosts, via)), journal)


def _driver(profile: Profile, hosts: Hosts, info: ConnectionInfo, own: bool, spec: LoadSpec,
            via: bool) -> LoadDriver | None:
    """sysbench on the client hosts; LinkBench (issue 20) from this machine with the
    built-in driver, which needs the server reachable from here."""
    if spec.workload not in BUILTIN_ONLY:
        return load_driver(profile, hosts, info, own_tables=own)
    if via or (profile.target.ssh and info.socket):
        raise LoadError(f"{spec.workload} runs from this machine (knobtop's built-in "
                        f"driver), and {info.where} is reached only through its host: run "
                        "knobtop on a client host that reaches the server over TCP")
    BuiltinDriver.check(spec)
    return BuiltinDriver(info)


def _session(config: SessionConfig, hosts: Hosts, driver: LoadDriver | None,
             via: SshHost | None = None) -> Session:
    return Session(config, hosts.target, driver, clients=tuple(h for _, h in hosts.clients),
                   via=via)


def _lab_driver(place: LabPlace, spec: LoadSpec, feedback: Feedback) -> bool:
    """True for knobtop's built-in load; refuses --driver sysbench without sysbench."""
    if spec.workload in BUILTIN_ONLY:  # LinkBench: the built-in driver's own (issue 20)
        if place.driver == "sysbench":
            raise LoadError(f"sysbench has no {spec.workload} workload: use --driver builtin "
                            "(or auto)")
        BuiltinDriver.check(spec)
        return True
    has_sysbench = find_program("sysbench") is not None
    if place.driver == "sysbench" and not has_sysbench:
        raise LoadError(f"sysbench is not installed: {INSTALL_HINT}, or use --driver builtin")
    builtin = place.driver == "builtin" or (place.driver == "auto" and not has_sysbench)
    if builtin:
        BuiltinDriver.check(spec)
        if place.driver == "auto":
            feedback.say("sysbench is not installed: using knobtop's built-in load "
                         f"({INSTALL_HINT} for sysbench)")
    return builtin


@contextlib.contextmanager
def _lab_session(options: SessionOptions, place: LabPlace,
                 feedback: Feedback) -> Iterator[LiveSession]:
    """The sandbox's session, while this process holds the sandbox: a second knobtop
    session on it (a run beside an open lab) is refused before it touches anything. A
    journal path that cannot be used is refused before even that (nothing made)."""
    if options.journal:
        journal_must_work(options.journal)
    with session_lock(place.dir or default_lab_dir()), \
            _sandbox_session(options, place, feedback) as live:
        yield live


@contextlib.contextmanager
def _sandbox_session(options: SessionOptions, place: LabPlace,
                     feedback: Feedback) -> Iterator[LiveSession]:
    spec = options.load
    builtin = _lab_driver(place, spec, feedback)
    sandbox = Sandbox(place.dir or default_lab_dir(), plugins=place.plugins,
                      options=place.options, storage=place.storage)
    if place.fresh:
        sandbox.wipe()
    with feedback.status(f"Starting the sandbox server in {sandbox.root} ..."):
        info = sandbox.start()
    base = options_text(sandbox.options) or "none (the lab's defaults)"
    feedback.say(f"Sandbox server on 127.0.0.1:{info.port} (socket {sandbox.socket}); "
                 f"base options: {base}")
    if sandbox.replaced is not None:
        feedback.say(f"Its base options were {options_text(sandbox.replaced)}: --option "
                     "replaced them (my.cnf says the new ones)")
    if sandbox.storage:
        feedback.say(f"{sandbox.storage.describe().capitalize()} (strace's fault injection "
                     f"on the server's {', '.join(sandbox.storage.delays())} calls)")
    if not sandbox.started_here:
        feedback.say("It was already running, so it stays up when this session ends.")
    try:
        # The lab is just the built-in profile whose hosts are all this machine.
        profile = lab_profile(str(sandbox.socket), info.port, info.user)
        hosts = build_hosts(profile, SshOptions())
        conn = connection_info(profile, info.password)
        driver: LoadDriver | None = load_driver(profile, hosts, conn)
        if builtin:
            driver = BuiltinDriver(conn, database=LAB_DB)
        # Before any table or load: what the command will set, against the server.
        asyncio.run(check_at_start(ServerLink(conn), options))
        asyncio.run(feedback.prepare(
            spec, lambda cb: prepare_all(lambda: ServerLink(conn), driver, spec, cb)))
        journal = options.journal or default_journal_path(sandbox.root / "journals", "lab")
        node = ServerNode(
            name="lab", host=hosts.target, link=lambda: ServerLink(conn),
            restart_command=sandbox.restart_command(), dropin_path=sandbox.dropin_file,
        )
        config = dataclasses.replace(_config(options, profile.name, conn, journal, (node,)),
                                     storage=sandbox.storage or None)
        session = _session(config, hosts, driver)
        # At open, knobs that differ from what the last lab session started from are said.
        session.previous_baseline = previous_baseline(sandbox.root / "journals", journal)
        owned = sandbox.root if sandbox.started_here and not place.keep_running else None
        session.server_stops = owned is not None
        yield LiveSession(session, journal, owned)
    finally:
        if sandbox.started_here and not place.keep_running:
            with feedback.status("Stopping the sandbox server ..."):
                sandbox.stop()


__all__ = ["Feedback", "LiveSession", "build_session", "journal_must_work"]
