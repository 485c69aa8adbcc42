"""recipes/outcome.py: the one mapping of how a run ended, for every front end."""

from __future__ import annotations

import pytest

from knobtop.recipes.model import RecipeError
from knobtop.recipes.outcome import FINISHED, RESTORED, outcome_of
from knobtop.recipes.runner import RunAborted, RunFailed
from knobtop.recipes.search import SearchError


@pytest.mark.parametrize(("exc", "outcome", "code", "message"), [
    (RecipeError("r.toml", "arm", "no such knob", "remove it"), "refused", 2, "no such knob"),
    (SearchError("s.toml", "knob", "bad range", "fix it"), "refused", 2, "bad range"),
    (RunAborted("recipe r aborted"), "aborted", 130, RESTORED),
    (RunFailed("the load failed: sysbench exited"), "failed", 1, "sysbench exited"),
    (ValueError(), "failed", 1, "ValueError"),
])
def test_each_end_has_one_outcome_code_and_reason(exc: BaseException, outcome: str,
                                                  code: int, message: str) -> None:
    ended = outcome_of(exc)
    assert (ended.outcome, ended.code) == (outcome, code)
    assert message in ended.message
    assert ended.reason("recipe") == "recipe " + {"refused": "refused", "aborted": "aborted",
                                                  "failed": "failed"}[outcome]


def test_a_run_that_ends_well() -> None:
    assert (FINISHED.code, FINISHED.reason("tune")) == (0, "tune finished")
