"""LinkBench's social-graph workload for the built-in driver (issue 20): its three tables,
a load phase that builds the graph, and the request mix of its FBWorkload.

Facts from facebookarchive/linkbench (REFERENCE.md section 6): the tables and their keys
(linktable partitioned by key(id1) into 16), the operation mix, the Zipf shapes of the
access skews, the multiget sizes (geometric on 1..128, p = 0.382), the data sizes, two
link types, link writes in a transaction with counttable.

What is an approximation here, and why:

* **Out-degree.** LinkBench draws each node's links from ``config/Distribution.dat``, a
  measured Facebook distribution not reachable from this machine. Here a node's out-degree
  is a discrete power law, P(d) proportional to (d + 2)^-2.2 for d = 0..MAX_DEGREE: most
  nodes have a few links (44% none), a few have hundreds, a mean of 4.8 (``MEAN_DEGREE``);
  the measured distribution's own mean is not known here. It is
  a deterministic function of the id (``out_degree``), so a test can check the loaded
  graph with SQL.
* **Zipf.** Ranks are drawn from the continuous inverse of a Zipf CDF with the documented
  shape (exact enough for shapes below 1, O(1) per draw for any ``maxid1``), then spread
  over the ids by a fixed permutation (``Zipf.id_of``), so hot nodes are not all in the
  first partition.
* **Link targets.** Node ``id1``'s k-th link points to ``id1 + k`` (wrapping), as
  LinkBench's loader does with its default ``id2gen``.
"""

from __future__ import annotations

import bisect
import math
import random
import string
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from knobtop.metrics.board import LINKBENCH_SHORT
from knobtop.sqlquote import quote_ident

# Operations of the request phase and their share, percent (config/FBWorkload.properties;
# getlinklist_history's 0.3% is folded into getlinklist).
MIX: dict[str, float] = {
    "getlinklist": 50.71, "getnode": 12.93, "addlink": 8.99, "updatelink": 8.01,
    "updatenode": 7.37, "countlink": 4.89, "deletelink": 2.99, "addnode": 2.57,
    "deletenode": 1.01, "getlink": 0.53,
}
OPS: tuple[str, ...] = tuple(MIX)
# The seed posts' short names (un, gn, ul, gl: their per-operation p99 columns).
SHORT = LINKBENCH_SHORT
LINK_TYPES = (1, 2)
# Zipf shapes of the access skews.
LINK_READ_SKEW = 0.8
LINK_WRITE_SKEW = 0.741
NODE_READ_SKEW = 0.625
NODE_UPDATE_SKEW = 0.606
MULTIGET_P = 0.382
MULTIGET_MAX = 128
LINK_DATA = (32, 100)  # generated link data, bytes
NODE_DATA = (50, 220)
LIST_LIMIT = 10_000  # getlinklist's LIMIT, as LinkBench's default range limit
PARTITIONS = 16
MAX_DEGREE = 1000
DEGREE_EXPONENT = 2.2
BATCH = 500  # rows per INSERT in the load phase
SLOTS = 10_000  # the operation table's resolution: 0.01% of the mix
_ALPHABET = string.ascii_letters + string.digits  # data text: no quoting concerns

TABLES = ("linktable", "counttable", "nodetable")
READ_OPS = frozenset({"getlinklist", "getnode", "countlink", "getlink"})
# nodetable's comment once a load phase finished: a graph of this size is there
LOADED = "knobtop linkbench maxid1={maxid1}"


def _degree_cdf() -> list[float]:
    weights = [(d + 2) ** -DEGREE_EXPONENT for d in range(MAX_DEGREE + 1)]
    total = sum(weights)
    out, acc = [], 0.0
    for w in weights:
        acc += w / total
        out.append(acc)
    out[-1] = 1.0
    return out


DEGREE_CDF = _degree_cdf()
MEAN_DEGREE = sum(d * (DEGREE_CDF[d] - (DEGREE_CDF[d - 1] if d else 0.0))
                  for d in range(MAX_DEGREE + 1))


