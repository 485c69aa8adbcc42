"""Experiment recipes: the bundled files, the schedule, every refusal (file, key, fix),
version constraints, and checks against a real MariaDB catalog (and built NDB/MySQL ones)."""

from __future__ import annotations

import collections
import itertools
import random
import re
import statistics
from pathlib import Path

import pytest

from harness import paths as repo_paths
from knobtop.hosts.local import LocalHost
from knobtop.load.base import LoadSpec
from knobtop.load.sysbench import Sysbench
from knobtop.recipes.checks import check_for_server, offline_warnings, static_knobs
from knobtop.recipes.model import (
    Arm,
    Constraint,
    Recipe,
    RecipeError,
    Steady,
    Waits,
    parse_bytes,
    server_flavors,
)
from knobtop.recipes.reader import BUNDLED_DIR, bundled_recipes, load_recipe
from knobtop.recipes.schedule import williams_rows
from knobtop.server.catalog import Catalog, build_catalog
from knobtop.server.link import ServerVersion

REPO = repo_paths.REPO
BUNDLED = {
    "aa-noise",
    "buffer-pool-climb",
    "buffer-pool-timeline",  # issue 18: a timeline recipe
    "soak-write-only",  # issue 38: a soak (a kind of its own, recipes/kinds/soak.py)
    "buffer-pool-instances",  # issue 18: the seed recipes
    "compression",
    "compression-read-only",  # issue 39: the seed's table has a read-only row too
    "innodb-vs-myrocks",
    "linkbench-engines",  # issue 20: LinkBench on the built-in driver
    "perfschema-overhead",
    "sweep-read-only",
    "sweep-read-write",
    "doublewrite",
    "flush-threads-mariadb",
    "flush-threads-mariadb-10.1",
    "flush-threads-mysql",
    "ndb-disk-page-buffer",
    "purge-threads",
    "sort-buffer",
    "thread-concurrency",
    "trx-commit-servers",  # issue 19: two servers as the arms
    "trx-commit",  # issue 39 item 8: the conditions a knob needs (sync_ms_min)
    "scalability-pk-point",  # issue 39 item 4: seed 003, one recipe per query type
    "scalability-pk-range",
    "scalability-key-range",
    "scalability-scan",
}

BASE = """\
name = "t"
description = "a test recipe"
[load]
workload = "oltp_read_only"
threads = [2, 4]
duration = 5
warmup = 0
tables = 1
table_size = 100
[run]
replicates = 2
[[arm]]
name = "A"
knobs = { sort_buffer_size = "256K" }
[[arm]]
name = "B"
knobs = { sort_buffer_size = "2M" }
"""


def write(tmp_path: Path, body: str, name: str = "r") -> Path:
    path = tmp_path / f"{name}.toml"
    path.write_text(body)
    return path


