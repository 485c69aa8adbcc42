"""A recipe against one server: does it apply, does every knob exist and take its values.

``check_for_server`` checks the recipe against one server's catalog: the ``[applies]``
table, that every knob exists there, and every value against the knob's type and range
(``knobs.validate``); it returns warnings for things that run but may mislead (ignored
knobs, knobs of unknown static-ness, one replicate, ...). ``static_knobs`` names the knobs
that need a restart to change. ``offline_warnings`` are the ones known without a server.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import replace

from knobtop.analysis.power import no_verdict_warning, runs_for_verdict
from knobtop.recipes.model import (
    Arm,
    Constraint,
    Recipe,
    RecipeError,
    Steady,
    Timeline,
    server_flavors,
)
from knobtop.recipes.reader import bundled_recipes
from knobtop.server.catalog import Catalog, CatalogFacts
from knobtop.server.knobcheck import absent_problem, close_name
from knobtop.server.knobs import KnobError, validate

# Knob -> candidates to suggest when it is absent on a server (the first one present wins).
_EQUIVALENTS: dict[str, tuple[str, ...]] = {
    "innodb_page_cleaners": ("innodb_write_io_threads",),
    "innodb_mtflush_threads": ("innodb_page_cleaners", "innodb_write_io_threads"),
    "innodb_use_mtflush": ("innodb_page_cleaners", "innodb_write_io_threads"),
    "DiskPageBufferMemory": ("innodb_buffer_pool_size",),
}
# Knob -> a bundled recipe that does the same experiment with the equivalent knob.
_EQUIVALENT_RECIPES: dict[str, str] = {
    "innodb_write_io_threads": "flush-threads-mariadb.toml",
    "innodb_page_cleaners": "flush-threads-mysql.toml",
    "innodb_buffer_pool_size": "buffer-pool-climb.toml",
}

# --------------------------------------------------------------------------- one server


def _describe_server(catalog: Catalog) -> str:
    kinds = server_flavors(catalog)
    if kinds[0][0] == "ndb":
        ndb_v = ".".join(str(n) for n in kinds[0][1])
        return f"an SQL node of an NDB Cluster (ndb {ndb_v}, mysql {catalog.version.short})"
    return f"{catalog.version.flavor} {catalog.version.short}"


def _check_applies(recipe: Recipe, catalog: Catalog) -> None:
    if not recipe.applies:
        return
    kinds = server_flavors(catalog)
    listed = [(flavor, version) for flavor, version in kinds if flavor in recipe.applies]
    if any(Constraint.parse(recipe.applies[f]).allows(v) for f, v in listed):
        return
    wanted = ", ".join(f"{flavor} {text}" for flavor, text in recipe.applies.items())
    key = f"applies.{listed[0][0]}" if listed else "applies"
    problem = f"refuses this server, {_describe_server(catalog)}: it applies to {wanted}"
    if recipe.why:
        problem += f" ({recipe.why})"
    names = [p.stem for p in bundled_recipes() if p.stem != recipe.name]
    fix = "run it against a server that [applies] accepts"
    if names:
        fix += f", or pick another recipe ({', '.join(names)})"
    raise RecipeError(str(recipe.path), key, problem, fix)


def _absent_problem(knob: str, catalog: Catalog) -> str:
    """Why ``knob`` is refused here: the catalog's note, and the name most like it."""
    return absent_problem(catalog, knob, _describe_server(catalog)) or ""


def _absent_fix(knob: str, catalog: Catalog, where: str = "in every arm") -> str:
    close = close_name(catalog, knob)
    if close is not None:
        return f"write {close} instead of {knob} {where}"
    for candidate in _EQUIVALENTS.get(knob, ()):
        if candidate in catalog and catalog.get(candidate).present:
            other = _EQUIVALENT_RECIPES.get(candidate)
            see = f" (the bundled {other} does that)" if other else ""
            return (
                f"this server's nearest equivalent is {candidate}: use it in every arm "
                f"instead{see}, or remove {knob} from every arm"
            )
    return (
        f"remove {knob} from every arm (or remove the arms that compare it), "
        "or run the recipe on a server that has it"
    )


