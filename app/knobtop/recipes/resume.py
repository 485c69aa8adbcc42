"""What a resumed tune takes from the journal of the tune it resumes (``tune --resume``):
the search's own knobs only, each inside the search's range or choices, and the baseline
the server holds now, except where it holds a value that tune's trials left behind."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Collection, Iterable, Sequence
from pathlib import Path
from typing import Any

import orjson

from knobtop.analysis.tune import TuneSpec
from knobtop.errors import KnobtopError
from knobtop.journal.events import Change, Event, RecipeRun, StepResult, Trial
from knobtop.recipes.search_model import Dimension, Search, SearchError


def search_param(dim: Dimension, text: str) -> Any:
    """A knob value as the sampler's parameter (None: outside the search space)."""
    if dim.choices:
        return text if text in dim.choices else None
    assert dim.low is not None and dim.high is not None
    try:
        value: float = int(text) if dim.integer else float(text)
    except ValueError:
        return None
    return value if dim.low <= value <= dim.high else None


def spec_of(search: Search) -> TuneSpec:
    return TuneSpec(name=search.name, direction=search.direction, metric=search.metric,
                    threads=search.threads, constraints=dict(search.constraints),
                    candidates=search.candidates, replicates=search.replicates,
                    plateau=search.waits.plateau)


def tune_plan(search: Search) -> dict[str, Any]:
    """What the journal's recipe start says about the search (the report reads its spec,
    a resume checks it)."""
    return {"kind": "tune", "tune": {
        **spec_of(search).plan(), "space": search.space(), "trials": search.trials,
        "minutes": search.minutes, "workload": search.load.workload, "seed": search.seed}}


def prior_trials(path: Path, search: Search,
                 events: Iterable[Event]) -> list[Trial]:
    """The trials of an earlier run of the same search (``--resume``), from its journal's
    events; SearchError when it is not a tune of this search (naming what differs)."""
    plan: dict[str, Any] | None = None
    trials: list[Trial] = []
    for event in events:
        if isinstance(event, RecipeRun) and event.action == "start" and plan is None:
            plan = event.plan
        elif isinstance(event, Trial):
            trials.append(event)
    shown = str(path)
    if plan is None or plan.get("kind") != "tune":
        raise SearchError(shown, None, "not a tune journal (no tune started in it)",
                          "give the journal a `knobtop tune` wrote")
    mine = tune_plan(search)["tune"]
    theirs = plan.get("tune", {})
    for key in ("space", "direction", "metric", "constraints", "workload", "threads"):
        if theirs.get(key) != mine[key]:
            raise SearchError(shown, key, f"the journal's search has a different {key} "
                              f"({theirs.get(key)!r}, the file says {mine[key]!r})",
                              "resume with the search file that journal was written with")
    for t in trials:
        _check_prior(path, search, t)
    seen: dict[int, Trial] = {}
    for t in trials:
        if t.number > 0:
            seen.setdefault(t.number, t)  # a trial resumed more than once: its first record
    return [t for t in trials if t.number == 0] + [seen[n] for n in sorted(seen)]


def leftover_knobs(prior: Sequence[Trial], now: dict[str, str],
                   set_values: Iterable[tuple[str, str]] = (),
                   interrupted: Collection[str] = ()) -> dict[str, str]:
    """The resumed journal's baseline values (trial 0) of the knobs whose value on the server
    ``now`` is one that journal's tune set (a trial's, or ``set_values``: its changes, the
    trial it was killed in included) and not its baseline: what a killed tune left behind.
    ``interrupted``: knobs the arm it was killed setting had not journaled yet (a SET may
    have reached the server before its change was written): not the baseline, left too."""
    earlier = next((t.knobs for t in prior if t.number == 0), {})
    pending = {k: v for k, v in earlier.items()
               if k in interrupted and k in now and now[k].upper() != v.upper()}
    tried: dict[str, set[str]] = {}
    for t in prior:
        if t.number > 0:
            for knob, value in t.knobs.items():
                tried.setdefault(knob, set()).add(value.upper())
    for knob, value in set_values:
        tried.setdefault(knob, set()).add(value.upper())
    return {**pending, **{k: v for k, v in earlier.items() if k in now
                          and now[k].upper() != v.upper() and now[k].upper() in tried.get(k, ())}}