def _unit(x: int) -> float:
    """A fixed pseudo-random number in [0, 1) for an integer (a 64-bit mix of it)."""
    x = (x * 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 31
    x = (x * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 29
    return x / 2.0**64


def out_degree(id1: int, maxid1: int = 0) -> int:
    """How many links node ``id1`` gets in the load phase (its own fixed draw; in a graph
    of ``maxid1`` nodes at most one to every other node)."""
    d = bisect.bisect_left(DEGREE_CDF, _unit(id1))
    return min(d, maxid1 - 1) if maxid1 else d


def expected_links(maxid1: int) -> int:
    """The links the load phase writes for nodes 1..maxid1."""
    return sum(out_degree(i, maxid1) for i in range(1, maxid1 + 1))


def expected_rows(maxid1: int) -> tuple[int, int, int]:
    """Rows the load phase writes: nodes, links, link counts (one per node and link type
    it has links of)."""
    links = counts = 0
    for i in range(1, maxid1 + 1):
        d = out_degree(i, maxid1)
        links += d
        counts += min(d, len(LINK_TYPES))
    return maxid1, links, counts


class Zipf:
    """Ids 1..n with a Zipf-skewed popularity of shape ``s`` (0 < s < 1 here), the most
    popular spread over the id space by a fixed permutation."""

    def __init__(self, n: int, s: float) -> None:
        if n < 1 or not 0.0 < s < 1.0:
            raise ValueError(f"Zipf needs n >= 1 and 0 < s < 1, got n={n}, s={s}")
        self.n, self.s = n, s
        self._a = 1.0 - s
        self._inv = 1.0 / self._a
        self._top = (n + 1) ** self._a - 1.0
        step = max(1, int(n * 0.6180339887)) | 1
        while math.gcd(step, n) != 1:
            step += 2
        self._step = step

    def rank(self, rng: random.Random) -> int:
        """1 (the most popular) .. n."""
        x = (rng.random() * self._top + 1.0) ** (1.0 / self._a)
        return min(self.n, max(1, int(x)))

    def id_of(self, rank: int) -> int:
        return (rank - 1) * self._step % self.n + 1

    def draw(self, rng: random.Random) -> int:
        # rank() and id_of() inlined: this runs once or twice a request
        n = self.n
        rank = int((rng.random() * self._top + 1.0) ** self._inv)
        rank = n if rank > n else 1 if rank < 1 else rank
        return (rank - 1) * self._step % n + 1


def multiget_size(rng: random.Random) -> int:
    """Links asked for at once by getlink: geometric on 1..128."""
    u = 1.0 - rng.random()
    return min(MULTIGET_MAX, 1 + int(math.log(u) / math.log(1.0 - MULTIGET_P)))


def data(rng: random.Random, size: tuple[int, int]) -> str:
    return "".join(rng.choices(_ALPHABET, k=rng.randint(*size)))


def ddl(engine: str = "") -> list[str]:
    """CREATE TABLE statements of the three tables (LinkBench's MySQL DDL)."""
    tail = f" ENGINE={engine}" if engine else ""
    return [
        "CREATE TABLE linktable (id1 BIGINT UNSIGNED NOT NULL DEFAULT 0, "
        "id2 BIGINT UNSIGNED NOT NULL DEFAULT 0, link_type BIGINT UNSIGNED NOT NULL DEFAULT 0, "
        "visibility TINYINT NOT NULL DEFAULT 0, data VARCHAR(255) NOT NULL DEFAULT '', "
        "time BIGINT UNSIGNED NOT NULL DEFAULT 0, version INT UNSIGNED NOT NULL DEFAULT 0, "
        "PRIMARY KEY (link_type, id1, id2), "
        "KEY id1_type (id1, link_type, visibility, time, id2, version, data))"
        f"{tail} PARTITION BY KEY(id1) PARTITIONS {PARTITIONS}",
        "CREATE TABLE counttable (id BIGINT UNSIGNED NOT NULL DEFAULT 0, "
        "link_type BIGINT UNSIGNED NOT NULL DEFAULT 0, count INT UNSIGNED NOT NULL DEFAULT 0, "
        "time BIGINT UNSIGNED NOT NULL DEFAULT 0, version BIGINT UNSIGNED NOT NULL DEFAULT 0, "
        f"PRIMARY KEY (id, link_type)){tail}",
        "CREATE TABLE nodetable (id BIGINT UNSIGNED NOT NULL AUTO_INCREMENT, "
        "type INT NOT NULL, version BIGINT UNSIGNED NOT NULL, time INT UNSIGNED NOT NULL, "
        f"data MEDIUMTEXT NOT NULL, PRIMARY KEY (id)){tail}",
    ]


# -- the load phase -------------------------------------------------------------------------

Query = Callable[[str, Sequence[object]], Awaitable[object]]


@dataclass
class LoadProgress:
    """How far the load phase is: rows written so far (nodes, links, counts)."""

    nodes: int = 0
    links: int = 0
    counts: int = 0

    @property
    def rows(self) -> int:
        return self.nodes + self.links + self.counts


def link_type_of(k: int) -> int:
    return LINK_TYPES[k % len(LINK_TYPES)]


def node_rows(first: int, last: int, rng: random.Random, now: int) -> list[object]:
    """Arguments of nodetable rows first..last (id, type, version, time, data)."""
    args: list[object] = []
    for i in range(first, last + 1):
        args += [i, 2048, 1, now, data(rng, NODE_DATA)]
    return args


def link_rows(id1: int, maxid1: int, rng: random.Random, now: int
              ) -> tuple[list[object], dict[int, int]]:
    """Arguments of node ``id1``'s linktable rows, and its link count per link type."""
    args: list[object] = []
    counts: dict[int, int] = {}
    for k in range(1, out_degree(id1, maxid1) + 1):
        id2 = (id1 + k - 1) % maxid1 + 1
        kind = link_type_of(k)
        counts[kind] = counts.get(kind, 0) + 1
        args += [id1, id2, kind, 1, data(rng, LINK_DATA), now, 0]
    return args, counts


async def load_graph(query: Query, maxid1: int, rng: random.Random, now: int,
                     progress: Callable[[LoadProgress], None] | None = None,
                     first: int = 1, last: int | None = None) -> LoadProgress:
    """Write nodes ``first..last`` (default all of 1..maxid1) with their links and link
    counts, BATCH rows per INSERT; ``progress`` hears the totals after each statement."""
    last = maxid1 if last is None else last
    done = LoadProgress()
    node_sql = "INSERT INTO nodetable (id, type, version, time, data) VALUES "
    link_sql = ("INSERT INTO linktable (id1, id2, link_type, visibility, data, time, version)"
                " VALUES ")
    count_sql = "INSERT INTO counttable (id, link_type, count, time, version) VALUES "
    for start in range(first, last + 1, BATCH):
        end = min(last, start + BATCH - 1)
        await query(node_sql + ", ".join(["(%s, %s, %s, %s, %s)"] * (end - start + 1)),
                    node_rows(start, end, rng, now))
        done.nodes += end - start + 1
        if progress is not None:
            progress(done)
        links: list[object] = []
        counts: list[object] = []
        for id1 in range(start, end + 1):
            args, per_type = link_rows(id1, maxid1, rng, now)
            links += args
            for kind, n in sorted(per_type.items()):
                counts += [id1, kind, n, now, 0]
        for rows, sql, width in ((links, link_sql, 7), (counts, count_sql, 5)):
            for at in range(0, len(rows), BATCH * width):
                chunk = rows[at:at + BATCH * width]
                n = len(chunk) // width
                marks = "(" + ", ".join(["%s"] * width) + ")"
                await query(sql + ", ".join([marks] * n), chunk)
                if sql is link_sql:
                    done.links += n
                else:
                    done.counts += n
                if progress is not None:
                    progress(done)
    return done


# -- the request phase ----------------------------------------------------------------------

# Statements of each operation (text protocol; ? = a value). A link write and its count
# are one transaction, as LinkStoreMysql runs them.
SQL: dict[str, str] = {
    "getlinklist": "SELECT id1, id2, link_type, visibility, data, time, version FROM linktable "
                   "WHERE id1 = ? AND link_type = ? AND time >= 0 AND time <= ? AND "
                   f"visibility = 1 ORDER BY time DESC LIMIT {LIST_LIMIT}",
    "getnode": "SELECT id, type, version, time, data FROM nodetable WHERE id = ?",
    "countlink": "SELECT count FROM counttable WHERE id = ? AND link_type = ?",
    "getlink": "SELECT id1, id2, link_type, visibility, data, time, version FROM linktable "
               "WHERE id1 = ? AND link_type = ? AND id2 IN ({ids})",
    "addlink": "INSERT INTO linktable (id1, id2, link_type, visibility, data, time, version) "
               "VALUES (?, ?, ?, 1, ?, ?, 0) ON DUPLICATE KEY UPDATE visibility = 1, "
               "data = VALUES(data), time = VALUES(time), version = version + 1",
    "addcount": "INSERT INTO counttable (id, link_type, count, time, version) VALUES "
                "(?, ?, 1, ?, 0) ON DUPLICATE KEY UPDATE count = count + 1, time = "
                "VALUES(time), version = version + 1",
    "updatelink": "UPDATE linktable SET data = ?, time = ?, version = version + 1 WHERE "
                  "link_type = ? AND id1 = ? AND id2 = ?",
    "touchcount": "UPDATE counttable SET time = ?, version = version + 1 WHERE id = ? AND "
                  "link_type = ?",
    "deletelink": "UPDATE linktable SET visibility = 0, time = ?, version = version + 1 "
                  "WHERE link_type = ? AND id1 = ? AND id2 = ? AND visibility = 1",
    "dropcount": "UPDATE counttable SET count = IF(count > 0, count - 1, 0), time = ?, "
                 "version = version + 1 WHERE id = ? AND link_type = ?",
    "updatenode": "UPDATE nodetable SET version = version + 1, time = ?, data = ? WHERE id = ?",
    "addnode": "INSERT INTO nodetable (type, version, time, data) VALUES (2048, 1, ?, ?)",
    "deletenode": "DELETE FROM nodetable WHERE id = ?",
}


class Requests:
    """Chooses each request's operation and its arguments (one per client loop)."""

    def __init__(self, maxid1: int, rng: random.Random,
                 only: Sequence[str] = ()) -> None:
        """``only``: these operations alone, in their mix's proportions (a GetNode-only
        run compares with sysbench's point select)."""
        self.maxid1 = maxid1
        self.rng = rng
        unknown = [op for op in only if op not in MIX]
        if unknown:
            raise ValueError(f"no LinkBench operation {unknown[0]!r}: one of {', '.join(MIX)}")
        self._ops = [op for op in MIX if not only or op in only]
        self._cum: list[float] = []
        acc = 0.0
        for op in self._ops:
            acc += MIX[op]
            self._cum.append(acc)
        # One entry per 0.01% of the mix (its shares have two decimals: exact), so a
        # request's operation is one index, not a search.
        self._table = [self._ops[min(len(self._ops) - 1, bisect.bisect_right(
            self._cum, (i + 0.5) / SLOTS * self._cum[-1]))] for i in range(SLOTS)]
        self.link_read = Zipf(maxid1, LINK_READ_SKEW)
        self.link_write = Zipf(maxid1, LINK_WRITE_SKEW)
        self.node_read = Zipf(maxid1, NODE_READ_SKEW)
        self.node_update = Zipf(maxid1, NODE_UPDATE_SKEW)

    def op(self) -> str:
        return self._table[int(self.rng.random() * SLOTS)]

    def _link(self, zipf: Zipf) -> tuple[int, int, int]:
        """(id1, link type, id2) of an existing-or-new link of a skewed node."""
        rng = self.rng
        id1 = zipf.draw(rng)
        k = rng.randint(1, min(max(1, out_degree(id1, self.maxid1) + 1), self.maxid1 - 1))
        return id1, link_type_of(k), (id1 + k - 1) % self.maxid1 + 1

    def statements(self, op: str, now: int) -> list[tuple[str, tuple[object, ...]]]:
        """The statements of one ``op`` request, with their values, in order (BEGIN and
        COMMIT around the two-table writes)."""
        rng = self.rng
        if op == "getnode":  # the most frequent single-statement ones first
            return [("getnode", (self.node_read.draw(rng),))]
        if op == "getlinklist":
            id1 = self.link_read.draw(rng)
            return [("getlinklist", (id1, rng.choice(LINK_TYPES), now))]
        if op == "countlink":
            return [("countlink", (self.link_read.draw(rng), rng.choice(LINK_TYPES)))]
        if op == "getlink":
            id1, kind, _ = self._link(self.link_read)
            ids = tuple((id1 + k - 1) % self.maxid1 + 1 for k in range(1, multiget_size(rng) + 1))
            return [("getlink", (id1, kind, *ids))]
        if op in ("addlink", "updatelink", "deletelink"):
            id1, kind, id2 = self._link(self.link_write)
            if op == "addlink":
                pair = [("addlink", (id1, id2, kind, data(rng, LINK_DATA), now)),
                        ("addcount", (id1, kind, now))]
            elif op == "updatelink":
                pair = [("updatelink", (data(rng, LINK_DATA), now, kind, id1, id2)),
                        ("touchcount", (now, id1, kind))]
            else:
                pair = [("deletelink", (now, kind, id1, id2)), ("dropcount", (now, id1, kind))]
            return [("begin", ()), *pair, ("commit", ())]
        if op == "updatenode":
            return [("updatenode", (now, data(rng, NODE_DATA), self.node_update.draw(rng)))]
        if op == "addnode":
            return [("addnode", (now, data(rng, NODE_DATA)))]
        if op == "deletenode":
            return [("deletenode", (rng.randint(1, self.maxid1),))]
        raise ValueError(f"no LinkBench operation {op!r}")


def only_ops(options: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """The ``ops=getnode,countlink`` option of a LinkBench load (none: the whole mix)."""
    for key, value in options:
        if key == "ops":
            ops = tuple(v for v in value.split(",") if v)
            unknown = [op for op in ops if op not in MIX]
            if unknown or not ops:
                raise ValueError(f"ops={value}: give LinkBench operations, e.g. "
                                 f"ops=getnode ({', '.join(MIX)})")
            return ops
    return ()


def template(key: str, values: int) -> str:
    """The statement of ``key`` with ``?`` for each of its ``values`` (prepared once per
    connection and shape)."""
    text = SQL[key]
    if key == "getlink":
        text = text.replace("{ids}", ", ".join(["?"] * (values - 2)))
    return text


def sql_of(key: str, args: Sequence[object]) -> str:
    """One statement as text: ints as they are, strings in quotes (generated data is
    letters and digits only, so nothing needs escaping)."""
    if key == "begin":
        return "BEGIN"
    if key == "commit":
        return "COMMIT"
    template = SQL[key]
    if key == "getlink":
        template = template.replace("{ids}", ", ".join(["?"] * (len(args) - 2)))
    parts = template.split("?")
    if len(parts) != len(args) + 1:
        raise ValueError(f"{key}: {len(args)} values for {len(parts) - 1} places")
    out = [parts[0]]
    for value, part in zip(args, parts[1:], strict=True):
        if isinstance(value, int):
            out.append(str(value))
        else:
            text = str(value)
            if not text.isalnum():
                raise ValueError(f"{key}: a value that would need quoting: {text!r}")
            out.append(f"'{text}'")
        out.append(part)
    return "".join(out)


def drop_sql(database: str) -> list[str]:
    return [f"DROP TABLE IF EXISTS {quote_ident(database)}.{quote_ident(t)}" for t in TABLES]


__all__ = ["MIX", "OPS", "SHORT", "Requests", "Zipf", "ddl", "expected_links", "load_graph",
           "multiget_size", "out_degree", "sql_of"]
