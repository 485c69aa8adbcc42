"""Every key of the live screen, its dialogs and its palette, pressed in a real tmux pane on
`knobtop lab`'s screen and session processes over their socket (issue 37, item 2), each
effect read where it lands: the server, the journal, the file system, or the screen for
what is only a view. ``KEYS`` is the table of every key and the tests that press it (here
and in the other tmux modules); the first test holds it against the bindings the code
declares, so a key added without a test fails here. One sandbox and one lab screen for
the module, in file order; a recipe's screen (``run --tui``) for `a` at the end."""
# Over 500 lines: one test per key group of one shared screen; the table of keys and the
# screen's helpers belong with them.

from __future__ import annotations

import asyncio
import re
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pytest

from conftest import show_global
from harness import paths as repo_paths
from harness.cli import knobtop_argv
from harness.keys import declared, live_screen_bindings
from harness.tmux import TmuxServer, first_hit, pane_server
from knobtop.journal import Change, JournalReader
from knobtop.journal.events import (
    End,
    Event,
    Incident,
    Mark,
    Note,
    OutsideChange,
    Phase,
    RecipeRun,
    Restart,
)
from knobtop.lab import Sandbox
from knobtop.server.link import ConnectionInfo, ServerLink
from knobtop.ui.app import KnobtopApp
from knobtop.ui.widgets.graph_grid import GRAPHS
from knobtop.ui.widgets.knob_panel import KnobPanel

T = TypeVar("T")