def edited(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


def refused(path: Path | str, key: str | None) -> RecipeError:
    with pytest.raises(RecipeError) as info:
        load_recipe(path)
    return checked(info.value, str(path), key)


def checked(err: RecipeError, file: str, key: str | None) -> RecipeError:
    message = str(err)
    assert err.file == file
    assert message.startswith(f"{file}: ")
    assert err.key == key
    if key is not None:
        assert message.startswith(f"{file}: {key}: ")
    assert "\n  fix: " in message
    assert err.fix and message.endswith(err.fix)
    assert isinstance(err, ValueError)
    return err


# --------------------------------------------------------------------------- bundled


def test_the_bundled_recipes_are_all_there() -> None:
    paths = bundled_recipes()
    assert BUNDLED_DIR == REPO / "experiments"
    assert {p.stem for p in paths} == BUNDLED
    assert paths == sorted(paths)


@pytest.mark.parametrize("path", bundled_recipes(), ids=lambda p: p.stem)
def test_every_bundled_recipe_loads(path: Path) -> None:
    recipe = load_recipe(path)
    assert recipe.path == path
    assert recipe.name == path.stem
    assert len(recipe.description) > 80  # says what it shows
    if recipe.kind == "timeline":  # issue 18: one load, actions and checkpoints
        assert recipe.timeline is not None
        assert recipe.timeline.actions and recipe.timeline.checkpoints
    elif recipe.kind == "soak":  # issue 38: one arm held, checkpoints, no actions
        assert recipe.timeline is not None and len(recipe.arms) == 1
        assert recipe.timeline.checkpoints and not recipe.timeline.actions
    else:
        assert len(recipe.arms) >= 2
    assert all(list(arm.knobs) == recipe.knobs for arm in recipe.arms)
    if recipe.name != "aa-noise":  # issue 17: the A/A recipe's arms are the same on purpose
        # (issue 18: arms may differ in their tables or load instead of their knobs;
        # issue 19: or in the server they run on)
        assert len({(tuple(arm.knobs.values()), repr(arm.load), arm.target)
                    for arm in recipe.arms}) == len(recipe.arms)
    # Sized for a 2-core machine: minutes, not hours (lower bound without waits/restarts).
    assert 60 < recipe.planned_seconds < 30 * 60
    if recipe.applies:
        assert recipe.why, "a recipe that refuses servers says why"
    text = path.read_text()
    assert text.lstrip().startswith("#")  # a comment says what it is and how long it takes
    for threads in recipe.threads:
        recipe.load_spec(threads, recipe.warmup + recipe.load.duration).check()


def test_bundled_recipe_by_name_and_unknown_name(tmp_path: Path) -> None:
    assert load_recipe("doublewrite").path == BUNDLED_DIR / "doublewrite.toml"
    err = refused("no-such-recipe", None)
    assert "not found" in err.problem
    assert "doublewrite" in err.fix and "sort-buffer" in err.fix
    missing = tmp_path / "missing.toml"
    err = refused(missing, None)
    assert "not found" in err.problem
    err = refused(tmp_path, None)
    assert "directory" in err.problem


# What a seed recipe's quick form (2 replicates of 2 arms x 2 levels) says of itself.
QUICK_FORM = ("replicates = 2: with 2 runs per arm and a family of 2 comparisons (Holm) the "
              "best a cell can read is p = 0.667 (above 0.05): no cell can get a verdict "
              "(higher or lower); give at least 5 replicates, or fewer arms or thread counts")


def test_bundled_recipe_specifics() -> None:
    doublewrite = load_recipe("doublewrite")
    # issue 18: the seed's conditions, 64+ threads over 8 instances, history back to 0
    assert doublewrite.threads == (64, 128) and doublewrite.load.instances == 8
    assert doublewrite.waits.history_below == 0 and not doublewrite.load.prepared
    assert doublewrite.load.workload == "oltp_read_write"
    assert [a.knobs for a in doublewrite.arms] == [
        {"innodb_doublewrite": "ON"},
        {"innodb_doublewrite": "OFF"},
    ]
    concurrency = load_recipe("thread-concurrency")
    assert concurrency.applies == {"mysql": ">=5.5", "mariadb": "<10.6"}
    assert "10.5.5" in concurrency.why and "10.6" in concurrency.why
    assert "10.5.5" in concurrency.description
    assert [a.knobs["innodb_thread_concurrency"] for a in concurrency.arms] == ["0", "32"]
    climb = load_recipe("buffer-pool-climb")
    sizes = [parse_bytes(a.knobs["innodb_buffer_pool_size"]) for a in climb.arms]
    assert sizes == sorted(sizes) and sizes[0] == 32 << 20 and sizes[-1] == 256 << 20
    # The data set (~240 bytes a row with indexes, measured on MariaDB 10.11) is bigger
    # than the smallest pool and fits in the largest.
    data = climb.load.tables * climb.load.table_size * 240
    assert sizes[0] * 2 < data < sizes[-1]
    assert climb.replicates == 1 and "one replicate" in climb.description
    ndb = load_recipe("ndb-disk-page-buffer")
    assert ndb.applies == {"ndb": ">=7.0"}
    assert [a.knobs["DiskPageBufferMemory"] for a in ndb.arms] == ["64M", "256M", "1G"]
    purge = load_recipe("purge-threads")
    assert purge.waits.history_below == 0  # issue 18: the seed's gate
    # issue 39: the seed's purge table came from its read-write sweep (was write-only)
    assert purge.load.workload == "oltp_read_write" and purge.load.instances == 8
    assert "history" in purge.description
    # issue 39 item 3: seed 002's curve, 32K..1M in 32 KB steps, 12 ORDER BY ... LIMIT
    sort = load_recipe("sort-buffer")
    assert sort.kind == "curve" and sort.curve is not None
    assert sort.curve.knob == "sort_buffer_size" and len(sort.curve.values) == 32
    assert sort.curve.values[0] == 32 * 1024 and sort.curve.values[-1] == 1024 * 1024
    assert {b - a for a, b in itertools.pairwise(sort.curve.values)} == {32 * 1024}
    assert sort.curve.probe == "order_by_offset" and sort.curve.probe_params["repeats"] == 12
    assert sort.curve.counters == ("Sort_merge_passes",)
    assert [a.name for a in sort.arms][:3] == ["32K", "64K", "96K"]
    mtflush = load_recipe("flush-threads-mariadb-10.1")
    assert mtflush.arms[1].knobs == {"innodb_use_mtflush": "ON", "innodb_mtflush_threads": "4"}
    # issue 39: seed 004 ran LinkBench; MariaDB 10.5+'s stand-ins for mtflush threads
    flush = load_recipe("flush-threads-mariadb")
    assert flush.load.workload == "linkbench" and flush.applies == {"mariadb": ">=10.5"}
    assert flush.knobs == ["innodb_write_io_threads", "innodb_io_capacity",
                           "innodb_lru_scan_depth", "innodb_max_dirty_pages_pct"]
    assert "innodb_mtflush_threads" in flush.description


# Issue 39: the seed's sysbench ran with --oltp-skip-trx (no BEGIN/COMMIT) and waited for
# the history list only between its read-write runs.
SEED_READ_WRITE = ("sweep-read-write", "doublewrite", "thread-concurrency", "purge-threads",
                   "compression")
SEED_READ_ONLY = ("sweep-read-only", "buffer-pool-instances", "compression-read-only")


@pytest.mark.parametrize("name", SEED_READ_WRITE + SEED_READ_ONLY)
def test_seed_sweeps_skip_the_transaction_and_gate_purge_on_read_write_only(name: str) -> None:
    recipe = load_recipe(name)
    assert ("skip_trx", "on") in recipe.load.options
    if name in SEED_READ_WRITE:
        assert recipe.load.workload == "oltp_read_write" and recipe.waits.history_below == 0
    else:
        assert recipe.load.workload == "oltp_read_only" and recipe.waits.history_below is None
    driver = Sysbench(LocalHost(), mysql_host="127.0.0.1", mysql_port=3306, password="pw")
    for arm in recipe.arms:
        for threads in recipe.threads:
            spec = recipe.load_spec(threads, recipe.load.duration, arm)
            argv = driver.argv(spec, "run", "--threads=2", "--time=1")
            assert argv[:2] == ["sysbench", recipe.load.workload]
            assert "--skip_trx=on" in argv[2:2 + len(spec.options)]


def test_the_readme_example_is_a_valid_recipe(tmp_path: Path) -> None:
    readme = (BUNDLED_DIR / "README.md").read_text()
    blocks = re.findall(r"```toml\n(.*?)```", readme, re.S)
    assert len(blocks) == 1
    recipe = load_recipe(write(tmp_path, blocks[0], "example"))
    assert recipe.name == "doublewrite-demo"
    assert recipe.applies == {"mariadb": ">=10.1", "mysql": ">=5.5, <8.0.30", "ndb": "*"}
    assert recipe.arms[1].knobs == {"innodb_doublewrite": "OFF"}
    assert recipe.waits == Waits(
        history_below=10000,
        dirty_at_lwm=False,
        dirty_pct_below=10.0,
        checkpoint_age_below=64 << 20,
        plateau=True,
        timeout=120.0,
    )
    # issue 17: the example shows the default plateau rule (the trend against the noise;
    # it used cv_max = 0.08), calibration and adaptive rounds
    assert recipe.steady == Steady(window=20) and recipe.steady.judge == "noise"
    assert (recipe.calibrate, recipe.until_ci, recipe.max_replicates) == (8, 0.05, 10)
    for name in sorted(BUNDLED):  # every bundled file is in the README's table
        assert f"`{name}.toml`" in readme


# --------------------------------------------------------------------------- the model


def test_minimal_recipe_defaults(tmp_path: Path) -> None:
    body = edited("[run]\nreplicates = 2\n", "").replace("warmup = 0\n", "")
    body = body.replace("tables = 1\ntable_size = 100\n", "")
    recipe = load_recipe(write(tmp_path, body))
    assert recipe.warmup == 0
    assert (recipe.load.tables, recipe.load.table_size) == (LoadSpec().tables,
                                                            LoadSpec().table_size)
    assert (recipe.load.rate, recipe.load.rand_type, recipe.load.percentile) == (0, "uniform", 95)
    assert recipe.waits == Waits() and not recipe.waits.active
    assert recipe.waits.timeout == 300.0
    assert recipe.steady == Steady(window=30, cv_max=0.05, slope_max=0.002)
    # The default order changed with issue 17 (was "interleaved"); levels as written.
    assert (recipe.replicates, recipe.order, recipe.seed, recipe.pause) == (
        3,
        "counterbalanced",
        1,
        0.0,
    )
    assert recipe.level_order == "ascending"
    assert recipe.applies == {} and recipe.why == ""
    assert recipe.baseline.name == "A"


def test_values_and_names_are_normalised(tmp_path: Path) -> None:
    body = edited(
        'knobs = { sort_buffer_size = "256K" }',
        "knobs = { Sort_Buffer_Size = 262144, innodb_adaptive_flushing = true, "
        "innodb_max_dirty_pages_pct = 75.5 }",
    ).replace(
        'knobs = { sort_buffer_size = "2M" }',
        'knobs = { sort_buffer_size = "2M", innodb_adaptive_flushing = false, '
        "innodb_max_dirty_pages_pct = 90 }",
    )
    recipe = load_recipe(write(tmp_path, body))
    assert recipe.arms[0].knobs == {
        "sort_buffer_size": "262144",
        "innodb_adaptive_flushing": "ON",
        "innodb_max_dirty_pages_pct": "75.5",
    }
    assert recipe.arms[1].knobs["innodb_adaptive_flushing"] == "OFF"
    assert recipe.arms[1].knobs["innodb_max_dirty_pages_pct"] == "90"
    assert recipe.knobs == [
        "sort_buffer_size",
        "innodb_adaptive_flushing",
        "innodb_max_dirty_pages_pct",
    ]
    assert hash(recipe.arms[0]) != hash(recipe.arms[1])  # arms (and steps) are hashable
    ndb = edited('knobs = { sort_buffer_size = "256K" }',
                 "knobs = { diskpagebuffermemory = ' 64M ' }").replace(
        'knobs = { sort_buffer_size = "2M" }', 'knobs = { DiskPageBufferMemory = "1G" }')
    recipe = load_recipe(write(tmp_path, ndb))
    assert [arm.knobs for arm in recipe.arms] == [
        {"DiskPageBufferMemory": "64M"}, {"DiskPageBufferMemory": "1G"}]


def test_single_thread_count_and_custom_lua(tmp_path: Path) -> None:
    body = edited("threads = [2, 4]", "threads = 8").replace(
        'workload = "oltp_read_only"', 'workload = "/opt/bench/my_load.lua"'
    )
    recipe = load_recipe(write(tmp_path, body))
    assert recipe.threads == (8,)
    spec = recipe.load_spec(8, 30)
    spec.check()
    assert spec.custom and spec.workload == "/opt/bench/my_load.lua"


def test_load_spec_carries_the_recipe(tmp_path: Path) -> None:
    body = edited(
        "table_size = 100\n", 'table_size = 100\nrate = 50\nrand_type = "pareto"\npercentile = 99\n'
    )
    recipe = load_recipe(write(tmp_path, body))
    spec = recipe.load_spec(4, 17)
    spec.check()
    assert spec == LoadSpec(
        workload="oltp_read_only",
        threads=4,
        tables=1,
        table_size=100,
        duration=17,
        rate=50,
        rand_type="pareto",
        percentile=99,
    )


def test_tiny_overrides_with_replace(tmp_path: Path) -> None:
    recipe = load_recipe("doublewrite").changed(
        threads=(1,), duration=1, warmup=0, replicates=1, pause=0.0
    )
    steps = recipe.schedule()
    assert [(s.replicate, s.arm.name, s.threads) for s in steps] == [(1, "ON", 1), (1, "OFF", 1)]
    assert recipe.load_spec(1, recipe.load.duration).duration == 1
    assert recipe.planned_seconds == 2.0


# --------------------------------------------------------------------------- schedule


def three_arms(tmp_path: Path, order: str, seed: int = 1, replicates: int = 4) -> Recipe:
    body = edited("replicates = 2", f'replicates = {replicates}\norder = "{order}"\nseed = {seed}')
    body += '[[arm]]\nname = "C"\nknobs = { sort_buffer_size = "8M" }\n'
    return load_recipe(write(tmp_path, body, f"{order}{seed}"))


def test_interleaved_schedule_is_abab_with_the_thread_sweep_inside(tmp_path: Path) -> None:
    # "interleaved" is no longer the default (issue 17: counterbalanced is); asked for, it
    # is still A B, A B.
    recipe = load_recipe(write(tmp_path, edited("replicates = 2",
                                                 'replicates = 2\norder = "interleaved"')))
    steps = recipe.schedule()
    assert [(s.replicate, s.arm.name, s.threads) for s in steps] == [
        (1, "A", 2),
        (1, "A", 4),
        (1, "B", 2),
        (1, "B", 4),
        (2, "A", 2),
        (2, "A", 4),
        (2, "B", 2),
        (2, "B", 4),
    ]
    assert [s.index for s in steps] == list(range(8))
    assert steps[0].arm is recipe.arms[0]
    assert steps[5].label == "r2 A t4"
    # Arms are the outer loop inside a round: one knob change per arm visit.
    changes = sum(1 for a, b in itertools.pairwise(steps) if a.arm != b.arm)
    assert changes == 3


def test_interleaved_three_arms(tmp_path: Path) -> None:
    recipe = three_arms(tmp_path, "interleaved", replicates=2)
    visits = [s.arm.name for s in recipe.schedule() if s.threads == 2]
    assert visits == ["A", "B", "C", "A", "B", "C"]


def test_the_default_order_is_abba_so_a_linear_drift_favours_no_arm(tmp_path: Path) -> None:
    recipe = load_recipe(write(tmp_path, edited("replicates = 2", "replicates = 8")))
    assert recipe.order == "counterbalanced"
    steps = recipe.schedule()
    rounds = [[s.arm.name for s in steps if s.replicate == r][::2] for r in range(1, 9)]
    assert rounds == [["A", "B"], ["B", "A"], ["B", "A"], ["A", "B"]] * 2
    # A drift that grows by one unit per step adds the same to both arms' mean.
    mean_position = {arm: statistics.fmean(s.index for s in steps if s.arm.name == arm)
                     for arm in ("A", "B")}
    assert mean_position["A"] == mean_position["B"]
    # Arms stay the outer loop, and the same arm across a round boundary (B | B) is one
    # visit: 8 changes inside the rounds and 3 between them (A B, A B ... would make 15).
    changes = sum(1 for a, b in itertools.pairwise(steps) if a.arm != b.arm)
    assert changes == 11


@pytest.mark.parametrize("arms", [3, 4, 5])
def test_williams_rows_balance_position_and_the_arm_before(arms: int) -> None:
    rows = williams_rows(arms)
    assert len(rows) == (arms if arms % 2 == 0 else 2 * arms)
    for row in rows:
        assert sorted(row) == list(range(arms))
    for position in range(arms):  # every arm equally often in every position
        assert len({sum(row[position] == a for row in rows) for a in range(arms)}) == 1
    follows = collections.Counter(pair for row in rows for pair in itertools.pairwise(row))
    assert len(follows) == arms * (arms - 1)  # every ordered pair ...
    assert len(set(follows.values())) == 1  # ... equally often


def test_three_arms_run_in_a_williams_square_by_default(tmp_path: Path) -> None:
    recipe = three_arms(tmp_path, "counterbalanced", replicates=6)
    visits = [[s.arm.name for s in recipe.schedule() if s.replicate == r][::2]
              for r in range(1, 7)]
    names = ["A", "B", "C"]
    assert visits == [[names[i] for i in row] for row in williams_rows(3)]


def test_level_order_counterbalanced_and_random(tmp_path: Path) -> None:
    body = edited("threads = [2, 4]", "threads = [2, 4, 8]")
    flip = load_recipe(write(tmp_path, body.replace("replicates = 2", 'replicates = 2\n'
                                                    'level_order = "counterbalanced"'), "flip"))
    sweeps = [[s.threads for s in flip.schedule() if s.replicate == r and s.arm.name == "A"]
              for r in (1, 2)]
    assert sweeps == [[2, 4, 8], [8, 4, 2]]
    shuffled = load_recipe(write(tmp_path, body.replace(
        "replicates = 2", 'replicates = 6\nlevel_order = "random"\nseed = 5'), "shuf"))
    sweeps = [[s.threads for s in shuffled.schedule() if s.replicate == r and s.arm.name == "A"]
              for r in range(1, 7)]
    assert all(sorted(sweep) == [2, 4, 8] for sweep in sweeps)
    assert len({tuple(sweep) for sweep in sweeps}) > 1
    for r in range(1, 7):  # both arms of a round sweep the levels in the same order
        b = [s.threads for s in shuffled.schedule() if s.replicate == r and s.arm.name == "B"]
        assert b == sweeps[r - 1]
    error = refused(write(tmp_path, body.replace("replicates = 2", 'replicates = 2\n'
                                                 'level_order = "down"'), "bad"),
                    "run.level_order")
    assert "counterbalanced" in str(error)


def test_random_order_is_a_seeded_permutation_per_round(tmp_path: Path) -> None:
    recipe = three_arms(tmp_path, "random", seed=11, replicates=6)
    steps = recipe.schedule()
    assert len(steps) == 6 * 3 * 2
    rounds: list[list[str]] = []
    for replicate in range(1, 7):
        mine = [s for s in steps if s.replicate == replicate]
        assert [s.threads for s in mine] == [2, 4, 2, 4, 2, 4]  # the sweep stays inside
        visits = [s.arm.name for s in mine[::2]]
        assert [s.arm.name for s in mine[1::2]] == visits
        assert sorted(visits) == ["A", "B", "C"]  # a permutation of the arms
        rounds.append(visits)
    assert len({tuple(r) for r in rounds}) > 1  # not the same order every round
    # The documented rule: one random.Random(seed), shuffled once per round.
    rng = random.Random(11)
    expected = []
    for _ in range(6):
        arms = ["A", "B", "C"]
        rng.shuffle(arms)
        expected.append(arms)
    assert rounds == expected
    # Deterministic: the same seed gives the same schedule; another seed another one.
    again = three_arms(tmp_path, "random", seed=11, replicates=6).schedule()
    assert [(s.arm.name, s.threads) for s in again] == [(s.arm.name, s.threads) for s in steps]
    other = three_arms(tmp_path, "random", seed=12, replicates=6).schedule()
    assert [s.arm.name for s in other] != [s.arm.name for s in steps]


# --------------------------------------------------------------------------- refusals

CASES: list[tuple[str, str, str, str | None, str]] = [
    # (id, old text of BASE, new text, dotted key, expected in the message)
    ("syntax", "duration = 5", "duration = = 5", "load.duration", "line 6"),
    ("unknown-top", 'description = "a', 'descripton = "a', "descripton", "'description'"),
    ("unknown-load", "threads = [2, 4]", "thread = [2, 4]", "load.thread", "'threads'"),
    ("unknown-run", "replicates = 2", "replicate = 2", "run.replicate", "'replicates'"),
    ("unknown-arm", 'name = "B"', 'name = "B"\nknob = 1', "arm[1].knob", "'knobs'"),
    (
        "unknown-wait",
        "[run]",
        "[wait]\nhistory_bellow = 5\n[run]",
        "wait.history_bellow",
        "'history_below'",
    ),
    ("unknown-steady", "[run]", "[steady]\nwindoww = 5\n[run]", "steady.windoww", "'window'"),
    ("unknown-applies", "[load]", '[applies]\nmysq = ">=5.7"\n[load]', "applies.mysq", "'mysql'"),
    ("missing-name", 'name = "t"\n', "", "name", "missing name"),
    ("bad-name", 'name = "t"', 'name = "my recipe"', "name", "my-recipe"),
    ("name-type", 'name = "t"', "name = 5", "name", "expected a string, found integer 5"),
    ("missing-description", 'description = "a test recipe"\n', "", "description", "missing"),
    ("missing-load", "[load]\nworkload", "[lood]\nworkload", "lood", "'load'"),
    ("threads-type", "threads = [2, 4]", 'threads = "8"', "load.threads", "found string"),
    ("threads-empty", "threads = [2, 4]", "threads = []", "load.threads", "empty"),
    ("threads-zero", "threads = [2, 4]", "threads = [2, 0]", "load.threads[1]", "out of range"),
    ("threads-big", "threads = [2, 4]", "threads = 2000", "load.threads", "1-1024"),
    ("threads-twice", "threads = [2, 4]", "threads = [2, 4, 2]", "load.threads[2]", "twice"),
    ("threads-missing", "threads = [2, 4]\n", "", "load.threads", "missing"),
    ("duration-short", "duration = 5", "duration = 2", "load.duration", "out of range 5-"),
    ("duration-type", "duration = 5", 'duration = "60"', "load.duration", "no quotes"),
    ("duration-float", "duration = 5", "duration = 60.0", "load.duration", "no decimal point"),
    ("duration-missing", "duration = 5\n", "", "load.duration", "missing duration"),
    ("warmup-negative", "warmup = 0", "warmup = -1", "load.warmup", "out of range"),
    ("tables-zero", "tables = 1", "tables = 0", "load.tables", "out of range"),
    ("percentile", "tables = 1", "tables = 1\npercentile = 101", "load.percentile", "1-100"),
    ("workload", '"oltp_read_only"', '"oltp_readonly"', "load.workload", "'oltp_read_only'"),
    ("workload-lua", '"oltp_read_only"', '"my.lua"', "load.workload", "absolute path"),
    ("rand-type", "tables = 1", 'tables = 1\nrand_type = "zipf"', "load.rand_type", "pareto"),
    ("replicates", "replicates = 2", "replicates = 0", "run.replicates", "out of range 1-"),
    ("order", "replicates = 2", 'replicates = 2\norder = "abab"', "run.order", "interleaved"),
    ("pause", "replicates = 2", "replicates = 2\npause = -1", "run.pause", "out of range"),
    ("seed", "replicates = 2", "replicates = 2\nseed = true", "run.seed", "found boolean"),
    ("plateau-type", "[run]", '[wait]\nplateau = "yes"\n[run]', "wait.plateau", "true or"),
    (
        "history-negative",  # 0 is the seed sweeps' gate (issue 18): below it is refused
        "[run]",
        "[wait]\nhistory_below = -1\n[run]",
        "wait.history_below",
        "out of range",
    ),
    ("timeout-zero", "[run]", "[wait]\ntimeout = 0\n[run]", "wait.timeout", "more than 0"),
    (
        "dirty-pct",
        "[run]",
        "[wait]\ndirty_pct_below = 101\n[run]",
        "wait.dirty_pct_below",
        "at most 100",
    ),
    (
        "dirty-both",
        "[run]",
        "[wait]\ndirty_at_lwm = true\ndirty_pct_below = 5.0\n[run]",
        "wait.dirty_pct_below",
        "keep one",
    ),
    (
        "checkpoint-size",
        "[run]",
        '[wait]\ncheckpoint_age_below = "64Q"\n[run]',
        "wait.checkpoint_age_below",
        '"64M"',
    ),
    (
        "checkpoint-type",
        "[run]",
        "[wait]\ncheckpoint_age_below = 1.5\n[run]",
        "wait.checkpoint_age_below",
        "found float",
    ),
    ("cv-zero", "[run]", "[steady]\ncv_max = 0\n[run]", "steady.cv_max", "more than 0"),
    ("window-small", "[run]", "[steady]\nwindow = 2\n[run]", "steady.window", "5-3600"),
    (
        "window-timeout",
        "[run]",
        "[wait]\nplateau = true\ntimeout = 20\n[steady]\nwindow = 30\n[run]",
        "steady.window",
        "longer than wait.timeout",
    ),
    ("arm-duplicate", 'name = "B"', 'name = "A"', "arm[1].name", "already used by arm[0]"),
    (
        "arm-ndb-with-others",
        'knobs = { sort_buffer_size = "256K" }',
        'knobs = { sort_buffer_size = "256K", DiskPageBufferMemory = "64M" }',
        "arm[0].knobs.DiskPageBufferMemory",
        "its own rolling restart",
    ),
    ("arm-name", 'name = "B"', 'name = "a very long arm name"', "arm[1].name", "up to 16"),
    (
        "arm-one",
        '[[arm]]\nname = "B"\nknobs = { sort_buffer_size = "2M" }\n',
        "",
        "arm",
        "at least two",
    ),
    ("arm-none", "[[arm]]", "[[xarm]]", "xarm", "'arm'"),
    (
        "arm-no-knobs",
        'knobs = { sort_buffer_size = "2M" }',
        "knobs = {}",
        "arm[1].knobs",
        "names no knob",
    ),
    (
        "arm-missing-knobs",
        'knobs = { sort_buffer_size = "2M" }',
        "",
        "arm[1].knobs",
        "missing knobs",
    ),
    (
        "arm-missing-knob",
        'knobs = { sort_buffer_size = "2M" }',
        "knobs = { innodb_io_capacity = 400 }",
        "arm[1].knobs.sort_buffer_size",
        'add sort_buffer_size = "256K"',
    ),
    (
        "arm-extra-knob",
        'knobs = { sort_buffer_size = "2M" }',
        'knobs = { sort_buffer_size = "2M", innodb_io_capacity = 400 }',
        "arm[1].knobs.innodb_io_capacity",
        "add innodb_io_capacity to every arm",
    ),
    (
        "knob-name",
        'knobs = { sort_buffer_size = "2M" }',
        'knobs = { "sort buffer" = "2M" }',
        "arm[1].knobs.sort buffer",
        "not a server variable name",
    ),
    (
        "knob-case-twice",
        'knobs = { sort_buffer_size = "2M" }',
        'knobs = { sort_buffer_size = "2M", SORT_BUFFER_SIZE = "1M" }',
        "arm[1].knobs.SORT_BUFFER_SIZE",
        "same knob",
    ),
    (
        "knob-value-type",
        'knobs = { sort_buffer_size = "2M" }',
        "knobs = { sort_buffer_size = [2] }",
        "arm[1].knobs.sort_buffer_size",
        "found array",
    ),
    (
        "knob-value-empty",
        'knobs = { sort_buffer_size = "2M" }',
        'knobs = { sort_buffer_size = " " }',
        "arm[1].knobs.sort_buffer_size",
        "is empty",
    ),
    (
        "applies-syntax",
        "[load]",
        '[applies]\nmariadb = "10.6"\n[load]',
        "applies.mariadb",
        "'>=10.6'",
    ),
    (
        "applies-op",
        "[load]",
        '[applies]\nmariadb = "=>10.6"\n[load]',
        "applies.mariadb",
        "'>=10.6'",
    ),
    ("applies-equal", "[load]", '[applies]\nmysql = "=8.0"\n[load]', "applies.mysql", "'==8.0'"),
    (
        "applies-comma",
        "[load]",
        '[applies]\nmysql = ">=5.7,"\n[load]',
        "applies.mysql",
        "stray comma",
    ),
    ("applies-type", "[load]", "[applies]\nmysql = 8\n[load]", "applies.mysql", "found integer"),
    ("applies-empty", "[load]", '[applies]\nwhy = "x"\n[load]', "applies", "lists no flavor"),
    ("applies-table", "[load]", 'applies = "mysql"\n[load]', "applies", "a table"),
    # issue 18: [load] prepared, engine, options
    ("prepared-type", "table_size = 100", 'table_size = 100\nprepared = "no"', "load.prepared",
     "expected a boolean"),
    ("engine-name", "table_size = 100", 'table_size = 100\nengine = "Inno DB"', "load.engine",
     "not a storage engine name"),
    ("options-type", "table_size = 100", 'table_size = 100\noptions = "skip_trx"',
     "load.options", "expected a table"),
    ("options-name", "table_size = 100", 'table_size = 100\noptions = { "skip trx" = 1 }',
     "load.options.skip trx", "not an option name"),
    ("options-own", "table_size = 100", "table_size = 100\noptions = { threads = 8 }",
     "load.options.threads", "set by knobtop from the load"),
    ("options-value", "table_size = 100",
     'table_size = 100\noptions = { range_size = "1; rm -rf /" }', "load.options.range_size",
     "give a plain value"),
    ("options-array", "table_size = 100", "table_size = 100\noptions = { range_size = [1] }",
     "load.options.range_size", "a number, string or true/false"),
    ("table-options-name", "table_size = 100",
     'table_size = 100\ntable_options = { "KEY BLOCK" = 8 }', "load.table_options.KEY BLOCK",
     "not a table option name"),
    ("table-options-value", "table_size = 100",
     'table_size = 100\ntable_options = { COMMENT = "x\' -- y" }', "load.table_options.COMMENT",
     "give a number or a word"),
    ("arm-load-key", 'knobs = { sort_buffer_size = "2M" }',
     'knobs = { sort_buffer_size = "2M" }\nload = { threads = 8 }', "arm[1].load.threads",
     "unknown key"),
    ("arm-load-engine", 'knobs = { sort_buffer_size = "2M" }',
     'knobs = { sort_buffer_size = "2M" }\nload = { engine = "rocks db" }', "arm[1].load.engine",
     "not a storage engine name"),
    ("arm-load-instances", 'knobs = { sort_buffer_size = "2M" }',
     'knobs = { sort_buffer_size = "2M" }\nload = { instances = 4 }', "arm[1].load.instances",
     "2 threads cannot be shared among 4 instances"),
    ("arm-neither", 'knobs = { sort_buffer_size = "2M" }', 'load = {}', "arm[1].knobs",
     "missing knobs"),
    ("instances-range", "table_size = 100", "table_size = 100\ninstances = 0",
     "load.instances", "1 to 64"),
    ("instances-threads", "table_size = 100", "table_size = 100\ninstances = 4",
     "load.threads", "2 threads cannot be shared among 4 instances"),
]


@pytest.mark.parametrize(
    ("old", "new", "key", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_refusals_name_file_key_and_fix(
    tmp_path: Path, old: str, new: str, key: str | None, expected: str
) -> None:
    path = write(tmp_path, edited(old, new))
    err = refused(path, key)
    assert expected in str(err)


@pytest.mark.parametrize(
    ("arms", "key", "expected"),
    [
        ('arm = "A"', "arm", "expected an array of tables ([[arm]])"),
        ('arm = ["A", "B"]', "arm[0]", "expected a table, found string 'A'"),
    ],
)
def test_arms_that_are_not_tables(tmp_path: Path, arms: str, key: str, expected: str) -> None:
    body = arms + "\n" + BASE[: BASE.index("[[arm]]")]
    err = refused(write(tmp_path, body), key)
    assert expected in err.problem
    assert "[[arm]]" in err.fix


def test_the_base_recipe_itself_loads(tmp_path: Path) -> None:
    recipe = load_recipe(write(tmp_path, BASE))
    assert recipe.arms == (
        Arm("A", {"sort_buffer_size": "256K"}),
        Arm("B", {"sort_buffer_size": "2M"}),
    )
    assert recipe.threads == (2, 4) and recipe.replicates == 2


def test_instances_are_a_load_field_and_threads_their_total(tmp_path: Path) -> None:
    recipe = load_recipe(write(tmp_path, edited("table_size = 100",
                                                "table_size = 100\ninstances = 2")))
    assert recipe.load.instances == 2
    spec = recipe.load_spec(4, 10)
    assert spec.instances == 2 and spec.threads == 4
    assert [s.threads for s in spec.split()] == [2, 2]
    assert load_recipe(write(tmp_path, BASE, "one")).load.instances == 1


def test_arms_may_run_other_tables_and_load_and_get_databases_of_their_own(
        tmp_path: Path) -> None:
    """Issue 18 part 3: an arm sets engine, table_options, workload, options, instances;
    knobs may then be empty (in every arm, as the same-knobs rule wants)."""
    body = BASE.replace('knobs = { sort_buffer_size = "256K" }', "knobs = {}")
    body = body.replace('knobs = { sort_buffer_size = "2M" }',
                        'load = { engine = "RocksDB", instances = 2, '
                        'options = { skip_trx = true } }\n'
                        '[[arm]]\nname = "C"\n'
                        'load = { engine = "InnoDB", table_options = { KEY_BLOCK_SIZE = 8 }, '
                        'workload = "oltp_point_select" }')
    recipe = load_recipe(write(tmp_path, body))
    a, b, c = recipe.arms
    assert a.knobs == b.knobs == c.knobs == {}
    assert b.load == {"engine": "RocksDB", "instances": 2, "options": (("skip_trx", "on"),)}
    specs = {arm.name: spec for arm, spec in recipe.arm_specs()}
    assert (specs["A"].engine, specs["A"].shape, specs["A"].instances) == ("", "", 1)
    assert (specs["B"].shape, specs["B"].instances, specs["B"].threads) == ("rocksdb", 2, 2)
    # arms whose tables differ from [load]'s get a database of their own; [load]'s keep theirs
    assert (specs["A"].schema, specs["B"].schema, specs["C"].schema) == ("", "rocksdb",
                                                                         "innodb_kbs8")
    assert specs["C"].shape == "innodb_kbs8" and specs["C"].workload == "oltp_point_select"
    assert specs["C"].table_options_sql() == "KEY_BLOCK_SIZE=8"
    assert recipe.load_spec(4, 10, b).threads == 4  # the step's threads, the arm's engine
    assert recipe.load_spec(4, 10, b).engine == "RocksDB"


def test_syntax_error_names_the_line(tmp_path: Path) -> None:
    err = refused(write(tmp_path, edited("replicates = 2", 'replicates = "2')), "run.replicates")
    assert "TOML syntax error at line 11" in err.problem
    assert "README" in err.fix


def test_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / "bin.toml"
    path.write_bytes(b'name = "\xff"\n')
    err = refused(path, None)
    assert "UTF-8" in err.problem


# --------------------------------------------------------------------------- versions


@pytest.mark.parametrize(
    ("text", "version", "allowed"),
    [
        (">=10.1", (10, 1, 0), True),
        (">=10.1", (10, 0, 99), False),
        ("<10.6", (10, 5, 99), True),
        ("<10.6", (10, 6, 0), False),
        ("<10.6", (10, 6, 17), False),  # compared at the precision written
        ("<=10.6", (10, 6, 17), True),
        ("<=10.6", (10, 7, 0), False),
        (">10.6", (10, 6, 17), False),
        (">10.6", (10, 7, 1), True),
        ("==10.6", (10, 6, 5), True),
        ("==10.6", (10, 11, 5), False),
        ("==8.0.30", (8, 0, 30), True),
        ("==8.0.30", (8, 0, 31), False),
        (">=10.5.5", (10, 5, 4), False),
        (">=10.5.5", (10, 5, 5), True),
        (">=10.2.2, <10.5", (10, 4, 30), True),
        (">=10.2.2, <10.5", (10, 2, 1), False),
        (">=10.2.2, <10.5", (10, 5, 0), False),
        ("  >= 5.7 ,< 8  ", (7, 9, 9), True),
        ("  >= 5.7 ,< 8  ", (5, 6, 51), False),
        ("  >= 5.7 ,< 8  ", (5, 7, 44), True),
        ("  >= 5.7 ,< 8  ", (8, 0, 0), False),
        (">=11", (11, 0, 0), True),
        ("*", (3, 2, 1), True),
    ],
)
def test_constraint_allows(text: str, version: tuple[int, int, int], allowed: bool) -> None:
    assert Constraint.parse(text).allows(version) is allowed


def test_constraint_parse_clauses() -> None:
    c = Constraint.parse(" >=10.2.2, <10.6 ")
    assert c.clauses == ((">=", (10, 2, 2)), ("<", (10, 6)))
    assert str(c) == ">=10.2.2, <10.6"
    assert Constraint.parse("*").clauses == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "empty"),
        ("10.6", "needs an operator"),
        ("=10.6", "'==10.6'"),
        ("=>10.6", "write '>=10.6'"),
        ("=<10.6", "write '<=10.6'"),
        (">=10.6.1.2", "operator"),
        (">=ten", "operator"),
        (">=10.6,", "stray comma"),
        ("~10.6", "operator"),
    ],
)
def test_constraint_parse_errors(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        Constraint.parse(text)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (4096, 4096),
        ("64M", 64 << 20),
        ("1g", 1 << 30),
        ("512K", 512 << 10),
        ("1.5G", 3 << 29),
        ("100", 100),
        ("8MiB", 8 << 20),
        ("2 GB", 2 << 30),
    ],
)
def test_parse_bytes(value: int | str, expected: int) -> None:
    assert parse_bytes(value) == expected


