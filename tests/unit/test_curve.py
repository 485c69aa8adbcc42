"""Curve recipes (issue 39 item 3, recipes/kinds/curve.py): the [curve] reader, its
refusals naming the key, the probe's allow-list, and the curve table (analysis/curve.py,
seedtables.curve) from journaled points."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest

from harness import paths as repo_paths
from knobtop.analysis.curve import size_name, zero_at, zero_line
from knobtop.analysis.results import collect
from knobtop.analysis.seedtables import curve, run_markdown, seed_table
from knobtop.errors import BadValue
from knobtop.journal.events import Checkpoint, RecipeRun
from knobtop.recipes.kinds import KINDS
from knobtop.recipes.model import RecipeError
from knobtop.recipes.reader import load_recipe
from knobtop.server.probes import PROBES, ProbeError, check_probe, row_values

GOOD = """\
name = "curve"
description = "a knob swept in steps, a probe timed at each value"

[run]
kind = "curve"

[curve]
knob = "sort_buffer_size"
from = "32K"
to = "128K"
step = "32K"
probe = "order_by_offset"
rows = 10000
offset = 7800
repeats = 12
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "curve.toml"
    path.write_text(text)
    return path


def refused(tmp_path: Path, text: str) -> RecipeError:
    with pytest.raises(RecipeError) as err:
        load_recipe(write(tmp_path, text))
    return err.value


def test_a_curve_reads_its_values_probe_and_counters(tmp_path: Path) -> None:
    recipe = load_recipe(write(tmp_path, GOOD))
    assert recipe.kind == "curve" and "curve" in KINDS
    c = recipe.curve
    assert c is not None and recipe.timeline is None
    assert c.knob == "sort_buffer_size"
    assert c.values == (32768, 65536, 98304, 131072)
    assert c.probe == "order_by_offset"
    assert c.probe_params == {"rows": 10000, "offset": 7800, "repeats": 12}
    assert c.counters == ("Sort_merge_passes",)  # the default
    # an arm per value (checked against the server as arms are), no steps, no tables
    assert [(a.name, a.knobs) for a in recipe.arms] == [
        ("32K", {"sort_buffer_size": "32768"}), ("64K", {"sort_buffer_size": "65536"}),
        ("96K", {"sort_buffer_size": "98304"}), ("128K", {"sort_buffer_size": "131072"})]
    assert recipe.schedule() == [] and recipe.arm_specs() == []
    plan = KINDS["curve"].plan(recipe)
    assert plan == {"kind": "curve", "knob": "sort_buffer_size",
                    "values": [32768, 65536, 98304, 131072], "probe": "order_by_offset",
                    "params": {"rows": 10000, "offset": 7800, "repeats": 12},
                    "counters": ["Sort_merge_passes"]}


def test_sizes_may_be_bytes_and_the_last_value_is_at_most_to(tmp_path: Path) -> None:
    text = GOOD.replace('from = "32K"', "from = 1000").replace('to = "128K"', "to = 3500") \
        .replace('step = "32K"', "step = 1000")
    recipe = load_recipe(write(tmp_path, text))
    assert recipe.curve is not None and recipe.curve.values == (1000, 2000, 3000)
    assert [a.name for a in recipe.arms] == ["1000", "2000", "3000"]


