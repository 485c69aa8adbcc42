"""SessionOptions: what a live session is asked to be, whichever command asked (lab, connect, run).

Plain data (and the checks of what the command will set), built by the command line from its
arguments (or from a recipe and its arguments) and turned into a running session by
:func:`knobtop.session.build.build_session`.  No field has a default: a field added here must
be given a value by every command that builds options, or mypy (and the first test that
builds them) says so, instead of ``knobtop run`` crashing later.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from knobtop.connect import SshOptions
    from knobtop.lab_storage import Storage
    from knobtop.load.base import LoadSpec
    from knobtop.server.catalog import Catalog


@dataclass(frozen=True)
class ScheduledChange:
    """A headless ``--set KNOB=VALUE@SECONDS``: set ``knob`` to ``value`` at ``at`` s."""

    at: float
    knob: str
    value: str

    @property
    def text(self) -> str:
        """As it is written on the command line."""
        return f"{self.knob}={self.value}@{self.at:g}"


@dataclass(frozen=True)
class LabPlace:
    """The sandbox server on this machine (``knobtop lab``, ``knobtop run --lab``)."""

    dir: Path | None  # the sandbox directory; None: the default one
    fresh: bool  # wipe the sandbox first
    keep_running: bool  # leave a sandbox started here running on exit
    driver: str  # "auto", "sysbench" or "builtin"
    plugins: tuple[str, ...] = ()  # server plugins the sandbox loads (ha_rocksdb)
    options: tuple[tuple[str, str], ...] = ()  # its own base my.cnf options (--option)
    storage: Storage | None = None  # --storage: its emulated sync/read delays (lab_storage)


@dataclass(frozen=True)
class ServerPlace:
    """A server reached from a profile, or from --target/--client (``knobtop connect``,
    ``knobtop run --profile``)."""

    profile: str | None  # a profile name or path; None: the fields below say where
    target: str | None
    clients: tuple[str, ...]
    mysql_user: str
    mysql_port: int
    mysql_socket: str | None
    password_env: str | None
    ssh: SshOptions
    own_tables: bool  # several clients: each on its own sbtest_NAME database


@dataclass(frozen=True)
class SessionOptions:
    where: LabPlace | ServerPlace
    load: LoadSpec  # the load to prepare and start (checked)
    start_load: bool  # start ``load`` at once (False for --load none)
    journal: Path | None  # None: a new timestamped file in the place's journals folder
    interval: float  # sampling interval, seconds
    statements: bool  # the incident page reads statement texts
    cleanup: bool  # drop the sysbench tables when the session ends
    headless: bool  # plain terminal output instead of the live screen
    duration: float | None  # headless: seconds to record
    changes: tuple[ScheduledChange, ...]  # headless: --set changes
    # ``knobtop run`` of a recipe with [targets] (issue 19): each further server's session
    # options by target name; their events go into this session's journal
    targets: tuple[tuple[str, SessionOptions], ...]
    # --allow-reach: the reach variables of --set (or of the recipe's [allow] reach) may be
    # set (server.policy)
    allow_reach: bool
    # What the command will set, checked against this server as soon as it answers, before
    # a table is prepared (session.startcheck): a recipe's arms there, a search's knobs.
    # Each raises naming the knob and the fix. The command line makes them: it holds the
    # recipe or the search (cli.live.RunRequest), the session only its checks.
    checks: tuple[Callable[[Catalog], object], ...]

__all__ = ["LabPlace", "ScheduledChange", "ServerPlace", "SessionOptions"]
