"""The live screen on very small terminals: graphs squeezed to one or two rows each."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness import paths as repo_paths
from harness.ui import until, widget_text
from knobtop.journal import JournalReader
from knobtop.ui.app import KnobtopApp
from knobtop.ui.widgets.metric_graph import MetricGraph

RECORDED = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Tests never read the person's own ~/.config/knobtop."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("KNOBTOP_CONFIG", raising=False)
    monkeypatch.delenv("NO_COLOR", raising=False)


@pytest.mark.parametrize("size", [(80, 10), (80, 13), (80, 14), (40, 8)])
async def test_live_screen_renders_on_a_tiny_terminal(
    size: tuple[int, int], tmp_path: Path
) -> None:
    """At about 14 rows or fewer each graph got one row and rendering it raised
    ``ValueError: min() arg is an empty sequence`` (placing a marker's tag on a plot with
    no rows). Now every shown graph renders, a one-row graph as its title line."""
    reader = JournalReader(RECORDED)
    app = KnobtopApp(header=reader.header, events=list(reader))
    async with app.run_test(size=size) as pilot:
        await pilot.pause()
        graphs = list(app.live.query("#page-overview MetricGraph").results(MetricGraph))
        assert graphs
        shown = [g for g in graphs if g.region.height > 0]
        assert shown
        await until(pilot, lambda: all(any(line.strip() for line in widget_text(g))
                                       for g in shown))
        for graph in shown:
            lines = widget_text(graph)
            assert len(lines) == graph.region.height
            title = graph._graph_title
            assert title[:4] in lines[0]  # the title line, maybe shortened ("Host C…")
        path = Path(app.save_screenshot(filename="tiny.svg", path=str(tmp_path)))
        assert path.stat().st_size > 0
    assert app.return_code in (None, 0)