@pytest.mark.parametrize("value", ["64Q", "", "-1", "1.3", -5])
def test_parse_bytes_refuses(value: int | str) -> None:
    with pytest.raises(ValueError):
        parse_bytes(value)


# --------------------------------------------------------------------------- a real server


@pytest.mark.integration
def test_thread_concurrency_is_refused_on_mariadb_10_11(catalog: Catalog) -> None:
    assert catalog.version.flavor == "mariadb" and catalog.version.at_least(10, 6)
    recipe = load_recipe("thread-concurrency")
    with pytest.raises(RecipeError) as info:
        check_for_server(recipe, catalog)
    err = checked(info.value, str(recipe.path), "applies.mariadb")
    assert f"mariadb {catalog.version.short}" in err.problem
    assert recipe.why in err.problem
    assert "mariadb <10.6" in err.problem
    assert "flush-threads-mariadb" in err.fix  # other recipes are offered


@pytest.mark.integration
def test_doublewrite_passes_and_is_static(catalog: Catalog) -> None:
    recipe = load_recipe("doublewrite")
    warnings = check_for_server(recipe, catalog)
    # issue 18: the bundled doublewrite is the seed's quick form, 2 replicates: said so
    assert warnings == [QUICK_FORM]
    assert static_knobs(recipe, catalog) == ["innodb_doublewrite"]