def values_set(path: Path, knobs: Sequence[str]) -> list[tuple[str, str]]:
    """The values a journal's changes set on ``knobs`` (the tune's own), as (knob, value)."""
    from knobtop.journal.reader import JournalReader

    wanted = set(knobs)
    with contextlib.suppress(KnobtopError, OSError):
        return [(e.knob, e.new) for e in JournalReader(path)
                if isinstance(e, Change) and e.result == "ok" and e.knob in wanted
                and e.new is not None]
    return []


def interrupted_arm(events: Iterable[Event], knobs: Sequence[str]) -> set[str]:
    """The search's ``knobs`` a killed tune may have set without journaling it: a journal
    that has no end of its run (it was killed) may have been killed between a SET reaching
    the server and its change's line, so every knob it had not journaled a change of since
    its last measured step counts. Empty for a run that ended."""
    changed: set[str] = set()  # journaled since the last measured step
    for event in events:
        if isinstance(event, Change) and event.reason.startswith("recipe ") \
                and ": arm " in event.reason:
            changed.add(event.knob)
        elif isinstance(event, StepResult | Trial):
            changed = set()
        elif isinstance(event, RecipeRun) and event.action != "start":
            return set()  # the run ended: nothing was left half-set
    return set(knobs) - changed


def interrupted_in(path: Path, knobs: Sequence[str]) -> set[str]:
    """:func:`interrupted_arm` of the journal at ``path`` (empty if it cannot be read)."""
    from knobtop.journal.reader import JournalReader

    with contextlib.suppress(KnobtopError, OSError):
        return interrupted_arm(JournalReader(path), knobs)
    return set()


# A baseline value as a journal may hold it: a plain number or word (the session validates
# it against the server before it is ever set).
_PLAIN_VALUE = re.compile(r"[A-Za-z0-9_.+-]{1,64}")


def _check_prior(path: Path, search: Search, trial: Trial) -> None:
    """A resumed trial sets the search's own knobs only, each inside the search's range or
    choices (the baseline, trial 0: plain values); SearchError naming the journal's line."""
    dims = {d.name: d for d in search.knobs}
    for knob, value in trial.knobs.items():
        dim = dims.get(knob)
        if dim is None:
            problem = (f"trial {trial.number} sets {knob}, which the search does not search: "
                       "a resumed tune takes only the search's own knobs")
        elif trial.number > 0 and search_param(dim, value) is None:
            problem = (f"trial {trial.number} sets {knob} = {value}, outside the search's "
                       f"{'choices' if dim.choices else 'range'}")
        elif not _PLAIN_VALUE.fullmatch(value):
            problem = f"the baseline (trial 0) has {knob} = {value!r}, not a plain value"
        else:
            continue
        raise SearchError(f"{path}{_trial_line(path, trial)}", None, problem,
                          "resume only a journal this search wrote, as it wrote it")


def _trial_line(path: Path, trial: Trial) -> str:
    """":N", the journal's line of ``trial`` (its first record), or "" (for a message)."""
    try:
        with path.open("rb") as fh:
            for number, line in enumerate(fh, start=1):
                if line.startswith(b'{"ev":"trial"'):
                    with contextlib.suppress(orjson.JSONDecodeError):
                        data = orjson.loads(line)
                        if data.get("number") == trial.number and data.get("t") == trial.t:
                            return f":{number}"
    except OSError:
        pass
    return ""


def read_prior(path: Path, search: Search) -> list[Trial]:
    """``--resume JOURNAL``: the trials that journal holds, checked against ``search``."""
    from knobtop.journal.reader import JournalReader

    if not path.is_file():
        raise SearchError(str(path), None, "journal not found",
                          "give the journal of the tune to resume (its path is printed when "
                          "the tune starts: Journal: ...)")
    return prior_trials(path, search, JournalReader(path))
