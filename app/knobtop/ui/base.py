"""KnobtopBase: what every knobtop screen app shares: themes and remapped keys from the
config, the help screen, the command palette's actions, the graph window, screenshots."""

from __future__ import annotations

import io
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

from rich.console import Console
from rich.text import Text
from textual import events
from textual.app import App
from textual.binding import Binding
from textual.driver import Driver
from textual.message import Message
from textual.notifications import SeverityLevel

from knobtop.config import UiConfig
from knobtop.metrics.board import MetricBoard
from knobtop.printable import printable
from knobtop.safefile import NotOwnFile, write_new
from knobtop.ui.commands import ActionsProvider, binding_actions
from knobtop.ui.dirtyrender import render_dirty_only
from knobtop.ui.keynames import answer_known_keys
from knobtop.ui.keyqueue import KeyQueue
from knobtop.ui.leanstrips import lean_strip_caches
from knobtop.ui.look import apply_look
from knobtop.ui.screens.help import GRAPHS_NOTE, HelpScreen
from knobtop.ui.screens.live import LiveScreen
from knobtop.ui.widgets.graph_grid import GRAPHS, PAGES, WINDOWS, GraphGrid, graph_id
from knobtop.ui.widgets.knob_panel import KnobPanel
from knobtop.ui.widgets.metric_graph import MetricGraph

PaletteEntry = tuple[str, str, Callable[[], Any]]


class ScreenApp(App[int]):
    """What every knobtop app shares: the config's themes and keys (problems become
    notices), the keys of a burst handed over in the order typed (a dialog's opener first,
    then what was typed into it), and the palette's "Save screenshot" going where the key
    S saves."""

    # The app's messages that come from elsewhere than the keys (a session's events): the
    # key queue does not wait for them to stop (keyqueue.py).
    OUTSIDE_MESSAGES: ClassVar[tuple[type[Message], ...]] = ()

    def __init__(self, config: UiConfig | None = None) -> None:
        lean_strip_caches()
        render_dirty_only()
        answer_known_keys()
        super().__init__()
        self.config = config or UiConfig()
        self.screenshot_dir: Path = Path.cwd()
        self.key_queue = KeyQueue(self, super().on_event, self.OUTSIDE_MESSAGES)

    async def on_event(self, event: events.Event) -> None:
        """Keys and pastes from the terminal go through the key queue (keyqueue.py)."""
        if self.key_queue.takes(event):
            await self.key_queue.arrived(event)
        else:
            await super().on_event(event)

    def get_driver_class(self) -> type[Driver]:
        """Textual's choice of driver, with the quiet input thread where that is the
        terminal driver for Linux (not under knobtop serve, not in tests' headless runs)."""
        driver = super().get_driver_class()
        if (driver.__module__, driver.__qualname__) == ("textual.drivers.linux_driver",
                                                        "LinuxDriver"):
            from knobtop.ui.quietinput import QuietLinuxDriver

            return QuietLinuxDriver
        return driver

    def _on_mount(self) -> None:
        # Under textual-serve (knobtop serve) each packet must reach the parent whole; the
        # driver exists from here (the subclasses' on_mount run too).
        from knobtop.ui.webwrite import harden

        harden(self._driver)

    def apply_config(self) -> None:
        """Themes and keys (call from on_mount); problems become notices."""
        for problem in apply_look(self, self.config):
            self.notify(problem, title="knobtop config", severity="warning", timeout=12,
                        markup=False)

    def notify(self, message: str, *, title: str = "", severity: SeverityLevel = "information",
               timeout: float | None = None, markup: bool = True) -> None:
        """Textual's notice, its text made printable: a notice may quote a server's error, a
        remote host's output or a file's name (issue 36), and a control sequence in it
        would reach the terminal."""
        super().notify(printable(message), title=printable(title), severity=severity,
                       timeout=timeout, markup=markup)

    def exit_saying(self, text: str, return_code: int = 2) -> None:
        """End the app and leave ``text`` on the terminal: plain text (never markup), made
        printable (it may quote a server's error or a file's name)."""
        self.exit(return_code=return_code, message=Text(printable(text)))

    def _stamp(self) -> str:
        """The time in a screenshot's name."""
        return time.strftime("%Y%m%d-%H%M%S")

    def deliver_screenshot(
        self, filename: str | None = None, path: str | None = None,
        time_format: str | None = None,
    ) -> str | None:
        """The palette's "Save screenshot": Textual's own writes to ~/Downloads and fails
        where there is none; knobtop saves where the key S does."""
        return self.action_save_svg()

    def action_save_svg(self) -> str | None:
        raise NotImplementedError


