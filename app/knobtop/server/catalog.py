"""Every server variable, read once, merged with the bundled flavor table; fuzzy search."""
# Just over 500 lines: the knob catalog, its fuzzy search and the datadir-bound knobs
# read the same per-flavor tables.

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from knobtop.server import flavors
from knobtop.server.flavors import FlavorFact
from knobtop.server.knobs import SEED_KNOBS, KnobFacts
from knobtop.server.link import ServerError, ServerLink, ServerVersion

# What each flavor's query returns, in column order (see _rows_to_facts).
MARIADB_SQL = (
    "SELECT VARIABLE_NAME, GLOBAL_VALUE, READ_ONLY, VARIABLE_TYPE, NUMERIC_MIN_VALUE, "
    "NUMERIC_MAX_VALUE, NUMERIC_BLOCK_SIZE, ENUM_VALUE_LIST, DEFAULT_VALUE, VARIABLE_SCOPE "
    "FROM information_schema.SYSTEM_VARIABLES WHERE VARIABLE_SCOPE IN ('GLOBAL', 'SESSION')"
)
# MySQL 8.4+: variables_metadata has type and scope (not static-ness).
MYSQL_METADATA_SQL = (
    "SELECT g.VARIABLE_NAME, g.VARIABLE_VALUE, m.MIN_VALUE, m.MAX_VALUE, m.DATA_TYPE, "
    "m.VARIABLE_SCOPE FROM performance_schema.global_variables g "
    "LEFT JOIN performance_schema.variables_metadata m ON m.VARIABLE_NAME = g.VARIABLE_NAME"
)
# MySQL 8.0+: variables_info has MIN_VALUE/MAX_VALUE (0/0 for non-numeric variables).
MYSQL_INFO_SQL = (
    "SELECT g.VARIABLE_NAME, g.VARIABLE_VALUE, i.MIN_VALUE, i.MAX_VALUE, NULL, NULL "
    "FROM performance_schema.global_variables g "
    "LEFT JOIN performance_schema.variables_info i ON i.VARIABLE_NAME = g.VARIABLE_NAME"
)
SHOW_SQL = "SHOW GLOBAL VARIABLES"

# MySQL 8.4 variables_metadata.DATA_TYPE -> the type words validate() understands.
_MYSQL_TYPES = {
    "integer": "INTEGER",
    "numeric": "DOUBLE",
    "string": "VARCHAR",
    "enumeration": "ENUM",
    "boolean": "BOOLEAN",
    "set": "SET",
}
# Knobs an existing datadir pins down: a restart with another value fails or
# loses data, so they are marked in the palette and refused before any restart.
DATADIR_BOUND = {
    "innodb_page_size": "fixed when the datadir was created: InnoDB will not start on data "
    "files of another page size, so a new page size needs a new datadir",
    "lower_case_table_names": "set when the datadir was created: MySQL 8.0+ will not start "
    "with another value, and MariaDB starts but can no longer find tables named in capitals",
    "innodb_data_file_path": "its first file is fixed when the datadir was created (InnoDB "
    "will not start if that file's name or size changes); only files after it can be "
    "added or grown",
}


def datadir_refusal(name: str, current: str | None, value: str) -> str | None:
    """Why ``name`` cannot go from ``current`` to ``value`` on an existing datadir, or
    None when it can (innodb_data_file_path: when its first file stays the same)."""
    why = DATADIR_BOUND.get(name.lower())
    if why is None or current is None or value == current:
        return None
    if name.lower() == "innodb_data_file_path" and _first_file(value) == _first_file(current):
        return None
    return f"{name} cannot change on an existing datadir: {why}. Nothing was changed"


def _first_file(path: str) -> tuple[str, ...]:
    """``ibdata1:12M:autoextend;...`` -> ("ibdata1", "12M"): the first file's name and size."""
    return tuple(part.strip().upper() for part in path.split(";", 1)[0].split(":")[:2])


_WORD = re.compile(r"[a-z0-9]+")
_SPLIT = re.compile(r"[\s_\-.]+")


