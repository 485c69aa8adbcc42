"""A recipe's servers (issue 19): the run's own session and one per further target, all
writing one journal.

Each further target is a whole session (its own connections, sampler, knob applier with
its own baseline, load driver): only its recorder differs, feeding the main journal with
every event named by the target (``target`` on samples, loads, changes, restarts,
phases and knob snapshots; the target's name before the text of its notes, marks and
errors).  The header lists every target's server and host facts under ``targets``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Mapping

from knobtop.journal.events import Header
from knobtop.session.core import Session, as_port
from knobtop.session.port import SessionPort


class Targets:
    """The run's own session (``""``) and the further targets' sessions by name."""

    def __init__(self, main: Session, others: Mapping[str, Session]) -> None:
        self.main = main
        self.others = dict(others)

    @property
    def ports(self) -> dict[str, SessionPort]:
        """Every target's port: ``""`` the run's own server, else a target's name."""
        return {"": as_port(self.main), **{n: as_port(s) for n, s in self.others.items()}}

    async def open(self) -> Header:
        """Reach every server first (nothing is written if one cannot be reached), then
        write the header with every target in it and start each session's sampling."""
        headers: dict[str, Header] = {}
        reached: list[Session] = []
        try:
            for name, session in self.others.items():
                headers[name] = await session.connect()
                reached.append(session)
            header = await self.main.connect()
            reached.append(self.main)
        except BaseException:
            for session in reached:
                with contextlib.suppress(Exception):
                    await session.close("a target could not be reached")
            raise
        header = dataclasses.replace(header, targets={
            name: {"profile": s.config.profile, "server": headers[name].server,
                   "hosts": headers[name].hosts}
            for name, s in self.others.items()
        })
        try:
            await self.main.begin(header)
            for name, session in self.others.items():
                session.recorder.feed(self.main.recorder, name)
                await session.begin(headers[name])
        except BaseException:
            await self.close("a target could not be started")
            raise
        return header

    async def close(self, reason: str) -> None:
        """Close the further targets (load stopped, sampling ended), then the run's own
        session, which writes the journal's end."""
        for session in self.others.values():
            with contextlib.suppress(Exception):
                await session.close(reason)
        await self.main.close(reason)


__all__ = ["Targets"]
