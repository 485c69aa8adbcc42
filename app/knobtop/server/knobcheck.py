"""A knob a command will set, checked against the server's catalog before anything runs.

``--set``, recipes and search files name knobs; a typo must be caught when the server is
first reached, before a table is prepared or a load starts, and said with the variable the
person most likely meant (difflib over the catalog's own names).
"""

from __future__ import annotations

import difflib

from knobtop.server.catalog import Catalog, datadir_refusal
from knobtop.server.knobs import KnobError, validate

CLOSE = 0.8  # how alike a name must be to be offered (difflib's ratio)


def close_name(catalog: Catalog, name: str) -> str | None:
    """The server's variable whose name is closest to ``name``, for a name no flavor knows
    (a typo, most likely; a knob the flavor table knows has a note saying where it went);
    None when ``name`` is a variable here, or nothing is close."""
    fact = catalog.get(name)
    if fact.present or fact.source:
        return None
    names = [f.name.lower() for f in catalog.present()]
    match = difflib.get_close_matches(name.strip().lower(), names, n=1, cutoff=CLOSE)
    return match[0] if match else None


def did_you_mean(catalog: Catalog, name: str) -> str:
    """"; did you mean NAME?" for a name close to a variable of this server, else ""."""
    close = close_name(catalog, name)
    return f"; did you mean {close}?" if close else ""


def absent_problem(catalog: Catalog, name: str, server: str = "") -> str | None:
    """Why ``name`` is not a knob of this server (``server`` says which, by default its
    flavor and version), with the catalog's note, then the close match; None when it is
    one."""
    fact = catalog.get(name)
    if fact.present:
        return None
    where = server or f"{catalog.version.flavor} {catalog.version.short}"
    note = f" ({fact.note})" if fact.note and fact.source else ""  # a flavor's note
    return f"{name} does not exist on this server, {where}{note}{did_you_mean(catalog, name)}"


def change_problem(catalog: Catalog, name: str, raw: str) -> str | None:
    """Why ``name`` cannot be set to ``raw`` on this server (no such variable, a value its
    type or range refuses, a knob the datadir pins), or None when it can. Static knobs
    count as settable: the command confirmed the restart."""
    absent = absent_problem(catalog, name)
    if absent is not None:
        return absent
    fact = catalog.get(name)
    try:
        value = validate(fact, raw, static_ok=True)
    except KnobError as exc:
        return str(exc)
    return datadir_refusal(fact.name, fact.value, str(value))


__all__ = ["CLOSE", "absent_problem", "change_problem", "close_name", "did_you_mean"]