# (binding id, key) -> the tests that press that key in a real tmux pane against `knobtop
# lab` (or `run --tui`); "module::test" for another module's, a bare name for this one's.
BURSTS, REACH, QUIT_KEEP = "test_bursts_tmux", "test_reach", "test_quit_keep"
KEYS: dict[tuple[str, str], tuple[str, ...]] = {
    ("app.quit", "q"): (f"{BURSTS}::test_quit_typed_behind_a_change_reverts_it_and_quits",
                        "test_quit_cancel_stays_whichever_way_quit_was_asked"),
    ("quit.revert", "r"): (f"{BURSTS}::test_quit_typed_behind_a_change_reverts_it_and_quits",
                           f"{REACH}::test_the_live_screen_asks_before_a_reach_variable_and_"
                           "journals_it"),
    ("quit.keep", "k"): (f"{QUIT_KEEP}::test_keep_on_a_sandbox_left_running_is_said_by_the_"
                         "next_session",),
    ("quit.revert_all", "a"): ("test_quit_revert_all_puts_an_outside_change_back_too",),
    ("quit.cancel", "c"): ("test_quit_cancel_stays_whichever_way_quit_was_asked",),
    ("quit.cancel", "escape"): ("test_quit_cancel_stays_whichever_way_quit_was_asked",),
    ("knob.focus", "k"): ("test_k_gives_the_keys_back_to_the_knob_panel_and_e_edits",),
    ("knob.edit", "enter"): (f"{BURSTS}::test_enter_and_a_value_in_one_burst_set_that_value",
                             "test_a_static_knob_asks_before_its_restart_and_u_undoes_it"),
    ("knob.edit", "e"): ("test_k_gives_the_keys_back_to_the_knob_panel_and_e_edits",),
    ("knob.undo", "u"): ("test_undo_tmux::test_u_undoes_the_last_change_on_the_live_screen",
                         "test_a_static_knob_asks_before_its_restart_and_u_undoes_it",
                         "test_keys_with_nothing_to_act_on_say_so"),
    ("knob.baseline", "b"): (f"{BURSTS}::test_revert_typed_behind_b_answers_its_dialog",
                             "test_b_asks_first_and_n_or_escape_change_nothing",
                             "test_b_after_an_outside_change_asks_whose_to_revert"),
    ("confirm.yes", "y"): (f"{BURSTS}::test_revert_typed_behind_b_answers_its_dialog",
                           "test_a_static_knob_asks_before_its_restart_and_u_undoes_it",
                           "test_a_asks_then_aborts_the_recipe_and_restores_its_baseline"),
    ("confirm.no", "n"): ("test_a_static_knob_asks_before_its_restart_and_u_undoes_it",
                          "test_b_asks_first_and_n_or_escape_change_nothing",
                          "test_a_asks_then_aborts_the_recipe_and_restores_its_baseline"),
    ("confirm.no", "escape"): ("test_a_static_knob_asks_before_its_restart_and_u_undoes_it",
                               "test_b_asks_first_and_n_or_escape_change_nothing"),
    ("revert.ours", "y"): ("test_b_after_an_outside_change_asks_whose_to_revert",),
    ("revert.all", "a"): ("test_b_after_an_outside_change_asks_whose_to_revert",),
    ("revert.no", "n"): ("test_b_after_an_outside_change_asks_whose_to_revert",),
    ("revert.no", "escape"): ("test_b_after_an_outside_change_asks_whose_to_revert",),
    ("load.toggle", "l"): ("test_l_stops_and_starts_the_load_and_p_prepares_its_tables",),
    ("load.prepare", "P"): ("test_l_stops_and_starts_the_load_and_p_prepares_its_tables",),
    ("load.threads_up", "plus"): ("test_plus_equals_and_minus_change_the_loads_threads",),
    ("load.threads_up", "equals_sign"): (
        "test_plus_equals_and_minus_change_the_loads_threads",),
    ("load.threads_down", "minus"): ("test_plus_equals_and_minus_change_the_loads_threads",),
    ("load.threads", "t"): (f"{BURSTS}::test_threads_and_a_workload_typed_behind_t_and_w_"
                            "start_their_phases",
                            "test_t_and_w_dialogs_cancel_and_refuse_a_bad_value"),
    ("load.workload", "w"): (f"{BURSTS}::test_threads_and_a_workload_typed_behind_t_and_w_"
                             "start_their_phases",
                             "test_t_and_w_dialogs_cancel_and_refuse_a_bad_value"),
    ("choice.cancel", "escape"): ("test_t_and_w_dialogs_cancel_and_refuse_a_bad_value",),
    ("prompt.cancel", "escape"): ("test_tmux::test_lab_in_tmux_at_80x24_resized_and_followed",
                                  "test_t_and_w_dialogs_cancel_and_refuse_a_bad_value",
                                  "test_k_gives_the_keys_back_to_the_knob_panel_and_e_edits"),
    ("journal.note", "n"): (f"{BURSTS}::test_a_note_and_a_mark_typed_behind_n_are_journaled_"
                            "in_order", "test_tmux::test_lab_in_tmux_at_80x24_resized_and_"
                            "followed"),
    ("journal.mark", "m"): (f"{BURSTS}::test_a_note_and_a_mark_typed_behind_n_are_journaled_"
                            "in_order", "test_keys_with_nothing_to_act_on_say_so"),
    ("recipe.abort", "a"): ("test_keys_with_nothing_to_act_on_say_so",
                            "test_a_asks_then_aborts_the_recipe_and_restores_its_baseline"),
    ("app.help", "question_mark"): ("test_help_lists_every_key_and_each_close_key_closes_it",),
    ("app.help", "f1"): ("test_help_lists_every_key_and_each_close_key_closes_it",),
    **{("help.close", key): ("test_help_lists_every_key_and_each_close_key_closes_it",)
       for key in ("escape", "q", "question_mark", "f1")},
    ("view.window", "v"): ("test_v_steps_through_the_graph_windows",),
    ("view.overview", "1"): ("test_page_keys_show_their_pages_and_4_samples_incidents",),
    ("view.innodb", "2"): ("test_page_keys_show_their_pages_and_4_samples_incidents",),
    ("view.myrocks", "3"): ("test_page_keys_show_their_pages_and_4_samples_incidents",),
    ("view.incident", "4"): ("test_page_keys_show_their_pages_and_4_samples_incidents",
                             "test_own_aborts::test_the_live_incident_page_shows_the_label"),
    ("view.linkbench", "5"): ("test_page_keys_show_their_pages_and_4_samples_incidents",),
    ("app.screenshot", "S"): ("test_screenshots_are_private_svg_files",),
    ("app.screenshot_graphs", "ctrl+g"): ("test_screenshots_are_private_svg_files",
                                          "test_page_keys_show_their_pages_and_4_samples_"
                                          "incidents"),
}
# Textual's own keys on the live screen (no knobtop binding id): the palette, its commands
# (knobtop's actions by name, the knob picker, Textual's system commands), ctrl+q, ctrl+c, tab.
TEXTUAL_KEYS: dict[str, tuple[str, ...]] = {
    "ctrl+p (palette: knob picker)": (f"{REACH}::test_the_live_screen_asks_before_a_reach_"
                                      "variable_and_journals_it",
                                      f"{BURSTS}::test_the_palette_typed_in_one_burst_opens_"
                                      "the_knobs_dialog"),
    "ctrl+p (palette: actions, pages, windows, graph screenshots)": (
        "test_the_palette_runs_actions_by_name", "test_screenshots_are_private_svg_files"),
    "ctrl+p (palette: Screenshot, Quit)": ("test_screenshots_are_private_svg_files",
                                           "test_quit_cancel_stays_whichever_way_quit_was_"
                                           "asked"),
    "ctrl+q": ("test_quit_cancel_stays_whichever_way_quit_was_asked",),
    "ctrl+c": ("test_quit_cancel_stays_whichever_way_quit_was_asked",),
    "tab": ("test_k_gives_the_keys_back_to_the_knob_panel_and_e_edits",),
}


