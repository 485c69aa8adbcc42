"""`knobtop compare A B C ...` on screen (issue 19 part 5): every journal overlaid in its
own colour with a legend, and the load phases' verdict tables."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest
from rich.style import Style
from textual.app import App, ComposeResult

from harness import paths as repo_paths
from knobtop.analysis.journaldata import load_journal
from knobtop.analysis.merge import label_of, merge_phases
from knobtop.analysis.seedtables import sweep
from knobtop.ui.compare_app import COMPARE_GRAPHS
from knobtop.ui.compare_many import (
    ManyCompareApp,
    ManyComparison,
    ManyHeader,
    PhaseVerdictTable,
)
from knobtop.ui.widgets.metric_graph import (
    EMPTY,
    OWNER_SEVERAL,
    MetricGraph,
    series_owners,
)
from test_merge import phase_journal, rw

JOURNALS = repo_paths.DATA / "journals"
RECORDED = [JOURNALS / f"{n}.knobtop.jsonl" for n in ("lab-80s", "lab-read-write",
                                                       "lab-point-select")]


def is_braille(ch: str) -> bool:
    return 0x2801 <= ord(ch) <= 0x28FF


def test_a_cell_belongs_to_its_one_series_or_to_several() -> None:
    rows = [bytes([1, 0, 0, 4]), bytes([0, 2, 0, 8]), bytes([0, 0, 0, 0]),
            bytes([0, 0, 16, 0])]
    assert series_owners(rows) == bytes([1, 2, 4, OWNER_SEVERAL])
    assert series_owners([bytes([0, 0])]) == bytes([EMPTY, EMPTY])


class GraphApp(App[None]):
    def compose(self) -> ComposeResult:
        yield MetricGraph("tps", unit="/s", labels=("A", "B", "C"))


def braille_styles(graph: MetricGraph) -> set[Style]:
    return {seg.style or Style() for y in range(1, graph.size.height)
            for seg in graph.render_line(y) if any(is_braille(ch) for ch in seg.text)}


async def test_three_series_each_in_its_colour_with_a_legend() -> None:
    app = GraphApp()
    async with app.run_test(size=(46, 9)) as pilot:
        graph = app.query_one(MetricGraph)
        a = [(float(t), 100.0) for t in range(101)]
        b = [(float(t), 500.0) for t in range(101)]
        c = [(float(t), 1000.0) for t in range(101)]
        graph.set_data(a, [], 0.0, 100.0, overlay=b, more=[(c, [(50.0, "C: x=1")])])
        await pilot.pause()
        title = graph.render_line(0).text
        assert title.startswith("tps A 100/s  B 500/s  C 1.00K/s")
        assert title.endswith("0\u20131.00K")  # one y range over all three
        colours = [graph.get_component_rich_style(c) for c in (
            "metric-graph--line", "metric-graph--overlay", "metric-graph--s3")]
        assert len(set(colours)) == 3
        assert braille_styles(graph) == set(colours)
        graph.show_only(2)  # C alone, same axis
        await pilot.pause()
        assert braille_styles(graph) == {colours[2]}
        assert graph.render_line(0).text.endswith("0\u20131.00K")
        graph.show_only(None)
        await pilot.pause()
        assert braille_styles(graph) == set(colours)


def three(tmp_path: Path) -> ManyComparison:
    paths = [phase_journal(tmp_path / f"{n}.knobtop.jsonl", rw(s))
             for n, s in (("base", 1.0), ("fast", 1.5), ("same", 1.0))]
    datas = [(label_of(p), load_journal(p)) for p in paths]
    return ManyComparison(datas, merge_phases(datas))


@pytest.mark.parametrize("size", [(160, 48), (80, 24)])
async def test_three_journals_overlaid_with_their_verdict_table(tmp_path: Path,
                                                                size: tuple[int, int]) -> None:
    many = three(tmp_path)
    app = ManyCompareApp(many)
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        screen = app.compare_screen
        header = str(screen.query_one(ManyHeader).render())
        for letter, label in zip("ABC", ("base", "fast", "same"), strict=True):
            assert f"{letter} {label}" in header
        for spec in COMPARE_GRAPHS[:2]:
            graph = screen.query_one(f"#graph-{spec.metric}", MetricGraph)
            assert len(graph._more) == 1  # A, B and C
        tps = screen.query_one("#graph-load_tps", MetricGraph)
        if size == (80, 24):
            await pilot.press("t")  # the tables take their turn on a small screen
            await pilot.pause()
        table = screen.query_one(PhaseVerdictTable)
        cells = [[str(c) for c in table.get_row_at(i)] for i in range(table.row_count)]
        expected = sweep(many.tables["oltp_read_write"]).rows
        for row in expected:
            assert [f"{'ABC'[['base', 'fast', 'same'].index(row[0])]} {row[0]}", *row[1:]] \
                in cells
        assert any("1.50x higher" in c for r in cells for c in r)
        if size == (80, 24):
            await pilot.press("t")
        await pilot.press("s")  # A alone
        await pilot.pause()
        assert tps._only == 0 and "A only" in str(screen.query_one(ManyHeader).render())
        await pilot.press("s", "s", "s")  # B, C, then all again
        await pilot.pause()
        assert tps._only is None


def test_compare_of_three_opens_the_screen_on_a_terminal(monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    from knobtop import cli

    opened: list[ManyComparison] = []

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(ManyCompareApp, "run", lambda self, *a, **k: opened.append(self.many))
    monkeypatch.setattr(sys, "stdout", Terminal())
    assert cli.main(["compare", *map(str, RECORDED), "--baseline", "lab-read-write"]) == 0
    [many] = opened
    assert [label for label, _ in many.journals] == ["lab-read-write", "lab-80s",
                                                     "lab-point-select"]
    # two journals of one name cannot be told apart on screen or in a table
    assert cli.main(["compare", *map(str, RECORDED * 2), "--format", "tui"]) == 2


def test_more_journals_than_colours_are_refused_on_screen(tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]
                                                          ) -> None:
    from knobtop import cli

    paths = []
    for i in range(6):
        path = tmp_path / f"j{i}.knobtop.jsonl"
        path.write_bytes(RECORDED[0].read_bytes())
        paths.append(str(path))
    code = cli.main(["compare", *paths, "--format", "tui"])
    assert code == 2
    assert "the compare screen overlays up to 5" in capsys.readouterr().err
