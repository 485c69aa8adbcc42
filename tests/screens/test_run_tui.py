"""`knobtop run --tui` in real tmux at 80x24 (issue 14 item 5): the results panel scrolls
to every arm, and after q the same results table stays on the terminal."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from rich.cells import cell_len

from harness.binaries import require_binary
from harness.tmux import TmuxServer

pytestmark = pytest.mark.integration

ARMS = ("256K", "2M", "8M")
RECIPE = """\
name = "tiny-sort-buffers-in-three-arms"
description = "three sort buffers, seconds each"

[load]
workload = "oltp_read_only"
threads = [1]
duration = 5
warmup = 1
tables = 1
table_size = 1000

[run]
replicates = 1
pause = 0

[wait]
timeout = 5.0
""" + "".join(f'\n[[arm]]\nname = "{a}"\nknobs = {{ sort_buffer_size = "{a}" }}\n'
              for a in ARMS)


@pytest.fixture
def pane_lab_dir(tmp_path: Path) -> Path:
    """The run's sandbox, stopped after the panes if the run did not (a failed test)."""
    return tmp_path / "lab"


def panel_rows(screen: list[str]) -> list[str]:
    """The recipe panel's rows: from its top border to its bottom one."""
    top = next(i for i, row in enumerate(screen) if row.startswith("╭─ Recipe"))
    bottom = next(i for i in range(top + 1, len(screen)) if screen[i].startswith("╰"))
    return screen[top:bottom + 1]


def arm_row(arm: str, rows: list[str]) -> bool:
    return any(row.replace(" ", "").startswith(f"││{arm}│") for row in rows)


def test_run_tui_results_scroll_to_every_arm_and_print_on_exit(
    tmp_path: Path, tmux: TmuxServer, sysbench_path: str
) -> None:
    require_binary("mariadbd", "mariadb-server")
    recipe = tmp_path / "tiny.toml"
    recipe.write_text(RECIPE)
    session = f"run-{tmux.socket}"
    target = f"{session}:run"
    tmux.new_session(session, "run", 80, 24, [
        sys.executable, "-m", "knobtop", "run", str(recipe), "--lab", "--tui",
        "--dir", str(tmp_path / "lab"), "--journal", str(tmp_path / "run.knobtop.jsonl"),
    ], cwd=tmp_path)
    screen = tmux.wait_for(target, lambda s: any("3/3 steps, finished" in r for r in s),
                           timeout=300, what="the recipe's results in the panel")
    assert not [row for row in screen if cell_len(row) > 80], screen
    rows = panel_rows(screen)
    # the run's summary line whole on one row, though wider than its one-column table
    summary = "recipe tiny-sort-buffers-in-three-arms: 3/3 steps, finished"
    assert any(summary in row for row in rows), "\n".join(rows)
    # 80x24 has no room for the whole table: the last arm is below the panel's edge ...
    assert arm_row(ARMS[0], rows) and not arm_row(ARMS[-1], rows), "\n".join(rows)
    # ... until the panel is focused (Shift+Tab from the knobs) and scrolled to its end.
    tmux.run("send-keys", "-t", target, "BTab")
    tmux.run("send-keys", "-t", target, "End")
    tmux.wait_for(target, lambda s: arm_row(ARMS[-1], panel_rows(s)), timeout=30,
                  what="the last arm after scrolling the results")
    tmux.run("send-keys", "-t", target, "Home")
    tmux.wait_for(target, lambda s: arm_row(ARMS[0], panel_rows(s)), timeout=30,
                  what="the first arm after scrolling back")
    tmux.run("send-keys", "-t", target, "q")
    assert tmux.exit_status(target, timeout=120) == "0"
    printed = tmux.run("capture-pane", "-p", "-S", "-200", "-t", target).split("\n")
    start = max(i for i, row in enumerate(printed) if "3/3 steps, finished" in row)
    table = printed[start:]
    assert all(arm_row(arm, [f"│{row}" for row in table]) for arm in ARMS), "\n".join(table)
    assert any("baseline" in row for row in table)


def test_run_tui_exits_with_the_code_headless_gives(
    tmp_path: Path, tmux: TmuxServer, sysbench_path: str
) -> None:
    """One mapping of a run's end (recipes/outcome.py): a recipe the server refuses before
    anything changes exits 2 from the live screen as it does headless (it exited 0 there:
    scripts could not tell)."""
    require_binary("mariadbd", "mariadb-server")
    recipe = tmp_path / "refused.toml"
    recipe.write_text(RECIPE.replace("sort_buffer_size", "no_such_knob_here"))
    lab, journal = str(tmp_path / "lab"), str(tmp_path / "run.knobtop.jsonl")
    headless = subprocess.run(
        [sys.executable, "-m", "knobtop", "run", str(recipe), "--lab", "--dir", lab,
         "--journal", journal], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert headless.returncode == 2, headless.stdout + headless.stderr
    assert "no_such_knob_here" in headless.stdout + headless.stderr
    session = f"refused-{tmux.socket}"
    target = f"{session}:run"
    tmux.new_session(session, "run", 80, 24, [
        sys.executable, "-m", "knobtop", "run", str(recipe), "--lab", "--tui", "--dir", lab,
        "--journal", str(tmp_path / "tui.knobtop.jsonl"),
    ], cwd=tmp_path)
    tmux.wait_for(target, lambda s: any("refused" in r for r in s), timeout=120,
                  what="the refusal on the live screen")
    tmux.run("send-keys", "-t", target, "q")
    assert tmux.exit_status(target, timeout=120) == "2"
