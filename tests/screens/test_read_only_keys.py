"""Read-only screens (a follower, a replay) offer only what works there: the footer, the help
screen and the palette leave out what needs a session (issue 14 item 9's last sentence)."""

from __future__ import annotations

from pathlib import Path

import pytest
from textual.widgets import DataTable, Footer
from textual.widgets._footer import FooterKey

from harness import paths as repo_paths
from harness.ui import until
from knobtop.cli import following_app, replay_for
from knobtop.ui.app import KnobtopApp
from knobtop.ui.base import KnobtopBase
from knobtop.ui.replay_app import ReplayApp
from knobtop.ui.screens.help import HelpScreen
from knobtop.ui.widgets.knob_panel import KnobPanel

RECORDED = repo_paths.DATA / "journals" / "lab-80s.knobtop.jsonl"
# Binding ids that change the server or write the journal: a session's alone.
SESSION_IDS = {"load.toggle", "load.workload", "load.threads_up", "load.threads_down",
               "load.threads", "load.prepare", "knob.undo", "knob.baseline", "knob.edit",
               "journal.note", "journal.mark", "recipe.abort"}
SESSION_WORDS = ("Load", "Workload", "Threads", "Undo", "Baseline", "Note", "Mark",
                 "Edit knob")


def footer_text(app: KnobtopBase) -> str:
    """Every key the footer offers (also the ones a narrow screen cuts off)."""
    return " | ".join(k.description for k in app.screen.query_one(Footer).query(FooterKey))


async def help_ids(app: KnobtopBase, pilot: object) -> set[str]:
    await pilot.press("question_mark")  # type: ignore[attr-defined]
    await until(pilot, lambda: isinstance(app.screen, HelpScreen))  # type: ignore[arg-type]
    table = app.screen.query_one(DataTable)
    ids = {str(table.get_row_at(i)[3]) for i in range(table.row_count)}
    await pilot.press("escape")  # type: ignore[attr-defined]
    return ids


def test_every_session_id_is_a_binding_of_the_live_app() -> None:
    """The ids above are real (a renamed binding would make the checks below vacuous), and
    the live app (with a session) offers each: only the follower hides them."""
    ids = {b.id for cls in (KnobtopApp, KnobPanel) for b in cls.BINDINGS
           if not isinstance(b, tuple)}
    assert ids >= SESSION_IDS


@pytest.mark.parametrize("size", [(80, 24), (160, 48)])
async def test_follower_offers_only_what_works_read_only(
    tmp_path: Path, size: tuple[int, int]
) -> None:
    path = tmp_path / "run.knobtop.jsonl"
    path.write_bytes(RECORDED.read_bytes())
    app = following_app(path, history=900)
    async with app.run_test(size=size) as pilot:
        await until(pilot, lambda: app.board is not None and app._live_ready)
        await until(pilot, lambda: "Quit" in footer_text(app))
        footer = footer_text(app)
        assert not [w for w in SESSION_WORDS if w in footer], footer
        ids = await help_ids(app, pilot)
        assert {"app.quit", "app.help", "view.window"} <= ids
        assert not ids & SESSION_IDS
        palette = {name for name, _help, _run in app.palette_actions()}
        assert not [n for n in palette if any(w in n for w in ("Undo", "Baseline", "Mark"))]
        # The knob panel can still be looked at; its edit key is not offered.
        await pilot.press("k")
        await pilot.pause()
        assert app.focused is app.live.query_one(KnobPanel)
        await until(pilot, lambda: "Knobs" in footer_text(app))
        assert "Edit knob" not in footer_text(app)
        await pilot.press("q")


async def test_replay_help_has_its_own_keys_and_no_knob_edit(tmp_path: Path) -> None:
    path = tmp_path / "run.knobtop.jsonl"
    path.write_bytes(RECORDED.read_bytes())
    replay = replay_for(path)
    app = ReplayApp(replay)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.frame is not None)
        ids = await help_ids(app, pilot)
        # (a replay note goes to a side file, so n stays)
        assert {"replay.play", "replay.next", "journal.note", "app.quit"} <= ids
        assert "knob.edit" not in ids
        await pilot.press("q")
    replay.index.close()