class KnobtopBase(ScreenApp):
    """The apps that show the graph pages (live, follow, replay): pages, the graph window,
    help and palette, screenshots of the screen and of each graph."""

    COMMANDS = App.COMMANDS | {ActionsProvider}
    BINDINGS = [
        Binding("question_mark,f1", "help", "Help", id="app.help"),
        Binding("v", "window", "Window", id="view.window"),
        Binding("1", "page('overview')", "Overview", id="view.overview", show=False),
        Binding("2", "page('innodb')", "InnoDB", id="view.innodb", show=False),
        Binding("3", "page('myrocks')", "MyRocks", id="view.myrocks", show=False),
        Binding("4", "page('incident')", "Incident page", id="view.incident", show=False),
        Binding("5", "page('linkbench')", "LinkBench", id="view.linkbench", show=False),
        Binding("S", "save_svg", "Screenshot", id="app.screenshot", show=False),
        Binding("ctrl+g", "save_graphs", "Graph SVGs", id="app.screenshot_graphs",
                show=False),
    ]

    def __init__(self, config: UiConfig | None = None) -> None:
        super().__init__(config)
        self.live = LiveScreen()

    # -- help and palette -------------------------------------------------------------

    def key_bindings(self) -> list[Binding]:
        """This app's bindings plus the live screen's widgets' (for help and palette), less
        the ones ``check_action`` refuses."""
        out: list[Binding] = []
        seen: set[str] = set()
        for cls in (type(self), KnobPanel):
            for klass in cls.__mro__:
                for binding in getattr(klass, "BINDINGS", ()):
                    if isinstance(binding, Binding) and binding.id and binding.id not in seen:
                        seen.add(binding.id)
                        out.append(binding)
        # What this app refuses (a follower's session actions) is not offered either.
        return [b for b in out if self.check_action(b.action.partition("(")[0], ()) is not False]

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        self.push_screen(HelpScreen(self.key_bindings(), self.config.keys,
                                    f"{self.title}: keys", note=GRAPHS_NOTE))

    def palette_actions(self) -> list[PaletteEntry]:
        out = binding_actions(self, self.key_bindings(), self.config.keys)
        for page, (title, _specs) in PAGES.items():
            out.append((f"Graphs: {title}", "show this page of graphs",
                        partial(self.action_page, page)))
        for seconds in WINDOWS:
            out.append((f"Graph window: {_minutes(seconds)}", "show this much history",
                        partial(self.set_window, seconds)))
        for spec in GRAPHS:
            out.append((f"Screenshot graph: {spec.title}", "save this graph as SVG",
                        partial(self.screenshot_graph, spec.metric)))
        return out

    # -- graph window ----------------------------------------------------------------

    def set_window(self, seconds: float) -> None:
        self.live.query_one(GraphGrid).window = seconds
        self.notify(f"graphs show the last {_minutes(seconds)}", timeout=3)
        self.window_changed()

    def window_changed(self) -> None:
        """Repaint after the window or the page changed (the apps override)."""

    def action_page(self, page: str) -> None:
        grid = self.live.query_one(GraphGrid)
        grid.show_page(page)
        board = self.current_board()
        if page == "myrocks" and board is not None and not board.has_rocksdb:
            self.notify("this server reports no RocksDB counters (MyRocks not loaded)",
                        severity="warning", timeout=5)
        self.window_changed()

    def current_board(self) -> MetricBoard | None:
        """The board the graphs show (the apps override)."""
        return None

    def action_window(self) -> None:
        grid = self.live.query_one(GraphGrid)
        later = [w for w in WINDOWS if w > grid.window]
        self.set_window(later[0] if later else WINDOWS[0])

    # -- screenshots ----------------------------------------------------------------

    def _save_svg(self, name: str, svg: str) -> str | None:
        """In a terminal, ``name`` in ``screenshot_dir``; in a browser (``knobtop serve``) a
        download for that browser, so a viewer never writes files on the watched machine.
        Returns where it went, for the notice; None (said in a notice) when it could not be
        written."""
        if self.is_web:
            self.deliver_text(io.StringIO(svg), save_filename=name,
                              mime_type="image/svg+xml", encoding="utf-8")
            return f"{name}, sent to your browser"
        try:
            # A new file of this user's own: never written through a link planted at the
            # name (NAME-2.svg when a screenshot of this second is there already).
            return str(write_new(self.screenshot_dir, name, svg.encode()))
        except NotOwnFile as exc:
            self.notify(f"screenshot not saved: {exc}", severity="error", timeout=12,
                        markup=False)
        except OSError as exc:
            self.notify(f"screenshot not saved to {self.screenshot_dir / name}: "
                        f"{exc.strerror or exc}. Fix: make {self.screenshot_dir} writable",
                        severity="error", timeout=12, markup=False)
        return None

    def action_save_svg(self) -> str | None:
        """The whole screen as an SVG in ``screenshot_dir`` (the journal's folder)."""
        where = self._save_svg(f"knobtop-{self._stamp()}.svg", self.export_screenshot())
        if where is not None:
            self.notify(f"screenshot saved: {where}", timeout=6, markup=False)
        return where

    def action_save_graphs(self) -> list[str]:
        """Each graph of the page on screen as its own SVG."""
        grid = self.live.query_one(GraphGrid)
        if grid.page not in PAGES:
            self.notify(f"the {grid.page_title} page has no graphs: S saves the screen",
                        timeout=5, markup=False)
            return []
        specs = PAGES[grid.page][1]
        saved = [where for spec in specs
                 if (where := self.screenshot_graph(spec.metric, grid.page, notify=False))]
        where = "sent to your browser" if self.is_web else f"saved in {self.screenshot_dir}"
        self.notify(f"{len(saved)} graph SVGs {where}", timeout=6, markup=False)
        return saved

    def screenshot_graph(self, metric: str, page: str = "overview", *,
                         notify: bool = True) -> str | None:
        """One graph as an SVG (its current size and theme colours)."""
        graph = self.live.query_one(f"#{graph_id(page, metric)}", MetricGraph)
        width, height = graph.size
        console = Console(record=True, width=max(width, 10), file=io.StringIO(),
                          color_system="truecolor", legacy_windows=False)
        for y in range(height):
            line = Text()
            for segment in graph.render_line(y):
                line.append(segment.text, segment.style)
            console.print(line, overflow="crop", no_wrap=True)
        specs = PAGES[page][1]
        title = next((g.title for g in specs if g.metric == metric), metric)
        where = self._save_svg(f"knobtop-{metric}-{self._stamp()}.svg",
                               console.export_svg(title=f"knobtop: {title}"))
        if notify and where is not None:
            self.notify(f"graph saved: {where}", timeout=6, markup=False)
        return where


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:g} min"
