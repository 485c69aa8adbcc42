"""How a recipe or tune run ended, the one mapping every front end uses (headless, the live
screen, the command line's exit code): finished, refused before anything changed, aborted,
or failed (the runner restored the baseline after the last two)."""

from __future__ import annotations

from dataclasses import dataclass

from knobtop.recipes.model import RecipeError
from knobtop.recipes.runner import RunAborted, RunFailed

# outcome -> the exit code of `knobtop run` / `tune`, headless or on the live screen
EXIT_CODES = {"end": 0, "refused": 2, "aborted": 130, "failed": 1}
WORDS = {"end": "finished", "refused": "refused", "aborted": "aborted", "failed": "failed"}
RESTORED = "the baseline knobs were restored"


@dataclass(frozen=True)
class RunOutcome:
    outcome: str  # "end", "refused", "aborted", "failed"
    message: str = ""

    @property
    def code(self) -> int:
        return EXIT_CODES[self.outcome]

    def reason(self, what: str) -> str:
        """Why the session closes: ``recipe finished``, ``tune aborted``..."""
        return f"{what} {WORDS[self.outcome]}"


FINISHED = RunOutcome("end")


def outcome_of(exc: BaseException) -> RunOutcome:
    """What an exception out of a run means: a refusal (a recipe or search file the
    server does not suit: nothing was changed), an abort, or a failure."""
    if isinstance(exc, RecipeError):  # a search file's SearchError too
        return RunOutcome("refused", str(exc))
    if isinstance(exc, RunAborted):
        return RunOutcome("aborted", RESTORED)
    if isinstance(exc, RunFailed):
        return RunOutcome("failed", str(exc))
    return RunOutcome("failed", str(exc) or type(exc).__name__)


__all__ = ["EXIT_CODES", "FINISHED", "RESTORED", "RunOutcome", "outcome_of"]