def test_every_key_of_the_live_screen_and_its_dialogs_has_a_tmux_test() -> None:
    """The table above against the bindings the code declares (each key of each), and each
    test it names against the test files."""
    declared = {(bid, key) for bid, binding in live_screen_bindings().items()
                for key in binding.key.split(",")}
    assert sorted(declared - set(KEYS)) == []  # a key nobody presses in tmux
    assert sorted(set(KEYS) - declared) == []  # a key the code no longer has
    for test in {t for tests in (*KEYS.values(), *TEXTUAL_KEYS.values()) for t in tests}:
        module, _, name = test.rpartition("::")
        source = repo_paths.test_module_source(module or __name__.rpartition('.')[2]).read_text()
        assert f"\ndef {name}(" in source, test


# -- the lab's screen ------------------------------------------------------------------


async def sql(info: ConnectionInfo, statement: str) -> list[Any]:
    """One statement from another client (not knobtop's): its rows."""
    link = ServerLink(info)
    await link.connect()
    try:
        return list(await link.query(statement))
    finally:
        await link.close()


def notices(screen: list[str]) -> str:
    """The text of the notices on ``screen`` (each row's part right of the box's edge)."""
    rows = [r.rpartition("▌")[2].rstrip(" │╯─") for r in screen if "▌" in r]
    return " ".join(" ".join(rows).split())