@dataclass(frozen=True, slots=True)
class CatalogFacts(KnobFacts):
    """KnobFacts plus where they came from and the flavor table's verdict.

    ``mode`` is "dynamic", "static", "absent" or "unknown" (MySQL without a
    flavor-table row: nothing says whether SET GLOBAL works; ``dynamic`` is then
    False and an applier should try SET GLOBAL and word error 1238 as "static").
    ``ignored`` marks a variable the server still accepts but no longer uses.
    """

    mode: str = "unknown"
    ignored: bool = False
    scope: str = ""
    source: str = ""  # "server", "server+flavor", "flavor" or ""

    @property
    def status(self) -> str:
        return self.mode

    def to_json(self) -> dict[str, Any]:
        data = KnobFacts.to_json(self)
        data.update(mode=self.mode, ignored=self.ignored, scope=self.scope)
        return data


@dataclass(frozen=True, slots=True)
class _Entry:
    """A name prepared for search: lower-cased, split into words, its letters."""

    name: str
    lower: str
    words: tuple[str, ...]
    starts: frozenset[int]
    letters: frozenset[str]
    seed: bool


class Catalog:
    """All variables of one server, keyed case-insensitively, with flavor notes."""

    def __init__(
        self,
        version: ServerVersion,
        facts: Iterable[CatalogFacts],
        seed: Sequence[str] = SEED_KNOBS,
    ) -> None:
        self.version = version
        self._facts: dict[str, CatalogFacts] = {f.name.lower(): f for f in facts}
        self._seed = tuple(seed)
        # Built by the first search (_search_index): about 1 KB a name, which neither the
        # session's process nor the screen (it gets the catalog pickled) needs until then.
        self._index: list[_Entry] | None = None

    def _search_index(self) -> list[_Entry]:
        if self._index is None:
            seeds = {s.lower() for s in self._seed}
            self._index = [_entry(f.name, f.name.lower() in seeds)
                           for f in self._facts.values()]
        return self._index

    @property
    def names(self) -> list[str]:
        """Every name with facts: the server's variables and the flavor table's knobs."""
        return sorted(f.name for f in self._facts.values())

    def __len__(self) -> int:
        return len(self._facts)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.strip().lower() in self._facts

    def present(self) -> list[CatalogFacts]:
        """The variables the server has."""
        return [f for f in self._facts.values() if f.present]

    def get(self, name: str) -> CatalogFacts:
        """Facts for ``name``; an absent entry with a note if the server does not have it."""
        key = name.strip().lower()
        found = self._facts.get(key)
        if found is not None:
            return found
        fact = flavors.lookup(self.version.flavor, self.version.version, key)
        return _absent(flavors.canonical(key) or key, self.version, fact)

    def seed(self) -> list[CatalogFacts]:
        """The seed knobs, in SEED_KNOBS order (absent ones carry their note); an SQL
        node of an NDB cluster adds DiskPageBufferMemory at the end."""
        return [self.get(name) for name in self._seed]

    def search(self, query: str, limit: int = 50) -> list[CatalogFacts]:
        """Names matching ``query`` best first: substrings, word prefixes, subsequences."""
        return [facts for _score, facts in self.scored(query, limit)]

    def scored(self, query: str, limit: int = 50) -> list[tuple[float, CatalogFacts]]:
        """(score in 0..1, facts) pairs, best first: search() with the scores."""
        q = query.strip().lower()
        if not q:
            return []
        tokens = tuple(t for t in _SPLIT.split(q) if t)
        if not tokens:
            return []
        joined = "_".join(tokens)
        squashed = "".join(tokens)
        need = frozenset(squashed)
        hits: list[tuple[float, str, _Entry]] = []
        for entry in self._search_index():
            if not need <= entry.letters:
                continue
            score = _score(entry, joined, squashed, tokens)
            if score > 0:
                hits.append((score, entry.lower, entry))
        hits.sort(key=lambda h: (-h[0], h[1]))
        return [(min(1.0, s / 100.0), self._facts[key]) for s, key, _e in hits[: max(0, limit)]]


def _entry(name: str, seed: bool) -> _Entry:
    lower = name.lower()
    words = tuple(_WORD.findall(lower))
    starts = frozenset(m.start() for m in _WORD.finditer(lower))
    return _Entry(name, lower, words, starts, frozenset(lower), seed)


