"""Run by tests/harness/served.py in a fresh interpreter: one session, built from the pickled
Session arguments, served over the inherited socket with the app's own server (what the child of
`knobtop lab` runs after building its session)."""

from __future__ import annotations

import asyncio
import dataclasses
import pickle
import signal
import sys
from functools import partial
from multiprocessing.connection import Connection
from pathlib import Path

from knobtop.hosts.local import LocalHost
from knobtop.server.link import ServerLink
from knobtop.server.static import ServerNode
from knobtop.session.core import Session
from knobtop.session.remote import Ready
from knobtop.session.served import _PR_SET_PDEATHSIG, _prctl, _Server


def main() -> int:
    _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)  # the test's process gone: this one goes too
    conn = Connection(int(sys.argv[1]))
    config, nodes, args = pickle.loads(Path(sys.argv[2]).read_bytes())
    config = dataclasses.replace(config, nodes=tuple(
        ServerNode(name=n["name"], host=LocalHost(), link=partial(ServerLink, n["info"]),
                   restart_command=n["restart_command"], dropin_path=n["dropin_path"])
        for n in nodes))
    session = Session(config, args["host"], args["driver"], clients=args["clients"],
                      via=args["via"])
    server = _Server(session, conn)
    server.ready = Ready(config.journal_path, None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # keys belong to the screen (as the child's)
    asyncio.run(server.serve())
    return 0


if __name__ == "__main__":
    sys.exit(main())