@dataclass
class KeyScreen:
    tmux: TmuxServer
    pane: str
    journal: Path
    info: ConnectionInfo

    def send(self, *keys: str) -> None:
        """Keys as a person presses them (a text that is no key name is typed as is)."""
        self.tmux.run("send-keys", "-t", self.pane, *keys)

    def shows(self, what: str, found: Callable[[list[str]], bool] | None = None,
              timeout: float = 30) -> list[str]:
        """The pane once it shows ``what`` (or ``found`` holds for it), bounded."""
        test = found or (lambda s: what in "\n".join(s))
        return self.tmux.wait_for(self.pane, test, timeout=timeout, what=what)

    def says(self, text: str, timeout: float = 30) -> None:
        """A notice with ``text`` (its lines joined: a long one wraps in its box)."""
        self.shows(f"the notice {text!r}", lambda s: text in notices(s), timeout)

    def gone(self, what: str) -> None:
        self.shows(f"{what} gone", lambda s: what not in "\n".join(s))

    def events(self) -> list[Event]:
        return list(JournalReader(self.journal)) if self.journal.exists() else []

    def of(self, kind: type[T]) -> list[T]:
        return [e for e in self.events() if isinstance(e, kind)]

    def wait_until(self, what: str, found: Callable[[], T | None], timeout: float = 30) -> T:
        """Poll until ``found`` returns something, bounded; the screen's end ends the wait."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            value = found()
            if value:
                return value
            if self.tmux.display(self.pane, "#{pane_dead}") == "1":
                break
            time.sleep(0.2)
        raise AssertionError(f"{what}: not seen within {timeout:g} s; the pane shows:\n"
                             + "\n".join(self.tmux.capture(self.pane)))

    def new(self, kind: type[T], before: int, count: int = 1, timeout: float = 30) -> list[T]:
        """The events of ``kind`` after the first ``before``, once ``count`` are there."""
        return self.wait_until(f"{count} new {kind.__name__} event(s)", lambda: (
            got[before:] if len(got := self.of(kind)) >= before + count else None), timeout)

    def barrier(self) -> None:
        """m, and its mark in the journal: every key pressed before it was handled (keys
        are handled in the order typed; an open dialog would take the m as text)."""
        before = len(self.of(Mark))
        self.send("m")
        self.new(Mark, before)

    def server(self, knob: str) -> str:
        return asyncio.run(show_global(self.info, knob))

    def load_connections(self) -> int:
        rows = asyncio.run(sql(self.info, "SELECT COUNT(*) FROM information_schema.PROCESSLIST "
                                          "WHERE DB = 'sbtest'"))
        return int(rows[0][0])

    def palette(self, query: str, hit: str | None = None) -> None:
        """Ctrl+P, ``query`` typed, Enter once its first hit is ``hit`` (the query)."""
        self.send("C-p")
        self.shows("the palette", lambda s: any(r.strip().startswith("🔎") for r in s))
        self.send("-l", query)
        self.shows(f"{hit or query} first in the palette",
                   lambda s: first_hit(s) == (hit or query))
        self.send("Enter")

    def set_knob(self, knob: str, value: str) -> None:
        """The palette's knob picker, the knob's dialog, a value, Enter: journaled ok."""
        before = len(self.of(Change))
        self.palette(knob)
        self.shows(f"the dialog of {knob}", lambda s: any(f"Set {knob}" in r for r in s))
        self.send("C-u")
        self.send("-l", value)
        self.send("Enter")
        assert [(c.knob, c.requested, c.result) for c in self.new(Change, before)] == [
            (knob, value, "ok")]

    def outside(self, knob: str, value: int) -> None:
        """Another client sets ``knob``; back once the session journaled it as outside."""
        before = len(self.of(OutsideChange))
        asyncio.run(sql(self.info, f"SET GLOBAL {knob} = {value}"))
        found = self.new(OutsideChange, before, timeout=30)
        assert [(e.knob, e.new) for e in found] == [(knob, str(value))]


@pytest.fixture(scope="module")
def tmux(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TmuxServer]:
    server = pane_server(tmp_path_factory.mktemp("keys-tmux"))
    try:
        yield server
    finally:
        server.kill()


@pytest.fixture(scope="module")
def screen(lab: tuple[Path, ConnectionInfo], tmux: TmuxServer,
           tmp_path_factory: pytest.TempPathFactory) -> KeyScreen:
    """The lab's live screen at 160x48 with a slow sysbench load of one thread running,
    the knob panel focused with its cursor on the first knob."""
    where, info = lab
    tmp = tmp_path_factory.mktemp("keys")
    journal = tmp / "keys.knobtop.jsonl"
    session = f"keys-{tmux.socket}"
    tmux.new_session(session, "lab", 160, 48, [
        *knobtop_argv(), "lab", "--dir", str(where), "--journal", str(journal),
        "--load", "oltp_point_select", "--threads", "1", "--rate", "5", "--tables", "1",
        "--table-size", "100", "--keep-running"], cwd=tmp)
    shown = KeyScreen(tmux, f"{session}:lab", journal, info)
    shown.shows("the live screen with its knobs", lambda s: any(
        r.partition("│ innodb_io_capacity ")[2].split()[:1] == ["200"] for r in s), 300)
    shown.wait_until("the load running", lambda: shown.of(Phase), timeout=120)
    return shown


@pytest.mark.integration
def test_help_lists_every_key_and_each_close_key_closes_it(screen: KeyScreen) -> None:
    """? and F1 open the help, which lists every binding of the screen and its knob panel
    by id; Escape, q, ? and F1 close it (q there closes the help, and quits nothing)."""
    title = "knobtop: keys"
    ids = {b.id for b in (*declared(KnobtopApp), *declared(KnobPanel))}
    for opener, closer in (("?", "Escape"), ("F1", "q"), ("?", "?"), ("F1", "F1")):
        screen.send(opener)
        text = "\n".join(screen.shows(title))
        if opener == "?":
            # The title comes first; on a busy machine the table's rows follow it a paint or
            # two later: wait for every id (bounded), then check as before.
            text = "\n".join(screen.shows("every binding id in the help", lambda s: ids <= set(
                re.findall(r"\b([a-z]+\.[a-z_]+)\b", "\n".join(s)))))
            listed = set(re.findall(r"\b([a-z]+\.[a-z_]+)\b", text))
            assert ids <= listed, sorted(ids - listed)
        screen.send(closer)
        screen.gone(title)
    screen.barrier()  # the screen still takes keys: nothing quit it
    assert not screen.of(End)


@pytest.mark.integration
def test_keys_with_nothing_to_act_on_say_so(screen: KeyScreen) -> None:
    """u with no change, b with every knob at its baseline, a with no recipe: each says
    so, and nothing is changed or journaled."""
    for key, said in (("u", "nothing to undo"), ("b", "nothing to revert"),
                      ("a", "no recipe is running")):
        screen.send(key)
        screen.says(said)
    screen.barrier()
    assert not screen.of(Change) and not screen.of(RecipeRun)


@pytest.mark.integration
def test_page_keys_show_their_pages_and_4_samples_incidents(screen: KeyScreen) -> None:
    """2, 3, 5 and 1 show their graphs (3 says the lab has no MyRocks); 4 shows the
    incident page and the session samples it into the journal, where Ctrl+G saves no
    graph."""
    for key, page, graph in (("2", "InnoDB", "Row lock waits"), ("3", "MyRocks",
                                                                 "Block cache hit"),
                             ("5", "LinkBench", "getlinklist p99")):
        screen.send(key)
        screen.shows(f"the {page} page", lambda s, p=page, g=graph: s[0].split()[:1] == [p]
                     and g in "\n".join(s))
        if key == "3":
            screen.says("this server reports no RocksDB counters")
    before = len(screen.of(Incident))
    screen.send("4")
    screen.shows("the incident page", lambda s: s[0].split()[:1] == ["Incident"])
    assert screen.new(Incident, before)[0].threads >= 1  # the server's threads, sampled
    screen.send("C-g")
    screen.says("the Incident page has no graphs")
    screen.send("1")
    screen.shows("the overview", lambda s: s[0].split()[:1] == ["MariaDB"]
                 and "Server TPS" in "\n".join(s))


@pytest.mark.integration
def test_v_steps_through_the_graph_windows(screen: KeyScreen) -> None:
    """From 2 minutes: 5, 15, 60, 1 and 2 again, each said and the time axis redrawn (its
    left label: the window's start, before any marker of this young session)."""
    for minutes, axis in ((5, "-5m"), (15, "-15m"), (60, None), (1, "-1m"), (2, None)):
        screen.send("v")
        screen.says(f"graphs show the last {minutes} min")
        if axis is not None:
            screen.shows(f"the axis from {axis}", lambda s, a=axis: any(
                f" {a} " in r for r in s))


def svgs(folder: Path, pattern: str) -> set[Path]:
    return {p for p in folder.iterdir() if re.fullmatch(pattern, p.name)}


@pytest.mark.integration
def test_screenshots_are_private_svg_files(screen: KeyScreen) -> None:
    """S and the palette's Screenshot save the screen, Ctrl+G each overview graph, the
    palette's "Screenshot graph" one graph: new SVG files beside the journal, 0600."""
    folder = screen.journal.parent
    stamp = r"\d{8}-\d{6}(-\d+)?\.svg"
    whole = rf"knobtop-{stamp}"

    def saved(pattern: str, before: set[Path], count: int = 1) -> set[Path]:
        new = screen.wait_until(f"{count} new {pattern}", lambda: (
            got - before if len(got := svgs(folder, pattern) - before) >= count else None))
        for path in new:
            assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
            assert path.read_text().startswith("<svg"), path
        return new

    before = svgs(folder, whole)
    screen.send("S")
    [shot] = saved(whole, before)
    assert "Server&#160;TPS" in shot.read_text()
    screen.says("screenshot saved:")
    graphs = {spec.metric: rf"knobtop-{spec.metric}-{stamp}" for spec in GRAPHS}
    before = {p for pattern in graphs.values() for p in svgs(folder, pattern)}
    screen.send("C-g")
    for metric, pattern in graphs.items():
        [path] = saved(pattern, before)
        assert "knobtop:&#160;" in path.read_text(), metric  # its title
    screen.says(f"{len(GRAPHS)} graph SVGs saved in")
    before = svgs(folder, graphs["qps"])
    screen.palette("Screenshot graph: Server QPS")
    saved(graphs["qps"], before)
    before = svgs(folder, whole)
    screen.palette("Screenshot")  # Textual's system command: saved where S saves
    saved(whole, before)


@pytest.mark.integration
def test_k_gives_the_keys_back_to_the_knob_panel_and_e_edits(screen: KeyScreen) -> None:
    """Tab takes the focus off the knobs (Enter then opens nothing), k gives it back
    (Enter opens the highlighted knob's dialog); e opens it too; Escape closes it, and
    nothing is changed."""
    dialog = "Set innodb_adaptive_flushing"
    screen.send("Tab")
    screen.send("Enter")
    screen.barrier()  # the m would have gone into a dialog's field
    assert dialog not in "\n".join(screen.tmux.capture(screen.pane))
    for keys in (("k", "Enter"), ("e",)):
        screen.send(*keys)
        screen.shows(dialog)
        screen.send("Escape")
        screen.gone(dialog)
    screen.barrier()
    assert not screen.of(Change)


def phase_started(screen: KeyScreen, before: int, threads: int) -> None:
    """A new phase of ``threads`` threads, and that many load connections on the server."""
    started = screen.wait_until(f"a phase of {threads} thread(s)", lambda: [
        p for p in screen.of(Phase)[before:] if p.action == "start" and p.threads == threads])
    assert started[0].workload == "oltp_point_select"
    screen.wait_until(f"{threads} load connection(s) on the server",
                      lambda: screen.load_connections() == threads)


@pytest.mark.integration
def test_plus_equals_and_minus_change_the_loads_threads(screen: KeyScreen) -> None:
    """+ and = double the load's threads, - halves them; at 1, - says so."""
    for key, threads in (("+", 2), ("=", 4), ("-", 2), ("-", 1)):
        before = len(screen.of(Phase))
        screen.send(key)
        phase_started(screen, before, threads)
        screen.shows(f"▶ oltp_point_select x{threads} ", lambda s, t=threads: (
            f"▶ oltp_point_select x{t} " in s[0]))
    before = len(screen.of(Phase))
    screen.send("-")
    screen.says("already at 1 thread")
    screen.barrier()
    assert screen.of(Phase)[before:] == []


@pytest.mark.integration
def test_t_and_w_dialogs_cancel_and_refuse_a_bad_value(screen: KeyScreen) -> None:
    """t then Escape, t with a word, w then Escape: no new load phase."""
    before = len(screen.of(Phase))
    screen.send("t")
    screen.shows("sysbench threads")
    screen.send("Escape")
    screen.gone("sysbench threads")
    screen.send("t")
    screen.shows("sysbench threads")
    screen.send("-l", "abc")
    screen.send("Enter")
    screen.says("threads must be a number from 1 to 1024, not 'abc'")
    screen.send("w")
    screen.shows("the picker", lambda s: "load workload" in "\n".join(s)
                 and "oltp_point_select  (now)" in "\n".join(s))
    screen.send("Escape")
    screen.gone("load workload")
    screen.barrier()
    assert screen.of(Phase)[before:] == []
    assert screen.load_connections() == 1


@pytest.mark.integration
def test_l_stops_and_starts_the_load_and_p_prepares_its_tables(screen: KeyScreen) -> None:
    """P refuses while the load runs; l stops it (its connections leave the server); with
    its table dropped by another client, P makes it again (100 rows); l starts it."""
    marks = len(screen.of(Mark))
    screen.send("P")
    screen.says("stop the load before preparing its tables")
    before = len(screen.of(Phase))
    screen.send("l")
    assert [(p.action, p.threads) for p in screen.new(Phase, before)] == [("stop", 1)]
    screen.shows("load stopped", lambda s: "load stopped" in s[0])
    screen.wait_until("no load connection", lambda: screen.load_connections() == 0)
    assert screen.of(Mark)[marks:] == []  # the refused P prepared nothing
    asyncio.run(sql(screen.info, "DROP TABLE sbtest.sbtest1"))
    screen.send("P")
    assert [m.label for m in screen.new(Mark, marks, 2, timeout=120)] == [
        "prepare 1 sysbench tables x 100 rows", "tables ready"]
    assert asyncio.run(sql(screen.info, "SELECT COUNT(*) FROM sbtest.sbtest1"))[0][0] == 100
    screen.says("1 sysbench tables x 100 rows: ready")
    before = len(screen.of(Phase))
    screen.send("l")
    phase_started(screen, before, 1)


@pytest.mark.integration
def test_a_static_knob_asks_before_its_restart_and_u_undoes_it(screen: KeyScreen) -> None:
    """Enter on innodb_doublewrite, OFF: n leaves it ON; y restarts the server with OFF
    (every step journaled). u asks first: Escape leaves it OFF, y restarts with ON."""
    knob = "innodb_doublewrite"
    rows = [m.group(1) for r in screen.tmux.capture(screen.pane)
            if (m := re.search(r"│ (\w+) +\S+ +(live|restart|absent|ignored|\?) +│", r))]
    screen.send(*["Down"] * rows.index(knob))  # the cursor was on the first knob
    changes = len(screen.of(Change))

    def ask_restart() -> None:
        screen.send("Enter")
        screen.shows(f"Set {knob} (static: needs a restart)")
        screen.send("-l", "OFF")
        screen.send("Enter")
        screen.shows(f"Restart for {knob} = OFF?")

    ask_restart()
    screen.send("n")
    screen.gone("Restart for")
    screen.barrier()
    assert screen.of(Change)[changes:] == [] and screen.server(knob) == "ON"
    restarts = len(screen.of(Restart))
    ask_restart()
    screen.send("y")
    [change] = screen.new(Change, changes, timeout=120)
    assert (change.new, change.method, change.result) == ("OFF", "dropin_restart", "ok")
    assert [(r.step, r.result) for r in screen.of(Restart)[restarts:]] == [
        ("write_dropin", "ok"), ("restart", "ok"), ("wait", "ok"), ("verify", "ok")]
    assert screen.server(knob) == "OFF"
    screen.send("u")
    screen.shows(f"Undo {knob} = OFF?")
    screen.send("Escape")
    screen.gone("Undo innodb")
    screen.barrier()
    assert len(screen.of(Change)) == changes + 1 and screen.server(knob) == "OFF"
    screen.send("u")
    screen.shows(f"Undo {knob} = OFF?")
    screen.send("y")
    [undone] = screen.new(Change, changes + 1, timeout=120)
    assert (undone.knob, undone.new, undone.result, undone.reason) == (knob, "ON", "ok", "undo")
    assert screen.server(knob) == "ON"


@pytest.mark.integration
def test_b_asks_first_and_n_or_escape_change_nothing(screen: KeyScreen) -> None:
    base = screen.server("sort_buffer_size")
    screen.set_knob("sort_buffer_size", "1M")
    changes = len(screen.of(Change))
    for answer in ("n", "Escape"):
        screen.send("b")
        screen.shows("Revert every knob to the session's baseline?")
        assert "sort_buffer_size: 1M → 2M" in "\n".join(screen.tmux.capture(screen.pane))
        screen.send(answer)
        screen.gone("Revert every knob")
    screen.barrier()
    assert len(screen.of(Change)) == changes
    assert screen.server("sort_buffer_size") == "1048576" != base


@pytest.mark.integration
def test_b_after_an_outside_change_asks_whose_to_revert(screen: KeyScreen) -> None:
    """Another client sets io_capacity: b asks whose values go back. n and Escape: none;
    y: knobtop's (sort_buffer_size), the outside value stays; then a: that one too."""
    screen.outside("innodb_io_capacity", 300)
    changes = len(screen.of(Change))
    dialog = "All, outside too (a)"
    for answer in ("n", "Escape"):
        screen.send("b")
        screen.shows(dialog)
        screen.send(answer)
        screen.gone(dialog)
    screen.barrier()
    assert len(screen.of(Change)) == changes
    screen.send("b")
    text = "\n".join(screen.shows(dialog))
    assert "innodb_io_capacity: 300 → 200  (changed outside knobtop)" in text, text
    screen.send("y")
    assert [(c.knob, c.new, c.reason) for c in screen.new(Change, changes)] == [
        ("sort_buffer_size", "2097152", "revert to baseline")]
    assert screen.server("innodb_io_capacity") == "300"
    screen.send("b")
    screen.shows(dialog)
    screen.send("a")
    assert [(c.knob, c.new, c.reason) for c in screen.new(Change, changes + 1)] == [
        ("innodb_io_capacity", "200", "revert to baseline")]
    assert screen.server("innodb_io_capacity") == "200"
    assert screen.server("sort_buffer_size") == "2097152"


@pytest.mark.integration
def test_the_palette_runs_actions_by_name(screen: KeyScreen) -> None:
    """An action by its name (Mark: journaled), a page, a graph window."""
    marks = len(screen.of(Mark))
    screen.palette("Mark")
    assert [m.label.startswith("mark ") for m in screen.new(Mark, marks)] == [True]
    screen.palette("Graphs: InnoDB")
    screen.shows("the InnoDB page", lambda s: s[0].split()[:1] == ["InnoDB"])
    screen.palette("Graphs: Overview")
    screen.shows("the overview", lambda s: s[0].split()[:1] == ["MariaDB"])
    screen.palette("Graph window: 15 min")
    screen.says("graphs show the last 15 min")
    screen.shows("the axis from -15m", lambda s: any(" -15m " in r for r in s))


@pytest.mark.integration
def test_quit_cancel_stays_whichever_way_quit_was_asked(screen: KeyScreen) -> None:
    """With a knob off its baseline, q, Ctrl+Q and the palette's Quit ask; c and Escape
    stay, the value on the server. Ctrl+C does not quit: it says how."""
    screen.set_knob("sort_buffer_size", "1M")
    dialog = "Quit: these knobs differ from the session's baseline"
    for ask, answer in (("q", "c"), ("q", "Escape"), ("C-q", "c"), ("palette", "Escape")):
        if ask == "palette":
            screen.palette("Quit")
        else:
            screen.send(ask)
        screen.shows(dialog)
        screen.send(answer)
        screen.gone(dialog)
    screen.send("C-c")
    screen.says("to quit the app")
    screen.barrier()
    assert not screen.of(End) and not [n for n in screen.of(Note) if n.text.startswith("quit")]
    assert screen.server("sort_buffer_size") == "1048576"


@pytest.mark.integration
def test_quit_revert_all_puts_an_outside_change_back_too(screen: KeyScreen) -> None:
    """Another client sets io_capacity again: q offers Revert all, a puts both back, and the
    screen ends (its journal too)."""
    screen.outside("innodb_io_capacity", 300)
    screen.send("q")
    screen.shows("Revert all (a)")
    screen.send("a")
    assert screen.tmux.exit_status(screen.pane, timeout=120) == "0"
    assert screen.server("innodb_io_capacity") == "200"
    assert screen.server("sort_buffer_size") == "2097152"
    said = [n.text for n in screen.of(Note)][-1]
    assert said.startswith("quit: reverted to the baseline: "), said
    assert "innodb_io_capacity=300" in said and "sort_buffer_size=1048576" in said, said
    assert isinstance(screen.events()[-1], End)


RECIPE = """\
name = "abort-me"
description = "a sort buffer long enough to abort"
[load]
workload = "oltp_point_select"
threads = [1]
duration = 300
warmup = 0
tables = 1
table_size = 100
rate = 5
[run]
replicates = 1
[[arm]]
name = "A"
knobs = { sort_buffer_size = "1M" }
[[arm]]
name = "B"
knobs = { sort_buffer_size = "4M" }
"""


@pytest.mark.integration
def test_a_asks_then_aborts_the_recipe_and_restores_its_baseline(
        tmux: TmuxServer, tmp_path: Path) -> None:
    """`run --tui` on a sandbox of its own (the module's is held by the lab's screen): while
    the recipe runs, l is the recipe's and does nothing; a asks, n lets it go on, y aborts
    it: the load stops and the arm's sort_buffer_size goes back to the baseline on the
    server."""
    sandbox = Sandbox(tmp_path / "lab")
    info = sandbox.start()
    try:
        _abort_recipe(tmux, tmp_path, sandbox.root, info)
    finally:
        sandbox.stop()


def _abort_recipe(tmux: TmuxServer, tmp_path: Path, where: Path, info: ConnectionInfo) -> None:
    recipe = tmp_path / "abort.toml"
    recipe.write_text(RECIPE)
    journal = tmp_path / "abort.knobtop.jsonl"
    session = f"run-{tmux.socket}"
    tmux.new_session(session, "run", 160, 48, [
        *knobtop_argv(), "run", str(recipe), "--lab", "--dir", str(where),
        "--journal", str(journal), "--tui"], cwd=tmp_path)
    run = KeyScreen(tmux, f"{session}:run", journal, info)
    run.wait_until("arm A's knob set", lambda: [
        c for c in run.of(Change) if c.knob == "sort_buffer_size" and c.new == "1048576"],
        timeout=300)
    phases = run.wait_until("arm A's load running", lambda: [
        p for p in run.of(Phase) if p.action == "start"], timeout=120)
    # The load and the knobs are the recipe's: their keys leave the footer, and l does nothing.
    footer = run.shows("the footer", lambda s: "q Quit" in s[-1])[-1]
    assert "l Load" not in footer and "u Undo" not in footer, footer
    run.send("l")
    run.send("a")
    run.shows("Abort the recipe?")
    run.send("n")
    run.gone("Abort the recipe?")
    run.barrier()
    barrier = run.of(Mark)[-1]
    assert not run.of(RecipeRun)[1:] and len(run.of(Phase)) == len(phases)
    assert run.server("sort_buffer_size") == "1048576"
    run.send("a")
    run.shows("Abort the recipe?")
    run.send("y")
    ended = run.wait_until("the recipe aborted", lambda: [
        r for r in run.of(RecipeRun) if r.action != "start"], timeout=120)
    assert ended[0].action == "aborted"
    assert run.server("sort_buffer_size") == "2097152"
    stops = [p for p in run.of(Phase) if p.action == "stop"]
    assert len(stops) == 1 and stops[0].t > barrier.t  # the abort's, not the l's
    run.send("q")
    # aborted: the exit code headless gives (recipes/outcome.py; it was 0 here)
    assert tmux.exit_status(run.pane, timeout=120) == "130"
