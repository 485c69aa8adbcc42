"""LiveScreen: status bar, graphs, knob panel and journal pane; reflows below 120 columns."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.containers import Container
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer

from knobtop.ui.widgets.graph_grid import GraphGrid
from knobtop.ui.widgets.host_panel import HostPanel
from knobtop.ui.widgets.journal_pane import JournalPane
from knobtop.ui.widgets.knob_panel import KnobPanel
from knobtop.ui.widgets.recipe_panel import RecipePanel
from knobtop.ui.widgets.status_bar import StatusBar

NARROW_BELOW = 120


class LiveScreen(Screen[None]):
    DEFAULT_CSS = """
    LiveScreen #main {
        layout: horizontal;
        height: 1fr;
    }
    LiveScreen #side {
        layout: vertical;
        width: 56;
    }
    LiveScreen KnobPanel {
        width: 1fr;
    }
    LiveScreen JournalPane {
        width: 1fr;
    }
    LiveScreen.-narrow #main {
        layout: vertical;
    }
    LiveScreen.-narrow #side {
        layout: horizontal;
        width: 100%;
        height: 9;
    }
    LiveScreen.-narrow KnobPanel {
        width: 46;
    }
    LiveScreen.-narrow HostPanel {
        display: none;
    }
    LiveScreen.-narrow RecipePanel {
        max-height: 10;
    }
    /* Narrow and a recipe's results shown: the graphs would get a row each; the results
       (scrollable) take their place, the knobs and journal stay. */
    LiveScreen.-narrow.-recipe-results #graphs {
        display: none;
    }
    LiveScreen.-narrow.-recipe-results #main {
        height: auto;
    }
    LiveScreen.-narrow.-recipe-results RecipePanel {
        height: 1fr;
        max-height: 100%;
    }
    """

    class Ready(Message):
        """The screen's widgets exist: the app may fill them."""

    def compose(self) -> ComposeResult:
        yield StatusBar(id="status")
        yield RecipePanel(id="recipe")
        with Container(id="main"):
            yield GraphGrid(id="graphs")
            with Container(id="side"):
                yield KnobPanel(id="knobs")
                yield HostPanel(id="hosts")
                yield JournalPane(id="journal")
        yield Footer()

    def on_resize(self, event: events.Resize) -> None:
        self._reflow(event.size.width)

    def _reflow(self, width: int) -> None:
        narrow = width < NARROW_BELOW
        self.set_class(narrow, "-narrow")
        self.query_one(KnobPanel).set_compact(narrow)

    def on_mount(self) -> None:
        self._reflow(self.size.width)
        self.query_one(KnobPanel).focus()
        self.post_message(self.Ready())
