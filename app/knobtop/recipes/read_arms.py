"""Reading a recipe's ``[[arm]]`` tables, the knobs they set, the ``[targets]`` they run on
and the ``[allow]`` table that lets a file set a reach variable.

``ArmReader`` builds on ``read_load.LoadReader`` (an arm's ``load = { ... }`` is checked as
``[load]`` is); ``reader._Reader`` builds on it.
"""

from __future__ import annotations

import math
import re
from typing import Any

from knobtop.load.base import MAX_INSTANCES
from knobtop.recipes.model import Arm, Target
from knobtop.recipes.read_load import LoadReader
from knobtop.server import flavors
from knobtop.server.ndb import PARAMETER as NDB_PARAMETER
from knobtop.server.policy import risk_of
from knobtop.tomlcheck import Table

_ARM_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,15}\Z")
_TARGET_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}\Z")  # a lab --name too
_KNOB_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,63}\Z")
ALLOW_KEYS = ("reach",)
TARGET_KEYS = ("profile", "options")
ARM_KEYS = ("name", "knobs", "load", "target")
# What an arm may run differently from [load] (arm.load = { engine = "RocksDB" }).
ARM_LOAD_KEYS = ("workload", "engine", "table_options", "options", "instances")


class ArmReader(LoadReader):
    """[allow], [[arm]] (with their knobs and load) and [targets] of a recipe."""

    allow_reach: frozenset[str] = frozenset()  # [allow] reach, once read (allow)

    def allow(self, doc: Table) -> tuple[str, ...]:
        """``[allow] reach = ["general_log"]``: the reach variables (server.policy) the file
        may set, each checked to be one; read before any knob."""
        table = self.table(doc, "allow") or {}
        self.check_keys(table, ALLOW_KEYS, "allow")
        raw = table.get("reach", [])
        fix = 'write reach = ["general_log"] (the variables\' names, as SHOW VARIABLES prints)'
        if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
            raise self.wrong_type("allow.reach", "a list of variable names", raw, fix)
        names: list[str] = []
        for i, name in enumerate(raw):
            risk = risk_of(name)
            if not _KNOB_NAME.match(risk.name) or not risk.reach:
                raise self.error(f"allow.reach[{i}]", f"{name!r} is not a reach variable "
                                 "(one that names a file, opens the network, loads a plugin, "
                                 "runs SQL, changes logins or starts writing files)",
                                 "remove it: other variables need no permission")
            if risk.name not in names:
                names.append(risk.name)
        self.allow_reach = frozenset(names)
        return tuple(names)

    def check_reach(self, knob: str, dotted: str) -> None:
        """A reach variable (server.policy) only where ``[allow] reach`` lists it."""
        risk = risk_of(knob)
        if risk.reach and risk.name not in self.allow_reach:
            raise self.error(f"{dotted}{self.line_of(knob)}",
                             f"{risk.name} {risk.what}: a file may not set it without "
                             "permission",
                             f'list it under [allow] reach = ["{risk.name}"] in the file and '
                             "run with --allow-reach, or remove it")

    def arms(self, value: object, on_servers: bool = False) -> tuple[Arm, ...]:
        """The [[arm]] tables (``on_servers``: the recipe has [targets], so an arm may
        differ only in the server it runs on)."""
        fix = "write each arm as an [[arm]] table (double brackets) with name and knobs"
        example = '[[arm]]\n  name = "A"\n  knobs = { innodb_doublewrite = "ON" }'
        if value is None:
            raise self.error("arm", "no [[arm]] tables", f"add at least two, e.g. {example}")
        arms: list[Arm] = []
        seen: dict[str, int] = {}
        for i, p, item in self.tables(value, "arm", fix):
            arm = self.arm(item, p, on_servers)
            self.once(seen, arm.name, "arm", i)
            arms.append(arm)
        if len(arms) < 2:
            raise self.error(
                "arm",
                f"{len(arms)} arm; an experiment compares at least two",
                "add another [[arm]] with the values to compare against the baseline "
                "(the first arm)",
            )
        if not on_servers and not any(arm.load for arm in arms):
            for i, arm in enumerate(arms):
                if not arm.knobs:  # then every arm would run the same thing
                    raise self.error(f"arm[{i}].knobs", "names no knob",
                                     'write knobs = { innodb_doublewrite = "OFF" } (one or '
                                     'more knob = value), or give an arm load = { engine = '
                                     '"RocksDB" } to compare tables or loads')
        self.same_knobs(arms)
        return tuple(arms)

    def arm(self, table: Table, p: str, on_servers: bool = False) -> Arm:
        self.check_keys(table, ARM_KEYS, p)
        name = self.req_string(table, "name", p, '"A" (short and unique)')
        if not _ARM_NAME.match(name):
            raise self.error(
                f"{p}.name",
                f"{name!r} is not a short arm name",
                "use up to 16 letters, digits, '.', '_', '+' or '-', e.g. \"B\" or \"bp-256M\"",
            )
        knob_fix = 'write knobs = { innodb_doublewrite = "OFF" } (one or more knob = value)'
        load = self.arm_load(table, p)
        target = self.string(table, "target", p, '"trx2" (a [targets.trx2] table)') or ""
        if "knobs" not in table and not load and not on_servers:
            raise self.error(
                f"{p}.knobs", "missing knobs", f"add {knob_fix.removeprefix('write ')}, or "
                'load = { engine = "RocksDB" } for an arm that differs in its tables or load'
            )
        return Arm(name=name, knobs=self.knobs(table.get("knobs", {}), f"{p}.knobs"),
                   load=load, target=target)

    def arm_load(self, table: Table, p: str) -> dict[str, Any]:
        """``load = { engine = "RocksDB" }`` of an arm: the [load] fields it runs
        differently, checked as in [load]."""
        value = table.get("load")
        example = 'load = { engine = "RocksDB" } or load = { table_options = { ... } }'
        if value is None:
            return {}
        key = f"{p}.load"
        if not isinstance(value, dict):
            raise self.wrong_type(key, "a table", value, f"write {example}")
        self.check_keys(value, ARM_LOAD_KEYS, key)
        out: dict[str, Any] = {}
        if "workload" in value:
            out["workload"] = self.workload(
                self.req_string(value, "workload", key, '"oltp_read_only"'), key)
        if "engine" in value:
            out["engine"] = self.engine(value, key)
        if "options" in value:
            out["options"] = self.options(value, key,
                                          out.get("workload", self.load_workload))
        if "table_options" in value:
            out["table_options"] = self.table_options(value, key)
        if "instances" in value:
            out["instances"] = self.integer(value, "instances", key, lo=1, hi=MAX_INSTANCES)
        return out

    def knobs(self, raw: object, p: str) -> dict[str, str]:
        """A ``knobs = { name = value }`` table: names checked and made canonical, values
        as strings (see knob_value)."""
        knob_fix = 'write knobs = { innodb_doublewrite = "OFF" } (one or more knob = value)'
        if not isinstance(raw, dict):
            raise self.wrong_type(p, "a table", raw, knob_fix)
        knobs: dict[str, str] = {}
        written: dict[str, str] = {}
        for key, value in raw.items():
            dotted = f"{p}.{key}"
            if not _KNOB_NAME.match(key):
                raise self.error(
                    dotted,
                    f"{key!r} is not a server variable name",
                    "write the variable name as SHOW VARIABLES prints it, e.g. sort_buffer_size",
                )
            knob = flavors.canonical(key) or key.lower()
            self.check_reach(knob, dotted)
            if knob in knobs:
                raise self.error(
                    dotted,
                    f"names the same knob as {written[knob]!r} (names ignore case)",
                    "keep one of them",
                )
            knobs[knob] = self.knob_value(value, dotted, key)
            written[knob] = key
        if NDB_PARAMETER in knobs and len(knobs) > 1:
            raise self.error(
                f"{p}.{written[NDB_PARAMETER]}",
                f"{NDB_PARAMETER} is a data-node parameter changed by its own rolling restart; "
                "it cannot go in with server variables",
                f"make {NDB_PARAMETER} the only knob of the recipe (one recipe per kind)",
            )
        return knobs

    def knob_value(self, value: object, dotted: str, key: str) -> str:
        if isinstance(value, bool):
            return "ON" if value else "OFF"
        if isinstance(value, int):
            return str(value)
        if isinstance(value, float):
            if not math.isfinite(value):
                raise self.error(dotted, f"{value} is not a finite number", "give a number")
            return repr(value)
        if isinstance(value, str):
            if not value.strip():
                raise self.error(dotted, "is empty", f'write {key} = "VALUE", e.g. "ON" or "64M"')
            return value.strip()
        raise self.wrong_type(
            dotted,
            "a string, number or boolean",
            value,
            f'write {key} = "VALUE" (e.g. "ON", "64M" or 4)',
        )

    def same_knobs(self, arms: list[Arm]) -> None:
        """Every arm names the knobs of the baseline (arm[0]), no more, no fewer."""
        base = arms[0]
        for i, arm in enumerate(arms[1:], start=1):
            for knob, value in base.knobs.items():
                if knob not in arm.knobs:
                    raise self.error(
                        f"arm[{i}].knobs.{knob}",
                        f"missing: the baseline arm {base.name!r} sets it, arm {arm.name!r} "
                        "does not (every arm names the same knobs)",
                        f'add {knob} = "{value}" to arm {arm.name!r} (the baseline value keeps '
                        "it unchanged), or remove it from every arm",
                    )
            for knob in arm.knobs:
                if knob not in base.knobs:
                    raise self.error(
                        f"arm[{i}].knobs.{knob}",
                        f"not set by the baseline arm {base.name!r} (every arm names the "
                        "same knobs)",
                        f"add {knob} to every arm (the baseline first), or remove it here",
                    )

    def targets(self, doc: Table, arms: tuple[Arm, ...], timeline: bool) -> tuple[Target, ...]:
        """``[targets.NAME]``: the further servers arms name with ``target = "NAME"``."""
        raw = self.table(doc, "targets")
        fix = ('write [targets.NAME] with profile = "PROFILE" (a server of ~/.config/knobtop/'
               'profiles), or options = { innodb_flush_log_at_trx_commit = 2 } for a lab '
               "sandbox of that name (knobtop run --lab)")
        targets: list[Target] = []
        if raw is not None and timeline:
            raise self.error("targets", "a timeline, soak or curve recipe runs on one server",
                             "remove [targets] (arms on other servers compare step by step)")
        for name, table in (raw or {}).items():
            p = f"targets.{name}"
            if not _TARGET_NAME.match(name):
                raise self.error(p, f"{name!r} is not a target name",
                                 "use up to 32 letters, digits, _ and -, starting with a letter "
                                 "or digit, e.g. [targets.trx2]")
            if not isinstance(table, dict):
                raise self.wrong_type(p, "a table", table, fix)
            self.check_keys(table, TARGET_KEYS, p)
            profile = self.string(table, "profile", p, '"db-57"') or ""
            options = self.target_options(table.get("options", {}), f"{p}.options")
            if profile and options:
                raise self.error(f"{p}.options", "a profile's server has its own my.cnf",
                                 "give profile (a server) or options (a lab sandbox), not both")
            targets.append(Target(name, profile, options))
        names = {t.name for t in targets}
        for i, arm in enumerate(arms):
            if arm.target and arm.target not in names:
                known = ", ".join(sorted(names)) or "none"
                raise self.error(f"arm[{i}].target", f"no [targets.{arm.target}] table "
                                 f"(targets: {known})", f"add [targets.{arm.target}], "
                                 "or correct the name")
        used = {arm.target for arm in arms}
        for target in targets:
            if target.name not in used:
                raise self.error(f"targets.{target.name}", "no arm runs on it",
                                 f'give an arm target = "{target.name}", or remove it')
        return tuple(targets)

    def target_options(self, raw: object, p: str) -> tuple[tuple[str, str], ...]:
        """A lab target's base my.cnf options, as mariadbd's option-file reader takes them;
        never a reach variable (the lab checks each against its server's own variables when
        it builds the sandbox)."""
        from knobtop.lab_options import check_option, option_reach
        from knobtop.labdirs import LabError

        if not isinstance(raw, dict):
            raise self.wrong_type(p, "a table", raw,
                                  "write options = { innodb_flush_log_at_trx_commit = 2 }")
        out: list[tuple[str, str]] = []
        for key, value in raw.items():
            if isinstance(value, bool):
                text = "ON" if value else "OFF"
            elif isinstance(value, int | float | str):
                text = str(value)
            else:
                raise self.wrong_type(f"{p}.{key}", "a string, number or boolean", value,
                                      f'write {key} = "VALUE"')
            risk = option_reach(key)
            if risk is not None:
                raise self.error(f"{p}.{key}", f"{risk.name} {risk.what}, so a lab sandbox's "
                                 "options may not set it", "remove it: the lab sets its own "
                                 "listener, paths, plugins and logins; give performance "
                                 "variables only, or a profile for a server of your own")
            try:
                check_option(key, text)
            except LabError as exc:
                raise self.error(f"{p}.{key}", str(exc).removeprefix("--option "),
                                 "correct the option (a name and a plain value)") from None
            out.append((key, text))
        return tuple(out)


__all__ = ["ALLOW_KEYS", "ARM_KEYS", "ARM_LOAD_KEYS", "TARGET_KEYS", "ArmReader"]
