"""knobtop tune's search file (issue 21 part 1): knobs with ranges or choices, the load,
the objective, constraints and budget, checked like recipes, then against a server."""

from __future__ import annotations

from pathlib import Path

import pytest

from knobtop.recipes.search import SearchError, check_search, load_search, verify_warnings
from knobtop.server.catalog import Catalog

SEARCH = """\
name = "flush-tune"
description = "trx_commit and io_capacity under writes"
[load]
workload = "oltp_write_only"
threads = 8
duration = 20
warmup = 5
[objective]
maximize = "tps"
[constraints]
latency_ms_max = 20.0
errors_per_s_max = 0
[budget]
trials = 20
[[knob]]
name = "innodb_flush_log_at_trx_commit"
choices = [0, 1, 2]
[[knob]]
name = "INNODB_IO_CAPACITY"
min = 100
max = 20000
log = true
[[knob]]
name = "innodb_max_dirty_pages_pct"
min = 10.0
max = 90.0
"""


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "s.toml"
    path.write_text(body)
    return path


def test_a_search_file_is_read_with_its_knobs_objective_and_budget(tmp_path: Path) -> None:
    s = load_search(write(tmp_path, SEARCH))
    assert (s.name, s.direction, s.metric, s.threads) == ("flush-tune", "maximize", "tps", 8)
    assert s.constraints == {"latency_ms_max": 20.0, "errors_per_s_max": 0.0}
    assert (s.trials, s.minutes) == (20, None)
    trx, io, dirty = s.knobs
    assert (trx.name, trx.choices) == ("innodb_flush_log_at_trx_commit", ("0", "1", "2"))
    assert (io.name, io.low, io.high, io.integer, io.log) == ("innodb_io_capacity", 100.0,
                                                              20000.0, True, True)
    assert (dirty.integer, dirty.log) == (False, False)
    assert dirty.values_to_check() == ["10", "90"]
    assert io.values_to_check() == ["100", "20000"]


@pytest.mark.parametrize(("old", "new", "key", "says"), [
    ("[budget]\ntrials = 20", "", "budget", "missing [budget]"),
    ("trials = 20", "", "budget", "no budget"),
    ('maximize = "tps"', 'maximize = "latency"', "objective.maximize", "cannot be"),
    ('maximize = "tps"', 'maximize = "tps"\nminimize = "latency"', "objective",
     "one of maximize or minimize"),
    ("threads = 8", "threads = [8, 16]", "load.threads", "one thread count"),
    ("choices = [0, 1, 2]", "choices = [0, 1, 1]", "knob[0].choices[2]", "twice"),
    ("choices = [0, 1, 2]", "choices = [0]", "knob[0].choices", "1 choices"),
    ("choices = [0, 1, 2]", "choices = [0, 1]\nmin = 0", "knob[0].choices",
     "choices and a range"),
    ("min = 100\nmax = 20000", "min = 100", "knob[1]", "no choices and no range"),
    ("min = 100\nmax = 20000", "min = 200\nmax = 100", "knob[1].max", "not above"),
    ("min = 10.0\nmax = 90.0", "min = 0\nmax = 90\nlog = true", "knob[2].log", "above 0"),
    ('name = "INNODB_IO_CAPACITY"', 'name = "innodb_flush_log_at_trx_commit"',
     "knob[1].name", "searched twice"),
    ('name = "INNODB_IO_CAPACITY"', 'name = "io capacity"', "knob[1].name",
     "not a server variable name"),
    ("latency_ms_max = 20.0", "latency_max = 20.0", "constraints.latency_max",
     "unknown key"),
])
def test_a_bad_search_file_names_the_key_and_the_fix(tmp_path: Path, old: str, new: str,
                                                     key: str, says: str) -> None:
    assert old in SEARCH
    with pytest.raises(SearchError) as info:
        load_search(write(tmp_path, SEARCH.replace(old, new, 1)))
    err = info.value
    assert err.key == key and says in str(err), str(err)
    assert err.fix


def test_a_missing_file_says_so(tmp_path: Path) -> None:
    with pytest.raises(SearchError, match="search file not found"):
        load_search(tmp_path / "none.toml")


@pytest.mark.integration
def test_a_search_is_checked_against_the_server(tmp_path: Path, catalog: Catalog) -> None:
    search = load_search(write(tmp_path, SEARCH))
    assert check_search(search, catalog) == []  # all three are dynamic on 10.11
    too_high = SEARCH.replace("max = 20000", "max = 10000000000000")
    with pytest.raises(SearchError) as info:
        check_search(load_search(write(tmp_path, too_high)), catalog)
    assert info.value.key == "knob[1]" and "innodb_io_capacity" in str(info.value)
    absent = SEARCH.replace('name = "innodb_max_dirty_pages_pct"',
                            'name = "innodb_page_cleaners"')
    with pytest.raises(SearchError) as info:
        check_search(load_search(write(tmp_path, absent)), catalog)
    assert info.value.key == "knob[2].name" and "does not exist" in str(info.value)
    static = SEARCH.replace('name = "innodb_max_dirty_pages_pct"\nmin = 10.0\nmax = 90.0',
                            'name = "innodb_doublewrite"\nchoices = ["ON", "OFF"]')
    warnings = check_search(load_search(write(tmp_path, static)), catalog)
    assert warnings == ["innodb_doublewrite is static: a trial that changes it restarts "
                        "the server"]


def test_a_verify_that_can_never_recommend_is_warned(tmp_path: Path) -> None:
    """Issue 39 item 10: [verify] replicates = 4 with 2 candidates: the best p is 2 x 2/70 =
    0.057 under Holm, so no candidate can be recommended; 5 can (2 x 2/252)."""
    four = load_search(write(tmp_path, SEARCH + "[verify]\ncandidates = 2\nreplicates = 4\n"))
    assert verify_warnings(four) == [
        "[verify] replicates = 4: with 4 runs per arm and a family of 2 comparisons (Holm) "
        "the best a cell can read is p = 0.057 (above 0.05): no candidate can get a verdict, "
        "so none can be recommended; give at least 5 [verify] replicates, or fewer candidates"]
    one = load_search(write(tmp_path, SEARCH + "[verify]\ncandidates = 1\nreplicates = 4\n"))
    assert verify_warnings(one) == []
    assert verify_warnings(load_search(write(tmp_path, SEARCH))) == []  # 2 x 5 by default
