"""The one recipe or tune run a session may have under way (``SessionPort.run_recipe``).

The run is a value (a ``RunOrder``: recipes/orders.py), handed over by the front end and run
here, on the session's loop, in whatever process the session lives in: the live screen's
session process, or headless's own.  Its further servers are the session's targets."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Concatenate

from knobtop.errors import KnobtopError
from knobtop.journal.events import Progress

if TYPE_CHECKING:
    from knobtop.session.port import Fields, Report, RunOrder, SessionPort
    from knobtop.session.recorder import Recorder


class RunBusy(KnobtopError):
    """A second run was asked for while one is under way."""


class RunSlot:
    """Holds the run under way, so that ``abort_recipe`` reaches it."""

    def __init__(self) -> None:
        self._order: RunOrder[object] | None = None
        self.targets: dict[str, SessionPort] = {}  # a recipe's further servers, by name

    def attach(self, targets: Mapping[str, SessionPort]) -> None:
        """The further servers (issue 19) every run of this session drives beside it."""
        self.targets = dict(targets)

    async def run(self, port: SessionPort, order: RunOrder[Report]) -> Report:
        if self._order is not None:
            raise RunBusy("a recipe or tune is already running on this session: abort it "
                          "first (a), or wait for its end")
        self._order = order
        try:
            return await order.run(port, self.targets)
        finally:
            self._order = None

    @property
    def running(self) -> bool:
        return self._order is not None

    def abort(self) -> None:
        if self._order is not None:
            self._order.abort()


def told(recorder: Recorder, kind: Callable[Concatenate[float, float, Fields], Progress], /,
         *args: Fields.args, **fields: Fields.kwargs) -> Progress:
    """A run's progress tick (``SessionPort.tell``): stamped and handed to the subscribers,
    not journaled; any other kind is refused."""
    if getattr(kind, "kind", None) != Progress.kind:
        raise KnobtopError(f"only a run's progress can be told without a journal line, "
                           f"not {getattr(kind, 'kind', kind)!r}")
    return recorder.tell(kind(recorder.now(), recorder.wall(), *args, **fields))


__all__ = ["RunBusy", "RunSlot", "told"]