def _score(entry: _Entry, joined: str, squashed: str, tokens: tuple[str, ...]) -> float:
    """Higher is better; 0 means no match.  Bands: exact 100, substring ~80,
    every token a substring ~60, word-prefix abbreviation ~45, subsequence ~20.
    Within a band, shorter names and the seed knobs come first."""
    name = entry.lower
    tail = -0.1 * len(name) + (3.0 if entry.seed else 0.0)
    if name == joined:
        return 100.0
    at = name.find(joined)
    if at >= 0:
        bonus = 8.0 if at in entry.starts else 0.0
        bonus += 4.0 if at == 0 else 0.0
        end = at + len(joined)
        bonus += 2.0 if end == len(name) or name[end] == "_" else 0.0
        return 75.0 + bonus + tail
    if len(tokens) > 1:
        places = [name.find(t) for t in tokens]
        if all(p >= 0 for p in places):
            bonus = sum(2.0 for p in places if p in entry.starts)
            bonus += 3.0 if places == sorted(places) else 0.0
            return 55.0 + bonus + tail
    words_used = _abbreviation(entry.words, squashed)
    if words_used:
        return 45.0 - 1.5 * words_used + tail
    gaps = _subsequence(name, squashed)
    if gaps >= 0:
        return max(1.0, 25.0 - 1.0 * gaps + tail)
    return 0.0


def _abbreviation(words: tuple[str, ...], query: str) -> int:
    """Fewest words whose prefixes, in order, spell ``query`` ("bpsize" ->
    buffer + pool + size = 3); 0 if they cannot."""
    n = len(query)
    best: dict[int, int] = {0: 0}  # query position -> fewest words used to get there
    for word in words:
        step = dict(best)
        for pos, used in best.items():
            k = 0
            while pos + k < n and k < len(word) and query[pos + k] == word[k]:
                k += 1
                if step.get(pos + k, n + 1) > used + 1:
                    step[pos + k] = used + 1
        best = step
    return best.get(n, 0)


def _subsequence(name: str, query: str) -> int:
    """How many gaps ``query`` needs to appear in order in ``name``; -1 if it does not."""
    pos = -1
    gaps = 0
    for ch in query:
        nxt = name.find(ch, pos + 1)
        if nxt < 0:
            return -1
        if nxt != pos + 1 and pos >= 0:
            gaps += 1
        pos = nxt
    return gaps


def match_offsets(name: str, query: str) -> list[int]:
    """Which characters of ``name`` a query matched, for highlighting (may be empty).

    Whole tokens are marked where they occur; otherwise letters are placed in order,
    preferring to continue a run, then a word start, as long as the rest still fits.
    """
    lower = name.lower()
    tokens = [t for t in _SPLIT.split(query.strip().lower()) if t]
    if not tokens:
        return []
    joined = "_".join(tokens)
    at = lower.find(joined)
    if at >= 0:
        return list(range(at, at + len(joined)))
    places = [lower.find(t) for t in tokens]
    if len(tokens) > 1 and all(p >= 0 for p in places):
        return sorted({i for t, p in zip(tokens, places, strict=True)
                       for i in range(p, p + len(t))})
    squashed = "".join(tokens)
    aligned = _abbreviation_offsets(lower, squashed)
    if aligned:
        return aligned
    if _subsequence(lower, squashed) < 0:
        return []
    out: list[int] = []
    pos = 0
    for i, ch in enumerate(squashed):
        rest = squashed[i + 1:]
        pick = lower.find(ch, pos)
        if out and lower.startswith(ch, out[-1] + 1):
            cont = out[-1] + 1
            if _subsequence(lower[cont + 1:], rest) >= 0:
                pick = cont
        out.append(pick)
        pos = pick + 1
    return out