@pytest.mark.integration
def test_out_of_range_value_names_arm_and_knob(tmp_path: Path, catalog: Catalog) -> None:
    body = edited('sort_buffer_size = "256K"', "innodb_purge_threads = 4").replace(
        'sort_buffer_size = "2M"', "innodb_purge_threads = 99"
    )
    recipe = load_recipe(write(tmp_path, body))
    with pytest.raises(RecipeError) as info:
        check_for_server(recipe, catalog)
    err = checked(info.value, str(recipe.path), "arm[1].knobs.innodb_purge_threads")
    assert "arm 'B'" in err.problem and "out of range" in err.problem
    assert "1 to 32" in err.problem
    assert "arm 'B'" in err.fix


@pytest.mark.integration
def test_ndb_recipe_is_refused_on_mariadb(catalog: Catalog) -> None:
    recipe = load_recipe("ndb-disk-page-buffer")
    with pytest.raises(RecipeError) as info:
        check_for_server(recipe, catalog)
    err = checked(info.value, str(recipe.path), "applies")
    assert "mariadb 10.11" in err.problem and "ndb >=7.0" in err.problem
    assert recipe.why in err.problem


@pytest.mark.integration
def test_absent_knob_names_the_note_and_the_equivalent(tmp_path: Path, catalog: Catalog) -> None:
    body = edited('sort_buffer_size = "256K"', "innodb_page_cleaners = 1").replace(
        'sort_buffer_size = "2M"', "innodb_page_cleaners = 4"
    )
    recipe = load_recipe(write(tmp_path, body))
    with pytest.raises(RecipeError) as info:
        check_for_server(recipe, catalog)
    err = checked(info.value, str(recipe.path), "arm[0].knobs.innodb_page_cleaners")
    assert "does not exist" in err.problem and "removed in 10.6.0" in err.problem
    assert "innodb_write_io_threads" in err.fix and "flush-threads-mariadb.toml" in err.fix
    # No obvious equivalent: the fix says to remove the knob.
    body = edited('sort_buffer_size = "256K"', "innodb_thread_concurrency = 0").replace(
        'sort_buffer_size = "2M"', "innodb_thread_concurrency = 8"
    )
    recipe = load_recipe(write(tmp_path, body, "tc"))
    with pytest.raises(RecipeError) as info:
        check_for_server(recipe, catalog)
    err = checked(info.value, str(recipe.path), "arm[0].knobs.innodb_thread_concurrency")
    assert "remove innodb_thread_concurrency from every arm" in err.fix


