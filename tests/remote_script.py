"""Run by tests/screens/test_session_process.py in a fresh interpreter (a fork of pytest, with its
threads, would not be what users run): a session in its own process on the test server,
driven through the RemoteSession the screen uses; what happened is printed as JSON."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from knobtop.errors import KnobtopError
from knobtop.journal.events import Event, Sample
from knobtop.load.base import LoadSpec
from knobtop.session.options import LabPlace, SessionOptions
from knobtop.session.process import RemoteSession, session_process


class Quiet:
    """Feedback that says nothing (it runs in the session's process)."""

    @contextlib.contextmanager
    def status(self, text: str) -> Iterator[None]:
        yield

    def say(self, text: str, *, highlight: bool = True) -> None:
        return None

    async def prepare(self, spec: LoadSpec, prepare: object) -> None:
        return None


async def drive(remote: RemoteSession) -> dict[str, object]:
    events: list[Event] = []
    got = asyncio.Event()
    loop = asyncio.get_running_loop()

    def listen(event: Event) -> None:  # the reader thread, or this loop once open
        events.append(event)
        loop.call_soon_threadsafe(got.set)

    remote.subscribe(listen)
    header = await remote.open()
    out: dict[str, object] = {"interval": header.interval,
                              "journal": str(remote.state().journal_path)}
    before = (await remote.global_values(["innodb_io_capacity"]))["innodb_io_capacity"]
    change = await remote.set_knob("innodb_io_capacity", str(int(before or 200) + 100),
                                   reason="remote test")
    out["change"] = [change.knob, change.old, change.new, change.result]
    out["history"] = [c.knob for c in remote.state().history]  # read right after the call
    refused = await remote.set_knob("no_such_knob_at_all", "1")
    out["refused"] = [refused.result, refused.message]
    try:
        await remote.change_load("no_such_workload")
        out["raised"] = None
    except KnobtopError as exc:  # raised in the session's process, raised here
        out["raised"] = [type(exc).__name__, str(exc)]
    out["note"] = remote.note("from the other process").text
    async with asyncio.timeout(30):
        while sum(isinstance(e, Sample) for e in events) < 3:
            got.clear()
            await got.wait()
    undone = await remote.undo()
    out["undone"] = [undone.knob, undone.new] if undone else None
    out["after"] = (await remote.global_values(["innodb_io_capacity"]))["innodb_io_capacity"]
    out["before"] = before
    await remote.close("test done")
    out["kinds"] = [e.kind for e in events]
    return out


def main() -> int:
    root, journal = Path(sys.argv[1]), Path(sys.argv[2])
    options = SessionOptions(
        where=LabPlace(dir=root, fresh=False, keep_running=False, driver="auto"),
        load=LoadSpec(), start_load=False, journal=journal, interval=0.2, statements=False,
        cleanup=False, headless=False, duration=None, changes=(), targets=(),
        allow_reach=False, checks=())
    with session_process(options, Quiet()) as live:
        out = asyncio.run(drive(live.session))
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