def _abbreviation_offsets(lower: str, query: str) -> list[int]:
    """Offsets of the word-prefix spelling of ``query`` with the fewest words; [] if none."""
    n = len(query)
    best: dict[int, list[int]] = {0: []}
    words_used: dict[int, int] = {0: 0}
    for m in _WORD.finditer(lower):
        word, start = m.group(), m.start()
        step, used_step = dict(best), dict(words_used)
        for pos, offsets in best.items():
            k = 0
            while pos + k < n and k < len(word) and query[pos + k] == word[k]:
                k += 1
                if used_step.get(pos + k, n + 1) > words_used[pos] + 1:
                    used_step[pos + k] = words_used[pos] + 1
                    step[pos + k] = offsets + list(range(start, start + k))
        best, words_used = step, used_step
    return best.get(n, []) if n else []


def _num(raw: object) -> float | None:
    if raw is None or raw == "":
        return None
    try:
        return float(str(raw))
    except ValueError:
        return None


def _text(raw: object) -> str | None:
    if raw is None:
        return None
    if isinstance(raw, bytes):
        return raw.decode("utf-8", "replace")
    return str(raw)


def _absent(name: str, version: ServerVersion, fact: FlavorFact | None) -> CatalogFacts:
    where = f"{version.flavor} {version.short}"
    if fact is None:
        note = f"not a variable on this {where}"
    elif fact.mode == "absent":
        note = fact.note
    else:
        expected = f"expected on {where} per the flavor table"
        note = f"not a variable on this server ({expected}{'; ' + fact.note if fact.note else ''})"
    return CatalogFacts(name=name, present=False, note=note, mode="absent",
                        source="flavor" if fact is not None else "")


def _guess_type(value: str | None, lo: float | None, hi: float | None) -> str:
    """A type word for a MySQL variable without metadata (validate() reads it)."""
    if value is None:
        return ""
    if value.upper() in ("ON", "OFF"):
        return "BOOLEAN"
    if (lo is not None or hi is not None) and re.fullmatch(r"-?\d+", value):
        return "INTEGER"
    if lo is not None or hi is not None:
        return "DOUBLE"
    return ""


def _merge(
    version: ServerVersion,
    name: str,
    value: str | None,
    *,
    dynamic: bool | None,
    vtype: str = "",
    minimum: float | None = None,
    maximum: float | None = None,
    block: int | None = None,
    choices: tuple[str, ...] = (),
    default: str | None = None,
    scope: str = "",
) -> CatalogFacts:
    """One present variable: the server's facts win where it says; the flavor table
    fills the gaps and adds its note."""
    fact = flavors.lookup(version.flavor, version.version, name)
    if fact is not None and fact.mode == "absent":
        fact = None  # the server has it after all: the table's row is not for this build
    mode: str
    if dynamic is None:
        if fact is not None and fact.mode in ("dynamic", "static"):
            dynamic = fact.mode == "dynamic"
            mode = fact.mode
        else:
            mode = "unknown"
    else:
        mode = "dynamic" if dynamic else "static"
    if fact is not None:
        vtype = vtype or fact.type
        if minimum is None and maximum is None:
            minimum, maximum = fact.minimum, fact.maximum
        choices = choices or fact.choices
        default = default if default is not None else fact.default
    if not vtype:
        vtype = _guess_type(value, minimum, maximum)
    return CatalogFacts(
        name=name,
        present=True,
        value=value,
        dynamic=bool(dynamic),
        type=vtype,
        minimum=minimum,
        maximum=maximum,
        block_size=block,
        choices=choices,
        default=default,
        note=fact.note if fact is not None else "",
        mode=mode,
        ignored=fact is not None and fact.ignored,
        scope=scope,
        source="server+flavor" if fact is not None else "server",
    )