@pytest.mark.integration
def test_every_bundled_recipe_either_runs_or_is_refused_up_front(catalog: Catalog) -> None:
    """On MariaDB 10.11 a bundled recipe is refused by [applies] or passes every check:
    never a missing knob or a bad value discovered later."""
    passed: dict[str, list[str]] = {}
    for path in bundled_recipes():
        recipe = load_recipe(path)
        try:
            passed[recipe.name] = check_for_server(recipe, catalog)
        except RecipeError as exc:
            assert exc.key is not None and exc.key.startswith("applies"), str(exc)
    assert set(passed) == {
        "aa-noise",  # issue 17's A/A recipe
        "buffer-pool-climb",
        "buffer-pool-timeline",
        "compression",  # issue 18's seed recipes
        "compression-read-only",  # issue 39
        "innodb-vs-myrocks",
        "linkbench-engines",  # issue 20
        "perfschema-overhead",
        "sweep-read-only",
        "sweep-read-write",
        "doublewrite",
        "flush-threads-mariadb",
        "purge-threads",
        "soak-write-only",  # issue 38's soak (missing here since it was added)
        "sort-buffer",
        "trx-commit-servers",  # issue 19: no knobs; its servers differ
        "trx-commit",  # issue 39 item 8
        "scalability-pk-point",  # issue 39 item 4: seed 003's servers, no knobs
        "scalability-pk-range",
        "scalability-key-range",
        "scalability-scan",
    }
    assert any("replicates = 1" in w for w in passed["buffer-pool-climb"])
    assert any("an A/A comparison" in w for w in passed["aa-noise"])
    # arms that differ in their tables, not their knobs, are no A/A run (issue 18)
    assert not any("an A/A comparison" in w for w in passed["innodb-vs-myrocks"])
    assert not any("an A/A comparison" in w for w in passed["trx-commit-servers"])
    statics = {name: static_knobs(load_recipe(name), catalog) for name in passed}
    assert statics == {
        "aa-noise": [],
        "buffer-pool-climb": [],
        "buffer-pool-timeline": [],
        "compression": [],  # its arms differ in tables, not knobs
        "compression-read-only": [],
        "innodb-vs-myrocks": [],
        "linkbench-engines": [],
        "perfschema-overhead": ["performance_schema"],
        "sweep-read-only": [],  # innodb_adaptive_hash_index is dynamic
        "sweep-read-write": [],
        "doublewrite": ["innodb_doublewrite"],
        "flush-threads-mariadb": [],  # dynamic from 10.11
        "purge-threads": [],  # dynamic from 10.7.1
        "soak-write-only": [],
        "sort-buffer": [],
        "trx-commit-servers": [],
        "trx-commit": [],  # innodb_flush_log_at_trx_commit is dynamic
        "scalability-pk-point": [],
        "scalability-pk-range": [],
        "scalability-key-range": [],
        "scalability-scan": [],
    }


