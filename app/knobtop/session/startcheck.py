"""Checks at the start: what a command will set, against the server, before anything runs.

``build_session`` runs them as soon as the server answers, before a table is prepared or a load
starts: every ``--set`` name and value, and the knobs of the recipe (its arms on this server, or
its timeline) or of the search.  A refusal ends the command with the knob, the close match and
the fix, and nothing half-done: no table was prepared, no knob changed (a sandbox the command
started stops as always).  The recipe and the search check themselves (``check_server``, which
the command line hands over as ``SessionOptions.checks``); the runner checks again when it
starts, against the catalog the session read then.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from knobtop.errors import BadValue
from knobtop.server.catalog import Catalog, load_catalog
from knobtop.server.knobcheck import change_problem, close_name

if TYPE_CHECKING:
    from knobtop.server.link import ServerLink
    from knobtop.session.options import ScheduledChange, SessionOptions


def has_knobs(options: SessionOptions) -> bool:
    """Whether the command names knobs to check (a plain live session names none)."""
    return bool(options.changes) or bool(options.checks)


async def check_at_start(link: ServerLink, options: SessionOptions) -> None:
    """Read the server's catalog over ``link`` (closed after) and check the command's knobs
    against it; BadValue (``--set``) or RecipeError (a recipe, a search) when one cannot be
    set there."""
    if not has_knobs(options):
        return
    try:
        catalog = await load_catalog(link)
    finally:
        await link.close()
    check_knobs(options, catalog)


def check_knobs(options: SessionOptions, catalog: Catalog) -> None:
    """``check_at_start`` on a catalog already read."""
    check_changes(options.changes, catalog)
    for check in options.checks:
        check(catalog)


def check_changes(changes: Sequence[ScheduledChange], catalog: Catalog) -> None:
    """Every ``--set`` names a variable of this server and a value it takes."""
    for change in changes:
        problem = change_problem(catalog, change.knob, change.value)
        if problem is None:
            continue
        close = close_name(catalog, change.knob)
        if close is not None:
            fix = f"write --set {close}={change.value}@{change.at:g}"
        elif not catalog.get(change.knob).present:
            fix = ("write the name as SHOW GLOBAL VARIABLES prints it (the live screen's "
                   "palette, Ctrl+P, searches them)")
        else:
            now = catalog.get(change.knob).value
            fix = "give a value this server takes" + (f" (it is {now} now)" if now else "")
        end = "" if problem.endswith(("?", ".")) else "."
        raise BadValue(f"--set {change.text}: {problem}{end} Fix: {fix}. Nothing was run: no "
                       "table was prepared, no load started, no knob changed")


__all__ = ["check_at_start", "check_changes", "check_knobs", "has_knobs"]
