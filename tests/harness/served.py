"""A test's session in a process of its own, served over a socket as `knobtop lab` serves it.

The live screen never holds a Session: it holds a RemoteSession whose calls, results, events
and state cross a socket to the session's process (knobtop.session.served).  A screen test
drives the same: ``served_session(config, driver, host=..., clients=..., via=...)`` takes
``Session``'s own arguments, starts a fresh interpreter (tests/served_script.py) that builds
that Session and serves it with the app's own server class on one end of a socket pair, and
yields the RemoteSession on the other end, exactly as
``knobtop.session.process.session_process`` does after its fork.  So every change, undo and
event of a pilot test crosses the process boundary by value, as users' do.

The host and driver objects are sent as they are (pickled, unconnected); the server nodes
of a static change, whose ``link`` is a function, are sent as their connection and built
again there.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import pickle
import socket
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from knobtop.hosts.base import Host
from knobtop.hosts.local import LocalHost
from knobtop.load.base import LoadDriver
from knobtop.server.link import Tunnel
from knobtop.session.core import SessionConfig
from knobtop.session.process import _hang_up, _wait_ready
from knobtop.session.remote import RemoteSession

SCRIPT = Path(__file__).parent.parent / "served_script.py"
EXIT_DEADLINE = 60.0


@contextlib.contextmanager
def served_session(config: SessionConfig, driver: LoadDriver | None = None, *,
                   sysbench: LoadDriver | None = None, host: Host | None = None,
                   clients: tuple[Host, ...] = (), via: Tunnel | None = None,
                   ) -> Iterator[RemoteSession]:
    """A RemoteSession on ``Session(config, host, driver, clients=, via=)``, built and served
    in its own process (``sysbench``: another name for ``driver``; ``host``: this machine
    when None)."""
    ours, theirs = socket.socketpair()
    session_args = {"host": host or LocalHost(), "driver": driver or sysbench,
                    "clients": clients, "via": via}
    with tempfile.NamedTemporaryFile("wb", suffix=".pickle", delete=False) as fh:
        pickle.dump((dataclasses.replace(config, nodes=()), _node_args(config), session_args),
                    fh)
        spec = Path(fh.name)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, (
        str(SCRIPT.parent), os.environ.get("PYTHONPATH", ""))))}
    proc = subprocess.Popen([sys.executable, str(SCRIPT), str(theirs.fileno()), str(spec)],
                            pass_fds=[theirs.fileno()], env=env, stdin=subprocess.DEVNULL)
    theirs.close()
    conn = Connection(ours.detach())
    try:
        remote = _wait_ready(conn, proc.pid)
        remote.start_reading()
        yield remote
    finally:
        _hang_up(conn)
        try:
            proc.wait(EXIT_DEADLINE)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        spec.unlink(missing_ok=True)


def _node_args(config: SessionConfig) -> list[dict[str, Any]]:
    """Each server node of ``config`` as data (a node on this machine, reached by its link's
    connection): the served process builds the nodes again."""
    out = []
    for node in config.nodes:
        assert node.healthy is None, "a node with its own health check is not served here"
        out.append({"name": node.name, "info": node.link().info,
                    "restart_command": node.restart_command, "dropin_path": node.dropin_path})
    return out