@pytest.mark.parametrize(("change", "key", "words"), [
    (('knob = "sort_buffer_size"\n', ""), "curve.knob", "missing knob"),
    (('knob = "sort_buffer_size"', 'knob = "sort buffer"'), "curve.knob.sort buffer",
     "not a server variable name"),
    (('from = "32K"\n', ""), "curve.from", "missing from"),
    (('from = "32K"', 'from = "32Q"'), "curve.from", "not a size"),
    (('from = "32K"', "from = true"), "curve.from", "a size"),
    (('step = "32K"', "step = 0"), "curve.step", "a step of 0 bytes"),
    (('to = "128K"', 'to = "16K"'), "curve.to", "below from"),
    (('step = "32K"', "step = 1"), "curve.step", "values from 32K to 128K"),
    (('probe = "order_by_offset"', 'probe = "DROP TABLE t"'), "curve.probe",
     "unknown probe"),
    (('probe = "order_by_offset"\n', ""), "curve.probe", "missing probe"),
    (("rows = 10000\n", ""), "curve.rows", "missing rows"),
    (("rows = 10000", "rows = 10"), "curve.rows", "out of range 1000-10000000"),
    (("repeats = 12", 'repeats = "12"'), "curve.repeats", "an integer"),
    (("offset = 7800", "offset = 10000"), "curve", "not below rows"),
    (("repeats = 12", 'repeats = 12\ncounters = ["Sort merge"]'), "curve.counters",
     "not a status counter name"),
    (("repeats = 12", "repeats = 12\ncounters = []"), "curve.counters", "a list of names"),
    (("repeats = 12", 'repeats = 12\ncounters = ["a", "A"]'), "curve.counters", "twice"),
    (("repeats = 12", 'repeats = 12\nsql = "SELECT 1"'), "curve.sql", "unknown key"),
    (("[run]", '[load]\nworkload = "oltp_read_only"\nthreads = [1]\nduration = 10\n\n[run]'),
     "load", "a curve runs its probe, not a load"),
    (("[run]", '[[arm]]\nname = "a"\nknobs = { sort_buffer_size = "1M" }\n\n[run]'),
     "arm", "a curve recipe has no arms"),
])
def test_a_wrong_curve_is_refused_naming_the_key(
    tmp_path: Path, change: tuple[str, str], key: str, words: str
) -> None:
    old, new = change
    assert old in GOOD
    err = refused(tmp_path, GOOD.replace(old, new, 1))
    assert err.key == key, str(err)
    assert words in str(err), str(err)


def test_a_curve_without_its_table_or_in_another_kind_is_refused(tmp_path: Path) -> None:
    err = refused(tmp_path, GOOD.split("[curve]")[0])
    assert err.key == "curve" and "missing [curve]" in str(err)
    arms = GOOD.replace('kind = "curve"', 'kind = "arms"').replace(
        "[run]", '[load]\nworkload = "oltp_read_only"\nthreads = [1]\nduration = 10\n\n[run]')
    err = refused(tmp_path, arms)
    assert err.key == "curve" and 'add kind = "curve"' in str(err)


def test_the_probe_is_an_allow_listed_name_with_typed_parameters() -> None:
    assert set(PROBES) == {"order_by_offset"}
    check_probe("order_by_offset", {"rows": 1000, "offset": 999, "repeats": 1},
                ["Sort_merge_passes"])
    for name, params, counters in [
        ("select_star", {"rows": 1000, "offset": 0, "repeats": 1}, []),
        ("order_by_offset", {"rows": 1000, "offset": 0}, []),
        ("order_by_offset", {"rows": 1000, "offset": 0, "repeats": 1, "sql": 1}, []),
        ("order_by_offset", {"rows": 1000, "offset": 0, "repeats": True}, []),
        ("order_by_offset", {"rows": 1000, "offset": 1000, "repeats": 1}, []),
        ("order_by_offset", {"rows": 1000, "offset": 0, "repeats": 1}, ["x'; DROP"]),
    ]:
        with pytest.raises(ProbeError):
            check_probe(name, params, counters)
    # deterministic data: the same rows every time, the sort key scattered
    assert row_values(1) == row_values(1)
    assert [row_values(i)[1] for i in range(1, 12)] != sorted(row_values(i)[1]
                                                              for i in range(1, 12))
    assert len(row_values(7)[2]) == 60


def point(at: float, size_kb: int, seconds: float, passes: float | None) -> Checkpoint:
    values: dict[str, float | None] = {"sort_buffer_size": float(size_kb * 1024),
                                       "seconds": seconds, "queries": 12.0}
    if passes is not None:
        values["Sort_merge_passes"] = passes
    return Checkpoint(t=at, wall=1e9 + at, recipe="sort-buffer", at=at, window=seconds,
                      values=values)


POINTS = [point(1, 32, 0.52, 60), point(2, 64, 0.41, 12), point(3, 96, 0.40, 0),
          point(4, 128, 0.38, 12), point(5, 160, 0.37, 0), point(6, 192, 0.39, 0)]


def journal_events(points: list[Checkpoint]) -> list[RecipeRun | Checkpoint]:
    plan = {"kind": "curve", "knob": "sort_buffer_size", "arms": {}, "threads": [1],
            "steps": 0}
    return [RecipeRun(t=0, wall=1e9, action="start", name="sort-buffer", plan=plan),
            *points, RecipeRun(t=9, wall=1e9 + 9, action="end", name="sort-buffer")]