def check_for_server(recipe: Recipe, catalog: Catalog, *, whole: bool = True) -> list[str]:
    """Check ``recipe`` against one server's catalog; returns warnings, raises RecipeError.

    Refusals: the server is not accepted by ``[applies]`` (the message names the flavor,
    the version and the recipe's ``why``); a knob is absent on this server (the catalog's
    note says why; the fix names this server's equivalent when there is an obvious one);
    a value fails ``knobs.validate`` (type, range, block size); an innodb_buffer_pool_size
    above the server's read-only innodb_buffer_pool_size_max.
    Warnings: knobs the server accepts but ignores, knobs whose static-ness is unknown,
    dynamic knobs whose note says some changes need a restart, arms that set identical
    values, fewer than two replicates (no verdict), and gates that would not gate.
    """
    file = str(recipe.path)
    _check_applies(recipe, catalog)
    if recipe.timeline is not None:
        return _check_timeline(recipe, recipe.timeline, catalog)
    warnings: list[str] = []
    facts: dict[str, CatalogFacts] = {}
    for knob in recipe.knobs:
        fact = catalog.get(knob)
        if not fact.present:
            i = next(n for n, arm in enumerate(recipe.arms) if knob in arm.knobs)
            raise RecipeError(file, f"arm[{i}].knobs.{knob}", _absent_problem(knob, catalog),
                              _absent_fix(knob, catalog, "in every arm"))
        facts[knob] = fact
    resolved: list[dict[str, object]] = []
    for i, arm in enumerate(recipe.arms):
        values: dict[str, object] = {}
        for knob, raw in arm.knobs.items():
            try:
                values[knob] = validate(facts[knob], raw, static_ok=True)
            except KnobError as exc:
                raise RecipeError(
                    file,
                    f"arm[{i}].knobs.{knob}",
                    f"arm {arm.name!r}: {exc}",
                    f"change {knob} in arm {arm.name!r} to a value this server accepts",
                ) from None
        _check_pool_max(recipe, catalog, i, arm, values)
        resolved.append(values)
    for knob, fact in facts.items():
        if fact.ignored:
            warnings.append(
                f"{knob} is accepted but ignored on this server ({fact.note}): "
                "expect the arms to measure the same"
            )
        if fact.mode == "unknown":
            warnings.append(
                f"whether {knob} can change at runtime is unknown on this server: knobtop "
                "tries SET GLOBAL and restarts the server if it is refused"
            )
        elif fact.mode == "dynamic" and "restart" in fact.note:
            warnings.append(f"{knob}: {fact.note}")
    for i, values in enumerate(resolved):
        for j in range(i):
            # the same knob values and the same load (arms may differ in tables instead)
            if resolved[j] == values and recipe.arms[j].load == recipe.arms[i].load \
                    and recipe.arms[j].target == recipe.arms[i].target:
                warnings.append(
                    f"arms {recipe.arms[j].name!r} and {recipe.arms[i].name!r} set the same "
                    "values on this server: an A/A comparison (it measures noise)"
                )
    if whole:  # not one server's part of a table (check_for_targets judges the whole)
        warnings.extend(_replicate_warnings(recipe))
    warnings.extend(_gate_warnings(recipe, catalog))
    return warnings


def check_for_targets(recipe: Recipe, catalogs: Mapping[str, Catalog]) -> list[str]:
    """``check_for_server`` for a recipe whose arms run on several servers (issue 19):
    each server's arms against its own catalog ("" is the run's own server); the
    replicates are judged once, for the whole table."""
    warnings: list[str] = []
    for name, catalog in catalogs.items():
        arms = tuple(a for a in recipe.arms if a.target == name)
        if not arms:
            continue
        try:
            found = check_for_server(replace(recipe, arms=arms), catalog, whole=False)
        except RecipeError as exc:
            where = f"target {name}" if name else "the run's own server"
            raise RecipeError(exc.file, exc.key, f"{exc.problem} ({where})", exc.fix) from None
        warnings.extend(w for w in found if w not in warnings)
    warnings.extend(_replicate_warnings(recipe))
    return warnings


def _replicate_warnings(recipe: Recipe) -> list[str]:
    """Too few replicates for any verdict in this recipe's table: the best p a cell can
    read, exactly, for its rounds (paired or not, as the results decide) and its Holm
    family (each arm but the baseline at each thread count), e.g. 3 rounds of one
    comparison (p = 0.100) or 4 of two (p = 0.057). A curve has none to give: one
    reading per value."""
    if recipe.curve is not None:  # one reading per value: a curve, not a verdict
        return []
    family = max(1, (len(recipe.arms) - 1) * len(recipe.threads))
    if recipe.replicates < 2:
        return [
            f"replicates = {recipe.replicates}: one run per arm gives numbers but no "
            f"verdict (a difference needs at least {runs_for_verdict(family)} replicates "
            "in this table)"
        ]
    fix = ", or fewer arms or thread counts" if family > 1 else ""
    warning = no_verdict_warning(recipe.replicates, family, fix=fix)
    return [] if warning is None else [warning]


