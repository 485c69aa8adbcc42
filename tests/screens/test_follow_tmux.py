"""`knobtop follow --latest DIR` in tmux next to a real `knobtop lab` that quits and starts
again: the follower moves from the first session's journal (ended) to the second's."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.binaries import require_binary
from harness.tmux import TmuxServer
from knobtop.journal import End, JournalReader
from knobtop.lab import Sandbox
from test_tmux import knobtop, pane_lab_dir  # noqa: F401  (the same leftover lab stopped)

pytestmark = pytest.mark.integration


def journals_in(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.knobtop.jsonl"))


def test_follow_latest_moves_to_the_labs_next_session(
    tmp_path: Path, tmux: TmuxServer
) -> None:
    require_binary("mariadbd", "mariadb-server")
    lab_dir = tmp_path / "lab"
    journals = lab_dir / "journals"
    lab_cmd = knobtop("lab", "--dir", str(lab_dir), "--load", "none")
    session = f"knobtop-{tmux.socket}"
    first_lab, follow = f"{session}:lab1", f"{session}:follow"
    tmux.new_session(session, "lab1", 160, 48, lab_cmd, cwd=tmp_path)
    tmux.wait_for(first_lab, lambda s: "MariaDB" in s[0], timeout=120, what="the first lab")
    [first] = journals_in(journals)

    tmux.new_window(session, "follow", knobtop("follow", "--latest", str(journals)),
                    cwd=tmp_path)
    tmux.run("resize-window", "-t", follow, "-x", "160", "-y", "48")
    tmux.wait_for(follow, lambda s: "following" in s[0] and first.name in s[0], timeout=60,
                  what=f"follow on {first.name}")

    # The lab quits: its journal ends, the follower says so and waits for a newer one.
    tmux.run("send-keys", "-t", first_lab, "q")
    assert tmux.exit_status(first_lab, timeout=120) == "0"
    last = list(JournalReader(first))[-1]
    assert isinstance(last, End) and last.reason == "quit"
    tmux.wait_for(follow, lambda s: "ended: quit" in s[0], timeout=30,
                  what="the first session's end in follow")

    # The lab starts again: a new journal in the folder, and the follower moves to it.
    second_lab = f"{session}:lab2"
    tmux.new_window(session, "lab2", lab_cmd, cwd=tmp_path)
    tmux.run("resize-window", "-t", second_lab, "-x", "160", "-y", "48")
    tmux.wait_for(second_lab, lambda s: "MariaDB" in s[0], timeout=120, what="the second lab")
    [second] = [p for p in journals_in(journals) if p != first]
    screen = tmux.wait_for(
        follow, lambda s: "following" in s[0] and second.name in s[0] and "ended" not in s[0],
        timeout=60, what=f"follow moved to {second.name}")
    # A notification says so, and the journal pane lists the switch at the new session's
    # 00:00 (both wrap the file's name onto a line of its own).
    body = "\n".join(screen[1:])
    assert "following a newer journal" in body and second.name in body, body
    assert any("00:00 ! follow: a newer journal" in row for row in screen), body

    tmux.run("send-keys", "-t", second_lab, "q")
    assert tmux.exit_status(second_lab, timeout=120) == "0"
    tmux.wait_for(follow, lambda s: "ended: quit" in s[0] and second.name in s[0], timeout=30,
                  what="the second session's end in follow")
    tmux.run("send-keys", "-t", follow, "q")
    assert tmux.exit_status(follow, timeout=30) == "0"
    assert Sandbox(lab_dir).running_pid() is None
