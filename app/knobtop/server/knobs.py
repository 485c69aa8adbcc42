"""Knob facts from the server and value validation (the appliers: server/appliers/)."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from knobtop.errors import KnobtopError
from knobtop.server.link import ServerLink, ServerVersion

# The knobs the seed experiments flip (REFERENCE.md section 1).
SEED_KNOBS: tuple[str, ...] = (
    "innodb_flush_log_at_trx_commit",
    "innodb_io_capacity",
    "innodb_io_capacity_max",
    "innodb_max_dirty_pages_pct",
    "innodb_max_dirty_pages_pct_lwm",
    "innodb_flush_neighbors",
    "innodb_adaptive_flushing",
    "innodb_lru_scan_depth",
    "innodb_buffer_pool_size",
    "innodb_buffer_pool_instances",
    "innodb_thread_concurrency",
    "innodb_doublewrite",
    "innodb_page_cleaners",
    "innodb_mtflush_threads",
    "innodb_use_mtflush",
    "innodb_write_io_threads",
    "innodb_read_io_threads",
    "innodb_purge_threads",
    "sort_buffer_size",
)

# Why a seed knob is missing, by flavor (REFERENCE.md section 1).
ABSENT_NOTES: dict[tuple[str, str], str] = {
    ("mariadb", "innodb_thread_concurrency"): "removed in MariaDB 10.6.0 (ignored since 10.5.5)",
    ("mariadb", "innodb_page_cleaners"): "removed in MariaDB 10.6.0 (ignored since 10.5)",
    ("mariadb", "innodb_buffer_pool_instances"): "removed in MariaDB 10.6.0",
    ("mariadb", "innodb_mtflush_threads"): "removed in MariaDB 10.3.2",
    ("mariadb", "innodb_use_mtflush"): "removed in MariaDB 10.3.2",
    ("mysql", "innodb_mtflush_threads"): "MariaDB 10.1-10.2 only",
    ("mysql", "innodb_use_mtflush"): "MariaDB 10.1-10.2 only",
}

_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([kmgt]?)i?b?\s*$", re.IGNORECASE)
_MULT = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
_TRUE = {"on", "1", "true", "yes"}
_FALSE = {"off", "0", "false", "no"}


def valid_name(name: str) -> bool:
    """A plausible server variable name (what may be put into SQL after a catalog check)."""
    return bool(_NAME.match(name))


class KnobError(KnobtopError, ValueError):
    """A knob name or value that cannot be applied; the message says why and what to do."""


@dataclass(frozen=True, slots=True)
class KnobFacts:
    """What the server says about one variable, plus its current global value."""

    name: str
    present: bool
    value: str | None = None
    dynamic: bool = False
    type: str = ""
    minimum: float | None = None
    maximum: float | None = None
    block_size: int | None = None
    choices: tuple[str, ...] = ()
    default: str | None = None
    note: str = ""

    @property
    def status(self) -> str:
        if not self.present:
            return "absent"
        return "dynamic" if self.dynamic else "static"

    def to_json(self) -> dict[str, Any]:
        return {
            "present": self.present,
            "dynamic": self.dynamic,
            "type": self.type,
            "min": self.minimum,
            "max": self.maximum,
            "choices": list(self.choices),
            "default": self.default,
            "note": self.note,
        }


def _num(raw: object) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        return float(str(raw))
    except ValueError:
        return None


def _names_in(names: Iterable[str]) -> tuple[list[str], str]:
    """``names`` lower-cased and checked (KnobError for one that is not a variable name),
    and the ``%s`` placeholders of an ``IN (...)`` list of them."""
    wanted = [n.lower() for n in names]
    for name in wanted:
        if not _NAME.match(name):
            raise KnobError(f"'{name}' is not a server variable name")
    return wanted, ", ".join(["%s"] * len(wanted))


async def load_facts(link: ServerLink, names: Iterable[str]) -> dict[str, KnobFacts]:
    """Facts for ``names`` from the server; names it does not know come back absent."""
    wanted, placeholders = _names_in(names)
    version = link.version
    assert version is not None
    if not wanted:
        return {}
    found: dict[str, KnobFacts] = {}
    if version.flavor == "mariadb" and version.at_least(10, 1):
        rows = await link.query(
            "SELECT LOWER(VARIABLE_NAME), GLOBAL_VALUE, READ_ONLY, VARIABLE_TYPE, "
            "NUMERIC_MIN_VALUE, NUMERIC_MAX_VALUE, NUMERIC_BLOCK_SIZE, ENUM_VALUE_LIST, "
            "DEFAULT_VALUE FROM information_schema.SYSTEM_VARIABLES "
            f"WHERE VARIABLE_SCOPE IN ('GLOBAL', 'SESSION') AND VARIABLE_NAME IN ({placeholders})",
            wanted,
        )
        for name, value, ro, vtype, vmin, vmax, block, enums, default in rows:
            found[name] = KnobFacts(
                name=name,
                present=True,
                value=None if value is None else str(value),
                dynamic=str(ro).upper() != "YES",
                type=str(vtype or ""),
                minimum=_num(vmin),
                maximum=_num(vmax),
                block_size=int(block) if _num(block) else None,
                choices=tuple(str(enums).split(",")) if enums else (),
                default=None if default is None else str(default),
            )
    else:
        # MySQL: values only here; its catalog (variables_info + flavor table) is issue #4.
        rows = await link.query(
            "SELECT LOWER(VARIABLE_NAME), VARIABLE_VALUE FROM performance_schema.global_variables "
            f"WHERE VARIABLE_NAME IN ({placeholders})",
            wanted,
        )
        for name, value in rows:
            found[name] = KnobFacts(name=name, present=True, value=str(value), dynamic=True)
    for name in wanted:
        if name not in found:
            fallback = f"not a variable on this {version.flavor}"
            note = ABSENT_NOTES.get((version.flavor, name), fallback)
            found[name] = KnobFacts(name=name, present=False, note=note)
    return found


async def global_values_now(link: ServerLink, names: Iterable[str]) -> dict[str, str | None]:
    """The global value of each of ``names`` in ONE statement, from the table load_facts
    reads (so a value compares with a change's ``old`` and ``new`` as they are written);
    names the server does not know are left out."""
    wanted, placeholders = _names_in(names)
    version = link.version
    assert version is not None
    if not wanted:
        return {}
    if version.flavor == "mariadb" and version.at_least(10, 1):
        rows = await link.query(
            "SELECT LOWER(VARIABLE_NAME), GLOBAL_VALUE FROM information_schema.SYSTEM_VARIABLES "
            f"WHERE VARIABLE_SCOPE IN ('GLOBAL', 'SESSION') AND VARIABLE_NAME IN ({placeholders})",
            wanted)
        return {str(name): None if value is None else str(value) for name, value in rows}
    rows = await link.query(
        "SELECT LOWER(VARIABLE_NAME), VARIABLE_VALUE FROM performance_schema.global_variables "
        f"WHERE VARIABLE_NAME IN ({placeholders})", wanted)
    return {str(name): str(value) for name, value in rows}  # as load_facts writes them


def validate(facts: KnobFacts, raw: str, *, static_ok: bool = False) -> int | float | str:
    """The value to send for ``raw``, checked against the knob's type and range.

    Static knobs are refused unless ``static_ok`` (the caller will restart)."""
    name = facts.name
    if not facts.present:
        raise KnobError(f"{name} does not exist on this server ({facts.note})")
    if not facts.dynamic and not static_ok:
        raise KnobError(
            f"{name} is read-only at runtime (static): it needs a config change and a "
            "server restart; nothing was changed"
        )
    text = raw.strip()
    if not text:
        raise KnobError(f"{name}: give a value")
    vtype = facts.type.upper()
    if vtype in ("BOOLEAN",):
        low = text.lower()
        if low in _TRUE:
            return "ON"
        if low in _FALSE:
            return "OFF"
        raise KnobError(f"{name} is ON or OFF, not '{text}'")
    if vtype in ("ENUM", "SET") and facts.choices:
        choices = {c.upper(): c for c in facts.choices}
        parts = [p.strip() for p in text.split(",")] if vtype == "SET" else [text]
        bad = [p for p in parts if p.upper() not in choices and not p.isdigit()]
        if bad:
            raise KnobError(f"{name} takes one of {', '.join(facts.choices)}; not '{bad[0]}'")
        return ",".join(choices.get(p.upper(), p) for p in parts)
    if "INT" in vtype:
        m = _SIZE.match(text)
        if not m:
            raise KnobError(
                f"{name} takes a whole number (sizes may end in K, M or G), not '{text}'"
            )
        number = float(m.group(1)) * _MULT[m.group(2).lower()]
        if not math.isfinite(number):  # more digits than a float holds
            raise KnobError(f"{name}: {text} is out of range; use a value from "
                            f"{_fmt(facts.minimum)} to {_fmt(facts.maximum)}")
        if number != int(number):
            raise KnobError(f"{name} takes a whole number, not '{text}'")
        _check_range(facts, number, text)
        value = int(number)
        if facts.block_size and facts.block_size > 1 and value % facts.block_size:
            raise KnobError(
                f"{name} must be a multiple of {facts.block_size}; "
                f"try {value - value % facts.block_size}"
            )
        return value
    if vtype in ("DOUBLE", "FLOAT", "DECIMAL"):
        try:
            number = float(text)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):  # float() also takes "nan" and "inf"
            raise KnobError(f"{name} takes a number, not '{text}'")
        _check_range(facts, number, text)
        return number
    return text


def _check_range(facts: KnobFacts, number: float, text: str) -> None:
    lo, hi = facts.minimum, facts.maximum
    if (lo is not None and number < lo) or (hi is not None and number > hi):
        raise KnobError(
            f"{facts.name}: {text} is out of range; use a value from "
            f"{_fmt(lo)} to {_fmt(hi)}"
        )


def _fmt(x: float | None) -> str:
    if x is None:
        return "?"
    return str(int(x)) if x == int(x) else str(x)


def describe_version(version: ServerVersion) -> dict[str, Any]:
    return {"flavor": version.flavor, "version": version.short, "version_text": version.text}


def static_value(facts: KnobFacts, raw: str) -> str:
    """``raw`` checked for the drop-in file; raises KnobError with the reason."""
    value = str(validate(facts, raw, static_ok=True))
    if any(ch in value for ch in "\r\n\0#;"):
        # It goes into a config file: one line, no comment characters.
        raise KnobError(f"{facts.name}: a value for the config file must be one line "
                        "without '#' or ';'")
    return value