def _check_timeline(recipe: Recipe, timeline: Timeline, catalog: Catalog) -> list[str]:
    """A timeline's start knobs and actions against the server, as arms' are."""
    warnings: list[str] = []
    sets = [("timeline.start", timeline.start),
            *((f"timeline.action[{i}].knobs", a.knobs) for i, a in enumerate(timeline.actions))]
    for key, knobs in sets:
        for knob, raw in knobs.items():
            fact = catalog.get(knob)
            if not fact.present:
                raise RecipeError(str(recipe.path), f"{key}.{knob}",
                                  _absent_problem(knob, catalog),
                                  _absent_fix(knob, catalog, f"in {key}"))
            try:
                validate(fact, raw, static_ok=True)
            except KnobError as exc:
                raise RecipeError(str(recipe.path), f"{key}.{knob}", str(exc),
                                  f"change {knob} to a value this server accepts") from None
            if fact.ignored:
                warnings.append(f"{knob} is accepted but ignored on this server "
                                f"({fact.note})")
    return warnings


def _check_pool_max(
    recipe: Recipe, catalog: Catalog, i: int, arm: Arm, values: Mapping[str, object]
) -> None:
    size = values.get("innodb_buffer_pool_size")
    if not isinstance(size, int) or "innodb_buffer_pool_size_max" not in catalog:
        return
    cap_fact = catalog.get("innodb_buffer_pool_size_max")
    try:
        cap = int(cap_fact.value or "")
    except ValueError:
        return
    if cap_fact.present and 0 < cap < size:
        raise RecipeError(
            str(recipe.path),
            f"arm[{i}].knobs.innodb_buffer_pool_size",
            f"arm {arm.name!r}: {arm.knobs['innodb_buffer_pool_size']} is above this server's "
            f"innodb_buffer_pool_size_max ({cap} bytes, read-only), so the resize would fail",
            f"start the server with innodb_buffer_pool_size_max >= {size}, or lower the arm",
        )


def _gate_warnings(recipe: Recipe, catalog: Catalog) -> list[str]:
    out: list[str] = []
    waits = recipe.waits
    if waits.dirty_at_lwm and "innodb_max_dirty_pages_pct_lwm" in catalog:
        lwm = catalog.get("innodb_max_dirty_pages_pct_lwm").value
        try:
            low = float(lwm or "nan")
        except ValueError:
            low = math.nan
        if low == 0:
            limit = catalog.get("innodb_max_dirty_pages_pct").value or "?"
            out.append(
                "wait.dirty_at_lwm: innodb_max_dirty_pages_pct_lwm is 0 on this server, which "
                f"means innodb_max_dirty_pages_pct ({limit}), so the gate barely waits; "
                "write wait.dirty_pct_below = 5.0 for a real gate"
            )
    out.extend(_steady_warnings(recipe))
    return out


def _steady_warnings(recipe: Recipe) -> list[str]:
    if not recipe.waits.plateau and recipe.steady != Steady():
        return ["[steady] is set but wait.plateau is false, so it is not used"]
    return []


def offline_warnings(recipe: Recipe) -> list[str]:
    """The warnings the file alone gives (a run says them once the server answers, with
    the server's own): too few replicates for a verdict, [steady] without a plateau."""
    if recipe.timeline is not None:
        return []
    return _replicate_warnings(recipe) + _steady_warnings(recipe)


def static_knobs(recipe: Recipe, catalog: Catalog) -> list[str]:
    """The recipe's knobs that need a restart to change on this server (recipe order).

    A knob counts when the catalog says it is not dynamic: "static", and also "unknown"
    (MySQL without facts: SET GLOBAL may be refused, so plan for a restart).  Absent
    knobs are left out (``check_for_server`` refuses them).  Arms do not need to differ
    in such a knob for it to be listed: its value still goes into the config file.
    """
    out: list[str] = []
    for knob in recipe.knobs:
        fact = catalog.get(knob)
        if fact.present and not fact.dynamic:
            out.append(knob)
    return out


def check_server(recipe: Recipe, catalog: Catalog, target: str = "") -> list[str]:
    """The recipe against the server of ``target`` ("": the run's own) as soon as it
    answers: the arms that run there (or the timeline) are checked as
    ``check_for_server`` does; RecipeError names the knob, the close match and the fix.
    Returns the warnings (the runner says them before its first step)."""
    if not recipe.targets:
        return check_for_server(recipe, catalog)
    return check_for_targets(recipe, {target: catalog})