@pytest.mark.integration
def test_server_warnings(tmp_path: Path, catalog: Catalog) -> None:
    # "256K" and 262144 are the same value: an A/A run; one replicate; a gate that
    # barely waits because the lwm is 0 on this server; [steady] without plateau.
    assert float(catalog.get("innodb_max_dirty_pages_pct_lwm").value or "nan") == 0
    body = edited('sort_buffer_size = "2M"', "sort_buffer_size = 262144")
    body = body.replace("replicates = 2", "replicates = 1")
    body = body.replace("[run]", "[wait]\ndirty_at_lwm = true\n[steady]\nwindow = 10\n[run]")
    recipe = load_recipe(write(tmp_path, body))
    warnings = check_for_server(recipe, catalog)
    assert len(warnings) == 4, warnings
    assert "'A' and 'B' set the same values" in warnings[0]
    assert "replicates = 1" in warnings[1]
    assert "innodb_max_dirty_pages_pct_lwm is 0" in warnings[2]
    assert "dirty_pct_below" in warnings[2]
    assert "plateau is false" in warnings[3]


@pytest.mark.parametrize(("arms", "threads", "replicates", "p", "needed"), [
    (2, "[4]", 3, 0.100, 4),  # one comparison at the default 3: silent before issue 39
    (2, "[4]", 4, None, 4),  # 4 vs 4 reads "higher" (p = 2/70)
    (2, "[2, 4]", 4, 0.057, 5),
    (3, "[2, 4]", 4, 0.114, 5),
    (3, "[2, 4, 8, 16]", 5, 0.063, 6),  # 8 comparisons: 2/252 x 8
    (2, "[4]", 6, None, 4),  # 6 rounds are paired: 2/64
    (5, "[2, 4]", 8, None, 6),  # 8 comparisons, 8 rounds: still two samples, 8 x 2/12870
])
def test_the_replicates_warning_is_exact_for_every_plan_shape(
        tmp_path: Path, arms: int, threads: str, replicates: int, p: float | None,
        needed: int) -> None:
    """Issue 39 item 10: the best p a cell can read, for the rounds and the Holm family, is
    what the plan warns of (and nothing when a verdict is possible)."""
    body = BASE.replace("threads = [2, 4]", f"threads = {threads}").replace(
        "replicates = 2", f"replicates = {replicates}")
    body += "".join(f'[[arm]]\nname = "C{i}"\nknobs = {{ sort_buffer_size = "{i}M" }}\n'
                    for i in range(3, arms + 1))
    recipe = load_recipe(write(tmp_path, body))
    warnings = [w for w in offline_warnings(recipe) if "best a cell can read" in w]
    if p is None:
        assert warnings == []
        return
    family = (arms - 1) * len(recipe.threads)
    assert len(warnings) == 1, warnings
    assert f"with {replicates} runs per arm and a family of {family} comparison" in warnings[0]
    assert f"p = {p:.3f} (above 0.05): no cell can get a verdict" in warnings[0]
    assert f"give at least {needed} replicates" in warnings[0]