def facts_from_rows(
    version: ServerVersion, kind: str, rows: Iterable[Sequence[Any]]
) -> list[CatalogFacts]:
    """Turn one query's rows into facts.  ``kind``: "mariadb" (MARIADB_SQL), "mysql"
    (MYSQL_METADATA_SQL or MYSQL_INFO_SQL) or "show" (SHOW_SQL)."""
    out: list[CatalogFacts] = []
    for row in rows:
        name = (_text(row[0]) or "").lower()
        if not name:
            continue
        value = _text(row[1])
        if kind == "mariadb":
            _n, _v, ro, vtype, lo, hi, block, enums, default, scope = row
            block_num = _num(block)
            enum_text = _text(enums)
            out.append(_merge(
                version, name, value,
                dynamic=(_text(ro) or "").upper() != "YES",
                vtype=_text(vtype) or "",
                minimum=_num(lo),
                maximum=_num(hi),
                block=int(block_num) if block_num else None,
                choices=tuple(enum_text.split(",")) if enum_text else (),
                default=_text(default),
                scope=_text(scope) or "",
            ))
        elif kind == "mysql":
            _n, _v, lo, hi, dtype, scope = row
            lo_num, hi_num = _num(lo), _num(hi)
            if not lo_num and not hi_num:  # variables_info says 0/0 for non-numeric ones
                lo_num = hi_num = None
            out.append(_merge(
                version, name, value,
                dynamic=None,
                vtype=_MYSQL_TYPES.get((_text(dtype) or "").lower(), ""),
                minimum=lo_num,
                maximum=hi_num,
                scope=_text(scope) or "",
            ))
        else:
            out.append(_merge(version, name, value, dynamic=None))
    return out


def build_catalog(
    version: ServerVersion, kind: str, rows: Iterable[Sequence[Any]]
) -> Catalog:
    """A catalog from one query's rows plus the flavor table's knobs the server lacks."""
    facts = {f.name: f for f in facts_from_rows(version, kind, rows)}
    for knob in flavors.knobs(version.flavor):
        if knob.lower() not in facts:
            fact = flavors.lookup(version.flavor, version.version, knob)
            if fact is not None:
                facts[knob.lower()] = _absent(knob, version, fact)
    seed: tuple[str, ...] = SEED_KNOBS
    ndb = facts.get("ndb_version_string")
    if ndb is not None and ndb.value and _add_ndb(facts, ndb.value):
        seed = (*SEED_KNOBS, "DiskPageBufferMemory")
    return Catalog(version, facts.values(), seed)


def _add_ndb(facts: dict[str, CatalogFacts], ndb_version: str) -> bool:
    """An SQL node of an NDB cluster: its data nodes' DiskPageBufferMemory (config.ini)."""
    m = re.search(r"(\d+)\.(\d+)\.(\d+)", ndb_version)
    if not m:
        return False
    version = (int(m.group(1)), int(m.group(2)), int(m.group(3)))
    fact = flavors.lookup(flavors.NDB, version, "DiskPageBufferMemory")
    if fact is None:
        return False
    facts["diskpagebuffermemory"] = CatalogFacts(
        name=fact.knob, present=True, value=None, dynamic=False, type=fact.type,
        minimum=fact.minimum, maximum=fact.maximum, default=fact.default, note=fact.note,
        mode=fact.mode, scope="NDB config.ini", source="flavor",
    )
    return True


async def load_catalog(link: ServerLink) -> Catalog:
    """Read every server variable in one query and merge it with the flavor table.

    MariaDB 10.1+: information_schema.SYSTEM_VARIABLES (type, range, read-only);
    MySQL 8.4+: performance_schema.variables_metadata, 8.0+: variables_info
    (ranges; static-ness from the flavor table or "unknown"); older: SHOW GLOBAL
    VARIABLES + flavor table.  A refused query falls back to the next simpler one.
    """
    version = link.version
    if version is None:
        version = await link.connect()
    attempts: list[tuple[str, str]] = []
    if version.flavor == "mariadb" and version.at_least(10, 1, 1):
        attempts.append(("mariadb", MARIADB_SQL))
    elif version.flavor == "mysql" and version.at_least(8, 0, 0):
        if version.at_least(8, 4, 0):
            attempts.append(("mysql", MYSQL_METADATA_SQL))
        attempts.append(("mysql", MYSQL_INFO_SQL))
    attempts.append(("show", SHOW_SQL))
    last: ServerError | None = None
    for kind, sql in attempts:
        try:
            rows = await link.query(sql)
        except ServerError as exc:
            if exc.code in (2002, 2003, 2006, 2013):
                raise
            last = exc
            continue
        if rows:
            return build_catalog(version, kind, rows)
    raise last or ServerError("the server listed no variables")