def test_the_size_where_the_merge_passes_fell_to_0_for_good() -> None:
    assert size_name(32768) == "32K" and size_name(1 << 20) == "1M"
    assert size_name(1000) == "1000" and size_name(1536 * 1024) == "1536K"
    # 96K read 0 but 128K did not: the fall is the one that lasted
    assert zero_at(POINTS, "sort_buffer_size", "Sort_merge_passes") == 160 * 1024
    assert zero_line(POINTS, "sort_buffer_size", "Sort_merge_passes") == (
        "Sort_merge_passes fell to 0 at sort_buffer_size = 160K (163,840 bytes)")
    never = POINTS[:2]
    assert zero_at(never, "sort_buffer_size", "Sort_merge_passes") is None
    assert zero_line(never, "sort_buffer_size", "Sort_merge_passes") == (
        "Sort_merge_passes never fell to 0 for good (still 12 at sort_buffer_size = 64K)")
    unread = [point(1, 32, 0.5, None)]
    assert "was not read" in zero_line(unread, "sort_buffer_size", "Sort_merge_passes")
    assert zero_line([], "sort_buffer_size", "Sort_merge_passes") == "no value measured"


def test_the_curve_table_from_a_journal() -> None:
    (results,) = collect(journal_events(POINTS))
    assert results.kind == "curve" and results.checkpoints == POINTS
    table = curve(results)
    assert table.header == ["sort_buffer_size KB", "s for 12 queries", "Sort_merge_passes"]
    assert table.rows[0] == ["32", "0.52", "60"]
    assert [r[0] for r in table.rows] == ["32", "64", "96", "128", "160", "192"]
    assert [r[2] for r in table.rows] == ["60", "12", "0", "12", "0", "0"]
    md = table.markdown()
    assert "| sort_buffer_size KB | s for 12 queries | Sort_merge_passes |" in md
    assert "Sort_merge_passes fell to 0 at sort_buffer_size = 160K (163,840 bytes)." in md
    assert run_markdown(results) == md  # what `knobtop report JOURNAL` prints for it
    assert seed_table("curve", results).markdown() == md  # --table curve
    rows = list(csv.reader(io.StringIO(table.csv())))
    assert rows[0] == ["sort_buffer_size_bytes", "seconds", "queries", "Sort_merge_passes"]
    assert rows[1] == ["32768", "0.52", "12", "60"]  # whole numbers keep their zeros
    assert rows[3] == ["98304", "0.4", "12", "0"]
    # a curve has no steps: the other tables say which one to ask for
    with pytest.raises(BadValue, match="it is a curve: use --table curve"):
        seed_table("sweep", results)


def test_a_curve_table_before_any_point_and_of_another_kind() -> None:
    (empty,) = collect(journal_events([]))
    assert run_markdown(empty) == "Curve sort-buffer: no value measured yet.\n"
    with pytest.raises(BadValue, match="no value measured yet"):
        curve(empty)
    (results,) = collect([RecipeRun(t=0, wall=1e9, action="start", name="dw",
                                    plan={"arms": {"ON": {}}, "threads": [8]})])
    with pytest.raises(BadValue, match='needs a recipe with \\[run\\] kind = "curve"'):
        curve(results)


async def test_the_live_screen_shows_a_curve_as_its_table(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """The recipe panel's end of a curve run: the curve table and its zero line."""
    from harness.ui import until, widget_text
    from knobtop.journal import JournalReader
    from knobtop.ui.app import KnobtopApp
    from knobtop.ui.widgets.knob_panel import KnobPanel
    from knobtop.ui.widgets.recipe_panel import RecipePanel

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("KNOBTOP_CONFIG", raising=False)
    reader = JournalReader(repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl")
    app = KnobtopApp(header=reader.header, events=list(reader))
    (results,) = collect(journal_events(POINTS))
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.live.query_one(KnobPanel).row_count > 0)
        panel = app.live.query_one(RecipePanel)
        panel.show_results(results)
        await pilot.pause()
        seen = " ".join("\n".join(widget_text(panel)).split())
        assert "sort_buffer_size KB" in seen and "Sort_merge_passes" in seen, seen