@pytest.mark.integration
def test_too_few_replicates_for_the_tables_holm_family_are_warned(tmp_path: Path,
                                                                  catalog: Catalog) -> None:
    """Issue 17: 2 arms x 2 levels with 4 replicates: under Holm over the 2 comparisons
    even 4 runs of B all above A's (p = 2/70 x 2) cannot pass; 5 can."""
    body = edited("replicates = 2", "replicates = 4")  # BASE sweeps threads [2, 4]
    warnings = check_for_server(load_recipe(write(tmp_path, body)), catalog)
    assert any("with 4 runs per arm and a family of 2 comparisons (Holm) the best a cell "
               "can read is p = 0.057 (above 0.05): no cell can get a verdict (higher or "
               "lower); give at least 5 replicates" in w for w in warnings), warnings
    five = edited("replicates = 2", "replicates = 5")
    assert not any("Holm" in w for w in check_for_server(load_recipe(write(tmp_path, five)),
                                                          catalog))


@pytest.mark.integration
def test_buffer_pool_above_its_max_is_refused(tmp_path: Path, catalog: Catalog) -> None:
    cap = int(catalog.get("innodb_buffer_pool_size_max").value or "0")
    assert cap > 0
    too_big = f"{cap // (1 << 30) + 1024}G"
    body = edited('sort_buffer_size = "256K"', 'innodb_buffer_pool_size = "128M"').replace(
        'sort_buffer_size = "2M"', f'innodb_buffer_pool_size = "{too_big}"'
    )
    recipe = load_recipe(write(tmp_path, body))
    with pytest.raises(RecipeError) as info:
        check_for_server(recipe, catalog)
    err = checked(info.value, str(recipe.path), "arm[1].knobs.innodb_buffer_pool_size")
    assert "innodb_buffer_pool_size_max" in err.problem and str(cap) in err.problem


@pytest.mark.integration
def test_static_value_checks_use_the_block_size(tmp_path: Path, catalog: Catalog) -> None:
    # innodb_buffer_pool_size moves in 1M blocks on this server.
    assert catalog.get("innodb_buffer_pool_size").block_size == 1 << 20
    body = edited('sort_buffer_size = "256K"', 'innodb_buffer_pool_size = "64M"').replace(
        'sort_buffer_size = "2M"', 'innodb_buffer_pool_size = "64.5M"'
    )
    recipe = load_recipe(write(tmp_path, body))
    with pytest.raises(RecipeError) as info:
        check_for_server(recipe, catalog)
    err = checked(info.value, str(recipe.path), "arm[1].knobs.innodb_buffer_pool_size")
    assert "multiple of 1048576" in err.problem


# --------------------------------------------------------------------------- built catalogs


def mysql_catalog(version: str, ndb: str | None = None) -> Catalog:
    rows = [
        ("innodb_thread_concurrency", "0", "0", "1000", None, None),
        ("innodb_doublewrite", "ON", "0", "0", None, None),
        ("innodb_buffer_pool_size", "134217728", "5242880", "18446744073709551615", None, None),
    ]
    if ndb is not None:
        rows.append(("ndb_version_string", ndb, "0", "0", None, None))
    parsed = ServerVersion.parse(version)
    return build_catalog(parsed, "mysql", rows)


def test_ndb_sql_node_is_ndb_and_mysql() -> None:
    node = mysql_catalog("8.0.36", "ndb-8.0.36")
    assert server_flavors(node) == [("ndb", (8, 0, 36)), ("mysql", (8, 0, 36))]
    old = mysql_catalog("5.7.30-ndb-7.6.14-cluster-gpl", "ndb-7.6.14")
    assert server_flavors(old) == [("ndb", (7, 6, 14)), ("mysql", (5, 7, 30))]
    plain = mysql_catalog("8.0.36")
    assert server_flavors(plain) == [("mysql", (8, 0, 36))]

    recipe = load_recipe("ndb-disk-page-buffer")
    assert check_for_server(recipe, node) == [
        "replicates = 1: one run per arm gives numbers "
        "but no verdict (a difference needs at least 5 "
        "replicates in this table)"
    ]
    assert static_knobs(recipe, node) == ["DiskPageBufferMemory"]
    assert check_for_server(recipe, old)
    with pytest.raises(RecipeError) as info:
        check_for_server(recipe, plain)
    err = checked(info.value, str(recipe.path), "applies")
    assert "mysql 8.0.36" in err.problem and "ndb >=7.0" in err.problem
    # An InnoDB recipe for mysql runs on an SQL node too.
    assert check_for_server(load_recipe("thread-concurrency"), node) == [QUICK_FORM]


def test_ndb_value_out_of_range(tmp_path: Path) -> None:
    node = mysql_catalog("8.0.36", "ndb-8.0.36")
    body = edited('sort_buffer_size = "256K"', 'DiskPageBufferMemory = "64M"').replace(
        'sort_buffer_size = "2M"', 'DiskPageBufferMemory = "1M"'
    )
    recipe = load_recipe(write(tmp_path, body))
    with pytest.raises(RecipeError) as info:
        check_for_server(recipe, node)
    err = checked(info.value, str(recipe.path), "arm[1].knobs.DiskPageBufferMemory")
    assert "out of range" in err.problem


def test_disk_page_buffer_on_plain_mysql_suggests_the_buffer_pool(tmp_path: Path) -> None:
    body = edited('sort_buffer_size = "256K"', 'DiskPageBufferMemory = "64M"').replace(
        'sort_buffer_size = "2M"', 'DiskPageBufferMemory = "1G"'
    )
    recipe = load_recipe(write(tmp_path, body))
    with pytest.raises(RecipeError) as info:
        check_for_server(recipe, mysql_catalog("8.0.36"))
    err = checked(info.value, str(recipe.path), "arm[0].knobs.DiskPageBufferMemory")
    assert "NDB data-node parameter" in err.problem
    assert "innodb_buffer_pool_size" in err.fix and "buffer-pool-climb.toml" in err.fix


def test_mysql_warnings_unknown_and_restart_notes(tmp_path: Path) -> None:
    catalog = build_catalog(
        ServerVersion("mysql", (8, 0, 36), "8.0.36"),
        "mysql",
        [
            ("innodb_doublewrite", "ON", "0", "0", None, None),
            ("some_engine_knob", "17", "1", "100", None, None),
        ],
    )
    body = edited('sort_buffer_size = "256K"', "some_engine_knob = 10, innodb_doublewrite = 'ON'")
    body = body.replace(
        'sort_buffer_size = "2M"', "some_engine_knob = 20, innodb_doublewrite = 'OFF'"
    )
    recipe = load_recipe(write(tmp_path, body))
    warnings = check_for_server(recipe, catalog)
    assert len(warnings) == 3, warnings
    assert "whether some_engine_knob can change at runtime is unknown" in warnings[0]
    assert warnings[1].startswith("innodb_doublewrite: ") and "needs a restart" in warnings[1]
    # issue 17: BASE's 2 replicates cannot reach a verdict under Holm over its 2 comparisons
    assert "no cell can get a verdict (higher or lower); give at least 5 replicates" \
        in warnings[2]
    assert static_knobs(recipe, catalog) == ["some_engine_knob"]


