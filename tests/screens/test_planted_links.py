"""Files at names anyone can predict (issue 36): screenshots (the live screen's S and its graph
SVGs, compare's S) and replay's side notes are never written through a link, a FIFO or
another user's file planted at that name; the person gets a message naming it instead."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from harness import paths as repo_paths
from harness.ui import until
from knobtop.analysis.compare import compare
from knobtop.analysis.journaldata import load_journal
from knobtop.analysis.replay import Replay, notes_path_for
from knobtop.cli import replay_for
from knobtop.journal import JournalReader
from knobtop.journal.index import JournalIndex
from knobtop.safefile import NotOwnFile, open_append, write_new
from knobtop.ui.app import KnobtopApp
from knobtop.ui.base import ScreenApp
from knobtop.ui.compare_app import CompareApp
from knobtop.ui.replay_app import ReplayApp

JOURNALS = repo_paths.DATA / "journals"
RECORDED = JOURNALS / "lab-80s.knobtop.jsonl"
STAMP = "20990101-000000"
ORIGINAL = "the victim's own text\n"


@pytest.fixture(autouse=True)
def no_user_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("KNOBTOP_CONFIG", raising=False)


def plant(link: Path, victim: Path) -> None:
    """A symbolic link at ``link`` to ``victim`` (which holds ORIGINAL)."""
    victim.write_text(ORIGINAL)
    link.symlink_to(victim)


def errors_of(app: ScreenApp) -> list[str]:
    return [str(n.message) for n in app._notifications if n.severity == "error"]


def untouched(victim: Path, dangling: Path) -> None:
    assert victim.read_text() == ORIGINAL, "written through the planted link"
    assert not dangling.exists(), "a file was created through a dangling link"


async def test_live_screenshots_refuse_a_planted_link(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    shots = tmp_path / "shots"
    shots.mkdir()
    victim, dangling = tmp_path / "victim.txt", tmp_path / "made-through-link"
    plant(shots / f"knobtop-{STAMP}.svg", victim)
    (shots / f"knobtop-load_tps-{STAMP}.svg").symlink_to(dangling)
    reader = JournalReader(RECORDED)
    app = KnobtopApp(header=reader.header, events=list(reader))
    app.screenshot_dir = shots
    monkeypatch.setattr(app, "_stamp", lambda: STAMP)
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app._painted > 0)
        await pilot.press("S")
        await until(pilot, lambda: len(errors_of(app)) == 1)
        assert app.screenshot_graph("load_tps") is None
        await until(pilot, lambda: len(errors_of(app)) == 2)
        errors = errors_of(app)
        assert all("is a symbolic link" in e and "screenshot not saved" in e for e in errors)
        assert str(victim) in errors[0] and str(dangling) in errors[1]
        untouched(victim, dangling)
        # A file of the person's own at the name (a second shot in the same second): the
        # next name, nothing lost.
        own = shots / f"knobtop-qps-{STAMP}.svg"
        own.write_text("first")
        second = app.screenshot_graph("qps")
        assert second == str(shots / f"knobtop-qps-{STAMP}-2.svg")
        assert own.read_text() == "first" and "<svg" in Path(second).read_text()
        assert stat.S_IMODE(os.stat(second).st_mode) == 0o600


async def test_compare_screenshot_refuses_a_planted_link(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    a = tmp_path / "a.knobtop.jsonl"
    a.write_bytes(RECORDED.read_bytes())
    victim = tmp_path / "victim.txt"
    plant(tmp_path / f"knobtop-compare-{STAMP}.svg", victim)
    app = CompareApp(compare(load_journal(a), load_journal(a)))
    monkeypatch.setattr(app, "_stamp", lambda: STAMP)
    async with app.run_test(size=(160, 48)) as pilot:
        await pilot.pause()
        await pilot.press("S")
        await until(pilot, lambda: bool(errors_of(app)))
        assert "is a symbolic link" in errors_of(app)[0]
        assert victim.read_text() == ORIGINAL


async def test_replay_notes_refuse_a_planted_link_a_fifo_and_another_users_file(
        tmp_path: Path) -> None:
    journal = tmp_path / "run.knobtop.jsonl"
    journal.write_bytes(RECORDED.read_bytes())
    notes = notes_path_for(journal)
    victim, dangling = tmp_path / "victim.txt", tmp_path / "made-through-link"

    # A link to an existing file, then one to nowhere: nothing written through either.
    plant(notes, victim)
    replay = Replay(JournalIndex(journal))
    assert replay.side_notes == [] and "is a symbolic link" in replay.note_problems[0][1]
    with pytest.raises(NotOwnFile, match="is a symbolic link"):
        replay.add_note("through the link")
    notes.unlink()
    notes.symlink_to(dangling)
    with pytest.raises(NotOwnFile):
        replay.add_note("through the link")
    untouched(victim, dangling)
    replay.index.close()

    # A FIFO: reading it at start and appending to it neither hang nor follow it.
    notes.unlink()
    os.mkfifo(notes)
    replay = Replay(JournalIndex(journal))
    assert "not a regular file" in replay.note_problems[0][1]
    with pytest.raises(NotOwnFile, match="is not a regular file"):
        replay.add_note("into the fifo")
    replay.index.close()
    notes.unlink()

    # The screen says so and goes on (a note's own dialog path).
    plant(notes, victim)
    app = ReplayApp(replay_for(journal))
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: app.frame is not None)
        await until(pilot, lambda: any("side notes not read" in str(n.message)
                                       for n in app._notifications))
        await pilot.press("n")
        await pilot.press(*"hello", "enter")
        await until(pilot, lambda: bool(errors_of(app)))
        assert "note not saved" in errors_of(app)[-1]
        assert "is a symbolic link" in errors_of(app)[-1]
    app.replay.index.close()
    assert victim.read_text() == ORIGINAL
    notes.unlink()

    # A regular file owned by another user (root can make one): refused, not appended.
    if os.geteuid() == 0:
        notes.write_text("")
        os.chown(notes, 65534, 65534)
        replay = Replay(JournalIndex(journal))
        with pytest.raises(NotOwnFile, match="owned by uid 65534"):
            replay.add_note("into someone else's file")
        assert notes.read_text() == ""
        replay.index.close()
        notes.unlink()

    # The person's own notes file still takes notes, 0600.
    replay = Replay(JournalIndex(journal))
    replay.add_note("a note of my own")
    assert [n.text for n in Replay(JournalIndex(journal)).side_notes] == ["a note of my own"]
    assert stat.S_IMODE(os.stat(notes).st_mode) == 0o600
    replay.index.close()


def test_write_new_and_open_append_never_follow_a_link(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    plant(tmp_path / "x.svg", victim)
    with pytest.raises(NotOwnFile, match="symbolic link"):
        write_new(tmp_path, "x.svg", b"data")
    with pytest.raises(NotOwnFile, match="symbolic link"):
        open_append(tmp_path / "x.svg")
    assert victim.read_text() == ORIGINAL
    assert write_new(tmp_path, "y.svg", b"1") == tmp_path / "y.svg"
    assert write_new(tmp_path, "y.svg", b"2") == tmp_path / "y-2.svg"
    assert (tmp_path / "y.svg").read_bytes() == b"1"


def test_the_sandbox_lock_is_never_taken_through_a_link_and_garbage_is_stale(
        tmp_path: Path) -> None:
    """session.lock (one knobtop session per sandbox, issue 37): a link planted at its name
    is refused, never written through; a file that is not a lock knobtop wrote is stale."""
    from knobtop.labdirs import SESSION_LOCK, LabError, session_lock

    root = tmp_path / "lab"
    root.mkdir(mode=0o700)
    victim, lock = tmp_path / "victim.txt", root / SESSION_LOCK
    plant(lock, victim)
    refused = pytest.raises(LabError, match=r"session\.lock is a symbolic link")
    with refused, session_lock(root):
        pass
    untouched(victim, tmp_path / "nowhere")
    lock.unlink()
    lock.write_text("not a lock \x1b]0;title\x07\n")
    with session_lock(root):
        assert f'"pid": {os.getpid()}' in lock.read_text()
    assert not lock.exists()