def test_mariadb_10_5_ignored_knob_warns() -> None:
    version = ServerVersion("mariadb", (10, 5, 8), "10.5.8-MariaDB")
    row = (
        "innodb_thread_concurrency",
        "0",
        "NO",
        "INT UNSIGNED",
        "0",
        "1000",
        "0",
        None,
        "0",
        "GLOBAL",
    )
    catalog = build_catalog(version, "mariadb", [row])
    warnings = check_for_server(load_recipe("thread-concurrency"), catalog)
    assert len(warnings) == 2 and warnings[1] == QUICK_FORM  # issue 18: the seed's quick form
    assert "accepted but ignored" in warnings[0] and "10.5.5" in warnings[0]
    with pytest.raises(RecipeError):  # 10.6.0: refused up front
        check_for_server(
            load_recipe("thread-concurrency"),
            build_catalog(ServerVersion("mariadb", (10, 6, 0), "10.6.0-MariaDB"), "mariadb", []),
        )


def test_time_left_learns_from_the_finished_steps() -> None:
    from knobtop.recipes.runner import time_left

    # 10 s a step on paper; the first two took 40 s each (a restart, a purge wait).
    assert time_left(10, 6, 0, 0.0, None) == 60
    assert time_left(10, 6, 2, 80.0, None) == 4 * 40
    assert time_left(10, 6, 2, 80.0, 15.0) == 3 * 40 + 25
    assert time_left(10, 6, 2, 80.0, 55.0) == 3 * 40  # this step ran long: not negative
    assert time_left(10, 6, 2, 8.0, None) == 4 * 10  # quicker than on paper: paper
    assert time_left(10, 6, 6, 240.0, None) == 0


def test_latencies_keep_the_digits_that_matter() -> None:
    from knobtop.analysis.results import fmt_ms
    from knobtop.recipes.runner import short_duration

    # sysbench's p95 for point selects on a small table is a few hundredths of a ms.
    assert [fmt_ms(v) for v in (0.021, 0.5, 1.44, 35.0, 350.2)] == [
        "0.02", "0.50", "1.4", "35.0", "350"]
    assert [short_duration(s) for s in (0, 24, 89, 90, 1800)] == [
        "0 s", "24 s", "89 s", "2 min", "30 min"]


def test_the_command_line_overrides_the_order(tmp_path: Path) -> None:
    from knobtop.cli.live import recipe_from_args
    from knobtop.cli.parser import build_parser
    from knobtop.errors import BadValue

    path = write(tmp_path, BASE)
    args = build_parser().parse_args(["run", str(path), "--lab", "--order", "interleaved"])
    assert recipe_from_args(args).order == "interleaved"
    assert recipe_from_args(build_parser().parse_args(["run", str(path), "--lab"])).order == (
        "counterbalanced")
    with pytest.raises(BadValue, match="--order sideways: give one of counterbalanced"):
        recipe_from_args(build_parser().parse_args(["run", str(path), "--lab", "--order",
                                                    "sideways"]))


TIMELINE = """\
name = "tl"
description = "a timeline"
[load]
workload = "oltp_point_select"
threads = 4
duration = 60
[run]
kind = "timeline"
[timeline]
start = { innodb_buffer_pool_size = "32M" }
checkpoints = [10, 30, 60]
[[timeline.action]]
at = 20
knobs = { innodb_buffer_pool_size = "256M" }
"""


def test_a_timeline_recipe_has_actions_and_checkpoints_instead_of_arms(
        tmp_path: Path) -> None:
    recipe = load_recipe(write(tmp_path, TIMELINE))
    assert recipe.timeline is not None
    assert recipe.timeline.checkpoints == (10.0, 30.0, 60.0)
    assert recipe.timeline.metrics == ("load_tps", "hit_ratio", "dirty_pct", "history_len")
    assert recipe.timeline.actions[0].at == 20 and not recipe.timeline.actions[0].keep_load
    assert recipe.schedule() == [] and recipe.planned_seconds == 60.0
    assert recipe.timeline.start == {"innodb_buffer_pool_size": "32M"}


@pytest.mark.parametrize(("old", "new", "key", "expected"), [
    ("checkpoints = [10, 30, 60]", "checkpoints = [10, 90]", "timeline.checkpoints[1]",
     "outside the 60 s timeline"),
    ("checkpoints = [10, 30, 60]", "checkpoints = [30, 10]", "timeline.checkpoints[1]",
     "out of order"),
    ("checkpoints = [10, 30, 60]", 'checkpoints = [10]\nmetrics = ["hit_rate"]',
     "timeline.metrics[0]", "did you mean 'hit_ratio'"),
    ("at = 20", "at = 60", "timeline.action[0].at", "not inside the 60 s timeline"),
    ("knobs = { innodb_buffer_pool_size = \"256M\" }", "knobs = {}",
     "timeline.action[0].knobs", "names no knob"),
    ("threads = 4", "threads = [4, 8]", "load.threads", "a timeline runs one load"),
    ('kind = "timeline"', 'kind = "arms"', "timeline", "a [timeline] table in a recipe of arms"),
    ("[run]", '[[arm]]\nname = "A"\nknobs = { sort_buffer_size = "1M" }\n[run]', "arm",
     "a timeline recipe has no arms"),
])
def test_timeline_refusals_name_the_key(tmp_path: Path, old: str, new: str, key: str,
                                        expected: str) -> None:
    assert old in TIMELINE
    err = refused(write(tmp_path, TIMELINE.replace(old, new, 1)), key)
    assert expected in str(err)


def test_timed_steps_are_a_run_option_and_not_for_timelines(tmp_path: Path) -> None:
    recipe = load_recipe(write(tmp_path, edited("replicates = 2", "replicates = 2\ntimed = true")))
    assert recipe.timed and not load_recipe(write(tmp_path, BASE, "plain")).timed
    err = refused(write(tmp_path, TIMELINE.replace('kind = "timeline"',
                                                   'kind = "timeline"\ntimed = true'), "tl"),
                  "run.timed")
    assert "runs once" in str(err)


SOAK = """\
name = "sk"
description = "a soak"
[load]
workload = "oltp_write_only"
threads = 4
duration = 600
[run]
kind = "soak"
[soak]
knobs = { innodb_io_capacity = "400" }
every = 120
"""


def test_a_soak_is_one_arm_with_a_checkpoint_every_so_often(tmp_path: Path) -> None:
    """Issue 38's new kind: one arm of [soak] knobs, a checkpoint every `every` seconds
    through [load] duration, each over `window` (every, at most 60 s, by default)."""
    recipe = load_recipe(write(tmp_path, SOAK))
    assert recipe.kind == "soak" and recipe.timeline is not None
    assert [a.name for a in recipe.arms] == ["soak"]
    assert recipe.arms[0].knobs == {"innodb_io_capacity": "400"}
    assert recipe.timeline.checkpoints == (120.0, 240.0, 360.0, 480.0, 600.0)
    assert recipe.timeline.window == 60.0 and recipe.timeline.actions == ()
    assert recipe.timeline.metrics == ("load_tps", "hit_ratio", "dirty_pct", "history_len")
    assert recipe.schedule() == [] and recipe.planned_seconds == 600.0
    bundled = load_recipe("soak-write-only")
    assert bundled.kind == "soak" and len(bundled.timeline.checkpoints) == 5


@pytest.mark.parametrize(("old", "new", "key", "expected"), [
    ("every = 120", "", "soak.every", "missing every"),
    ("every = 120", "every = 900", "soak.every", "out of range"),
    ("every = 120", "every = 120\nwindow = 200", "soak.window", "longer than the 120 s"),
    ("every = 120", "every = 120\nmetrics = [\"load_tsp\"]", "soak.metrics[0]",
     "did you mean 'load_tps'"),
    ("every = 120", "every = 120\nhold = 5", "soak.hold", "unknown key"),
    ("threads = 4", "threads = [4, 8]", "load.threads", "a soak runs one load"),
    ('kind = "soak"', 'kind = "timeline"', "soak", "a [soak] table in a recipe of timeline"),
    ('kind = "soak"', 'kind = "arms"', "soak", 'add kind = "soak" to [run]'),
    ('kind = "soak"', 'kind = "soak"\ntimed = true', "run.timed", "a soak's load runs once"),
    ("[run]", '[[arm]]\nname = "A"\nknobs = { sort_buffer_size = "1M" }\n[run]', "arm",
     "a soak recipe has no arms"),
])
def test_soak_refusals_name_the_key(tmp_path: Path, old: str, new: str, key: str,
                                    expected: str) -> None:
    assert old in SOAK
    err = refused(write(tmp_path, SOAK.replace(old, new, 1)), key)
    assert expected in str(err)
